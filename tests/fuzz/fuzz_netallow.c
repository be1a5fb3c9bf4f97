/* libFuzzer target for the operator's list of targets a task's model_url
 * may reach (server/common/netcheck.c: rollout_model_url_allow), and the
 * host names a caller's URL brings. Promises: the parser never reads or
 * writes past its input and caps (at most LB_NETALLOW_MAX rules), refuses
 * with a sentence, and a list it takes holds only well-formed rules (a
 * network's host bits cleared, its prefix within its family, a name of
 * [a-z0-9.-]); whatever the list, loopback and link-local addresses are
 * allowed only by a network rule that contains them (never by "public" or
 * a name), and a host name matches only a name rule. */
#include "common/netcheck.h"
#include "common/status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

static lb_netallow fz_a;

static int has_net_rule_for(const unsigned char *v4)
{
    for (int i = 0; i < fz_a.n; i++) {
        const lb_netrule *r = &fz_a.r[i];
        if (r->kind != LB_NETRULE_NET || r->family != AF_INET)
            continue;
        uint32_t a, n;
        memcpy(&a, v4, 4);
        memcpy(&n, r->addr, 4);
        uint32_t mask = r->prefix ? htonl(~0u << (32 - r->prefix)) : 0;
        if ((a & mask) == (n & mask))
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > LB_NETALLOW_TEXT_MAX + 16)
        return 0;
    char s[LB_NETALLOW_TEXT_MAX + 17];
    memcpy(s, data, size);
    s[size] = '\0';
    char err[300] = "";
    int rc = lb_netallow_parse(s, &fz_a, err, sizeof err);
    if (rc != LB_OK) {
        if (!err[0] || !memchr(err, '\0', sizeof err))
            __builtin_trap();
        return 0;
    }
    if (fz_a.n < 0 || fz_a.n > LB_NETALLOW_MAX)
        __builtin_trap();
    for (int i = 0; i < fz_a.n; i++) {
        const lb_netrule *r = &fz_a.r[i];
        if (r->kind == LB_NETRULE_NET) {
            int max = r->family == AF_INET ? 32 : r->family == AF_INET6 ? 128 : -1;
            if (max < 0 || r->prefix < 0 || r->prefix > max)
                __builtin_trap();
            for (int bit = r->prefix; bit < max; bit++)
                if (r->addr[bit / 8] & (0x80 >> (bit % 8)))
                    __builtin_trap();
        } else if (r->kind == LB_NETRULE_HOST || r->kind == LB_NETRULE_SUFFIX) {
            size_t n = strnlen(r->host, sizeof r->host);
            if (!n || n == sizeof r->host)
                __builtin_trap();
            for (size_t k = 0; k < n; k++)
                if (!((r->host[k] >= 'a' && r->host[k] <= 'z') || (r->host[k] >= '0' && r->host[k] <= '9') ||
                      r->host[k] == '.' || r->host[k] == '-'))
                    __builtin_trap();
        } else if (r->kind != LB_NETRULE_PUBLIC) {
            __builtin_trap();
        }
    }
    static const char *const inside[] = {"127.0.0.1", "169.254.169.254", "10.0.0.1", "192.168.0.1"};
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
        struct sockaddr_in v4 = {.sin_family = AF_INET};
        if (inet_pton(AF_INET, inside[i], &v4.sin_addr) != 1)
            __builtin_trap();
        if (lb_netallow_addr(&fz_a, (struct sockaddr *)&v4, sizeof v4) &&
            !has_net_rule_for((const unsigned char *)&v4.sin_addr))
            __builtin_trap();
    }
    /* the input as a URL's host: only a name rule may name it, and never
     * an address literal */
    unsigned char tmp[16];
    if (lb_netallow_host(&fz_a, s)) {
        int named = 0;
        for (int i = 0; i < fz_a.n; i++)
            named |= fz_a.r[i].kind == LB_NETRULE_HOST || fz_a.r[i].kind == LB_NETRULE_SUFFIX;
        if (!named || inet_pton(AF_INET, s, tmp) == 1 || inet_pton(AF_INET6, s, tmp) == 1)
            __builtin_trap();
    }
    return 0;
}
