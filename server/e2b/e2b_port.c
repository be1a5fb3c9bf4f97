/*
 * A request to <port>-<id>.<e2b_domain>, relayed to the sandbox
 * (e2b_port.h). sandboxd opens the TCP connection inside the sandbox's
 * network namespace and hands it over (port_connect); the web writes the
 * request as HTTP/1.0 with "Connection: close" (no chunked framing to
 * undo) and streams the answer back, to its Content-Length where it has
 * one, else until the server closes. Everything from the sandbox is
 * hostile: the answer's head is capped and parsed strictly, hop-by-hop
 * headers are dropped, each read and write has a timeout.
 *
 * Each relay holds a web thread, and the server at the other end is the
 * sandbox's code: one that sent its head a byte every 20 s held 40
 * threads for minutes, long after the clients gave up, and froze
 * everyone's API. So: the request's sending and the answer's head have
 * one deadline together (e2b_port_head_s, 504 past it), the client
 * leaving (nginx closes our connection) ends the relay at once, in any
 * phase, and relays take places (work_slots.h): e2b_port_max_per_sandbox
 * per sandbox, e2b_port_max in all; a request that finds none is refused
 * at once with Retry-After.
 */
#include "e2b/e2b_port.h"

#include "web/access.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_network.h"
#include "web/http.h"
#include "web/work_slots.h"

#include "common/buf.h"
#include "common/config.h"
#include "common/status.h"
#include "common/util.h"
#include "llmbox/sandbox.h"

#include <errno.h>
#include <fcgiapp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define LB_E2B_PORT_HEAD_MAX (64u << 10)  /* the answer's status line and headers */
#define LB_E2B_PORT_BODY_MAX (64ll << 20) /* a request body relayed */
#define LB_E2B_PORT_IDLE_S 60             /* each read and write of the answer's body */

/* the relays in progress (places: work_slots.h) */
static lb_slots lb_port_slots = LB_SLOTS_INIT;

/* What waiting on the sandbox's side came to. */
enum { LB_PORT_READY = 0, LB_PORT_LATE = 1, LB_PORT_LEFT = 2 };

/* Waits until fd is ready for events, the monotonic deadline (ms) passes,
 * or the client leaves: nginx closes our connection when it does (and
 * sends nothing more on it during a request, so POLLRDHUP there means
 * exactly that). */
static int lb_port_wait(lb_req *r, int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - lb_mono_ms();
        if (left <= 0)
            return LB_PORT_LATE;
        struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = r->fcgi->ipcFd, .events = POLLRDHUP}};
        int n = poll(p, 2, left > 60000 ? 60000 : (int)left);
        if (n < 0 && errno != EINTR)
            return LB_PORT_LEFT; /* cannot wait: end the relay */
        if (n <= 0)
            continue;
        if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
            return LB_PORT_LEFT;
        if (p[0].revents)
            return LB_PORT_READY; /* readable, writable, or an error that the next call reports */
    }
}

/* Hop-by-hop, or ours: never passed on (either way). X-Accel-* above all:
 * nginx obeys them in a FastCGI answer (X-Accel-Redirect would serve any
 * internal location, other tasks' files among them). */
static int lb_port_skip(const char *name, size_t n)
{
    static const char *const skip[] = {"connection", "keep-alive", "proxy-connection", "te", "trailer",
                                       "transfer-encoding", "upgrade", "x-access-token", "e2b-traffic-access-token",
                                       "proxy-authorization", "status"};
    if (n >= 8 && !strncasecmp(name, "x-accel-", 8))
        return 1;
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strlen(skip[i]) == n && !strncasecmp(name, skip[i], n))
            return 1;
    return 0;
}

/* Sends p[0..n) to the sandbox by the deadline: LB_OK, LB_E_IO (the
 * server closed), LB_E_TIMEOUT, LB_E_CANCELLED (the client left). */
static int lb_port_write(lb_req *r, int fd, const char *p, size_t n, int64_t deadline)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int why = lb_port_wait(r, fd, POLLOUT, deadline);
            if (why != LB_PORT_READY)
                return why == LB_PORT_LATE ? LB_E_TIMEOUT : LB_E_CANCELLED;
            continue;
        }
        if (w <= 0)
            return LB_E_IO;
        p += w;
        n -= (size_t)w;
    }
    return LB_OK;
}

/* The request's head: the FastCGI params HTTP_* back into headers; host,
 * when not "", replaces the client's Host (maskRequestHost). */
static int lb_port_head(lb_req *r, const char *target, const char *host, lb_buf *b)
{
    const char *m = lb_http_param(r, "REQUEST_METHOD");
    int rc = lb_buf_printf(b, "%s %s%s%s HTTP/1.0\r\n", m ? m : r->method, target, r->query[0] ? "?" : "", r->query);
    for (char **e = r->fcgi->envp; !rc && e && *e; e++) {
        const char *kv = *e, *eq = strchr(kv, '=');
        if (!eq || strncmp(kv, "HTTP_", 5))
            continue;
        char name[128];
        size_t n = (size_t)(eq - kv) - 5;
        if (n == 0 || n >= sizeof name)
            continue;
        for (size_t i = 0; i < n; i++) {
            char ch = kv[5 + i];
            name[i] = ch == '_' ? '-' : (i == 0 || kv[4 + i] == '_') ? ch : (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
        }
        name[n] = '\0';
        if (lb_port_skip(name, n) || strpbrk(eq + 1, "\r\n") || (host[0] && !strcasecmp(name, "host")))
            continue;
        rc = lb_buf_printf(b, "%s: %s\r\n", name, eq + 1);
    }
    if (!rc && host[0])
        rc = lb_buf_printf(b, "Host: %s\r\n", host);
    const char *ct = lb_http_param(r, "CONTENT_TYPE"), *cl = lb_http_param(r, "CONTENT_LENGTH");
    if (!rc && ct && ct[0] && !strpbrk(ct, "\r\n"))
        rc = lb_buf_printf(b, "Content-Type: %s\r\n", ct);
    if (!rc && cl && cl[0] && strspn(cl, "0123456789") == strlen(cl))
        rc = lb_buf_printf(b, "Content-Length: %s\r\n", cl);
    if (!rc)
        rc = lb_buf_appends(b, "Connection: close\r\n\r\n");
    return rc;
}

static void lb_port_fail(lb_req *r, int status, const char *msg)
{
    lb_http_drain(r);
    lb_e2b_error_json(r, status, NULL, msg);
}

/* Copies the request body (CONTENT_LENGTH bytes, capped) to fd by the
 * deadline (lb_port_write's statuses, LB_E_TOOBIG over the cap). */
static int lb_port_body(lb_req *r, int fd, int64_t deadline)
{
    const char *cl = lb_http_param(r, "CONTENT_LENGTH");
    long long left = 0;
    if (cl && cl[0] && lb_parse_ll(cl, 0, LB_E2B_PORT_BODY_MAX, &left) != LB_OK)
        return LB_E_TOOBIG;
    char buf[65536];
    while (left > 0) {
        int n = FCGX_GetStr(buf, left < (long long)sizeof buf ? (int)left : (int)sizeof buf, r->fcgi->in);
        if (n <= 0)
            break;
        int rc = lb_port_write(r, fd, buf, (size_t)n, deadline);
        if (rc != LB_OK)
            return rc;
        left -= n;
    }
    return LB_OK;
}

/* Reads the answer's head into b (up to the blank line, capped) by the
 * deadline: the bytes after it are the body's first. LB_OK, or the
 * sandbox's side failed (LB_E_IO), sent something that is not an HTTP
 * head (LB_E_PROTO), was too slow (LB_E_TIMEOUT), or the client left
 * (LB_E_CANCELLED). */
static int lb_port_read_head(lb_req *r, int fd, lb_buf *b, size_t *head_len, int64_t deadline)
{
    char buf[16384];
    for (;;) {
        char *end = b->data ? strstr(b->data, "\r\n\r\n") : NULL;
        if (end) {
            *head_len = (size_t)(end - b->data) + 4;
            return LB_OK;
        }
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int why = lb_port_wait(r, fd, POLLIN, deadline);
            if (why != LB_PORT_READY)
                return why == LB_PORT_LATE ? LB_E_TIMEOUT : LB_E_CANCELLED;
            continue;
        }
        if (n <= 0)
            return LB_E_IO;
        if (memchr(buf, '\0', (size_t)n) || lb_buf_append(b, buf, (size_t)n) != LB_OK)
            return LB_E_PROTO;
    }
}

int lb_e2b_port_head(const char *head, size_t n, lb_buf *out, int *status)
{
    *status = 0;
    if (n < 4 || memcmp(head + n - 4, "\r\n\r\n", 4))
        return LB_E_PROTO;
    /* every line ends with CRLF; no other control character but a tab */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)head[i];
        if ((c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f)
            return LB_E_PROTO;
        if ((c == '\r' && (i + 1 >= n || head[i + 1] != '\n')) || (c == '\n' && (i == 0 || head[i - 1] != '\r')))
            return LB_E_PROTO;
    }
    const char *p = head, *end = head + n - 2; /* the last CRLF closes the head */
    const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
    int code = 0, skip = 0;
    char reason[64] = "";
    char line[128];
    size_t ll = (size_t)(eol - p);
    if (ll >= sizeof line)
        return LB_E_PROTO;
    memcpy(line, p, ll);
    line[ll] = '\0';
    /* "HTTP/1.x NNN[ reason]", exactly */
    if (ll < 12 || memcmp(line, "HTTP/1.", 7) || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
        strspn(line + 9, "0123456789") < 3 || (line[12] && line[12] != ' '))
        return LB_E_PROTO;
    code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    skip = 12;
    if (code < 100 || code > 599)
        return LB_E_PROTO;
    snprintf(reason, sizeof reason, "%.63s", line[skip] ? line + skip + 1 : ""); /* a long reason is cut */
    int rc = lb_buf_printf(out, "Status: %d %s\r\n", code, reason[0] ? reason : lb_http_reason(code));
    for (p = eol + 2; !rc && p < end; p = eol + 2) {
        eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        size_t nl = colon ? (size_t)(colon - p) : 0;
        if (!nl || memchr(p, ' ', nl) || memchr(p, '\t', nl))
            continue; /* not a header (or a folded line): left out */
        if (!lb_port_skip(p, nl))
            rc = lb_buf_printf(out, "%.*s\r\n", (int)(eol - p), p);
    }
    if (!rc)
        rc = lb_buf_appends(out, "\r\n");
    if (rc)
        return LB_E_PROTO;
    *status = code;
    return LB_OK;
}

int lb_e2b_port_body_len(const char *head, size_t n, int status, int is_head, long long *len)
{
    *len = -1;
    if (is_head || (status >= 100 && status < 200) || status == 204 || status == 304) {
        *len = 0;
        return LB_OK;
    }
    const char *nl = n >= 2 ? memmem(head, n, "\r\n", 2) : NULL;
    const char *end = head + n;
    long long cl = -1;
    int chunked = 0;
    for (const char *p = nl ? nl + 2 : end; p < end;) {
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (!eol || eol == p)
            break; /* the blank line */
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        size_t nn = colon ? (size_t)(colon - p) : 0;
        if (nn == 17 && !strncasecmp(p, "transfer-encoding", nn))
            chunked = 1;
        if (nn == 14 && !strncasecmp(p, "content-length", nn)) {
            const char *v = colon + 1, *ve = eol;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            char num[24];
            long long x;
            if (ve == v || (size_t)(ve - v) >= sizeof num)
                return LB_E_PROTO;
            memcpy(num, v, (size_t)(ve - v));
            num[ve - v] = '\0';
            if (strspn(num, "0123456789") != strlen(num) || lb_parse_ll(num, 0, 1ll << 62, &x) != LB_OK ||
                (cl >= 0 && x != cl))
                return LB_E_PROTO;
            cl = x;
        }
        p = eol + 2;
    }
    *len = chunked ? -1 : cl;
    return LB_OK;
}

/* Writes the answer's head as FastCGI's (lb_e2b_port_head); *left gets
 * its body's length (lb_e2b_port_body_len). Nothing is written when
 * either refuses the head. */
static int lb_port_answer_head(lb_req *r, const char *head, size_t n, long long *left)
{
    lb_buf out;
    lb_buf_init(&out, LB_E2B_PORT_HEAD_MAX + 256);
    int status;
    int rc = lb_e2b_port_head(head, n, &out, &status);
    if (!rc)
        rc = lb_e2b_port_body_len(head, n, status, r->is_head, left);
    if (!rc) {
        r->responded = 1;
        r->status = status;
        FCGX_PutStr(out.data, (int)out.len, r->fcgi->out);
        r->head_bytes = lb_access_bytes(r);
    }
    lb_buf_free(&out);
    return rc;
}

/* Takes a relay's place for sandbox s, or answers 429/503 and returns 0. */
static int lb_port_admit(lb_req *r, lb_sbx *s, char *key, size_t keysz)
{
    const lb_config *cfg = r->cfg;
    int total = cfg->e2b_port_max > 0 ? cfg->e2b_port_max : cfg->web_threads / 4;
    snprintf(key, keysz, "s:%s", s->id);
    int rc = lb_slots_take(&lb_port_slots, total, cfg->e2b_port_max_per_sandbox, key);
    if (rc == LB_OK)
        return 1;
    lb_http_drain(r);
    if (rc == LB_E_TOOBIG)
        lb_http_error_hdr(r, 429, "too_many_requests", "Retry-After: 2\r\n",
                          "The sandbox already has %d requests relayed to its ports, the most one sandbox may have "
                          "(LLMBOX_E2B_PORT_MAX_PER_SANDBOX); try again once they are answered.",
                          cfg->e2b_port_max_per_sandbox);
    else
        lb_http_error_hdr(r, 503, "relays_busy", "Retry-After: 2\r\n",
                          "The server already relays %d requests to sandboxes' ports, the most it relays at once so "
                          "that other requests are still answered (LLMBOX_E2B_PORT_MAX); try again in a moment.",
                          total < 1 ? 1 : total);
    return 0;
}

/* The answer's body, as it comes (a server may stream it), left bytes of
 * it (-1: until the server closes): each wait is at most
 * LB_E2B_PORT_IDLE_S, and the client leaving ends it. */
static void lb_port_copy_body(lb_req *r, int fd, long long left)
{
    char buf[65536];
    while (left != 0) {
        size_t want = left > 0 && left < (long long)sizeof buf ? (size_t)left : sizeof buf;
        ssize_t n = recv(fd, buf, want, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (lb_port_wait(r, fd, POLLIN, lb_mono_ms() + LB_E2B_PORT_IDLE_S * 1000) != LB_PORT_READY)
                return; /* idle too long, or the client left */
            continue;
        }
        if (n <= 0)
            return;
        if (!r->is_head && (FCGX_PutStr(buf, (int)n, r->fcgi->out) < 0 || FCGX_FFlush(r->fcgi->out) < 0))
            return; /* the client left */
        if (left > 0)
            left -= n;
    }
}

void lb_e2b_port(lb_req *r, lb_sbx *s, int port)
{
    char err[512], key[LB_SLOT_KEY_MAX];
    lbsb_conn *c = NULL;
    int fd = -1;
    const lb_config *cfg = r->cfg;
    if (!lb_port_admit(r, s, key, sizeof key))
        return;
    /* from here: the request's sending and the answer's head */
    int64_t deadline = lb_mono_ms() + (int64_t)cfg->e2b_port_head_s * 1000;
    lb_buf head;
    lb_buf_init(&head, LB_E2B_PORT_HEAD_MAX);
    int rc = lbsb_connect(cfg->sandboxd_socket, &s->cancel, &c, err, sizeof err);
    if (rc == LB_OK)
        rc = lbsb_port_connect(c, s->sbx_id, port, &fd, err, sizeof err);
    lbsb_close(c);
    if (rc == LB_E_NOTFOUND) {
        /* E2B's edge answers 502 with this sentence */
        char msg[600];
        snprintf(msg, sizeof msg, "The sandbox is running but port is not open: %s", err);
        lb_port_fail(r, 502, msg);
        goto out;
    }
    if (rc) {
        lb_port_fail(r, 502, err);
        goto out;
    }
    const char *target = r->path + strlen("/e2b/sandbox");
    char mask[LB_SBX_MASK_HOST_MAX], host[LB_SBX_MASK_HOST_MAX] = "";
    lb_sbx_mask_host_of(s, mask, sizeof mask);
    if (mask[0])
        lb_e2b_mask_host_apply(mask, port, host, sizeof host);
    rc = lb_port_head(r, target[0] ? target : "/", host, &head);
    if (rc) {
        lb_port_fail(r, 431, "The request's headers are too large to relay.");
        goto out;
    }
    rc = lb_port_write(r, fd, head.data, head.len, deadline);
    if (rc == LB_OK)
        rc = lb_port_body(r, fd, deadline);
    if (rc == LB_E_TOOBIG) {
        lb_port_fail(r, 413, "The request body is over 64 MiB.");
        goto out;
    }
    lb_http_drain(r); /* what the server did not take */
    /* a server may answer before it read the whole body (and then stop
     * reading it): its answer counts, not the failed write; but a server
     * that takes the body too slowly has used the deadline */
    if (rc != LB_E_TIMEOUT && rc != LB_E_CANCELLED) {
        lb_buf_reset(&head);
        size_t hl = 0;
        rc = lb_port_read_head(r, fd, &head, &hl, deadline);
        if (rc == LB_OK) {
            long long left = -1;
            if (lb_port_answer_head(r, head.data, hl, &left) != LB_OK) {
                lb_port_fail(r, 502, "The server in the sandbox sent an answer that is not HTTP/1.0 or 1.1 "
                             "(or a Content-Length that is not one number).");
                goto out;
            }
            size_t extra = head.len - hl; /* the body's first bytes came with the head */
            if (left >= 0 && (long long)extra > left)
                extra = (size_t)left; /* what follows the body is not the answer's */
            if (extra && !r->is_head)
                FCGX_PutStr(head.data + hl, (int)extra, r->fcgi->out);
            lb_port_copy_body(r, fd, left < 0 ? -1 : left - (long long)extra);
            goto out;
        }
    }
    if (rc == LB_E_CANCELLED) {
        /* nobody reads this: the access log's 499, like nginx's */
        lb_port_fail(r, 499, "The client closed the connection before the sandbox's server answered.");
    } else if (rc == LB_E_TIMEOUT) {
        char msg[200];
        snprintf(msg, sizeof msg, "The server in the sandbox did not take the request and answer its head within "
                 "%d s (LLMBOX_E2B_PORT_HEAD_S).", cfg->e2b_port_head_s);
        lb_port_fail(r, 504, msg);
    } else {
        lb_port_fail(r, 502, rc == LB_E_PROTO ? "The server in the sandbox sent no valid HTTP answer head (at most 64 KiB)."
                                              : "The server in the sandbox closed the connection before it answered.");
    }
out:
    lb_buf_free(&head);
    if (fd >= 0)
        close(fd);
    lb_slots_release(&lb_port_slots, key);
}
