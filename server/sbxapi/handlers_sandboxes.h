/* The sandbox API for outside clients, /api/sandboxes
 * (handlers_sandboxes.c); its routes are rows of router.c. */
#ifndef LB_WEB_HANDLERS_SANDBOXES_H
#define LB_WEB_HANDLERS_SANDBOXES_H

#include "common/config.h"
#include "common/status.h"
#include "web/request.h"
#include "sbxapi/sandbox_registry.h"
#include "sbxapi/sandbox_spec.h"

/* Whether r carries the sandbox API token (a gate, so a boolean): answers
 * 403 (API off) or 401 and returns 0 when not. The router calls it for every LB_WHO_SANDBOX
 * route, first. */
LB_MUST_CHECK int lb_sandbox_auth_ok(lb_req *r);
/* The sandbox of id with a reference, when it can take an operation;
 * else answers 404 (gone) or 409 (starting, failed) and returns NULL. */
lb_sbx *lb_sbx_usable(lb_req *r, const char *id);
/* Creates, registers and starts an API sandbox from a parsed spec: the
 * work of POST /api/sandboxes, shared with the E2B control plane
 * (e2b_api.c). rpc_ttl_s: the TTL sandboxd enforces as a backstop (0: the
 * spec's ttl_s), larger when the client may extend the TTL later. Returns
 * 0 with a reference in *out (lb_sbx_put), taking sp->metadata and sp->env;
 * else the HTTP status to answer (400, 409, 429, 500, 503) with a sentence
 * in msg. */
int lb_sbx_open(const lb_config *cfg, lb_sbx_spec *sp, int rpc_ttl_s, lb_sbx **out, char *msg, size_t msgsz);
/* The HTTP status (400, 404, 409, 413, 500, 503) and sentence for a failed
 * sandboxd call on s that tried to `what`; a failure of the sandbox itself
 * also marks s failed. err: the client library's sentence. */
int lb_sbx_rpc_fail(lb_sbx *s, int rc, const char *what, const char *err, char *msg, size_t msgsz);
/* The handlers; r->sandbox holds the validated {sandbox} id, r->rest the
 * {path} of a file. */
void lb_h_sbx_list(lb_req *r);
void lb_h_sbx_create(lb_req *r);
void lb_h_sbx_get(lb_req *r);
void lb_h_sbx_delete(lb_req *r);
void lb_h_sbx_exec(lb_req *r);
void lb_h_sbx_get_file(lb_req *r);
void lb_h_sbx_put_file(lb_req *r);
/* 404 for /api/sandboxes/{id}/... that no route takes */
void lb_h_sbx_no_route(lb_req *r);

#endif
