/* libFuzzer target for what the network gateway reads of a sandbox's
 * traffic (server/netgw/): a connection's first bytes as HTTP (Host) and
 * as TLS (SNI), and a DNS question and its answer. Promises: no read or
 * write past the input or the output buffers, a name found is a NUL-ended
 * lowercase host name of [a-z0-9.-], and an answer never outgrows its
 * buffer. */
#include "netgw/netgw_dns.h"
#include "netgw/netgw_peek.h"
#include "common/status.h"

#include <stdint.h>
#include <string.h>

static void name_ok(const char *n)
{
    size_t len = strnlen(n, 254);
    if (!len || len == 254)
        __builtin_trap();
    for (size_t i = 0; i < len; i++)
        if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '.' || n[i] == '-'))
            __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[254];
    if (lb_peek_http_host(data, size, name, sizeof name) == 1)
        name_ok(name);
    if (lb_peek_tls_sni(data, size, name, sizeof name) == 1)
        name_ok(name);
    lb_dns_q q;
    if (lb_dns_parse(data, size, &q) == LB_OK) {
        if (q.qlen > size || !q.name[0])
            __builtin_trap();
        unsigned char out[LB_DNS_MSG_MAX];
        const unsigned char v4[LB_DNS_ANSWERS_MAX][4] = {{1, 2, 3, 4}};
        size_t n = lb_dns_answer(data, &q, LB_DNS_NOERROR, v4, LB_DNS_ANSWERS_MAX, 30, out, sizeof out);
        if (n > sizeof out)
            __builtin_trap();
    }
    return 0;
}
