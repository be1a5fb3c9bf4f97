/* An HTTP/1.1 request as the gateway reads it when it adds a secret
 * (netgw_http.c): the head parsed strictly, rewritten with the secret's
 * header, and the body's end found (Content-Length or chunked) so that
 * nothing after the request is forwarded. The bytes are the sandbox's,
 * hostile: every size is capped, and anything ambiguous (both
 * Content-Length and Transfer-Encoding, a folded line, a bare LF, two Host
 * lines) is refused rather than guessed, since the upstream might read it
 * the other way (request smuggling). */
#ifndef LB_NETGW_HTTP_H
#define LB_NETGW_HTTP_H

#include <stddef.h>
#include <stdint.h>

#define LB_HTTP_HEAD_MAX 32768  /* request line and headers */
#define LB_HTTP_LINE_MAX 8192   /* the request line, and one header line */
#define LB_HTTP_HEADERS_MAX 100 /* header lines */
#define LB_HTTP_CHUNK_LINE_MAX 1024 /* a chunk-size line with its extensions, a trailer line */
#define LB_HTTP_TRAILER_MAX 8192

typedef struct lb_http_hdr {
    uint32_t off, len; /* the whole line (without CRLF) in the head */
    uint32_t nlen;     /* its name's length */
} lb_http_hdr;

typedef struct lb_http_req {
    size_t head_len;      /* through the blank line */
    size_t line_len;      /* the request line, without CRLF */
    int chunked;          /* Transfer-Encoding: chunked */
    int64_t content_length; /* -1: none */
    char host[254];       /* Host, lowercased, port and one trailing dot cut */
    int nh;
    lb_http_hdr h[LB_HTTP_HEADERS_MAX];
} lb_http_req;

/* Parses the request head at the start of buf. 1: complete (r filled);
 * 0: not yet (more bytes may complete it; a caller past LB_HTTP_HEAD_MAX
 * refuses); -1: refused, with a phrase in why. */
int lb_http_req_parse(const char *buf, size_t len, lb_http_req *r, char *why, size_t whysz);

/* Whether header i of r (in head buf) has name (any case). */
int lb_http_hdr_is(const char *buf, const lb_http_req *r, int i, const char *name);

/* A chunked body, fed as it arrives. */
typedef struct lb_http_chunked {
    int state;
    uint64_t left;   /* data bytes left of this chunk */
    size_t line;     /* bytes of the line being read */
    size_t trailer;  /* bytes of trailer read */
    int digits, ext;
} lb_http_chunked;

/* Reads up to n bytes of a chunked body. Returns how many of them belong to
 * it (all n, or fewer when it ended inside them: *done is then 1), or -1
 * when they are not a well-formed chunked body. */
long lb_http_chunked_feed(lb_http_chunked *c, const unsigned char *p, size_t n, int *done);

#endif
