/* several nodes: the sandboxes an earlier run of this node left (node_cleanup.h). */
#include "node/node_cleanup.h"

#include "common/log.h"
#include "common/status.h"
#include "llmbox/sandbox.h"
#include "store/store_round.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LB_CLEANUP_TRIES 10      /* a killed agent's connection may close a moment later */
#define LB_CLEANUP_WAIT_MS 200

/* Adopts (the key proves it is the task's) and destroys one sandbox:
 * LB_OK, LB_E_NOTFOUND (gone already) or the error. */
static int lb_cleanup_one(lbsb_conn *c, const lb_kept *k, char *err, size_t errsz)
{
    int rc = LB_E_INTERNAL;
    for (int t = 0; t < LB_CLEANUP_TRIES; t++) {
        rc = lbsb_adopt(c, k->sandbox_id, k->lease_key, 0, err, errsz);
        if (rc != LB_E_BUSY && rc != LB_E_EXISTS)
            break;
        struct timespec ts = {0, LB_CLEANUP_WAIT_MS * 1000000L};
        nanosleep(&ts, NULL); /* its agent's connection is still open: it is being killed */
    }
    if (rc == LB_OK)
        rc = lbsb_destroy(c, k->sandbox_id, err, errsz);
    return rc;
}

int lb_node_cleanup_left(const lb_config *cfg, lb_store *s, const char *node, const lb_node_lease *l)
{
    lbsb_conn *c = NULL;
    int done = 0;
    for (size_t i = 0; i < l->nleft; i++) {
        lb_kept k;
        if (lb_store_kept_get(s, l->left[i].id, &k) != LB_OK || !k.sandbox_id[0] || !k.lease_key[0])
            continue; /* no sandbox kept: the agent's own connection took it when it died */
        char err[512] = "";
        int rc = c ? LB_OK : lbsb_connect(cfg->sandboxd_socket, NULL, &c, err, sizeof err);
        if (rc != LB_OK) {
            lb_warn("node %s: cannot reach sandboxd to destroy the sandboxes an earlier run left (their leases "
                    "end them): %s", node, err);
            c = NULL;
            break;
        }
        rc = lb_cleanup_one(c, &k, err, sizeof err);
        if (rc == LB_OK) {
            lb_info("node %s: task %s: destroyed its sandbox %s, left by an earlier run of this node", node,
                    l->left[i].id, k.sandbox_id);
            done++;
        } else if (rc != LB_E_NOTFOUND) {
            lb_warn("node %s: task %s: its sandbox %s, left by an earlier run, could not be destroyed (its lease "
                    "ends it): %s", node, l->left[i].id, k.sandbox_id, err);
            if (rc == LB_E_UNAVAILABLE || rc == LB_E_PROTO) {
                lbsb_close(c); /* the connection broke: a new one for the next */
                c = NULL;
            }
            continue;
        }
        LB_IGNORE(lb_store_kept_clear(s, l->left[i].id)); /* destroyed or gone: nothing to adopt any more */
    }
    lbsb_close(c);
    return done;
}

int lb_node_cleanup_orphans(const lb_config *cfg, lb_store *s, const char *node)
{
    lb_node_lease l;
    int rc = lb_store_node_orphans(s, node, &l);
    if (rc != LB_OK) {
        lb_warn("node %s: cannot list the sandboxes its earlier runs left (their leases end them): %s", node,
                lb_strerror(rc));
        return 0;
    }
    int done = l.nleft ? lb_node_cleanup_left(cfg, s, node, &l) : 0;
    free(l.left);
    return done;
}
