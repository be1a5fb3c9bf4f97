/* Who asks (auth.c): the Host and Origin checks every route gets, bearer
 * tokens, session cookies and their CSRF token, and whose tasks are whose.
 * Which route asks for what: the table of router.c. */
#ifndef LB_WEB_AUTH_H
#define LB_WEB_AUTH_H

#include "common/config.h"
#include "common/status.h"
#include "web/request.h"

/* Finds the user of the request (Bearer token or session cookie) and
 * checks the CSRF token of a cookie request that changes state. Without
 * users: no login, but only loopback clients. A gate, so a boolean like
 * lb_auth_host_ok: answers (401, 403, or 503 when the database is busy)
 * and returns 0 when the request may not go on; returns 1 otherwise. */
LB_MUST_CHECK int lb_auth_request_ok(lb_req *r);
/* Whether the Host of r names this service (loopback, the listen or
 * local address, allowed_hosts): answers 403 host_not_allowed and returns
 * 0 when not. Every backend route, first. */
int lb_auth_host_ok(lb_req *r);
/* For a request that changes state (not GET/HEAD/OPTIONS): whether it
 * comes from the page itself: never Origin: null, Sec-Fetch-Site
 * same-origin when sent, else an Origin naming this service when sent.
 * Answers 403 csrf and returns 0 when not. Every backend route. */
int lb_auth_origin_ok(lb_req *r);
/* The user r's credentials (Bearer token or session cookie) name, or
 * NULL; answers nothing (for /api/health, which needs no login). */
const lb_user_cfg *lb_auth_peek(lb_req *r);
/* Whether r may see task r->id: answers 404 (as for an unknown task)
 * and returns 0 when the task belongs to someone else. */
int lb_auth_task_visible(lb_req *r);
/* The owner new tasks of r get: the user's name, or NULL without users. */
const char *lb_auth_owner(const lb_req *r);
/* Whether the request has a session cookie (a boolean): 1 with its value
 * (64 hex) in out, 0 when none. */
int lb_auth_cookie(lb_req *r, char out[65]);
/* The CSRF token of session id sid into out[65] ("" on failure). */
void lb_auth_csrf_token(const char *sid, char out[65]);
/* Whether Set-Cookie should carry Secure for this request. */
int lb_auth_cookie_secure(lb_req *r);

#endif
