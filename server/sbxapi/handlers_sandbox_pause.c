/* Pause, resume and snapshots of API sandboxes (handlers_sandbox_pause.h):
 * thin handlers over sandboxd's freeze, thaw, save, state_list and
 * state_delete (include/llmbox/sandbox.h). A call on a sandbox holds its
 * op lock like every other call on it, so a snapshot is never taken while
 * one of its commands runs through the API. */
#include "sbxapi/handlers_sandbox_pause.h"

#include "sbxapi/handlers_sandboxes.h"
#include "web/http.h"
#include "sbxapi/sandbox_owner.h"
#include "sbxapi/sandbox_registry.h"
#include "sbxapi/snapshot_records.h"

#include "common/config.h" /* checksrc: allow unused-include (r->cfg->sandbox_state_max_age_s needs lb_config whole) */
#include "common/log.h"
#include "common/node_id.h"
#include "common/status.h"
#include "common/util.h"
#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void lb_snapshot_state_name(const char *id, char *out, size_t outsz)
{
    /* several nodes: "<node>.<hex>" names its node, whose sandboxd keeps it as
     * api-<hex>; the router and the spec let only valid ids through */
    const char *dot = strchr(id, '.');
    snprintf(out, outsz, LB_SNAPSHOT_PREFIX "%.32s", dot ? dot + 1 : id);
}

int lb_snapshot_restore_error(const char *id, int rc, const char *err, char *msg, size_t msgsz)
{
    if (rc == LB_E_NOTFOUND) {
        snprintf(msg, msgsz, "There is no snapshot %s (deleted, expired by age, or never made).", id);
        return 404;
    }
    if (rc == LB_E_TOOBIG) {
        snprintf(msg, msgsz, "The snapshot %s does not fit this sandbox: %s.", id, err);
        return 413;
    }
    if (!strstr(err, "saved state is damaged")) { /* a snapshot of another image */
        snprintf(msg, msgsz, "The snapshot %s cannot start this sandbox: %s.", id, err);
        return 400;
    }
    snprintf(msg, msgsz, "The snapshot %s cannot be restored: %s.", id, err);
    return 422;
}

/* A sandboxd failure of a call on sandbox s. */
static void lb_pause_rpc_error(lb_req *r, lb_sbx *s, int rc, const char *what, const char *err)
{
    switch (rc) {
    case LB_E_BUSY:
        lb_http_error(r, 409, NULL, "Cannot %s %s: %s.", what, s->id, err);
        break;
    case LB_E_TOOBIG:
        lb_http_error(r, 413, NULL, "Cannot %s %s: %s.", what, s->id, err);
        break;
    case LB_E_CANCELLED:
    case LB_E_NOTFOUND:
        lb_http_error(r, 404, "not_found", "The sandbox %s was deleted or expired while trying to %s it.", s->id,
                      what);
        break;
    default:
        lb_warn("web: sandbox API: %s of %s failed: %s", what, s->id, err[0] ? err : lb_strerror(rc));
        lb_http_error(r, 503, NULL, "Cannot %s %s: %s.", what, s->id, err[0] ? err : lb_strerror(rc));
        break;
    }
}

int lb_sbx_pause_set(lb_sbx *s, int pause, int *same, char *err, size_t errsz)
{
    if (lb_sbx_lock(s, err, errsz) != LB_OK)
        return LB_E_NOTFOUND;
    int rc = LB_OK;
    /* paused changes only under the op lock: read here, it is current */
    if (same && (*same = s->paused == pause)) {
        lb_sbx_unlock(s);
        return LB_OK;
    }
    rc = pause ? lbsb_freeze(s->conn, s->sbx_id, err, errsz) : lbsb_thaw(s->conn, s->sbx_id, err, errsz);
    if (!rc)
        lb_sbx_set_paused(s, pause);
    lb_sbx_unlock(s);
    if (rc == LB_E_NOTFOUND || rc == LB_E_CANCELLED) {
        snprintf(err, errsz, "The sandbox %s was deleted or expired while trying to %s it.", s->id,
                 pause ? "pause" : "resume");
        rc = LB_E_NOTFOUND;
    }
    return rc;
}

int lb_sbx_pause_drop(lb_sbx *s, int *same, char *err, size_t errsz)
{
    if (lb_sbx_lock(s, err, errsz) != LB_OK)
        return LB_E_NOTFOUND;
    if (same && (*same = s->paused)) {
        lb_sbx_unlock(s);
        return LB_OK;
    }
    /* kill(-1) from the shell's own builtin: every process of the sandbox's
     * pid namespace but init and the caller (the shell), E2B's spawner
     * included (sandboxd makes a new one at the next start). Then wait
     * (at most ~2 s, builtins but sleep) until none is left but zombies:
     * a process the freeze below caught before it took its SIGKILL would
     * die only at the resume, and its spawner's end would then fail the
     * first start made after the resume. */
    static const char kill_all[] =
        "kill -KILL -1 2>/dev/null; i=0; while [ $i -lt 200 ]; do n=0; for p in /proc/[0-9]*; do "
        "p=${p#/proc/}; case $p in 1|$$) ;; *) read -r st 2>/dev/null </proc/$p/stat && "
        "case ${st##*) } in Z*|X*) ;; *) n=1 ;; esac ;; esac; done; [ $n = 0 ] && break; "
        "sleep 0.01; i=$((i+1)); done; true";
    lbsb_exec_out eo;
    memset(&eo, 0, sizeof eo);
    int rc = lbsb_exec(s->conn, s->sbx_id, kill_all, 30000, &eo, err, errsz);
    lbsb_exec_out_free(&eo);
    if (!rc)
        rc = lbsb_freeze_reboot(s->conn, s->sbx_id, err, errsz);
    if (!rc)
        lb_sbx_set_paused(s, 1);
    lb_sbx_unlock(s);
    if (rc == LB_E_NOTFOUND || rc == LB_E_CANCELLED) {
        snprintf(err, errsz, "The sandbox %s was deleted or expired while trying to pause it.", s->id);
        rc = LB_E_NOTFOUND;
    } else if (rc == LB_E_BUSY) {
        snprintf(err, errsz, "a command of the native sandbox API runs in its shell; try again when it has ended");
    }
    return rc;
}

/* pause and resume: {id, paused} */
static void lb_pause_set(lb_req *r, int pause)
{
    lb_http_drain(r);
    lb_sbx *s = lb_sbx_usable(r, r->sandbox);
    if (!s)
        return;
    char err[512] = "";
    int rc = lb_sbx_pause_set(s, pause, NULL, err, sizeof err);
    if (rc == LB_E_NOTFOUND) {
        lb_http_error(r, 404, "not_found", "%s", err);
    } else if (rc) {
        lb_pause_rpc_error(r, s, rc, pause ? "pause" : "resume", err);
    } else {
        cJSON *o = cJSON_CreateObject();
        if (o) {
            cJSON_AddStringToObject(o, "id", s->id);
            cJSON_AddBoolToObject(o, "paused", pause);
        }
        lb_info("web: sandbox API: %s %s", pause ? "paused" : "resumed", s->id);
        lb_http_json(r, 200, o, NULL);
        cJSON_Delete(o);
    }
    lb_sbx_put(s);
}

void lb_h_sbx_pause(lb_req *r)
{
    lb_pause_set(r, 1);
}

void lb_h_sbx_resume(lb_req *r)
{
    lb_pause_set(r, 0);
}

void lb_h_sbx_snapshot(lb_req *r)
{
    lb_http_drain(r);
    lb_sbx *s = lb_sbx_usable(r, r->sandbox);
    if (!s)
        return;
    char id[LB_NODE_ID_MAX + 1], state[LB_SNAPSHOT_STATE_MAX], err[512] = "", gone[400];
    if (lb_node_id_new(r->cfg->node_name, id, sizeof id) != LB_OK) { /* several nodes: named by its node */
        lb_http_error(r, 500, NULL, "No randomness for a snapshot id.");
        lb_sbx_put(s);
        return;
    }
    lb_snapshot_state_name(id, state, sizeof state);
    if (lb_sbx_lock(s, gone, sizeof gone) != LB_OK) {
        lb_http_error(r, 404, "not_found", "%s", gone);
        lb_sbx_put(s);
        return;
    }
    uint64_t bytes = 0, files = 0;
    int rc = lbsb_save(s->conn, s->sbx_id, state, 0, &bytes, &files, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        lb_pause_rpc_error(r, s, rc, "snapshot", err);
        lb_sbx_put(s);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "snapshot_id", id);
        cJSON_AddStringToObject(o, "sandbox", s->id);
        cJSON_AddNumberToObject(o, "bytes", (double)bytes);
        cJSON_AddNumberToObject(o, "files", (double)files);
    }
    lb_info("web: sandbox API: snapshot %s of %s (%llu bytes)", id, s->id, (unsigned long long)bytes);
    lb_snapshot_owner_save(r, id);
    char loc[160];
    snprintf(loc, sizeof loc, "Location: /api/snapshots/%s\r\n", id);
    lb_http_json(r, 201, o, loc);
    cJSON_Delete(o);
    lb_sbx_put(s);
}

/* A connection of its own for the calls that concern no sandbox. */
static lbsb_conn *lb_snapshot_conn(lb_req *r)
{
    lbsb_conn *c = NULL;
    char err[512] = "";
    if (lbsb_connect(r->cfg->sandboxd_socket, NULL, &c, err, sizeof err) != LB_OK) {
        lb_http_error(r, 503, NULL, "The sandbox daemon cannot be reached: %s.", err);
        return NULL;
    }
    return c;
}

void lb_h_snapshots_list(lb_req *r)
{
    lb_http_drain(r);
    lbsb_conn *c = lb_snapshot_conn(r);
    if (!c)
        return;
    lbsb_state *st = NULL;
    size_t n = 0;
    char err[512] = "";
    time_t asked = time(NULL);
    int rc = lbsb_state_list(c, &st, &n, err, sizeof err);
    lbsb_close(c);
    if (rc) {
        lb_http_error(r, 503, NULL, "The sandbox daemon could not list the snapshots: %s.", err);
        return;
    }
    lb_snapshot_records_drop_unlisted(r->cfg, st, n, asked); /* of snapshots that expired by age */
    cJSON *o = cJSON_CreateObject(), *arr = o ? cJSON_AddArrayToObject(o, "snapshots") : NULL;
    int count = 0;
    size_t pl = strlen(LB_SNAPSHOT_PREFIX);
    for (size_t i = 0; arr && i < n; i++) {
        /* only the API's: other states of the web's uid are not snapshots */
        if (strncmp(st[i].name, LB_SNAPSHOT_PREFIX, pl) || !lb_id_valid(st[i].name + pl))
            continue;
        char own[LB_NODE_ID_MAX + 1];
        snprintf(own, sizeof own, "%s%s%s", r->cfg->node_name, r->cfg->node_name[0] ? "." : "", st[i].name + pl);
        if (!lb_snapshot_owner_sees(r, own))
            continue; /* another user's: as if absent */
        cJSON *e = cJSON_CreateObject();
        if (!e)
            break;
        char when[40] = "";
        time_t t = (time_t)st[i].mtime;
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        char sid[LB_NODE_ID_MAX + 1]; /* several nodes: named by this node, as when it was made */
        snprintf(sid, sizeof sid, "%s%s%s", r->cfg->node_name, r->cfg->node_name[0] ? "." : "", st[i].name + pl);
        cJSON_AddStringToObject(e, "snapshot_id", sid);
        cJSON_AddNumberToObject(e, "bytes", (double)st[i].bytes);
        cJSON_AddStringToObject(e, "created_at", when);
        cJSON_AddItemToArray(arr, e);
        count++;
    }
    free(st);
    if (!arr) {
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    cJSON_AddNumberToObject(o, "count", count);
    cJSON_AddNumberToObject(o, "max_age_s", r->cfg->sandbox_state_max_age_s);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

void lb_h_snapshot_delete(lb_req *r)
{
    lb_http_drain(r);
    lbsb_conn *c = lb_snapshot_conn(r);
    if (!c)
        return;
    char state[LB_SNAPSHOT_STATE_MAX], err[512] = "";
    lb_snapshot_state_name(r->sandbox, state, sizeof state);
    int rc = lbsb_state_delete(c, state, err, sizeof err);
    lbsb_close(c);
    if (rc == LB_E_NOTFOUND) {
        lb_http_error(r, 404, "not_found", "There is no snapshot %s.", r->sandbox);
        return;
    }
    if (rc) {
        lb_http_error(r, 503, NULL, "The sandbox daemon could not delete the snapshot: %s.", err);
        return;
    }
    lb_info("web: sandbox API: deleted snapshot %s", r->sandbox);
    lb_snapshot_owner_forget(r, r->sandbox);
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "snapshot_id", r->sandbox);
        cJSON_AddBoolToObject(o, "deleted", 1);
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}
