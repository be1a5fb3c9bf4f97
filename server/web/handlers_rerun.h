/* POST /api/tasks/{id}/rerun, "Run again" (handlers_rerun.c). */
#ifndef LB_WEB_HANDLERS_RERUN_H
#define LB_WEB_HANDLERS_RERUN_H

#include "common/status.h"
#include "web/request.h"

void lb_h_task_rerun(lb_req *r);
/* Hard-links (or copies) the regular file rel (clean) under the folder
 * src_root to the same path under dst_root (folders made), never through
 * a symlink on either side; a fork (handlers_fork.c) links its files so
 * too. LB_E_NOTFOUND when it is not a regular file there, LB_E_IO. */
LB_MUST_CHECK int lb_copy_input(int src_root, int dst_root, const char *rel);

#endif
