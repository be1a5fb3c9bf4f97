/* The event-stream parser of MCP's Streamable HTTP answers; the contract
 * is mcpc_sse.h. */
#include "mcpclient/mcpc_sse.h"

#include <string.h>

void lb_mcpc_sse_init(lb_mcpc_sse *s, size_t max)
{
    memset(s, 0, sizeof *s);
    lb_buf_init(&s->line, max);
    lb_buf_init(&s->data, max);
}

void lb_mcpc_sse_free(lb_mcpc_sse *s)
{
    lb_buf_free(&s->line);
    lb_buf_free(&s->data);
}

/* One whole line (without its end). An empty line ends the event. */
static int take_line(lb_mcpc_sse *s, const char *l, size_t n, lb_mcpc_sse_cb cb, void *arg)
{
    if (!n) {
        int rc = LB_OK;
        if (s->bad)
            s->dropped++;
        else if (s->data.len)
            rc = cb(arg, s->data.data, s->data.len);
        lb_buf_reset(&s->data);
        s->bad = 0;
        return rc;
    }
    if (l[0] == ':')
        return LB_OK; /* a comment (a keep-alive) */
    size_t field = strcspn(l, ":");
    if (field > n)
        field = n;
    if (field != 4 || memcmp(l, "data", 4))
        return LB_OK; /* event, id, retry: MCP's answers need none of them */
    const char *v = l + field;
    size_t vn = n - field;
    if (vn) {
        v++;
        vn--;
        if (vn && *v == ' ') {
            v++;
            vn--;
        }
    }
    if (s->bad)
        return LB_OK;
    if ((s->data.len && lb_buf_append(&s->data, "\n", 1) != LB_OK) ||
        (vn && lb_buf_append(&s->data, v, vn) != LB_OK)) {
        /* over the cap (or out of memory): the event is dropped at its end */
        s->bad = 1;
        lb_buf_reset(&s->data);
    }
    return LB_OK;
}

int lb_mcpc_sse_feed(lb_mcpc_sse *s, const char *p, size_t n, lb_mcpc_sse_cb cb, void *arg)
{
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if (!s->skipping && lb_buf_append(&s->line, p, take) != LB_OK) {
            /* a line over the cap: its event cannot be whole */
            s->skipping = 1;
            s->bad = 1;
            lb_buf_reset(&s->line);
        }
        if (!nl)
            return LB_OK;
        p = nl + 1;
        n -= take + 1;
        int rc = LB_OK;
        if (s->skipping) {
            s->skipping = 0;
        } else {
            size_t ln = s->line.len;
            if (ln && s->line.data[ln - 1] == '\r')
                ln--;
            if (s->line.data)
                s->line.data[ln] = '\0';
            rc = take_line(s, s->line.data ? s->line.data : "", ln, cb, arg);
        }
        lb_buf_reset(&s->line);
        if (rc != LB_OK)
            return rc;
    }
    return LB_OK;
}
