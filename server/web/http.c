/* HTTP response helpers over FastCGI: status, headers, JSON bodies, errors,
 * URL coding and Content-Disposition. */
#include "web/http.h"

#include "web/access.h"
#include "common/path.h"
#include "common/log.h"
#include "common/status.h"
#include "common/utf8.h"

#include <cjson/cJSON.h>
#include <fcgiapp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_DRAIN_MAX ((int64_t)512 << 20)

const char *lb_http_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 421: return "Misdirected Request"; /* several nodes: a sandbox id of another node */
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
    }
}

const char *lb_http_param(lb_req *r, const char *name)
{
    return FCGX_GetParam(name, r->fcgi->envp);
}

/* length >= 0: the body's length, sent as Content-Length (a JSON answer):
 * nginx then passes it on instead of chunking the answer, and a client
 * reads the body in one piece. */
static void lb_http_head_len(lb_req *r, int status, const char *content_type, const char *extra, int64_t length)
{
    if (r->responded) {
        char path[256];
        lb_access_path(r->path, path, sizeof path); /* never a preview key in a log */
        lb_warn("web: second response head for %s %s ignored", r->method, path);
        return;
    }
    r->responded = 1;
    r->status = status;
    FCGX_FPrintF(r->fcgi->out, "Status: %d %s\r\n", status, lb_http_reason(status));
    if (content_type)
        FCGX_FPrintF(r->fcgi->out, "Content-Type: %s\r\n", content_type);
    /* API answers are live state: never cache them, never sniff them */
    if (!extra || !strstr(extra, "Cache-Control:"))
        FCGX_PutS("Cache-Control: no-store\r\n", r->fcgi->out);
    FCGX_PutS("X-Content-Type-Options: nosniff\r\n", r->fcgi->out);
    if (extra)
        FCGX_PutS(extra, r->fcgi->out);
    if (length >= 0)
        FCGX_FPrintF(r->fcgi->out, "Content-Length: %lld\r\n", (long long)length);
    FCGX_PutS("\r\n", r->fcgi->out);
    r->head_bytes = lb_access_bytes(r); /* the access log counts the body only */
}

void lb_http_head(lb_req *r, int status, const char *content_type, const char *extra)
{
    lb_http_head_len(r, status, content_type, extra, -1);
}

void lb_http_json(lb_req *r, int status, const cJSON *body, const char *extra)
{
    char *text = body ? cJSON_PrintUnformatted(body) : NULL;
    if (!text) {
        if (!r->responded) {
            lb_http_head(r, 500, "application/json", NULL);
            if (!r->is_head)
                FCGX_PutS("{\"error\":{\"code\":\"internal\",\"message\":\"Out of memory.\"}}\n", r->fcgi->out);
        }
        return;
    }
    size_t len = strlen(text);
    /* HEAD: the length of the GET's body, none sent (RFC 9110 9.3.2) */
    lb_http_head_len(r, status, "application/json", extra, (int64_t)len + 1);
    if (!r->is_head) {
        FCGX_PutS(text, r->fcgi->out);
        FCGX_PutChar('\n', r->fcgi->out);
    }
    free(text);
}

static const char *lb_error_code_for(int status)
{
    switch (status) {
    case 400: return "bad_request";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 409: return "conflict";
    case 413: return "too_large";
    case 415: return "unsupported_media_type";
    case 421: return "misdirected";
    case 429: return "too_many_tasks";
    case 503: return "unavailable";
    case 507: return "disk_full";
    default: return "internal";
    }
}

static void lb_http_error_v(lb_req *r, int status, const char *code, const char *extra, const char *fmt,
                            va_list ap) __attribute__((format(printf, 5, 0)));
static void lb_http_error_v(lb_req *r, int status, const char *code, const char *extra, const char *fmt,
                            va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* A message may quote what the client sent (a file name, a field name)
     * or be cut by the buffer inside a UTF-8 sequence; cJSON copies bytes
     * as they are, so without this the answer would not be valid JSON. */
    char *clean = lb_utf8_sanitize(msg, strlen(msg), NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
    if (e) {
        cJSON_AddStringToObject(e, "code", code ? code : lb_error_code_for(status));
        cJSON_AddStringToObject(e, "message", clean ? clean : "The request was refused.");
    }
    free(clean);
    lb_http_json(r, status, o, extra);
    cJSON_Delete(o);
}

void lb_http_error(lb_req *r, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lb_http_error_v(r, status, code, NULL, fmt, ap);
    va_end(ap);
}

void lb_http_error_hdr(lb_req *r, int status, const char *code, const char *extra, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lb_http_error_v(r, status, code, extra, fmt, ap);
    va_end(ap);
}

void lb_http_method_not_allowed(lb_req *r, const char *allow)
{
    char extra[128];
    snprintf(extra, sizeof extra, "Allow: %s\r\n", allow);
    lb_http_error_hdr(r, 405, NULL, extra, "The method %s is not allowed here; use %s.", r->method, allow);
}

void lb_http_disk_full(lb_req *r, const char *what)
{
    char path[256];
    lb_access_path(r->path, path, sizeof path);
    lb_error("web: %s %s: the disk is full: could not %s", r->method, path, what);
    lb_http_error(r, 507, NULL,
                  "The server's disk is full, so it could not %s. Nothing was lost; try again once the "
                  "operator has freed space.", what);
}

void lb_http_store_error(lb_req *r, int rc, const char *what)
{
    if (rc == LB_E_NOTFOUND || rc == LB_E_INVAL)
        lb_http_error(r, 404, "not_found", "There is no task with id \"%s\".", r->id);
    else if (rc == LB_E_TIMEOUT)
        lb_http_error_hdr(r, 503, NULL, "Retry-After: 1\r\n", "The task database is busy; try again in a moment.");
    else if (rc == LB_E_UNAVAILABLE) /* several nodes: a database server restarting or out of reach */
        lb_http_error_hdr(r, 503, NULL, "Retry-After: 2\r\n", "The task database cannot be reached; try again in a moment.");
    else if (rc == LB_E_NOSPACE)
        lb_http_disk_full(r, what);
    else
        lb_http_error(r, 500, NULL, "Could not %s: %s.", what, lb_strerror(rc));
}

void lb_http_drain(lb_req *r)
{
    char buf[65536];
    int64_t total = 0;
    for (;;) {
        int n = FCGX_GetStr(buf, sizeof buf, r->fcgi->in);
        if (n <= 0)
            break;
        total += n;
        if (total > LB_DRAIN_MAX)
            break;
    }
}

static int lb_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int lb_url_decode(const char *in, size_t n, char *out, size_t outsz, size_t *outlen, int form)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o + 1 >= outsz)
            return LB_E_TOOBIG;
        char c = in[i];
        if (c == '%') {
            if (i + 2 >= n)
                return LB_E_INVAL;
            int a = lb_hexval(in[i + 1]), b = lb_hexval(in[i + 2]);
            if (a < 0 || b < 0)
                return LB_E_INVAL;
            out[o++] = (char)(a * 16 + b);
            i += 2;
        } else if (c == '+' && form) {
            out[o++] = ' ';
        } else {
            out[o++] = c;
        }
    }
    out[o] = '\0';
    if (outlen)
        *outlen = o;
    return LB_OK;
}

static int lb_is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

int lb_url_encode_path(const char *s, char *out, size_t outsz)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (lb_is_unreserved(c) || c == '/') {
            if (o + 1 >= outsz)
                return LB_E_TOOBIG;
            out[o++] = (char)c;
        } else {
            if (o + 3 >= outsz)
                return LB_E_TOOBIG;
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    if (o >= outsz)
        return LB_E_TOOBIG;
    out[o] = '\0';
    return LB_OK;
}

int lb_query_get(const char *query, const char *key, char *out, size_t outsz)
{
    if (!query)
        return LB_E_NOTFOUND;
    size_t klen = strlen(key);
    const char *p = query;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t nlen = eq ? (size_t)(eq - p) : len;
        if (nlen == klen && !memcmp(p, key, klen)) {
            const char *v = eq ? eq + 1 : p + len;
            size_t vlen = (size_t)(p + len - v);
            size_t dl;
            int rc = lb_url_decode(v, vlen, out, outsz, &dl, 1);
            if (rc)
                return rc;
            if (memchr(out, '\0', dl))
                return LB_E_INVAL;
            return LB_OK;
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    return LB_E_NOTFOUND;
}

int lb_content_disposition(const char *disposition, const char *name, char *out, size_t outsz)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    char ascii[LB_NAME_MAX + 1], ext[3 * LB_NAME_MAX + 1];
    size_t a = 0, e = 0;
    for (const unsigned char *p = (const unsigned char *)base; *p && a < LB_NAME_MAX; p++) {
        unsigned char c = *p;
        /* the quoted fallback keeps printable ASCII minus the characters
         * that browsers treat specially inside it */
        if (c >= 0x80) {
            if ((c & 0xC0) != 0x80) /* one '_' per UTF-8 sequence */
                ascii[a++] = '_';
        } else if (c < 0x20 || c == 0x7f || c == '"' || c == '\\' || c == '%') {
            ascii[a++] = '_';
        } else {
            ascii[a++] = (char)c;
        }
    }
    ascii[a] = '\0';
    for (const unsigned char *p = (const unsigned char *)base; *p && e + 3 < sizeof ext; p++) {
        unsigned char c = *p;
        /* RFC 8187 attr-char */
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            (c && strchr("!#$&+-.^_`|~", c))) {
            ext[e++] = (char)c;
        } else {
            ext[e++] = '%';
            ext[e++] = hex[c >> 4];
            ext[e++] = hex[c & 15];
        }
    }
    ext[e] = '\0';
    int n = snprintf(out, outsz, "%s; filename=\"%s\"; filename*=UTF-8''%s", disposition,
                     a ? ascii : "download", e ? ext : "download");
    return (n < 0 || (size_t)n >= outsz) ? LB_E_TOOBIG : LB_OK;
}

void lb_http_accel(lb_req *r, const char *uri, const char *content_type, const char *disposition)
{
    char extra[LB_WEB_URI_MAX + 2048];
    /* Files of a task never change once they are listed (a rerun is a new
     * task), but they can be deleted: the browser keeps a copy and asks
     * again each time; nginx answers 304 from the file's ETag and
     * Last-Modified, which it adds itself. private: never in a shared cache. */
    int n = snprintf(extra, sizeof extra, "X-Accel-Redirect: %s\r\nCache-Control: private, no-cache\r\n%s%s%s", uri,
                     disposition ? "Content-Disposition: " : "", disposition ? disposition : "",
                     disposition ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof extra) {
        lb_http_error(r, 500, NULL, "The file name is too long to serve.");
        return;
    }
    lb_http_head(r, 200, content_type, extra);
}
