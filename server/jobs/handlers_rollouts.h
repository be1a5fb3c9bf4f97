/* Rollout group routes (handlers_rollouts.c): create (one group or a
 * batch), get (with a `?wait=S` long-poll), an NDJSON stream of samples
 * as they finish, a sample's trajectory, cancel, delete. docs/API.md,
 * "Rollouts".
 *
 * Who may call them (LB_WHO_ROLLOUT in router.c): the sandbox API's bearer
 * token (rollouts make sandboxes), or, where users are configured, a
 * user's API token or login. A group is shown only to the credential that
 * made it: a user's groups to that user, the sandbox token's groups to the
 * sandbox token; anyone else gets a 404. */
#ifndef LB_WEB_HANDLERS_ROLLOUTS_H
#define LB_WEB_HANDLERS_ROLLOUTS_H

#include "web/request.h"

/* The gate of LB_WHO_ROLLOUT routes: answers (401, 403) and returns 0
 * when r may not go on; sets r->user for a user's credentials (NULL for
 * the sandbox token). */
int lb_rollout_auth_ok(lb_req *r);
/* Sets up the bound on requests waiting (long-polls and streams):
 * rollout_max_waiters, or a quarter of web_threads when -1. Once, before
 * the worker threads. */
void lb_rollout_waiters_init(int configured, int web_threads);

void lb_h_rollout_create(lb_req *r);
void lb_h_rollout_get(lb_req *r);
void lb_h_rollout_events(lb_req *r);
void lb_h_rollout_sample(lb_req *r);
void lb_h_rollout_cancel(lb_req *r);
void lb_h_rollout_delete(lb_req *r);

#endif
