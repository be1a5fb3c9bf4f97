/* The web's side of the artifact store: the artifacts folder is the
 * store's cache on this machine (common/blob_task.c), so once a file is
 * fetched every existing way of serving it (X-Accel-Redirect, signed
 * links, bundles) works unchanged, ranges and sendfile included. */
#include "web/blob_ready.h"

#include "common/blob_task.h"
#include "common/config.h"
#include "common/log.h"
#include "common/path.h"
#include "common/status.h"
#include "web/http.h"
#include "web/work_slots.h"

#include <stdio.h>
#include <sys/stat.h>

/* Fetches in r's thread: a whole file (up to an output's size) before
 * nginx serves it, so each takes one of a bounded few places per user and
 * overall (work_slots.h), and the other requests keep their threads. */
static lb_slots lb_fetch_slots = LB_SLOTS_INIT;

/* Takes a fetching place for r: LB_OK with key set, else answered (a JSON
 * 429 or 503 with Retry-After) and not LB_OK. */
static int lb_fetch_place(lb_req *r, char *key, size_t keysz)
{
    const lb_config *cfg = r->cfg;
    const char *addr = lb_http_param(r, "REMOTE_ADDR");
    /* per user with users; without, per address (nginx's, never a header) */
    if (r->user)
        snprintf(key, keysz, "u:%s", r->user->name);
    else
        snprintf(key, keysz, "a:%s", addr && *addr ? addr : "?");
    int rc = lb_slots_take(&lb_fetch_slots, cfg->blob_fetch_max, cfg->blob_fetch_max_per_user, key);
    if (rc == LB_E_TOOBIG)
        lb_http_error_hdr(r, 429, "too_many_fetches", "Retry-After: 5\r\n",
                          "%s already has %d files being fetched from the object store, the most one may have "
                          "(LLMBOX_BLOB_FETCH_MAX_PER_USER); try again once they are done.",
                          r->user ? "This user" : "This client address", cfg->blob_fetch_max_per_user);
    else if (rc != LB_OK)
        lb_http_error_hdr(r, 503, "fetches_busy", "Retry-After: 5\r\n",
                          "The server is already fetching %d files from the object store, the most it fetches "
                          "at once so that other requests are still answered (LLMBOX_BLOB_FETCH_MAX); try again "
                          "in a moment.", cfg->blob_fetch_max);
    return rc;
}

/* 1 when one output file is here already: served without a place */
static int lb_output_here(const lb_req *r, const char *path)
{
    char local[LB_CFG_PATH + LB_PATH_MAX + 64], dir[LB_CFG_PATH + 64];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/%s/output", r->cfg->artifacts_dir, r->id);
    return lb_path_join(local, sizeof local, dir, path) == LB_OK && lstat(local, &st) == 0 && S_ISREG(st.st_mode);
}

int lb_blob_ready(lb_req *r, const char *path, int tree)
{
    char why[1024] = "", key[LB_SLOT_KEY_MAX];
    if (!r->cfg->s3_bucket[0] || (!tree && lb_output_here(r, path)))
        return 1; /* local files only, or this one fetched already (what the fetch would find) */
    if (lb_fetch_place(r, key, sizeof key) != LB_OK)
        return 0; /* answered */
    int rc = tree ? lb_blob_task_fetch_outputs(r->cfg, r->id, path, why, sizeof why)
                  : lb_blob_task_fetch_output(r->cfg, r->id, path, why, sizeof why);
    lb_slots_release(&lb_fetch_slots, key);
    if (rc == LB_OK)
        return 1;
    lb_error("web: task %s: fetching from the object store: %s", r->id, why);
    if (rc == LB_E_NOTFOUND)
        lb_http_error(r, 404, "not_found", "The file is listed but gone from the object store: %s", why);
    else
        lb_http_error_hdr(r, 503, NULL, "Retry-After: 5\r\n", "The object store cannot be read right now: %s", why);
    return 0;
}

int lb_blob_record_ready(lb_req *r, const char *name)
{
    char why[1024] = "", key[LB_SLOT_KEY_MAX];
    if (!r->cfg->s3_bucket[0])
        return 1; /* local files only */
    if (lb_fetch_place(r, key, sizeof key) != LB_OK)
        return 0; /* answered */
    int rc = lb_blob_task_fetch_record(r->cfg, r->id, name, why, sizeof why);
    lb_slots_release(&lb_fetch_slots, key);
    if (rc == LB_OK || rc == LB_E_NOTFOUND)
        return 1;
    lb_error("web: task %s: fetching its %s from the object store: %s", r->id, name, why);
    lb_http_error_hdr(r, 503, NULL, "Retry-After: 5\r\n", "The object store cannot be read right now: %s", why);
    return 0;
}
