/* POST /api/tasks/{id}/fork?round=N (follow-ups, handlers_fork.c): a new
 * task that begins with the conversation and the files of task {id} as
 * they were at the end of its round N. */
#ifndef LB_WEB_HANDLERS_FORK_H
#define LB_WEB_HANDLERS_FORK_H

#include "web/request.h"

/* 201 with the new task (ended as round N ended, `fork_of`, at round N:
 * its next message continues it). 400 for a bad round, 404 no such
 * round, 409 while round N runs. */
void lb_h_task_fork(lb_req *r);

#endif
