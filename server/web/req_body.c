/* Request bodies within a cap, JSON within a budget (req_body.h says why).
 *
 * The pre-scan is hand-written because neither cJSON nor the other common
 * C JSON libraries (jansson, json-c: a depth limit at most) can be told
 * "at most N values" before they allocate; a full second parser would be a second place for
 * bugs. It is a lexer that only counts: strings are skipped escape by
 * escape, every other run of bytes that is not structure or whitespace is
 * one scalar, and a string is a key where cJSON would read a key (right
 * after '{' or after ',' inside an object). It never allocates and never
 * reads past n.
 */
#include "web/req_body.h"

#include "common/status.h"
#include "common/utf8.h"
#include "web/http.h"

#include <cjson/cJSON.h>
#include <fcgiapp.h>

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the pre-scan ---- */

int lb_json_prescan(const char *s, size_t n, size_t max_values, int max_depth, lb_json_scan *sc)
{
    /* what each open container is (1: object), for the key rule; deeper
     * than this is over any budget anyway */
    unsigned char kind[256];
    if (max_depth > (int)sizeof kind)
        max_depth = (int)sizeof kind;
    int depth = 0;
    int want_key = 0; /* the next string is an object key */
    memset(sc, 0, sizeof *sc);
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        /* cJSON skips every byte up to ' ' as whitespace */
        if (c <= ' ') {
            i++;
            continue;
        }
        if (c == '[' || c == '{') {
            if (++sc->values > max_values || depth + 1 > max_depth) {
                sc->at = i;
                if (depth + 1 > sc->depth)
                    sc->depth = depth + 1;
                return LB_E_TOOBIG;
            }
            kind[depth++] = c == '{';
            if (depth > sc->depth)
                sc->depth = depth;
            want_key = c == '{';
            i++;
            continue;
        }
        if (c == ']' || c == '}') {
            if (depth > 0)
                depth--;
            want_key = 0;
            i++;
            continue;
        }
        if (c == ',') {
            want_key = depth > 0 && kind[depth - 1];
            i++;
            continue;
        }
        if (c == ':') {
            want_key = 0;
            i++;
            continue;
        }
        if (c == '"') {
            if (!want_key && ++sc->values > max_values) {
                sc->at = i;
                return LB_E_TOOBIG;
            }
            want_key = 0;
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\')
                    i++; /* the escaped byte; "\u..." digits are plain bytes */
            i++; /* the closing quote (or past the end) */
            continue;
        }
        /* a number, a literal or garbage: one scalar up to the next
         * structural byte, quote or whitespace */
        if (++sc->values > max_values) {
            sc->at = i;
            return LB_E_TOOBIG;
        }
        want_key = 0;
        while (i < n) {
            c = (unsigned char)s[i];
            if (c <= ' ' || c == '[' || c == ']' || c == '{' || c == '}' || c == ',' || c == ':' || c == '"')
                break;
            i++;
        }
    }
    return LB_OK;
}

/* Offset of the first "\u0000" escape in a JSON text, or -1. Outside
 * strings a backslash is a syntax error anyway, so every backslash starts
 * an escape here. */
static long lb_json_nul_escape(const char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] != '\\')
            continue;
        if (s[i + 1] == 'u' && i + 6 <= n && !memcmp(s + i + 2, "0000", 4))
            return (long)i;
        i++; /* the escaped character: "\\u0000" is a backslash and "u0000" */
    }
    return -1;
}

cJSON *lb_json_parse_checked(const char *s, size_t n, const char *what, size_t max_values, int max_depth, int *rc,
                             char *msg, size_t msgsz)
{
    *rc = LB_E_INVAL;
    if (!n) {
        snprintf(msg, msgsz, "The %s needs a JSON body.", what);
        return NULL;
    }
    /* RFC 8259: JSON text is UTF-8; cJSON copies string bytes as they are,
     * and they come back in answers */
    if (!lb_utf8_valid(s, n)) {
        snprintf(msg, msgsz, "The %s is not valid UTF-8 (JSON text must be; send bytes as content_base64).", what);
        return NULL;
    }
    long nul = lb_json_nul_escape(s, n);
    if (nul >= 0) {
        snprintf(msg, msgsz,
                 "The %s holds a NUL character (\\u0000, near byte %ld); strings may not hold one (send binary "
                 "file contents as content_base64).", what, nul);
        return NULL;
    }
    lb_json_scan sc;
    if (lb_json_prescan(s, n, max_values, max_depth, &sc) != LB_OK) {
        if (sc.values > max_values)
            snprintf(msg, msgsz,
                     "The %s holds more than %zu JSON values (near byte %zu), the budget of one request body; "
                     "send fewer values (large data goes in strings, or as a file upload).", what, max_values,
                     sc.at);
        else
            snprintf(msg, msgsz,
                     "The %s nests arrays and objects more than %d deep (near byte %zu), the budget of one "
                     "request body.", what, max_depth, sc.at);
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(s, n, &end, 0);
    if (j) {
        while (end < s + n && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
            end++;
        if (end == s + n)
            return j;
        cJSON_Delete(j);
    }
    snprintf(msg, msgsz, "The %s is not valid JSON (the error is near byte %zu).", what,
             end && end >= s ? (size_t)(end - s) : (size_t)0);
    return NULL;
}

/* ---- reading ---- */

int lb_req_body(lb_req *r, size_t max, lb_buf *b, const char *what)
{
    lb_buf_init(b, max);
    if (r->content_length > 0 && (uint64_t)r->content_length > max) {
        /* refused before a byte is read; the drain only reads and drops
         * (bounded), so the front end can deliver our answer */
        lb_http_drain(r);
        lb_http_error(r, 413, NULL, "The %s is %lld bytes; the limit is %zu bytes.", what,
                      (long long)r->content_length, max);
        return LB_E_TOOBIG;
    }
    if (r->content_length > 0) {
        /* one allocation of the announced size: no doubling, no copies */
        b->data = malloc((size_t)r->content_length + 1);
        if (!b->data) {
            lb_http_drain(r);
            lb_http_error(r, 500, NULL, "Out of memory reading the %s.", what);
            return LB_E_NOMEM;
        }
        b->cap = (size_t)r->content_length + 1;
        b->data[0] = '\0';
        r->body_bytes = (size_t)r->content_length;
    }
    static _Thread_local char chunk[65536];
    for (;;) {
        int n = FCGX_GetStr(chunk, sizeof chunk, r->fcgi->in);
        if (n <= 0)
            break;
        int rc = lb_buf_append(b, chunk, (size_t)n);
        if (b->len > r->body_bytes)
            r->body_bytes = b->len;
        if (rc) {
            lb_buf_free(b);
            lb_http_drain(r);
            if (rc == LB_E_TOOBIG)
                lb_http_error(r, 413, NULL, "The %s is larger than %zu bytes, the limit.", what, max);
            else
                lb_http_error(r, 500, NULL, "Out of memory reading the %s.", what);
            return rc;
        }
    }
    return LB_OK;
}

cJSON *lb_req_json(lb_req *r, size_t max, const char *what)
{
    lb_buf b;
    if (lb_req_body(r, max, &b, what) != LB_OK) /* answered */
        return NULL;
    char msg[400];
    int rc;
    cJSON *j = lb_json_parse_checked(b.data ? b.data : "", b.len, what, LB_JSON_MAX_VALUES, LB_JSON_MAX_DEPTH, &rc,
                                     msg, sizeof msg);
    lb_buf_free(&b); /* the tree holds copies: the text goes at once */
    if (!j)
        lb_http_error(r, rc == LB_E_NOMEM ? 500 : 400, NULL, "%s", msg);
    return j;
}

void lb_req_trim(lb_req *r)
{
    /* Large buffers are mmapped and go back when freed (web_main sets the
     * threshold), but a large body leaves many small blocks behind in this
     * thread's arena (cJSON nodes, copies of strings) that glibc keeps. */
    if (r->body_bytes >= LB_JSON_TRIM_BYTES)
        malloc_trim(0);
}
