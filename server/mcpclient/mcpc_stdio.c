/* MCP's stdio transport to a server inside the sandbox; the contract is
 * mcpc_stdio.h. */
#include "mcpclient/mcpc_stdio.h"

#include "common/status.h"
#include "common/utf8.h"
#include "common/util.h"
#include "mcpclient/mcpc_lines.h"
#include "mcpclient/mcpc_msg.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct stdio_t {
    lb_mcpc_transport base;     /* first: the session holds a pointer to it */
    lbsb_conn *ev;              /* ours: attached to the process, events only */
    lbsb_conn *conn;            /* the task's (borrowed): proc_input, proc_signal */
    char sb_id[64];
    uint32_t pid;
    lb_mcpc_lines lines;
    char tail[LB_MCPC_STDERR_TAIL + 1];
    size_t tail_len;
    int ended;                  /* its exit (or the sandbox's end) was seen */
    char why[200];              /* how it ended */
} stdio_t;

static void keep_tail(stdio_t *s, const char *p, size_t n)
{
    if (n >= LB_MCPC_STDERR_TAIL) {
        memcpy(s->tail, p + n - LB_MCPC_STDERR_TAIL, LB_MCPC_STDERR_TAIL);
        s->tail_len = LB_MCPC_STDERR_TAIL;
    } else {
        size_t keep = s->tail_len + n > LB_MCPC_STDERR_TAIL ? LB_MCPC_STDERR_TAIL - n : s->tail_len;
        memmove(s->tail, s->tail + s->tail_len - keep, keep);
        memcpy(s->tail + keep, p, n);
        s->tail_len = keep + n;
    }
    s->tail[s->tail_len] = '\0';
}

/* "...; its last words on stderr: ..." as printable text. */
static void ended_sentence(stdio_t *s, char *err, size_t errsz)
{
    char tail[LB_MCPC_STDERR_TAIL + 1];
    size_t k = 0;
    for (size_t i = 0; i < s->tail_len; i++)
        tail[k++] = (s->tail[i] == '\n' || s->tail[i] == '\r' || s->tail[i] == '\t') ? ' '
                    : ((unsigned char)s->tail[i] < 0x20 || s->tail[i] == 0x7f) ? '?' : s->tail[i];
    while (k && tail[k - 1] == ' ')
        k--;
    tail[k] = '\0';
    char *t = tail + strspn(tail, " ");
    if (*t) {
        char *clean = lb_utf8_sanitize(t, strlen(t), NULL);
        snprintf(err, errsz, "%s; its last output on stderr: %s", s->why, clean ? clean : "");
        free(clean);
    } else {
        snprintf(err, errsz, "%s", s->why);
    }
}

static int st_send(lb_mcpc_transport *t, const char *msg, size_t len, int64_t deadline_ms, char *err, size_t errsz)
{
    stdio_t *s = (stdio_t *)t;
    (void)deadline_ms; /* proc_input is answered within LBSB_PROC_CALL_MS */
    if (s->ended) {
        ended_sentence(s, err, errsz);
        return LB_E_UNAVAILABLE;
    }
    if (len + 1 > LB_MCPC_INPUT_MAX) {
        snprintf(err, errsz, "the message for the server is %zu bytes, over the limit of %u", len,
                 LB_MCPC_INPUT_MAX);
        return LB_E_TOOBIG;
    }
    char *line = malloc(len + 1);
    if (!line) {
        snprintf(err, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    memcpy(line, msg, len);
    line[len] = '\n';
    char why[400] = "";
    int rc = lbsb_proc_input(s->conn, s->sb_id, s->pid, line, len + 1, 0, why, sizeof why);
    free(line);
    if (rc != LB_OK)
        snprintf(err, errsz, "its stdin could not be written: %s", why);
    return rc;
}

static int st_recv(lb_mcpc_transport *t, int64_t deadline_ms, const char **msg, size_t *len, char *err,
                   size_t errsz)
{
    stdio_t *s = (stdio_t *)t;
    for (;;) {
        int got = lb_mcpc_lines_next(&s->lines, msg, len);
        t->dropped = s->lines.dropped;
        if (got)
            return LB_OK;
        if (s->ended) {
            ended_sentence(s, err, errsz);
            return LB_E_UNAVAILABLE;
        }
        int64_t left = deadline_ms - lb_mono_ms();
        if (left <= 0)
            return LB_E_TIMEOUT;
        lbsb_proc_event ev;
        char why[400] = "";
        int rc = lbsb_proc_next(s->ev, left > INT32_MAX ? INT32_MAX : (int)left, &ev, why, sizeof why);
        if (rc == LB_E_TIMEOUT)
            return LB_E_TIMEOUT;
        if (rc != LB_OK) {
            snprintf(err, errsz, "its output could not be read: %s", why);
            return rc;
        }
        if (ev.kind == LBSB_PROC_OUT && ev.fd == 1)
            rc = lb_mcpc_lines_feed(&s->lines, ev.data, ev.len);
        else if (ev.kind == LBSB_PROC_OUT)
            keep_tail(s, ev.data, ev.len);
        else if (ev.kind == LBSB_PROC_EXIT) {
            s->ended = 1;
            if (ev.signal)
                snprintf(s->why, sizeof s->why, "the server's process was ended by signal %d", ev.signal);
            else
                snprintf(s->why, sizeof s->why, "the server's process exited with code %d", ev.exit_code);
        } else {
            s->ended = 1;
            snprintf(s->why, sizeof s->why, "the server's process is gone: %.150s", ev.message);
        }
        lbsb_proc_event_free(&ev);
        if (rc != LB_OK) {
            snprintf(err, errsz, "out of memory");
            return rc;
        }
    }
}

static void st_close(lb_mcpc_transport *t)
{
    stdio_t *s = (stdio_t *)t;
    if (!s)
        return;
    if (!s->ended) {
        char why[200];
        /* when this fails the sandbox is going anyway, and the process with it */
        LB_IGNORE(lbsb_proc_signal(s->conn, s->sb_id, s->pid, SIGKILL, why, sizeof why));
    }
    if (s->ev)
        lbsb_close(s->ev);
    lb_mcpc_lines_free(&s->lines);
    free(s);
}

int lb_mcpc_stdio_open(const char *socket, volatile int *cancel, lbsb_conn *conn, const char *sb_id,
                       const char *name, const char *command, lb_mcpc_transport **out, char *err, size_t errsz)
{
    stdio_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    s->base.send = st_send;
    s->base.recv = st_recv;
    s->base.close = st_close;
    s->conn = conn;
    snprintf(s->sb_id, sizeof s->sb_id, "%s", sb_id);
    lb_mcpc_lines_init(&s->lines, LB_MCPC_MSG_MAX);
    char why[400] = "";
    int rc = lbsb_connect(socket, cancel, &s->ev, why, sizeof why);
    if (rc != LB_OK) {
        snprintf(err, errsz, "sandboxd could not be reached for its output: %s", why);
        st_close(&s->base);
        return rc;
    }
    /* meta names it in proc_list; no tag, which would clash with the one
     * of an earlier round's server in a kept sandbox */
    char meta[64];
    snprintf(meta, sizeof meta, "mcp server %s", name);
    const char *argv[] = {"sh", "-c", command};
    lbsb_proc_spec sp = {.argv = argv, .argc = 3, .with_stdin = 1, .meta = meta};
    rc = lbsb_proc_start(s->ev, sb_id, &sp, 1, &s->pid, why, sizeof why);
    if (rc != LB_OK) {
        snprintf(err, errsz, "its command could not be started in the sandbox: %s", why);
        s->ended = 1; /* nothing to stop */
        st_close(&s->base);
        return rc;
    }
    *out = &s->base;
    return LB_OK;
}
