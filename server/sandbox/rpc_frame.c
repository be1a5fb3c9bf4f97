/* Frame I/O: 4-byte big-endian length, then the payload. */
#include "sandbox/rpc.h"

#include "common/status.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* How often a blocked client call re-checks *cancel: a signal handler that
 * was installed with SA_RESTART never makes poll() return EINTR. */
#define LBSD_CANCEL_TICK_MS 200

void lbsd_frame_header(unsigned char hdr[LBSD_FRAME_HDR], uint32_t n)
{
    hdr[0] = (unsigned char)(n >> 24);
    hdr[1] = (unsigned char)(n >> 16);
    hdr[2] = (unsigned char)(n >> 8);
    hdr[3] = (unsigned char)n;
}

static uint32_t lbsd_frame_len(const unsigned char hdr[LBSD_FRAME_HDR])
{
    return (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
}

/* Waits until fd is ready for ev; LB_OK, LB_E_CANCELLED or LB_E_UNAVAILABLE. */
static int lbsd_wait(int fd, short ev, volatile int *cancel)
{
    for (;;) {
        if (cancel && *cancel)
            return LB_E_CANCELLED;
        struct pollfd p = {.fd = fd, .events = ev};
        int r = poll(&p, 1, LBSD_CANCEL_TICK_MS);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return LB_E_UNAVAILABLE;
        }
        if (r == 0)
            continue;
        if (p.revents & POLLNVAL)
            return LB_E_UNAVAILABLE;
        /* POLLHUP/POLLERR: let read/write report what happened */
        return LB_OK;
    }
}

/* Sends the iovecs whole. The send is tried before any poll: a local
 * socket almost always has room, and a poll first is one more syscall on
 * every call (the web's sandbox calls are on the exec path). The cancel
 * flag is still checked before each try, as before each poll. */
static int lbsd_sendv_all(int fd, struct iovec *iov, int cnt, volatile int *cancel)
{
    while (cnt > 0) {
        if (iov->iov_len == 0) {
            iov++;
            cnt--;
            continue;
        }
        if (cancel && *cancel)
            return LB_E_CANCELLED;
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
        ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return LB_E_UNAVAILABLE;
            int rc = lbsd_wait(fd, POLLOUT, cancel);
            if (rc)
                return rc;
            continue;
        }
        size_t left = (size_t)w;
        while (cnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return LB_OK;
}

/* Reads n bytes; the read is tried before any poll (see lbsd_sendv_all). */
static int lbsd_recv_all(int fd, void *p, size_t n, volatile int *cancel)
{
    char *c = p;
    while (n) {
        if (cancel && *cancel)
            return LB_E_CANCELLED;
        ssize_t r = recv(fd, c, n, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return LB_E_UNAVAILABLE;
            int rc = lbsd_wait(fd, POLLIN, cancel);
            if (rc)
                return rc;
            continue;
        }
        if (r == 0)
            return LB_E_UNAVAILABLE;
        c += r;
        n -= (size_t)r;
    }
    return LB_OK;
}

int lbsd_frame_wait(int fd, volatile int *cancel)
{
    return lbsd_wait(fd, POLLIN, cancel);
}

int lbsd_frame_send(int fd, const void *a, size_t alen, volatile int *cancel)
{
    if (alen > LLMBOX_RPC_MAX_FRAME)
        return LB_E_TOOBIG;
    unsigned char hdr[LBSD_FRAME_HDR];
    lbsd_frame_header(hdr, (uint32_t)alen);
    /* one send for header and payload: sandboxd is not woken for a bare
     * header, and it is one syscall less */
    struct iovec iov[2] = {{.iov_base = hdr, .iov_len = sizeof hdr}, {.iov_base = (void *)a, .iov_len = alen}};
    return lbsd_sendv_all(fd, iov, 2, cancel);
}

int lbsd_frame_recv(int fd, size_t max, char **data, size_t *len, volatile int *cancel)
{
    *data = NULL;
    *len = 0;
    unsigned char hdr[LBSD_FRAME_HDR];
    int rc = lbsd_recv_all(fd, hdr, sizeof hdr, cancel);
    if (rc)
        return rc;
    uint32_t n = lbsd_frame_len(hdr);
    if (n > max || n > LLMBOX_RPC_MAX_FRAME)
        return LB_E_PROTO;
    char *buf = malloc((size_t)n + 1);
    if (!buf)
        return LB_E_NOMEM;
    rc = lbsd_recv_all(fd, buf, n, cancel);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return LB_OK;
}

void lbsd_decoder_init(lbsd_decoder *d, size_t max)
{
    memset(d, 0, sizeof *d);
    d->max = max > LLMBOX_RPC_MAX_FRAME ? LLMBOX_RPC_MAX_FRAME : max;
}

void lbsd_decoder_free(lbsd_decoder *d)
{
    free(d->payload);
    d->payload = NULL;
    d->hdr_got = d->want = d->got = 0;
}

int lbsd_decoder_feed(lbsd_decoder *d, const char *p, size_t n, size_t *used,
                      char **frame, size_t *flen)
{
    size_t u = 0;
    *used = 0;
    *frame = NULL;
    *flen = 0;
    if (d->hdr_got < LBSD_FRAME_HDR) {
        size_t take = LBSD_FRAME_HDR - d->hdr_got;
        if (take > n)
            take = n;
        memcpy(d->hdr + d->hdr_got, p, take);
        d->hdr_got += take;
        u += take;
        if (d->hdr_got < LBSD_FRAME_HDR) {
            *used = u;
            return 0;
        }
        uint32_t len = lbsd_frame_len(d->hdr);
        if (len > d->max) {
            *used = u;
            return -LB_E_PROTO;
        }
        /* allocate exactly what the header promised, after the cap check */
        d->payload = malloc((size_t)len + 1);
        if (!d->payload) {
            *used = u;
            return -LB_E_NOMEM;
        }
        d->want = len;
        d->got = 0;
    }
    size_t take = d->want - d->got;
    if (take > n - u)
        take = n - u;
    memcpy(d->payload + d->got, p + u, take);
    d->got += take;
    u += take;
    /* the payload was allocated for want bytes: never more, never past p */
    LB_ASSERT(d->got <= d->want && u <= n);
    *used = u;
    if (d->got < d->want)
        return 0;
    d->payload[d->want] = '\0';
    *frame = d->payload;
    *flen = d->want;
    d->payload = NULL;
    d->hdr_got = d->want = d->got = 0;
    return 1;
}
