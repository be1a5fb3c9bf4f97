/* several nodes: sandbox ids with the node prefix (node_id.h). */
#include "common/node_id.h"

#include "common/util.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int lb_node_id_name_ok(const char *s, size_t n)
{
    if (!s || n < 1 || n > LB_NODE_ID_NAME_MAX || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return 0;
    }
    return 1;
}

int lb_node_id_valid(const char *s)
{
    if (!s)
        return 0;
    size_t n = strnlen(s, LB_NODE_ID_MAX + 1);
    if (n > LB_NODE_ID_MAX)
        return 0;
    const char *dot = memchr(s, '.', n);
    if (!dot)
        return lb_id_valid(s);
    return lb_node_id_name_ok(s, (size_t)(dot - s)) && lb_id_valid(dot + 1);
}

int lb_node_id_node(const char *id, char *node, size_t nodesz)
{
    if (nodesz)
        node[0] = '\0';
    if (!lb_node_id_valid(id))
        return 0;
    const char *dot = strchr(id, '.');
    if (dot && nodesz)
        snprintf(node, nodesz, "%.*s", (int)(dot - id), id);
    return 1;
}

int lb_node_id_new(const char *node, char *out, size_t outsz)
{
    char hex[LB_ID_HEX_LEN + 1];
    size_t nl = node ? strlen(node) : 0;
    if (nl && !lb_node_id_name_ok(node, nl))
        return LB_E_INVAL;
    if (outsz < nl + 1 + sizeof hex)
        return LB_E_INVAL;
    int rc = lb_random_hex(hex, sizeof hex, LB_ID_HEX_LEN / 2);
    if (rc != LB_OK)
        return rc;
    snprintf(out, outsz, "%s%s%s", nl ? node : "", nl ? "." : "", hex);
    return LB_OK;
}


/* The id of s[0..n) into id when it is one (and fits). */
static int lb_take_id(const char *s, size_t n, char *id, size_t idsz)
{
    char t[LB_NODE_ID_MAX + 1];
    if (n > LB_NODE_ID_MAX || n >= idsz)
        return 0;
    memcpy(t, s, n);
    t[n] = '\0';
    if (!lb_node_id_valid(t))
        return 0;
    memcpy(id, t, n + 1);
    return 1;
}

int lb_node_id_host(const char *host, size_t n, const char *domain, char *id, size_t idsz, int *port)
{
    if (idsz)
        id[0] = '\0';
    if (!host || !idsz)
        return 0;
    const char *colon = memchr(host, ':', n);
    if (colon)
        n = (size_t)(colon - host);
    size_t i = 0;
    int p = 0;
    while (i < n && i < 5 && host[i] >= '0' && host[i] <= '9')
        p = p * 10 + (host[i++] - '0');
    if (!i || i >= n || host[i] != '-' || p < 1 || p > 65535)
        return 0;
    const char *s = host + i + 1;
    size_t left = n - i - 1, d = domain ? strlen(domain) : 0;
    int ok;
    if (d) {
        ok = left > d + 1 && s[left - d - 1] == '.' && !strncasecmp(s + left - d, domain, d) &&
             lb_take_id(s, left - d - 1, id, idsz);
    } else {
        const char *dot1 = memchr(s, '.', left);
        size_t l1 = dot1 ? (size_t)(dot1 - s) : left;
        const char *dot2 = dot1 ? memchr(dot1 + 1, '.', left - l1 - 1) : NULL;
        size_t l12 = dot2 ? (size_t)(dot2 - s) : left;
        ok = (dot1 && lb_take_id(s, l12, id, idsz)) || lb_take_id(s, l1, id, idsz);
    }
    if (ok)
        *port = p;
    return ok;
}
