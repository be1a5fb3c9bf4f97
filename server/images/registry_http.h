/* An HTTP client for one repository of one registry (the OCI distribution
 * API, /v2/...), on libcurl: plain HTTP only to a loopback registry or one
 * the operator lists in insecure_registries, TLS (verified) to any other;
 * Basic or Bearer token auth answered once up front (GET /v2/, then the
 * token server with scope repository:<repo>:<actions>) and again when a
 * token runs out; every answer capped (documents in memory, blobs into a
 * file with their sha256 taken while they stream). */
#ifndef LB_IMAGES_REGISTRY_HTTP_H
#define LB_IMAGES_REGISTRY_HTTP_H

#include <stddef.h>

#include "common/buf.h"
#include "common/status.h"
#include "images/registry_auth.h"

#define LB_REG_URL_MAX 4096
#define LB_REG_ERRBODY_MAX 65536 /* what we keep of an error answer, for its message */

typedef struct lb_reg_client {
    void *curl;                         /* CURL *, owned */
    char host[300];                     /* "host[:port]" as in the reference */
    char base[320];                     /* "https://registry-1.docker.io" or "http://127.0.0.1:5000" */
    char repo[256];
    char actions[16];                   /* "pull" or "pull,push" */
    char insecure[1024];                /* insecure_registries, for the token server's host too */
    char user[LB_REG_CRED_MAX], pass[LB_REG_CRED_MAX];
    int have_creds;
    char auth[8192];                    /* the Authorization header line, "" for none */
    lb_reg_challenge chal;              /* the last challenge, to fetch a new token */
    int authed;                         /* a challenge was answered */
} lb_reg_client;

/* What one request sends. url is a path ("/v2/...") or an absolute URL
 * on the registry (an upload's Location). */
typedef struct lb_reg_req {
    const char *method;                 /* GET HEAD PUT POST PATCH */
    const char *url;
    const char *accept;                 /* an Accept header value, or NULL */
    const char *content_type;           /* for a body, or NULL */
    const void *body;                   /* a body in memory ... */
    size_t body_len;
    int body_fd;                        /* ... or from this file (-1: none) */
    long long body_off, body_fd_len;    /* from body_off, body_fd_len bytes */
    const char *content_range;          /* "Content-Range: a-b" value for a chunk, or NULL */
    lb_buf *out;                        /* a 2xx answer's body into this (capped by its max), or NULL */
    int out_fd;                         /* ... or appended to this file (-1: none) */
    void *out_sha;                      /* EVP_MD_CTX * the file's bytes are hashed into (with out_fd) */
    long long out_max;                  /* the file's cap, counting the bytes already there */
    long long range_from;               /* ask for bytes from here (resume); 0: all */
    int follow;                         /* follow redirects (blob GETs: a registry may send to S3) */
} lb_reg_req;

typedef struct lb_reg_resp {
    long status;
    char content_type[128];
    char location[LB_REG_URL_MAX];
    char digest[80];                    /* Docker-Content-Digest */
    char www_auth[LB_REG_CHALLENGE_MAX + 1];
    long long written;                  /* bytes written to out_fd by this request */
    int restarted;                      /* a range was asked and the whole file came: out_fd was emptied */
    char errbody[512];                  /* the start of an error answer's message, as text */
} lb_reg_resp;

/* Whether host ("host[:port]") is a loopback address: localhost, 127/8,
 * [::1]. */
int lb_reg_host_is_loopback(const char *host);

/* Whether host is listed in insecure ("host[:port]" entries, comma or
 * blank separated; an entry without a port matches any port). */
int lb_reg_host_is_insecure(const char *host, const char *insecure);

/* Opens a client for repo at host: picks http or https (see above),
 * reads credentials, and authenticates (GET /v2/ and, when asked, the
 * token). *c is initialised whatever happens; lb_reg_close frees it.
 * LB_E_UNAVAILABLE (cannot connect, TLS refused), LB_E_DENIED (the
 * registry or token server said no), LB_E_PROTO, with a sentence. */
LB_MUST_CHECK int lb_reg_open(lb_reg_client *c, const char *host, const char *repo, const char *actions,
                              const char *insecure, const char *auth_file, char *msg, size_t msgsz);

void lb_reg_close(lb_reg_client *c);

/* Sends rq and fills *rs. A 401 gets one new token and one more try. The
 * HTTP status is in rs->status: the return is LB_OK for any answer, and
 * an error only when no answer came (LB_E_UNAVAILABLE, LB_E_TIMEOUT), a
 * cap was passed (LB_E_TOOBIG), or the file could not be written
 * (LB_E_IO); msg says which. */
LB_MUST_CHECK int lb_reg_do(lb_reg_client *c, const lb_reg_req *rq, lb_reg_resp *rs, char *msg, size_t msgsz);

/* An lb_reg_req with nothing set (fds -1). */
void lb_reg_req_init(lb_reg_req *rq, const char *method, const char *url);

/* A sentence for an answer that is not the one wanted: "the registry at
 * HOST answered 404 to GET URL: <its error message>" into msg. */
void lb_reg_say_status(const lb_reg_client *c, const lb_reg_req *rq, const lb_reg_resp *rs, char *msg,
                       size_t msgsz);

#endif
