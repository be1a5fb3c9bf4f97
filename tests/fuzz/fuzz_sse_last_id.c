/* libFuzzer target for the event id a stream resumes after
 * (lb_sse_parse_last_id, server/web/sse.c), from the Last-Event-ID header
 * (any bytes a client sends) or the ?last_event_id= query parameter (after
 * percent-decoding by lb_query_get). Promise: the id is never negative; it
 * is the number when the value is 1 to 18 ASCII digits, else 0 (replay
 * from the start); both sources agree for the same value. */
#include "common/status.h"
#include "web/http.h"
#include "web/sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t reference(const uint8_t *v, size_t n)
{
    if (n == 0 || n > 18)
        return 0;
    int64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return 0;
        x = x * 10 + (v[i] - '0');
    }
    return x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t id = lb_sse_parse_last_id((const char *)data, size);
    if (id < 0 || id != reference(data, size))
        __builtin_trap();
    if (size == 0 || memchr(data, '\0', size) || size > 4000)
        return 0;
    /* the same value as a query parameter, percent-encoded byte by byte */
    char *q = malloc(32 + size * 3);
    if (!q)
        return 0;
    size_t o = (size_t)sprintf(q, "a=1&last_event_id=");
    for (size_t i = 0; i < size; i++)
        o += (size_t)sprintf(q + o, "%%%02X", data[i]);
    q[o] = '\0';
    char val[32];
    int rc = lb_query_get(q, "last_event_id", val, sizeof val);
    if (rc == LB_OK) {
        if (strlen(val) != size || lb_sse_parse_last_id(val, strlen(val)) != id)
            __builtin_trap();
    } else if (rc != LB_E_TOOBIG || size < sizeof val - 1) {
        __builtin_trap(); /* only a value too long for the buffer may fail */
    }
    free(q);
    return 0;
}
