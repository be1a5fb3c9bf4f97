/* libFuzzer target for the request reader of the gateway's secret relay
 * (server/netgw/netgw_http.c): any bytes as a request head, and as a
 * chunked body fed in two pieces. Promises: a head accepted lies within
 * the input, its headers within the head and their names followed by a
 * colon, the Host a lowercase name, never both a length and chunked; the
 * chunked reader never claims more bytes than it was given, and reading
 * the same bytes in one piece or two gives the same end. */
#include "netgw/netgw_http.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static lb_http_req r;
    char why[160];
    int rc = lb_http_req_parse((const char *)data, size, &r, why, sizeof why);
    if (rc == 1) {
        if (r.head_len > size || r.head_len < 4 || memcmp(data + r.head_len - 4, "\r\n\r\n", 4) ||
            r.line_len >= r.head_len || (r.chunked && r.content_length >= 0) || !r.host[0])
            __builtin_trap();
        for (int i = 0; i < r.nh; i++)
            if (r.h[i].off + r.h[i].len > r.head_len || r.h[i].nlen >= r.h[i].len || data[r.h[i].off + r.h[i].nlen] != ':')
                __builtin_trap();
        for (const char *h = r.host; *h; h++)
            if (!((*h >= 'a' && *h <= 'z') || (*h >= '0' && *h <= '9') || *h == '.' || *h == '-'))
                __builtin_trap();
    } else if (rc != 0 && rc != -1) {
        __builtin_trap();
    }
    lb_http_chunked one, two;
    memset(&one, 0, sizeof one);
    memset(&two, 0, sizeof two);
    int d1 = 0, d2 = 0, d3 = 0;
    long k1 = lb_http_chunked_feed(&one, data, size, &d1);
    if (k1 > (long)size || (k1 >= 0 && k1 < (long)size && !d1))
        __builtin_trap();
    size_t half = size / 2;
    long a = lb_http_chunked_feed(&two, data, half, &d2), b = 0;
    if (a > (long)half)
        __builtin_trap();
    if (a >= 0 && !d2)
        b = lb_http_chunked_feed(&two, data + half, size - half, &d3);
    /* the same bytes, the same verdict: an end at the same place, or an error */
    if (k1 >= 0 && a >= 0 && b >= 0) {
        long end2 = d2 ? a : (long)half + b;
        int done2 = d2 || d3;
        if (done2 != d1 || (d1 && end2 != k1))
            __builtin_trap();
    }
    if ((k1 < 0) != (a < 0 || b < 0) && !(d2 && k1 >= 0))
        __builtin_trap();
    return 0;
}
