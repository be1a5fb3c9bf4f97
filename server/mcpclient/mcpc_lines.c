/* Newline framing of MCP's stdio transport; the contract is mcpc_lines.h. */
#include "mcpclient/mcpc_lines.h"

#include <string.h>

void lb_mcpc_lines_init(lb_mcpc_lines *l, size_t max)
{
    memset(l, 0, sizeof *l);
    l->max = max;
    lb_buf_init(&l->pend, (size_t)-1 / 2); /* bounded by the callers' rule: feed only when no line is held */
}

void lb_mcpc_lines_free(lb_mcpc_lines *l)
{
    lb_buf_free(&l->pend);
    l->off = 0;
}

int lb_mcpc_lines_feed(lb_mcpc_lines *l, const char *p, size_t n)
{
    if (l->skipping) {
        /* the rest of an over-long line: nothing of it is kept */
        const char *nl = memchr(p, '\n', n);
        if (!nl)
            return LB_OK;
        l->skipping = 0;
        l->dropped++;
        n -= (size_t)(nl + 1 - p);
        p = nl + 1;
    }
    if (l->off && l->off == l->pend.len) {
        lb_buf_reset(&l->pend);
        l->off = 0;
    } else if (l->off > l->pend.len / 2) {
        memmove(l->pend.data, l->pend.data + l->off, l->pend.len - l->off);
        l->pend.len -= l->off;
        l->pend.data[l->pend.len] = '\0';
        l->off = 0;
    }
    return n ? lb_buf_append(&l->pend, p, n) : LB_OK;
}

int lb_mcpc_lines_next(lb_mcpc_lines *l, const char **line, size_t *len)
{
    while (l->off < l->pend.len) {
        char *s = l->pend.data + l->off;
        size_t avail = l->pend.len - l->off;
        char *nl = memchr(s, '\n', avail);
        if (!nl) {
            if (avail > l->max + 1) { /* + 1: a "\r" before the "\n" still to come */
                /* no end in sight within the cap: drop what is held, and
                 * the rest of the line as it comes */
                l->skipping = 1;
                l->off = l->pend.len;
            }
            return 0;
        }
        size_t n = (size_t)(nl - s);
        l->off += n + 1;
        if (n && s[n - 1] == '\r')
            n--;
        if (n > l->max) {
            l->dropped++;
            continue;
        }
        size_t lead = strspn(s, " \t\r");
        if (lead >= n)
            continue; /* a blank line is no message */
        s[n] = '\0';
        *line = s;
        *len = n;
        return 1;
    }
    return 0;
}
