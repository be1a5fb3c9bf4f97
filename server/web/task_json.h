/* A task as the API shows it. The store loads a task (lb_store_task_load);
 * only the web turns it into JSON, here. */
#ifndef LB_WEB_TASK_JSON_H
#define LB_WEB_TASK_JSON_H

#include <cjson/cJSON.h>

#include "common/status.h"
#include "common/task.h"
#include "store/store.h"

/* {id, status, reason, prompt, model, max_turns, created_ms, started_ms,
 * finished_ms, turns, usage:{prompt_tokens, completion_tokens,
 * total_tokens, environment_tokens, environment_estimated, context_tokens,
 * model_ms, tools_ms, sandbox_ms}, answer, token_budget, timeout_s,
 * inputs:[...], network, image, rerun_of, artifacts}: what docs/API.md
 * documents for GET /api/tasks/{id}. null where the task has no value.
 * artifacts (a JSON array, may be NULL for []) is taken over, also on
 * failure. LB_E_NOMEM. Caller frees *out. */
LB_MUST_CHECK int lb_task_json(const lb_task *t, cJSON *artifacts, cJSON **out);
/* {id, status, prompt, model, created_ms, finished_ms}: a task in the
 * list of GET /api/tasks. NULL when out of memory. */
cJSON *lb_task_summary_json(const lb_task *t);
/* The n artifacts a as the API's array [{path, size, mime, sha256}], in
 * their order. LB_E_NOMEM. Caller frees *out. */
LB_MUST_CHECK int lb_artifacts_json(const lb_artifact *a, size_t n, cJSON **out);
/* The artifact index of task id as that array (lb_store_artifacts_rows
 * and lb_artifacts_json): the store's status, or LB_E_NOMEM. Caller frees
 * *out. */
LB_MUST_CHECK int lb_task_artifacts_json(lb_store *s, const char *id, cJSON **out);

/* The task as the API shows it, artifacts and rounds included:
 * lb_store_task_load and lb_task_json; named for the store it reads, for
 * the handlers, tools and tests that read a task whole. Caller frees. */
LB_MUST_CHECK int lb_store_task_get(lb_store *s, const char *id, cJSON **out);
/* The store's pages of tasks (lb_store_task_rows) as API JSON arrays of
 * {id, status, prompt, model, created_ms, finished_ms}
 * (lb_task_summary_json). Caller frees. */
LB_MUST_CHECK int lb_store_task_list(lb_store *s, int limit, int64_t before_ms, cJSON **out);
LB_MUST_CHECK int lb_store_task_page(lb_store *s, int limit, int64_t before_ms, const char *before_id, cJSON **out);
LB_MUST_CHECK int lb_store_task_page_of(lb_store *s, const char *owner, int limit, int64_t before_ms, const char *before_id,
                                        cJSON **out);

#endif
