/*
 * Replay (model_replay.c): a recorded run played back as the model.
 */
#ifndef LB_MODEL_REPLAY_H
#define LB_MODEL_REPLAY_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent/model_http.h"
#include "common/status.h"

#define LB_REPLAY_MAX_FILE (64u << 20)

/* Loads path, a trajectory.json written by llmbox
 * or a JSON list of assistant messages {content, reasoning_content?,
 * tool_calls:[{name, arguments}] or OpenAI-shaped calls}, into *steps: an
 * array of OpenAI assistant messages. Capped at LB_REPLAY_MAX_FILE. */
LB_MUST_CHECK int lb_replay_load(const char *path, cJSON **steps, char *err, size_t errsz);
/* The next reply of a loaded replay; a finish call once they ran out. */
LB_MUST_CHECK int lb_replay_next(lb_model *m, lb_model_reply *r, char *err, size_t errsz);

#endif
