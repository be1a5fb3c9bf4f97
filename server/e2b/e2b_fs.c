/* filesystem.Filesystem and /files for E2B's SDK (e2b_fs.h). */
#include "e2b/e2b_fs.h"

#include "e2b/e2b_connect.h"
#include "e2b/e2b_entry.h"
#include "e2b/e2b_envd.h"
#include "e2b/e2b_gzip.h"
#include "e2b/e2b_watch.h"
#include "sbxapi/handlers_sandboxes.h"
#include "web/http.h"
#include "web/multipart.h"
#include "web/req_body.h"
#include "sbxapi/sandbox_spec.h"

#include "common/buf.h"
#include "common/status.h"
#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <fcgiapp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LB_E2B_LIST_MAX 10000        /* entries one ListDir answers */
#define LB_E2B_FS_CMD_MS 60000       /* mkdir -p, mv, rm -rf */
#define LB_E2B_UPLOAD_FILES 1000     /* files in one multipart upload */

#define LB_E2B_IDDB_MAX (256u << 10) /* /etc/passwd or /etc/group read for owners' names */

void lb_e2b_home(lb_sbx *s, char *out, size_t outsz)
{
    /* E2B's base template works in its user's home; an image without that
     * user keeps the sandbox's workdir. Never followed through a symlink
     * (sandboxd's stat): the sandbox's code may put one there. */
    char err[256], msg[512];
    lbsb_entry e;
    memset(&e, 0, sizeof e);
    int dir = s->e2b_home;
    /* looked at once per sandbox: a command's round trip does not pay a
     * stat (a home removed later makes the start fail, as on E2B) */
    if (!dir && lb_sbx_lock(s, msg, sizeof msg) == LB_OK) {
        int rc = lbsb_stat_entry(s->conn, s->sbx_id, LB_E2B_HOME, &e, err, sizeof err);
        lb_sbx_unlock(s);
        dir = rc != LB_OK ? 0 : e.type == 2 ? 1 : -1; /* a failed call is asked again next time */
        lbsb_entry_clear(&e);
        if (dir)
            s->e2b_home = dir;
    }
    snprintf(out, outsz, "%s", dir > 0 ? LB_E2B_HOME : s->workdir);
}

/* Another user of the sandbox this thread's request names (not root, not
 * E2B's user), and its home: set by lb_e2b_user_known, which the dispatch
 * calls first for every envd call, so a request never sees another's. */
static _Thread_local char lb_e2b_other[33], lb_e2b_other_home[LB_PATH_MAX + 2];

int lb_e2b_user_known(lb_req *r, lb_sbx *s, const char *name)
{
    lb_e2b_other[0] = lb_e2b_other_home[0] = '\0';
    (void)r;
    if (!name[0] || !strcmp(name, "root") || !strcmp(name, "user"))
        return 1; /* root always is; a sandbox without `user` says so at the call (sandboxd) */
    lb_e2b_iddb db;
    lb_e2b_iddb_load(s, &db);
    int found = lb_e2b_user_home(db.passwd, db.passwd_len, name, lb_e2b_other_home, sizeof lb_e2b_other_home);
    lb_e2b_iddb_free(&db);
    if (found)
        snprintf(lb_e2b_other, sizeof lb_e2b_other, "%s", name);
    return found;
}

const char *lb_e2b_user_home_of(const char *user)
{
    return user && lb_e2b_other[0] && !strcmp(user, lb_e2b_other) ? lb_e2b_other_home : NULL;
}

const char *lb_e2b_run_as(lb_req *r, lb_sbx *s)
{
    char name[80], home[LB_PATH_MAX + 2];
    lb_e2b_call_user(r, name, sizeof name); /* checked by the dispatch (e2b_envd.c) */
    if (!strcmp(name, "root"))
        return "root";
    if (!strcmp(name, "user"))
        return "user";
    if (name[0] && !strcmp(name, lb_e2b_other))
        return lb_e2b_other; /* looked up by lb_e2b_user_known */
    lb_e2b_home(s, home, sizeof home);
    return s->e2b_home > 0 ? "user" : NULL;
}

void lb_e2b_call_home(lb_req *r, lb_sbx *s, char *out, size_t outsz)
{
    const char *as = lb_e2b_run_as(r, s);
    const char *other = lb_e2b_user_home_of(as);
    if (as && !strcmp(as, "root"))
        snprintf(out, outsz, "/root"); /* envd: the call's user's home */
    else if (other)
        snprintf(out, outsz, "%s", other); /* another user of the sandbox: its own */
    else
        lb_e2b_home(s, out, outsz);
}

/* A client's path, relative ones from the call's user's home, as envd
 * resolves them (lb_e2b_call_home): "/"+cleaned in out. */
static int lb_e2b_path(lb_req *r, lb_sbx *s, const char *in, char *out, size_t outsz)
{
    char home[LB_PATH_MAX + 2];
    if (in[0] == '/')
        snprintf(home, sizeof home, "/");
    else
        lb_e2b_call_home(r, s, home, sizeof home);
    return lb_sbx_path(in, strlen(in), home, 1, out, outsz);
}

void lb_e2b_iddb_load(lb_sbx *s, lb_e2b_iddb *db)
{
    char err[256], msg[512];
    char *pw = NULL, *gr = NULL;
    size_t pn = 0, gn = 0;
    memset(db, 0, sizeof *db);
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK)
        return;
    if (lbsb_read(s->conn, s->sbx_id, "/etc/passwd", LB_E2B_IDDB_MAX, &pw, &pn, err, sizeof err) != LB_OK) {
        free(pw);
        pw = NULL;
        pn = 0;
    }
    if (lbsb_read(s->conn, s->sbx_id, "/etc/group", LB_E2B_IDDB_MAX, &gr, &gn, err, sizeof err) != LB_OK) {
        free(gr);
        gr = NULL;
        gn = 0;
    }
    lb_sbx_unlock(s);
    db->passwd = pw;
    db->passwd_len = pn;
    db->group = gr;
    db->group_len = gn;
}

void lb_e2b_iddb_free(lb_e2b_iddb *db)
{
    free((char *)db->passwd);
    free((char *)db->group);
    memset(db, 0, sizeof *db);
}

/* The Connect code of a failed sandboxd call, with the sentence in msg. */
static const char *lb_e2b_fs_code(lb_sbx *s, int rc, const char *what, const char *err, char *msg, size_t msgsz)
{
    if (rc == LB_E_BUSY) {
        snprintf(msg, msgsz, "Cannot %s while a command of the native sandbox API (/api/sandboxes/{id}/exec) runs "
                 "in the sandbox's shell; try again when it has ended.", what);
        return "failed_precondition";
    }
    int st = lb_sbx_rpc_fail(s, rc, what, err, msg, msgsz);
    switch (st) {
    case 400: return "invalid_argument";
    case 403: return "permission_denied";
    case 404: return "not_found";
    case 409: return "already_exists";
    case 413: return "resource_exhausted";
    case 503: return "unavailable";
    default: return "internal";
    }
}

/* Answers a failed sandboxd call that tried to `verb path`. */
static void lb_e2b_fs_fail(lb_req *r, lb_sbx *s, int rc, const char *verb, const char *path, const char *err)
{
    char what[LB_SBX_SPATH_MAX + 16], msg[1400];
    snprintf(what, sizeof what, "%s %s", verb, path);
    const char *code = lb_e2b_fs_code(s, rc, what, err, msg, sizeof msg);
    lb_e2b_unary_error(r, code, "%s", msg);
}

/* Runs a short file command in the sandbox under its lock: 0, or answers. */
static int lb_e2b_fs_run(lb_req *r, lb_sbx *s, const char *what, lb_buf *line)
{
    char err[512] = "", msg[1400];
    lbsb_exec_out eo;
    memset(&eo, 0, sizeof eo);
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        lb_e2b_unary_error(r, "unavailable", "%s", msg);
        return -1;
    }
    int rc = lbsb_exec(s->conn, s->sbx_id, line->data, LB_E2B_FS_CMD_MS, &eo, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        const char *code = lb_e2b_fs_code(s, rc, what, err, msg, sizeof msg);
        lb_e2b_unary_error(r, code, "%s", msg);
        return -1;
    }
    int bad = eo.state != LLMBOX_EXEC_EXITED || eo.exit_code != 0;
    if (bad) {
        size_t n = eo.err_len;
        while (n && (eo.err[n - 1] == '\n' || eo.err[n - 1] == '\r'))
            n--;
        lb_e2b_unary_error(r, "invalid_argument", "Cannot %s: %.*s", what, (int)(n > 400 ? 400 : n),
                           n ? eo.err : "the command failed");
    }
    lbsb_exec_out_free(&eo);
    return bad ? -1 : 0;
}

/* stat of an absolute path under the lock: LB_OK with e->type (0 missing)
 * and its metadata; lbsb_entry_clear(e) after. */
static int lb_e2b_stat(lb_req *r, lb_sbx *s, const char *path, lbsb_entry *e)
{
    char err[512] = "", msg[1400];
    memset(e, 0, sizeof *e);
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        lb_e2b_unary_error(r, "unavailable", "%s", msg);
        return -1;
    }
    /* as root, whoever the call's user, links among the folders followed
     * inside the sandbox's root: envd stats so too */
    int rc = lbsb_stat_envd(s->conn, s->sbx_id, path, e, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        lb_e2b_fs_fail(r, s, rc, "stat", path, err);
        return -1;
    }
    return 0;
}

/* The request's string field name as a sandbox path; answers on failure. */
static int lb_e2b_req_path(lb_req *r, lb_sbx *s, const cJSON *req, const char *name, char *out, size_t outsz)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(req, name);
    if (!cJSON_IsString(p) || lb_e2b_path(r, s, p->valuestring, out, outsz) != LB_OK) {
        lb_e2b_unary_error(r, "invalid_argument",
                           "%s must be a path in the sandbox without \"..\", NUL or control characters, at most "
                           "1024 bytes", name);
        return -1;
    }
    return 0;
}

static void lb_answer_entry(lb_req *r, lb_sbx *s, const char *path, const lbsb_entry *ent)
{
    lb_e2b_iddb db;
    lb_e2b_iddb_load(s, &db);
    cJSON *o = cJSON_CreateObject();
    cJSON *e = lb_e2b_entry_db(path, ent, &db);
    lb_e2b_iddb_free(&db);
    if (!o || !e || !cJSON_AddItemToObject(o, "entry", e)) {
        cJSON_Delete(e);
        cJSON_Delete(o);
        lb_e2b_unary_error(r, "internal", "Out of memory.");
        return;
    }
    lb_e2b_unary(r, o);
    cJSON_Delete(o);
}

static void lb_fs_stat(lb_req *r, lb_sbx *s, const cJSON *req)
{
    char path[LB_SBX_SPATH_MAX];
    lbsb_entry e;
    if (lb_e2b_req_path(r, s, req, "path", path, sizeof path) || lb_e2b_stat(r, s, path, &e))
        return;
    if (!e.type)
        lb_e2b_unary_error(r, "not_found", "There is no file or directory %s.", path);
    else
        lb_answer_entry(r, s, path, &e);
    lbsb_entry_clear(&e);
}

static void lb_fs_list(lb_req *r, lb_sbx *s, const cJSON *req)
{
    char path[LB_SBX_SPATH_MAX], err[512] = "", msg[1400];
    if (lb_e2b_req_path(r, s, req, "path", path, sizeof path))
        return;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(req, "depth");
    int depth = cJSON_IsNumber(d) ? (int)d->valuedouble : 1;
    if (depth < 1 || depth > 32) {
        lb_e2b_unary_error(r, "invalid_argument", "depth must be 1 to 32");
        return;
    }
    lbsb_entry *ents = NULL;
    size_t n = 0;
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        lb_e2b_unary_error(r, "unavailable", "%s", msg);
        return;
    }
    /* as root, whoever the call's user, through links inside the sandbox's root: as envd */
    int rc = lbsb_list_envd(s->conn, s->sbx_id, path, depth, LB_E2B_LIST_MAX, &ents, &n, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        lb_e2b_fs_fail(r, s, rc, "list", path, err);
        return;
    }
    lb_e2b_iddb db;
    lb_e2b_iddb_load(s, &db);
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "entries") : NULL;
    int ok = arr != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        char full[2 * LB_SBX_SPATH_MAX];
        snprintf(full, sizeof full, "%s%s%s", path, strcmp(path, "/") ? "/" : "", ents[i].path);
        cJSON *e = lb_e2b_entry_db(full, &ents[i], &db);
        ok = e && cJSON_AddItemToArray(arr, e);
        if (!ok)
            cJSON_Delete(e);
    }
    lbsb_entries_free(ents, n);
    lb_e2b_iddb_free(&db);
    if (ok)
        lb_e2b_unary(r, o);
    else
        lb_e2b_unary_error(r, "internal", "Out of memory.");
    cJSON_Delete(o);
}

/* mkdir -p, mv, rm -rf: "CMD -- 'a' ['b']" */
static int lb_fs_line(lb_buf *line, const char *cmd, const char *a, const char *b)
{
    int rc = lb_buf_appends(line, cmd);
    if (!rc)
        rc = lb_sh_quote(line, a);
    if (!rc && b)
        rc = lb_buf_appends(line, " ");
    if (!rc && b)
        rc = lb_sh_quote(line, b);
    return rc;
}

static void lb_fs_change(lb_req *r, lb_sbx *s, const cJSON *req, const char *method)
{
    char path[LB_SBX_SPATH_MAX], dest[LB_SBX_SPATH_MAX], what[2 * LB_SBX_SPATH_MAX + 32];
    int mv = !strcmp(method, "Move"), rm = !strcmp(method, "Remove");
    lbsb_entry ent;
    if (lb_e2b_req_path(r, s, req, mv ? "source" : "path", path, sizeof path))
        return;
    if (mv && lb_e2b_req_path(r, s, req, "destination", dest, sizeof dest))
        return;
    if (!strcmp(path, "/") || (mv && !strcmp(dest, "/"))) {
        lb_e2b_unary_error(r, "invalid_argument", "not on the sandbox's root directory");
        return;
    }
    if (lb_e2b_stat(r, s, path, &ent))
        return;
    int type = ent.type;
    lbsb_entry_clear(&ent);
    if (!mv && !rm && type) {
        if (type == 2)
            lb_e2b_unary_error(r, "already_exists", "The directory %s exists.", path);
        else
            lb_e2b_unary_error(r, "invalid_argument", "%s exists and is not a directory.", path);
        return;
    }
    if (rm && !type) { /* envd's os.RemoveAll: nothing there is already what was asked */
        cJSON *o = cJSON_CreateObject();
        lb_e2b_unary(r, o);
        cJSON_Delete(o);
        return;
    }
    if (mv && !type) {
        lb_e2b_unary_error(r, "not_found", "There is no file or directory %s.", path);
        return;
    }
    /* sandboxd makes the change as the sandbox's root and what mkdir makes
     * is the call's user's (lb_e2b_run_as), as envd, which runs as root */
    const char *as = lb_e2b_run_as(r, s);
    const char *user = as && strcmp(as, "root") ? as : NULL;
    char err[512] = "", msg[1400];
    snprintf(what, sizeof what, "%s %s%s%s", mv ? "move" : rm ? "remove" : "make the directory", path,
             mv ? " to " : "", mv ? dest : "");
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        lb_e2b_unary_error(r, "unavailable", "%s", msg);
        return;
    }
    int rc = lbsb_fs_change_owned(s->conn, s->sbx_id, mv ? "rename" : rm ? "remove" : "mkdir", path,
                                  mv ? dest : NULL, user, err, sizeof err);
    lb_sbx_unlock(s);
    if ((rc == LB_E_INVAL || rc == LB_E_TOOBIG) && (!user || mv || rm)) {
        /* what sandboxd does not do in place (a rename across filesystems
         * or of an image's directory, a folder on another filesystem, a
         * huge remove; symlinked folders it follows inside the sandbox's
         * root): it runs in the sandbox's shell as root, which sees the
         * sandbox's own tree. A user's mkdir is answered instead: the
         * shell would make root's folders where the user's are due. */
        lb_buf line;
        lb_buf_init(&line, 4 * LB_SBX_SPATH_MAX + 128);
        rc = mv ? lb_fs_line(&line, "mv -T -- ", path, dest)
                : lb_fs_line(&line, rm ? "rm -rf -- " : "mkdir -p -- ", path, NULL);
        if (rc)
            lb_e2b_unary_error(r, "internal", "Out of memory.");
        rc = rc ? -1 : lb_e2b_fs_run(r, s, what, &line);
        lb_buf_free(&line);
        if (rc)
            return;
    } else if (rc) {
        const char *code = lb_e2b_fs_code(s, rc, what, err, msg, sizeof msg);
        lb_e2b_unary_error(r, code, "%s", msg);
        return;
    }
    if (rm) {
        cJSON *o = cJSON_CreateObject();
        lb_e2b_unary(r, o);
        cJSON_Delete(o);
    } else if (lb_e2b_stat(r, s, mv ? dest : path, &ent) == 0) {
        /* the entry as it is now (its metadata, after the move) */
        if (!ent.type)
            lb_e2b_unary_error(r, "not_found", "%s was removed meanwhile.", mv ? dest : path);
        else
            lb_answer_entry(r, s, mv ? dest : path, &ent);
        lbsb_entry_clear(&ent);
    }
}

void lb_e2b_filesystem(lb_req *r, lb_sbx *s, const char *method)
{
    if (strcmp(r->method, "POST")) {
        lb_http_drain(r);
        lb_http_method_not_allowed(r, "POST");
        return;
    }
    if (!strcmp(method, "WatchDir")) {
        lb_e2b_watchdir(r, s);
        return;
    }
    if (!strcmp(method, "CreateWatcher") || !strcmp(method, "GetWatcherEvents") || !strcmp(method, "RemoveWatcher")) {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "unimplemented", "The polling watchers are not supported by llmbox: use the "
                           "filesystem.Filesystem/WatchDir stream (the JS SDK's files.watchDir), docs/E2B.md.");
        return;
    }
    int known = !strcmp(method, "Stat") || !strcmp(method, "ListDir") || !strcmp(method, "MakeDir") ||
                !strcmp(method, "Move") || !strcmp(method, "Remove");
    if (!known) {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "unimplemented", "filesystem.Filesystem/%.64s is not supported by llmbox (docs/E2B.md).",
                           method);
        return;
    }
    cJSON *req = lb_e2b_request(r, 0);
    if (!req)
        return;
    if (!strcmp(method, "Stat"))
        lb_fs_stat(r, s, req);
    else if (!strcmp(method, "ListDir"))
        lb_fs_list(r, s, req);
    else
        lb_fs_change(r, s, req, method);
    cJSON_Delete(req);
}

/* ---- /files ---- */

/* The path query parameter, cleaned; "" when absent. Answers on failure. */
static int lb_files_query_path(lb_req *r, lb_sbx *s, char *out, size_t outsz)
{
    char raw[LB_SBX_SPATH_MAX * 3];
    out[0] = '\0';
    int rc = lb_query_get(r->query, "path", raw, sizeof raw);
    if (rc == LB_E_NOTFOUND)
        return 0;
    if (rc || lb_e2b_path(r, s, raw, out, outsz) != LB_OK) {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "invalid_argument", "The path parameter is not a usable path in the sandbox.");
        return -1;
    }
    return 0;
}

static void lb_files_get(lb_req *r, lb_sbx *s, const char *path)
{
    char err[512] = "", msg[1400], what[LB_SBX_SPATH_MAX + 16];
    char *data = NULL;
    size_t len = 0;
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        lb_e2b_unary_error(r, "unavailable", "%s", msg);
        return;
    }
    /* as root, whoever the call's user, through linked folders inside the sandbox's root: as envd */
    int rc = lbsb_read_envd(s->conn, s->sbx_id, path, LB_SBX_FILE_MAX, &data, &len, err, sizeof err);
    lb_sbx_unlock(s);
    snprintf(what, sizeof what, "read %s", path);
    if (rc) {
        int st = rc == LB_E_ISDIR ? 400 : lb_sbx_rpc_fail(s, rc, what, err, msg, sizeof msg);
        if (rc == LB_E_ISDIR)
            snprintf(msg, sizeof msg, "%s is a directory", path);
        lb_e2b_error_json(r, st, NULL, msg);
        return;
    }
    /* Accept-Encoding: gzip packs it, as envd does (Vary says so to caches) */
    lb_buf gz;
    lb_buf_init(&gz, len + len / 1000 + 4096);
    int packed = lb_e2b_accepts_gzip(lb_http_param(r, "HTTP_ACCEPT_ENCODING")) &&
                 lb_e2b_gzip(data ? data : "", len, &gz) == LB_OK;
    char extra[200];
    snprintf(extra, sizeof extra, "Content-Length: %zu\r\nContent-Security-Policy: sandbox\r\nVary: Accept-Encoding\r\n%s",
             packed ? gz.len : len, packed ? "Content-Encoding: gzip\r\n" : "");
    lb_http_head(r, 200, "application/octet-stream", extra);
    if (!r->is_head && packed && gz.len)
        FCGX_PutStr(gz.data, (int)gz.len, r->fcgi->out);
    else if (!r->is_head && !packed && len)
        FCGX_PutStr(data, (int)len, r->fcgi->out);
    lb_buf_free(&gz);
    free(data);
}

typedef struct lb_upload {
    lb_req *r;
    lb_sbx *s;
    const char *qpath;             /* the ?path= of a single-file upload, "" if none */
    const char *as;                /* who owns what it writes (lb_e2b_run_as; NULL: root) */
    const char *meta[2 * LBSB_META_KEYS]; /* E2B's file metadata: key, value pairs (lb_upload_meta) */
    char meta_keys[LBSB_META_KEYS][LBSB_META_KEY_MAX + 1];
    int nmeta;
    lb_buf data;                   /* the part being received */
    cJSON *out;                    /* [{name, type, path}] */
    int st;                        /* HTTP status of a failure, 0 */
    char msg[1400];
} lb_upload;

/* The request's X-Metadata-* headers into up->meta: 0, or -1 with up->msg. */
static int lb_upload_meta(lb_req *r, lb_upload *up)
{
    for (char **ev = r->fcgi ? r->fcgi->envp : NULL; ev && *ev; ev++) {
        if (strncmp(*ev, "HTTP_X_METADATA_", 16))
            continue;
        const char *k = *ev + 16, *eq = strchr(k, '=');
        size_t kl = eq ? (size_t)(eq - k) : 0;
        if (up->nmeta >= LBSB_META_KEYS || kl < 1 || kl > LBSB_META_KEY_MAX) {
            snprintf(up->msg, sizeof up->msg, "File metadata: at most %d keys of 1 to %d characters.",
                     LBSB_META_KEYS, LBSB_META_KEY_MAX);
            return -1;
        }
        char *key = up->meta_keys[up->nmeta];
        for (size_t i = 0; i < kl; i++)
            key[i] = k[i] == '_' ? '-' : (char)((k[i] >= 'A' && k[i] <= 'Z') ? k[i] - 'A' + 'a' : k[i]);
        key[kl] = '\0';
        const char *v = eq + 1;
        size_t vl = strlen(v);
        int ok = vl <= LBSB_META_VALUE_MAX;
        for (size_t i = 0; ok && i < vl; i++)
            ok = v[i] >= 0x20 && v[i] <= 0x7e;
        if (!ok) {
            snprintf(up->msg, sizeof up->msg, "File metadata: the value of \"%s\" must be printable ASCII of at most "
                     "%d bytes.", key, LBSB_META_VALUE_MAX);
            return -1;
        }
        up->meta[2 * up->nmeta] = key;
        up->meta[2 * up->nmeta + 1] = v;
        up->nmeta++;
    }
    return 0;
}

/* Writes one file; 0, or sets up->st and msg. */
static int lb_upload_write(lb_upload *up, const char *path, const char *data, size_t len)
{
    char err[512] = "", what[LB_SBX_SPATH_MAX + 16];
    if (lb_sbx_lock(up->s, up->msg, sizeof up->msg) != LB_OK) {
        up->st = 502;
        return -1;
    }
    int rc = lbsb_write_owned(up->s->conn, up->s->sbx_id, path, data ? data : "", len, 0, up->as, up->meta,
                             up->nmeta, err, sizeof err);
    lb_sbx_unlock(up->s);
    if (rc) {
        snprintf(what, sizeof what, "write %s", path);
        up->st = lb_sbx_rpc_fail(up->s, rc, what, err, up->msg, sizeof up->msg);
        if (rc == LB_E_TOOBIG)
            up->st = 507; /* the SDK's NotEnoughSpaceError: the sandbox's disk quota */
        return -1;
    }
    cJSON *e = cJSON_CreateObject();
    const char *slash = strrchr(path, '/');
    if (!e || !cJSON_AddItemToArray(up->out, e) || !cJSON_AddStringToObject(e, "name", slash ? slash + 1 : path) ||
        !cJSON_AddStringToObject(e, "type", "file") || !cJSON_AddStringToObject(e, "path", path)) {
        up->st = 500;
        snprintf(up->msg, sizeof up->msg, "Out of memory.");
        return -1;
    }
    cJSON *m = up->nmeta ? cJSON_AddObjectToObject(e, "metadata") : NULL;
    for (int i = 0; m && i < up->nmeta; i++)
        cJSON_AddStringToObject(m, up->meta[2 * i], up->meta[2 * i + 1]);
    return 0;
}

static int lb_up_begin(void *arg, const lb_mp_part *p)
{
    lb_upload *up = arg;
    lb_buf_reset(&up->data);
    return 0;
}

/* Whether a part is a file to write: one with a file name, or envd's
 * field "file" without one (FormData.append('file', 'text') sends no file
 * name; envd takes the part by its field name and the path from ?path=). */
static int lb_up_is_file(const lb_upload *up, const lb_mp_part *p)
{
    return p->is_file || (!strcmp(p->name, "file") && up->qpath[0]);
}

static int lb_up_data(void *arg, const lb_mp_part *p, const char *d, size_t n)
{
    lb_upload *up = arg;
    return lb_up_is_file(up, p) && lb_buf_append(&up->data, d, n) != LB_OK ? LB_E_TOOBIG : 0;
}

static int lb_up_end(void *arg, const lb_mp_part *p)
{
    lb_upload *up = arg;
    if (!lb_up_is_file(up, p))
        return 0;
    char path[LB_SBX_SPATH_MAX];
    /* the part's file name is the path when several files go at once
     * (multipart.c took its leading '/' off: p->absolute says it had one) */
    if (!up->qpath[0] || cJSON_GetArraySize(up->out) > 0) {
        char name[LB_SBX_SPATH_MAX + 1];
        snprintf(name, sizeof name, "%s%s", p->absolute ? "/" : "", p->filename);
        if (!p->filename[0] || lb_e2b_path(up->r, up->s, name, path, sizeof path) != LB_OK) {
            up->st = 400;
            snprintf(up->msg, sizeof up->msg, "A part of the upload has no usable file name (its path).");
            return LB_E_INVAL;
        }
    } else {
        snprintf(path, sizeof path, "%s", up->qpath);
    }
    return lb_upload_write(up, path, up->data.data, up->data.len) ? LB_E_INVAL : 0;
}

static void lb_files_post(lb_req *r, lb_sbx *s, const char *qpath)
{
    lb_upload up;
    memset(&up, 0, sizeof up);
    up.r = r;
    up.s = s;
    up.qpath = qpath;
    up.as = lb_e2b_run_as(r, s);
    lb_buf_init(&up.data, LB_SBX_FILE_MAX);
    up.out = cJSON_CreateArray();
    lb_buf b;
    lb_mp *mp = NULL;
    /* the body first, so a slow upload does not hold the sandbox */
    if (lb_req_body(r, LB_SBX_FILE_MAX + (1u << 20), &b, "upload") != LB_OK) {
        lb_buf_free(&up.data);
        cJSON_Delete(up.out);
        return;
    }
    /* envd 0.6.2's file metadata (X-Metadata-<key> headers): kept as the
     * file's user.e2b.<key> attributes (sandboxd). envd lowercases the key;
     * FastCGI hands it over as HTTP_X_METADATA_<KEY> with '-' made '_', and
     * nginx drops a header whose name has '_' (or any character but
     * letters, digits and '-'), so '_' here was '-' */
    if (lb_upload_meta(r, &up) != 0) {
        lb_buf_free(&b);
        lb_buf_free(&up.data);
        cJSON_Delete(up.out);
        lb_e2b_error_json(r, 400, NULL, up.msg);
        return;
    }
    /* Content-Encoding: gzip is the whole body's, multipart or not (envd
     * unpacks before it looks at the type); the unpacked size has the
     * same cap as a plain body */
    const char *ce = lb_http_param(r, "HTTP_CONTENT_ENCODING");
    if (up.out && ce && *ce && strcasecmp(ce, "identity")) {
        lb_buf plain;
        lb_buf_init(&plain, LB_SBX_FILE_MAX + (1u << 20));
        int grc = strcasecmp(ce, "gzip") ? LB_E_PROTO : lb_e2b_gunzip(b.data ? b.data : "", b.len, &plain);
        if (grc) {
            up.st = grc == LB_E_TOOBIG ? 413 : 400;
            snprintf(up.msg, sizeof up.msg, "%s",
                     grc == LB_E_PROTO ? "Content-Encoding may be gzip or identity only."
                     : grc == LB_E_TOOBIG ? "The upload unpacks to more than a file may hold (64 MiB)."
                                           : "The body is not valid gzip data, as its Content-Encoding says.");
            lb_buf_free(&plain);
        } else {
            lb_buf_free(&b);
            b = plain;
        }
    }
    if (up.st) {
        /* said below */
    } else if (!up.out) {
        up.st = 500;
        snprintf(up.msg, sizeof up.msg, "Out of memory.");
    } else if (lb_mp_is_form_data(r->content_type)) {
        char boundary[LB_MP_BOUNDARY_MAX + 1];
        lb_mp_limits lim = {.max_parts = LB_E2B_UPLOAD_FILES, .max_header_bytes = 8192,
                            /* a field "file" without a file name is a file too (lb_up_is_file) */
                            .max_field_bytes = LB_SBX_FILE_MAX,
                            .max_file_bytes = LB_SBX_FILE_MAX, .max_total_bytes = LB_SBX_FILE_MAX + (1u << 20), .absolute_names_ok = 1};
        lb_mp_callbacks cb = {lb_up_begin, lb_up_data, lb_up_end};
        int rc = lb_mp_boundary(r->content_type, boundary, sizeof boundary);
        if (!rc)
            rc = lb_mp_new(boundary, &lim, &cb, &up, &mp);
        if (!rc)
            rc = lb_mp_feed(mp, b.data ? b.data : "", b.len);
        if (!rc)
            rc = lb_mp_finish(mp);
        if (rc && !up.st) {
            up.st = rc == LB_E_TOOBIG ? 413 : 400;
            snprintf(up.msg, sizeof up.msg, "The upload is not a usable multipart body: %s",
                     mp ? lb_mp_error(mp) : "no boundary");
        }
    } else if (!qpath[0]) {
        up.st = 400;
        snprintf(up.msg, sizeof up.msg, "An upload that is not multipart/form-data needs ?path=.");
    } else {
        LB_IGNORE(lb_upload_write(&up, qpath, b.data, b.len)); /* up.st says how it went */
    }
    if (!up.st && cJSON_GetArraySize(up.out) == 0) {
        up.st = 400;
        snprintf(up.msg, sizeof up.msg, "The upload holds no file.");
    }
    if (up.st) {
        lb_e2b_error_json(r, up.st, NULL, up.msg);
    } else {
        lb_http_json(r, 200, up.out, NULL);
    }
    lb_mp_free(mp);
    lb_buf_free(&b);
    lb_buf_free(&up.data);
    cJSON_Delete(up.out);
}

void lb_e2b_files(lb_req *r, lb_sbx *s)
{
    char path[LB_SBX_SPATH_MAX];
    if (lb_files_query_path(r, s, path, sizeof path))
        return;
    if (!strcmp(r->method, "GET")) {
        lb_http_drain(r);
        if (!path[0])
            lb_e2b_unary_error(r, "invalid_argument", "GET /files needs ?path=.");
        else
            lb_files_get(r, s, path);
    } else if (!strcmp(r->method, "POST")) {
        lb_files_post(r, s, path);
    } else {
        lb_http_drain(r);
        lb_http_method_not_allowed(r, "GET, HEAD, POST");
    }
}
