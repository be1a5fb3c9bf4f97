/* MCP's Streamable HTTP transport on libcurl; the contract is mcpc_http.h. */
#include "mcpclient/mcpc_http.h"

#include "common/buf.h"
#include "common/util.h"
#include "mcpclient/mcpc_msg.h"
#include "mcpclient/mcpc_sse.h"

#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct http_t {
    lb_mcpc_transport base;     /* first */
    const lb_mcp_cfg *m;
    volatile int *cancel;
    CURL *curl;
    char session[LB_MCPC_SESSION_ID_MAX + 1]; /* "" until the server names one */
    /* the answer being read */
    int is_sse;
    int bad_session;            /* a Mcp-Session-Id that is not visible ASCII */
    lb_buf body;
    lb_mcpc_sse sse;
    size_t total;               /* bytes of this answer */
    int answered;               /* the stream held a response: read no further */
    /* messages queued for recv */
    char **q;
    size_t qn, qhead;
    char *out;                  /* the message recv handed out last */
} http_t;

static void queue_clear(http_t *h)
{
    for (size_t i = h->qhead; i < h->qn; i++)
        free(h->q[i]);
    free(h->q);
    h->q = NULL;
    h->qn = h->qhead = 0;
}

static int queue_push(void *arg, const char *data, size_t len)
{
    http_t *h = arg;
    if (h->qn >= LB_MCPC_HTTP_QUEUE || len > LB_MCPC_MSG_MAX) {
        h->base.dropped++;
        return LB_OK;
    }
    if (!h->q && !(h->q = calloc(LB_MCPC_HTTP_QUEUE, sizeof *h->q)))
        return LB_E_NOMEM;
    char *c = malloc(len + 1);
    if (!c)
        return LB_E_NOMEM;
    memcpy(c, data, len);
    c[len] = '\0';
    h->q[h->qn++] = c;
    if (h->is_sse) {
        /* one POST carries one request, so its response ends the stream
         * for us even when the server would hold it open */
        lb_mcpc_msg m;
        char why[200];
        if (lb_mcpc_msg_parse(c, len, &m, why, sizeof why) == LB_OK && m.kind == LB_MCPC_RESPONSE)
            h->answered = 1;
        lb_mcpc_msg_free(&m);
        if (h->answered)
            return LB_E_CANCELLED; /* stops the parse and the transfer */
    }
    return LB_OK;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    http_t *h = arg;
    size_t len = size * n;
    static const char sid[] = "mcp-session-id:", ct[] = "content-type:";
    if (len > sizeof sid && !strncasecmp(p, sid, sizeof sid - 1)) {
        const char *v = p + sizeof sid - 1;
        size_t vn = len - (sizeof sid - 1);
        while (vn && (*v == ' ' || *v == '\t'))
            v++, vn--;
        while (vn && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' '))
            vn--;
        int ok = vn && vn <= LB_MCPC_SESSION_ID_MAX;
        for (size_t i = 0; ok && i < vn; i++)
            ok = v[i] > 0x20 && v[i] < 0x7f; /* the protocol's rule, and no header injection */
        if (ok) {
            memcpy(h->session, v, vn);
            h->session[vn] = '\0';
        } else {
            h->bad_session = 1;
        }
    } else if (len > sizeof ct && !strncasecmp(p, ct, sizeof ct - 1)) {
        const char *v = p + sizeof ct - 1;
        while (*v == ' ')
            v++;
        h->is_sse = !strncasecmp(v, "text/event-stream", 17);
    }
    return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    http_t *h = arg;
    size_t len = size * n;
    h->total += len;
    if (h->total > LB_MCPC_HTTP_BODY_MAX)
        return 0; /* curl ends the transfer: CURLE_WRITE_ERROR */
    if (h->answered)
        return 0;
    if (h->is_sse)
        return lb_mcpc_sse_feed(&h->sse, p, len, queue_push, h) == LB_OK ? len : 0;
    return lb_buf_append(&h->body, p, len) == LB_OK ? len : 0;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    volatile int *cancel = arg;
    (void)a, (void)b, (void)c, (void)d;
    return cancel && *cancel;
}

static int ht_send(lb_mcpc_transport *t, const char *msg, size_t len, int64_t deadline_ms, char *err, size_t errsz)
{
    http_t *h = (http_t *)t;
    /* what an earlier answer still holds stays queued: an answer to a
     * request of the server's is sent while the session reads its stream */
    if (h->qhead >= h->qn)
        queue_clear(h);
    lb_buf_reset(&h->body);
    lb_mcpc_sse_free(&h->sse);
    lb_mcpc_sse_init(&h->sse, LB_MCPC_MSG_MAX);
    h->is_sse = h->bad_session = h->answered = 0;
    h->total = 0;
    int64_t left = deadline_ms - lb_mono_ms();
    if (left <= 0)
        return LB_E_TIMEOUT;
    struct curl_slist *hdr = NULL, *nh;
    char line[LB_MCPC_SESSION_ID_MAX + 64];
    int rc = LB_OK;
    const char *fixed[] = {"Content-Type: application/json", "Accept: application/json, text/event-stream",
                           "Expect:"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && rc == LB_OK; i++)
        if (!(nh = curl_slist_append(hdr, fixed[i])))
            rc = LB_E_NOMEM;
        else
            hdr = nh;
    if (rc == LB_OK && h->session[0]) {
        snprintf(line, sizeof line, "Mcp-Session-Id: %s", h->session);
        if ((nh = curl_slist_append(hdr, line)))
            hdr = nh;
        else
            rc = LB_E_NOMEM;
    }
    if (rc == LB_OK && t->proto[0]) {
        snprintf(line, sizeof line, "MCP-Protocol-Version: %s", t->proto);
        if ((nh = curl_slist_append(hdr, line)))
            hdr = nh;
        else
            rc = LB_E_NOMEM;
    }
    for (int i = 0; rc == LB_OK && i < h->m->n_headers; i++) {
        if (!h->m->headers[i][0])
            continue;
        if ((nh = curl_slist_append(hdr, h->m->headers[i])))
            hdr = nh;
        else
            rc = LB_E_NOMEM;
    }
    if (rc != LB_OK) {
        curl_slist_free_all(hdr);
        snprintf(err, errsz, "out of memory");
        return rc;
    }
    CURL *c = h->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, h->m->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, msg);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(left < 10000 ? left : 10000));
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)h->cancel);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    if (cc == CURLE_WRITE_ERROR && h->answered)
        cc = CURLE_OK; /* stopped on purpose at the response */
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        /* what came before the time ran out stays queued: a response may be among it */
        return h->qn ? LB_OK : LB_E_TIMEOUT;
    }
    if (cc == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(err, errsz, "the request was cancelled");
        return LB_E_CANCELLED;
    }
    if (cc == CURLE_WRITE_ERROR && h->total > LB_MCPC_HTTP_BODY_MAX) {
        snprintf(err, errsz, "its answer was longer than %u bytes", LB_MCPC_HTTP_BODY_MAX);
        return LB_E_TOOBIG;
    }
    if (cc != CURLE_OK) {
        snprintf(err, errsz, "the request failed: %s", curl_easy_strerror(cc));
        return LB_E_UNAVAILABLE;
    }
    if (h->bad_session) {
        snprintf(err, errsz, "it sent an Mcp-Session-Id that is not 1 to %d visible ASCII characters",
                 LB_MCPC_SESSION_ID_MAX);
        return LB_E_PROTO;
    }
    if (status == 404 && h->session[0]) {
        snprintf(err, errsz, "it no longer knows the session (HTTP 404)");
        return LB_E_NOTFOUND;
    }
    if (status < 200 || status > 299) {
        snprintf(err, errsz, "it answered HTTP %ld", status);
        return status == 401 || status == 403 ? LB_E_DENIED : LB_E_PROTO;
    }
    if (!h->is_sse && h->body.len) {
        int qrc = queue_push(h, h->body.data, h->body.len);
        if (qrc != LB_OK) {
            snprintf(err, errsz, "out of memory");
            return qrc;
        }
    }
    return LB_OK;
}

static int ht_recv(lb_mcpc_transport *t, int64_t deadline_ms, const char **msg, size_t *len, char *err,
                   size_t errsz)
{
    http_t *h = (http_t *)t;
    (void)deadline_ms, (void)err, (void)errsz;
    free(h->out);
    h->out = NULL;
    if (h->qhead >= h->qn)
        return LB_E_TIMEOUT; /* nothing more will come for the last request */
    h->out = h->q[h->qhead];
    h->q[h->qhead++] = NULL;
    *msg = h->out;
    *len = strlen(h->out);
    return LB_OK;
}

static void ht_close(lb_mcpc_transport *t)
{
    http_t *h = (http_t *)t;
    if (!h)
        return;
    if (h->curl && h->session[0]) {
        /* end the session, as the protocol asks; a server that does not
         * answer within 2 s ends it on its own timer */
        struct curl_slist *hdr = NULL, *nh;
        char line[LB_MCPC_SESSION_ID_MAX + 32];
        snprintf(line, sizeof line, "Mcp-Session-Id: %s", h->session);
        if ((nh = curl_slist_append(hdr, line)))
            hdr = nh;
        for (int i = 0; i < h->m->n_headers; i++)
            if (h->m->headers[i][0] && (nh = curl_slist_append(hdr, h->m->headers[i])))
                hdr = nh;
        curl_easy_reset(h->curl);
        curl_easy_setopt(h->curl, CURLOPT_URL, h->m->url);
        curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, "DELETE");
        curl_easy_setopt(h->curl, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, 2000L);
        (void)curl_easy_perform(h->curl); /* the session ends either way for us */
        curl_slist_free_all(hdr);
    }
    if (h->curl)
        curl_easy_cleanup(h->curl);
    queue_clear(h);
    free(h->out);
    lb_buf_free(&h->body);
    lb_mcpc_sse_free(&h->sse);
    free(h);
}

static void ht_forget(lb_mcpc_transport *t)
{
    http_t *h = (http_t *)t;
    h->session[0] = '\0';
    t->proto[0] = '\0';
}

int lb_mcpc_http_open(const lb_mcp_cfg *m, volatile int *cancel, lb_mcpc_transport **out, char *err, size_t errsz)
{
    http_t *h = calloc(1, sizeof *h);
    if (!h || !(h->curl = curl_easy_init())) {
        free(h);
        snprintf(err, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    h->base.send = ht_send;
    h->base.recv = ht_recv;
    h->base.close = ht_close;
    h->base.forget = ht_forget;
    h->m = m;
    h->cancel = cancel;
    lb_buf_init(&h->body, LB_MCPC_MSG_MAX);
    lb_mcpc_sse_init(&h->sse, LB_MCPC_MSG_MAX);
    *out = &h->base;
    return LB_OK;
}
