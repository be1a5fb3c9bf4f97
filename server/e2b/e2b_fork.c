/* E2B's fork over saved states; the contract is e2b_fork.h. */
#include "e2b/e2b_fork.h"

#include "e2b/e2b_api.h"
#include "e2b/e2b_connect.h"
#include "llmbox/sandbox.h"
#include "sbxapi/handlers_sandbox_pause.h"
#include "sbxapi/handlers_sandboxes.h"
#include "sbxapi/sandbox_owner.h"
#include "sbxapi/sandbox_spec.h"
#include "web/http.h"
#include "web/req_body.h"

#include "common/log.h"
#include "common/netrecord.h"
#include "common/node_id.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define LB_E2B_FORK_BODY_MAX 4096 /* {count, timeout}: a few bytes */

/* The fork request's {count, timeout} into *count and *ttl; 0, or the
 * sentence of the 400 into msg. */
static int fork_request(const cJSON *body, int ttl_max, int *count, int *ttl, char *msg, size_t msgsz)
{
    *count = 1;
    *ttl = LB_E2B_FORK_DEFAULT_TIMEOUT_S < ttl_max ? LB_E2B_FORK_DEFAULT_TIMEOUT_S : ttl_max;
    if (!cJSON_IsObject(body)) {
        snprintf(msg, msgsz, "The fork request must be a JSON object {count, timeout}.");
        return -1;
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(body, "count");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "timeout");
    if (c && !cJSON_IsNull(c)) {
        if (!cJSON_IsNumber(c) || c->valuedouble < 1 || c->valuedouble > LB_E2B_FORK_MAX ||
            c->valuedouble != (int)c->valuedouble) {
            snprintf(msg, msgsz, "count must be a whole number of forks from 1 to %d.", LB_E2B_FORK_MAX);
            return -1;
        }
        *count = (int)c->valuedouble;
    }
    if (t && !cJSON_IsNull(t)) {
        if (!cJSON_IsNumber(t) || t->valuedouble < 1 || t->valuedouble > ttl_max ||
            t->valuedouble != (int)t->valuedouble) {
            snprintf(msg, msgsz, "timeout must be a whole number of seconds from 1 to %d (LLMBOX_SANDBOX_API_TTL_MAX_S).",
                     ttl_max);
            return -1;
        }
        *ttl = (int)t->valuedouble;
    }
    return 0;
}

/* The spec of a fork of s: its echoed spec without what a create does not
 * take again (file contents are in the state), its metadata, and its
 * network as it is now (an updateNetwork changed the gateway's policy, not
 * the echo). NULL on OOM or when its policy cannot be read (msg says). */
static cJSON *fork_spec(lb_req *r, lb_sbx *s, const char *snap_id, int ttl, char *msg, size_t msgsz)
{
    cJSON *spec = cJSON_Duplicate(s->spec, 1);
    if (!spec) {
        snprintf(msg, msgsz, "Out of memory.");
        return NULL;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "files");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "snapshot");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "ttl_s");
    cJSON *res = cJSON_GetObjectItemCaseSensitive(spec, "resources");
    static const char *const nullable[] = {"cpu", "disk_mib", "memory_mib", "pids", NULL};
    for (int i = 0; nullable[i]; i++) /* the echo's null is "the default": left out */
        if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(res, nullable[i])))
            cJSON_DeleteItemFromObjectCaseSensitive(res, nullable[i]);
    int ok = cJSON_AddNumberToObject(spec, "ttl_s", ttl) && cJSON_AddStringToObject(spec, "snapshot", snap_id) &&
             (!s->metadata || cJSON_AddItemToObject(spec, "metadata", cJSON_Duplicate(s->metadata, 1)));
    const char *net = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "network"));
    if (ok && net && !strcmp(net, "rules")) {
        char sid[sizeof s->sbx_id], err[300] = "";
        pthread_mutex_lock(&s->op_mu);
        memcpy(sid, s->sbx_id, sizeof sid);
        pthread_mutex_unlock(&s->op_mu);
        cJSON *rec = NULL;
        if (lb_netrecord_read(r->cfg->var_dir, sid, &rec, err, sizeof err) != LB_OK) {
            snprintf(msg, msgsz, "Cannot read the sandbox's network policy to give it to the forks: %s", err);
            cJSON_Delete(spec);
            return NULL;
        }
        cJSON *pol = cJSON_DetachItemFromObjectCaseSensitive(rec, "network");
        cJSON_Delete(rec);
        ok = cJSON_IsObject(pol) && cJSON_ReplaceItemInObjectCaseSensitive(spec, "network", pol);
        if (!ok) {
            cJSON_Delete(pol);
            snprintf(msg, msgsz, "The sandbox's network policy is not a policy of rules: it cannot be given to the "
                                 "forks.");
            cJSON_Delete(spec);
            return NULL;
        }
    }
    if (!ok) {
        snprintf(msg, msgsz, "Out of memory.");
        cJSON_Delete(spec);
        return NULL;
    }
    return spec;
}

/* One fork's entry: {"error": {code, message}}. */
static cJSON *fork_error(int status, const char *msg)
{
    cJSON *e = cJSON_CreateObject(), *o = e ? cJSON_AddObjectToObject(e, "error") : NULL;
    if (!o || !cJSON_AddNumberToObject(o, "code", status) || !cJSON_AddStringToObject(o, "message", msg)) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

/* One fork started from spec: its entry ({sandbox} or {error}). */
static cJSON *fork_one(lb_req *r, const cJSON *spec, const char *template_id)
{
    char msg[1400] = "";
    lb_sbx_spec sp;
    lb_sbx *f = NULL;
    cJSON *e = NULL;
    int st = lb_sbx_spec_parse(spec, r->cfg, r->user, &sp, msg, sizeof msg);
    if (st) {
        e = fork_error(st == LB_E_TOOBIG ? 413 : st == LB_E_DENIED ? 403 : 400, msg);
        goto out;
    }
    lb_sbx_quota_ticket qt;
    int retry_s = 0;
    st = lb_sbx_owner_quota(r, &sp, &qt, msg, sizeof msg, &retry_s); /* each fork is a create of r's key */
    if (st) {
        e = fork_error(st, msg);
        goto out;
    }
    st = lb_sbx_open(r->cfg, &sp, r->cfg->sandbox_api_ttl_max_s, &f, msg, sizeof msg);
    if (st) {
        lb_sbx_owner_refund(r, &qt);
        e = fork_error(st, msg);
        goto out;
    }
    cJSON *c = lb_e2b_created(r, f, template_id);
    e = c ? cJSON_CreateObject() : NULL;
    if (!e || !cJSON_AddItemToObject(e, "sandbox", c)) {
        cJSON_Delete(c);
        cJSON_Delete(e);
        e = NULL;
        LB_IGNORE(lb_sbx_remove(f->id, LB_SBX_GONE_FAILED)); /* nobody would know its id; already gone is fine */
    }
out:
    lb_sbx_spec_free(&sp);
    lb_sbx_put(f);
    return e;
}

/* Deletes the fork's state (and its owner's note); a failure is logged:
 * the state stays as a snapshot the key can list and delete. */
static void fork_state_drop(lb_req *r, const char *snap_id, const char *state)
{
    char err[512] = "";
    lbsb_conn *c = NULL;
    int rc = lbsb_connect(r->cfg->sandboxd_socket, NULL, &c, err, sizeof err);
    if (rc == LB_OK) {
        rc = lbsb_state_delete(c, state, err, sizeof err);
        lbsb_close(c);
    }
    if (rc && rc != LB_E_NOTFOUND) {
        lb_warn("web: e2b: fork: cannot delete the saved state %s (snapshot %s stays): %s", state, snap_id, err);
        return;
    }
    lb_snapshot_owner_forget(r, snap_id);
}

void lb_e2b_fork(lb_req *r, lb_sbx *s)
{
    char snap_id[LB_NODE_ID_MAX + 1], state[LB_SNAPSHOT_STATE_MAX], err[512] = "", msg[1400] = "";
    int count, ttl;
    cJSON *body = lb_req_json(r, LB_E2B_FORK_BODY_MAX, "fork request");
    cJSON *spec = NULL, *out = NULL;
    if (!body)
        return;
    if (fork_request(body, r->cfg->sandbox_api_ttl_max_s, &count, &ttl, msg, sizeof msg)) {
        lb_e2b_error_json(r, 400, NULL, msg);
        goto out;
    }
    if (lb_node_id_new(r->cfg->node_name, snap_id, sizeof snap_id) != LB_OK) {
        lb_e2b_error_json(r, 500, NULL, "No randomness for the fork's saved state.");
        goto out;
    }
    lb_snapshot_state_name(snap_id, state, sizeof state);
    /* the save first: a failure here is the whole call's (E2B: "a non-201
     * status means the request failed before any fork was attempted") */
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        lb_e2b_error_json(r, 404, NULL, msg);
        goto out;
    }
    uint64_t bytes = 0, files = 0;
    int rc = lbsb_save(s->conn, s->sbx_id, state, 0, &bytes, &files, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        int st = lb_sbx_rpc_fail(s, rc, "save the files to fork", err, msg, sizeof msg);
        lb_e2b_error_json(r, st >= 400 && st < 600 ? st : 500, NULL, msg);
        goto out;
    }
    /* a user's key: the state is theirs, so that their forks' creates may start from it */
    lb_snapshot_owner_save(r, snap_id);
    const char *img = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s->spec, "image"));
    spec = fork_spec(r, s, snap_id, ttl, msg, sizeof msg);
    out = spec ? cJSON_CreateArray() : NULL;
    if (!out) {
        fork_state_drop(r, snap_id, state);
        lb_e2b_error_json(r, 500, NULL, spec ? "Out of memory." : msg);
        goto out;
    }
    /* one after another: each create restores the state into its own
     * writable layer, so every fork has its own copy */
    int started = 0;
    for (int i = 0; i < count; i++) {
        cJSON *e = fork_one(r, spec, img ? img : "base");
        if (!e)
            e = fork_error(500, "Out of memory.");
        if (e && cJSON_GetObjectItemCaseSensitive(e, "sandbox"))
            started++;
        if (e)
            cJSON_AddItemToArray(out, e);
    }
    fork_state_drop(r, snap_id, state); /* every create has restored its copy by now */
    lb_info("web: e2b: forked %s into %d of %d (%llu bytes of files)", s->id, started, count,
            (unsigned long long)bytes);
    lb_http_json(r, 201, out, NULL);
out:
    cJSON_Delete(out);
    cJSON_Delete(spec);
    cJSON_Delete(body);
}
