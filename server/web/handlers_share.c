/* Share links; the contract is handlers_share.h.
 *
 * A share is a random 128-bit id in the store (store_round.h: `shares`),
 * not a signature: the id is the capability, checked against the store on
 * every request, so that deleting the link (or the task: ON DELETE
 * CASCADE) revokes it at once, which a signed URL cannot. It expires like
 * a download link. The files of a shared view are served by nginx through
 * the signed /dl/ links (download_link.c), which outlive a revoked share
 * by at most download_link_ttl_s and die with the task's files. */
#include "web/handlers_share.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_round.h"
#include "web/download_link.h"
#include "web/http.h"
#include "web/task_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *share_json(const lb_share *sh)
{
    char url[96], api_url[96];
    snprintf(url, sizeof url, "/shared.html#%s", sh->id);
    snprintf(api_url, sizeof api_url, "/api/shared/%s", sh->id);
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "id", sh->id) || !cJSON_AddStringToObject(o, "url", url) ||
        !cJSON_AddStringToObject(o, "api_url", api_url) ||
        !cJSON_AddNumberToObject(o, "created_ms", (double)sh->created_ms) ||
        !cJSON_AddNumberToObject(o, "expires_ms", (double)sh->expires_ms)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void lb_h_share_create(lb_req *r)
{
    lb_http_drain(r); /* no body is needed */
    long long ttl = LB_SHARE_TTL_DEFAULT_S;
    char q[24];
    int qrc = lb_query_get(r->query, "ttl_s", q, sizeof q);
    if (qrc != LB_E_NOTFOUND) {
        char *end = q;
        errno = 0;
        ttl = qrc == LB_OK ? strtoll(q, &end, 10) : -1;
        if (qrc != LB_OK || end == q || *end || errno || ttl < 60 || ttl > LB_SHARE_TTL_MAX_S) {
            lb_http_error(r, 400, NULL, "ttl_s must be a whole number of seconds from 60 to %d.", LB_SHARE_TTL_MAX_S);
            return;
        }
    }
    int64_t now = lb_now_ms();
    lb_share *v = NULL;
    size_t n = 0;
    int rc = lb_store_shares_of(r->store, r->id, now, &v, &n);
    free(v);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task's share links");
        return;
    }
    if (n >= LB_SHARES_MAX) {
        lb_http_error(r, 409, NULL, "This task has %d live share links, the most it may have; delete one first.",
                      LB_SHARES_MAX);
        return;
    }
    lb_share sh = {.created_ms = now, .expires_ms = now + ttl * 1000};
    snprintf(sh.task_id, sizeof sh.task_id, "%s", r->id);
    if (lb_random_hex(sh.id, sizeof sh.id, 16) != LB_OK) {
        lb_http_error(r, 500, NULL, "Could not make a share id.");
        return;
    }
    rc = lb_store_share_add(r->store, &sh);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "store the share link");
        return;
    }
    lb_info("web: task %s: shared until %lld", r->id, (long long)(sh.expires_ms / 1000));
    cJSON *o = share_json(&sh);
    if (!o) {
        lb_http_error(r, 500, NULL, "Out of memory (the link was made).");
        return;
    }
    lb_http_json(r, 201, o, NULL);
    cJSON_Delete(o);
}

void lb_h_share_list(lb_req *r)
{
    lb_share *v = NULL;
    size_t n = 0;
    int rc = lb_store_shares_of(r->store, r->id, lb_now_ms(), &v, &n);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task's share links");
        return;
    }
    cJSON *o = cJSON_CreateObject(), *arr = o ? cJSON_AddArrayToObject(o, "shares") : NULL;
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *s = share_json(&v[i]);
        if (!s || !cJSON_AddItemToArray(arr, s)) {
            cJSON_Delete(s);
            arr = NULL;
        }
    }
    free(v);
    if (!arr) {
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

void lb_h_share_delete(lb_req *r)
{
    const char *sid = r->rest ? r->rest : "";
    if (!lb_id_valid(sid)) {
        lb_http_error(r, 404, NULL, "There is no such share link of this task.");
        return;
    }
    int rc = lb_store_share_delete(r->store, r->id, sid);
    if (rc == LB_E_NOTFOUND) {
        lb_http_error(r, 404, NULL, "There is no such share link of this task.");
        return;
    }
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "delete the share link");
        return;
    }
    lb_info("web: task %s: a share link was deleted", r->id);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", sid);
    cJSON_AddBoolToObject(o, "deleted", 1);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

void lb_h_shared_get(lb_req *r)
{
    const char *sid = r->rest ? r->rest : "";
    lb_share sh;
    /* one answer for every way a link is not (or no longer) good: it
     * tells a holder nothing about which tasks exist */
    int rc = lb_id_valid(sid) ? lb_store_share_get(r->store, sid, lb_now_ms(), &sh) : LB_E_NOTFOUND;
    cJSON *t = NULL;
    if (rc == LB_OK)
        rc = lb_store_task_get(r->store, sh.task_id, &t);
    if (rc == LB_E_NOTFOUND || rc == LB_E_INVAL) {
        lb_http_error(r, 404, NULL, "This share link does not exist, has expired, or was deleted with its task.");
        return;
    }
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the shared task");
        return;
    }
    /* the owner's business, not the reader's */
    cJSON_DeleteItemFromObjectCaseSensitive(t, "sandbox");
    cJSON_DeleteItemFromObjectCaseSensitive(t, "options");
    lb_download_links_add(cJSON_GetObjectItemCaseSensitive(t, "artifacts"), sh.task_id);
    cJSON *s = cJSON_AddObjectToObject(t, "shared");
    if (s)
        cJSON_AddNumberToObject(s, "expires_ms", (double)sh.expires_ms);
    lb_http_json(r, 200, t, "Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\n");
    cJSON_Delete(t);
}
