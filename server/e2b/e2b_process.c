/* process.Process on sandboxd's own processes (e2b_process.h). */
#include "e2b/e2b_process.h"

#include "e2b/e2b_connect.h"
#include "e2b/e2b_fs.h"
#include "e2b/e2b_pty.h"
#include "web/http.h"
#include "sbxapi/sandbox_spec.h"

#include "common/status.h"
#include "common/util.h"
#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <fcgiapp.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_E2B_KEEPALIVE_MS 10000  /* a keepalive event when nothing else was sent this long (SDK: 50 s) */
#define LB_E2B_CHUNK (1u << 20)    /* stdin bytes of one SendInput */
#define LB_E2B_ARGS_MAX 4096       /* arguments of one process (sandboxd's cap) */
#define LB_E2B_TAG_MAX 256         /* sandboxd's cap */
#define LB_E2B_META_MAX (16u << 10) /* the config kept with the process for List (sandboxd's cap) */
#define LB_E2B_ENV_MAX 1000        /* variables, the sandbox's and the process's (sandboxd: 1016) */

/* ---- Start: the request ---- */

typedef struct lb_e2b_start {
    const char **argv;
    int argc;
    const char **env;              /* "NAME=value", the sandbox's then the process's */
    char **env_own;                /* what env points into */
    int envc;
    char cwd[LB_PATH_MAX + 2];
    const char *tag;
    int has_stdin;
    char *meta;                    /* {cmd, args, envs, cwd} for List */
    int pty;                       /* on a terminal: argv starts with the relay's (e2b_pty.h) */
    const char *user;              /* who it runs as (lb_e2b_run_as) */
    char dims[2][8];               /* its cols and rows as the relay's arguments */
} lb_e2b_start;

static void lb_start_free(lb_e2b_start *st)
{
    for (int i = 0; i < st->envc; i++)
        free(st->env_own[i]);
    free(st->env_own);
    free(st->env);
    free(st->argv);
    free(st->meta);
}

/* Appends the strings of obj (an object of strings) as NAME=value. */
static int lb_env_add(lb_e2b_start *st, const cJSON *obj)
{
    const cJSON *kv;
    cJSON_ArrayForEach(kv, obj)
    {
        if (!cJSON_IsString(kv) || st->envc >= LB_E2B_ENV_MAX)
            continue; /* validated before; the cap is sandboxd's too */
        size_t n = strlen(kv->string) + strlen(kv->valuestring) + 2;
        char *e = malloc(n);
        if (!e)
            return -1;
        snprintf(e, n, "%s=%s", kv->string, kv->valuestring);
        st->env_own[st->envc] = e;
        st->env[st->envc++] = e;
    }
    return 0;
}

/* Validates a StartRequest into st; 0, or a sentence in msg (invalid_argument). */
static int lb_start_parse(const cJSON *req, lb_sbx *s, lb_e2b_start *st, char *msg, size_t msgsz)
{
    const cJSON *proc = cJSON_GetObjectItemCaseSensitive(req, "process");
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(proc, "cmd");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(proc, "args");
    const cJSON *envs = cJSON_GetObjectItemCaseSensitive(proc, "envs");
    const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(proc, "cwd");
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(req, "tag");
    if (!cJSON_IsObject(proc) || !cJSON_IsString(cmd) || !cmd->valuestring[0]) {
        snprintf(msg, msgsz, "process.cmd must be a non-empty string");
        return -1;
    }
    const cJSON *pty = cJSON_GetObjectItemCaseSensitive(req, "pty");
    if (pty && !cJSON_IsNull(pty)) {
        int cols, rows;
        if (lb_e2b_pty_size(pty, &cols, &rows) != 0) {
            snprintf(msg, msgsz, "pty.size needs cols and rows, each 1 to %d", LB_E2B_PTY_DIM_MAX);
            return -1;
        }
        st->pty = 1;
        snprintf(st->dims[0], sizeof st->dims[0], "%d", cols);
        snprintf(st->dims[1], sizeof st->dims[1], "%d", rows);
    }
    if (args && (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > LB_E2B_ARGS_MAX - 1)) {
        snprintf(msg, msgsz, "process.args must be an array of at most %d strings", LB_E2B_ARGS_MAX - 1);
        return -1;
    }
    if (tag && (!cJSON_IsString(tag) || strlen(tag->valuestring) > LB_E2B_TAG_MAX)) {
        snprintf(msg, msgsz, "tag must be a string of at most %d bytes", LB_E2B_TAG_MAX);
        return -1;
    }
    st->tag = tag && tag->valuestring[0] ? tag->valuestring : NULL;
    st->has_stdin = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "stdin"));
    if (st->pty) {
        /* the tag says it is on a terminal (lb_e2b_is_pty); its input is the relay's frames */
        st->tag = LBSB_PTY_ARGV0;
        st->has_stdin = 1;
    }
    if (envs && cJSON_IsNull(envs))
        envs = NULL;
    if (envs) {
        if (!cJSON_IsObject(envs) || cJSON_GetArraySize(envs) > LB_SBX_ENV_MAX) {
            snprintf(msg, msgsz, "process.envs must be an object of at most %d strings", LB_SBX_ENV_MAX);
            return -1;
        }
        const cJSON *kv;
        cJSON_ArrayForEach(kv, envs)
        {
            if (!lb_sbx_env_name_ok(kv->string) || !cJSON_IsString(kv) ||
                strlen(kv->valuestring) > LB_SBX_ENV_VALUE_MAX) {
                snprintf(msg, msgsz, "process.envs: each name must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes) "
                         "and each value be a string of at most %u bytes", LB_SBX_ENV_NAME_MAX,
                         (unsigned)LB_SBX_ENV_VALUE_MAX);
                return -1;
            }
        }
    }
    char home[LB_PATH_MAX + 2];
    lb_e2b_home(s, home, sizeof home); /* E2B's base template starts in its user's home */
    if (st->user && !strcmp(st->user, "root"))
        snprintf(home, sizeof home, "/root"); /* envd starts root's in root's */
    else if (lb_e2b_user_home_of(st->user))
        snprintf(home, sizeof home, "%s", lb_e2b_user_home_of(st->user)); /* another user's in its own */
    if (cwd && !cJSON_IsNull(cwd)) {
        if (!cJSON_IsString(cwd) ||
            lb_sbx_path(cwd->valuestring, strlen(cwd->valuestring), home, 1, st->cwd, sizeof st->cwd) != LB_OK) {
            snprintf(msg, msgsz, "process.cwd must be a path in the sandbox without \"..\" or control characters");
            return -1;
        }
    } else {
        snprintf(st->cwd, sizeof st->cwd, "%s", home);
    }
    int na = cJSON_GetArraySize(args);
    st->argv = calloc((size_t)na + 4, sizeof *st->argv);
    st->env = calloc(LB_E2B_ENV_MAX, sizeof *st->env);
    st->env_own = calloc(LB_E2B_ENV_MAX, sizeof *st->env_own);
    if (!st->argv || !st->env || !st->env_own) {
        snprintf(msg, msgsz, "out of memory");
        return -1;
    }
    if (st->pty) {
        st->argv[st->argc++] = LBSB_PTY_ARGV0;
        st->argv[st->argc++] = st->dims[0];
        st->argv[st->argc++] = st->dims[1];
    }
    st->argv[st->argc++] = cmd->valuestring;
    const cJSON *a;
    cJSON_ArrayForEach(a, args)
    {
        if (!cJSON_IsString(a)) {
            snprintf(msg, msgsz, "process.args must hold strings only");
            return -1;
        }
        st->argv[st->argc++] = a->valuestring;
    }
    /* the sandbox's env (its create's envs), then the process's over it */
    if (lb_env_add(st, s->env) || lb_env_add(st, envs)) {
        snprintf(msg, msgsz, "out of memory");
        return -1;
    }
    /* what List answers: the config as the client sent it, without its
     * envs when that would be over sandboxd's cap */
    cJSON *conf = cJSON_CreateObject();
    int ok = conf && cJSON_AddStringToObject(conf, "cmd", cmd->valuestring) &&
             cJSON_AddItemToObject(conf, "args", args ? cJSON_Duplicate(args, 1) : cJSON_CreateArray()) &&
             cJSON_AddItemToObject(conf, "envs", envs ? cJSON_Duplicate(envs, 1) : cJSON_CreateObject()) &&
             cJSON_AddStringToObject(conf, "cwd", st->cwd);
    st->meta = ok ? cJSON_PrintUnformatted(conf) : NULL;
    if (st->meta && strlen(st->meta) > LB_E2B_META_MAX) {
        free(st->meta);
        cJSON_ReplaceItemInObjectCaseSensitive(conf, "envs", cJSON_CreateObject());
        cJSON_ReplaceItemInObjectCaseSensitive(conf, "args", cJSON_CreateArray());
        st->meta = cJSON_PrintUnformatted(conf);
    }
    cJSON_Delete(conf);
    if (!st->meta || strlen(st->meta) > LB_E2B_META_MAX) {
        snprintf(msg, msgsz, "process.cmd and cwd are over %u bytes", (unsigned)LB_E2B_META_MAX);
        return -1;
    }
    return 0;
}

/* The deadline the client set (Connect-Timeout-Ms) on the monotonic clock;
 * 0 when none. */
static int64_t lb_connect_deadline(lb_req *r)
{
    const char *h = lb_http_param(r, "HTTP_CONNECT_TIMEOUT_MS");
    long long v = 0;
    if (!h || lb_parse_ll(h, 1, 7LL * 24 * 3600 * 1000, &v) != LB_OK)
        return 0;
    return lb_mono_ms() + v;
}

/* ---- the events ---- */

/* One event; queued without a flush when more follows at once. */
static int lb_send_event_q(lb_req *r, const char *kind, cJSON *value, int queue)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *ev = o ? cJSON_AddObjectToObject(o, "event") : NULL;
    if (!ev || !value || !cJSON_AddItemToObject(ev, kind, value)) {
        cJSON_Delete(value);
        cJSON_Delete(o);
        return LB_E_NOMEM;
    }
    int rc = queue ? lb_e2b_stream_queue(r, o) : lb_e2b_stream_send(r, o);
    cJSON_Delete(o);
    return rc;
}

/* A data event with n bytes of one stream ("stdout", "stderr"), base64. */
static int lb_send_data(lb_req *r, const char *stream, const char *p, size_t n, int queue)
{
    if (!n)
        return LB_OK;
    char *b64 = malloc(4 * ((n + 2) / 3) + 1);
    if (!b64)
        return LB_E_NOMEM;
    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)p, (int)n);
    cJSON *d = cJSON_CreateObject();
    if (d && !cJSON_AddStringToObject(d, stream, b64)) {
        cJSON_Delete(d);
        d = NULL;
    }
    free(b64);
    return lb_send_event_q(r, "data", d, queue);
}

static int lb_send_event(lb_req *r, const char *kind, cJSON *value)
{
    return lb_send_event_q(r, kind, value, 0);
}

static int lb_send_start(lb_req *r, uint32_t pid, int queue)
{
    cJSON *sv = cJSON_CreateObject();
    if (sv && !cJSON_AddNumberToObject(sv, "pid", pid)) {
        cJSON_Delete(sv);
        sv = NULL;
    }
    return lb_send_event_q(r, "start", sv, queue);
}

/* The end event: an exit code, or a signal (envd's "signal: killed"). */
static int lb_send_end(lb_req *r, int exit_code, int sig)
{
    char text[64];
    const char *err = NULL;
    int exited = !sig;
    if (sig) {
        snprintf(text, sizeof text, "signal: %s", sig == SIGKILL ? "killed" : sig == SIGTERM ? "terminated"
                                                  : sig == SIGINT ? "interrupt"
                                                                  : "other");
        err = text;
    } else {
        snprintf(text, sizeof text, "exit status %d", exit_code);
        err = exit_code ? text : NULL;
    }
    cJSON *e = cJSON_CreateObject();
    if (e && (!cJSON_AddNumberToObject(e, "exitCode", sig ? -1 : exit_code) || !cJSON_AddBoolToObject(e, "exited", exited) ||
              !cJSON_AddStringToObject(e, "status", text) || (err && !cJSON_AddStringToObject(e, "error", err)))) {
        cJSON_Delete(e);
        e = NULL;
    }
    return lb_send_event_q(r, "end", e, 1); /* the end of the stream follows at once */
}

/* ---- following a process ---- */

/* A sandboxd failure's Connect code. */
static const char *lb_rpc_code(int rc)
{
    switch (rc) {
    case LB_E_NOTFOUND:
        return "not_found";
    case LB_E_INVAL:
    case LB_E_TOOBIG:
        return "invalid_argument";
    case LB_E_BUSY:
        return "resource_exhausted";
    case LB_E_SANDBOX:
    case LB_E_UNAVAILABLE:
    case LB_E_CANCELLED:
        return "unavailable";
    default:
        return "internal";
    }
}

/* signal on s's own connection (the stream's carries events only). */
static int lb_proc_kill(lb_sbx *s, uint32_t pid, int sig, char *msg, size_t msgsz)
{
    char err[512] = "";
    if (lb_sbx_lock(s, msg, msgsz) != LB_OK)
        return LB_E_NOTFOUND;
    int rc = lbsb_proc_signal(s->conn, s->sbx_id, pid, sig, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc)
        snprintf(msg, msgsz, "%s", err);
    return rc;
}

/* Streams the events of the process attached to c until it ends, the
 * deadline passes (it is killed: deadline_exceeded), its sandbox goes
 * (unavailable) or the client leaves (it runs on: closing c detaches).
 * The start event went out already. Ends the stream. */
static void lb_follow(lb_req *r, lb_sbx *s, lbsb_conn *c, uint32_t pid, int64_t deadline, int pty)
{
    char err[512] = "";
    int64_t last_sent = lb_mono_ms();
    /* an output event is held while the next one is already there, so that
     * output and the end leave in one write through nginx */
    int held = 0;
    for (;;) {
        int64_t now = lb_mono_ms();
        int wait = (int)(last_sent + LB_E2B_KEEPALIVE_MS - now);
        if (deadline && deadline - now < wait)
            wait = (int)(deadline - now);
        if (wait < 0 || held)
            wait = 0;
        lbsb_proc_event ev;
        int rc = lbsb_proc_next(c, wait, &ev, err, sizeof err);
        if (rc == LB_E_TIMEOUT && held) {
            if (lb_e2b_stream_flush(r) != LB_OK) /* what was held */
                return;
            held = 0;
            last_sent = lb_mono_ms();
            continue;
        }
        if (rc == LB_E_TIMEOUT) {
            if (deadline && lb_mono_ms() >= deadline) {
                char msg[600];
                LB_IGNORE(lb_proc_kill(s, pid, SIGKILL, msg, sizeof msg)); /* the answer says why it ended */
                lb_e2b_stream_end(r, "deadline_exceeded", "the process ran past its timeout and was killed");
                return;
            }
            if (lb_send_event(r, "keepalive", cJSON_CreateObject()) != LB_OK)
                return;
            last_sent = lb_mono_ms();
            continue;
        }
        if (rc == LB_E_CANCELLED || (rc && lb_sbx_state_of(s, NULL, 0) != LB_SBX_RUNNING)) {
            lb_e2b_stream_cut(r); /* the sandbox was killed or expired: envd's connection drops */
            return;
        }
        if (rc) {
            lb_e2b_stream_end(r, lb_rpc_code(rc), "%s", err);
            return;
        }
        if (ev.kind == LBSB_PROC_OUT) {
            /* a terminal's output is the relay's stdout (its stderr: its own failures) */
            const char *name = ev.fd == 2 ? "stderr" : pty ? "pty" : "stdout";
            int gone = lb_send_data(r, name, ev.data, ev.len, 1) != LB_OK;
            lbsb_proc_event_free(&ev);
            if (gone)
                return; /* the client left; the process runs on (connect to it again) */
            held = 1;
        } else if (ev.kind == LBSB_PROC_EXIT) {
            LB_IGNORE(lb_send_end(r, ev.exit_code, ev.signal)); /* the end of the stream follows */
            lb_e2b_stream_end(r, NULL, "%s", "");
            return;
        } else {
            lb_e2b_stream_cut(r); /* the sandbox is gone (killed, expired): envd's connection drops */
            return;
        }
    }
}

/* A connection of its own for one stream (events come on it unasked). */
static lbsb_conn *lb_stream_conn(lb_req *r, lb_sbx *s)
{
    lbsb_conn *c = NULL;
    char err[512];
    if (lbsb_connect(r->cfg->sandboxd_socket, &s->cancel, &c, err, sizeof err) != LB_OK) {
        lb_e2b_stream_end(r, "unavailable", "cannot reach sandboxd: %s", err);
        return NULL;
    }
    lbsb_set_watch_fd(c, r->fcgi ? r->fcgi->ipcFd : -1); /* a client that leaves frees this thread */
    return c;
}

static void lb_e2b_start_run(lb_req *r, lb_sbx *s)
{
    char msg[1400] = "";
    lb_e2b_start st;
    memset(&st, 0, sizeof st);
    cJSON *req = lb_e2b_request(r, 1);
    if (!req)
        return;
    st.user = lb_e2b_run_as(r, s);
    if (lb_start_parse(req, s, &st, msg, sizeof msg) != 0) {
        lb_e2b_stream_end(r, "invalid_argument", "%s", msg);
        goto done;
    }
    lbsb_conn *c = lb_stream_conn(r, s);
    if (!c)
        goto done;
    lbsb_proc_spec sp = {.argv = st.argv, .argc = st.argc, .env = st.env, .envc = st.envc, .cwd = st.cwd,
                         .with_stdin = st.has_stdin, .tag = st.tag, .meta = st.meta, .user = st.user};
    uint32_t pid = 0;
    int rc = lbsb_proc_start(c, s->sbx_id, &sp, 1, &pid, msg, sizeof msg);
    if (rc)
        lb_e2b_stream_end(r, lb_rpc_code(rc), "The process did not start: %s", msg);
    else if (lb_send_start(r, pid, 0) == LB_OK)
        lb_follow(r, s, c, pid, lb_connect_deadline(r), st.pty);
    lbsb_close(c);
done:
    lb_start_free(&st);
    cJSON_Delete(req);
}

/* ---- Connect, List, SendSignal, SendInput, CloseStdin ---- */

/* The pid of a ProcessSelector ({pid} or {tag}) of a running process in
 * s, or 0 after answering not_found (stream: as its end). */
static uint32_t lb_selected(lb_req *r, lb_sbx *s, const cJSON *req, int streaming)
{
    const cJSON *sel = cJSON_GetObjectItemCaseSensitive(req, "process");
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(sel, "pid");
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(sel, "tag");
    char msg[1400] = "", err[512] = "";
    const char *code = "not_found";
    uint32_t found = 0;
    char *json = NULL;
    /* a pid goes as it is: sandboxd answers notfound for one that is not running */
    if (cJSON_IsNumber(pid) && pid->valuedouble >= 1 && pid->valuedouble < 4294967296.0)
        return (uint32_t)pid->valuedouble;
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        code = "unavailable";
    } else {
        int rc = lbsb_proc_list(s->conn, s->sbx_id, &json, err, sizeof err);
        lb_sbx_unlock(s);
        if (rc) {
            code = lb_rpc_code(rc);
            snprintf(msg, sizeof msg, "%s", err);
        }
    }
    cJSON *arr = json ? cJSON_Parse(json) : NULL;
    free(json);
    const cJSON *p;
    cJSON_ArrayForEach(p, arr)
    {
        const cJSON *pp = cJSON_GetObjectItemCaseSensitive(p, "pid");
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(p, "tag");
        if (!cJSON_IsNumber(pp))
            continue;
        if ((cJSON_IsNumber(pid) && pid->valuedouble == pp->valuedouble) ||
            (!pid && cJSON_IsString(tag) && cJSON_IsString(pt) && !strcmp(tag->valuestring, pt->valuestring))) {
            found = (uint32_t)pp->valuedouble;
            break;
        }
    }
    cJSON_Delete(arr);
    if (found)
        return found;
    if (!msg[0])
        snprintf(msg, sizeof msg, "There is no running process with that pid or tag in this sandbox.");
    if (streaming)
        lb_e2b_stream_end(r, code, "%s", msg);
    else
        lb_e2b_unary_error(r, code, "%s", msg);
    return 0;
}

static void lb_e2b_connect(lb_req *r, lb_sbx *s)
{
    cJSON *req = lb_e2b_request(r, 1);
    if (!req)
        return;
    uint32_t pid = lb_selected(r, s, req, 1);
    char msg[600] = "";
    int pty = pid ? lb_e2b_is_pty(s, pid, msg, sizeof msg) : 0;
    lbsb_conn *c = pid ? lb_stream_conn(r, s) : NULL;
    if (c) {
        int rc = lbsb_proc_attach(c, s->sbx_id, pid, NULL, NULL, msg, sizeof msg);
        if (rc)
            lb_e2b_stream_end(r, lb_rpc_code(rc), "%s", msg); /* it ended meanwhile */
        else if (lb_send_start(r, pid, 0) == LB_OK)
            lb_follow(r, s, c, pid, lb_connect_deadline(r), pty > 0);
        lbsb_close(c);
    }
    cJSON_Delete(req);
}

static void lb_e2b_list(lb_req *r, lb_sbx *s)
{
    cJSON *req = lb_e2b_request(r, 0);
    if (!req)
        return;
    char msg[1400] = "", err[512] = "";
    char *json = NULL;
    int rc = LB_E_NOTFOUND;
    if (lb_sbx_lock(s, msg, sizeof msg) == LB_OK) {
        rc = lbsb_proc_list(s->conn, s->sbx_id, &json, err, sizeof err);
        lb_sbx_unlock(s);
        if (rc)
            snprintf(msg, sizeof msg, "%s", err);
    }
    cJSON *arr = json ? cJSON_Parse(json) : NULL;
    free(json);
    cJSON *o = rc ? NULL : cJSON_CreateObject();
    cJSON *out = o ? cJSON_AddArrayToObject(o, "processes") : NULL;
    int ok = out != NULL;
    const cJSON *p;
    cJSON_ArrayForEach(p, arr)
    {
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(p, "pid");
        const cJSON *tag = cJSON_GetObjectItemCaseSensitive(p, "tag");
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(p, "meta");
        cJSON *conf = cJSON_IsString(meta) ? cJSON_Parse(meta->valuestring) : NULL;
        if (!cJSON_IsObject(conf)) {
            cJSON_Delete(conf);
            conf = cJSON_CreateObject(); /* started by someone else than E2B: no config */
        }
        /* watchDir's watchers (e2b_watch.c) are not the user's commands */
        if (cJSON_IsString(tag) && !strcmp(tag->valuestring, LBSB_WATCH_ARGV0))
            continue;
        cJSON *it = ok && cJSON_IsNumber(pid) ? cJSON_CreateObject() : NULL;
        if (!it) {
            cJSON_Delete(conf);
            continue;
        }
        /* a terminal's tag is llmbox's mark (e2b_pty.h), not the client's */
        int own_tag = cJSON_IsString(tag) && strcmp(tag->valuestring, LBSB_PTY_ARGV0);
        ok = cJSON_AddItemToArray(out, it) && cJSON_AddItemToObject(it, "config", conf) &&
             cJSON_AddNumberToObject(it, "pid", pid->valuedouble) &&
             (!own_tag || cJSON_AddStringToObject(it, "tag", tag->valuestring));
    }
    cJSON_Delete(arr);
    if (ok)
        lb_e2b_unary(r, o);
    else if (rc)
        lb_e2b_unary_error(r, lb_rpc_code(rc), "%s", msg);
    else
        lb_e2b_unary_error(r, "internal", "Out of memory.");
    cJSON_Delete(o);
    cJSON_Delete(req);
}

static void lb_answer_rc(lb_req *r, int rc, const char *msg)
{
    if (rc) {
        lb_e2b_unary_error(r, lb_rpc_code(rc), "%s", msg);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    lb_e2b_unary(r, o);
    cJSON_Delete(o);
}

static void lb_e2b_signal(lb_req *r, lb_sbx *s)
{
    cJSON *req = lb_e2b_request(r, 0);
    if (!req)
        return;
    const cJSON *sg = cJSON_GetObjectItemCaseSensitive(req, "signal");
    /* the enum by name (the JSON codec's) or by number */
    int term = (cJSON_IsString(sg) && !strcmp(sg->valuestring, "SIGNAL_SIGTERM")) ||
               (cJSON_IsNumber(sg) && sg->valuedouble == 15);
    uint32_t pid = lb_selected(r, s, req, 0);
    if (pid) {
        char msg[1400] = "";
        int rc = lb_proc_kill(s, pid, term ? SIGTERM : SIGKILL, msg, sizeof msg);
        lb_answer_rc(r, rc, msg);
    }
    cJSON_Delete(req);
}

/* Queues len bytes (and eof) for pid's stdin and answers how it went. */
static void lb_input_send(lb_req *r, lb_sbx *s, uint32_t pid, const char *data, size_t len, int eof)
{
    char msg[1400] = "", err[512] = "";
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        lb_e2b_unary_error(r, "unavailable", "%s", msg);
        return;
    }
    int rc = lbsb_proc_input(s->conn, s->sbx_id, pid, data, len, eof, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc == LB_E_INVAL) /* started without stdin, or it is closed */
        lb_e2b_unary_error(r, "failed_precondition", "%s", err);
    else
        lb_answer_rc(r, rc, err);
}

/* SendInput and CloseStdin: sandboxd queues the bytes for the process's
 * stdin pipe (a process that does not read makes it refuse more, never
 * hang). */
static void lb_e2b_input(lb_req *r, lb_sbx *s, int close_it)
{
    char msg[1400] = "";
    char *data = NULL;
    size_t len = 0;
    cJSON *req = lb_e2b_request(r, 0);
    if (!req)
        return;
    uint32_t pid = lb_selected(r, s, req, 0);
    if (!pid)
        goto out;
    if (!close_it) {
        const cJSON *input = cJSON_GetObjectItemCaseSensitive(req, "input");
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(input, "stdin");
        const cJSON *tin = cJSON_GetObjectItemCaseSensitive(input, "pty");
        if (!in)
            in = tin;
        if (!cJSON_IsString(in) || lb_base64_decode(in->valuestring, strlen(in->valuestring), LB_E2B_CHUNK, &data, &len)) {
            lb_e2b_unary_error(r, "invalid_argument", "input.stdin or input.pty must be base64 bytes, at most %u of "
                               "them", (unsigned)LB_E2B_CHUNK);
            goto out;
        }
        /* a terminal's relay reads frames: input goes in one */
        int pty = lb_e2b_is_pty(s, pid, msg, sizeof msg);
        if (pty < 0) {
            lb_e2b_unary_error(r, "unavailable", "%s", msg);
            goto out;
        }
        if (!pty && in == tin) {
            lb_e2b_unary_error(r, "invalid_argument", "process %u is not on a pty: send input.stdin", pid);
            goto out;
        }
        char *frame = NULL;
        if (pty && lb_e2b_pty_frame('d', data, len, 0, 0, &frame, &len) != 0) {
            lb_e2b_unary_error(r, "internal", "Out of memory.");
            goto out;
        }
        if (pty) {
            free(data);
            data = frame;
        }
    }
    lb_input_send(r, s, pid, data, len, close_it);
out:
    free(data);
    cJSON_Delete(req);
}

/* Update: a pty's new size, as a frame for its relay (e2b_pty.h). */
static void lb_e2b_update(lb_req *r, lb_sbx *s)
{
    char msg[1400] = "";
    char *frame = NULL;
    size_t len = 0;
    int cols, rows;
    cJSON *req = lb_e2b_request(r, 0);
    if (!req)
        return;
    uint32_t pid = lb_selected(r, s, req, 0);
    if (!pid)
        goto out;
    if (lb_e2b_pty_size(cJSON_GetObjectItemCaseSensitive(req, "pty"), &cols, &rows) != 0) {
        lb_e2b_unary_error(r, "invalid_argument", "pty.size needs cols and rows, each 1 to %d", LB_E2B_PTY_DIM_MAX);
        goto out;
    }
    int pty = lb_e2b_is_pty(s, pid, msg, sizeof msg);
    if (pty <= 0) {
        lb_e2b_unary_error(r, pty < 0 ? "unavailable" : "invalid_argument", "%s",
                           pty < 0 ? msg : "the process is not on a pty");
        goto out;
    }
    if (lb_e2b_pty_frame('r', NULL, 0, cols, rows, &frame, &len) != 0)
        lb_e2b_unary_error(r, "internal", "Out of memory.");
    else
        lb_input_send(r, s, pid, frame, len, 0);
out:
    free(frame);
    cJSON_Delete(req);
}

void lb_e2b_process(lb_req *r, lb_sbx *s, const char *method)
{
    if (strcmp(r->method, "POST")) {
        lb_http_drain(r);
        lb_http_method_not_allowed(r, "POST");
        return;
    }
    if (!strcmp(method, "Start")) {
        lb_e2b_start_run(r, s);
    } else if (!strcmp(method, "Connect")) {
        lb_e2b_connect(r, s);
    } else if (!strcmp(method, "List")) {
        lb_e2b_list(r, s);
    } else if (!strcmp(method, "SendSignal")) {
        lb_e2b_signal(r, s);
    } else if (!strcmp(method, "SendInput")) {
        lb_e2b_input(r, s, 0);
    } else if (!strcmp(method, "CloseStdin")) {
        lb_e2b_input(r, s, 1);
    } else if (!strcmp(method, "Update")) {
        lb_e2b_update(r, s);
    } else if (!strcmp(method, "StreamInput")) {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "unimplemented", "process.Process/StreamInput (client streaming) is not supported by "
                           "llmbox: send input with SendInput (docs/E2B.md).");
    } else {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "unimplemented", "process.Process has no method %.64s.", method);
    }
}
