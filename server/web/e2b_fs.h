/* envd's filesystem service (filesystem.Filesystem/...) and its /files
 * route for E2B's SDK (files.read, write, list, exists, getInfo, makeDir,
 * rename, remove), on the sandbox RPC's path-safe read, write, list and
 * stat; makeDir, rename and remove run mkdir -p, mv and rm -rf inside the
 * sandbox (so they wait for a running command: failed_precondition while
 * one runs). WatchDir answers unimplemented (docs/E2B.md). */
#ifndef LB_E2B_FS_H
#define LB_E2B_FS_H

#include "web/request.h"
#include "web/sandbox_registry.h"

/* Answers the RPC method ("Stat", "ListDir" ...) on s (running, token checked). */
void lb_e2b_filesystem(lb_req *r, lb_sbx *s, const char *method);
/* GET /files?path= (download) and POST /files (upload: multipart, one part
 * per file, or application/octet-stream with ?path=). */
void lb_e2b_files(lb_req *r, lb_sbx *s);

#endif
