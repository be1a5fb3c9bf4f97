/* Streaming multipart/form-data parser; see multipart.h.
 *
 * The body is a sequence  preamble DELIM part DELIM part ... DELIM "--"
 * where DELIM is CRLF "--" boundary. To find the first boundary, which may
 * sit at the very start without a CRLF, the work buffer starts with a
 * virtual CRLF. Part data is passed on as soon as it cannot be the start of
 * a delimiter, so only the last (delimiter length - 1) bytes wait.
 */
#include "web/multipart.h"

#include "common/status.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LB_MP_CHUNK (64u << 10)      /* bytes taken from one feed per step */
#define LB_MP_PREAMBLE_MAX (16u << 10) /* garbage allowed before the first boundary */
#define LB_MP_PADDING_MAX 64          /* spaces allowed after a boundary */

enum { S_PREAMBLE, S_AFTER_DELIM, S_HEADERS, S_BODY, S_DONE };

struct lb_mp {
    char delim[4 + LB_MP_BOUNDARY_MAX + 1]; /* "\r\n--" boundary */
    size_t dlen;
    lb_mp_limits lim;
    lb_mp_callbacks cb;
    void *arg;
    char *buf;          /* pending bytes, never more than bufmax */
    size_t len, bufmax;
    int state;
    int err;            /* sticky error */
    char errmsg[320];
    uint64_t total;     /* bytes fed */
    size_t parts;
    size_t preamble;
    lb_mp_part part;
};

static int lb_mp_fail(lb_mp *m, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lb_mp_fail(lb_mp *m, int err, const char *fmt, ...)
{
    if (m->err)
        return m->err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->errmsg, sizeof m->errmsg, fmt, ap);
    va_end(ap);
    m->err = err;
    return err;
}

static int lb_is_bchar(unsigned char c)
{
    return isalnum(c) || strchr("'()+_,-./:=? ", c) != NULL;
}

static int lb_is_tchar(unsigned char c)
{
    return c > 0x20 && c < 0x7f && !strchr("()<>@,;:\\\"/[]?={}", c);
}

/* Reads one ";name=value" parameter at *pp. Returns 1 with name and value
 * (value NUL-terminated, *vlen its length), 0 at the end, -1 if malformed or
 * too long. In quoted values \" and \\ are escapes (RFC 9110 quoted-pair,
 * as curl's older form escaping sends them); any other backslash is kept:
 * browsers send names unescaped (only '"', CR and LF as %22, %0D, %0A), so
 * "a\b.txt" is a name with a backslash, refused as such, not "ab.txt". */
static int lb_param_next(const char **pp, const char *end, char *name, size_t namesz, char *val,
                         size_t valsz, size_t *vlen)
{
    const char *p = *pp;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end)
        return 0;
    if (*p++ != ';')
        return -1;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end)
        return 0; /* a trailing ';' is common and harmless */
    size_t n = 0;
    while (p < end && lb_is_tchar((unsigned char)*p)) {
        if (n + 1 >= namesz)
            return -1;
        name[n++] = *p++;
    }
    name[n] = '\0';
    if (n == 0)
        return -1;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || *p++ != '=')
        return -1;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    size_t v = 0;
    if (p < end && *p == '"') {
        p++;
        for (;;) {
            if (p == end)
                return -1; /* unterminated quote */
            char c = *p++;
            if (c == '"')
                break;
            if (c == '\\' && p < end && (*p == '"' || *p == '\\'))
                c = *p++;
            if (v + 1 >= valsz)
                return -1;
            val[v++] = c;
        }
    } else {
        while (p < end && *p != ';' && *p != ' ' && *p != '\t') {
            if (v + 1 >= valsz)
                return -1;
            val[v++] = *p++;
        }
    }
    val[v] = '\0';
    *vlen = v;
    *pp = p;
    return 1;
}

/* True when s starts with the media type t (case-insensitive) followed by
 * the end, ';' or whitespace; *rest points after it. */
static int lb_type_is(const char *s, const char *t, const char **rest)
{
    if (!s)
        return 0;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(t);
    if (strncasecmp(s, t, n) != 0)
        return 0;
    char c = s[n];
    if (c != '\0' && c != ';' && c != ' ' && c != '\t')
        return 0;
    if (rest)
        *rest = s + n;
    return 1;
}

int lb_mp_is_form_data(const char *content_type)
{
    return lb_type_is(content_type, "multipart/form-data", NULL);
}

int lb_mp_boundary(const char *content_type, char *out, size_t outsz)
{
    const char *p;
    if (outsz < LB_MP_BOUNDARY_MAX + 1 || !lb_type_is(content_type, "multipart/form-data", &p))
        return LB_E_INVAL;
    out[0] = '\0';
    const char *end = p + strlen(p);
    char name[32], val[128];
    size_t vlen;
    int r;
    while ((r = lb_param_next(&p, end, name, sizeof name, val, sizeof val, &vlen)) == 1) {
        if (strcasecmp(name, "boundary") != 0)
            continue;
        if (vlen == 0 || vlen > LB_MP_BOUNDARY_MAX || val[vlen - 1] == ' ')
            return LB_E_INVAL;
        for (size_t i = 0; i < vlen; i++)
            if (!lb_is_bchar((unsigned char)val[i]))
                return LB_E_INVAL;
        memcpy(out, val, vlen + 1);
    }
    return (r == 0 && out[0]) ? LB_OK : LB_E_INVAL;
}

int lb_mp_new(const char *boundary, const lb_mp_limits *limits, const lb_mp_callbacks *cb, void *arg,
              lb_mp **out)
{
    *out = NULL;
    size_t blen = boundary ? strlen(boundary) : 0;
    if (blen == 0 || blen > LB_MP_BOUNDARY_MAX || !limits)
        return LB_E_INVAL;
    lb_mp *m = calloc(1, sizeof *m);
    if (!m)
        return LB_E_NOMEM;
    m->dlen = (size_t)snprintf(m->delim, sizeof m->delim, "\r\n--%s", boundary);
    m->lim = *limits;
    if (cb)
        m->cb = *cb;
    m->arg = arg;
    /* The most that can be pending after a step is one header block (plus
     * its terminator) or a delimiter's worth; then one more chunk comes in. */
    m->bufmax = m->lim.max_header_bytes + m->dlen + LB_MP_PADDING_MAX + 8 + LB_MP_CHUNK;
    m->buf = malloc(m->bufmax);
    if (!m->buf) {
        free(m);
        return LB_E_NOMEM;
    }
    memcpy(m->buf, "\r\n", 2); /* the virtual CRLF before a leading boundary */
    m->len = 2;
    m->state = S_PREAMBLE;
    *out = m;
    return LB_OK;
}

void lb_mp_free(lb_mp *m)
{
    if (!m)
        return;
    free(m->buf);
    free(m);
}

const char *lb_mp_error(const lb_mp *m) { return m ? m->errmsg : ""; }

static void lb_consume(lb_mp *m, size_t n)
{
    memmove(m->buf, m->buf + n, m->len - n);
    m->len -= n;
}

/* Prints a client-supplied name safely into a message. */
static void lb_printable(char *out, size_t outsz, const char *in, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < outsz; i++) {
        unsigned char c = (unsigned char)in[i];
        out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (o + 4 >= outsz && n)
        o += (size_t)snprintf(out + o, outsz - o, "...");
    out[o] = '\0';
}

/* Browsers escape '"', CR and LF in file names as %22, %0D, %0A (HTML
 * spec, "multipart/form-data encoding algorithm"); nothing else is
 * percent-decoded, so a real "%41" in a name stays as typed. */
static size_t lb_html_unescape_name(char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n) {
            char a = (char)toupper((unsigned char)s[i + 1]), b = (char)toupper((unsigned char)s[i + 2]);
            if (a == '2' && b == '2') {
                s[o++] = '"';
                i += 2;
                continue;
            }
            if (a == '0' && (b == 'A' || b == 'D')) {
                s[o++] = b == 'A' ? '\n' : '\r';
                i += 2;
                continue;
            }
        }
        s[o++] = s[i];
    }
    return o;
}

static int lb_parse_disposition(lb_mp *m, const char *v, const char *end)
{
    const char *p;
    char tmp[LB_MP_NAME_MAX + 1];
    size_t n = (size_t)(end - v) < sizeof tmp - 1 ? (size_t)(end - v) : sizeof tmp - 1;
    memcpy(tmp, v, n);
    tmp[n] = '\0';
    if (!lb_type_is(tmp, "form-data", NULL))
        return lb_mp_fail(m, LB_E_INVAL, "A part's Content-Disposition is not \"form-data\".");
    p = v;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    p += strlen("form-data");
    int have_name = 0;
    char pname[32];
    char *val = malloc(m->lim.max_header_bytes + 1);
    if (!val)
        return lb_mp_fail(m, LB_E_NOMEM, "Out of memory while reading the upload.");
    size_t vlen;
    int r, rc = LB_OK;
    while ((r = lb_param_next(&p, end, pname, sizeof pname, val, m->lim.max_header_bytes + 1, &vlen)) == 1) {
        if (!strcasecmp(pname, "name")) {
            if (vlen == 0 || vlen > LB_MP_NAME_MAX) {
                rc = lb_mp_fail(m, LB_E_INVAL, "A form field name is empty or longer than %d bytes.",
                                LB_MP_NAME_MAX);
                goto out;
            }
            memcpy(m->part.name, val, vlen + 1);
            have_name = 1;
        } else if (!strcasecmp(pname, "filename")) {
            /* filename*= (RFC 5987) is ignored on purpose: RFC 7578 says
             * form-data senders do not use it. */
            m->part.is_file = 1;
            vlen = lb_html_unescape_name(val, vlen);
            if (vlen == 0) {
                m->part.filename[0] = '\0';
                continue;
            }
            if (m->lim.absolute_names_ok) {
                m->part.absolute = val[0] == '/';
                size_t k = strspn(val, "/");
                memmove(val, val + k, vlen - k);
                vlen -= k;
            }
            if (lb_path_clean_rel(val, vlen, m->part.filename, sizeof m->part.filename) != LB_OK) {
                char shown[120];
                lb_printable(shown, sizeof shown, val, vlen);
                rc = lb_mp_fail(m, LB_E_INVAL,
                                "The file name \"%s\" is not allowed: use a relative path without \"..\","
                                " a leading \"/\", backslashes or control characters, at most %d bytes.",
                                shown, LB_PATH_MAX);
                goto out;
            }
        }
    }
    if (r < 0) {
        rc = lb_mp_fail(m, LB_E_INVAL, "A part's Content-Disposition header is malformed.");
        goto out;
    }
    if (!have_name)
        rc = lb_mp_fail(m, LB_E_INVAL, "A part has no form field name.");
out:
    free(val);
    return rc;
}

/* Parses one part's header block (lines ending in CRLF, without the blank
 * line). */
static int lb_parse_headers(lb_mp *m, const char *h, size_t n)
{
    memset(&m->part, 0, sizeof m->part);
    int have_cd = 0;
    if (memchr(h, '\0', n))
        return lb_mp_fail(m, LB_E_INVAL, "A part's headers contain a NUL byte.");
    const char *end = h + n;
    while (h < end) {
        const char *eol = memchr(h, '\r', (size_t)(end - h));
        if (!eol || eol + 1 >= end || eol[1] != '\n')
            return lb_mp_fail(m, LB_E_INVAL, "A part's header line does not end with CRLF.");
        if (*h == ' ' || *h == '\t')
            return lb_mp_fail(m, LB_E_INVAL, "Folded part headers are not supported.");
        const char *colon = memchr(h, ':', (size_t)(eol - h));
        if (!colon || colon == h)
            return lb_mp_fail(m, LB_E_INVAL, "A part's header line has no name.");
        const char *v = colon + 1;
        while (v < eol && (*v == ' ' || *v == '\t'))
            v++;
        const char *ve = eol;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        size_t hn = (size_t)(colon - h);
        if (hn == 19 && !strncasecmp(h, "Content-Disposition", 19)) {
            if (have_cd)
                return lb_mp_fail(m, LB_E_INVAL, "A part has two Content-Disposition headers.");
            int rc = lb_parse_disposition(m, v, ve);
            if (rc)
                return rc;
            have_cd = 1;
        } else if (hn == 12 && !strncasecmp(h, "Content-Type", 12)) {
            size_t cl = (size_t)(ve - v);
            if (cl >= sizeof m->part.content_type)
                cl = sizeof m->part.content_type - 1;
            memcpy(m->part.content_type, v, cl);
            m->part.content_type[cl] = '\0';
        }
        h = eol + 2;
    }
    if (!have_cd)
        return lb_mp_fail(m, LB_E_INVAL, "A part has no Content-Disposition header.");
    return LB_OK;
}

static int lb_deliver(lb_mp *m, const char *p, size_t n)
{
    if (n == 0)
        return LB_OK;
    m->part.size += n;
    if (m->part.is_file && m->part.size > m->lim.max_file_bytes)
        return lb_mp_fail(m, LB_E_TOOBIG, "The file \"%s\" is larger than the limit of %llu bytes.",
                          m->part.filename, (unsigned long long)m->lim.max_file_bytes);
    if (!m->part.is_file && m->part.size > m->lim.max_field_bytes)
        return lb_mp_fail(m, LB_E_TOOBIG, "The form field \"%s\" is longer than the limit of %zu bytes.",
                          m->part.name, m->lim.max_field_bytes);
    if (m->cb.part_data) {
        int rc = m->cb.part_data(m->arg, &m->part, p, n);
        if (rc)
            return m->err = rc;
    }
    return LB_OK;
}

/* Runs the state machine over the pending bytes. Returns LB_OK when it
 * needs more input (or is done). */
static int lb_step(lb_mp *m)
{
    for (;;) {
        switch (m->state) {
        case S_PREAMBLE: {
            char *d = memmem(m->buf, m->len, m->delim, m->dlen);
            if (d) {
                lb_consume(m, (size_t)(d - m->buf) + m->dlen);
                m->state = S_AFTER_DELIM;
                break;
            }
            if (m->len >= m->dlen) {
                size_t drop = m->len - (m->dlen - 1);
                m->preamble += drop;
                lb_consume(m, drop);
            }
            if (m->preamble > LB_MP_PREAMBLE_MAX)
                return lb_mp_fail(m, LB_E_INVAL,
                                  "The body does not contain the multipart boundary named in Content-Type.");
            return LB_OK;
        }
        case S_AFTER_DELIM: {
            if (m->len < 2)
                return LB_OK;
            if (m->buf[0] == '-' && m->buf[1] == '-') {
                m->state = S_DONE; /* the epilogue, if any, is ignored */
                m->len = 0;
                return LB_OK;
            }
            size_t i = 0;
            while (i < m->len && (m->buf[i] == ' ' || m->buf[i] == '\t'))
                i++;
            if (i > LB_MP_PADDING_MAX)
                return lb_mp_fail(m, LB_E_INVAL, "A multipart boundary line is malformed.");
            if (i + 2 > m->len)
                return LB_OK;
            if (m->buf[i] != '\r' || m->buf[i + 1] != '\n')
                return lb_mp_fail(m, LB_E_INVAL, "A multipart boundary line is malformed.");
            lb_consume(m, i + 2);
            if (++m->parts > m->lim.max_parts)
                return lb_mp_fail(m, LB_E_TOOBIG, "The form has more than %zu parts.", m->lim.max_parts);
            m->state = S_HEADERS;
            break;
        }
        case S_HEADERS: {
            size_t hlen, skip;
            if (m->len >= 2 && m->buf[0] == '\r' && m->buf[1] == '\n') {
                hlen = 0; /* no headers at all: refused below */
                skip = 2;
            } else {
                char *e = memmem(m->buf, m->len, "\r\n\r\n", 4);
                if (!e) {
                    if (m->len > m->lim.max_header_bytes)
                        return lb_mp_fail(m, LB_E_INVAL, "A part's headers are longer than %zu bytes.",
                                          m->lim.max_header_bytes);
                    return LB_OK;
                }
                hlen = (size_t)(e - m->buf) + 2;
                skip = hlen + 2;
            }
            if (hlen > m->lim.max_header_bytes)
                return lb_mp_fail(m, LB_E_INVAL, "A part's headers are longer than %zu bytes.",
                                  m->lim.max_header_bytes);
            int rc = lb_parse_headers(m, m->buf, hlen);
            if (rc)
                return rc;
            lb_consume(m, skip);
            if (m->cb.part_begin && (rc = m->cb.part_begin(m->arg, &m->part)) != 0)
                return m->err = rc;
            m->state = S_BODY;
            break;
        }
        case S_BODY: {
            char *d = memmem(m->buf, m->len, m->delim, m->dlen);
            if (d) {
                size_t n = (size_t)(d - m->buf);
                int rc = lb_deliver(m, m->buf, n);
                if (rc)
                    return rc;
                if (m->cb.part_end && (rc = m->cb.part_end(m->arg, &m->part)) != 0)
                    return m->err = rc;
                lb_consume(m, n + m->dlen);
                m->state = S_AFTER_DELIM;
                break;
            }
            if (m->len >= m->dlen) {
                size_t n = m->len - (m->dlen - 1);
                int rc = lb_deliver(m, m->buf, n);
                if (rc)
                    return rc;
                lb_consume(m, n);
            }
            return LB_OK;
        }
        case S_DONE:
            m->len = 0;
            return LB_OK;
        }
    }
}

int lb_mp_feed(lb_mp *m, const char *data, size_t n)
{
    if (m->err)
        return m->err;
    m->total += n;
    if (m->total > m->lim.max_total_bytes)
        return lb_mp_fail(m, LB_E_TOOBIG, "The upload is larger than the limit of %llu bytes.",
                          (unsigned long long)m->lim.max_total_bytes);
    while (n) {
        if (m->state == S_DONE)
            return LB_OK;
        size_t room = m->bufmax - m->len;
        size_t take = n < room ? n : room;
        if (take == 0) /* cannot happen: a step always leaves room */
            return lb_mp_fail(m, LB_E_INTERNAL, "The upload parser ran out of buffer space.");
        memcpy(m->buf + m->len, data, take);
        m->len += take;
        data += take;
        n -= take;
        int rc = lb_step(m);
        if (rc)
            return rc;
    }
    return LB_OK;
}

int lb_mp_finish(lb_mp *m)
{
    if (m->err)
        return m->err;
    if (m->state != S_DONE) {
        if (m->total == 0)
            return lb_mp_fail(m, LB_E_INVAL, "The request body is empty; expected a multipart form.");
        if (m->state == S_PREAMBLE)
            return lb_mp_fail(m, LB_E_INVAL,
                              "The body does not contain the multipart boundary named in Content-Type.");
        return lb_mp_fail(m, LB_E_INVAL, "The multipart body ends before its closing boundary (truncated upload?).");
    }
    return LB_OK;
}

int lb_mp_field_append(lb_buf *field, const char *name, const char *data, size_t n, char *msg, size_t msgsz)
{
    if (memchr(data, '\0', n)) {
        snprintf(msg, msgsz, "The form field \"%s\" holds a NUL byte.", name);
        return 400;
    }
    if (lb_buf_append(field, data, n) != LB_OK) {
        snprintf(msg, msgsz, "The form field \"%s\" is longer than %zu bytes.", name, field->max);
        return 413;
    }
    return 0;
}
