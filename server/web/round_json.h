/* The rounds of a task as API JSON (follow-ups): what GET /api/tasks/{id}
 * adds to a task (round_json.c). */
#ifndef LB_WEB_ROUND_JSON_H
#define LB_WEB_ROUND_JSON_H

#include <cjson/cJSON.h>

#include "common/status.h"
#include "store/store.h"

/* Adds to task (the object of lb_task_json) "round" (the current one),
 * "rounds" ([{round, prompt, inputs, status, reason, answer, artifacts,
 * usage:{turns, prompt_tokens, completion_tokens, ...}, sandbox, fresh, state_bytes,
 * created_ms, started_ms, finished_ms}], oldest first) and "sandbox"
 * ({kept_until_ms} while the last round's sandbox is kept for the next
 * message, else null) and "fork_of" ({id, round} of the task it was
 * forked from, or null). LB_OK or the store's error. */
LB_MUST_CHECK int lb_task_rounds_json(lb_store *s, const char *id, cJSON *task);

#endif
