/*
 * port_connect (E2B's sbx.getHost(port)): a TCP connection to
 * 127.0.0.1:<port> inside a sandbox's network namespace, opened by
 * sandboxd and handed to the client over SCM_RIGHTS with the answer, so
 * that the client (the web) can relay a request to a server the
 * sandbox's code started. The sandbox gets no new network access: the
 * connection comes from outside into its loopback, and only a client of
 * the uid that created the sandbox can ask.
 *
 * The socket is made in a thread of its own that enters the namespace,
 * starts a non-blocking connect and ends: the loop's thread never changes
 * namespace, and it waits (pthread_join) only for setns, socket and a
 * connect that cannot block. The connect then finishes on the loop: the
 * socket is polled for POLLOUT, and a connect still pending at its
 * deadline (a listener whose backlog is full and that never accepts, a
 * server the sandbox's own code runs) is answered "timeout". Nothing a
 * sandbox does makes the loop wait, whatever number of connects pend:
 * they are capped per sandbox and in all (their descriptors are ours).
 */
#include "sandboxd/sandbox_proc.h"

#include "sandboxd/fdpass.h"

#include "common/log.h"
#include "common/status.h"
#include "sandboxd/reply.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LBSD_PORT_CONNECT_MS 3000  /* a SYN that a full backlog dropped is sent again after 1 s */
#define LBSD_PORT_PENDING_SB 64    /* connects pending per sandbox */
#define LBSD_PORT_PENDING_ALL 1024 /* in all (descriptors of ours) */

typedef struct {
    int nsfd;
    int port;
    int fd;                        /* out: the socket (connect started or done), or -1 */
    int err;                       /* out: connect's errno (EINPROGRESS: pending), or why fd is -1 */
} lbsd_port_job;

/* A connect the loop finishes. */
typedef struct lbsd_port_wait {
    struct lbsd_port_wait *next;
    lbsd_conn *c;                  /* waits for the answer (not read meanwhile) */
    lbsd_sandbox *sb;
    char id[LB_ID_HEX_LEN + 1];
    int port;
    int fd;
    int64_t deadline_ms;
} lbsd_port_wait;

static lbsd_port_wait *g_waits;
static size_t g_nwaits;

static void *lbsd_port_thread(void *arg)
{
    lbsd_port_job *j = arg;
    j->fd = -1;
    if (setns(j->nsfd, CLONE_NEWNET) != 0) {
        j->err = errno;
        return NULL;
    }
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) {
        j->err = errno;
        return NULL;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)j->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    j->err = 0;
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        j->err = errno;
        if (j->err != EINPROGRESS) {
            close(s);
            return NULL;
        }
    }
    j->fd = s;
    return NULL;
}

/* The answer frame with fd attached to its first byte, sent now: the
 * connection's queue is empty (checked), and a small frame fits an idle
 * socket's buffer; what does not go out at once is queued as usual.
 * The socket goes back to blocking mode: the client sets its own timeouts. */
static void lbsd_port_answer(lbsd_conn *c, int port, int fd)
{
    char txt[96];
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK); /* a client that wants it sets it again */
    int n = snprintf(txt + 4, sizeof txt - 4, "{\"ok\":true,\"port\":%d,\"fd\":true}", port);
    lbsd_frame_header((unsigned char *)txt, (uint32_t)n);
    ssize_t w = lbsd_fds_send(c->fd, txt, (size_t)n + 4, &fd, 1, MSG_DONTWAIT);
    close(fd);
    if (w < 0) {
        lb_warn("connection %d: cannot hand over a port connection: %s", c->fd, strerror(errno));
        c->dead = 1;
        return;
    }
    if ((size_t)w < (size_t)n + 4 && lb_buf_append(&c->out, txt + w, (size_t)n + 4 - (size_t)w) != LB_OK)
        c->dead = 1;
}

/* The connect's outcome err (0: connected) for c, with fd taken. */
static void lbsd_port_finish(lbsd_conn *c, const char *id, int port, int fd, int err)
{
    if (!err) {
        lbsd_port_answer(c, port, fd);
        return;
    }
    if (fd >= 0)
        close(fd);
    if (err == ECONNREFUSED)
        lbsd_reply_error(c, LB_E_NOTFOUND, "nothing listens on port %d in sandbox %s (127.0.0.1)", port, id);
    else if (err == ETIMEDOUT)
        lbsd_reply_error(c, LB_E_TIMEOUT, "the server on port %d in sandbox %s did not accept the connection "
                                          "within %d ms (its backlog is full)", port, id, LBSD_PORT_CONNECT_MS);
    else
        lbsd_reply_error(c, LB_E_SANDBOX, "cannot connect to port %d in sandbox %s: %s", port, id, strerror(err));
}

static void lbsd_port_unlink(lbsd_port_wait *w)
{
    for (lbsd_port_wait **pp = &g_waits; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            g_nwaits--;
            return;
        }
}

/* Answers w with err (0: connected) and forgets it. */
static void lbsd_port_done(lbsd_port_wait *w, int err)
{
    lbsd_port_unlink(w);
    lbsd_conn *c = w->c;
    c->creating = 0;
    lbsd_port_finish(c, w->id, w->port, w->fd, err);
    free(w);
}

static size_t lbsd_port_pending(const lbsd_sandbox *sb)
{
    size_t n = 0;
    for (const lbsd_port_wait *w = g_waits; w; w = w->next)
        n += w->sb == sb;
    return n;
}

void lbsd_port_request(lbsd_conn *c, const lbsd_req *req)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(req->json, "port");
    if (!cJSON_IsNumber(p) || p->valuedouble < 1 || p->valuedouble > 65535 || p->valuedouble != (double)(int)p->valuedouble) {
        lbsd_reply_error(c, LB_E_INVAL, "\"port\" must be a TCP port from 1 to 65535");
        return;
    }
    int port = (int)p->valuedouble;
    if (c->busy || c->out_off < c->out.len || c->deferred.len) {
        lbsd_reply_error(c, LB_E_BUSY, "port_connect needs a connection with no answer waiting to be sent "
                                       "(one request at a time)");
        return;
    }
    lbsd_sandbox *sb = lbsd_proc_sandbox(c, req);
    if (!sb)
        return;
    if (sb->frozen) {
        lbsd_reply_error(c, LB_E_BUSY, "sandbox is frozen: thaw it (resume) first");
        return;
    }
    if (g_nwaits >= LBSD_PORT_PENDING_ALL || lbsd_port_pending(sb) >= LBSD_PORT_PENDING_SB) {
        lbsd_reply_error(c, LB_E_BUSY, "sandbox %s has %d port connections waiting for its servers to accept "
                                       "them already: try again later", sb->id, LBSD_PORT_PENDING_SB);
        return;
    }
    lbsd_port_wait *w = calloc(1, sizeof *w);
    if (!w) {
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        return;
    }
    char ns[64];
    snprintf(ns, sizeof ns, "/proc/%d/ns/net", (int)sb->init_pid);
    lbsd_port_job j = {.nsfd = open(ns, O_RDONLY | O_CLOEXEC), .port = port, .fd = -1};
    if (j.nsfd < 0) {
        free(w);
        lbsd_reply_error(c, LB_E_SANDBOX, "cannot open the sandbox's network namespace: %s", strerror(errno));
        return;
    }
    pthread_t t;
    int rc = pthread_create(&t, NULL, lbsd_port_thread, &j);
    if (rc == 0)
        pthread_join(t, NULL); /* setns, socket and a non-blocking connect: nothing that waits */
    else
        j.err = rc;
    close(j.nsfd);
    if (j.fd < 0 || j.err != EINPROGRESS) {
        free(w);
        lbsd_port_finish(c, sb->id, port, j.fd, j.fd < 0 && !j.err ? EIO : j.err);
        return;
    }
    w->c = c;
    w->sb = sb;
    snprintf(w->id, sizeof w->id, "%s", sb->id);
    w->port = port;
    w->fd = j.fd;
    w->deadline_ms = lb_mono_ms() + LBSD_PORT_CONNECT_MS;
    w->next = g_waits;
    g_waits = w;
    g_nwaits++;
    c->creating = 1; /* not read until the connect is answered: answers stay in order */
}

size_t lbsd_port_fd_count(void)
{
    return g_nwaits;
}

void lbsd_port_poll(void (*add)(void *arg, int fd, short events, lbsd_sandbox *sb), void *arg)
{
    for (lbsd_port_wait *w = g_waits; w; w = w->next)
        add(arg, w->fd, POLLOUT, w->sb);
}

int lbsd_port_on_ready(int fd)
{
    for (lbsd_port_wait *w = g_waits; w; w = w->next) {
        if (w->fd != fd)
            continue;
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        lbsd_port_done(w, err);
        return 1;
    }
    return 0;
}

int lbsd_port_tick(int64_t now)
{
    int64_t next = -1;
    for (lbsd_port_wait *w = g_waits, *nx; w; w = nx) {
        nx = w->next;
        if (w->deadline_ms <= now)
            lbsd_port_done(w, ETIMEDOUT);
        else if (next < 0 || w->deadline_ms - now < next)
            next = w->deadline_ms - now;
    }
    return (int)next;
}

void lbsd_port_sandbox_gone(const lbsd_sandbox *sb, const char *why)
{
    for (lbsd_port_wait *w = g_waits, *nx; w; w = nx) {
        nx = w->next;
        if (w->sb != sb)
            continue;
        lbsd_port_unlink(w);
        w->c->creating = 0;
        close(w->fd);
        lbsd_reply_error(w->c, LB_E_SANDBOX, "sandbox %s is gone: %s", w->id, why);
        free(w);
    }
}

void lbsd_port_conn_closed(const lbsd_conn *c)
{
    for (lbsd_port_wait *w = g_waits, *nx; w; w = nx) {
        nx = w->next;
        if (w->c != c)
            continue;
        lbsd_port_unlink(w);
        close(w->fd);
        free(w);
    }
}
