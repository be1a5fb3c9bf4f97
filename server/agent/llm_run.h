/*
 * The llm mode (llm_run.c): the model alone, no sandbox and no tools.
 */
#ifndef LB_LLM_RUN_H
#define LB_LLM_RUN_H

#include "agent/loop.h"
#include "agent/sink.h"
#include "common/status.h"

/* One request with the prompt as the only
 * message, no system prompt, no tools, no sandbox; the reply's text is the
 * answer. lb_agent_run calls it for a task whose mode is "llm"; the same
 * contract. */
LB_MUST_CHECK int lb_agent_run_llm(const lb_loop_opts *o, const lb_sink *sink, lb_loop_result *res);

#endif
