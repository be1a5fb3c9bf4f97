/*
 * The request body of Anthropic's Messages API (model_anthropic.c).
 */
#ifndef LB_MODEL_ANTHROPIC_H
#define LB_MODEL_ANTHROPIC_H

#include "agent/model_http.h"

/* The body of a Messages request, from the loop's OpenAI-shaped
 * conversation and tools. Caller frees. */
char *lb_anthropic_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools);

#endif
