/* HTTP answers over FastCGI (http.c): the CGI-style response head
 * ("Status:", headers, blank line), JSON bodies and errors, URL coding,
 * Content-Disposition, X-Accel-Redirect. */
#ifndef LB_WEB_HTTP_H
#define LB_WEB_HTTP_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"
#include "web/request.h"

const char *lb_http_reason(int status);
/* A CGI parameter (e.g. "HTTP_LAST_EVENT_ID"), or NULL. */
const char *lb_http_param(lb_req *r, const char *name);
/* Writes the response head: status line, the given extra header lines
 * (each ending in "\r\n", may be NULL), and the blank line. */
void lb_http_head(lb_req *r, int status, const char *content_type, const char *extra);
/* Sends body as compact JSON (and frees nothing: the caller owns body). */
void lb_http_json(lb_req *r, int status, const cJSON *body, const char *extra);
/* {"error":{"code":code,"message":<formatted sentence>}}; code NULL: the
 * usual code of the status. */
void lb_http_error(lb_req *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with extra header lines (each ending in "\r\n"), e.g.
 * WWW-Authenticate on a 401. */
void lb_http_error_hdr(lb_req *r, int status, const char *code, const char *extra, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* 405 with the Allow header. */
void lb_http_method_not_allowed(lb_req *r, const char *allow);
/* 507 disk_full: "The server's disk is full, so it could not <what>. ..." */
void lb_http_disk_full(lb_req *r, const char *what);
/* Maps a store status (LB_E_NOTFOUND, LB_E_TIMEOUT ...) to an answer;
 * what says what could not be done ("read the task"). */
void lb_http_store_error(lb_req *r, int rc, const char *what);
/* Reads and discards what is left of the request body (up to a cap), so
 * the front end can read our early answer without a broken pipe. */
void lb_http_drain(lb_req *r);
/* Percent-decodes n bytes of in into out (outsz >= n + 1); *outlen gets
 * the decoded length (it may contain NULs, which callers refuse). '+' is
 * kept as is (only form queries use it for spaces: form=1). */
LB_MUST_CHECK int lb_url_decode(const char *in, size_t n, char *out, size_t outsz, size_t *outlen, int form);
/* Percent-encodes s for a URI path: unreserved characters and '/' stay. */
LB_MUST_CHECK int lb_url_encode_path(const char *s, char *out, size_t outsz);
/* Value of query parameter key (decoded) into out; LB_E_NOTFOUND if absent. */
LB_MUST_CHECK int lb_query_get(const char *query, const char *key, char *out, size_t outsz);
/* Content-Disposition value for file name `name` (the last path component
 * is used): disposition; filename="ascii"; filename*=UTF-8''pct. */
LB_MUST_CHECK int lb_content_disposition(const char *disposition, const char *name, char *out, size_t outsz);
/* Sends an empty response that nginx completes from an internal location
 * (X-Accel-Redirect). uri must already be percent-encoded. */
void lb_http_accel(lb_req *r, const char *uri, const char *content_type, const char *disposition);

#endif
