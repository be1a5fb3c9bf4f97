/* POST /api/tasks/{id}/rerun, "Run again" (handlers_rerun.c). */
#ifndef LB_WEB_HANDLERS_RERUN_H
#define LB_WEB_HANDLERS_RERUN_H

#include "web/request.h"

void lb_h_task_rerun(lb_req *r);

#endif
