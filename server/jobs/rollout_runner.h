/* The rollout groups' runner (rollout_runner.c): a job source of the
 * evaluations' runner thread (jobs/eval_runner.h, lb_runner_add_source)
 * that turns each queued sample of a group (store/store_rollout.h) into an
 * ordinary task in its own fresh sandbox, and hands each sample whose task
 * has ended to the score pool (jobs/score_pool.h), which runs `llmbox
 * score` with the group's reward and its own time limit and stores the
 * sample's outcome. A sample's task ends (its slot and sandbox freed)
 * before it is scored, so a slow verifier never holds a slot.
 *
 * Admission: the one internal path (lb_admit_begin_internal) with the
 * evaluations' reserve (lb_eval_reserve_slots), so people's tasks always
 * find a slot however many groups run; rollout_max_samples bounds the
 * samples running in all groups. Groups take turns with evals (the
 * runner's sources alternate) and, among themselves, go oldest first.
 *
 * The stored request (handlers_rollouts.c writes it) is an object:
 *   prompt, files [{path, content | content_base64}], model, max_turns,
 *   timeout_s, token_budget, max_tokens, capture_tokens (absent: the
 *   model's), system_prompt, tools, reward {scorer, ground_truth, script,
 *   timeout_s} or null, metadata. */
#ifndef LB_WEB_ROLLOUT_RUNNER_H
#define LB_WEB_ROLLOUT_RUNNER_H

#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/status.h"

/* Adds the runner as a job source with cfg (kept, read only). Before
 * lb_eval_runner_start. */
LB_MUST_CHECK int lb_rollout_runner_init(const lb_config *cfg);

/* The task options of the samples of request req (common/task_opts.h):
 * mode, max_tokens, capture_tokens, system_prompt, tools. JSON text (caller
 * frees), or NULL without memory. The handler checks its size against the
 * store's cap before a group is stored. */
char *lb_rollout_task_options(const cJSON *req);

/* The outcome of a sample whose task did not succeed, from its status
 * and reason (the agent's sentences, server/agent/loop.c): cancelled,
 * timeout, sandbox_error, model_error; "ok" for an episode that ended at
 * one of its own limits (turns, token budget, no tool call), which is a
 * result (reward 0), not a failure. Pure. */
const char *lb_rollout_outcome_of(int cancelled, const char *reason);

#endif
