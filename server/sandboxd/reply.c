/*
 * sandboxd's answers: a response frame (JSON) and, for a read, a data
 * frame, queued on the connection. While an exec runs for the connection
 * its answer must go out first, so what comes meanwhile is deferred
 * behind it (lbsd_conn_unbusy moves it on).
 */
#include "sandboxd/reply.h"

#include "common/log.h"
#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void lbsd_conn_queue(lbsd_conn *c, const void *p, size_t n)
{
    unsigned char hdr[LBSD_FRAME_HDR];
    lbsd_frame_header(hdr, (uint32_t)n);
    /* while an exec runs, its reply must go out first */
    lb_buf *b = c->busy ? &c->deferred : &c->out;
    if (lb_buf_append(b, hdr, sizeof hdr) != LB_OK || lb_buf_append(b, p, n) != LB_OK) {
        /* cannot happen within the caps; if it does, the stream is unusable */
        lb_error("connection %d: response too large to queue, closing", c->fd);
        c->dead = 1;
    }
}

void lbsd_conn_unbusy(lbsd_conn *c)
{
    c->busy = 0;
    if (c->deferred.len && lb_buf_append(&c->out, c->deferred.data, c->deferred.len) != LB_OK)
        c->dead = 1;
    lb_buf_reset(&c->deferred);
}

void lbsd_reply(lbsd_conn *c, cJSON *r, const void *data, size_t dlen, int with_data)
{
    if (!c || c->dead) {
        cJSON_Delete(r);
        return;
    }
    if (!r) {
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        return;
    }
    if (!cJSON_GetObjectItemCaseSensitive(r, "ok"))
        cJSON_AddTrueToObject(r, "ok");
    if (with_data)
        cJSON_AddTrueToObject(r, "data");
    char *txt = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    if (!txt || strlen(txt) > LLMBOX_RPC_MAX_FRAME) {
        free(txt);
        lbsd_reply_error(c, LB_E_NOMEM, "response could not be encoded");
        return;
    }
    lbsd_conn_queue(c, txt, strlen(txt));
    free(txt);
    if (with_data)
        lbsd_conn_queue(c, data ? data : "", dlen);
}

void lbsd_reply_error(lbsd_conn *c, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *r = cJSON_CreateObject();
    if (!r || !cJSON_AddFalseToObject(r, "ok") ||
        !cJSON_AddStringToObject(r, "error", lbsd_status_code(status)) ||
        !cJSON_AddStringToObject(r, "message", msg)) {
        cJSON_Delete(r);
        static const char oom[] = "{\"ok\":false,\"error\":\"internal\",\"message\":\"out of memory\"}";
        lbsd_conn_queue(c, oom, sizeof oom - 1);
        return;
    }
    char *txt = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    if (txt) {
        lbsd_conn_queue(c, txt, strlen(txt));
        free(txt);
    }
}

void lbsd_reply_notfound(lbsd_conn *c, const char *id)
{
    unsigned n = c->expired_n < LBSD_EXPIRED_KEEP ? c->expired_n : LBSD_EXPIRED_KEEP;
    for (unsigned i = 0; i < n; i++) {
        if (!strcmp(c->expired[i].id, id)) {
            lbsd_reply_error(c, LB_E_NOTFOUND,
                             "sandbox %s expired: its time to live (ttl_s %d) ran out and it was "
                             "destroyed",
                             id, c->expired[i].ttl_s);
            return;
        }
    }
    lbsd_reply_error(c, LB_E_NOTFOUND, "no sandbox %s on this connection", id);
}
