/* Follow-up rounds of a task on the web side (follow-ups,
 * handlers_messages.c): POST /api/tasks/{id}/messages, and the kept
 * sandbox of a task let go when the task is deleted. */
#ifndef LB_WEB_HANDLERS_MESSAGES_H
#define LB_WEB_HANDLERS_MESSAGES_H

#include "common/config.h"
#include "store/store.h"
#include "web/request.h"

/* POST /api/tasks/{id}/messages: multipart prompt, files, unpack, fresh;
 * 201 {id, round, status, fresh, inputs}; 409 while a round runs. */
void lb_h_task_message(lb_req *r);
/* GET /api/tasks/{id}/rounds/{n}/{path}: a file as it was at the end of
 * round n (kept by the agent as hard links), named in that round's
 * artifact list; served by nginx as a download. */
void lb_h_round_artifact(lb_req *r);
/* Destroys the sandbox the task keeps between rounds, if any (adopting it
 * with its lease key), and forgets it. For the delete of a task; a
 * sandbox that cannot be reached is logged and ends with its lease. */
void lb_followup_release(const lb_config *cfg, lb_store *s, const char *task_id);

#endif
