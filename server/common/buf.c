#include "buf.h"
#include "status.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void lb_buf_init(lb_buf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

void lb_buf_free(lb_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void lb_buf_reset(lb_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int lb_buf_reserve(lb_buf *b, size_t n)
{
    /* every append stays under max, so len can never have passed it */
    LB_ASSERT(b->len <= b->max && (!b->data || b->len < b->cap));
    if (n > b->max || b->len + n > b->max)
        return LB_E_TOOBIG;
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return LB_OK;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < need)
        ncap *= 2;
    if (ncap > b->max + 1)
        ncap = b->max + 1;
    char *p = realloc(b->data, ncap);
    if (!p)
        return LB_E_NOMEM;
    b->data = p;
    b->cap = ncap;
    return LB_OK;
}

int lb_buf_append(lb_buf *b, const void *p, size_t n)
{
    int rc = lb_buf_reserve(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    LB_ASSERT(b->len <= b->max && b->len < b->cap);
    return LB_OK;
}

int lb_buf_appends(lb_buf *b, const char *s)
{
    return lb_buf_append(b, s, strlen(s));
}

int lb_buf_printf(lb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return LB_E_INVAL;
    int rc = lb_buf_reserve(b, (size_t)n);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    LB_ASSERT(b->len <= b->max && b->len < b->cap && b->data[b->len] == '\0');
    return LB_OK;
}

size_t lb_buf_append_trunc(lb_buf *b, const void *p, size_t n)
{
    size_t room = b->max > b->len ? b->max - b->len : 0;
    size_t take = n < room ? n : room;
    if (take && lb_buf_append(b, p, take) != LB_OK)
        return n;
    return n - take;
}

char *lb_buf_steal(lb_buf *b, size_t *len)
{
    char *d = b->data;
    if (!d) {
        d = calloc(1, 1);
    }
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

static int64_t buf_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int lb_buf_read_fd(lb_buf *b, int fd, int timeout_ms)
{
    int64_t deadline = buf_mono_ms() + timeout_ms;
    char chunk[8192];
    for (;;) {
        int64_t left = deadline - buf_mono_ms();
        if (left <= 0)
            return LB_E_TIMEOUT;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return pr == 0 ? LB_E_TIMEOUT : LB_E_IO;
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return LB_OK;
        if (lb_buf_append(b, chunk, (size_t)n) != LB_OK)
            return LB_E_TOOBIG;
    }
}
