/* Connect answers over FastCGI for the E2B envd routes. */
#include "e2b/e2b_connect.h"

#include "e2b/e2b_envelope.h"
#include "web/http.h"
#include "web/req_body.h"

#include "common/buf.h"

#include <fcgiapp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* the body of a request message, envelope included */
#define LB_E2B_BODY_MAX (LB_E2B_MSG_MAX + LB_E2B_ENV_HDR)

static void lb_e2b_vmsg(char *out, size_t outsz, const char *fmt, va_list ap)
{
    vsnprintf(out, outsz, fmt, ap);
}

static void lb_e2b_request_fail(lb_req *r, int streaming, const char *code, const char *msg)
{
    if (streaming)
        lb_e2b_stream_end(r, code, "%s", msg);
    else
        lb_e2b_unary_error(r, code, "%s", msg);
}

cJSON *lb_e2b_request(lb_req *r, int streaming)
{
    char why[400] = "";
    lb_buf b;
    if (r->content_length > (int64_t)LB_E2B_BODY_MAX) {
        lb_http_drain(r);
        snprintf(why, sizeof why, "the request message is %lld bytes, over the limit of %u",
                 (long long)r->content_length, (unsigned)LB_E2B_BODY_MAX);
        lb_e2b_request_fail(r, streaming, "resource_exhausted", why);
        return NULL;
    }
    if (lb_req_body(r, LB_E2B_BODY_MAX, &b, "Connect request") != LB_OK)
        return NULL; /* answered (413, 500) */
    const char *msg = b.data ? b.data : "";
    size_t mlen = b.len;
    int rc = LB_OK;
    if (streaming)
        rc = lb_e2b_envelope_one((const unsigned char *)msg, b.len, LB_E2B_MSG_MAX, &msg, &mlen, why, sizeof why);
    cJSON *j = NULL;
    if (rc == LB_OK) {
        char pmsg[400];
        int prc = LB_OK;
        j = lb_json_parse_checked(msg, mlen, "Connect request", LB_JSON_MAX_VALUES, LB_JSON_MAX_DEPTH, &prc, pmsg,
                                  sizeof pmsg);
        if (j && !cJSON_IsObject(j)) {
            cJSON_Delete(j);
            j = NULL;
            snprintf(pmsg, sizeof pmsg, "the request message is not a JSON object");
        }
        if (!j)
            snprintf(why, sizeof why, "%s", pmsg);
    }
    lb_buf_free(&b);
    if (!j)
        lb_e2b_request_fail(r, streaming, rc == LB_E_TOOBIG ? "resource_exhausted" : "invalid_argument", why);
    return j;
}

void lb_e2b_unary(lb_req *r, const cJSON *msg)
{
    lb_http_json(r, 200, msg, NULL);
}

void lb_e2b_error_json(lb_req *r, int status, const char *code, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        if (code)
            cJSON_AddStringToObject(o, "code", code);
        else
            cJSON_AddNumberToObject(o, "code", status);
        cJSON_AddStringToObject(o, "message", msg);
    }
    lb_http_json(r, status, o, NULL);
    cJSON_Delete(o);
}

void lb_e2b_error(lb_req *r, int status, const char *fmt, ...)
{
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lb_http_drain(r);
    lb_e2b_error_json(r, status, NULL, msg);
}

void lb_e2b_unary_error(lb_req *r, const char *code, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    lb_e2b_vmsg(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lb_e2b_error_json(r, lb_e2b_code_http(code), code, msg);
}

void lb_e2b_stream_begin(lb_req *r)
{
    /* no-transform: no proxy may hold or recompress the envelopes */
    lb_http_head(r, 200, "application/connect+json", "Cache-Control: no-cache, no-transform\r\n"
                                                     "X-Accel-Buffering: no\r\n");
    (void)FCGX_FFlush(r->fcgi->out); /* a gone client shows at the first message */
}

static int lb_e2b_stream_put(lb_req *r, unsigned flags, const cJSON *msg, int flush)
{
    char *text = cJSON_PrintUnformatted(msg);
    if (!text)
        return LB_E_NOMEM;
    size_t n = strlen(text);
    unsigned char hdr[LB_E2B_ENV_HDR];
    lb_e2b_envelope_header(hdr, flags, (uint32_t)n);
    int bad = FCGX_PutStr((const char *)hdr, LB_E2B_ENV_HDR, r->fcgi->out) < 0 ||
              FCGX_PutStr(text, (int)n, r->fcgi->out) < 0 || (flush && FCGX_FFlush(r->fcgi->out) < 0);
    free(text);
    return bad ? LB_E_IO : LB_OK;
}

int lb_e2b_stream_send(lb_req *r, const cJSON *msg)
{
    if (!r->responded)
        lb_e2b_stream_begin(r);
    return lb_e2b_stream_put(r, 0, msg, 1);
}

int lb_e2b_stream_queue(lb_req *r, const cJSON *msg)
{
    if (!r->responded)
        lb_e2b_stream_begin(r);
    return lb_e2b_stream_put(r, 0, msg, 0);
}

int lb_e2b_stream_flush(lb_req *r)
{
    if (!r->responded)
        lb_e2b_stream_begin(r);
    return FCGX_FFlush(r->fcgi->out) < 0 ? LB_E_IO : LB_OK;
}

void lb_e2b_stream_end(lb_req *r, const char *code, const char *fmt, ...)
{
    if (!r->responded)
        lb_e2b_stream_begin(r);
    cJSON *o = cJSON_CreateObject();
    if (o && code) {
        char msg[1200];
        va_list ap;
        va_start(ap, fmt);
        lb_e2b_vmsg(msg, sizeof msg, fmt, ap);
        va_end(ap);
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        if (e) {
            cJSON_AddStringToObject(e, "code", code);
            cJSON_AddStringToObject(e, "message", msg);
        }
    }
    if (o)
        LB_IGNORE(lb_e2b_stream_put(r, LB_E2B_FLAG_END, o, 1)); /* the client may be gone: nothing left to tell it */
    cJSON_Delete(o);
}

void lb_e2b_stream_cut(lb_req *r)
{
    if (!r->responded)
        lb_e2b_stream_begin(r);
    LB_IGNORE(FCGX_FFlush(r->fcgi->out)); /* what was queued goes first; a client that left is no matter */
    /* A FastCGI connection that just closes is a clean end to nginx when
     * it does not buffer (the last chunk goes out); a record it cannot
     * read is an upstream error, on which it closes the client's
     * connection without the last chunk: the client sees it dropped. */
    static const unsigned char bad[8] = {0}; /* FastCGI version 0 */
    ssize_t w = write(r->fcgi->ipcFd, bad, sizeof bad);
    (void)w; /* nginx gone already: nothing left to cut */
    shutdown(r->fcgi->ipcFd, SHUT_RDWR);
}
