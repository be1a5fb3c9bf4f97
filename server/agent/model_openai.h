/*
 * The request body of an OpenAI-compatible endpoint (model_openai.c).
 */
#ifndef LB_MODEL_OPENAI_H
#define LB_MODEL_OPENAI_H

#include "agent/model_http.h"

/* The body of a chat completion request, from the loop's OpenAI-shaped
 * conversation and tools. Caller frees. */
char *lb_openai_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools);

#endif
