/* GET /api/tasks/{id}/events: the task's events as Server-Sent Events.
 *
 * The store is the source of truth: the stream reads lb_store_events_after
 * from the last seq it sent, so a stream started by a different web
 * process, or resumed after a reconnect (Last-Event-ID), sees exactly the
 * same events. WAL mode makes these reads free of writer locks. Between
 * reads the stream sleeps until the process's watcher (sse_watch.c) says
 * its task has newer events, or until its own timers (heartbeat, the
 * task-exists check, LLMBOX_SSE_MAX_S) are due; without the watcher it
 * reads every 100 ms. The stream ends after "done", or after
 * LLMBOX_SSE_MAX_S when set: the browser then reconnects with
 * Last-Event-ID and misses nothing, so a proxy can spread long streams and
 * the resume path is one that runs every day, not only after a failure.
 */
#include "web/sse.h"

#include "web/http.h"
#include "store/store.h"

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"
#include "web/sse_admit.h"
#include "web/sse_watch.h"

#include <fcgiapp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define LB_SSE_POLL_MS 100
#define LB_SSE_HEARTBEAT_MS 15000
#define LB_SSE_EXISTS_CHECK_MS 5000
#define LB_SSE_BATCH 500

typedef struct lb_sse {
    lb_req *r;
    int64_t last;
    int done;
    int broken;
    int sent;
} lb_sse;

static int lb_sse_put(lb_sse *s, const char *p, size_t n)
{
    if (FCGX_PutStr(p, (int)n, s->r->fcgi->out) < 0) {
        s->broken = 1;
        return -1;
    }
    return 0;
}

static int lb_sse_event(void *arg, int64_t seq, int64_t ts_ms, const char *type, const char *data)
{
    (void)ts_ms;
    lb_sse *s = arg;
    char head[96];
    int n = snprintf(head, sizeof head, "id: %lld\nevent: %s\n", (long long)seq, type);
    if (lb_sse_put(s, head, (size_t)n))
        return 1;
    /* One "data:" line per line of data: stored JSON is compact and has no
     * raw newlines, but a line break must never end the event early. */
    const char *p = data;
    for (;;) {
        const char *nl = strpbrk(p, "\r\n");
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (lb_sse_put(s, "data: ", 6) || lb_sse_put(s, p, len) || lb_sse_put(s, "\n", 1))
            return 1;
        if (!nl)
            break;
        p = nl + 1 + (nl[0] == '\r' && nl[1] == '\n');
    }
    if (lb_sse_put(s, "\n", 1))
        return 1;
    s->last = seq;
    s->sent++;
    if (!strcmp(type, "done"))
        s->done = 1;
    return 0;
}

/* The eventfd this worker thread's streams sleep on: made at its first
 * stream and kept (worker threads serve requests until the process
 * ends). -1 when none can be made: the stream then polls. */
static int lb_sse_wake_fd(void)
{
    static _Thread_local int fd = -1;
    if (fd < 0)
        fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd;
}

static void lb_sse_wake_clear(int fd)
{
    uint64_t n;
    ssize_t got = read(fd, &n, sizeof n); /* zeroes the counter; EAGAIN when it was */
    (void)got;
}

/* Waits up to ms for a wake on fd (-1: none) or for the front end to close
 * our connection (the browser went away and nginx gave up the request),
 * and returns 1 for the latter. Without it a stream would only notice at
 * its next write, up to a heartbeat later. */
static int lb_sse_wait(lb_req *r, int fd, int64_t ms)
{
    struct pollfd p[2] = {{.fd = r->fcgi->ipcFd, .events = POLLRDHUP}, {.fd = fd, .events = POLLIN}};
    int n = poll(p, fd >= 0 ? 2 : 1, ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms);
    return n > 0 && (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* When a watched stream next has to look on its own: heartbeat, the
 * task-exists check or its end. */
static int64_t lb_sse_due(int64_t last_write, int64_t last_check, int64_t end_at)
{
    int64_t due = last_write + LB_SSE_HEARTBEAT_MS;
    if (last_check + LB_SSE_EXISTS_CHECK_MS < due)
        due = last_check + LB_SSE_EXISTS_CHECK_MS;
    if (end_at && end_at < due)
        due = end_at;
    return due;
}

int64_t lb_sse_parse_last_id(const char *v, size_t n)
{
    /* Only what we send: "id: N" with N a plain decimal, and browsers echo
     * it byte for byte. 18 digits cannot overflow int64_t. */
    if (!v || n == 0 || n > 18)
        return 0;
    int64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return 0;
        x = x * 10 + (v[i] - '0');
    }
    return x;
}

static int lb_sse_admit(lb_req *r, int *place);
static void lb_sse_stream(lb_req *r, lb_sse *sp, int final);

void lb_h_task_events(lb_req *r)
{
    char status[16];
    int rc = lb_store_task_state(r->store, r->id, status, sizeof status, NULL);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task");
        return;
    }
    lb_sse s = {.r = r};
    /* EventSource sends Last-Event-ID on its own reconnects; the query
     * parameter lets a page resume after a reload. */
    const char *hdr = lb_http_param(r, "HTTP_LAST_EVENT_ID");
    char q[32];
    if (hdr && *hdr)
        s.last = lb_sse_parse_last_id(hdr, strlen(hdr));
    else if (lb_query_get(r->query, "last_event_id", q, sizeof q) == LB_OK)
        s.last = lb_sse_parse_last_id(q, strlen(q));
    /* A task that has ended has all its events stored (the done event is
     * written in the transaction that ends it): once a read finds nothing
     * new, nothing will come, even for a client that resumes after an id
     * past the end. Without this such a stream would hold a worker thread
     * with keepalives forever. */
    int final = lb_task_status_is_final(lb_task_status_parse(status));

    if (r->is_head) {
        lb_http_head(r, 200, "text/event-stream; charset=utf-8", "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n");
        return;
    }
    /* a stream holds this thread until it ends: admitted within its
     * client's share and the streams' share of the threads (sse_admit.h) */
    int place = -1;
    if (!lb_sse_admit(r, &place))
        return;
    lb_http_head(r, 200, "text/event-stream; charset=utf-8", "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n");
    lb_sse_stream(r, &s, final);
    lb_sse_admit_release(place);
}

/* Takes a place for r's stream, or answers 429 and returns 0. */
static int lb_sse_admit(lb_req *r, int *place)
{
    char key[LB_SSE_KEY_MAX];
    const char *addr = lb_http_param(r, "REMOTE_ADDR");
    /* per user with users (every address of theirs together); without, per
     * address: nginx's REMOTE_ADDR is the connection's own address, never
     * a header the client chose (X-Real-IP, X-Forwarded-For are ignored) */
    if (r->user)
        snprintf(key, sizeof key, "u:%s", r->user->name);
    else
        snprintf(key, sizeof key, "a:%s", addr && *addr ? addr : "?");
    int rc = lb_sse_admit_take(key, place);
    if (rc == LB_OK)
        return 1;
    if (rc == LB_E_TOOBIG)
        lb_http_error_hdr(r, 429, "too_many_streams", "Retry-After: 5\r\n",
                          "%s already has %d event streams open, the most one %s may hold "
                          "(LLMBOX_SSE_MAX_PER_CLIENT); close one (a tab showing a task) and try again.",
                          r->user ? "This user" : "This client address", lb_sse_admit_per_client(),
                          r->user ? "user" : "client address");
    else
        lb_http_error_hdr(r, 429, "too_many_streams", "Retry-After: 5\r\n",
                          "The server already has %d event streams open, the most it keeps so that other "
                          "requests are still answered (LLMBOX_WEB_THREADS minus LLMBOX_SSE_RESERVE_THREADS); "
                          "try again in a moment.", lb_sse_admit_total());
    return 0;
}

/* The stream itself, once admitted and its head sent. */
static void lb_sse_stream(lb_req *r, lb_sse *sp, int final)
{
    lb_sse s = *sp;
    char status[16];
    int rc;
    FCGX_PutS("retry: 2000\n\n", r->fcgi->out);
    if (FCGX_FFlush(r->fcgi->out) < 0)
        return;

    /* registered before the first read: see sse_watch.c for why no wake
     * is lost */
    lb_sse_waiter w;
    int fd = lb_sse_wake_fd();
    int added = lb_sse_watch_add(&w, r->id, fd, s.last), watched = added;
    int64_t last_write = lb_mono_ms(), last_check = last_write;
    const lb_config *cfg = r->cfg;
    int64_t end_at = cfg->sse_max_s > 0 ? last_write + (int64_t)cfg->sse_max_s * 1000 : 0;
    while (!s.done && !s.broken) {
        if (end_at && lb_mono_ms() >= end_at)
            break; /* the client resumes from s.last */
        if (watched)
            lb_sse_wake_clear(fd); /* a wake for what this read misses comes after it */
        s.sent = 0;
        rc = lb_store_events_after(r->store, r->id, s.last, LB_SSE_BATCH, lb_sse_event, &s);
        if (rc != LB_OK && !s.broken) {
            if (rc == LB_E_TIMEOUT)
                continue; /* busy for 10 s: try again */
            lb_warn("web: task %s: event stream stopped: %s", r->id, lb_strerror(rc));
            break;
        }
        if (!s.sent && final)
            break;
        int64_t now = lb_mono_ms();
        if (s.sent) {
            if (FCGX_FFlush(r->fcgi->out) < 0)
                break;
            last_write = now;
            if (s.sent == LB_SSE_BATCH)
                continue; /* more may be waiting */
        } else if (now - last_write >= LB_SSE_HEARTBEAT_MS) {
            /* a comment line: keeps proxies from timing out and tells us
             * when the client has gone (the write fails) */
            if (FCGX_PutS(": keepalive\n\n", r->fcgi->out) < 0 || FCGX_FFlush(r->fcgi->out) < 0)
                break;
            last_write = now;
        }
        if (s.done || s.broken)
            break;
        if (now - last_check >= LB_SSE_EXISTS_CHECK_MS) {
            last_check = now;
            rc = lb_store_task_state(r->store, r->id, status, sizeof status, NULL);
            if (rc == LB_E_NOTFOUND)
                break; /* deleted while we watched */
            if (rc == LB_OK && lb_task_status_is_final(lb_task_status_parse(status))) {
                final = 1;
                continue; /* read its last events now, then end */
            }
        }
        if (watched)
            watched = lb_sse_watch_report(&w, s.last);
        int64_t wait = watched ? lb_sse_due(last_write, last_check, end_at) - lb_mono_ms() : LB_SSE_POLL_MS;
        if (lb_sse_wait(r, watched ? fd : -1, wait))
            break;
    }
    if (added)
        lb_sse_watch_remove(&w);
}
