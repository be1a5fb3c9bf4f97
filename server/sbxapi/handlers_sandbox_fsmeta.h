/*
 * E2B's protocol: a file's metadata through the native sandbox API, as sandboxd's
 * stat and list answer it (include/llmbox/sandbox.h):
 *   GET /api/sandboxes/{id}/stat/{path}          -> one entry, 404 if missing
 *   GET /api/sandboxes/{id}/list/{path}?depth=N   -> {path, entries, truncated}
 * Symlinks are never followed (their own entry, with the target).
 */
#ifndef LB_WEB_HANDLERS_SANDBOX_FSMETA_H
#define LB_WEB_HANDLERS_SANDBOX_FSMETA_H

#include "web/request.h"

void lb_h_sbx_stat(lb_req *r);
void lb_h_sbx_list_dir(lb_req *r);

#endif
