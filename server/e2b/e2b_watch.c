/* WatchDir for E2B's SDK (e2b_watch.h). */
#include "e2b/e2b_watch.h"

#include "e2b/e2b_connect.h"
#include "e2b/e2b_entry.h"
#include "e2b/e2b_fs.h"
#include "web/http.h"
#include "sbxapi/sandbox_spec.h"

#include "common/buf.h"
#include "common/status.h"
#include "common/util.h"
#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <fcgiapp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_WATCH_KEEPALIVE_MS 10000   /* as the process streams (SDK: 50 s) */
#define LB_WATCH_ARM_MS 30000         /* the watcher's "armed" line, at most this late */

int lb_e2b_watch_line(const char *line, size_t n, char *kind, char *name, size_t namesz)
{
    if (!namesz)
        return -1;
    name[0] = '\0';
    if (n == 0)
        return -1;
    *kind = line[0];
    if (n == 1)
        return line[0] && strchr("ROLX", line[0]) ? 0 : -1;
    if (!lb_e2b_watch_type(line[0]) || line[1] != ' ' || n == 2)
        return -1;
    size_t o = 0;
    for (size_t i = 2; i < n; i++) {
        char ch = line[i];
        if (ch == '\0' || ch == '\n')
            goto bad;
        if (ch == '\\') {
            if (++i >= n || (line[i] != 'n' && line[i] != '\\'))
                goto bad;
            ch = line[i] == 'n' ? '\n' : '\\';
        }
        if (o + 1 >= namesz)
            goto bad;
        name[o++] = ch;
    }
    name[o] = '\0';
    return 0;
bad:
    name[0] = '\0'; /* never half a name */
    return -1;
}

int lb_e2b_watch_tmp_final(const char *name, char *out, size_t outsz)
{
    /* "[dir/].<leaf>.lbsd-<16 hex>": sandboxd's write (sandbox_fs.c) */
    const char *slash = strrchr(name, '/');
    const char *leaf = slash ? slash + 1 : name;
    size_t n = strlen(leaf);
    if (n < 1 + 1 + 6 + 16 || leaf[0] != '.' || memcmp(leaf + n - 22, ".lbsd-", 6))
        return 0;
    for (size_t i = n - 16; i < n; i++)
        if (!strchr("0123456789abcdef", leaf[i]))
            return 0;
    size_t dir = (size_t)(leaf - name), fin = n - 1 - 22;
    if (!fin || dir + fin + 1 > outsz)
        return 0;
    memcpy(out, name, dir);
    memcpy(out + dir, leaf + 1, fin);
    out[dir + fin] = '\0';
    return 1;
}

const char *lb_e2b_watch_type(char kind)
{
    switch (kind) {
    case 'C': return "EVENT_TYPE_CREATE";
    case 'W': return "EVENT_TYPE_WRITE";
    case 'D': return "EVENT_TYPE_REMOVE";
    case 'N': return "EVENT_TYPE_RENAME";
    case 'M': return "EVENT_TYPE_CHMOD";
    default: return NULL;
    }
}

/* One message of the stream: {start:{}}, {keepalive:{}} or {filesystem:{name, type}}. */
static int lb_watch_send(lb_req *r, const char *what, const char *name, const char *type, int queue)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *v = o ? cJSON_AddObjectToObject(o, what) : NULL;
    int ok = v && (!name || (cJSON_AddStringToObject(v, "name", name) && cJSON_AddStringToObject(v, "type", type)));
    int rc = !ok ? LB_E_NOMEM : queue ? lb_e2b_stream_queue(r, o) : lb_e2b_stream_send(r, o);
    cJSON_Delete(o);
    return rc;
}

struct lb_watch;
static int lb_watch_event(struct lb_watch *w, const char *name, const char *type);

typedef struct lb_watch {
    lb_req *r;
    lb_sbx *s;
    lbsb_conn *c;
    uint32_t pid;
    int armed;
    char line[LB_E2B_WATCH_LINE_MAX + 1];
    size_t len;
    char renamed[LB_E2B_WATCH_LINE_MAX]; /* a written file's name, its temporary name just moved away */
    int include_entry;            /* the request's includeEntry (envd 0.6.3) */
    char dir[LB_SBX_SPATH_MAX];   /* the watched directory, absolute */
    lb_e2b_iddb db;               /* owners' names for the entries, read at the start */
    char err[512];                /* the watcher's stderr, for a failed start */
    size_t errlen;
} lb_watch;

static void lb_watch_kill(lb_watch *w)
{
    char err[256];
    if (lb_sbx_lock(w->s, err, sizeof err) != LB_OK)
        return;
    /* gone already (it ended, or the sandbox did) is as good as killed */
    LB_IGNORE(lbsb_proc_signal(w->s->conn, w->s->sbx_id, w->pid, SIGKILL, err, sizeof err));
    lb_sbx_unlock(w->s);
}

/* One event, queued: {filesystem:{name, type, entry?}}. With includeEntry
 * a create, write or chmod carries the entry as it is now (envd's
 * opCarriesEntry), none when it is gone already (a benign race, as envd). */
static int lb_watch_event(lb_watch *w, const char *name, const char *type)
{
    if (!w->include_entry || (strcmp(type, "EVENT_TYPE_CREATE") && strcmp(type, "EVENT_TYPE_WRITE") &&
                              strcmp(type, "EVENT_TYPE_CHMOD")))
        return lb_watch_send(w->r, "filesystem", name, type, 1);
    char full[2 * LB_SBX_SPATH_MAX + 8], err[256], msg[512];
    snprintf(full, sizeof full, "%s%s%s", w->dir, strcmp(w->dir, "/") ? "/" : "", name);
    lbsb_entry e;
    memset(&e, 0, sizeof e);
    cJSON *entry = NULL;
    if (lb_sbx_lock(w->s, msg, sizeof msg) == LB_OK) {
        int rc = lbsb_stat_entry(w->s->conn, w->s->sbx_id, full, &e, err, sizeof err);
        lb_sbx_unlock(w->s);
        if (rc == LB_OK && e.type)
            entry = lb_e2b_entry_db(full, &e, &w->db);
        lbsb_entry_clear(&e);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *v = o ? cJSON_AddObjectToObject(o, "filesystem") : NULL;
    int ok = v && cJSON_AddStringToObject(v, "name", name) && cJSON_AddStringToObject(v, "type", type);
    if (ok && entry)
        ok = cJSON_AddItemToObject(v, "entry", entry) != 0;
    else
        cJSON_Delete(entry);
    int rc = ok ? lb_e2b_stream_queue(w->r, o) : LB_E_NOMEM;
    cJSON_Delete(o);
    return rc;
}

/* Handles one complete line: 0 go on, 1 the stream has ended (answered). */
static int lb_watch_on_line(lb_watch *w)
{
    char kind, name[LB_E2B_WATCH_LINE_MAX];
    if (lb_e2b_watch_line(w->line, w->len, &kind, name, sizeof name) != 0) {
        lb_e2b_stream_end(w->r, "internal", "The directory's watcher sent something malformed; it was stopped.");
        return 1;
    }
    if (kind == 'R') {
        if (w->armed)
            return 0;
        w->armed = 1;
        return lb_watch_send(w->r, "start", NULL, NULL, 0) != LB_OK;
    }
    if (!w->armed && lb_e2b_watch_type(kind)) {
        lb_e2b_stream_end(w->r, "internal", "The directory's watcher sent events before it was armed.");
        return 1;
    }
    switch (kind) {
    case 'O':
        lb_e2b_stream_end(w->r, "resource_exhausted", "Events were lost: more came than the sandbox's inotify queue "
                          "holds (fs.inotify.max_queued_events) while they waited to be read.");
        return 1;
    case 'L':
        lb_e2b_stream_end(w->r, "resource_exhausted", "The recursive watch reached its cap of %d directories or %d "
                          "levels (or the sandbox's fs.inotify.max_user_watches).", LBSB_WATCH_DIRS, LBSB_WATCH_LEVELS);
        return 1;
    case 'X':
        lb_e2b_stream_end(w->r, "not_found", "The watched directory was removed or moved away.");
        return 1;
    default:
        break;
    }
    /* sandboxd writes a file (the SDK's files.write) to a temporary name
     * and renames it: envd, which writes in place, reports a create and a
     * write of the file itself, so the temporary name's events are dropped
     * and its rename onto the name becomes those two */
    char fin[LB_E2B_WATCH_LINE_MAX];
    if (lb_e2b_watch_tmp_final(name, fin, sizeof fin)) {
        if (kind == 'N')
            snprintf(w->renamed, sizeof w->renamed, "%s", fin);
        return 0;
    }
    if (kind == 'C' && w->renamed[0] && !strcmp(w->renamed, name)) {
        w->renamed[0] = '\0';
        return lb_watch_event(w, name, "EVENT_TYPE_CREATE") != LB_OK ||
               lb_watch_event(w, name, "EVENT_TYPE_WRITE") != LB_OK;
    }
    return lb_watch_event(w, name, lb_e2b_watch_type(kind)) != LB_OK;
}

/* Bytes of the watcher's stdout: 0 go on, 1 ended (answered or the client left). */
static int lb_watch_on_out(lb_watch *w, const char *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (d[i] != '\n') {
            if (w->len >= LB_E2B_WATCH_LINE_MAX) {
                lb_e2b_stream_end(w->r, "internal", "The directory's watcher sent a line over %d bytes; it was "
                                  "stopped.", LB_E2B_WATCH_LINE_MAX);
                return 1;
            }
            w->line[w->len++] = d[i];
            continue;
        }
        int end = lb_watch_on_line(w);
        w->len = 0;
        if (end)
            return 1;
    }
    return lb_e2b_stream_flush(w->r) != LB_OK;
}

/* Follows the watcher until the stream ends; kills it unless it ended. */
static void lb_watch_follow(lb_watch *w, int64_t deadline)
{
    int64_t last = lb_mono_ms(), arm_by = last + LB_WATCH_ARM_MS;
    for (;;) {
        int64_t now = lb_mono_ms();
        int64_t until = w->armed ? last + LB_WATCH_KEEPALIVE_MS : arm_by;
        if (deadline && deadline < until)
            until = deadline;
        lbsb_proc_event ev;
        char err[512] = "";
        int rc = lbsb_proc_next(w->c, until > now ? (int)(until - now) : 0, &ev, err, sizeof err);
        if (rc == LB_E_TIMEOUT) {
            now = lb_mono_ms();
            if (deadline && now >= deadline) {
                /* the SDK's timeoutMs: envd ends the watch without an error */
                lb_watch_kill(w);
                lb_e2b_stream_end(w->r, NULL, "%s", "");
                return;
            }
            if (!w->armed) {
                lb_watch_kill(w);
                lb_e2b_stream_end(w->r, "unavailable", "The directory's watcher did not start in %d s.",
                                  LB_WATCH_ARM_MS / 1000);
                return;
            }
            if (lb_watch_send(w->r, "keepalive", NULL, NULL, 0) != LB_OK) {
                lb_watch_kill(w); /* the client left */
                return;
            }
            last = now;
            continue;
        }
        if (rc) {
            if (rc == LB_E_CANCELLED)
                lb_watch_kill(w); /* the client left (or the sandbox goes: then the kill is not sent) */
            lb_e2b_stream_end(w->r, "unavailable", "%s", rc == LB_E_CANCELLED ? "the sandbox was killed or expired" : err);
            return;
        }
        if (ev.kind == LBSB_PROC_OUT) {
            int end = 0;
            if (ev.fd == 1) {
                end = lb_watch_on_out(w, ev.data, ev.len);
                last = lb_mono_ms();
            } else {
                size_t k = ev.len < sizeof w->err - 1 - w->errlen ? ev.len : sizeof w->err - 1 - w->errlen;
                memcpy(w->err + w->errlen, ev.data, k);
                w->errlen += k;
                w->err[w->errlen] = '\0';
            }
            lbsb_proc_event_free(&ev);
            if (end) {
                lb_watch_kill(w);
                return;
            }
        } else if (ev.kind == LBSB_PROC_EXIT) {
            while (w->errlen && (w->err[w->errlen - 1] == '\n'))
                w->err[--w->errlen] = '\0';
            lb_e2b_stream_end(w->r, w->armed ? "internal" : "invalid_argument", "The directory's watcher ended: %s",
                              w->errlen ? w->err : "it was killed");
            return;
        } else {
            lb_e2b_stream_cut(w->r); /* the sandbox is gone: envd's connection drops */
            return;
        }
    }
}

void lb_e2b_watchdir(lb_req *r, lb_sbx *s)
{
    char path[LB_SBX_SPATH_MAX], err[512] = "", msg[1400];
    cJSON *req = lb_e2b_request(r, 1);
    if (!req)
        return;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(req, "path");
    int recursive = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "recursive"));
    int include_entry = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "includeEntry"));
    char home[LB_PATH_MAX + 2];
    lb_e2b_call_home(r, s, home, sizeof home); /* relative paths from the user's home, as the other file calls */
    int bad = !cJSON_IsString(p) || lb_sbx_path(p->valuestring, strlen(p->valuestring), home, 1, path,
                                                 sizeof path) != LB_OK;
    cJSON_Delete(req);
    if (bad) {
        lb_e2b_stream_end(r, "invalid_argument", "path must be a path in the sandbox without \"..\", NUL or control "
                          "characters, at most 1024 bytes");
        return;
    }
    /* sandboxd's stat first (it never follows a symlink): a missing dir is
     * the SDK's NotFoundError before any watcher runs */
    lbsb_entry e;
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        lb_e2b_stream_end(r, "unavailable", "%s", msg);
        return;
    }
    int rc = lbsb_stat_entry(s->conn, s->sbx_id, path, &e, err, sizeof err);
    lb_sbx_unlock(s);
    int type = e.type;
    lbsb_entry_clear(&e);
    if (rc) {
        lb_e2b_stream_end(r, rc == LB_E_BUSY ? "failed_precondition" : "unavailable", "Cannot watch %s: %s", path, err);
        return;
    }
    if (type != 2) {
        lb_e2b_stream_end(r, type ? "invalid_argument" : "not_found", type ? "%s is not a directory (symlinks are "
                          "not followed)." : "There is no directory %s.", path);
        return;
    }
    lb_watch w;
    memset(&w, 0, sizeof w);
    w.r = r;
    w.s = s;
    w.include_entry = include_entry;
    snprintf(w.dir, sizeof w.dir, "%s", path);
    if (include_entry)
        lb_e2b_iddb_load(s, &w.db);
    if (lbsb_connect(r->cfg->sandboxd_socket, &s->cancel, &w.c, err, sizeof err) != LB_OK) {
        lb_e2b_stream_end(r, "unavailable", "cannot reach sandboxd: %s", err);
        lb_e2b_iddb_free(&w.db);
        return;
    }
    lbsb_set_watch_fd(w.c, r->fcgi ? r->fcgi->ipcFd : -1); /* a client that leaves frees this thread */
    const char *argv[] = {LBSB_WATCH_ARGV0, path, recursive ? "1" : "0"};
    /* the tag keeps it out of commands.list (e2b_process.c) */
    lbsb_proc_spec sp = {.argv = argv, .argc = 3, .cwd = "/", .tag = LBSB_WATCH_ARGV0};
    rc = lbsb_proc_start(w.c, s->sbx_id, &sp, 1, &w.pid, err, sizeof err);
    if (rc) {
        lb_e2b_stream_end(r, rc == LB_E_BUSY ? "resource_exhausted" : "unavailable", "The watcher did not start: %s",
                          err);
    } else {
        const char *h = lb_http_param(r, "HTTP_CONNECT_TIMEOUT_MS");
        long long ms = 0;
        int64_t deadline = h && lb_parse_ll(h, 1, 7LL * 24 * 3600 * 1000, &ms) == LB_OK ? lb_mono_ms() + ms : 0;
        lb_watch_follow(&w, deadline);
    }
    lbsb_close(w.c);
    lb_e2b_iddb_free(&w.db);
}
