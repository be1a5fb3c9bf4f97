/* The access log and the HTTP metrics: one JSON line per request and one
 * count per (route, method, status), written when the response is done.
 *
 * Bytes: libfcgi keeps no count of what a request wrote, so the output
 * stream's flush procedure is wrapped for the length of the request. Every
 * byte written goes through the stream's buffer (fcgiapp.h: wrNext is the
 * first free byte), and the buffer is only emptied through that procedure,
 * so the bytes are what was flushed plus what is still buffered. The
 * count lives in the worker thread: a request is handled start to end by
 * one thread.
 */
#include "web/access.h"

#include "web/http.h"

#include "common/config.h" /* checksrc: allow unused-include (r->user->name needs lb_user_cfg whole) */
#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"

#include <fcgiapp.h>
#include <stdio.h>
#include <string.h>

typedef struct lb_out_count {
    FCGX_Stream *stream;                     /* the request being counted */
    void (*flush)(FCGX_Stream *, int);       /* libfcgi's own procedure */
    unsigned char *mark;                     /* wrNext after the last flush */
    int64_t flushed;
} lb_out_count;

static _Thread_local lb_out_count lb_cnt;

static void lb_counting_flush(FCGX_Stream *s, int close)
{
    if (s == lb_cnt.stream && s->wrNext >= lb_cnt.mark)
        lb_cnt.flushed += s->wrNext - lb_cnt.mark;
    lb_cnt.flush(s, close);
    if (s == lb_cnt.stream)
        lb_cnt.mark = s->wrNext;
}

void lb_access_begin(lb_req *r)
{
    FCGX_Stream *s = r->fcgi->out;
    memset(&lb_cnt, 0, sizeof lb_cnt);
    if (!s || s->isReader || !s->emptyBuffProc)
        return;
    lb_cnt.stream = s;
    lb_cnt.flush = s->emptyBuffProc;
    lb_cnt.mark = s->wrNext;
    s->emptyBuffProc = lb_counting_flush;
}

int64_t lb_access_bytes(const lb_req *r)
{
    FCGX_Stream *s = r->fcgi->out;
    if (!lb_cnt.stream || s != lb_cnt.stream)
        return 0;
    return lb_cnt.flushed + (s->wrNext >= lb_cnt.mark ? s->wrNext - lb_cnt.mark : 0);
}

/* "GET", "HEAD", "POST", "DELETE", or "other": a label from a fixed set. */
static const char *lb_method_class(const char *m)
{
    static const char *known[] = {"GET", "HEAD", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(m, known[i]))
            return known[i];
    return "other";
}

/* The path as logged: cut at 255 bytes, and the key of a preview link
 * (/api/tasks/{id}/preview/{key}/...) replaced by "-": it opens the task's
 * files to whoever has it, and logs are read by more people. */
void lb_access_path(const char *in, char *out, size_t outsz)
{
    size_t n = strnlen(in, outsz - 1);
    memcpy(out, in, n);
    out[n] = '\0';
    char *pv = strstr(out, "/preview/");
    if (!pv)
        return;
    char *key = pv + 9, *end = strchr(key, '/');
    size_t rest = end ? strlen(end) : 0;
    if (key < out + outsz - 2) {
        key[0] = '-';
        memmove(key + 1, end ? end : "", rest + 1);
    }
}

/* What lb_access_close takes from the request before FastCGI frees its
 * parameters and streams (lb_access_log runs after FCGX_Finish_r): the
 * client's address and nginx's request id are FastCGI parameters. */
typedef struct lb_done {
    int64_t ms, body;
    const char *method;   /* lb_method_class: a static string */
    char client[64];      /* REMOTE_ADDR: an IPv6 address with its zone fits */
    char request_id[64];  /* nginx's $request_id: 32 hex */
    int has_client, has_request_id;
} lb_done;

static _Thread_local lb_done lb_last;

static void lb_copy_param(lb_req *r, const char *name, char *out, size_t outsz, int *has)
{
    const char *v = lb_http_param(r, name);
    *has = v != NULL;
    snprintf(out, outsz, "%s", v ? v : "");
}

void lb_access_close(lb_req *r, int64_t t0_ms)
{
    /* lb_cnt stays as it is: FCGX_Finish_r still flushes through
     * lb_counting_flush, and the next lb_access_begin resets it */
    lb_last.ms = lb_mono_ms() - t0_ms;
    int64_t total = lb_access_bytes(r);
    lb_last.body = total > r->head_bytes ? total - r->head_bytes : 0;
    lb_last.method = lb_method_class(r->method);
    lb_copy_param(r, "REMOTE_ADDR", lb_last.client, sizeof lb_last.client, &lb_last.has_client);
    lb_copy_param(r, "REQUEST_ID", lb_last.request_id, sizeof lb_last.request_id, &lb_last.has_request_id);
}

void lb_access_log(const lb_req *r)
{
    int64_t ms = lb_last.ms, body = lb_last.body;
    const char *route = r->route ? r->route : "unknown";
    const char *method = lb_last.method ? lb_last.method : "other";
    char status[8];
    snprintf(status, sizeof status, "%d", r->status);

    lb_metrics *m = lb_metrics_proc();
    char labels[LB_METRIC_LABELS_MAX] = "";
    LB_IGNORE(lb_metrics_label(labels, sizeof labels, "route", route)); /* bounded names fit; one that does not is left out */
    LB_IGNORE(lb_metrics_label(labels, sizeof labels, "method", method)); /* bounded names fit; one that does not is left out */
    LB_IGNORE(lb_metrics_label(labels, sizeof labels, "status", status)); /* bounded names fit; one that does not is left out */
    lb_metrics_add(m, "llmbox_http_requests_total", labels, "", 1);
    /* an event stream lasts as long as its task: its time says nothing
     * about how fast the service answers */
    if (strcmp(route, "task_events") != 0) {
        labels[0] = '\0';
        LB_IGNORE(lb_metrics_label(labels, sizeof labels, "route", route)); /* bounded names fit; one that does not is left out */
        lb_metrics_observe(m, &lb_hist_http, labels, (double)ms / 1000.0);
    }

    /* Probes that succeed (a health check every few seconds, a scrape)
     * would drown everything else: they are debug lines. */
    int probe = r->status == 200 && (!strcmp(route, "health") || !strcmp(route, "metrics"));
    int level = probe ? LB_LOG_DEBUG : r->status >= 500 ? LB_LOG_WARN : LB_LOG_INFO;
    if (!lb_log_enabled(level))
        return;
    /* the path without its query (which may hold a key: never logged);
     * the method as sent when it is one we know, else "other" */
    char path[256];
    lb_access_path(r->path, path, sizeof path);
    const char *task = r->id[0] ? r->id : r->new_task[0] ? r->new_task : NULL;
    const char *new_task = r->id[0] && r->new_task[0] ? r->new_task : NULL;
    lb_log_field f[] = {
        LB_LF_STR("method", method),
        LB_LF_STR("route", route),
        LB_LF_STR("path", path),
        LB_LF_INT("status", r->status),
        LB_LF_INT("bytes", body),
        LB_LF_INT("duration_ms", ms),
        LB_LF_STR("task", task),
        LB_LF_STR("new_task", new_task),
        LB_LF_STR("client", lb_last.has_client ? lb_last.client : NULL),
        LB_LF_STR("user", r->user ? r->user->name : NULL),
        LB_LF_STR("request_id", lb_last.has_request_id ? lb_last.request_id : NULL),
    };
    lb_log_fields(level, "request", f, (int)(sizeof f / sizeof f[0]));
}
