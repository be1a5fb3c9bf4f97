/* Tool hosts of API sandboxes (tool_hosts.h). */
#include "sbxapi/tool_hosts.h"

#include "common/config.h"
#include "common/status.h"
#include "sandbox/rpc.h"
#include "sbxapi/sandbox_registry.h"
#include "web/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct lb_tool_host {
    pid_t pid;
    int fd;                     /* our end of its socketpair */
};

void lb_tool_host_stop(lb_tool_host *h)
{
    if (!h)
        return;
    close(h->fd);
    kill(h->pid, SIGKILL); /* no state worth saving: the sandbox is going */
    while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    free(h);
}

static lb_tool_host *host_start(const lb_config *cfg, char *err, size_t errsz)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(err, errsz, "socketpair: %s", strerror(errno));
        return NULL;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        close(sv[0]);
        close(sv[1]);
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    /* stderr stays the web's: the host's few lines (a plugin refused, a
     * tool that crashed) land in the web's log */
    int ok = !posix_spawn_file_actions_adddup2(&fa, sv[1], 0) &&
             !posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) &&
             !posix_spawn_file_actions_addclosefrom_np(&fa, 3) && lb_spawn_attr(&at, 1) == LB_OK;
    pid_t pid = 0;
    int e = 0;
    if (ok) {
        char *argv[] = {(char *)cfg->self_exe, "agent", "--tool-host", NULL};
        e = posix_spawn(&pid, cfg->self_exe, &fa, &at, argv, environ);
        posix_spawnattr_destroy(&at);
    }
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    lb_tool_host *h = ok && !e ? calloc(1, sizeof *h) : NULL;
    if (!h) {
        snprintf(err, errsz, "cannot start `llmbox agent --tool-host`: %s", e ? strerror(e) : "out of memory");
        close(sv[0]);
        if (ok && !e) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return NULL;
    }
    h->pid = pid;
    h->fd = sv[0];
    return h;
}

/* Why the host ended, for the 502 (what: its own words, or ours). Kills
 * it first if it still runs. */
static void host_gone(lb_tool_host *h, const char *what, char *err, size_t errsz)
{
    close(h->fd);
    int st = 0;
    pid_t r;
    /* it closed its socket or broke the protocol; a little grace to exit on its own */
    for (int i = 0; i < 20 && (r = waitpid(h->pid, &st, WNOHANG)) == 0; i++)
        usleep(10000);
    if (r == 0) {
        kill(h->pid, SIGKILL);
        while (waitpid(h->pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    if (WIFSIGNALED(st))
        snprintf(err, errsz, "%s (the tool host was killed by signal %d)", what, WTERMSIG(st));
    else
        snprintf(err, errsz, "%s (the tool host's exit status: %d)", what, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    free(h);
}

static int send_json(int fd, cJSON *o, volatile int *cancel)
{
    char *t = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!t)
        return LB_E_NOMEM;
    int rc = lbsd_frame_send(fd, t, strlen(t), cancel);
    free(t);
    return rc;
}

static cJSON *sb_error(int rc, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    /* a failure of the web's own connection is the sandbox's, for the plugin */
    const char *code = rc == LB_E_UNAVAILABLE || rc == LB_E_PROTO || rc == LB_E_CANCELLED ? "sandbox"
                                                                                          : lbsd_status_code(rc);
    if (o && (!cJSON_AddFalseToObject(o, "ok") || !cJSON_AddStringToObject(o, "error", code) ||
              !cJSON_AddStringToObject(o, "message", msg && *msg ? msg : lb_strerror(rc)))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static const char *type_name(int t)
{
    return t == 1 ? "file" : t == 2 ? "dir" : t == 3 ? "other" : "missing";
}

/* Runs one validated request on the sandbox's connection: the answer
 * sandboxd would have given, and *data / *dlen for a read. */
static cJSON *run_op(lb_sbx *s, const lbsd_req *q, const char *in, size_t inlen, char **data, size_t *dlen)
{
    char path[sizeof q->path + 2], err[512] = "";
    snprintf(path, sizeof path, "/%s", q->path);
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddTrueToObject(o, "ok")) {
        cJSON_Delete(o);
        return NULL;
    }
    int rc = LB_OK;
    switch (q->op) {
    case LBSD_OP_EXEC: {
        lbsb_exec_out eo;
        lbsb_exec_opts opts = {.timeout_ms = q->timeout_ms, .soft_timeout_ms = q->soft_timeout_ms};
        rc = lbsb_exec_ex(s->conn, s->sbx_id, q->command, &opts, &eo, err, sizeof err);
        if (rc == LB_OK) {
            cJSON_AddStringToObject(o, "state", lbsd_state_name(eo.state));
            cJSON_AddNumberToObject(o, "exit_code", eo.exit_code);
            cJSON_AddStringToObject(o, "stdout", eo.out ? eo.out : "");
            cJSON_AddStringToObject(o, "stderr", eo.err ? eo.err : "");
            cJSON_AddBoolToObject(o, "truncated", eo.truncated);
            cJSON_AddNumberToObject(o, "duration_ms", (double)eo.duration_ms);
            if (eo.timeout_ms)
                cJSON_AddNumberToObject(o, "timeout_ms", eo.timeout_ms);
            if (eo.shell_restarted)
                cJSON_AddTrueToObject(o, "shell_restarted");
        }
        lbsb_exec_out_free(&eo);
        break;
    }
    case LBSD_OP_READ: {
        uint64_t fsize = 0;
        if (q->offset >= 0)
            rc = lbsb_read_range(s->conn, s->sbx_id, path, (uint64_t)q->offset, q->max, data, dlen, &fsize, err,
                                 sizeof err);
        else
            rc = lbsb_read(s->conn, s->sbx_id, path, q->max, data, dlen, err, sizeof err);
        if (rc == LB_OK) {
            cJSON_AddNumberToObject(o, "size", (double)*dlen);
            if (q->offset >= 0)
                cJSON_AddNumberToObject(o, "file_size", (double)fsize);
            cJSON_AddTrueToObject(o, "data");
        }
        break;
    }
    case LBSD_OP_WRITE:
        rc = lbsb_write(s->conn, s->sbx_id, path, in ? in : "", inlen, q->excl, err, sizeof err);
        break;
    case LBSD_OP_LIST: {
        lbsb_entry *ents = NULL;
        size_t n = 0;
        rc = lbsb_list(s->conn, s->sbx_id, path, q->max_depth, q->max_entries, &ents, &n, err, sizeof err);
        cJSON *arr = rc == LB_OK ? cJSON_AddArrayToObject(o, "entries") : NULL;
        for (size_t i = 0; arr && i < n; i++) {
            cJSON *e = cJSON_CreateObject();
            if (!e)
                break;
            cJSON_AddStringToObject(e, "path", ents[i].path ? ents[i].path : "");
            cJSON_AddStringToObject(e, "type", type_name(ents[i].type));
            cJSON_AddNumberToObject(e, "size", (double)ents[i].size);
            cJSON_AddItemToArray(arr, e);
        }
        lbsb_entries_free(ents, n);
        break;
    }
    case LBSD_OP_STAT: {
        int type = 0;
        uint64_t size = 0;
        rc = lbsb_stat(s->conn, s->sbx_id, path, &type, &size, err, sizeof err);
        if (rc == LB_OK) {
            cJSON_AddStringToObject(o, "type", type_name(type));
            cJSON_AddNumberToObject(o, "size", (double)size);
        }
        break;
    }
    default:
        /* a plugin has these five; create, destroy, adopt and the rest are the web's */
        rc = LB_E_INVAL;
        snprintf(err, sizeof err, "a tool host may only exec, read, write, list and stat");
        break;
    }
    if (rc == LB_OK)
        return o;
    cJSON_Delete(o);
    free(*data);
    *data = NULL;
    *dlen = 0;
    if (rc == LB_E_UNAVAILABLE || rc == LB_E_PROTO) {
        char why[300];
        snprintf(why, sizeof why, "%.290s", err[0] ? err : lb_strerror(rc));
        lb_sbx_set_error(s, why);
    }
    return sb_error(rc, err);
}

/* One request frame from the host (and its data frame), answered. LB_OK,
 * or a failure of the socket or the protocol (the host is then done). */
static int relay(lb_sbx *s, int fd, const char *frame, size_t len, cJSON *j)
{
    char *in = NULL, *data = NULL;
    size_t inlen = 0, dlen = 0;
    int rc = LB_OK;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "data")) &&
        (rc = lbsd_frame_recv(fd, LB_TOOL_HOST_FRAME_MAX, &in, &inlen, &s->cancel)) != LB_OK)
        return rc;
    lbsd_req q;
    char msg[300];
    cJSON *ans;
    /* sandboxd's own parser and caps; the id is ours, whatever the host wrote */
    if (lbsd_req_parse(frame, len, &q, msg, sizeof msg) != LB_OK)
        ans = sb_error(LB_E_INVAL, msg);
    else
        ans = run_op(s, &q, in, inlen, &data, &dlen);
    lbsd_req_free(&q);
    free(in);
    if (!ans) {
        free(data);
        return LB_E_NOMEM;
    }
    rc = send_json(fd, ans, &s->cancel);
    if (rc == LB_OK && data)
        rc = lbsd_frame_send(fd, data, dlen, &s->cancel);
    free(data);
    return rc;
}

int lb_tool_host_call(lb_sbx *s, const lb_config *cfg, const char *tool, const char *args, size_t args_len,
                      cJSON **reply, int *started, char *err, size_t errsz)
{
    *reply = NULL;
    *started = 0;
    if (!s->tool_host) {
        s->tool_host = host_start(cfg, err, errsz);
        if (!s->tool_host)
            return LB_E_INTERNAL;
        *started = 1;
    }
    lb_tool_host *h = s->tool_host;
    /* the arguments exactly as sent (the host validates them as the agent does) */
    char *z = strndup(args ? args : "", args ? args_len : 0);
    cJSON *call = z ? cJSON_CreateObject() : NULL;
    if (!call || !cJSON_AddStringToObject(call, "tool", tool) || !cJSON_AddStringToObject(call, "arguments", z)) {
        free(z);
        cJSON_Delete(call);
        snprintf(err, errsz, "out of memory");
        return LB_E_INTERNAL;
    }
    free(z);
    int rc = send_json(h->fd, call, &s->cancel);
    while (rc == LB_OK) {
        char *frame = NULL;
        size_t len = 0;
        rc = lbsd_frame_recv(h->fd, LB_TOOL_HOST_FRAME_MAX, &frame, &len, &s->cancel);
        if (rc != LB_OK)
            break;
        cJSON *j = cJSON_ParseWithLength(frame, len);
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "op"))) {
            rc = relay(s, h->fd, frame, len, j);
            cJSON_Delete(j);
            free(frame);
            continue;
        }
        free(frame);
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "reply");
        const cJSON *obs = cJSON_GetObjectItemCaseSensitive(j, "observation");
        if (!cJSON_IsString(kind) || (obs && (!cJSON_IsString(obs) || strlen(obs->valuestring) > LB_TOOL_OBS_MAX))) {
            cJSON_Delete(j);
            rc = LB_E_PROTO;
            break;
        }
        if (!strcmp(kind->valuestring, "crashed")) {
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
            char why[400];
            snprintf(why, sizeof why, "%.380s", cJSON_IsString(m) ? m->valuestring : "a tool crashed");
            cJSON_Delete(j);
            s->tool_host = NULL;
            host_gone(h, why, err, errsz);
            return LB_E_UNAVAILABLE;
        }
        *reply = j;
        return LB_OK;
    }
    s->tool_host = NULL;
    if (rc == LB_E_CANCELLED) {
        lb_tool_host_stop(h);
        return LB_E_CANCELLED;
    }
    host_gone(h, rc == LB_E_PROTO    ? "the tool host broke the protocol"
                 : rc == LB_E_NOMEM ? "the tool host was stopped (the web ran out of memory)"
                                    : "the tool host died during the call",
              err, errsz);
    return LB_E_UNAVAILABLE;
}
