/* The store's rows of this web's API sandboxes; the contract is
 * sandbox_rows.h. */
#include "sbxapi/sandbox_rows.h"

#include "common/log.h"
#include "common/util.h"
#include "common/node_id.h"
#include "store/store_sandbox.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LB_ROWS_LIST_MAX 10000 /* sandboxes one list shows: every node's sandbox_api_max, for any cluster we run */

static const lb_config *lb_rw_cfg; /* NULL: no rows kept (no node_name) */
static pthread_mutex_t lb_rw_mu = PTHREAD_MUTEX_INITIALIZER;
static lb_store *lb_rw_store;      /* lb_rw_mu; opened when needed, again after a failure */

/* The connection, opened if needed (lb_rw_mu held); NULL when the store
 * cannot be reached. */
static lb_store *lb_rw_conn(void)
{
    if (!lb_rw_store && lb_store_open(lb_cfg_store_where(lb_rw_cfg), &lb_rw_store) != LB_OK) {
        lb_store_close(lb_rw_store);
        lb_rw_store = NULL;
    }
    return lb_rw_store;
}

/* After a failed statement: a new connection next time (lb_rw_mu held) */
static void lb_rw_failed(int rc)
{
    if (rc == LB_E_UNAVAILABLE || rc == LB_E_IO || rc == LB_E_PROTO) {
        lb_store_close(lb_rw_store);
        lb_rw_store = NULL;
    }
}

/* s's row from its status object; *info is the caller's (free) */
static int lb_row_of(lb_sbx *s, char node[LB_NODE_ID_NAME_MAX + 1], lb_sbx_row *row, char **info)
{
    *info = NULL;
    cJSON *o = lb_sbx_json(s);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "paused");
    *info = o ? cJSON_PrintUnformatted(o) : NULL;
    int paused = cJSON_IsTrue(p);
    cJSON_Delete(o);
    if (!*info || !lb_node_id_node(s->id, node, LB_NODE_ID_NAME_MAX + 1))
        return LB_E_NOMEM;
    /* the owner, so that a user's list through any web finds it (set
     * before the sandbox runs, never changed after) */
    *row = (lb_sbx_row){.id = s->id, .node = node, .paused = paused, .info = *info, .owner = s->owner};
    lb_sbx_times(s, &row->created_ms, &row->expires_ms);
    return LB_OK;
}

static void lb_row_write(lb_sbx *s, int insert)
{
    if (!lb_rw_cfg)
        return;
    char node[LB_NODE_ID_NAME_MAX + 1], *info = NULL;
    lb_sbx_row row;
    int rc = lb_row_of(s, node, &row, &info);
    pthread_mutex_lock(&lb_rw_mu);
    lb_store *st = rc ? NULL : lb_rw_conn();
    if (!rc && !st)
        rc = LB_E_UNAVAILABLE;
    if (!rc)
        rc = insert ? lb_store_sbx_put(st, &row) : lb_store_sbx_update(st, &row);
    /* removed while its row was written: remove's delete may have run first */
    if (!rc && insert && lb_sbx_state_of(s, NULL, 0) == LB_SBX_STOPPED)
        rc = lb_store_sbx_delete(st, s->id);
    if (rc && rc != LB_E_NOTFOUND) {
        lb_rw_failed(rc);
        lb_warn("web: sandbox API: cannot write the row of %s in the store (%s): the other webs list it once "
                "the refresh mends it", s->id, lb_strerror(rc));
    }
    pthread_mutex_unlock(&lb_rw_mu);
    free(info);
}

void lb_sbx_row_put(lb_sbx *s)
{
    lb_row_write(s, 1);
}

void lb_sbx_row_update(lb_sbx *s)
{
    lb_row_write(s, 0);
}

void lb_sbx_row_drop(const char *id)
{
    if (!lb_rw_cfg)
        return;
    pthread_mutex_lock(&lb_rw_mu);
    lb_store *st = lb_rw_conn();
    int rc = st ? lb_store_sbx_delete(st, id) : LB_E_UNAVAILABLE;
    if (rc) {
        lb_rw_failed(rc);
        lb_warn("web: sandbox API: cannot delete the row of %s in the store (%s): lists show it until the "
                "refresh deletes it", id, lb_strerror(rc));
    }
    pthread_mutex_unlock(&lb_rw_mu);
}

/* ---- the refresh ---- */

typedef struct lb_ids {
    char (*ids)[LB_NODE_ID_MAX + 1];
    int n, max;
} lb_ids;

static int lb_collect(void *arg, const lb_sbx_row *row)
{
    lb_ids *v = arg;
    if (v->n < v->max)
        snprintf(v->ids[v->n++], sizeof v->ids[0], "%s", row->id);
    return 0;
}

static int lb_ids_has(const lb_ids *v, const char *id)
{
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->ids[i], id))
            return 1;
    return 0;
}

/* One refresh (lb_rw_mu held): seen now, the rows of sandboxes the
 * registry no longer holds deleted, the stale rows of any node swept; the
 * registry's running sandboxes whose row is missing into *missing (the
 * caller writes them, unlocked). */
static int lb_refresh(lb_store *st, lb_ids *stored, lb_ids *held, lb_ids *missing, int *mended)
{
    const char *node = lb_rw_cfg->node_name;
    int rc = lb_store_sbx_touch(st, node);
    stored->n = missing->n = 0;
    if (!rc)
        rc = lb_store_sbx_list(st, node, 0, stored->max, lb_collect, stored);
    if (rc)
        return rc;
    held->n = lb_sbx_running_api_ids(held->ids, held->max);
    for (int i = 0; !rc && i < stored->n; i++) {
        lb_sbx *s = lb_sbx_get(stored->ids[i], NULL, 0);
        if (!s) { /* gone from the registry (or past its TTL): its row too */
            rc = lb_store_sbx_delete(st, stored->ids[i]);
            ++*mended;
        }
        lb_sbx_put(s);
    }
    for (int i = 0; i < held->n; i++)
        if (!lb_ids_has(stored, held->ids[i]))
            memcpy(missing->ids[missing->n++], held->ids[i], sizeof held->ids[0]);
    size_t swept = 0;
    if (!rc)
        rc = lb_store_sbx_sweep(st, 2 * (int64_t)lb_rw_cfg->node_lease_s * 1000, &swept);
    if (!rc && swept)
        lb_info("web: sandbox API: %zu row(s) of sandboxes whose web stopped refreshing them swept from the store",
                swept);
    return rc;
}

static void *lb_rw_main(void *arg)
{
    (void)arg;
    int max = lb_rw_cfg->sandbox_api_max + 64; /* the node's rows: the registry's, and a few on the way out */
    lb_ids stored = {calloc((size_t)max, sizeof *stored.ids), 0, max};
    lb_ids held = {calloc((size_t)max, sizeof *held.ids), 0, max};
    lb_ids missing = {calloc((size_t)max, sizeof *missing.ids), 0, max};
    if (!stored.ids || !held.ids || !missing.ids) {
        lb_error("web: sandbox API: no memory for refreshing the store's rows; other webs stop listing this "
                 "node's sandboxes after node_lease_s");
        free(stored.ids);
        free(held.ids);
        free(missing.ids);
        return NULL;
    }
    int period_ms = lb_rw_cfg->node_lease_s * 1000 / 3, failing = 0;
    for (;;) {
        struct timespec ts = {period_ms / 1000, (long)(period_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        int mended = 0;
        pthread_mutex_lock(&lb_rw_mu);
        lb_store *st = lb_rw_conn();
        int rc = st ? lb_refresh(st, &stored, &held, &missing, &mended) : LB_E_UNAVAILABLE;
        if (rc)
            lb_rw_failed(rc);
        pthread_mutex_unlock(&lb_rw_mu);
        for (int i = 0; !rc && i < missing.n; i++) { /* a write failed, or raced the list: again */
            lb_sbx *s = lb_sbx_get(missing.ids[i], NULL, 0);
            if (s) {
                lb_sbx_row_put(s);
                mended++;
            }
            lb_sbx_put(s);
        }
        if (rc && !failing++)
            lb_warn("web: sandbox API: cannot refresh this node's sandboxes in the store (%s): other webs stop "
                    "listing them after node_lease_s until it can", lb_strerror(rc));
        else if (!rc && failing) {
            lb_info("web: sandbox API: this node's sandboxes are refreshed in the store again");
            failing = 0;
        }
        if (mended)
            lb_info("web: sandbox API: %d row(s) in the store mended to match this web's sandboxes", mended);
    }
    return NULL;
}

int lb_sbx_rows_start(const lb_config *cfg)
{
    if (!cfg->node_name[0])
        return LB_OK;
    lb_rw_cfg = cfg;
    size_t n = 0;
    pthread_mutex_lock(&lb_rw_mu);
    lb_store *st = lb_rw_conn();
    int rc = st ? lb_store_sbx_forget_node(st, cfg->node_name, &n) : LB_E_UNAVAILABLE;
    if (rc)
        lb_rw_failed(rc);
    pthread_mutex_unlock(&lb_rw_mu);
    if (rc)
        lb_warn("web: sandbox API: cannot clear this node's rows of the web before (%s): the refresh does it",
                lb_strerror(rc));
    else if (n)
        lb_info("web: sandbox API: %zu row(s) of the web before cleared; those adopted are written again", n);
    int e = lb_thread_detached(lb_rw_main, NULL);
    return e ? LB_E_NOMEM : LB_OK;
}

/* ---- the list ---- */

typedef struct lb_list_ctx {
    cJSON *arr;
    int with_spec, count;
} lb_list_ctx;

static int lb_list_row(void *arg, const lb_sbx_row *row)
{
    lb_list_ctx *c = arg;
    cJSON *o = cJSON_Parse(row->info);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return 0; /* not a row this code wrote: left out */
    }
    if (!c->with_spec)
        cJSON_DeleteItemFromObjectCaseSensitive(o, "spec");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "node");
    if (!cJSON_AddStringToObject(o, "node", row->node) || !cJSON_AddItemToArray(c->arr, o)) {
        cJSON_Delete(o);
        return LB_E_NOMEM;
    }
    c->count++;
    return 0;
}

int lb_sbx_rows_list(lb_store *st, const lb_config *cfg, int with_spec, cJSON **out)
{
    return lb_sbx_rows_list_of(st, cfg, NULL, with_spec, out);
}

int lb_sbx_rows_list_of(lb_store *st, const lb_config *cfg, const char *owner, int with_spec, cJSON **out)
{
    *out = NULL;
    cJSON *o = cJSON_CreateObject();
    lb_list_ctx c = {o ? cJSON_AddArrayToObject(o, "sandboxes") : NULL, with_spec, 0};
    if (!c.arr) {
        cJSON_Delete(o);
        return LB_E_NOMEM;
    }
    /* rows seen within node_lease_s: three refreshes of a live web */
    int rc = lb_store_sbx_list_of(st, "", owner, (int64_t)cfg->node_lease_s * 1000, LB_ROWS_LIST_MAX, lb_list_row,
                                  &c);
    if (!rc && (!cJSON_AddNumberToObject(o, "count", c.count) ||
                !cJSON_AddNumberToObject(o, "max", cfg->sandbox_api_max)))
        rc = LB_E_NOMEM;
    if (rc) {
        cJSON_Delete(o);
        return rc;
    }
    *out = o;
    return LB_OK;
}
