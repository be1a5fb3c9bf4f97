/*
 * sandboxd's event loop: one thread, one poll() over the listening socket,
 * every client connection, every sandbox's control socket and shell pipes,
 * a signalfd (SIGCHLD, SIGTERM, SIGINT) and the workers' eventfd. Requests
 * on one connection are answered in order; while an exec runs for a
 * connection, or its create is with a worker, that connection is not read,
 * but everything else keeps being served. What blocks (making a sandbox,
 * copying its inputs, tearing it down, refilling the pool) is done by the
 * worker threads of workers.c; the loop only hands it over and takes the
 * result back.
 */
#include "sandboxd/sandboxd.h"

#include "sandboxd/cgroup.h"
#include "sandboxd/fdpark.h"
#include "sandboxd/image_jobs.h"
#include "sandboxd/filewatch.h"
#include "sandboxd/pool.h"
#include "sandboxd/reply.h"
#include "sandboxd/retire.h"
#include "sandboxd/sandbox_create.h"
#include "sandboxd/sandbox_egress.h"
#include "sandboxd/sandbox_exec.h"
#include "sandboxd/sandbox_fs.h"
#include "sandboxd/sandbox_metrics.h"
#include "sandboxd/sandbox_volume.h"
#include "sandboxd/sandbox_net.h"
#include "sandboxd/sandbox_proc.h"
#include "sandboxd/sandbox_restore.h"
#include "sandboxd/sandbox_save.h"
#include "sandboxd/sandbox_set.h"
#include "sandboxd/seccomp.h"
#include "sandboxd/uidslot.h"
#include "sandboxd/workers.h"
#include "sandboxd/volume_jobs.h"

#include "common/log.h"
#include "common/status.h"
#include "entry.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* a response frame plus a read's data frame */
#define LBSD_CONN_OUT_MAX ((size_t)LLMBOX_RPC_MAX_FRAME * 2 + 64)
/* one read() of a request: bounded so one client cannot hog the loop */
#define LBSD_CONN_READ_MAX (1u << 20)

static lbsd_conn *g_conns;
static int g_nconns;
static uint64_t g_conn_serial;   /* the last connection's serial */
static int64_t g_last_req_ms;    /* when the last request arrived (lb_mono_ms) */
static int64_t g_refill_wanted_ms; /* since when a due refill waits for quiet; 0: none waits */
/* A refill waits until no request came for this long (or it has waited
 * LBSD_REFILL_MAX_WAIT_MS): on a small host its make takes CPU from the
 * first commands of the sandbox just handed out (bench/RESULTS.md). */
#define LBSD_REFILL_QUIET_MS 5
#define LBSD_REFILL_MAX_WAIT_MS 200
static int64_t g_started_ms;
static const lb_config *g_cfg;   /* read only, set by lbsd_serve for the loop's life */

/* ---- sandboxes ------------------------------------------------------------- */

static void lbsd_destroy(lbsd_sandbox *sb)
{
    lbsd_set_remove(sb);
    lbsd_sandbox_retire(sb);
}

/* Creates being made or filled by a worker: they count as sandboxes. */
static int lbsd_creating(void)
{
    return lbsd_workers_inflight(LBSD_JOB_CREATE) + lbsd_workers_inflight(LBSD_JOB_INPUT) +
           lbsd_restores_inflight(); /* follow-ups */
}

/* ---- life cycle: TTL reaper, create from the pool, network ------------------ */

/* ping: {pool:{...}, networks:[...], ttl_max_s} */
static void lbsd_ping_lifecycle(cJSON *r)
{
    cJSON *pool = lbsd_pool_json();
    if (pool) {
        /* a refill with a worker: its scratch dir exists, it is not ready yet */
        cJSON_AddNumberToObject(pool, "making", lbsd_workers_inflight(LBSD_JOB_REFILL));
        cJSON_AddItemToObject(r, "pool", pool);
    }
    cJSON *nets = lbsd_net_allowed_json();
    if (nets)
        cJSON_AddItemToObject(r, "networks", nets);
    cJSON_AddNumberToObject(r, "ttl_max_s", g_cfg->sandbox_ttl_max_s);
}

/* ms until the next TTL expiry (0: overdue), -1: none. */
static int lbsd_next_expiry(int64_t now)
{
    int64_t next = -1;
    for (lbsd_sandbox *s = lbsd_set_first(); s; s = s->next) {
        for (int k = 0; k < 2; k++) {
            int64_t at = k ? s->lease_expires_ms : s->expires_ms;
            if (!at)
                continue;
            int64_t d = at > now ? at - now : 0;
            if (next < 0 || d < next)
                next = d;
        }
    }
    return next < 0 ? -1 : next > 60000 ? 60000 : (int)next;
}

/* The reaper: destroys sandboxes whose TTL ran out, or whose lease nobody
 * renewed. A command running in one is answered with an error first. */
static void lbsd_reap_expired(int64_t now)
{
    for (lbsd_sandbox *s = lbsd_set_first(), *nx; s; s = nx) {
        nx = s->next;
        int ttl_out = s->expires_ms && s->expires_ms <= now;
        int lease_out = s->lease_expires_ms && s->lease_expires_ms <= now;
        if (!ttl_out && !lease_out)
            continue;
        /* E2B's protocol: its processes' watchers learn why (sandbox_proc.h) */
        lbsd_proc_sandbox_gone(s, ttl_out ? "its time to live (ttl_s) ran out and it was destroyed"
                                          : "its lease was not renewed and it was destroyed");
        lbsd_conn *c = s->owner;
        if (!ttl_out) {
            /* a lease nobody renewed: its holder is gone or stuck */
            lb_info("sandbox %s: its lease (lease_s %d) was not renewed: destroying it", s->id, s->lease_s);
            if (c && s->exec && s->exec->waiting) {
                char msg[256];
                snprintf(msg, sizeof msg,
                         "sandbox %s was destroyed while the command ran: its lease (lease_s %d) was not "
                         "renewed", s->id, s->lease_s);
                lbsd_exec_abandon(s);
                lbsd_set_remove(s);
                c->busy = 1;
                lbsd_retire(s, c, LBSD_ANSWER_EXPIRED, msg);
                continue;
            }
            lbsd_destroy(s);
            continue;
        }
        lb_info("sandbox %s expired (ttl_s %d): destroying it", s->id, s->ttl_s);
        if (c) {
            unsigned i = c->expired_n++ % LBSD_EXPIRED_KEEP;
            snprintf(c->expired[i].id, sizeof c->expired[i].id, "%s", s->id);
            c->expired[i].ttl_s = s->ttl_s;
            if (s->exec) {
                /* the waiting exec is answered once the sandbox is gone;
                 * meanwhile the connection's other replies stay deferred */
                char msg[256];
                snprintf(msg, sizeof msg,
                         "sandbox %s expired while the command ran: its time to live (ttl_s %d) "
                         "ran out and it was destroyed",
                         s->id, s->ttl_s);
                int waiting = s->exec->waiting;
                lbsd_exec_abandon(s); /* clears busy */
                lbsd_set_remove(s);
                if (waiting) {
                    c->busy = 1; /* replies that come meanwhile keep following the exec's */
                    lbsd_retire(s, c, LBSD_ANSWER_EXPIRED, msg);
                } else {
                    lbsd_sandbox_retire(s);
                }
                continue;
            }
        }
        lbsd_destroy(s);
    }
}

/* The TTL a create gets: its own, capped by LLMBOX_SANDBOX_TTL_MAX_S (which
 * also applies to sandboxes that asked for none). 0: no TTL. */
static int lbsd_effective_ttl(int ttl_s)
{
    int max = g_cfg->sandbox_ttl_max_s;
    if (max > 0 && (ttl_s <= 0 || ttl_s > max))
        return max;
    return ttl_s > 0 ? ttl_s : 0;
}

/* The end of a create, on the loop: the network, the TTL, the sandbox
 * list, the answer. */
static void lbsd_create_finish(lbsd_conn *c, lbsd_sandbox *sb, int net, int ttl_s, int lease_s)
{
    char msg[1024] = "";
    int rc;
    sb->owner = c;
    if ((rc = lbsd_net_attach(sb, net, msg, sizeof msg)) != LB_OK) {
        sb->owner = NULL;
        lbsd_sandbox_retire(sb);
        lbsd_reply_error(c, rc, "%s", msg);
        return;
    }
    sb->ttl_s = lbsd_effective_ttl(ttl_s);
    sb->expires_ms = sb->ttl_s ? lb_mono_ms() + (int64_t)sb->ttl_s * 1000 : 0;
    sb->creator_uid = c->uid;
    sb->lease_s = lease_s;
    if (lease_s && lb_random_hex(sb->lease_key, sizeof sb->lease_key, LB_ID_HEX_LEN / 2) != LB_OK) {
        sb->owner = NULL;
        lbsd_sandbox_retire(sb);
        lbsd_reply_error(c, LB_E_INTERNAL, "no randomness for the lease key");
        return;
    }
    sb->lease_expires_ms = lease_s ? lb_mono_ms() + (int64_t)lease_s * 1000 : 0;
    sb->used_ms = lb_mono_ms(); /* handed out now: not one to park (a pool's may be old) */
    lbsd_set_add(sb);
    cJSON *r = cJSON_CreateObject();
    if (r) {
        cJSON_AddStringToObject(r, "id", sb->id);
        cJSON_AddBoolToObject(r, "pooled", sb->pooled);
        cJSON_AddStringToObject(r, "network", lbsd_network_name(sb->net.mode));
        if (sb->ttl_s)
            cJSON_AddNumberToObject(r, "ttl_s", sb->ttl_s);
        if (sb->lease_s) {
            cJSON_AddNumberToObject(r, "lease_s", sb->lease_s);
            cJSON_AddStringToObject(r, "lease_key", sb->lease_key);
        }
    }
    lbsd_reply(c, r, NULL, 0, 0);
}

/* Whether a and b (LB_ID_HEX_LEN characters each) are equal, in time that
 * does not depend on where they differ. */
static int lbsd_key_equal(const char *a, const char *b)
{
    unsigned char d = 0;
    for (size_t i = 0; i < LB_ID_HEX_LEN; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* renew {id, lease_s?}: the lease runs again from now (lease_s, when
 * given, becomes its length). Any connection of the uid that created the
 * sandbox may renew it, also while a command runs on it elsewhere: the
 * web renews all its sandboxes over one connection of its own. */
static void lbsd_renew(lbsd_conn *c, const lbsd_req *req)
{
    lbsd_sandbox *sb = lbsd_set_first();
    while (sb && strcmp(sb->id, req->id))
        sb = sb->next;
    if (!sb || sb->creator_uid != c->uid || (sb->owner && sb->owner != c && !sb->lease_s)) {
        lbsd_reply_error(c, LB_E_NOTFOUND, "no sandbox %s to renew", req->id);
        return;
    }
    if (!sb->lease_s) {
        lbsd_reply_error(c, LB_E_INVAL, "sandbox %s has no lease (create it with lease_s)", sb->id);
        return;
    }
    if (req->lease_s)
        sb->lease_s = req->lease_s;
    sb->lease_expires_ms = lb_mono_ms() + (int64_t)sb->lease_s * 1000;
    cJSON *r = cJSON_CreateObject();
    if (r)
        cJSON_AddNumberToObject(r, "lease_s", sb->lease_s);
    lbsd_reply(c, r, NULL, 0, 0);
}

/* adopt {id, key, lease_s?}: a leased sandbox whose connection is gone
 * becomes c's, its lease renewed. Only a connection of the uid that created
 * it, with the lease_key its create answered, may: the web that restarted
 * (which kept the key in a record only it can read), not an agent of the
 * same uid nor another user of the socket. */
static void lbsd_adopt(lbsd_conn *c, const lbsd_req *req)
{
    lbsd_sandbox *sb = lbsd_set_first();
    while (sb && strcmp(sb->id, req->id))
        sb = sb->next;
    if (!sb || !sb->lease_s || sb->creator_uid != c->uid || !lbsd_key_equal(sb->lease_key, req->key)) {
        lbsd_reply_error(c, LB_E_NOTFOUND, "no leased sandbox %s to adopt", req->id);
        return;
    }
    if (sb->owner && sb->owner != c) {
        lbsd_reply_error(c, LB_E_BUSY, "sandbox %s is held by another connection", req->id);
        return;
    }
    if (sb->broken) {
        lbsd_note_gone(sb);
        lbsd_reply_error(c, LB_E_SANDBOX, "sandbox %s is gone: %s", sb->id, sb->gone_why);
        return;
    }
    sb->owner = c;
    if (req->lease_s)
        sb->lease_s = req->lease_s;
    sb->lease_expires_ms = lb_mono_ms() + (int64_t)sb->lease_s * 1000;
    lb_info("sandbox %s adopted by the connection of pid %d", sb->id, (int)c->pid);
    cJSON *r = cJSON_CreateObject();
    if (r) {
        cJSON_AddStringToObject(r, "id", sb->id);
        cJSON_AddNumberToObject(r, "lease_s", sb->lease_s);
        cJSON_AddStringToObject(r, "network", lbsd_network_name(sb->net.mode));
        if (sb->ttl_s)
            cJSON_AddNumberToObject(r, "ttl_s", sb->ttl_s);
    }
    lbsd_reply(c, r, NULL, 0, 0);
}

/* create: a sandbox from the warm pool if the spec fits one, else made by
 * a worker; then its inputs (a worker too), network and TTL. While a worker
 * has it the connection is not read, so its answers stay in order. req's
 * JSON moves into the job. */
static void lbsd_create(lbsd_conn *c, lbsd_req *req)
{
    int mine = 0;
    for (lbsd_sandbox *s = lbsd_set_first(); s; s = s->next)
        mine += s->owner == c;
    if (lbsd_set_count() + lbsd_creating() >= g_cfg->sandbox_max) {
        lbsd_reply_error(c, LB_E_UNAVAILABLE, "too many sandboxes (%d, LLMBOX_SANDBOX_MAX)",
                         g_cfg->sandbox_max);
        return;
    }
    if (mine >= g_cfg->sandbox_max_per_conn) {
        lbsd_reply_error(c, LB_E_UNAVAILABLE,
                         "too many sandboxes on this connection (%d, LLMBOX_SANDBOX_MAX_PER_CONN)",
                         g_cfg->sandbox_max_per_conn);
        return;
    }
    /* the operator's caps (config_host.c); sandboxd is the authority,
     * whatever a client validated before */
    const lb_config *cfg = g_cfg;
    if (req->memory_mib > cfg->sandbox_max_memory_mib) {
        lbsd_reply_error(c, LB_E_INVAL,
                         "memory_mib %d is above this host's cap of %d "
                         "(LLMBOX_SANDBOX_MAX_MEMORY_MIB)",
                         req->memory_mib, cfg->sandbox_max_memory_mib);
        return;
    }
    if (req->pids > cfg->sandbox_max_pids) {
        lbsd_reply_error(c, LB_E_INVAL,
                         "pids %d is above this host's cap of %d (LLMBOX_SANDBOX_MAX_PIDS)",
                         req->pids, cfg->sandbox_max_pids);
        return;
    }
    int net = req->network == LBSD_NET_DEFAULT ? LBSD_NET_NONE : req->network;
    if (!lbsd_net_allowed(net)) {
        lbsd_reply_error(c, LB_E_INVAL,
                         "network \"%s\" is not allowed on this host (LLMBOX_NETWORK_ALLOW=%s; the "
                         "operator can add it)",
                         lbsd_network_name(net), g_cfg->network_allow);
        return;
    }
    if (net == LBSD_NET_EGRESS && lbsd_egress_stash(c, req->net_policy, req->net_values) != LB_OK) {
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        return;
    }
    /* follow-ups: a state to restore must exist before a sandbox is made for it */
    char msg[256];
    if (req->state && lbsd_restore_check(g_cfg, c->uid, req->state, msg, sizeof msg) != LB_OK) {
        lbsd_reply_error(c, LB_E_NOTFOUND, "%s", msg);
        return;
    }
    /* follow-ups: with a restore, the inputs are copied after it (the
     * restore job does it), so that they land beside the saved files */
    const char *restore_input = req->state ? req->input_dir : NULL;
    if (restore_input)
        req->input_dir = NULL;
    lbsd_sandbox *sb = lbsd_pool_take(req);
    if (sb && !req->input_dir && !req->state) {
        /* a pool hit with nothing to copy: ready for its first command now */
        lbsd_create_finish(c, sb, net, req->ttl_s, req->lease_s);
        return;
    }
    lbsd_job *j = lbsd_job_new(sb ? LBSD_JOB_INPUT : LBSD_JOB_CREATE, g_cfg, req);
    if (!j) {
        if (sb)
            lbsd_sandbox_retire(sb);
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        return;
    }
    j->sb = sb;
    j->conn_serial = c->serial;
    j->uid = c->uid;
    j->gid = c->gid;
    j->net = net;
    j->state = (void *)restore_input; /* follow-ups: into j->req.json, which the job owns */
    c->creating = 1;
    if (sb && !j->req.input_dir) {
        lbsd_restore_submit(j); /* follow-ups: a pool hit goes straight to its restore */
        return;
    }
    lbsd_workers_submit(j);
}

/* The refill the pool wants, to a worker: one at a time, and only while no
 * create is with the workers, so that a refill never holds up a client. */
static void lbsd_refill_maybe(int64_t now)
{
    int room = g_cfg->sandbox_max - lbsd_set_count() - lbsd_pool_ready() - lbsd_creating();
    if (lbsd_workers_inflight(LBSD_JOB_REFILL) || lbsd_creating() ||
        lbsd_pool_refill_due(now, room) != 0)
        return;
    if (!g_refill_wanted_ms)
        g_refill_wanted_ms = now;
    if (now - g_last_req_ms < LBSD_REFILL_QUIET_MS && now - g_refill_wanted_ms < LBSD_REFILL_MAX_WAIT_MS)
        return; /* the loop's timeout brings it back once quiet */
    g_refill_wanted_ms = 0;
    lbsd_req req;
    int idx = lbsd_pool_refill_begin(&req);
    if (idx < 0)
        return;
    lbsd_job *j = lbsd_job_new(LBSD_JOB_REFILL, g_cfg, &req);
    if (!j)
        return; /* no memory now: the next pass tries again */
    j->pool_img = idx;
    lbsd_workers_submit(j);
}

/* Jobs the workers are done with, on the loop. */
static void lbsd_jobs_collect(void)
{
    lbsd_job *j;
    while ((j = lbsd_workers_done())) {
        if (j->kind == LBSD_JOB_REFILL) {
            lbsd_pool_refill_done(j->pool_img, j->sb, j->rc, j->msg);
            lbsd_job_free(j);
            continue;
        }
        lbsd_conn *c = g_conns;
        while (c && c->serial != j->conn_serial)
            c = c->next;
        if (c)
            c->creating = 0;
        if (lbsd_volume_job_is(j)) { /* E2B's volumes: volume_jobs.h */
            lbsd_volume_job_done(j, c);
            lbsd_job_free(j);
            continue;
        }
        /* follow-ups: a save is answered here; a restore ends as the create it is */
        if (j->kind == LBSD_JOB_STATE && !lbsd_state_job_done(j, c && !c->dead ? c : NULL)) {
            lbsd_job_free(j);
            continue;
        }
        if (j->kind == LBSD_JOB_DESTROY) {
            if (c && !c->dead && j->answer == LBSD_ANSWER_OK) {
                lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
            } else if (c && !c->dead) {
                c->busy = 0;
                lbsd_reply_error(c, LB_E_SANDBOX, "%s", j->msg);
                lbsd_conn_unbusy(c);
            }
        } else if (!c || c->dead) {
            /* its client is gone: so is the sandbox made for it */
            if (j->sb)
                lbsd_sandbox_retire(j->sb);
        } else if (j->rc != LB_OK || !j->sb) {
            lbsd_reply_error(c, j->rc ? j->rc : LB_E_SANDBOX, "%s", j->msg);
        } else if (j->kind != LBSD_JOB_STATE && j->req.state) {
            /* follow-ups: made (and filled): now its saved state */
            c->creating = 1;
            lbsd_restore_submit(j);
            continue;
        } else {
            lbsd_create_finish(c, j->sb, j->net, j->req.ttl_s, j->req.lease_s);
        }
        lbsd_job_free(j);
    }
}

/* ---- requests --------------------------------------------------------------- */

static void lbsd_ping(lbsd_conn *c)
{
    cJSON *r = cJSON_CreateObject();
    if (r) {
        cJSON_AddStringToObject(r, "version", LLMBOX_VERSION);
        cJSON_AddNumberToObject(r, "sandboxes", lbsd_set_count());
        int unheld = 0;
        for (lbsd_sandbox *s = lbsd_set_first(); s; s = s->next)
            unheld += s->lease_s && !s->owner;
        cJSON_AddNumberToObject(r, "leased_unheld", unheld);
        cJSON_AddStringToObject(r, "cgroup", lbsd_cg_mode_name(lbsd_cg_detect()));
        cJSON_AddNumberToObject(r, "uptime_ms", (double)(lb_mono_ms() - g_started_ms));
        lbsd_ping_lifecycle(r);
        cJSON_AddNumberToObject(r, "uid_base", (double)g_cfg->sandbox_uid_base);
        /* ranges of host ids for sandboxes (0: all share uid_base's) */
        cJSON_AddNumberToObject(r, "uid_slots", lbsd_slot_count());
        cJSON_AddNumberToObject(r, "uid_slots_used", lbsd_slot_used());
        /* sandboxes whose descriptors are parked with their inits (fdpark.h) */
        cJSON_AddNumberToObject(r, "parked", lbsd_parked_count(lbsd_set_first()));
    }
    lbsd_reply(c, r, NULL, 0, 0);
}

/* Every request is handled with the same arguments: sb is c's sandbox
 * named by the request for the routes that need one (LBSD_R_SANDBOX), NULL
 * for the others; data is a write's or an input's data frame. */
typedef void lbsd_handler(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data,
                          size_t dlen);

static void h_ping(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_ping(c);
}

static void h_interrupt(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_sandbox *s = lbsd_set_find(c, req->id);
    if (s)
        lbsd_exec_interrupt(s);
    lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
}

static void h_create(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_create(c, req);
}

static void h_adopt(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_adopt(c, req);
}

static void h_renew(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_renew(c, req);
}

static void h_port(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_port_request(c, req); /* sandbox_port.c */
}

static void h_proc(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_proc_request(c, req, data, dlen); /* sandbox_proc.c */
}

static void h_state_store(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data,
                          size_t dlen)
{
    lbsd_state_store_request(g_cfg, c, req); /* sandbox_save.c */
}

/* Answered once the sandbox is gone (a worker tears it down; the loop goes
 * on meanwhile); a sandbox c does not have is gone already. Its parked
 * descriptors are not fetched back first: a destroy needs none. */
static void h_destroy(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_sandbox *s = lbsd_set_find(c, req->id);
    if (s) {
        lbsd_set_remove(s);
        lbsd_retire(s, c, LBSD_ANSWER_OK, NULL);
    } else {
        lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
    }
}

/* freeze, thaw, save (sandbox_save.c) */
static void h_state(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    LB_IGNORE(lbsd_state_sandbox_request(g_cfg, c, sb, req)); /* these three it always answers */
}

/* Starts a command, or waits for / interrupts the running one; marks c busy
 * while it waits (sandbox_exec.c). */
static void h_exec(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    char msg[1024] = "";
    int rc = lbsd_exec_request(c, sb, req, msg, sizeof msg);
    if (rc)
        lbsd_reply_error(c, rc, "%s", msg);
}

static void h_read(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_fs_read(c, sb, req);
}

static void h_write(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_fs_write(c, sb, req, data, dlen);
}

static void h_list(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_fs_list(c, sb, req);
}

/* a sandbox's CPU, memory and disk now (sandbox_metrics.c) */
static void h_metrics(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    (void)req, (void)data, (void)dlen;
    lbsd_metrics_request(c, sb);
}

static void h_stat(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_fs_stat(c, sb, req);
}

/* E2B's makeDir, rename and remove (sandbox_fs.c) */
static void h_fs_change(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_fs_change(c, sb, req);
}

/* image pulls and builds for an unprivileged client (image_jobs.c) */
static void h_image_job(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_image_job_request(c, req);
}

/* E2B's volumes (sandbox_volume.c) */
static void h_volume(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_volume_submit(c, g_cfg, req, data, dlen); /* on a worker: volume_jobs.h */
}

static void h_volume_mount(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_volume_mount(c, g_cfg, sb, req);
}

static void h_unsupported(lbsd_conn *c, lbsd_sandbox *sb, lbsd_req *req, const char *data,
                          size_t dlen)
{
    lbsd_reply_error(c, LB_E_INVAL, "unsupported op");
}

/* What a route asks of the dispatcher before its handler runs. */
enum {
    LBSD_R_BUSY_OK = 1,     /* served while an exec of the connection runs: the protocol is
                             * one request at a time, only ping and interrupt make sense then */
    LBSD_R_SANDBOX = 2,     /* on one of c's sandboxes: found, its parked descriptors back
                             * (fdpark.h), refused when it is gone */
    LBSD_R_THAWED = 4,      /* refused while the sandbox is frozen (sandbox_save.c) */
};

/* The requests sandboxd serves: one row each, like the web's route table
 * (front/router.c). An op missing here is answered "unsupported op", on a
 * sandbox of c's like the rest. */
static const struct lbsd_route {
    lbsd_op op;
    unsigned flags;
    lbsd_handler *fn;
} g_routes[] = {
    {LBSD_OP_PING, LBSD_R_BUSY_OK, h_ping},
    {LBSD_OP_INTERRUPT, LBSD_R_BUSY_OK, h_interrupt},
    {LBSD_OP_CREATE, 0, h_create},
    {LBSD_OP_ADOPT, 0, h_adopt},
    {LBSD_OP_RENEW, 0, h_renew},
    {LBSD_OP_PORT_CONNECT, 0, h_port},
    {LBSD_OP_PROC_START, 0, h_proc},
    {LBSD_OP_PROC_ATTACH, 0, h_proc},
    {LBSD_OP_PROC_INPUT, 0, h_proc},
    {LBSD_OP_PROC_SIGNAL, 0, h_proc},
    {LBSD_OP_PROC_LIST, 0, h_proc},
    {LBSD_OP_STATE_DELETE, 0, h_state_store},
    {LBSD_OP_STATE_LIST, 0, h_state_store},
    {LBSD_OP_DESTROY, 0, h_destroy},
    {LBSD_OP_FREEZE, LBSD_R_SANDBOX, h_state},
    {LBSD_OP_THAW, LBSD_R_SANDBOX, h_state},
    {LBSD_OP_SAVE, LBSD_R_SANDBOX, h_state},
    {LBSD_OP_EXEC, LBSD_R_SANDBOX | LBSD_R_THAWED, h_exec},
    {LBSD_OP_READ, LBSD_R_SANDBOX | LBSD_R_THAWED, h_read},
    {LBSD_OP_WRITE, LBSD_R_SANDBOX | LBSD_R_THAWED, h_write},
    {LBSD_OP_LIST, LBSD_R_SANDBOX | LBSD_R_THAWED, h_list},
    {LBSD_OP_STAT, LBSD_R_SANDBOX | LBSD_R_THAWED, h_stat},
    {LBSD_OP_FS_CHANGE, LBSD_R_SANDBOX | LBSD_R_THAWED, h_fs_change},
    {LBSD_OP_METRICS, LBSD_R_SANDBOX | LBSD_R_THAWED, h_metrics},
    {LBSD_OP_IMAGE_JOB_START, 0, h_image_job},
    {LBSD_OP_IMAGE_JOB_POLL, 0, h_image_job},
    {LBSD_OP_VOLUME, 0, h_volume},
    {LBSD_OP_VOLUME_MOUNT, LBSD_R_SANDBOX | LBSD_R_THAWED, h_volume_mount},
};

static void lbsd_dispatch(lbsd_conn *c, lbsd_req *req, const char *data, size_t dlen)
{
    static const struct lbsd_route unsupported = {LBSD_OP_NONE, LBSD_R_SANDBOX, h_unsupported};
    const struct lbsd_route *r = &unsupported;
    for (size_t i = 0; i < sizeof g_routes / sizeof g_routes[0]; i++) {
        if (g_routes[i].op == req->op) {
            r = &g_routes[i];
            break;
        }
    }
    if (c->busy && !(r->flags & LBSD_R_BUSY_OK)) {
        lbsd_reply_error(c, LB_E_UNAVAILABLE, "a command is running on this connection");
        return;
    }
    lbsd_sandbox *sb = NULL;
    if (r->flags & LBSD_R_SANDBOX) {
        char msg[1024] = "";
        sb = lbsd_set_find(c, req->id);
        if (sb && !sb->broken && lbsd_unpark(sb, msg, sizeof msg) != LB_OK) {
            snprintf(sb->gone_why, sizeof sb->gone_why, "%s", msg);
            sb->broken = 1;
        }
        if (!sb) {
            lbsd_reply_notfound(c, req->id);
            return;
        }
        if (sb->broken) {
            lbsd_note_gone(sb);
            lbsd_reply_error(c, LB_E_SANDBOX, "sandbox %s is gone: %s", sb->id, sb->gone_why);
            return;
        }
        /* a frozen sandbox refuses (and answers) the rest */
        if ((r->flags & LBSD_R_THAWED) && lbsd_state_sandbox_request(g_cfg, c, sb, req))
            return;
    }
    r->fn(c, sb, req, data, dlen);
}

/* A whole frame arrived on c. */
static void lbsd_on_frame(lbsd_conn *c, char *frame, size_t len)
{
    if (c->skip_data) {
        /* the data frame of a request already refused */
        c->skip_data = 0;
        return;
    }
    if (c->have_pending) {
        /* the data frame of a write */
        c->have_pending = 0;
        lbsd_dispatch(c, &c->pending, frame, len);
        lbsd_req_free(&c->pending);
        return;
    }
    char msg[512];
    lbsd_req req;
    int rc = lbsd_req_parse(frame, len, &req, msg, sizeof msg);
    if (rc) {
        lb_debug("connection %d: bad request: %s", c->fd, msg);
        lbsd_reply_error(c, rc, "%s", msg);
        /* a refused request that announced a data frame still sends it:
         * swallow it, or it would be read as the next request */
        if (cJSON_IsObject(req.json) &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req.json, "data")))
            c->skip_data = 1;
        lbsd_req_free(&req);
        return;
    }
    if (req.has_data) {
        c->pending = req;
        c->have_pending = 1;
        return;
    }
    lbsd_dispatch(c, &req, NULL, 0);
    lbsd_req_free(&req);
}

/* ---- connections ------------------------------------------------------------- */

static void lbsd_conn_close(lbsd_conn *c)
{
    for (lbsd_conn **pp = &g_conns; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    g_nconns--;
    lbsd_proc_conn_closed(c); /* E2B's protocol: attached to nothing any more */
    /* a connection's sandboxes die with it: that is how an agent that
     * crashed or was cancelled leaves nothing behind */
    int n = 0, kept = 0;
    for (lbsd_sandbox *s = lbsd_set_first(), *next; s; s = next) {
        next = s->next;
        if (s->owner != c)
            continue;
        if (s->exec && s->lease_s)
            /* nobody will collect the command's end: stop it, keep the shell
             * for the next holder */
            LB_IGNORE(lbsd_kill_all(s, 1)); /* what survives is killed with the sandbox */
        lbsd_exec_abandon(s); /* its waiting client is this connection */
        s->owner = NULL;
        if (s->lease_s) {
            /* leased: it waits for a new holder (adopt) until its lease runs out */
            kept++;
            continue;
        }
        lbsd_destroy(s);
        n++;
    }
    lb_debug("connection %d closed (%d sandbox(es) destroyed, %d leased kept)", c->fd, n, kept);
    close(c->fd);
    lbsd_decoder_free(&c->dec);
    if (c->have_pending)
        lbsd_req_free(&c->pending);
    lb_buf_free(&c->out);
    lb_buf_free(&c->deferred);
    free(c);
}

static char *g_frame; /* the frame being dispatched (lbsd_frame_take) */

char *lbsd_frame_take(const char *data)
{
    if (!data || data != g_frame)
        return NULL;
    char *f = g_frame;
    g_frame = NULL;
    return f;
}

static void lbsd_on_readable(lbsd_conn *c)
{
    char *buf = malloc(LBSD_CONN_READ_MAX);
    if (!buf)
        return;
    /* read only what the frame being decoded still needs, so nothing of a
     * following request is swallowed while this one is processed */
    for (int turns = 0; turns < 64 && !c->dead && !c->creating && c->out.len == c->out_off &&
                        (!c->busy || c->deferred.len < LBSD_DEFERRED_MAX);
         turns++) {
        size_t need = c->dec.hdr_got < LBSD_FRAME_HDR ? LBSD_FRAME_HDR - c->dec.hdr_got
                                                       : c->dec.want - c->dec.got;
        if (need == 0)
            need = LBSD_FRAME_HDR;
        if (need > LBSD_CONN_READ_MAX)
            need = LBSD_CONN_READ_MAX;
        ssize_t r = recv(c->fd, buf, need, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (r <= 0) {
            c->dead = 1;
            break;
        }
        size_t off = 0;
        while (off < (size_t)r && !c->dead) {
            char *frame;
            size_t flen, used;
            int fr = lbsd_decoder_feed(&c->dec, buf + off, (size_t)r - off, &used, &frame, &flen);
            off += used;
            if (fr < 0) {
                lbsd_reply_error(c, LB_E_INVAL, "frame larger than %u bytes",
                                 (unsigned)LLMBOX_RPC_MAX_FRAME);
                /* the stream cannot be resynchronised: flush the error, close */
                c->dead = 2;
                break;
            }
            if (fr == 1) {
                g_last_req_ms = lb_mono_ms();
                g_frame = frame;
                lbsd_on_frame(c, frame, flen);
                free(g_frame); /* NULL when a handler took it (lbsd_frame_take) */
                g_frame = NULL;
            }
        }
    }
    free(buf);
}

static void lbsd_on_writable(lbsd_conn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t w = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w <= 0) {
            c->dead = 1;
            return;
        }
        c->out_off += (size_t)w;
    }
    /* all sent: give the memory of a big read back */
    if (c->out.cap > (1u << 20))
        lb_buf_free(&c->out);
    else
        lb_buf_reset(&c->out);
    c->out_off = 0;
}

static void lbsd_accept(int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        if (g_nconns >= g_cfg->sandboxd_max_conns) {
            lb_warn("too many connections (%d): refusing one (LLMBOX_SANDBOXD_MAX_CONNS)",
                    g_cfg->sandboxd_max_conns);
            close(fd);
            continue;
        }
        struct ucred cr;
        socklen_t cl = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
            close(fd);
            continue;
        }
        lbsd_conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->uid = cr.uid;
        c->gid = cr.gid;
        c->pid = cr.pid;
        c->serial = ++g_conn_serial;
        lbsd_decoder_init(&c->dec, LLMBOX_RPC_MAX_FRAME);
        lb_buf_init(&c->out, LBSD_CONN_OUT_MAX);
        lb_buf_init(&c->deferred, LBSD_DEFERRED_MAX + 2048);
        c->next = g_conns;
        g_conns = c;
        g_nconns++;
        lb_debug("connection %d from pid %d uid %d", fd, (int)cr.pid, (int)cr.uid);
    }
}

/* ---- children ---------------------------------------------------------------- */

static void lbsd_reap(void)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        int known = 0;
        for (lbsd_sandbox *s = lbsd_set_first(); s && !known; s = s->next) {
            if (s->init_pid == pid) {
                s->init_reaped = 1;
                lbsd_note_gone(s);
                if (!s->broken)
                    lb_warn("sandbox %s: init died (status %d): %s", s->id, st, s->gone_why);
                s->broken = 1;
                known = 1;
            } else {
                known = lbsd_net_child_exited(s, pid, st);
            }
        }
        if (!known)
            known = lbsd_image_jobs_child_exited(pid, st); /* image_jobs.h */
        if (!known)
            lbsd_pool_child_exited(pid);
    }
}

/* ---- life cycle in the loop: the reaper and the pool's refill ----------------- */

/* The poll timeout, shortened for the next TTL expiry and the pool's next
 * refill (0 when it wants one now: the pass then only polls). */
/* The lifecycle's walks of the whole list, cached: with 10,000 sandboxes
 * one walk costs about a millisecond (a cache miss per sandbox), and the
 * loop makes several passes per request. The next expiry is recomputed
 * when the list changes and at least every LBSD_LIFE_SCAN_MS (a renew or
 * an adopt only moves it later: the worst is an early wake-up). */
#define LBSD_LIFE_SCAN_MS 50
#define LBSD_PARK_SCAN_MS 250
static int64_t g_expiry_at = -1;      /* lb_mono_ms() of the next TTL or lease end; -1: none */
static int64_t g_expiry_scan_ms, g_park_scan_ms;
static unsigned g_expiry_gen, g_park_seen_gen, g_park_seen_parks;

static int lbsd_next_expiry_cached(int64_t now)
{
    if (g_expiry_gen != lbsd_set_gen() || now - g_expiry_scan_ms >= LBSD_LIFE_SCAN_MS) {
        int t = lbsd_next_expiry(now);
        g_expiry_at = t < 0 ? -1 : now + t;
        g_expiry_gen = lbsd_set_gen();
        g_expiry_scan_ms = now;
    }
    if (g_expiry_at < 0)
        return -1;
    return g_expiry_at > now ? (int)(g_expiry_at - now) : 0;
}

static int lbsd_lifecycle_timeout(int64_t now, int timeout)
{
    int t = lbsd_next_expiry_cached(now);
    int fw = lbsd_filewatch_due(now, lbsd_set_count());
    if (fw >= 0 && (t < 0 || fw < t))
        t = fw;
    int room = g_cfg->sandbox_max - lbsd_set_count() - lbsd_pool_ready() - lbsd_creating();
    /* a refill already with a worker or a create waiting: the job's end wakes the loop */
    int p = lbsd_workers_inflight(LBSD_JOB_REFILL) || lbsd_creating() ? -1 : lbsd_pool_refill_due(now, room);
    if (p >= 0 && p < LBSD_REFILL_QUIET_MS && now - g_last_req_ms < LBSD_REFILL_QUIET_MS)
        p = (int)(LBSD_REFILL_QUIET_MS - (now - g_last_req_ms)); /* once the clients are quiet */
    if (p >= 0 && (t < 0 || p < t))
        t = p;
    if (t >= 0 && (timeout < 0 || t < timeout))
        timeout = t;
    int ij = lbsd_image_jobs_tick(now); /* image_jobs.h */
    if (ij >= 0 && (timeout < 0 || ij < timeout))
        timeout = ij;
    if (timeout < 0 || timeout > 60000)
        timeout = 60000; /* follow-ups: the saved states' sweep runs once a minute */
    return timeout;
}

/* After each pass: expired sandboxes go, and the pool gets a refill when
 * it wants one (made by a worker: the loop does not wait for it). */
static void lbsd_lifecycle_tick(int64_t now)
{
    if (lbsd_next_expiry_cached(now) == 0) {
        lbsd_reap_expired(now);
        g_expiry_gen = lbsd_set_gen() - 1; /* rescan: what it destroyed may have been the next */
    }
    lbsd_filewatch_tick(lbsd_set_first(), now);
    /* fdpark.h: when the list or the parks changed, and as sandboxes age */
    if (g_park_seen_gen != lbsd_set_gen() || g_park_seen_parks != lbsd_park_changes() ||
        now - g_park_scan_ms >= LBSD_PARK_SCAN_MS) {
        (void)lbsd_park_relieve(lbsd_set_first(), lbsd_set_count(), now); /* a count; it logs what it did */
        g_park_seen_gen = lbsd_set_gen();
        g_park_seen_parks = lbsd_park_changes();
        g_park_scan_ms = now;
    }
    lbsd_state_sweep(g_cfg, now); /* follow-ups: old saved states */
    (void)lbsd_image_jobs_tick(now); /* image jobs: slow ones killed, old ones forgotten */
    lbsd_refill_maybe(lb_mono_ms());
}

/* ---- the loop ------------------------------------------------------------------ */

typedef enum { PK_LISTEN, PK_SIG, PK_JOBS, PK_CONN, PK_CTL, PK_SHIN, PK_SHOUT, PK_SHERR, PK_PROC, PK_IMGJOB } lbsd_pk;

typedef struct {
    lbsd_pk kind;
    void *obj;
} lbsd_pref;

/* E2B's protocol: the descriptors of sandboxd's own processes (sandbox_proc.h) */
typedef struct {
    struct pollfd *pfd;
    lbsd_pref *ref;
    size_t n, cap;
} lbsd_pollset;

static void lbsd_poll_add_proc(void *arg, int fd, short events, lbsd_sandbox *sb)
{
    lbsd_pollset *ps = arg;
    if (ps->n >= ps->cap)
        return; /* sized from lbsd_proc_fd_count: cannot happen */
    ps->pfd[ps->n] = (struct pollfd){.fd = fd, .events = events};
    ps->ref[ps->n++] = (lbsd_pref){PK_PROC, sb};
}

/* The sandboxes the loop polls and ticks: the unparked ones (a parked
 * sandbox runs no command and is not polled, fdpark.h). Rebuilt when the
 * list or the parks change, so that a pass costs what the active
 * sandboxes cost, not what all 10,000 do. */
static lbsd_sandbox **g_active;
static size_t g_active_n, g_active_cap;
static unsigned g_active_gen = ~0u, g_active_parks = ~0u;

static int lbsd_active_refresh(void)
{
    if (g_active_gen == lbsd_set_gen() && g_active_parks == lbsd_park_changes())
        return 0;
    if ((size_t)lbsd_set_count() > g_active_cap) {
        size_t nc = (size_t)lbsd_set_count() * 2;
        lbsd_sandbox **na = realloc(g_active, nc * sizeof *na);
        if (!na)
            return -1;
        g_active = na;
        g_active_cap = nc;
    }
    g_active_n = 0;
    for (lbsd_sandbox *s = lbsd_set_first(); s; s = s->next)
        if (s->parked != 2)
            g_active[g_active_n++] = s;
    g_active_gen = lbsd_set_gen();
    g_active_parks = lbsd_park_changes();
    return 0;
}

int lbsd_serve(const lb_config *cfg, int lfd)
{
    g_cfg = cfg;
    lbsd_retire_init(cfg);
    g_started_ms = lb_mono_ms();
    lbsd_image_jobs_init(cfg); /* before the workers: its folders, an earlier run's leftovers gone */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0)
        return 1;
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        lb_error("signalfd: %s", strerror(errno));
        return 1;
    }
    /* compiled here, once, before any thread: the workers' inits load it */
    if (lbsd_seccomp_prepare() != LB_OK) {
        lb_error("cannot compile the seccomp filter");
        close(sfd);
        return 1;
    }
    lbsd_park_init(cfg->sandboxd_max_conns, cfg->sandboxd_workers);
    /* after the mask: the workers inherit it */
    if (lbsd_workers_start(cfg->sandboxd_workers) != LB_OK) {
        lb_error("cannot start the worker threads: %s", strerror(errno));
        close(sfd);
        return 1;
    }
    size_t cap = 0;
    struct pollfd *pfd = NULL;
    lbsd_pref *ref = NULL;
    int quit = 0;
    while (!quit) {
        size_t want = 3 + (size_t)g_nconns + 4 * (size_t)lbsd_set_count() + lbsd_proc_fd_count() /* E2B's protocol */
                      + lbsd_image_jobs_fd_count(); /* image_jobs.h */
        if (want > cap) {
            size_t nc = want * 2;
            struct pollfd *np = realloc(pfd, nc * sizeof *np);
            if (np)
                pfd = np;
            lbsd_pref *nr = realloc(ref, nc * sizeof *nr);
            if (nr)
                ref = nr;
            if (!np || !nr) {
                lb_error("out of memory in the event loop");
                break;
            }
            cap = nc;
        }
        size_t n = 0;
        pfd[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
        ref[n++] = (lbsd_pref){PK_LISTEN, NULL};
        pfd[n] = (struct pollfd){.fd = sfd, .events = POLLIN};
        ref[n++] = (lbsd_pref){PK_SIG, NULL};
        pfd[n] = (struct pollfd){.fd = lbsd_workers_fd(), .events = POLLIN};
        ref[n++] = (lbsd_pref){PK_JOBS, NULL};
        for (lbsd_conn *c = g_conns; c; c = c->next) {
            short ev = 0;
            if (c->out_off < c->out.len)
                ev |= POLLOUT;
            else if (c->creating)
                ev = 0; /* its create is with a worker: only a hangup is noticed */
            else if (!c->busy || c->deferred.len < LBSD_DEFERRED_MAX)
                ev |= POLLIN; /* while busy: for interrupt requests */
            /* with events 0 a connection is still polled for POLLHUP */
            pfd[n] = (struct pollfd){.fd = c->fd, .events = ev};
            ref[n++] = (lbsd_pref){PK_CONN, c};
        }
        int timeout = -1;
        int64_t now = lb_mono_ms();
        if (lbsd_active_refresh() != 0) {
            lb_error("out of memory in the event loop");
            break;
        }
        for (size_t k = 0; k < g_active_n; k++) {
            lbsd_sandbox *s = g_active[k];
            /* first: finishing a command may restart the shell (new fds) */
            int t = lbsd_exec_tick(s, now);
            if (t >= 0 && (timeout < 0 || t < timeout))
                timeout = t;
            if (s->ctl_fd >= 0 && s->parked != 2) { /* fdpark.h: read when it comes back */
                pfd[n] = (struct pollfd){.fd = s->ctl_fd, .events = POLLIN};
                ref[n++] = (lbsd_pref){PK_CTL, s};
            }
            if (s->sh_in >= 0 && s->exec && s->exec->woff < s->exec->wlen) {
                pfd[n] = (struct pollfd){.fd = s->sh_in, .events = POLLOUT};
                ref[n++] = (lbsd_pref){PK_SHIN, s};
            }
            if (s->sh_out >= 0 && lbsd_exec_out_ready(s, 0, now, &timeout)) {
                pfd[n] = (struct pollfd){.fd = s->sh_out, .events = POLLIN};
                ref[n++] = (lbsd_pref){PK_SHOUT, s};
            }
            if (s->sh_err >= 0 && lbsd_exec_out_ready(s, 1, now, &timeout)) {
                pfd[n] = (struct pollfd){.fd = s->sh_err, .events = POLLIN};
                ref[n++] = (lbsd_pref){PK_SHERR, s};
            }
        }
        {
            int pt = lbsd_proc_tick(now); /* the spawners' watchdog, port connects' deadlines */
            if (pt >= 0 && (timeout < 0 || pt < timeout))
                timeout = pt;
        }
        {
            lbsd_pollset ps = {pfd, ref, n, cap}; /* E2B's protocol */
            lbsd_proc_poll(lbsd_poll_add_proc, &ps);
            n = ps.n;
        }
        {
            size_t k = lbsd_image_jobs_fds(pfd + n, cap - n); /* image_jobs.h */
            for (size_t e = 0; e < k; e++)
                ref[n + e] = (lbsd_pref){PK_IMGJOB, NULL};
            n += k;
        }
        timeout = lbsd_lifecycle_timeout(now, timeout);
        unsigned polled_gen = lbsd_set_gen();
        int r = poll(pfd, n, timeout);
        if (r < 0 && errno != EINTR) {
            lb_error("poll: %s", strerror(errno));
            break;
        }
        for (size_t i = 0; r > 0 && i < n; i++) {
            short re = pfd[i].revents;
            if (!re)
                continue;
            switch (ref[i].kind) {
            case PK_LISTEN:
                lbsd_accept(lfd);
                break;
            case PK_JOBS:
                lbsd_jobs_collect();
                break;
            case PK_IMGJOB:
                lbsd_image_jobs_on_ready(pfd[i].fd);
                break;
            case PK_SIG: {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                    if (si.ssi_signo == SIGCHLD)
                        lbsd_reap();
                    else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
                        lb_info("signal %d: shutting down", (int)si.ssi_signo);
                        quit = 1;
                    }
                }
                break;
            }
            case PK_CONN: {
                lbsd_conn *c = ref[i].obj;
                if (re & POLLOUT)
                    lbsd_on_writable(c);
                if (re & POLLIN)
                    lbsd_on_readable(c);
                else if (re & (POLLHUP | POLLERR | POLLNVAL))
                    c->dead = 1;
                break;
            }
            /* sandbox fds: the sandbox may have been destroyed earlier in
             * this same pass (its connection closed); skip stale entries */
            case PK_CTL:
            case PK_SHIN:
            case PK_SHOUT:
            case PK_SHERR:
            case PK_PROC: {
                lbsd_sandbox *s = ref[i].obj, *t = s;
                if (lbsd_set_gen() != polled_gen) { /* one left the list: is s still in it? */
                    t = lbsd_set_first();
                    while (t && t != s)
                        t = t->next;
                }
                if (!t || pfd[i].fd < 0)
                    break;
                if (ref[i].kind == PK_PROC) {
                    lbsd_proc_on_ready(s, pfd[i].fd, re); /* E2B's protocol */
                } else if (ref[i].kind == PK_CTL && pfd[i].fd == s->ctl_fd) {
                    if (lbsd_ctl_handle(s) < 0) {
                        close(s->ctl_fd);
                        s->ctl_fd = -1;
                        lbsd_note_gone(s);
                        s->broken = 1;
                    }
                } else if (ref[i].kind == PK_SHIN && pfd[i].fd == s->sh_in) {
                    lbsd_exec_on_writable(s);
                } else if (ref[i].kind == PK_SHOUT && pfd[i].fd == s->sh_out) {
                    lbsd_exec_on_output(s, s->sh_out);
                } else if (ref[i].kind == PK_SHERR && pfd[i].fd == s->sh_err) {
                    lbsd_exec_on_output(s, s->sh_err);
                }
                break;
            }
            }
        }
        /* completions and deadlines, then connections that are done */
        now = lb_mono_ms();
        if (lbsd_active_refresh() != 0) {
            lb_error("out of memory in the event loop");
            break;
        }
        for (size_t k = 0; k < g_active_n; k++)
            lbsd_exec_tick(g_active[k], now);
        lbsd_lifecycle_tick(now);
        for (lbsd_conn *c = g_conns, *next; c; c = next) {
            next = c->next;
            if (c->dead == 2 && c->out_off < c->out.len) {
                lbsd_on_writable(c); /* best effort: the error, then close */
                c->dead = 1;
            }
            if (c->dead)
                lbsd_conn_close(c);
        }
    }
    /* shutdown: every sandbox goes, also those a worker is making */
    while (g_conns)
        lbsd_conn_close(g_conns);
    lbsd_image_jobs_shutdown();
    while (lbsd_set_first())
        lbsd_destroy(lbsd_set_first());
    lbsd_workers_stop(); /* every queued job done, destroys too */
    lbsd_jobs_collect(); /* creates of closed connections and refills: retired or pooled */
    lbsd_pool_shutdown(); /* from here on, retiring runs on this thread */
    lbsd_cg_shutdown();
    free(pfd);
    free(ref);
    close(sfd);
    return quit ? 0 : 1;
}
