/* A file's metadata through the native sandbox API (handlers_sandbox_fsmeta.h). */
#include "sbxapi/handlers_sandbox_fsmeta.h"

#include "e2b/e2b_entry.h"
#include "sbxapi/handlers_sandboxes.h"
#include "web/http.h"
#include "sbxapi/sandbox_spec.h"

#include "common/status.h"
#include "common/util.h"
#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_FSMETA_LIST_MAX 10000   /* entries one list answers (then truncated) */
#define LB_FSMETA_DEPTH_MAX 32

static const char *lb_kind_name(const lbsb_entry *e)
{
    static const char *const names[] = {"other", "file", "dir", "symlink", "fifo", "socket", "chardev", "blockdev",
                                        "other"};
    if (!e->has_meta) /* an older sandboxd */
        return e->type == 1 ? "file" : e->type == 2 ? "dir" : "other";
    return e->kind >= 0 && e->kind <= LBSB_KIND_OTHER ? names[e->kind] : "other";
}

/* {path, type, size, mode, uid, gid, mtime, target?} of one entry. */
static cJSON *lb_fsmeta_json(const char *path, const lbsb_entry *e)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "path", path) && cJSON_AddStringToObject(o, "type", lb_kind_name(e)) &&
             cJSON_AddNumberToObject(o, "size", (double)e->size);
    char when[48];
    if (ok && e->has_meta) {
        ok = cJSON_AddNumberToObject(o, "mode", e->mode) && cJSON_AddNumberToObject(o, "uid", e->uid) &&
             cJSON_AddNumberToObject(o, "gid", e->gid);
        if (ok && lb_e2b_rfc3339(e->mtime_s, e->mtime_ns, when, sizeof when) == 0)
            ok = cJSON_AddStringToObject(o, "mtime", when) != NULL;
        if (ok && e->target)
            ok = cJSON_AddStringToObject(o, "target", e->target) != NULL;
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The URL's path, decoded and cleaned (absolute); answers 400 and returns 0. */
static int lb_fsmeta_path(lb_req *r, char *out, size_t outsz)
{
    char dec[LB_SBX_SPATH_MAX * 3 + 1];
    size_t dlen = 0;
    const char *raw = r->rest ? r->rest : "";
    if (lb_url_decode(raw, strlen(raw), dec, sizeof dec, &dlen, 0) == LB_OK &&
        lb_sbx_path(dec, dlen, "/", 0, out, outsz) == LB_OK)
        return 1;
    lb_http_error(r, 400, NULL, "The path is not allowed: it must be an absolute path in the sandbox without \"..\", "
                  "NUL or control characters, backslashes or invalid UTF-8, at most 1024 bytes.");
    return 0;
}

/* Answers a failed sandboxd call. */
static void lb_fsmeta_fail(lb_req *r, lb_sbx *s, int rc, const char *verb, const char *path, const char *err)
{
    char what[LB_SBX_SPATH_MAX + 16], msg[1400];
    snprintf(what, sizeof what, "%s %s", verb, path);
    int st = lb_sbx_rpc_fail(s, rc, what, err, msg, sizeof msg);
    lb_http_error(r, st, st == 404 ? "not_found" : NULL, "%s", msg);
}

/* The URL's path and its sandbox, locked (lb_sbx_unlock, lb_sbx_put); NULL
 * after answering. */
static lb_sbx *lb_fsmeta_begin(lb_req *r, char *path, size_t pathsz)
{
    char gone[400];
    if (!lb_fsmeta_path(r, path, pathsz))
        return NULL;
    lb_sbx *s = lb_sbx_usable(r, r->sandbox);
    if (s && lb_sbx_lock(s, gone, sizeof gone) != LB_OK) {
        lb_http_error(r, 404, "not_found", "%s", gone);
        lb_sbx_put(s);
        s = NULL;
    }
    return s;
}

void lb_h_sbx_stat(lb_req *r)
{
    char path[LB_SBX_SPATH_MAX], err[512] = "";
    lb_http_drain(r);
    lb_sbx *s = lb_fsmeta_begin(r, path, sizeof path);
    if (!s)
        return;
    lbsb_entry e;
    int rc = lbsb_stat_entry(s->conn, s->sbx_id, path, &e, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        lb_fsmeta_fail(r, s, rc, "stat", path, err);
    } else if (!e.type) {
        lb_http_error(r, 404, "not_found", "There is no file or directory %s in the sandbox.", path);
    } else if (e.type == 3 && !e.has_meta) {
        /* sandboxd's answer when a parent is a symlink or not a directory */
        lb_http_error(r, 400, NULL, "%s goes through a symlink or a file: symlinks are not followed.", path);
    } else {
        cJSON *o = lb_fsmeta_json(path, &e);
        if (o)
            lb_http_json(r, 200, o, NULL);
        else
            lb_http_error(r, 500, NULL, "Out of memory.");
        cJSON_Delete(o);
    }
    lbsb_entry_clear(&e);
    lb_sbx_put(s);
}

void lb_h_sbx_list_dir(lb_req *r)
{
    char path[LB_SBX_SPATH_MAX], err[512] = "", d[16];
    long long depth = 1;
    lb_http_drain(r);
    if (lb_query_get(r->query, "depth", d, sizeof d) == LB_OK &&
        lb_parse_ll(d, 1, LB_FSMETA_DEPTH_MAX, &depth) != LB_OK) {
        lb_http_error(r, 400, NULL, "depth must be 1 to %d.", LB_FSMETA_DEPTH_MAX);
        return;
    }
    lb_sbx *s = lb_fsmeta_begin(r, path, sizeof path);
    if (!s)
        return;
    lbsb_entry *ents = NULL;
    size_t n = 0;
    /* one more than answered: to know it was cut */
    int rc = lbsb_list(s->conn, s->sbx_id, path, (int)depth, LB_FSMETA_LIST_MAX + 1, &ents, &n, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        lb_fsmeta_fail(r, s, rc, "list", path, err);
        lb_sbx_put(s);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o && cJSON_AddStringToObject(o, "path", path) ? cJSON_AddArrayToObject(o, "entries") : NULL;
    int ok = arr != NULL;
    for (size_t i = 0; ok && i < n && i < LB_FSMETA_LIST_MAX; i++) {
        cJSON *e = lb_fsmeta_json(ents[i].path, &ents[i]);
        ok = e && cJSON_AddItemToArray(arr, e);
        if (!ok)
            cJSON_Delete(e);
    }
    if (ok && cJSON_AddBoolToObject(o, "truncated", n > LB_FSMETA_LIST_MAX))
        lb_http_json(r, 200, o, NULL);
    else
        lb_http_error(r, 500, NULL, "Out of memory.");
    cJSON_Delete(o);
    lbsb_entries_free(ents, n);
    lb_sbx_put(s);
}
