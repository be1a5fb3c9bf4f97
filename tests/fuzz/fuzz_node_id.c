/* libFuzzer target for several nodes's sandbox ids with the node prefix
 * (server/common/node_id.c), from a URL path segment, the E2b-Sandbox-Id
 * header or an E2B host name (any bytes a client sends). Promises:
 * lb_node_id_valid agrees with a plain reference ("[<name>.]<32 hex>",
 * name 1..63 of [a-z0-9-] not starting with '-'); lb_node_id_host takes
 * only what it returns rebuilt exactly ("<port>-<id>.<domain>", any case
 * in the domain), with a valid id and a port of 1..65535, with or without
 * the domain given. */
#include "common/node_id.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int ref_hex32(const char *s, size_t n)
{
    if (n != 32)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

static int ref_valid(const char *s, size_t n)
{
    const char *dot = memchr(s, '.', n);
    if (!dot)
        return ref_hex32(s, n);
    size_t k = (size_t)(dot - s);
    if (k < 1 || k > 63 || s[0] == '-')
        return 0;
    for (size_t i = 0; i < k; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return 0;
    return ref_hex32(dot + 1, n - k - 1);
}

static void check_host(const char *s, size_t n, const char *domain)
{
    char id[LB_NODE_ID_MAX + 1], back[600];
    int port = -1;
    if (!lb_node_id_host(s, n, domain, id, sizeof id, &port))
        return;
    if (!lb_node_id_valid(id) || port < 1 || port > 65535)
        __builtin_trap();
    size_t hn = n;
    const char *colon = memchr(s, ':', n);
    if (colon)
        hn = (size_t)(colon - s);
    int bn = snprintf(back, sizeof back, "%d-%s", port, id);
    if (bn < 0 || (size_t)bn > hn)
        __builtin_trap();
    /* the port's digits may have leading zeros: compare from the '-' */
    const char *dash = memchr(s, '-', hn);
    const char *bdash = strchr(back, '-');
    if (!dash || strncmp(dash, bdash, strlen(bdash)))
        __builtin_trap();
    const char *after = dash + strlen(bdash);
    size_t left = hn - (size_t)(after - s);
    if (domain && *domain) {
        if (left != strlen(domain) + 1 || after[0] != '.' || strncasecmp(after + 1, domain, strlen(domain)))
            __builtin_trap();
    } else if (left && after[0] != '.') {
        __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 512)
        return 0;
    char s[513];
    memcpy(s, data, size);
    s[size] = '\0';
    size_t n = strlen(s);
    if (lb_node_id_valid(s) != ref_valid(s, n))
        __builtin_trap();
    char node[LB_NODE_ID_NAME_MAX + 1];
    if (lb_node_id_node(s, node, sizeof node) != lb_node_id_valid(s))
        __builtin_trap();
    check_host(s, n, "e2b.example");
    check_host(s, n, NULL);
    return 0;
}
