/* The name in a connection's first bytes; the contract is netgw_peek.h.
 * Only what the gateway needs is read: the request head's Host line, and
 * in TLS the record and handshake headers down to the server_name
 * extension (RFC 8446 4.1.2, RFC 6066 3). */
#include "netgw/netgw_peek.h"

#include <string.h>
#include <strings.h>

/* name = lowercased s[0..n) if it is a plausible host name; 1 or -1 */
static int name_set(const unsigned char *s, size_t n, char *name, size_t namesz)
{
    if (n && s[n - 1] == '.')
        n--;
    if (!n || n > 253 || n >= namesz)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return -1;
        name[i] = (char)c;
    }
    name[n] = '\0';
    return 1;
}

int lb_peek_http_host(const unsigned char *buf, size_t len, char *name, size_t namesz)
{
    if (len > LB_PEEK_MAX)
        len = LB_PEEK_MAX;
    /* a request line starts with a method of capital letters and a space */
    size_t i = 0;
    while (i < len && buf[i] >= 'A' && buf[i] <= 'Z')
        i++;
    if (i == len)
        return 0;
    if (!i || buf[i] != ' ')
        return -1;
    const unsigned char *p = buf, *end = buf + len;
    for (;;) {
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return 0;
        p = nl + 1;
        size_t rest = (size_t)(end - p);
        if (rest >= 1 && (p[0] == '\r' || p[0] == '\n'))
            return -1; /* the head ended without a Host */
        if (rest < 5)
            return 0;
        if (strncasecmp((const char *)p, "host:", 5))
            continue;
        const unsigned char *v = p + 5;
        const unsigned char *eol = memchr(v, '\n', (size_t)(end - v));
        if (!eol)
            return 0;
        while (v < eol && (*v == ' ' || *v == '\t'))
            v++;
        const unsigned char *e = eol;
        while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (v < e && *v == '[')
            return -1; /* an IPv6 literal: not a name */
        const unsigned char *colon = memchr(v, ':', (size_t)(e - v));
        return name_set(v, (size_t)((colon ? colon : e) - v), name, namesz);
    }
}

static unsigned get16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }

int lb_peek_tls_sni(const unsigned char *buf, size_t len, char *name, size_t namesz)
{
    if (len > LB_PEEK_MAX)
        len = LB_PEEK_MAX;
    if (len < 5)
        return 0;
    if (buf[0] != 22 || buf[1] != 3) /* a handshake record of TLS 1.x */
        return -1;
    size_t rec = get16(buf + 3);
    if (len < 5 + rec)
        return rec + 5 > LB_PEEK_MAX ? -1 : 0;
    const unsigned char *p = buf + 5, *end = buf + 5 + rec;
    /* handshake: type 1 (ClientHello), 3-byte length, version, random */
    if (end - p < 4 + 2 + 32 + 1 || p[0] != 1)
        return -1;
    p += 4 + 2 + 32;
    size_t n = p[0]; /* session id */
    p += 1;
    if ((size_t)(end - p) < n + 2)
        return -1;
    p += n;
    n = get16(p); /* cipher suites */
    p += 2;
    if ((size_t)(end - p) < n + 1)
        return -1;
    p += n;
    n = p[0]; /* compression methods */
    p += 1;
    if ((size_t)(end - p) < n + 2)
        return -1;
    p += n;
    size_t ext = get16(p);
    p += 2;
    if ((size_t)(end - p) < ext)
        return -1;
    end = p + ext;
    while (end - p >= 4) {
        unsigned type = get16(p);
        size_t elen = get16(p + 2);
        p += 4;
        if ((size_t)(end - p) < elen)
            return -1;
        if (type == 0) { /* server_name: list length, then (type 0, length, name) */
            const unsigned char *q = p, *qe = p + elen;
            if (qe - q < 2)
                return -1;
            q += 2;
            while (qe - q >= 3) {
                unsigned nt = q[0];
                size_t nl = get16(q + 1);
                q += 3;
                if ((size_t)(qe - q) < nl)
                    return -1;
                if (nt == 0)
                    return name_set(q, nl, name, namesz);
                q += nl;
            }
            return -1;
        }
        p += elen;
    }
    return -1;
}
