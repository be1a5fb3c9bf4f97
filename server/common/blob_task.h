/* A task's files and the artifact store (blob_task.c), several nodes: what the
 * web and the agent call at the few points where files change hands. With
 * no s3_bucket every call is a no-op: the local folder is the store. */
#ifndef LB_COMMON_BLOB_TASK_H
#define LB_COMMON_BLOB_TASK_H

#include <stddef.h>
#include <stdint.h>

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
/* several nodes: makes the task's inputs (<id>/input/...) present under
 * artifacts/<id>/input, fetched from the store when missing or of another
 * size: the node that claimed a task another host admitted does this
 * before it starts the agent. No-op without a bucket (web and node then
 * share the folder). */
LB_MUST_CHECK int lb_blob_task_fetch_inputs(const struct lb_config *cfg, const char *task_id, char *why,
                                            size_t whysz);
/* several nodes: a follow-up message's new inputs (dir: the message's own
 * folder, before they join artifacts/<id>/input) as <id>/input/<path>,
 * before the round is queued, so the node that claims it finds them. */
LB_MUST_CHECK int lb_blob_task_put_new_inputs(const struct lb_config *cfg, const char *task_id, const char *dir,
                                              char *why, size_t whysz);
/* several nodes: the task's record, what a round's agent writes beside the
 * outputs: trajectory.json, tokens.jsonl (a run that captured tokens) and
 * rounds/<round>.json, stored as <id>/<name> when the round ends, so any
 * web serves them and any node goes on with the conversation. Only for
 * the service's artifacts/<id> (task_dir), not `llmbox run -o DIR`;
 * records missing locally are skipped. */
LB_MUST_CHECK int lb_blob_task_put_record(const struct lb_config *cfg, const char *task_id, const char *task_dir,
                                          int round, char *why, size_t whysz);
/* 1 when name is a record's name: "trajectory.json", "tokens.jsonl" or
 * "rounds/<1..99999>.json". */
int lb_blob_record_name_ok(const char *name);
/* Makes artifacts/<id>/<name> (a record) current here: fetched when it is
 * missing or of another size than the store's copy (a record is rewritten
 * by each round, on whichever node ran it). LB_OK also when the store has
 * none or cannot be reached but a local copy exists (it is served); else
 * LB_E_NOTFOUND (in neither) or the store's error. No-op without a
 * bucket. */
LB_MUST_CHECK int lb_blob_task_fetch_record(const struct lb_config *cfg, const char *task_id, const char *name,
                                            char *why, size_t whysz);

/* several nodes: round's files as they are now the task's last outputs
 * (<id>/output/<path> of every path in artifacts_json, the round's list
 * [{"path":..}, ...]) copied to <id>/rounds/<round>/output/<path>, when a
 * message starts the next round: the page's links to an earlier round's
 * files then work from any web. The store copies; no-op without a bucket
 * (the agent keeps the round's copies in the folder). */
LB_MUST_CHECK int lb_blob_task_keep_round(const struct lb_config *cfg, const char *task_id, int round,
                                          const char *artifacts_json, char *why, size_t whysz);
/* Makes artifacts/<id>/rounds/<round>/output/<path> present here, fetched
 * from the store (size: what the round's list says) when it is not; for
 * the task's last round (last 1: no message has kept its copy yet) from
 * its outputs, <id>/output/<path>. */
LB_MUST_CHECK int lb_blob_task_fetch_round_file(const struct lb_config *cfg, const char *task_id, int round,
                                                int last, const char *path, uint64_t size, char *why, size_t whysz);

/* several nodes: the markers the web's cache trim (web/cache_trim.h) reads in
 * a task's folder, with a bucket only. An agent writes LB_BLOB_MARK_AGENT
 * before anything else: the folder may hold what only this host has. It
 * writes LB_BLOB_MARK_STORED (the round's number) once its round's
 * outputs and record are in the bucket. A folder without the first, or
 * with the second at the task's last round, holds nothing the bucket
 * lacks. No-ops without a bucket; atomic writes. */
#define LB_BLOB_MARK_AGENT ".agent-here"
#define LB_BLOB_MARK_STORED ".in-store"
LB_MUST_CHECK int lb_blob_task_mark_agent(const struct lb_config *cfg, const char *task_dir);
LB_MUST_CHECK int lb_blob_task_mark_stored(const struct lb_config *cfg, const char *task_dir, int round);
/* 1 when task_dir holds nothing the bucket lacks for a task whose last
 * round is round (see the markers above); 0 otherwise. */
int lb_blob_task_dir_in_store(const char *task_dir, int round);

/* Deletes every object of the task (<id>/...) from the store: when the
 * task is deleted. An object left by a failure is unreachable (no task
 * row names it) but takes space: why says which. */
LB_MUST_CHECK int lb_blob_task_delete(const struct lb_config *cfg, const char *task_id, char *why, size_t whysz);

#endif
