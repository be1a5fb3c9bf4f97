/* A task's files and the artifact store (blob_task.c), issue 13: what the
 * web and the agent call at the few points where files change hands. With
 * no s3_bucket every call is a no-op: the local folder is the store. */
#ifndef LB_COMMON_BLOB_TASK_H
#define LB_COMMON_BLOB_TASK_H

#include <stddef.h>

#include "common/status.h"

struct lb_config; /* common/config.h */

/* Stores the task's uploaded inputs (dir = artifacts/<id>/input) as
 * <id>/input/<path>, once, when the task is created. */
LB_MUST_CHECK int lb_blob_task_put_inputs(const struct lb_config *cfg, const char *task_id, const char *dir,
                                          char *why, size_t whysz);
/* Stores the outputs an agent collected as <id>/output/<path> when the
 * task ends; only when dir is the service's artifacts/<id>/output (not a
 * `llmbox run -o DIR`). The local copy stays either way. */
LB_MUST_CHECK int lb_blob_task_put_outputs(const struct lb_config *cfg, const char *task_id, const char *dir,
                                           char *why, size_t whysz);
/* Makes artifacts/<id>/output/<path> present locally, fetched from the
 * store when it is not (a task another node ran, or a local copy
 * removed): the web's downloads then serve it as any local file. */
LB_MUST_CHECK int lb_blob_task_fetch_output(const struct lb_config *cfg, const char *task_id, const char *path,
                                            char *why, size_t whysz);
/* The same for every object under <id>/output/<folder> ("" = all) whose
 * local copy is missing or of another size: before a bundle is built. */
LB_MUST_CHECK int lb_blob_task_fetch_outputs(const struct lb_config *cfg, const char *task_id, const char *folder,
                                             char *why, size_t whysz);
/* issue 13: makes the task's inputs (<id>/input/...) present under
 * artifacts/<id>/input, fetched from the store when missing or of another
 * size: the node that claimed a task another host admitted does this
 * before it starts the agent. No-op without a bucket (web and node then
 * share the folder). */
LB_MUST_CHECK int lb_blob_task_fetch_inputs(const struct lb_config *cfg, const char *task_id, char *why,
                                            size_t whysz);
/* Deletes every object of the task (<id>/...) from the store: when the
 * task is deleted. An object left by a failure is unreachable (no task
 * row names it) but takes space: why says which. */
LB_MUST_CHECK int lb_blob_task_delete(const struct lb_config *cfg, const char *task_id, char *why, size_t whysz);

#endif
