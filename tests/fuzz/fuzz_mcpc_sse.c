/* libFuzzer target for the event streams of MCP's Streamable HTTP answers
 * (server/mcpclient/mcpc_sse.c): a remote server's body, fed in pieces of
 * the sizes the first byte picks (curl hands the body over in any cut).
 * Promises: no event's data is over the cap or misses its NUL; the same
 * events come out whatever the cut (compared with feeding it whole); a
 * callback's refusal stops the parse and is returned. */
#include "mcpclient/mcpc_sse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CAP 128

typedef struct seen {
    size_t n;
    unsigned long sum;
} seen;

static int on_event(void *arg, const char *d, size_t len)
{
    seen *s = arg;
    if (len > CAP || d[len] != '\0')
        __builtin_trap();
    s->n++;
    for (size_t i = 0; i < len; i++)
        s->sum = s->sum * 31 + (unsigned char)d[i];
    return LB_OK;
}

static int stop_at_first(void *arg, const char *d, size_t len)
{
    (void)d, (void)len;
    ++*(int *)arg;
    return LB_E_CANCELLED;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    size_t piece = 1 + data[0] % 61;
    data++, size--;
    seen whole = {0}, cut = {0};
    lb_mcpc_sse s;
    lb_mcpc_sse_init(&s, CAP);
    if (lb_mcpc_sse_feed(&s, (const char *)data, size, on_event, &whole) != LB_OK)
        __builtin_trap();
    lb_mcpc_sse_free(&s);
    lb_mcpc_sse_init(&s, CAP);
    for (size_t at = 0; at < size; at += piece) {
        size_t n = size - at < piece ? size - at : piece;
        if (lb_mcpc_sse_feed(&s, (const char *)data + at, n, on_event, &cut) != LB_OK)
            __builtin_trap();
    }
    lb_mcpc_sse_free(&s);
    if (whole.n != cut.n || whole.sum != cut.sum)
        __builtin_trap();
    int calls = 0;
    lb_mcpc_sse_init(&s, CAP);
    int rc = lb_mcpc_sse_feed(&s, (const char *)data, size, stop_at_first, &calls);
    if ((whole.n && (rc != LB_E_CANCELLED || calls != 1)) || (!whole.n && (rc != LB_OK || calls)))
        __builtin_trap();
    lb_mcpc_sse_free(&s);
    return 0;
}
