/* The sandbox client library (include/llmbox/sandbox.h): blocking calls
 * over the unix socket to sandboxd. One request at a time per connection.
 * Not thread-safe per connection; use one connection per thread. */
#include "llmbox/sandbox.h"
#include "sandbox/rpc.h"

#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A JSON response is at most a few times the exec output caps; anything
 * larger is a broken or hostile peer. */
#define LBSB_RESP_MAX (48u << 20)

struct lbsb_conn {
    int fd;
    volatile int *cancel;
    /* Set after a transport failure or a cancel in the middle of a frame:
     * the stream is out of step, so later calls must fail instead of
     * reading someone else's answer. */
    int broken;
    /* Responses still owed to us by calls that were cancelled after their
     * request went out whole: read and dropped before the next call. */
    int discard;
    int64_t deadline_ms;  /* lbsb_set_deadline: no wait goes past it (0: none) */
    int watch_fd;         /* lbsb_set_watch_fd: its hangup ends a wait (-1: none) */
    int op_ms;            /* the call being made waits at most this long (0: no bound of its own) */
};

static void lbsb_err(char *errbuf, size_t errsz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void lbsb_err(char *errbuf, size_t errsz, const char *fmt, ...)
{
    if (!errbuf || !errsz)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, errsz, fmt, ap);
    va_end(ap);
}

int lbsb_connect(const char *socket_path, volatile int *cancel_flag, lbsb_conn **out,
                 char *errbuf, size_t errsz)
{
    *out = NULL;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    /* every caller passes its configuration's sandboxd_socket */
    if (!socket_path || !socket_path[0] || strlen(socket_path) >= sizeof sa.sun_path) {
        lbsb_err(errbuf, errsz, "sandboxd socket path is empty or too long");
        return LB_E_INVAL;
    }
    memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
    lbsb_conn *c = calloc(1, sizeof *c);
    if (!c)
        return LB_E_NOMEM;
    c->cancel = cancel_flag;
    c->watch_fd = -1;
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        lbsb_err(errbuf, errsz, "socket: %s", strerror(errno));
        free(c);
        return LB_E_UNAVAILABLE;
    }
    for (;;) {
        if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            break;
        if (errno == EINTR && !(cancel_flag && *cancel_flag))
            continue;
        int e = errno;
        int rc = (e == EINTR) ? LB_E_CANCELLED : LB_E_UNAVAILABLE;
        lbsb_err(errbuf, errsz, "cannot connect to sandboxd at %s: %s (is `llmbox sandboxd` running?)",
                 socket_path, strerror(e));
        close(c->fd);
        free(c);
        return rc;
    }
    *out = c;
    return LB_OK;
}

int lbsb_conn_from_fd(int fd, volatile int *cancel_flag, lbsb_conn **out)
{
    *out = NULL;
    if (fd < 0)
        return LB_E_INVAL;
    lbsb_conn *c = calloc(1, sizeof *c);
    if (!c)
        return LB_E_NOMEM;
    c->fd = fd;
    c->cancel = cancel_flag;
    c->watch_fd = -1;
    *out = c;
    return LB_OK;
}

void lbsb_close(lbsb_conn *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

void lbsb_set_deadline(lbsb_conn *c, int64_t deadline_ms)
{
    if (c)
        c->deadline_ms = deadline_ms > 0 ? deadline_ms : 0;
}

void lbsb_set_watch_fd(lbsb_conn *c, int fd)
{
    if (c)
        c->watch_fd = fd;
}

/* When the call starting now must have its answer (0: no bound). */
static int64_t lbsb_until(const lbsb_conn *c)
{
    int64_t until = c->op_ms > 0 ? lb_mono_ms() + c->op_ms : 0;
    if (c->deadline_ms && (!until || c->deadline_ms < until))
        until = c->deadline_ms;
    return until;
}

/* Waits until an answer starts to arrive: LB_OK, LB_E_TIMEOUT (past
 * until; 0: never), LB_E_CANCELLED (the cancel flag, or a hangup on the
 * watched descriptor) or LB_E_UNAVAILABLE. Short ticks, so that a cancel
 * flag set by a handler installed with SA_RESTART is seen. */
static int lbsb_wait_answer(lbsb_conn *c, int64_t until)
{
    for (;;) {
        if (c->cancel && *c->cancel)
            return LB_E_CANCELLED;
        int64_t now = lb_mono_ms();
        if (until && now >= until)
            return LB_E_TIMEOUT;
        int tick = until && until - now < 200 ? (int)(until - now) : 200;
        struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = c->watch_fd, .events = POLLRDHUP}};
        int r = poll(p, c->watch_fd >= 0 ? 2 : 1, tick);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || (p[0].revents & POLLNVAL))
            return LB_E_UNAVAILABLE;
        if (p[0].revents)
            return LB_OK; /* POLLHUP/POLLERR: the read says what happened */
        if (c->watch_fd >= 0 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
            return LB_E_CANCELLED;
    }
}

/* Reads and drops one response (and its data frame). */
static int lbsb_drop_response(lbsb_conn *c, int64_t until)
{
    char *frame = NULL;
    size_t flen = 0;
    int rc = lbsb_wait_answer(c, until);
    if (rc == LB_OK) /* started: read it whole, a cancel now would split it */
        rc = lbsd_frame_recv(c->fd, LBSB_RESP_MAX, &frame, &flen, NULL);
    if (rc)
        return rc;
    cJSON *r = cJSON_ParseWithLength(frame, flen);
    free(frame);
    int has_data = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "data"));
    cJSON_Delete(r);
    if (has_data) {
        rc = lbsd_frame_recv(c->fd, LLMBOX_RPC_MAX_FRAME, &frame, &flen, NULL);
        free(frame);
    }
    return rc;
}

/* A call was cancelled while waiting for its response (the request went
 * out whole). For an exec, ask sandboxd to kill the command, which makes
 * the exec answer soon; either way remember the answers to drop, so the
 * connection stays usable (to collect outputs after Stop, say). */
static void lbsb_after_cancel(lbsb_conn *c, const cJSON *req)
{
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(req, "op");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
    c->discard++;
    if (!cJSON_IsString(op) || strcmp(op->valuestring, "exec") != 0 || !cJSON_IsString(id))
        return;
    char msg[128];
    int n = snprintf(msg, sizeof msg, "{\"op\":\"interrupt\",\"id\":\"%s\"}", id->valuestring);
    if (n <= 0 || (size_t)n >= sizeof msg || !lb_id_valid(id->valuestring)) {
        c->broken = 1;
        return;
    }
    /* a tiny frame into an idle socket buffer: no cancel flag here, it is
     * set right now and would stop this very send */
    if (lbsd_frame_send(c->fd, msg, (size_t)n, NULL) != LB_OK) {
        c->broken = 1;
        return;
    }
    c->discard++;
}

/* One round trip. req is consumed (deleted). On LB_OK *resp is the parsed
 * {"ok":true,...} object (caller deletes); when rdata is non-NULL and the
 * response announces a data frame, it is read into *rdata (<= rmax bytes). */
static int lbsb_call(lbsb_conn *c, cJSON *req, const void *data, size_t dlen, cJSON **resp,
                     char **rdata, size_t *rlen, size_t rmax, char *errbuf, size_t errsz)
{
    int rc;
    char *text = NULL, *frame = NULL;
    size_t flen = 0;
    cJSON *r = NULL;
    *resp = NULL;
    if (rdata) {
        *rdata = NULL;
        *rlen = 0;
    }
    if (!c) {
        cJSON_Delete(req);
        lbsb_err(errbuf, errsz, "no sandboxd connection");
        return LB_E_INVAL;
    }
    if (c->broken) {
        cJSON_Delete(req);
        lbsb_err(errbuf, errsz, "sandboxd connection is broken by an earlier failure");
        return LB_E_UNAVAILABLE;
    }
    if (!req) {
        lbsb_err(errbuf, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    int64_t until = lbsb_until(c);
    /* answers owed by earlier cancelled calls come first */
    while (c->discard > 0) {
        rc = lbsb_drop_response(c, until);
        if (rc == LB_E_CANCELLED || rc == LB_E_TIMEOUT) {
            lbsb_err(errbuf, errsz, rc == LB_E_CANCELLED ? "cancelled"
                                    : "sandboxd has not yet answered an earlier call on this connection");
            goto out; /* still owed; try again next call */
        }
        if (rc) {
            c->broken = 1;
            lbsb_err(errbuf, errsz, "lost the connection to sandboxd");
            goto out;
        }
        c->discard--;
    }
    if (c->cancel && *c->cancel) {
        /* nothing sent yet: the stream stays in step */
        lbsb_err(errbuf, errsz, "cancelled");
        rc = LB_E_CANCELLED;
        goto out;
    }
    if (data && !cJSON_AddTrueToObject(req, "data")) {
        rc = LB_E_NOMEM;
        goto out;
    }
    text = cJSON_PrintUnformatted(req);
    if (!text) {
        rc = LB_E_NOMEM;
        goto out;
    }
    size_t tlen = strlen(text);
    if (tlen > LLMBOX_RPC_MAX_FRAME || dlen > LLMBOX_RPC_MAX_FRAME) {
        lbsb_err(errbuf, errsz, "request is larger than the %u-byte frame limit",
                 (unsigned)LLMBOX_RPC_MAX_FRAME);
        rc = LB_E_TOOBIG;
        goto out;
    }
    /* once the first byte is out, the request must go out whole: sending
     * ignores the cancel flag (sandboxd reads fast; a dead peer fails) */
    rc = lbsd_frame_send(c->fd, text, tlen, NULL);
    if (rc == LB_OK && data)
        rc = lbsd_frame_send(c->fd, data, dlen, NULL);
    if (rc == LB_OK) {
        rc = lbsb_wait_answer(c, until);
        if (rc == LB_E_CANCELLED || rc == LB_E_TIMEOUT) {
            /* the answer is owed: the next call drops it */
            lbsb_after_cancel(c, req);
            const cJSON *op = cJSON_GetObjectItemCaseSensitive(req, "op");
            if (rc == LB_E_CANCELLED)
                lbsb_err(errbuf, errsz, "cancelled");
            else if (c->op_ms > 0)
                lbsb_err(errbuf, errsz, "sandboxd did not answer %s within %d ms (the sandbox is stalled or "
                         "busy): try again", cJSON_IsString(op) ? op->valuestring : "the call", c->op_ms);
            else
                lbsb_err(errbuf, errsz, "sandboxd did not answer %s before the caller's deadline",
                         cJSON_IsString(op) ? op->valuestring : "the call");
            goto out;
        }
    }
    if (rc == LB_OK)
        rc = lbsd_frame_recv(c->fd, LBSB_RESP_MAX, &frame, &flen, NULL);
    if (rc != LB_OK) {
        c->broken = 1;
        if (rc == LB_E_CANCELLED)
            lbsb_err(errbuf, errsz, "cancelled");
        else if (rc == LB_E_PROTO)
            lbsb_err(errbuf, errsz, "sandboxd sent an oversized frame");
        else
            lbsb_err(errbuf, errsz, "lost the connection to sandboxd");
        goto out;
    }
    r = cJSON_ParseWithLength(frame, flen);
    if (!cJSON_IsObject(r)) {
        c->broken = 1;
        lbsb_err(errbuf, errsz, "sandboxd sent a response that is not a JSON object");
        rc = LB_E_PROTO;
        goto out;
    }
    int has_data = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "data"));
    if (has_data) {
        char *d = NULL;
        size_t dl = 0;
        rc = lbsd_frame_recv(c->fd, rmax, &d, &dl, NULL);
        if (rc != LB_OK) {
            c->broken = 1;
            lbsb_err(errbuf, errsz, rc == LB_E_CANCELLED ? "cancelled"
                                    : rc == LB_E_PROTO   ? "sandboxd sent more data than asked for"
                                                         : "lost the connection to sandboxd");
            goto out;
        }
        if (rdata) {
            *rdata = d;
            *rlen = dl;
        } else {
            free(d);
        }
    }
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(r, "error");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "message");
        rc = lbsd_code_status(cJSON_IsString(code) ? code->valuestring : NULL);
        lbsb_err(errbuf, errsz, "%s", cJSON_IsString(m) ? m->valuestring : lb_strerror(rc));
        if (rdata) {
            free(*rdata);
            *rdata = NULL;
            *rlen = 0;
        }
        goto out;
    }
    *resp = r;
    r = NULL;
    rc = LB_OK;
out:
    if (rc == LB_E_NOMEM)
        lbsb_err(errbuf, errsz, "out of memory");
    cJSON_Delete(req);
    cJSON_Delete(r);
    free(text);
    free(frame);
    return rc;
}

/* lbsb_call for a process op or port_connect: its answer is waited for
 * at most LBSB_PROC_CALL_MS (sandboxd answers a start within its
 * spawner's deadline, LBSD_SPAWNER_DEADLINE_MS: a third of it). */
static int lbsb_call_bounded(lbsb_conn *c, cJSON *req, const void *data, size_t dlen, cJSON **resp, char *errbuf,
                             size_t errsz)
{
    if (!c) {
        cJSON_Delete(req);
        *resp = NULL;
        lbsb_err(errbuf, errsz, "no sandboxd connection");
        return LB_E_INVAL;
    }
    c->op_ms = LBSB_PROC_CALL_MS;
    int rc = lbsb_call(c, req, data, dlen, resp, NULL, NULL, 0, errbuf, errsz);
    c->op_ms = 0;
    return rc;
}

static cJSON *lbsb_req(const char *op, const char *id)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (!cJSON_AddStringToObject(o, "op", op) || (id && !cJSON_AddStringToObject(o, "id", id))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int lbsb_check_id(const char *id, char *errbuf, size_t errsz)
{
    if (lb_id_valid(id))
        return LB_OK;
    lbsb_err(errbuf, errsz, "invalid sandbox id");
    return LB_E_INVAL;
}

static int lbsb_check_path(const char *path, char *errbuf, size_t errsz)
{
    if (path && path[0] == '/')
        return LB_OK;
    lbsb_err(errbuf, errsz, "sandbox paths must be absolute");
    return LB_E_INVAL;
}

int lbsb_create(lbsb_conn *c, const lbsb_spec *spec, char *id_out, size_t idsz,
                char *errbuf, size_t errsz)
{
    return lbsb_create_leased(c, spec, id_out, idsz, NULL, 0, errbuf, errsz);
}

int lbsb_create_leased(lbsb_conn *c, const lbsb_spec *spec, char *id_out, size_t idsz, char *key_out, size_t keysz,
                       char *errbuf, size_t errsz)
{
    if (key_out && keysz)
        key_out[0] = '\0';
    if (!id_out || idsz < LB_ID_HEX_LEN + 1) {
        lbsb_err(errbuf, errsz, "id buffer too small");
        return LB_E_INVAL;
    }
    id_out[0] = '\0';
    cJSON *req = lbsb_req("create", NULL);
    if (req && spec) {
        if ((spec->image && !cJSON_AddStringToObject(req, "image", spec->image)) ||
            (spec->memory_mib > 0 && !cJSON_AddNumberToObject(req, "memory_mib", spec->memory_mib)) ||
            (spec->pids > 0 && !cJSON_AddNumberToObject(req, "pids", spec->pids)) ||
            (spec->input_dir && !cJSON_AddStringToObject(req, "input_dir", spec->input_dir)) ||
            (spec->cpu_milli > 0 && !cJSON_AddNumberToObject(req, "cpu_milli", spec->cpu_milli)) ||
            (spec->disk_mib > 0 && !cJSON_AddNumberToObject(req, "disk_mib", spec->disk_mib)) ||
            /* a policy of rules ({"allow": ...}) goes through the gateway */
            (spec->network && !cJSON_AddStringToObject(req, "network", spec->network[0] == '{' ? "egress" :
                                                       spec->network)) ||
            (spec->network && spec->network[0] == '{' && !cJSON_AddStringToObject(req, "policy", spec->network)) ||
            (spec->network && spec->network[0] == '{' && spec->net_values &&
             !cJSON_AddStringToObject(req, "net_values", spec->net_values)) ||
            (spec->ttl_s > 0 && !cJSON_AddNumberToObject(req, "ttl_s", spec->ttl_s)) ||
            (spec->lease_s > 0 && !cJSON_AddNumberToObject(req, "lease_s", spec->lease_s)) ||
            (spec->restore && !cJSON_AddStringToObject(req, "restore", spec->restore))) {
            cJSON_Delete(req);
            req = NULL;
        }
    }
    cJSON *resp;
    int rc = lbsb_call(c, req, NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    if (rc)
        return rc;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(resp, "id");
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(resp, "lease_key");
    if (!cJSON_IsString(id) || !lb_id_valid(id->valuestring)) {
        lbsb_err(errbuf, errsz, "sandboxd returned no valid id");
        rc = LB_E_PROTO;
    } else if (key_out && (keysz < LB_ID_HEX_LEN + 1 || !cJSON_IsString(key) || !lb_id_valid(key->valuestring))) {
        lbsb_err(errbuf, errsz, "sandboxd returned no lease key (asked for a lease?)");
        rc = LB_E_PROTO;
    } else {
        memcpy(id_out, id->valuestring, LB_ID_HEX_LEN + 1);
        if (key_out)
            memcpy(key_out, key->valuestring, LB_ID_HEX_LEN + 1);
    }
    cJSON_Delete(resp);
    return rc;
}

/* Copies a JSON string member into a malloc'd buffer ("" if absent). */
static char *lbsb_dup_str(const cJSON *o, const char *key, size_t *len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    const char *s = cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n + 1);
        *len = n;
    }
    return d;
}

int lbsb_exec(lbsb_conn *c, const char *id, const char *cmd, int timeout_ms,
              lbsb_exec_out *out, char *errbuf, size_t errsz)
{
    lbsb_exec_opts o = {.timeout_ms = timeout_ms, .soft_timeout_ms = 0};
    return lbsb_exec_ex(c, id, cmd, &o, out, errbuf, errsz);
}

int lbsb_exec_ex(lbsb_conn *c, const char *id, const char *cmd, const lbsb_exec_opts *opts,
                 lbsb_exec_out *out, char *errbuf, size_t errsz)
{
    memset(out, 0, sizeof *out);
    out->state = LLMBOX_EXEC_ERROR;
    out->exit_code = -1;
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    if (!cmd) {
        lbsb_err(errbuf, errsz, "no command");
        return LB_E_INVAL;
    }
    int timeout_ms = opts ? opts->timeout_ms : 0, soft_ms = opts ? opts->soft_timeout_ms : 0;
    if (timeout_ms > LBSD_TIMEOUT_MAX_MS)
        timeout_ms = LBSD_TIMEOUT_MAX_MS;
    if (soft_ms > LBSD_TIMEOUT_MAX_MS)
        soft_ms = LBSD_TIMEOUT_MAX_MS;
    cJSON *req = lbsb_req("exec", id);
    if (req && (!cJSON_AddStringToObject(req, "command", cmd) ||
                (timeout_ms > 0 && !cJSON_AddNumberToObject(req, "timeout_ms", timeout_ms)) ||
                (soft_ms > 0 && !cJSON_AddNumberToObject(req, "soft_timeout_ms", soft_ms)))) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *resp;
    rc = lbsb_call(c, req, NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    if (rc)
        return rc;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(resp, "state");
    int state = lbsd_state_parse(cJSON_IsString(st) ? st->valuestring : NULL);
    const cJSON *ec = cJSON_GetObjectItemCaseSensitive(resp, "exit_code");
    const cJSON *du = cJSON_GetObjectItemCaseSensitive(resp, "duration_ms");
    out->state = state < 0 ? LLMBOX_EXEC_ERROR : state;
    out->exit_code = cJSON_IsNumber(ec) ? ec->valueint : -1;
    out->truncated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp, "truncated"));
    out->duration_ms = cJSON_IsNumber(du) ? (int64_t)du->valuedouble : 0;
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(resp, "timeout_ms");
    out->timeout_ms = cJSON_IsNumber(tm) && tm->valuedouble > 0 &&
                              tm->valuedouble <= LBSD_TIMEOUT_MAX_MS
                          ? (int)tm->valuedouble
                          : 0;
    out->shell_restarted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp, "shell_restarted"));
    out->out = lbsb_dup_str(resp, "stdout", &out->out_len);
    out->err = lbsb_dup_str(resp, "stderr", &out->err_len);
    cJSON_Delete(resp);
    if (!out->out || !out->err) {
        lbsb_exec_out_free(out);
        lbsb_err(errbuf, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    return LB_OK;
}

void lbsb_exec_out_free(lbsb_exec_out *o)
{
    if (!o)
        return;
    free(o->out);
    free(o->err);
    o->out = o->err = NULL;
    o->out_len = o->err_len = 0;
}

/* E2B's envd's ways on a file request: "user" (who owns what a write or
 * fs_change makes; the call stays root's: owner_only) and "in_root" (links
 * among the path's folders followed inside the sandbox's root, as envd,
 * which runs in it, follows them). 0, or -1 out of memory. */
static int lbsb_add_envd(cJSON *req, const char *user, int in_root)
{
    if (user && (!cJSON_AddStringToObject(req, "user", user) || !cJSON_AddTrueToObject(req, "owner_only")))
        return -1;
    return in_root && !cJSON_AddTrueToObject(req, "in_root") ? -1 : 0;
}

static int lbsb_write_req(lbsb_conn *c, const char *id, const char *path, const void *data, size_t len, int excl,
                          const char *user, int in_root, const char *const *meta, int nmeta, char *errbuf,
                          size_t errsz);

int lbsb_write(lbsb_conn *c, const char *id, const char *path, const void *data,
               size_t len, int excl, char *errbuf, size_t errsz)
{
    return lbsb_write_req(c, id, path, data, len, excl, NULL, 0, NULL, 0, errbuf, errsz);
}

int lbsb_write_owned(lbsb_conn *c, const char *id, const char *path, const void *data, size_t len, int excl,
                     const char *user, const char *const *meta, int nmeta, char *errbuf, size_t errsz)
{
    return lbsb_write_req(c, id, path, data, len, excl, user, 1, meta, nmeta, errbuf, errsz);
}

static int lbsb_write_req(lbsb_conn *c, const char *id, const char *path, const void *data, size_t len, int excl,
                          const char *user, int in_root, const char *const *meta, int nmeta, char *errbuf,
                          size_t errsz)
{
    if (nmeta < 0 || nmeta > LBSB_META_KEYS) {
        lbsb_err(errbuf, errsz, "at most %d metadata keys", LBSB_META_KEYS);
        return LB_E_INVAL;
    }
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc || (rc = lbsb_check_path(path, errbuf, errsz)))
        return rc;
    if (len > LLMBOX_RPC_MAX_FRAME) {
        lbsb_err(errbuf, errsz, "file is larger than the %u-byte frame limit",
                 (unsigned)LLMBOX_RPC_MAX_FRAME);
        return LB_E_TOOBIG;
    }
    cJSON *req = lbsb_req("write", id);
    if (req && (!cJSON_AddStringToObject(req, "path", path) ||
                !cJSON_AddBoolToObject(req, "excl", excl ? 1 : 0) ||
                lbsb_add_envd(req, user, in_root) != 0)) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *mo = req && nmeta ? cJSON_AddObjectToObject(req, "meta") : NULL;
    for (int i = 0; req && i < nmeta; i++)
        if (!mo || !cJSON_AddStringToObject(mo, meta[2 * i], meta[2 * i + 1])) {
            cJSON_Delete(req);
            req = NULL;
        }
    cJSON *resp;
    /* a zero-length file still sends its (empty) data frame */
    rc = lbsb_call(c, req, data ? data : "", len, &resp, NULL, NULL, 0, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}

/* One read request: the whole file (offset < 0; over max: LB_E_TOOBIG)
 * or up to max bytes from offset. *resp is the reply, caller deletes. */
static int lbsb_read_req(lbsb_conn *c, const char *id, const char *path, int64_t offset, size_t max, int in_root,
                         char **data, size_t *len, cJSON **resp, char *errbuf, size_t errsz)
{
    *data = NULL;
    *len = 0;
    *resp = NULL;
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc || (rc = lbsb_check_path(path, errbuf, errsz)))
        return rc;
    if (max > LBSD_READ_MAX)
        max = LBSD_READ_MAX;
    cJSON *req = lbsb_req("read", id);
    if (req && (!cJSON_AddStringToObject(req, "path", path) ||
                !cJSON_AddNumberToObject(req, "max", (double)max) ||
                (offset >= 0 && !cJSON_AddNumberToObject(req, "offset", (double)offset)) ||
                lbsb_add_envd(req, NULL, in_root) != 0)) {
        cJSON_Delete(req);
        req = NULL;
    }
    rc = lbsb_call(c, req, NULL, 0, resp, data, len, max, errbuf, errsz);
    if (rc)
        return rc;
    if (!*data) {
        /* ok without a data frame: protocol violation */
        cJSON_Delete(*resp);
        *resp = NULL;
        lbsb_err(errbuf, errsz, "sandboxd sent no file data");
        return LB_E_PROTO;
    }
    return LB_OK;
}

int lbsb_read(lbsb_conn *c, const char *id, const char *path, size_t max,
              char **data, size_t *len, char *errbuf, size_t errsz)
{
    cJSON *resp;
    int rc = lbsb_read_req(c, id, path, -1, max, 0, data, len, &resp, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}

int lbsb_read_envd(lbsb_conn *c, const char *id, const char *path, size_t max, char **data, size_t *len,
                   char *errbuf, size_t errsz)
{
    cJSON *resp;
    int rc = lbsb_read_req(c, id, path, -1, max, 1, data, len, &resp, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}

int lbsb_read_range(lbsb_conn *c, const char *id, const char *path, uint64_t offset, size_t max,
                    char **data, size_t *len, uint64_t *file_size, char *errbuf, size_t errsz)
{
    *file_size = 0;
    cJSON *resp;
    int rc = lbsb_read_req(c, id, path, (int64_t)offset, max, 0, data, len, &resp, errbuf, errsz);
    if (rc)
        return rc;
    const cJSON *fs = cJSON_GetObjectItemCaseSensitive(resp, "file_size");
    if (!cJSON_IsNumber(fs) || fs->valuedouble < 0) {
        free(*data);
        *data = NULL;
        *len = 0;
        rc = LB_E_PROTO;
        lbsb_err(errbuf, errsz, "sandboxd sent no file size");
    } else {
        *file_size = (uint64_t)fs->valuedouble;
    }
    cJSON_Delete(resp);
    return rc;
}

static int lbsb_type_code(const char *t)
{
    if (!t)
        return 3;
    if (!strcmp(t, "missing"))
        return 0;
    if (!strcmp(t, "file"))
        return 1;
    if (!strcmp(t, "dir"))
        return 2;
    return 3;
}

/* ---- E2B's protocol: file metadata (stat and list) ---- */
static int lbsb_kind_code(const char *k)
{
    static const char *const names[] = {"file", "dir", "symlink", "fifo", "socket", "chardev", "blockdev"};
    for (size_t i = 0; k && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(k, names[i]))
            return (int)i + LBSB_KIND_FILE;
    return LBSB_KIND_OTHER;
}

/* A number of o in [lo, hi], or -1 (sandboxd reads a hostile tree: its
 * answer is checked like any other input). */
static double lbsb_num_in(const cJSON *o, const char *key, double lo, double hi)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi ? v->valuedouble : -1;
}

/* Fills e's metadata from one stat or list answer: LB_OK or LB_E_NOMEM. */
static int lbsb_meta_parse(const cJSON *o, lbsb_entry *e)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kind");
    if (!cJSON_IsString(k))
        return LB_OK;
    double mode = lbsb_num_in(o, "mode", 0, 07777), uid = lbsb_num_in(o, "uid", 0, 65535);
    double gid = lbsb_num_in(o, "gid", 0, 65535), ns = lbsb_num_in(o, "mtime_ns", 0, 999999999);
    double mt = lbsb_num_in(o, "mtime", -9e15, 9e15);
    e->has_meta = 1;
    e->kind = lbsb_kind_code(k->valuestring);
    e->mode = mode < 0 ? 0 : (uint32_t)mode;
    e->uid = uid < 0 ? 65534 : (uint32_t)uid;
    e->gid = gid < 0 ? 65534 : (uint32_t)gid;
    e->mtime_s = mt == -1 ? 0 : (int64_t)mt;
    e->mtime_ns = ns < 0 ? 0 : (uint32_t)ns;
    double fsz = lbsb_num_in(o, "st_size", 0, 9e15);
    e->fs_size = fsz < 0 ? e->size : (uint64_t)fsz;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "target");
    if (e->kind == LBSB_KIND_SYMLINK && cJSON_IsString(t) && strlen(t->valuestring) <= LBSB_TARGET_MAX &&
        !(e->target = strdup(t->valuestring)))
        return LB_E_NOMEM;
    /* E2B's file metadata: an object of at most LBSB_META_KEYS short strings */
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "meta"), *kv;
    int ok = cJSON_IsObject(m) && cJSON_GetArraySize(m) > 0 && cJSON_GetArraySize(m) <= LBSB_META_KEYS;
    const cJSON *walk = ok ? m : NULL;
    cJSON_ArrayForEach(kv, walk)
        ok = ok && cJSON_IsString(kv) && kv->string && strlen(kv->string) <= LBSB_META_KEY_MAX &&
             strlen(kv->valuestring) <= LBSB_META_VALUE_MAX;
    if (ok && !(e->file_meta = cJSON_PrintUnformatted(m)))
        return LB_E_NOMEM;
    return LB_OK;
}

void lbsb_entry_clear(lbsb_entry *e)
{
    free(e->path);
    free(e->target);
    free(e->file_meta);
    memset(e, 0, sizeof *e);
}
/* ---- end E2B's protocol ---- */

static int lbsb_list_req(lbsb_conn *c, const char *id, const char *path, int max_depth, size_t max_entries,
                         int in_root, lbsb_entry **ents, size_t *n, char *errbuf, size_t errsz);

int lbsb_list(lbsb_conn *c, const char *id, const char *path, int max_depth,
              size_t max_entries, lbsb_entry **ents, size_t *n, char *errbuf, size_t errsz)
{
    return lbsb_list_req(c, id, path, max_depth, max_entries, 0, ents, n, errbuf, errsz);
}

int lbsb_list_envd(lbsb_conn *c, const char *id, const char *path, int max_depth, size_t max_entries,
                   lbsb_entry **ents, size_t *n, char *errbuf, size_t errsz)
{
    return lbsb_list_req(c, id, path, max_depth, max_entries, 1, ents, n, errbuf, errsz);
}

static int lbsb_list_req(lbsb_conn *c, const char *id, const char *path, int max_depth, size_t max_entries,
                         int in_root, lbsb_entry **ents, size_t *n, char *errbuf, size_t errsz)
{
    *ents = NULL;
    *n = 0;
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc || (rc = lbsb_check_path(path, errbuf, errsz)))
        return rc;
    if (max_depth < 1)
        max_depth = 1;
    if (max_depth > LBSD_LIST_MAX_DEPTH)
        max_depth = LBSD_LIST_MAX_DEPTH;
    if (max_entries < 1 || max_entries > LBSD_LIST_MAX_ENTRIES)
        max_entries = LBSD_LIST_MAX_ENTRIES;
    cJSON *req = lbsb_req("list", id);
    if (req && (!cJSON_AddStringToObject(req, "path", path) ||
                !cJSON_AddNumberToObject(req, "max_depth", max_depth) ||
                !cJSON_AddNumberToObject(req, "max_entries", (double)max_entries) ||
                lbsb_add_envd(req, NULL, in_root) != 0)) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *resp;
    rc = lbsb_call(c, req, NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    if (rc)
        return rc;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(resp, "entries");
    int cnt = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    if (cnt < 0 || (size_t)cnt > max_entries) {
        lbsb_err(errbuf, errsz, "sandboxd sent more entries than asked for");
        rc = LB_E_PROTO;
        goto out;
    }
    lbsb_entry *e = calloc(cnt ? (size_t)cnt : 1, sizeof *e);
    if (!e) {
        rc = LB_E_NOMEM;
        goto out;
    }
    size_t k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, "path");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "type");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, "size");
        if (!cJSON_IsString(p) || !p->valuestring)
            continue;
        e[k].path = strdup(p->valuestring);
        if (!e[k].path) {
            lbsb_entries_free(e, k);
            rc = LB_E_NOMEM;
            goto out;
        }
        e[k].type = lbsb_type_code(cJSON_IsString(t) ? t->valuestring : NULL);
        if (e[k].type == 0)
            e[k].type = 3;
        e[k].size = cJSON_IsNumber(s) && s->valuedouble > 0 ? (uint64_t)s->valuedouble : 0;
        k++;
        if (lbsb_meta_parse(it, &e[k - 1]) != LB_OK) {
            lbsb_entries_free(e, k);
            rc = LB_E_NOMEM;
            goto out;
        }
    }
    *ents = e;
    *n = k;
out:
    if (rc == LB_E_NOMEM)
        lbsb_err(errbuf, errsz, "out of memory");
    cJSON_Delete(resp);
    return rc;
}

void lbsb_entries_free(lbsb_entry *ents, size_t n)
{
    if (!ents)
        return;
    for (size_t i = 0; i < n; i++)
        lbsb_entry_clear(&ents[i]);
    free(ents);
}

int lbsb_stat(lbsb_conn *c, const char *id, const char *path, int *type, uint64_t *size,
              char *errbuf, size_t errsz)
{
    lbsb_entry e;
    int rc = lbsb_stat_entry(c, id, path, &e, errbuf, errsz);
    *type = e.type;
    if (size)
        *size = e.size;
    lbsb_entry_clear(&e);
    return rc;
}

static int lbsb_stat_req(lbsb_conn *c, const char *id, const char *path, int in_root, lbsb_entry *out,
                         char *errbuf, size_t errsz);

int lbsb_stat_entry(lbsb_conn *c, const char *id, const char *path, lbsb_entry *out, char *errbuf, size_t errsz)
{
    return lbsb_stat_req(c, id, path, 0, out, errbuf, errsz);
}

int lbsb_stat_envd(lbsb_conn *c, const char *id, const char *path, lbsb_entry *out, char *errbuf, size_t errsz)
{
    return lbsb_stat_req(c, id, path, 1, out, errbuf, errsz);
}

static int lbsb_stat_req(lbsb_conn *c, const char *id, const char *path, int in_root, lbsb_entry *out,
                         char *errbuf, size_t errsz)
{
    memset(out, 0, sizeof *out);
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc || (rc = lbsb_check_path(path, errbuf, errsz)))
        return rc;
    cJSON *req = lbsb_req("stat", id);
    if (req && (!cJSON_AddStringToObject(req, "path", path) || lbsb_add_envd(req, NULL, in_root) != 0)) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *resp;
    rc = lbsb_call(c, req, NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    if (rc)
        return rc;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(resp, "type");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(resp, "size");
    out->type = lbsb_type_code(cJSON_IsString(t) ? t->valuestring : NULL);
    out->size = cJSON_IsNumber(s) && s->valuedouble > 0 ? (uint64_t)s->valuedouble : 0;
    if (out->type && lbsb_meta_parse(resp, out) != LB_OK) {
        lbsb_err(errbuf, errsz, "out of memory");
        rc = LB_E_NOMEM;
    }
    cJSON_Delete(resp);
    return rc;
}

int lbsb_fs_change_owned(lbsb_conn *c, const char *id, const char *action, const char *path, const char *dest,
                         const char *user, char *errbuf, size_t errsz)
{
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc || (rc = lbsb_check_path(path, errbuf, errsz)) || (dest && (rc = lbsb_check_path(dest, errbuf, errsz))))
        return rc;
    cJSON *req = lbsb_req("fs_change", id);
    if (req && (!cJSON_AddStringToObject(req, "action", action) || !cJSON_AddStringToObject(req, "path", path) ||
                (dest && !cJSON_AddStringToObject(req, "dest", dest)) ||
                lbsb_add_envd(req, user, 1) != 0)) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *resp;
    rc = lbsb_call(c, req, NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}

/* {id} -> {}: destroy, and follow-ups's freeze and thaw */
static int lbsb_simple(lbsb_conn *c, const char *op, const char *id, char *errbuf, size_t errsz)
{
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    cJSON *resp;
    rc = lbsb_call(c, lbsb_req(op, id), NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}

int lbsb_destroy(lbsb_conn *c, const char *id, char *errbuf, size_t errsz)
{
    return lbsb_simple(c, "destroy", id, errbuf, errsz);
}

int lbsb_ping(lbsb_conn *c, char **info_json, char *errbuf, size_t errsz)
{
    if (info_json)
        *info_json = NULL;
    cJSON *resp;
    int rc = lbsb_call(c, lbsb_req("ping", NULL), NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    if (rc)
        return rc;
    if (info_json) {
        *info_json = cJSON_PrintUnformatted(resp);
        if (!*info_json) {
            rc = LB_E_NOMEM;
            lbsb_err(errbuf, errsz, "out of memory");
        }
    }
    cJSON_Delete(resp);
    return rc;
}

/* renew and adopt: {id, key?, lease_s?} -> {...} */
static int lbsb_lease_call(lbsb_conn *c, const char *op, const char *id, const char *key, int lease_s,
                           char *errbuf, size_t errsz)
{
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    cJSON *req = lbsb_req(op, id);
    if (req && ((lease_s > 0 && !cJSON_AddNumberToObject(req, "lease_s", lease_s)) ||
                (key && !cJSON_AddStringToObject(req, "key", key)))) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *resp;
    rc = lbsb_call(c, req, NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}

int lbsb_renew(lbsb_conn *c, const char *id, int lease_s, char *errbuf, size_t errsz)
{
    return lbsb_lease_call(c, "renew", id, NULL, lease_s, errbuf, errsz);
}

int lbsb_adopt(lbsb_conn *c, const char *id, const char *key, int lease_s, char *errbuf, size_t errsz)
{
    if (!lb_id_valid(key)) {
        lbsb_err(errbuf, errsz, "invalid lease key");
        return LB_E_INVAL;
    }
    return lbsb_lease_call(c, "adopt", id, key, lease_s, errbuf, errsz);
}

/* ---- a sandbox's state (follow-ups) ------------------------------------------ */

int lbsb_freeze(lbsb_conn *c, const char *id, char *errbuf, size_t errsz)
{
    return lbsb_simple(c, "freeze", id, errbuf, errsz);
}

int lbsb_freeze_reboot(lbsb_conn *c, const char *id, char *errbuf, size_t errsz)
{
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    cJSON *req = lbsb_req("freeze", id), *resp = NULL;
    if (req && !cJSON_AddBoolToObject(req, "reboot", 1)) {
        cJSON_Delete(req);
        req = NULL;
    }
    rc = lbsb_call(c, req, NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}

int lbsb_thaw(lbsb_conn *c, const char *id, char *errbuf, size_t errsz)
{
    return lbsb_simple(c, "thaw", id, errbuf, errsz);
}

static int lbsb_check_state(const char *state, char *errbuf, size_t errsz)
{
    if (lbsd_state_name_valid(state))
        return LB_OK;
    lbsb_err(errbuf, errsz, "a saved state's name must match [a-z0-9_-]{1,64}");
    return LB_E_INVAL;
}

static uint64_t lbsb_u64(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble < 1.8e19 ? (uint64_t)v->valuedouble : 0;
}

int lbsb_save(lbsb_conn *c, const char *id, const char *state, int max_mib, uint64_t *bytes,
              uint64_t *files, char *errbuf, size_t errsz)
{
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc || (rc = lbsb_check_state(state, errbuf, errsz)))
        return rc;
    cJSON *req = lbsb_req("save", id);
    if (req && (!cJSON_AddStringToObject(req, "state", state) ||
                (max_mib > 0 && !cJSON_AddNumberToObject(req, "max_mib", max_mib)))) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *resp;
    rc = lbsb_call(c, req, NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    if (rc)
        return rc;
    if (bytes)
        *bytes = lbsb_u64(resp, "bytes");
    if (files)
        *files = lbsb_u64(resp, "files");
    cJSON_Delete(resp);
    return LB_OK;
}

int lbsb_state_delete(lbsb_conn *c, const char *state, char *errbuf, size_t errsz)
{
    int rc = lbsb_check_state(state, errbuf, errsz);
    if (rc)
        return rc;
    cJSON *req = lbsb_req("state_delete", NULL);
    if (req && !cJSON_AddStringToObject(req, "state", state)) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *resp;
    rc = lbsb_call(c, req, NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}

int lbsb_state_list(lbsb_conn *c, lbsb_state **out, size_t *n, char *errbuf, size_t errsz)
{
    *out = NULL;
    *n = 0;
    cJSON *resp;
    int rc = lbsb_call(c, lbsb_req("state_list", NULL), NULL, 0, &resp, NULL, NULL, 0, errbuf, errsz);
    if (rc)
        return rc;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(resp, "states");
    int cnt = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    lbsb_state *v = cnt > 0 ? calloc((size_t)cnt, sizeof *v) : NULL;
    if (cnt > 0 && !v) {
        cJSON_Delete(resp);
        lbsb_err(errbuf, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    size_t k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "state");
        if (k >= (size_t)cnt || !cJSON_IsString(name) || !lbsd_state_name_valid(name->valuestring))
            continue; /* a daemon's answer we cannot use is left out, not trusted */
        snprintf(v[k].name, sizeof v[k].name, "%s", name->valuestring);
        v[k].bytes = lbsb_u64(e, "bytes");
        v[k].mtime = (int64_t)lbsb_u64(e, "mtime");
        k++;
    }
    cJSON_Delete(resp);
    if (!k) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = k;
    return LB_OK;
}

/* ---- processes of sandboxd's own (E2B's protocol) ------------------------------- */

static cJSON *lbsb_proc_req(const char *op, const char *id, uint32_t pid, const char *tag)
{
    cJSON *o = lbsb_req(op, id);
    if (o && ((tag && !cJSON_AddStringToObject(o, "tag", tag)) || (!tag && !cJSON_AddNumberToObject(o, "pid", pid)))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static uint32_t lbsb_pid_of(const cJSON *resp)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(resp, "pid");
    return cJSON_IsNumber(p) && p->valuedouble > 0 && p->valuedouble < 4294967296.0 ? (uint32_t)p->valuedouble : 0;
}

int lbsb_proc_start(lbsb_conn *c, const char *id, const lbsb_proc_spec *spec, int attach, uint32_t *pid,
                    char *errbuf, size_t errsz)
{
    *pid = 0;
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    if (!spec || !spec->argv || spec->argc < 1) {
        lbsb_err(errbuf, errsz, "a process needs argv[0]");
        return LB_E_INVAL;
    }
    cJSON *o = lbsb_req("proc_start", id);
    cJSON *argv = o ? cJSON_AddArrayToObject(o, "argv") : NULL;
    cJSON *env = o && spec->envc ? cJSON_AddObjectToObject(o, "env") : NULL;
    int ok = argv && (!spec->envc || env);
    for (int i = 0; ok && i < spec->argc; i++)
        ok = cJSON_AddItemToArray(argv, cJSON_CreateString(spec->argv[i] ? spec->argv[i] : ""));
    for (int i = 0; ok && i < spec->envc; i++) {
        const char *kv = spec->env[i], *eq = kv ? strchr(kv, '=') : NULL;
        if (!eq || eq == kv || eq - kv > 128) {
            cJSON_Delete(o);
            lbsb_err(errbuf, errsz, "env entries must be NAME=value");
            return LB_E_INVAL;
        }
        char name[129];
        memcpy(name, kv, (size_t)(eq - kv));
        name[eq - kv] = '\0';
        cJSON_DeleteItemFromObjectCaseSensitive(env, name); /* the last one wins */
        ok = cJSON_AddStringToObject(env, name, eq + 1) != NULL;
    }
    if (ok && spec->cwd)
        ok = cJSON_AddStringToObject(o, "cwd", spec->cwd) != NULL;
    if (ok && spec->tag)
        ok = cJSON_AddStringToObject(o, "tag", spec->tag) != NULL;
    if (ok && spec->meta)
        ok = cJSON_AddStringToObject(o, "meta", spec->meta) != NULL;
    if (ok && spec->user)
        ok = cJSON_AddStringToObject(o, "user", spec->user) != NULL;
    if (ok && spec->with_stdin)
        ok = cJSON_AddTrueToObject(o, "stdin") != NULL;
    if (ok && attach)
        ok = cJSON_AddTrueToObject(o, "attach") != NULL;
    if (!ok) {
        cJSON_Delete(o);
        lbsb_err(errbuf, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    cJSON *resp;
    rc = lbsb_call_bounded(c, o, NULL, 0, &resp, errbuf, errsz);
    if (rc)
        return rc;
    *pid = lbsb_pid_of(resp);
    cJSON_Delete(resp);
    if (!*pid) {
        c->broken = 1;
        lbsb_err(errbuf, errsz, "sandboxd answered a start without a pid");
        return LB_E_PROTO;
    }
    return LB_OK;
}

int lbsb_proc_attach(lbsb_conn *c, const char *id, uint32_t pid, const char *tag, uint32_t *pid_out, char *errbuf,
                     size_t errsz)
{
    if (pid_out)
        *pid_out = 0;
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    cJSON *resp;
    rc = lbsb_call_bounded(c, lbsb_proc_req("proc_attach", id, pid, tag), NULL, 0, &resp, errbuf, errsz);
    if (rc)
        return rc;
    if (pid_out)
        *pid_out = lbsb_pid_of(resp);
    cJSON_Delete(resp);
    return LB_OK;
}

void lbsb_proc_event_free(lbsb_proc_event *ev)
{
    free(ev->data);
    ev->data = NULL;
    ev->len = 0;
}

int lbsb_proc_next(lbsb_conn *c, int timeout_ms, lbsb_proc_event *ev, char *errbuf, size_t errsz)
{
    memset(ev, 0, sizeof *ev);
    if (!c || c->broken) {
        lbsb_err(errbuf, errsz, "sandboxd connection is broken by an earlier failure");
        return LB_E_UNAVAILABLE;
    }
    /* wait in short ticks, so a set cancel flag is seen */
    int64_t end = lb_mono_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
    for (;;) {
        if (c->cancel && *c->cancel) {
            lbsb_err(errbuf, errsz, "cancelled");
            return LB_E_CANCELLED;
        }
        int64_t left = end - lb_mono_ms();
        int tick = left > 200 ? 200 : left < 0 ? 0 : (int)left;
        struct pollfd pf[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = c->watch_fd, .events = POLLRDHUP}};
        int pr = poll(pf, c->watch_fd >= 0 ? 2 : 1, tick);
        if (pr < 0 && errno != EINTR) {
            c->broken = 1;
            lbsb_err(errbuf, errsz, "lost the connection to sandboxd");
            return LB_E_UNAVAILABLE;
        }
        if (pr > 0 && pf[0].revents)
            break;
        if (pr > 0 && (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
            lbsb_err(errbuf, errsz, "the caller's client left");
            return LB_E_CANCELLED; /* the stream stays in step: nothing was read */
        }
        if (left <= 0) {
            lbsb_err(errbuf, errsz, "no event within %d ms", timeout_ms);
            return LB_E_TIMEOUT;
        }
    }
    char *frame = NULL;
    size_t flen = 0;
    int rc = lbsd_frame_recv(c->fd, LBSB_RESP_MAX, &frame, &flen, NULL);
    cJSON *r = rc ? NULL : cJSON_ParseWithLength(frame, flen);
    free(frame);
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(r, "event");
    if (rc || !cJSON_IsString(kind)) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "message");
        c->broken = 1;
        lbsb_err(errbuf, errsz, "%s", rc ? "lost the connection to sandboxd"
                                  : cJSON_IsString(m) ? m->valuestring
                                                      : "sandboxd sent something that is not a process event");
        cJSON_Delete(r);
        return rc ? rc : LB_E_PROTO;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "data"))) {
        rc = lbsd_frame_recv(c->fd, LLMBOX_RPC_MAX_FRAME, &ev->data, &ev->len, NULL);
        if (rc) {
            c->broken = 1;
            cJSON_Delete(r);
            lbsb_err(errbuf, errsz, "lost the connection to sandboxd");
            return rc;
        }
    }
    const cJSON *fd = cJSON_GetObjectItemCaseSensitive(r, "fd");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(r, "exit_code");
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(r, "signal");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "message");
    ev->pid = lbsb_pid_of(r);
    if (!strcmp(kind->valuestring, "out")) {
        ev->kind = LBSB_PROC_OUT;
        ev->fd = cJSON_IsNumber(fd) && fd->valuedouble == 2 ? 2 : 1;
    } else if (!strcmp(kind->valuestring, "exit")) {
        ev->kind = LBSB_PROC_EXIT;
        ev->signal = cJSON_IsNumber(sig) && sig->valuedouble > 0 && sig->valuedouble < 128 ? (int)sig->valuedouble : 0;
        ev->exit_code = ev->signal ? -1 : cJSON_IsNumber(code) && code->valuedouble >= 0 && code->valuedouble < 256
                                              ? (int)code->valuedouble
                                              : -1;
    } else {
        ev->kind = LBSB_PROC_GONE;
        snprintf(ev->message, sizeof ev->message, "%s", cJSON_IsString(m) ? m->valuestring : "the sandbox is gone");
    }
    cJSON_Delete(r);
    return LB_OK;
}

int lbsb_proc_input(lbsb_conn *c, const char *id, uint32_t pid, const void *data, size_t len, int eof, char *errbuf,
                    size_t errsz)
{
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    cJSON *o = lbsb_proc_req("proc_input", id, pid, NULL);
    if (o && eof && !cJSON_AddTrueToObject(o, "eof")) {
        cJSON_Delete(o);
        o = NULL;
    }
    cJSON *resp;
    rc = lbsb_call_bounded(c, o, len ? (data ? data : "") : NULL, len, &resp, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}

int lbsb_proc_signal(lbsb_conn *c, const char *id, uint32_t pid, int sig, char *errbuf, size_t errsz)
{
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    cJSON *o = lbsb_proc_req("proc_signal", id, pid, NULL);
    if (o && !cJSON_AddNumberToObject(o, "signal", sig)) {
        cJSON_Delete(o);
        o = NULL;
    }
    cJSON *resp;
    rc = lbsb_call_bounded(c, o, NULL, 0, &resp, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}

int lbsb_proc_list(lbsb_conn *c, const char *id, char **json, char *errbuf, size_t errsz)
{
    *json = NULL;
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    cJSON *resp;
    rc = lbsb_call_bounded(c, lbsb_req("proc_list", id), NULL, 0, &resp, errbuf, errsz);
    if (rc)
        return rc;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(resp, "procs");
    *json = cJSON_IsArray(arr) ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(resp);
    if (!*json) {
        lbsb_err(errbuf, errsz, "sandboxd's process list could not be read");
        return LB_E_PROTO;
    }
    return LB_OK;
}

/* A number of the metrics answer in [0, 2^53], else -1 (sandboxd's answer
 * is checked like any other input). */
static double lbsb_metric(const cJSON *o, const char *key)
{
    return lbsb_num_in(o, key, 0, 9007199254740992.0);
}

int lbsb_metrics_get(lbsb_conn *c, const char *id, lbsb_metrics *m, char *errbuf, size_t errsz)
{
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    cJSON *resp;
    rc = lbsb_call_bounded(c, lbsb_req("metrics", id), NULL, 0, &resp, errbuf, errsz);
    if (rc)
        return rc;
    double n = lbsb_num_in(resp, "cpu_count", 1, 4096);
    m->cpu_usage_us = lbsb_metric(resp, "cpu_usage_us");
    m->cpu_count = n < 0 ? 1 : (int)n;
    m->mem_used = lbsb_metric(resp, "mem_used");
    m->mem_total = lbsb_metric(resp, "mem_total");
    m->mem_cache = lbsb_metric(resp, "mem_cache");
    m->disk_used = lbsb_metric(resp, "disk_used");
    m->disk_total = lbsb_metric(resp, "disk_total");
    cJSON_Delete(resp);
    return LB_OK;
}

/* E2B's protocol: port_connect. The answer's first byte carries the connected
 * socket (SCM_RIGHTS), so it is read with recvmsg; a descriptor that comes
 * with anything else is closed. */
static ssize_t lbsb_recv_fd(int sock, void *buf, size_t len, int *fd)
{
    union {
        char b[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b};
    ssize_t n;
    do
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int got[4];
        memcpy(got, CMSG_DATA(h), (k > 4 ? 4 : k) * sizeof(int));
        for (size_t i = 0; i < k && i < 4; i++) {
            if (*fd < 0)
                *fd = got[i];
            else
                close(got[i]);
        }
    }
    return n;
}

int lbsb_port_connect(lbsb_conn *c, const char *id, int port, int *fd_out, char *errbuf, size_t errsz)
{
    *fd_out = -1;
    int rc = lbsb_check_id(id, errbuf, errsz);
    if (rc)
        return rc;
    if (port < 1 || port > 65535) {
        lbsb_err(errbuf, errsz, "a TCP port is 1 to 65535");
        return LB_E_INVAL;
    }
    if (!c || c->broken || c->discard) {
        lbsb_err(errbuf, errsz, "port_connect needs an idle, unbroken sandboxd connection");
        return LB_E_UNAVAILABLE;
    }
    char req[128];
    int n = snprintf(req, sizeof req, "{\"op\":\"port_connect\",\"id\":\"%s\",\"port\":%d}", id, port);
    c->op_ms = LBSB_PROC_CALL_MS;
    int64_t until = lbsb_until(c);
    c->op_ms = 0;
    rc = lbsd_frame_send(c->fd, req, (size_t)n, NULL);
    if (rc == LB_OK)
        rc = lbsb_wait_answer(c, until); /* sandboxd answers within its connect deadline */
    int fd = -1;
    unsigned char hdr[LBSD_FRAME_HDR];
    size_t got = 0;
    while (rc == LB_OK && got < sizeof hdr) {
        ssize_t r = lbsb_recv_fd(c->fd, hdr + got, sizeof hdr - got, &fd);
        if (r <= 0)
            rc = LB_E_UNAVAILABLE;
        else
            got += (size_t)r;
    }
    uint32_t len = rc ? 0 : (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    char body[2048];
    if (rc == LB_OK && (len == 0 || len >= sizeof body))
        rc = LB_E_PROTO;
    for (got = 0; rc == LB_OK && got < len;) {
        ssize_t r = read(c->fd, body + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            rc = LB_E_UNAVAILABLE;
        else
            got += (size_t)r;
    }
    if (rc) {
        c->broken = 1;
        if (fd >= 0)
            close(fd);
        lbsb_err(errbuf, errsz, rc == LB_E_CANCELLED ? "cancelled"
                                : rc == LB_E_TIMEOUT ? "sandboxd did not answer port_connect in time"
                                                     : "lost the connection to sandboxd");
        return rc;
    }
    cJSON *r = cJSON_ParseWithLength(body, len);
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(r, "error");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "message");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")) && fd >= 0) {
        *fd_out = fd;
    } else {
        if (fd >= 0)
            close(fd);
        rc = cJSON_IsString(code) ? lbsd_code_status(code->valuestring) : LB_E_PROTO;
        lbsb_err(errbuf, errsz, "%s", cJSON_IsString(m) ? m->valuestring : "sandboxd sent no connection");
    }
    cJSON_Delete(r);
    return rc;
}

/* ---- image work sandboxd runs for an unprivileged client ------------------------ */

#define LBSB_IMAGE_LOG_MAX (1u << 20) /* one poll's log bytes: as sandboxd's cap */

int lbsb_image_job_start(lbsb_conn *c, const lbsb_image_job_spec *s, char job_id[33], char *errbuf, size_t errsz)
{
    job_id[0] = '\0';
    if (!s || !s->kind || !s->ref) {
        lbsb_err(errbuf, errsz, "an image job needs a kind and a reference");
        return LB_E_INVAL;
    }
    cJSON *req = lbsb_req("image_job_start", NULL), *args = NULL;
    int ok = req && cJSON_AddStringToObject(req, "kind", s->kind) && cJSON_AddStringToObject(req, "ref", s->ref) &&
             (!s->context || cJSON_AddStringToObject(req, "context", s->context)) &&
             (!s->dockerfile || cJSON_AddStringToObject(req, "dockerfile", s->dockerfile)) &&
             (!s->network || cJSON_AddStringToObject(req, "network", s->network));
    if (ok && s->n_build_args) {
        ok = (args = cJSON_AddArrayToObject(req, "build_args")) != NULL;
        for (size_t i = 0; ok && i < s->n_build_args; i++) {
            cJSON *a = s->build_args[i] ? cJSON_CreateString(s->build_args[i]) : NULL;
            ok = a && cJSON_AddItemToArray(args, a);
        }
    }
    if (!ok) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *resp;
    int rc = lbsb_call_bounded(c, req, NULL, 0, &resp, errbuf, errsz);
    if (rc)
        return rc;
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(resp, "job");
    if (!cJSON_IsString(j) || !lb_id_valid(j->valuestring)) {
        cJSON_Delete(resp);
        lbsb_err(errbuf, errsz, "sandboxd named no image job");
        return LB_E_PROTO;
    }
    snprintf(job_id, 33, "%s", j->valuestring);
    cJSON_Delete(resp);
    return LB_OK;
}

int lbsb_image_job_poll(lbsb_conn *c, const char *job_id, int64_t log_offset, size_t log_max,
                        lbsb_image_job_status *st, char *errbuf, size_t errsz)
{
    memset(st, 0, sizeof *st);
    if (!lb_id_valid(job_id)) {
        lbsb_err(errbuf, errsz, "invalid image job id");
        return LB_E_INVAL;
    }
    if (!c) {
        lbsb_err(errbuf, errsz, "no sandboxd connection");
        return LB_E_INVAL;
    }
    if (log_offset < 0)
        log_offset = 0;
    if (log_max > LBSB_IMAGE_LOG_MAX)
        log_max = LBSB_IMAGE_LOG_MAX;
    cJSON *req = lbsb_req("image_job_poll", NULL);
    if (req && (!cJSON_AddStringToObject(req, "job", job_id) ||
                !cJSON_AddNumberToObject(req, "offset", (double)log_offset) ||
                !cJSON_AddNumberToObject(req, "max", (double)log_max))) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *resp;
    char *data = NULL;
    size_t len = 0;
    c->op_ms = LBSB_PROC_CALL_MS;
    int rc = lbsb_call(c, req, NULL, 0, &resp, &data, &len, log_max, errbuf, errsz);
    c->op_ms = 0;
    if (rc)
        return rc;
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(resp, "state");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(resp, "error");
    double next = lbsb_num_in(resp, "next_offset", 0, 9007199254740992.0);
    if (!cJSON_IsString(state) || (strcmp(state->valuestring, "running") && strcmp(state->valuestring, "succeeded") &&
                                   strcmp(state->valuestring, "failed")) || next < 0) {
        /* sandboxd's answer is checked like any other input */
        cJSON_Delete(resp);
        free(data);
        lbsb_err(errbuf, errsz, "sandboxd sent an image job state that cannot be read");
        return LB_E_PROTO;
    }
    snprintf(st->state, sizeof st->state, "%s", state->valuestring);
    double code = lbsb_num_in(resp, "exit_code", -1, 255);
    st->exit_code = code < -1 ? -1 : (int)code;
    st->next_offset = (int64_t)next;
    if (cJSON_IsString(err))
        snprintf(st->error, sizeof st->error, "%s", err->valuestring);
    st->log = data;
    st->log_len = len;
    cJSON_Delete(resp);
    return LB_OK;
}

void lbsb_image_job_status_free(lbsb_image_job_status *st)
{
    if (!st)
        return;
    free(st->log);
    st->log = NULL;
    st->log_len = 0;
}

/* ---- E2B's volumes (sandboxd/sandbox_volume.h) ---------------------------------- */

#define LBSB_VOLUME_CALL_MS 120000 /* a write of the largest file, or a walk of a full volume */

int lbsb_volume_call(lbsb_conn *c, cJSON *req, const void *data, size_t dlen, cJSON **resp, char **rdata,
                     size_t *rlen, size_t rmax, char *errbuf, size_t errsz)
{
    if (req && !cJSON_AddStringToObject(req, "op", "volume")) {
        cJSON_Delete(req);
        req = NULL;
    }
    if (c)
        c->op_ms = LBSB_VOLUME_CALL_MS;
    int rc = lbsb_call(c, req, data, dlen, resp, rdata, rlen, rmax, errbuf, errsz);
    if (c)
        c->op_ms = 0;
    return rc;
}

int lbsb_volume_mount(lbsb_conn *c, const char *id, const char *volume, const char *path, char *errbuf, size_t errsz)
{
    if (lbsb_check_id(id, errbuf, errsz) || !volume || !path) {
        lbsb_err(errbuf, errsz, "a mount needs a sandbox, a volume and a path");
        return LB_E_INVAL;
    }
    cJSON *req = lbsb_req("volume_mount", id);
    if (req && (!cJSON_AddStringToObject(req, "volume", volume) || !cJSON_AddStringToObject(req, "path", path))) {
        cJSON_Delete(req);
        req = NULL;
    }
    cJSON *resp = NULL;
    int rc = lbsb_call_bounded(c, req, NULL, 0, &resp, errbuf, errsz);
    cJSON_Delete(resp);
    return rc;
}
