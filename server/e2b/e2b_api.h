/* E2B's control plane (the REST API the e2b SDK calls with X-API-KEY) over
 * llmbox's API sandboxes: create, connect, info, list with metadata
 * filters and paging, kill, set timeout; pause, resume, metrics, snapshots
 * and templates answer errors that say why. The key is the sandbox API's
 * token. docs/E2B.md lists the calls and the shapes. */
#ifndef LB_E2B_API_H
#define LB_E2B_API_H

#include <cjson/cJSON.h>

#include "common/status.h"
#include "web/request.h"

/* Whether r carries the sandbox API token as X-API-KEY (a gate, so a
 * boolean): answers 401/403 in E2B's shape and returns 0 when not.
 * /e2b/sandbox/... (envd) passes: its handler checks the sandbox's own
 * access token. The router calls it for every LB_WHO_E2B route. */
LB_MUST_CHECK int lb_e2b_auth_ok(lb_req *r);
/* E2B's {sandboxID, templateID, clientID, envdVersion, envdAccessToken,
 * trafficAccessToken} of create and connect for the API sandbox s; NULL
 * on OOM (e2b_fork.c answers its forks with it too). */
struct lb_sbx;
cJSON *lb_e2b_created(lb_req *r, struct lb_sbx *s, const char *template_id);
/* E2B's autoResume: when s was made with it and is paused, resumes it as
 * Sandbox.connect does (one paused at its timeout gets E2B's default
 * timeout again); LB_OK and nothing done otherwise. err: why it failed.
 * envd calls and port traffic (e2b_envd.c) call it first. */
struct lb_config;
LB_MUST_CHECK lb_status lb_e2b_auto_resume(const struct lb_config *cfg, struct lb_sbx *s, char *err, size_t errsz);
/* The handler of /e2b/... (router.c) but envd's /e2b/sandbox/.... */
void lb_h_e2b_api(lb_req *r);

#endif
