/* The SQLite task store (WAL mode, busy timeout, versioned schema).
 *
 * One lb_store per thread or process: web worker threads each open their
 * own, the agent opens one. Writers use short IMMEDIATE transactions, so the
 * web and many agents can write at once without losing an event.
 *
 * Task statuses are those of common/task.h (queued, running, succeeded,
 * failed, cancelled), stored by name. The last three are final: once
 * final, a task never changes status again (lb_store_task_end returns
 * LB_E_EXISTS).
 *
 * Event types written by the agent (data is a JSON object):
 *   "status"   {status, reason?, sandbox?: "ready", sandbox_ms?}  (sandbox: once the
 *              task's sandbox has started, after how long)
 *   "model"    {turn, content, reasoning?, tool_calls:[{id,name,arguments}], usage:{prompt_tokens,completion_tokens}, duration_ms}
 *   "tool"     {turn, call_id, name, arguments, status, exit_code?, stdout?, stderr?, text?, duration_ms}
 *   "answer"   {answer}
 *   "artifacts"{artifacts:[{path,size,mime,sha256}]}
 *   "error"    {message}
 *   "done"     {status, reason?}          (always the last event of a task)
 */
#ifndef LB_STORE_H
#define LB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/metrics.h"
#include "common/status.h"
#include "common/task.h"

#define LB_STORE_SCHEMA_VERSION 17 /* v7: evaluations (store_eval.h); v8: rollout groups (store_rollout.h);
                                   * v9: rounds, kept sandboxes, shares (store_round.h);
                                   * v10: the task queue and nodes (store_queue.h);
                                   * v11: the node holding a task's sandbox (store_queue.h);
                                   * v12: the runners' claims (store_claim.h);
                                   * v13: deleted tasks' tombstones (store_tombstone.h);
                                   * v14: the nodes' API sandboxes (store_sandbox.h);
                                   * v15: forks share their source's events (store_round.h);
                                   * v16: the API sandboxes' owners (store_sandbox.h);
                                   * v17: E2B's volumes of every node (store_volume.h) */

typedef struct lb_store lb_store;

typedef struct lb_task_new {
    const char *id;             /* 32 hex chars */
    const char *prompt;
    const char *model;          /* a configured model's name */
    int max_turns;
    int64_t token_budget;       /* 0: none */
    int timeout_s;              /* wall-clock limit; 0: the service's */
    const char *inputs_json;    /* JSON array [{path,size}] of uploaded files */
    const char *network;        /* sandbox network mode ("none", "nat"); NULL: the default */
    const char *image;          /* sandbox image name; NULL: the default */
    const char *rerun_of;       /* id of the task this one repeats, or NULL */
    const char *owner;          /* the user who made it; NULL: no users configured */
    int owner_max_active;       /* > 0: refuse (LB_E_BUSY) when owner already has this
                                 * many tasks queued or running */
    const char *options_json;   /* how it runs (a JSON object, see common/task_opts.h, at
                                 * most 4 KiB); NULL: none, the defaults */
} lb_task_new;

/* A login session. The session id itself is never stored: only its hash. */
typedef struct lb_session {
    char id_sha256[65];         /* SHA-256 of the cookie's value, lowercase hex */
    char user[64];
    char token_sha256[65];      /* the hash of the token the session was opened with */
    int64_t created_ms, expires_ms;
} lb_session;

/* What a task used, as in the paper's Tables 5 and 6. Environment tokens
 * are the tokens of tool observations: from the endpoint's own counts
 * (the growth of the prompt from one turn to the next, minus the reply)
 * when it reports usage, else bytes / 4 (environment_estimated). */
typedef struct lb_task_usage {
    int turns;
    int64_t prompt_tokens;      /* summed over requests */
    int64_t completion_tokens;
    int64_t environment_tokens;
    int environment_estimated;  /* some of them are bytes / 4 estimates */
    int64_t context_tokens;     /* the last request's prompt + completion */
    int64_t model_ms;           /* waiting for the model */
    int64_t tools_ms;           /* running tools */
    int64_t sandbox_ms;         /* starting the sandbox */
    char answer_source[8];      /* where the answer came from: "file" (the answer file),
                                 * "finish" (the finish tool's answer), "reply" (llm mode:
                                 * the model's reply), "none"; "" is not stored (a run
                                 * that has not ended) */
    int tokens_capture;         /* the run asked for exact tokens (capture_tokens) */
    int tokens_turns;           /* turns whose tokens were judged */
    int tokens_ok;              /* of them, those with tokens_status "ok" */
} lb_task_usage;

typedef struct lb_artifact {
    char path[1025];            /* relative to the task's output dir */
    uint64_t size;
    char mime[128];
    char sha256[65];
} lb_artifact;

/* Opens (creating and migrating) the database at path: a SQLite file, or
 * a PostgreSQL database when path is a postgresql:// URL (several nodes). */
LB_MUST_CHECK int lb_store_open(const char *path, lb_store **out);
/* where (a file or a postgresql:// URL, several nodes) as it may be shown in a
 * message: any password replaced by "***". */
void lb_store_where_shown(const char *where, char *out, size_t outsz);
void lb_store_close(lb_store *s);

/* Status queued. LB_E_BUSY when t->owner_max_active is reached (checked
 * and inserted in one statement). */
LB_MUST_CHECK int lb_store_task_insert(lb_store *s, const lb_task_new *t);
LB_MUST_CHECK int lb_store_task_set_running(lb_store *s, const char *id, int pid);
LB_MUST_CHECK int lb_store_task_set_pid(lb_store *s, const char *id, int pid);
/* Ends a task: the one function that does (the agent's sink, the web's
 * reaper, orphan scan, recovery, cancel and delete, a failed spawn all
 * call it). Moves a non-final task to the final status (and appends the
 * "done" event in the same transaction). LB_E_EXISTS if it was already
 * final (the first to end it wins), LB_E_NOTFOUND if there is no such
 * task, LB_E_INVAL for a status that is not final; on a full disk see
 * lb_store_reserve_keep. reason/answer may be NULL. */
LB_MUST_CHECK int lb_store_task_end(lb_store *s, const char *id, lb_task_status status, const char *reason,
                                    const char *answer);
/* The same with the status by name ("failed" ...), for the tests and the
 * loop's result, which carry it as text. */
LB_MUST_CHECK int lb_store_task_finish(lb_store *s, const char *id, const char *status, const char *reason,
                                       const char *answer);
/* Puts the disk reserve (<db_path>-reserve, 2 MiB) back when it is missing
 * and the disk has room (4x its size) again. When the disk is full,
 * lb_store_task_end deletes it to record the end of a task, so that no
 * task stays "running" only because its end could not be written.
 * LB_E_NOSPACE: not enough room yet. */
LB_MUST_CHECK int lb_store_reserve_keep(const char *db_path);
LB_MUST_CHECK int lb_store_task_set_usage(lb_store *s, const char *id, const lb_task_usage *u);
/* Fills status (>= 16 bytes) and pid (0 if none). LB_E_NOTFOUND if absent. */
LB_MUST_CHECK int lb_store_task_state(lb_store *s, const char *id, char *status, size_t statussz, int *pid);
/* The task as stored (common/task.h). Free with lb_task_free (done here on
 * failure). LB_E_NOTFOUND, LB_E_INVAL (not an id). */
LB_MUST_CHECK int lb_store_task_load(lb_store *s, const char *id, lb_task *out);
/* A page of tasks, newest first, of owner's tasks only (owner NULL: every
 * task): at most limit (1..200, else 50 or 200) of them, strictly older
 * than the row (before_ms, before_id) in (created_ms, id) order; before_id
 * NULL or "": older than before_ms; before_ms 0: the first page. Each row
 * holds id, status, prompt (its first 200 characters), model, created_ms
 * and finished_ms only. *rows: free with lb_tasks_free. */
LB_MUST_CHECK int lb_store_task_rows(lb_store *s, const char *owner, int limit, int64_t before_ms, const char *before_id,
                                     lb_task **rows, size_t *n);
/* lb_store_task_get, lb_store_task_list, lb_store_task_page and
 * lb_store_task_page_of, a task and its pages as API JSON, are the web's
 * (web/task_json.h): only the web makes API JSON. */
/* The task's owner into owner ("" when it has none). LB_E_NOTFOUND. */
LB_MUST_CHECK int lb_store_task_owner(lb_store *s, const char *id, char *owner, size_t ownersz);
/* How many of owner's tasks are queued or running. */
LB_MUST_CHECK int lb_store_tasks_active_of(lb_store *s, const char *owner, int *n);
LB_MUST_CHECK int lb_store_task_delete(lb_store *s, const char *id);
/* Ids of tasks in "queued" or "running" (for crash recovery). Caller frees
 * the array and each string. */
LB_MUST_CHECK int lb_store_tasks_active(lb_store *s, char ***ids, int **pids, size_t *n);

/* PostgreSQL (several nodes): the connection s listens for new events (any
 * task's); LB_E_INVAL on SQLite (no notifications: ask
 * lb_store_data_version instead). */
LB_MUST_CHECK int lb_store_listen_events(lb_store *s);
/* After lb_store_listen_events: waits up to timeout_ms for new events;
 * *woke 1 when some were stored (or may have been, after a reconnect). */
LB_MUST_CHECK int lb_store_wait_events(lb_store *s, int timeout_ms, int *woke);

/* Appends one event with the next seq for that task (1, 2, 3, ...). */
LB_MUST_CHECK int lb_store_event_append(lb_store *s, const char *task_id, const char *type,
                                        const char *data_json, int64_t *seq_out);
/* The same at ts_ms, by a writer that tries again (again = 1) after a try
 * whose outcome it does not know (LB_E_UNAVAILABLE: the database server
 * went away, maybe after it committed): an event of the task with the same
 * ts_ms, type and data is the one that try stored, and its seq is answered
 * instead of a second copy (several nodes: every event stored once). */
LB_MUST_CHECK int lb_store_event_append_at(lb_store *s, const char *task_id, int64_t ts_ms, const char *type,
                                           const char *data_json, int again, int64_t *seq_out);
typedef int (*lb_event_cb)(void *arg, int64_t seq, int64_t ts_ms, const char *type,
                           const char *data_json);
/* Calls cb for events with seq > after_seq, in order, at most limit. A
 * nonzero return from cb stops the walk and is returned. */
LB_MUST_CHECK int lb_store_events_after(lb_store *s, const char *task_id, int64_t after_seq,
                                        int limit, lb_event_cb cb, void *arg);
/* The newest event seq of each of the n tasks ids[i] into newest[i] (0 when
 * it has none, or no longer exists), in one statement and one snapshot: a
 * primary-key search per task. n <= LB_STORE_NEWEST_MAX (else
 * LB_E_TOOBIG); each id must be valid (else LB_E_INVAL). */
#define LB_STORE_NEWEST_MAX 8192
LB_MUST_CHECK int lb_store_events_newest(lb_store *s, const char *const *ids, size_t n, int64_t *newest);
/* SQLite's data_version of this connection: it changes whenever another
 * connection (another thread, an agent process) has committed since the
 * last call, and costs no table read. A connection that only watches can
 * ask it every tick and skip its real query while nothing was written.
 * On PostgreSQL: the WAL's insert position (it moves with any write). */
LB_MUST_CHECK int lb_store_data_version(lb_store *s, int64_t *out);

/* Replaces the task's artifact index. */
LB_MUST_CHECK int lb_store_artifacts_set(lb_store *s, const char *task_id, const lb_artifact *a, size_t n);
/* The task's artifact index, sorted by path: *rows malloc'd (NULL when
 * there are none), *n of them; caller frees. The web makes API JSON of
 * them (lb_artifacts_json, web/task_json.h). */
LB_MUST_CHECK int lb_store_artifacts_rows(lb_store *s, const char *task_id, lb_artifact **rows, size_t *n);
LB_MUST_CHECK int lb_store_artifact_find(lb_store *s, const char *task_id, const char *path, lb_artifact *out);

/* Sessions. add also drops every expired session and keeps only the
 * keep_per_user newest of that user (0: all). get: LB_E_NOTFOUND when
 * there is no such session or it has expired by now_ms. */
LB_MUST_CHECK int lb_store_session_add(lb_store *s, const lb_session *se, int keep_per_user);
LB_MUST_CHECK int lb_store_session_get(lb_store *s, const char *id_sha256, int64_t now_ms, lb_session *out);
LB_MUST_CHECK int lb_store_session_delete(lb_store *s, const char *id_sha256);

/* ---- metrics (schema v5) ----
 * The table holds series as common/metrics.h describes them (bucket rows
 * not cumulative). Triggers keep llmbox_tasks_created_total and
 * llmbox_tasks_finished_total{status} as tasks are inserted and end;
 * agents add their observations with lb_store_metrics_add. Deleting a
 * task deletes nothing here. */

/* Adds each row's value to its series, all in one transaction. */
LB_MUST_CHECK int lb_store_metrics_add(lb_store *s, const lb_metric_row *rows, size_t n);
/* Every series, ordered by name, labels, le. *rows malloc'd (NULL when
 * none), caller frees. */
LB_MUST_CHECK int lb_store_metrics_all(lb_store *s, lb_metric_row **rows, size_t *n);
/* Tasks per status now: counts[i] for names[i] of "queued", "running",
 * "succeeded", "failed", "cancelled". */
#define LB_STORE_N_STATUS 5
extern const char *const lb_store_status_names[LB_STORE_N_STATUS];
LB_MUST_CHECK int lb_store_task_counts(lb_store *s, int64_t counts[LB_STORE_N_STATUS]);

#endif
