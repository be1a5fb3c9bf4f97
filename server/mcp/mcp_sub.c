/* Inner requests of MCP's tools (see mcp_sub.h). The route reads its body
 * from an FCGX stream over memory and writes its answer into another, so
 * the handlers run unchanged: a handler cannot tell an MCP tool from an
 * HTTP client except that its answer goes to the tool. */
#include "mcp/mcp_sub.h"

#include "front/router.h"

#include <fcgiapp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SUB_CHUNK 16384   /* the write buffer handed to the route's stream */
#define SUB_HEAD_MAX 16384 /* a response head: a few headers */

typedef struct sub_out {
    unsigned char chunk[SUB_CHUNK];
    lb_buf all;           /* head and body as written, capped */
    int cut;
} sub_out;

/* The reader is all in memory: at its end there is no more. */
static void sub_fill(FCGX_Stream *s)
{
    s->isClosed = 1;
}

/* Keeps what the route wrote; past the cap the stream reports itself
 * closed, so a large answer stops early instead of growing without bound. */
static void sub_empty(FCGX_Stream *s, int doClose)
{
    (void)doClose;
    sub_out *o = s->data;
    size_t n = (size_t)(s->wrNext - o->chunk);
    if (n && lb_buf_append_trunc(&o->all, o->chunk, n)) {
        o->cut = 1;
        s->isClosed = 1;
    }
    s->wrNext = o->chunk;
}

int lb_mcp_sub(lb_req *outer, const char *method, const char *path, const char *content_type, const void *body,
               size_t len, size_t max, lb_mcp_answer *a)
{
    memset(a, 0, sizeof *a);
    lb_buf_init(&a->head, SUB_HEAD_MAX);
    lb_buf_init(&a->body, max);
    sub_out *o = calloc(1, sizeof *o);
    lb_req *r = calloc(1, sizeof *r);
    if (!o || !r) {
        free(o);
        free(r);
        return LB_E_NOMEM;
    }
    lb_buf_init(&o->all, max + SUB_HEAD_MAX);
    FCGX_Stream in = {.rdNext = (unsigned char *)(uintptr_t)(body ? body : ""), .isReader = 1,
                      .fillBuffProc = sub_fill};
    in.stop = in.rdNext + len;
    in.stopUnget = in.rdNext;
    FCGX_Stream out = {.rdNext = o->chunk, .wrNext = o->chunk, .stop = o->chunk + SUB_CHUNK,
                       .emptyBuffProc = sub_empty, .data = o};
    /* the outer request's parameters (credentials, address, Origin) and
     * its connection (a handler that watches for a client that left
     * watches the MCP client) */
    FCGX_Request fc = *outer->fcgi;
    fc.in = &in;
    fc.out = &out;
    r->cfg = outer->cfg;
    r->fcgi = &fc;
    r->store = outer->store;
    r->method = method;
    snprintf(r->path, sizeof r->path, "%s", path);
    char *q = strchr(r->path, '?');
    r->query = "";
    if (q) {
        *q = '\0';
        r->query = path + (q - r->path) + 1;
    }
    r->content_type = content_type ? content_type : "";
    r->content_length = (int64_t)len;
    lb_route(r);
    sub_empty(&out, 0);
    a->status = r->status;
    /* the head ends at the first blank line */
    const char *all = o->all.data ? o->all.data : "";
    const char *end = o->all.len ? memmem(all, o->all.len, "\r\n\r\n", 4) : NULL;
    int rc = LB_OK;
    if (end) {
        size_t hl = (size_t)(end - all), bl = o->all.len - hl - 4;
        if (lb_buf_append(&a->head, all, hl) != LB_OK)
            rc = LB_E_NOMEM;
        if (lb_buf_append_trunc(&a->body, end + 4, bl))
            a->cut = 1;
    }
    a->cut |= o->cut;
    lb_buf_free(&o->all);
    free(o);
    free(r);
    return rc;
}

void lb_mcp_answer_free(lb_mcp_answer *a)
{
    lb_buf_free(&a->head);
    lb_buf_free(&a->body);
}

int lb_mcp_answer_header(const lb_mcp_answer *a, const char *name, char *out, size_t outsz)
{
    size_t nl = strlen(name);
    const char *p = a->head.data, *e = p ? p + a->head.len : NULL;
    while (p && p < e) {
        const char *eol = memmem(p, (size_t)(e - p), "\r\n", 2);
        if (!eol)
            eol = e;
        if ((size_t)(eol - p) > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) {
            const char *v = p + nl + 1;
            while (v < eol && *v == ' ')
                v++;
            snprintf(out, outsz, "%.*s", (int)(eol - v), v);
            return 1;
        }
        p = eol + 2;
    }
    return 0;
}

cJSON *lb_mcp_answer_json(const lb_mcp_answer *a)
{
    if (!a->body.len || a->cut)
        return NULL;
    return cJSON_ParseWithLength(a->body.data, a->body.len);
}

void lb_mcp_answer_why(const lb_mcp_answer *a, char *out, size_t outsz)
{
    cJSON *o = lb_mcp_answer_json(a);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    if (cJSON_IsString(m))
        snprintf(out, outsz, "%s", m->valuestring);
    else
        snprintf(out, outsz, "The API answered HTTP %d.", a->status);
    cJSON_Delete(o);
}
