/* The task routes (handlers_tasks.c): create, list, get, cancel,
 * delete, the artifact list; and the start of a task, shared with
 * "Run again" (handlers_rerun.c). */
#ifndef LB_WEB_HANDLERS_TASKS_H
#define LB_WEB_HANDLERS_TASKS_H

#include "web/request.h"

#define LB_WEB_PROMPT_MAX (100u << 10)   /* bytes of a task's prompt */
#define LB_UPLOAD_MAX_FILES 1000          /* files in one task upload */
#define LB_UNPACK_MAX_ENTRIES 10000       /* entries of a task's archives together */
#define LB_UNPACK_MAX_RATIO 100           /* unpacked bytes per archive byte */
#define LB_UNPACK_RATIO_SLACK (1u << 20)  /* unpacked before the ratio counts */

void lb_h_task_create(lb_req *r);
void lb_h_task_list(lb_req *r);
void lb_h_task_get(lb_req *r);
void lb_h_task_cancel(lb_req *r);
void lb_h_task_delete(lb_req *r);
/* GET /api/tasks/{id}/artifacts */
void lb_h_artifacts(lb_req *r);

#endif
