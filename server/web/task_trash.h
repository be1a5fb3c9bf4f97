/* A deleted task's folder removed off the request's thread (task_trash.c):
 * DELETE /api/tasks/{id} renames it into artifacts/.trash at once and a
 * background thread removes it, so deleting a task with gigabytes of
 * files holds no web thread. */
#ifndef LB_WEB_TASK_TRASH_H
#define LB_WEB_TASK_TRASH_H

#include "common/status.h"

struct lb_config;

/* Starts the thread that empties artifacts/.trash: first what a web that
 * stopped (or crashed) mid-way left there, then each folder put there.
 * Called at the web's start; a later call does nothing. */
LB_MUST_CHECK int lb_task_trash_start(const struct lb_config *cfg);

/* Moves the folder path (under cfg->artifacts_dir, the same file system)
 * into the trash with one rename and wakes the thread: LB_OK (also when
 * path does not exist), else LB_E_IO with errno set: the caller removes it
 * itself. */
LB_MUST_CHECK int lb_task_trash_put(const struct lb_config *cfg, const char *path, const char *id);

#endif
