/*
 * port_connect (issue 17, E2B's sbx.getHost(port)): a TCP connection to
 * 127.0.0.1:<port> inside a sandbox's network namespace, opened by
 * sandboxd and handed to the client over SCM_RIGHTS with the answer, so
 * that the client (the web) can relay a request to a server the
 * sandbox's code started. The sandbox gets no new network access: the
 * connection comes from outside into its loopback, and only a client of
 * the uid that created the sandbox can ask.
 *
 * The connect runs in a thread of its own that enters the namespace and
 * ends: the loop's thread never changes namespace. The loop waits for it
 * (pthread_join): a connect to loopback is answered at once (a listener or
 * RST), bounded by a send timeout when a listener's backlog is full.
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
#include <sys/time.h>
#include <unistd.h>

#define LBSD_PORT_CONNECT_MS 1000  /* a listener whose backlog is full */

typedef struct {
    int nsfd;
    int port;
    int fd;                        /* out: the connected socket, or -1 */
    int err;                       /* out: errno when -1 */
} lbsd_port_job;

static void *lbsd_port_thread(void *arg)
{
    lbsd_port_job *j = arg;
    j->fd = -1;
    if (setns(j->nsfd, CLONE_NEWNET) != 0) {
        j->err = errno;
        return NULL;
    }
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        j->err = errno;
        return NULL;
    }
    struct timeval tv = {.tv_sec = LBSD_PORT_CONNECT_MS / 1000, .tv_usec = (LBSD_PORT_CONNECT_MS % 1000) * 1000};
    (void)setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* bounds the connect; without it, the default */
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)j->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        j->err = errno;
        close(s);
        return NULL;
    }
    tv.tv_sec = tv.tv_usec = 0;
    (void)setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* the client sets its own */
    j->fd = s;
    return NULL;
}

/* The answer frame with fd attached to its first byte, sent now: the
 * connection's queue is empty (checked), and a small frame fits an idle
 * socket's buffer; what does not go out at once is queued as usual. */
static void lbsd_port_answer(lbsd_conn *c, int port, int fd)
{
    char txt[96];
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
    char ns[64];
    snprintf(ns, sizeof ns, "/proc/%d/ns/net", (int)sb->init_pid);
    lbsd_port_job j = {.nsfd = open(ns, O_RDONLY | O_CLOEXEC), .port = port, .fd = -1};
    if (j.nsfd < 0) {
        lbsd_reply_error(c, LB_E_SANDBOX, "cannot open the sandbox's network namespace: %s", strerror(errno));
        return;
    }
    pthread_t t;
    int rc = pthread_create(&t, NULL, lbsd_port_thread, &j);
    if (rc == 0)
        pthread_join(t, NULL);
    else
        j.err = rc;
    close(j.nsfd);
    if (j.fd < 0) {
        if (j.err == ECONNREFUSED)
            lbsd_reply_error(c, LB_E_NOTFOUND, "nothing listens on port %d in sandbox %s (127.0.0.1)", port, sb->id);
        else
            lbsd_reply_error(c, LB_E_SANDBOX, "cannot connect to port %d in sandbox %s: %s", port, sb->id,
                             strerror(j.err));
        return;
    }
    lbsd_port_answer(c, port, j.fd);
}
