/* A request head and a chunked body read strictly; the contract is
 * netgw_http.h. Only RFC 9112's plain forms are taken: lines end in CRLF,
 * no folding, a token before each colon, one Host, Content-Length digits
 * only, Transfer-Encoding exactly "chunked". */
#include "netgw/netgw_http.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int refuse(char *why, size_t whysz, const char *s)
{
    snprintf(why, whysz, "%s", s);
    return -1;
}

/* The value of header line [p, p+n) after name and colon, blanks cut. */
static void hdr_value(const char *p, size_t n, size_t nlen, const char **v, size_t *vn)
{
    size_t a = nlen + 1, b = n;
    while (a < b && (p[a] == ' ' || p[a] == '\t'))
        a++;
    while (b > a && (p[b - 1] == ' ' || p[b - 1] == '\t'))
        b--;
    *v = p + a;
    *vn = b - a;
}

static int set_host(lb_http_req *r, const char *v, size_t n)
{
    if (n && v[0] == '[')
        return -1; /* an address literal: never a name the gateway resolved */
    const char *colon = memchr(v, ':', n);
    if (colon) {
        for (const char *q = colon + 1; q < v + n; q++)
            if (*q < '0' || *q > '9')
                return -1;
        n = (size_t)(colon - v);
    }
    if (n && v[n - 1] == '.')
        n--;
    if (!n || n >= sizeof r->host)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return -1;
        r->host[i] = c;
    }
    r->host[n] = '\0';
    return 0;
}

int lb_http_req_parse(const char *buf, size_t len, lb_http_req *r, char *why, size_t whysz)
{
    memset(r, 0, sizeof *r);
    r->content_length = -1;
    if (len > LB_HTTP_HEAD_MAX)
        len = LB_HTTP_HEAD_MAX;
    /* the request line: METHOD SP target SP HTTP/1.x */
    const char *eol = memmem(buf, len, "\r\n", 2);
    if (!eol) {
        if (memchr(buf, '\n', len))
            return refuse(why, whysz, "the request line ends in a bare LF");
        return len >= LB_HTTP_LINE_MAX ? refuse(why, whysz, "the request line is too long") : 0;
    }
    size_t ll = (size_t)(eol - buf);
    if (ll >= LB_HTTP_LINE_MAX)
        return refuse(why, whysz, "the request line is too long");
    size_t m = 0;
    while (m < ll && tchar((unsigned char)buf[m]))
        m++;
    if (!m || m == ll || buf[m] != ' ')
        return refuse(why, whysz, "not an HTTP/1.1 request line");
    if (m == 7 && !memcmp(buf, "CONNECT", 7))
        return refuse(why, whysz, "CONNECT is not relayed");
    size_t t = m + 1;
    while (t < ll && (unsigned char)buf[t] > 0x20 && (unsigned char)buf[t] < 0x7f)
        t++;
    if (t == m + 1 || t + 9 != ll || buf[t] != ' ' ||
        (memcmp(buf + t + 1, "HTTP/1.1", 8) && memcmp(buf + t + 1, "HTTP/1.0", 8)))
        return refuse(why, whysz, "not an HTTP/1.1 request line");
    r->line_len = ll;
    size_t at = ll + 2;
    int hosts = 0, te = 0;
    for (;;) {
        const char *p = buf + at;
        const char *e = memmem(p, len - at, "\r\n", 2);
        if (!e) {
            if (memchr(p, '\n', len - at))
                return refuse(why, whysz, "a header line ends in a bare LF");
            if (len - at >= LB_HTTP_LINE_MAX || len >= LB_HTTP_HEAD_MAX)
                return refuse(why, whysz, "the request head is too long");
            return 0;
        }
        size_t n = (size_t)(e - p);
        if (!n) {
            r->head_len = at + 2;
            break;
        }
        if (n >= LB_HTTP_LINE_MAX)
            return refuse(why, whysz, "a header line is too long");
        if (r->nh == LB_HTTP_HEADERS_MAX)
            return refuse(why, whysz, "too many header lines");
        size_t nl = 0;
        while (nl < n && tchar((unsigned char)p[nl]))
            nl++;
        if (!nl || nl == n || p[nl] != ':')
            return refuse(why, whysz, "a header line is not NAME: VALUE (folded lines are refused)");
        for (size_t i = nl + 1; i < n; i++)
            if (((unsigned char)p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f)
                return refuse(why, whysz, "a header value holds a control character");
        r->h[r->nh].off = (uint32_t)at;
        r->h[r->nh].len = (uint32_t)n;
        r->h[r->nh].nlen = (uint32_t)nl;
        const char *v;
        size_t vn;
        hdr_value(p, n, nl, &v, &vn);
        if (nl == 4 && !strncasecmp(p, "host", 4)) {
            if (hosts++ || set_host(r, v, vn) != 0)
                return refuse(why, whysz, "the request needs exactly one Host that is a name");
        } else if (nl == 14 && !strncasecmp(p, "content-length", 14)) {
            int64_t x = 0;
            if (!vn || vn > 15)
                return refuse(why, whysz, "Content-Length is not a number");
            for (size_t i = 0; i < vn; i++) {
                if (v[i] < '0' || v[i] > '9')
                    return refuse(why, whysz, "Content-Length is not a number");
                x = x * 10 + (v[i] - '0');
            }
            if (r->content_length >= 0 && r->content_length != x)
                return refuse(why, whysz, "two different Content-Length");
            r->content_length = x;
        } else if (nl == 17 && !strncasecmp(p, "transfer-encoding", 17)) {
            if (te++ || vn != 7 || strncasecmp(v, "chunked", 7))
                return refuse(why, whysz, "a Transfer-Encoding other than one \"chunked\"");
            r->chunked = 1;
        } else if (nl == 7 && !strncasecmp(p, "upgrade", 7)) {
            return refuse(why, whysz, "Upgrade (WebSocket, h2c) is not relayed where a secret is added");
        }
        r->nh++;
        at += n + 2;
    }
    if (!hosts)
        return refuse(why, whysz, "the request needs exactly one Host that is a name");
    if (r->chunked && r->content_length >= 0)
        return refuse(why, whysz, "both Content-Length and Transfer-Encoding");
    return 1;
}

int lb_http_hdr_is(const char *buf, const lb_http_req *r, int i, const char *name)
{
    size_t n = strlen(name);
    return r->h[i].nlen == n && !strncasecmp(buf + r->h[i].off, name, n);
}

enum { C_SIZE, C_EXT, C_SIZE_LF, C_DATA, C_DATA_CR, C_DATA_LF, C_TRAILER, C_TR_LF, C_END_LF };

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long lb_http_chunked_feed(lb_http_chunked *c, const unsigned char *p, size_t n, int *done)
{
    *done = 0;
    size_t i = 0;
    while (i < n) {
        unsigned char b = p[i];
        switch (c->state) {
        case C_DATA: {
            size_t k = n - i < c->left ? n - i : (size_t)c->left;
            c->left -= k;
            i += k;
            if (!c->left)
                c->state = C_DATA_CR;
            continue;
        }
        case C_SIZE:
            if (++c->line > LB_HTTP_CHUNK_LINE_MAX)
                return -1;
            if (hexval(b) >= 0) {
                if (c->ext || ++c->digits > 15)
                    return -1;
                c->left = c->left * 16 + (uint64_t)hexval(b);
            } else if (b == ';' || b == ' ' || b == '\t') {
                if (!c->digits)
                    return -1;
                c->state = C_EXT;
            } else if (b == '\r') {
                if (!c->digits)
                    return -1;
                c->state = C_SIZE_LF;
            } else {
                return -1;
            }
            break;
        case C_EXT:
            if (++c->line > LB_HTTP_CHUNK_LINE_MAX || (b < 0x20 && b != '\t' && b != '\r') || b == 0x7f)
                return -1;
            if (b == '\r')
                c->state = C_SIZE_LF;
            break;
        case C_SIZE_LF:
            if (b != '\n')
                return -1;
            c->state = c->left ? C_DATA : C_TRAILER;
            c->line = 0;
            c->digits = c->ext = 0;
            break;
        case C_DATA_CR:
            if (b != '\r')
                return -1;
            c->state = C_DATA_LF;
            break;
        case C_DATA_LF:
            if (b != '\n')
                return -1;
            c->state = C_SIZE;
            c->left = 0;
            break;
        case C_TRAILER:
            if (!c->line && b == '\r') {
                c->state = C_END_LF;
                break;
            }
            if (++c->line > LB_HTTP_CHUNK_LINE_MAX || ++c->trailer > LB_HTTP_TRAILER_MAX ||
                (b < 0x20 && b != '\t' && b != '\r') || b == 0x7f)
                return -1;
            if (b == '\r')
                c->state = C_TR_LF;
            break;
        case C_TR_LF:
            if (b != '\n')
                return -1;
            c->state = C_TRAILER;
            c->line = 0;
            break;
        case C_END_LF:
            if (b != '\n')
                return -1;
            *done = 1;
            return (long)(i + 1);
        default:
            return -1;
        }
        i++;
    }
    return (long)n;
}
