/* process.Process over the persistent shell's exec RPC (e2b_process.h). */
#include "web/e2b_process.h"

#include "web/e2b_connect.h"
#include "web/handlers_sandboxes.h"
#include "web/http.h"
#include "web/sandbox_spec.h"

#include "common/buf.h"
#include "common/config.h"
#include "common/status.h"
#include "common/util.h"
#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_E2B_PROCS_MAX 1024      /* running E2B processes in the whole web: one per sandbox at most */
#define LB_E2B_POLL_MS 100         /* how often output is forwarded while a command runs */
#define LB_E2B_KEEPALIVE_MS 10000  /* a keepalive event when nothing else was sent this long (SDK: 50 s) */
#define LB_E2B_ARGS_MAX 4096       /* arguments of one process */
#define LB_E2B_TAG_MAX 256

/* The processes Start is streaming now: what List shows and SendSignal
 * finds. pid: ours, unique for the web's life (the shell's exec has none
 * to give). */
typedef struct lb_e2b_proc {
    int used;
    char sbx[33];
    uint32_t pid;
    char tag[LB_E2B_TAG_MAX + 1];
    cJSON *config;                 /* {cmd, args, envs, cwd} as the client sent it */
    int kill;                      /* SendSignal asked for its end */
} lb_e2b_proc;

static pthread_mutex_t lb_procs_mu = PTHREAD_MUTEX_INITIALIZER;
static lb_e2b_proc lb_procs[LB_E2B_PROCS_MAX];
static uint32_t lb_next_pid = 1000;

/* Registers a process of s: its index, or -1 when the table is full. */
static int lb_proc_add(const char *sbx, const char *tag, cJSON *config, uint32_t *pid)
{
    int at = -1;
    pthread_mutex_lock(&lb_procs_mu);
    for (int i = 0; i < LB_E2B_PROCS_MAX; i++) {
        if (!lb_procs[i].used) {
            at = i;
            lb_e2b_proc *p = &lb_procs[i];
            memset(p, 0, sizeof *p);
            p->used = 1;
            memcpy(p->sbx, sbx, sizeof p->sbx);
            snprintf(p->tag, sizeof p->tag, "%s", tag ? tag : "");
            p->config = config;
            p->pid = *pid = lb_next_pid++;
            break;
        }
    }
    pthread_mutex_unlock(&lb_procs_mu);
    return at;
}

static void lb_proc_del(int i)
{
    pthread_mutex_lock(&lb_procs_mu);
    cJSON_Delete(lb_procs[i].config);
    memset(&lb_procs[i], 0, sizeof lb_procs[i]);
    pthread_mutex_unlock(&lb_procs_mu);
}

static int lb_proc_killed(int i)
{
    pthread_mutex_lock(&lb_procs_mu);
    int k = lb_procs[i].kill;
    pthread_mutex_unlock(&lb_procs_mu);
    return k;
}

/* The process a ProcessSelector ({pid} or {tag}) names in sandbox sbx:
 * its index with the lock held (caller unlocks), or -1 (unlocked). */
static int lb_proc_find_locked(const char *sbx, const cJSON *sel)
{
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(sel, "pid");
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(sel, "tag");
    pthread_mutex_lock(&lb_procs_mu);
    for (int i = 0; i < LB_E2B_PROCS_MAX; i++) {
        const lb_e2b_proc *p = &lb_procs[i];
        if (!p->used || strcmp(p->sbx, sbx))
            continue;
        if ((cJSON_IsNumber(pid) && pid->valuedouble == (double)p->pid) ||
            (cJSON_IsString(tag) && p->tag[0] && !strcmp(tag->valuestring, p->tag)))
            return i;
    }
    pthread_mutex_unlock(&lb_procs_mu);
    return -1;
}

/* ---- Start: the request ---- */

typedef struct lb_e2b_start {
    lb_buf line;                   /* the command: cmd and args, each single-quoted */
    lb_sbx_exec_req er;
    const char *tag;
    cJSON *config;                 /* a copy for List */
} lb_e2b_start;

/* Validates a StartRequest; 0, or a sentence in msg (invalid_argument). */
static int lb_start_parse(const cJSON *req, const lb_sbx *s, const lb_config *cfg, lb_e2b_start *st, char *msg,
                          size_t msgsz)
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
    if (cJSON_GetObjectItemCaseSensitive(req, "pty")) {
        snprintf(msg, msgsz, "a pty is not supported by llmbox's sandboxes (docs/E2B.md); run the command without one");
        return -1;
    }
    if (args && (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > LB_E2B_ARGS_MAX)) {
        snprintf(msg, msgsz, "process.args must be an array of at most %d strings", LB_E2B_ARGS_MAX);
        return -1;
    }
    if (tag && (!cJSON_IsString(tag) || strlen(tag->valuestring) > LB_E2B_TAG_MAX)) {
        snprintf(msg, msgsz, "tag must be a string of at most %d bytes", LB_E2B_TAG_MAX);
        return -1;
    }
    st->tag = tag ? tag->valuestring : NULL;
    if (envs && !cJSON_IsNull(envs)) {
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
        st->er.env = envs;
    }
    if (cwd && !cJSON_IsNull(cwd)) {
        if (!cJSON_IsString(cwd) || lb_sbx_path(cwd->valuestring, strlen(cwd->valuestring), s->workdir, 1, st->er.cwd,
                                                sizeof st->er.cwd) != LB_OK) {
            snprintf(msg, msgsz, "process.cwd must be a path in the sandbox without \"..\" or control characters");
            return -1;
        }
    } else {
        snprintf(st->er.cwd, sizeof st->er.cwd, "%s", s->workdir);
    }
    lb_buf_init(&st->line, LB_SBX_COMMAND_MAX);
    int rc = lb_sh_quote(&st->line, cmd->valuestring);
    const cJSON *a;
    cJSON_ArrayForEach(a, args)
    {
        if (!cJSON_IsString(a)) {
            snprintf(msg, msgsz, "process.args must hold strings only");
            return -1;
        }
        if (!rc)
            rc = lb_buf_appends(&st->line, " ");
        if (!rc)
            rc = lb_sh_quote(&st->line, a->valuestring);
    }
    if (rc) {
        snprintf(msg, msgsz, "the command with its arguments is over %u bytes", (unsigned)LB_SBX_COMMAND_MAX);
        return -1;
    }
    st->er.command = st->line.data;
    st->er.timeout_ms = cfg->sandbox_api_exec_max_s * 1000;
    st->config = cJSON_CreateObject();
    if (!st->config || !cJSON_AddStringToObject(st->config, "cmd", cmd->valuestring) ||
        !cJSON_AddItemToObject(st->config, "args", args ? cJSON_Duplicate(args, 1) : cJSON_CreateArray()) ||
        !cJSON_AddItemToObject(st->config, "envs", st->er.env ? cJSON_Duplicate(st->er.env, 1) : cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(st->config, "cwd", st->er.cwd)) {
        snprintf(msg, msgsz, "out of memory");
        return -1;
    }
    return 0;
}

/* The deadline the client set (Connect-Timeout-Ms), as a hard limit for
 * the exec: 0 when none or unusable. */
static int lb_connect_timeout_ms(lb_req *r)
{
    const char *h = lb_http_param(r, "HTTP_CONNECT_TIMEOUT_MS");
    long long v = 0;
    if (!h || lb_parse_ll(h, 1, 24LL * 3600 * 1000, &v) != LB_OK)
        return 0;
    return (int)v;
}

/* ---- Start: the events ---- */

static int lb_send_event(lb_req *r, const char *kind, cJSON *value)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *ev = o ? cJSON_AddObjectToObject(o, "event") : NULL;
    if (!ev || !value || !cJSON_AddItemToObject(ev, kind, value)) {
        if (!ev || !value || !cJSON_GetObjectItemCaseSensitive(ev, kind))
            cJSON_Delete(value);
        cJSON_Delete(o);
        return LB_E_NOMEM;
    }
    int rc = lb_e2b_stream_send(r, o);
    cJSON_Delete(o);
    return rc;
}

/* A data event with n bytes of one stream ("stdout", "stderr"), base64. */
static int lb_send_data(lb_req *r, const char *stream, const char *p, size_t n)
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
    return lb_send_event(r, "data", d);
}

static int lb_send_end(lb_req *r, int code, int exited, const char *status, const char *error)
{
    cJSON *e = cJSON_CreateObject();
    if (e && (!cJSON_AddNumberToObject(e, "exitCode", code) || !cJSON_AddBoolToObject(e, "exited", exited) ||
              !cJSON_AddStringToObject(e, "status", status) ||
              (error && !cJSON_AddStringToObject(e, "error", error)))) {
        cJSON_Delete(e);
        e = NULL;
    }
    return lb_send_event(r, "end", e);
}

static void lb_e2b_start_run(lb_req *r, lb_sbx *s)
{
    char msg[1200] = "", err[512] = "";
    lb_e2b_start st;
    memset(&st, 0, sizeof st);
    lb_buf line;
    lb_buf_init(&line, LB_SBX_LINE_MAX);
    lbsb_exec_out eo;
    memset(&eo, 0, sizeof eo);
    int slot = -1;
    cJSON *req = lb_e2b_request(r, 1);
    if (!req)
        goto out;
    if (lb_start_parse(req, s, r->cfg, &st, msg, sizeof msg) != 0) {
        lb_e2b_stream_end(r, "invalid_argument", "%s", msg);
        goto out;
    }
    int deadline = lb_connect_timeout_ms(r);
    if (deadline && deadline < st.er.timeout_ms)
        st.er.timeout_ms = deadline;
    if (lb_sbx_exec_line(&st.er, s->env, NULL, &line) != LB_OK) {
        lb_e2b_stream_end(r, "invalid_argument", "The command with its env and cwd is over %u bytes.",
                          (unsigned)LB_SBX_LINE_MAX);
        goto out;
    }
    uint32_t pid = 0;
    slot = lb_proc_add(s->id, st.tag, st.config, &pid);
    if (slot < 0) {
        lb_e2b_stream_end(r, "resource_exhausted", "This server streams %d processes already.", LB_E2B_PROCS_MAX);
        goto out;
    }
    st.config = NULL; /* the table's now */
    const char *cmd = line.data;
    int started = 0, gone = 0;
    int64_t last_sent = lb_mono_ms();
    for (;;) {
        char lost[400];
        if (lb_sbx_lock(s, lost, sizeof lost) != LB_OK) {
            lb_e2b_stream_end(r, "unavailable", "%s", lost);
            goto out;
        }
        lbsb_exec_opts eopts = {.timeout_ms = st.er.timeout_ms, .soft_timeout_ms = LB_E2B_POLL_MS};
        lbsb_exec_out_free(&eo);
        memset(&eo, 0, sizeof eo);
        int rc = lbsb_exec_ex(s->conn, s->sbx_id, cmd, &eopts, &eo, err, sizeof err);
        lb_sbx_unlock(s);
        if (rc == LB_E_BUSY && !started) {
            lb_e2b_stream_end(r, "failed_precondition",
                              "Another command is running in this sandbox: llmbox runs one command at a time per "
                              "sandbox for now (docs/E2B.md); wait for it or kill it first.");
            goto out;
        }
        if (rc == LB_E_CANCELLED || rc == LB_E_NOTFOUND) {
            lb_e2b_stream_end(r, "unavailable", "The sandbox %s was killed or expired while the command ran.", s->id);
            goto out;
        }
        if (rc) {
            int hs = lb_sbx_rpc_fail(s, rc, "run the command", err, msg, sizeof msg);
            lb_e2b_stream_end(r, hs == 503 ? "unavailable" : "internal", "%s", msg);
            goto out;
        }
        if (!started) {
            cJSON *sv = cJSON_CreateObject();
            if (sv && !cJSON_AddNumberToObject(sv, "pid", pid)) {
                cJSON_Delete(sv);
                sv = NULL;
            }
            gone = lb_send_event(r, "start", sv) != LB_OK;
            started = 1;
        }
        if (!gone && (eo.out_len || eo.err_len)) {
            gone = lb_send_data(r, "stdout", eo.out, eo.out_len) != LB_OK ||
                   lb_send_data(r, "stderr", eo.err, eo.err_len) != LB_OK;
            last_sent = lb_mono_ms();
        }
        if (eo.state != LLMBOX_EXEC_RUNNING)
            break;
        if (!gone && lb_mono_ms() - last_sent >= LB_E2B_KEEPALIVE_MS) {
            gone = lb_send_event(r, "keepalive", cJSON_CreateObject()) != LB_OK;
            last_sent = lb_mono_ms();
        }
        /* a client that left, or SendSignal: stop it (its end frees the shell) */
        cmd = (gone || lb_proc_killed(slot)) ? "C-c" : "";
    }
    if (gone)
        goto out;
    char status[64];
    switch (eo.state) {
    case LLMBOX_EXEC_EXITED:
        snprintf(status, sizeof status, "exit status %d", eo.exit_code);
        LB_IGNORE(lb_send_end(r, eo.exit_code, 1, status, eo.exit_code ? status : NULL)); /* the end follows */
        lb_e2b_stream_end(r, NULL, "%s", "");
        break;
    case LLMBOX_EXEC_INTERRUPTED:
        LB_IGNORE(lb_send_end(r, -1, 0, "signal: killed", "signal: killed")); /* the end follows */
        lb_e2b_stream_end(r, NULL, "%s", "");
        break;
    case LLMBOX_EXEC_OOM:
        LB_IGNORE(lb_send_end(r, 137, 1, "signal: killed", "the sandbox ran out of memory")); /* the end follows */
        lb_e2b_stream_end(r, NULL, "%s", "");
        break;
    case LLMBOX_EXEC_TIMEOUT:
        lb_e2b_stream_end(r, "deadline_exceeded", "the command ran for %d ms, its timeout, and was stopped",
                          st.er.timeout_ms);
        break;
    default:
        lb_e2b_stream_end(r, "unavailable", "the sandbox failed while the command ran");
        break;
    }
out:
    if (slot >= 0)
        lb_proc_del(slot);
    lbsb_exec_out_free(&eo);
    lb_buf_free(&line);
    lb_buf_free(&st.line);
    cJSON_Delete(st.config);
    cJSON_Delete(req);
}

/* ---- List, SendSignal ---- */

static void lb_e2b_list(lb_req *r, lb_sbx *s)
{
    cJSON *req = lb_e2b_request(r, 0);
    if (!req)
        return;
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "processes") : NULL;
    int ok = arr != NULL;
    pthread_mutex_lock(&lb_procs_mu);
    for (int i = 0; ok && i < LB_E2B_PROCS_MAX; i++) {
        const lb_e2b_proc *p = &lb_procs[i];
        if (!p->used || strcmp(p->sbx, s->id))
            continue;
        cJSON *it = cJSON_CreateObject();
        ok = it && cJSON_AddItemToArray(arr, it) && cJSON_AddItemToObject(it, "config", cJSON_Duplicate(p->config, 1)) &&
             cJSON_AddNumberToObject(it, "pid", p->pid) && (!p->tag[0] || cJSON_AddStringToObject(it, "tag", p->tag));
    }
    pthread_mutex_unlock(&lb_procs_mu);
    if (ok)
        lb_e2b_unary(r, o);
    else
        lb_e2b_unary_error(r, "internal", "Out of memory.");
    cJSON_Delete(o);
    cJSON_Delete(req);
}

static void lb_e2b_signal(lb_req *r, lb_sbx *s)
{
    cJSON *req = lb_e2b_request(r, 0);
    if (!req)
        return;
    const cJSON *sel = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(req, "process"), "selector");
    if (!sel) /* the JSON codec flattens the oneof: {process:{pid}} */
        sel = cJSON_GetObjectItemCaseSensitive(req, "process");
    int i = lb_proc_find_locked(s->id, sel);
    if (i < 0) {
        lb_e2b_unary_error(r, "not_found", "There is no running process with that pid or tag in this sandbox.");
    } else {
        /* SIGTERM and SIGKILL alike: the shell's stop (SIGINT, then SIGKILL) */
        lb_procs[i].kill = 1;
        pthread_mutex_unlock(&lb_procs_mu);
        cJSON *o = cJSON_CreateObject();
        lb_e2b_unary(r, o);
        cJSON_Delete(o);
    }
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
    } else if (!strcmp(method, "List")) {
        lb_e2b_list(r, s);
    } else if (!strcmp(method, "SendSignal")) {
        lb_e2b_signal(r, s);
    } else if (!strcmp(method, "Connect")) {
        lb_http_drain(r);
        lb_e2b_stream_end(r, "unimplemented",
                          "Connecting to a running process is not supported by llmbox yet: its output goes to the "
                          "stream of the Start that ran it (docs/E2B.md).");
    } else if (!strcmp(method, "SendInput") || !strcmp(method, "CloseStdin") || !strcmp(method, "StreamInput") ||
               !strcmp(method, "Update")) {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "unimplemented",
                           "process.Process/%s is not supported by llmbox yet: commands run with stdin from "
                           "/dev/null and without a pty (docs/E2B.md).", method);
    } else {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "unimplemented", "process.Process has no method %.64s.", method);
    }
}
