/* envd's filesystem service (filesystem.Filesystem/...) and its /files
 * route for E2B's SDK (files.read, write, list, exists, getInfo, makeDir,
 * rename, remove), on the sandbox RPC's path-safe read, write, list and
 * stat; makeDir, rename and remove run mkdir -p, mv and rm -rf in the
 * sandbox's shell (short commands: E2B's processes run beside the shell,
 * e2b_process.h; a native /api exec still running there makes them
 * failed_precondition). WatchDir answers unimplemented (docs/E2B.md). */
#ifndef LB_E2B_FS_H
#define LB_E2B_FS_H

#include "web/request.h"
#include "e2b/e2b_entry.h"
#include "sbxapi/sandbox_registry.h"

#define LB_E2B_HOME "/home/user" /* E2B's base template's user's home */

/* The folder E2B's relative paths and commands start in: LB_E2B_HOME when
 * the sandbox has it as a directory (E2B's user, images/default), else
 * the sandbox's workdir. */
void lb_e2b_home(lb_sbx *s, char *out, size_t outsz);
/* Who an E2B call runs as (commands, pty, files.write, makeDir, rename,
 * remove): "root" when it names root, "user" when it names user or none
 * and the sandbox has LB_E2B_HOME (E2B's user), the other user
 * lb_e2b_user_known found, else NULL (the image's own user, root for
 * images without E2B's). */
const char *lb_e2b_run_as(lb_req *r, lb_sbx *s);
/* Whether the sandbox has the user name (as the call names it: "" none):
 * root, E2B's "user" and none always are (sandboxd says when the sandbox
 * lacks `user`); another name is looked up in the sandbox's /etc/passwd
 * (lb_e2b_iddb_load and e2b_entry.h's lb_e2b_user_home) and kept for this thread's request,
 * for lb_e2b_run_as and lb_e2b_user_home_of. 1 known, 0 not. */
int lb_e2b_user_known(lb_req *r, lb_sbx *s, const char *name);
/* The home of the other user lb_e2b_user_known found, when user is that
 * user; else NULL. */
const char *lb_e2b_user_home_of(const char *user);
/* The folder the call's relative file paths start in, as envd's (the
 * user's home): /root when it runs as root (lb_e2b_run_as), another user's
 * own home (lb_e2b_user_known), else lb_e2b_home's. */
void lb_e2b_call_home(lb_req *r, lb_sbx *s, char *out, size_t outsz);
/* The sandbox's /etc/passwd and /etc/group for the owners' names: read
 * through sandboxd (capped at 256 KiB each, never through a symlink);
 * what cannot be read stays NULL (ids are then numbers). Takes s's lock;
 * lb_e2b_iddb_free after. */
void lb_e2b_iddb_load(lb_sbx *s, lb_e2b_iddb *db);
void lb_e2b_iddb_free(lb_e2b_iddb *db);
/* Answers the RPC method ("Stat", "ListDir" ...) on s (running, token checked). */
void lb_e2b_filesystem(lb_req *r, lb_sbx *s, const char *method);
/* GET /files?path= (download) and POST /files (upload: multipart, one part
 * per file, or application/octet-stream with ?path=). */
void lb_e2b_files(lb_req *r, lb_sbx *s);

#endif
