/* E2B's envd, the in-sandbox agent the e2b SDK talks to, answered by the
 * web for every API sandbox: one route, /e2b/sandbox/..., that finds the
 * sandbox from the E2b-Sandbox-Id header (E2B_SANDBOX_URL set) or from the
 * Host name "49983-<id>.<domain>" (E2B_DOMAIN), checks its access token and
 * hands the request to the process (e2b_process.c) and filesystem
 * (e2b_fs.c) services or the /files route. docs/E2B.md lists the calls. */
#ifndef LB_E2B_ENVD_H
#define LB_E2B_ENVD_H

#include <stddef.h>

#include "common/config.h"
#include "common/status.h"
#include "web/request.h"

/* the envd whose features we answer: closeStdin (0.5.2), octet-stream and
 * gzip uploads (0.5.7), file metadata (0.6.2, the files' user.e2b.*
 * attributes: e2b_fs.c), includeEntry on watch events (0.6.3),
 * allowNetworkMounts on watchDir (0.6.4: envd refuses to watch a network
 * mount without it; a sandbox's folders are all its own local filesystems,
 * which the watcher's inotify sees, so it is taken and changes nothing) */
#define LB_E2B_ENVD_VERSION "0.6.4"
#define LB_E2B_TOKEN_HEX 64

/* The envd access token of API sandbox id: an HMAC of the id under the
 * sandbox API token, so it survives a restart of the web without being
 * stored, and one sandbox's token opens no other. out >= 65 bytes. */
LB_MUST_CHECK int lb_e2b_access_token(const lb_config *cfg, const char *id, char *out, size_t outsz);
/* The user r names (Authorization or ?username=) into name ("" none); 1
 * when it is none or looks like a user's name (whether the sandbox has
 * it: lb_e2b_user_known, e2b_fs.h). */
int lb_e2b_call_user(lb_req *r, char *name, size_t namesz);
/* The handler of /e2b/sandbox/... (router.c). */
void lb_h_e2b_envd(lb_req *r);

#endif
