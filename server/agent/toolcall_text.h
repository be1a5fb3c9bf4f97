/*
 * Tools in text mode (toolcall_text.c): for a model without native tool
 * calls, the tools described in the prompt and the calls written as text.
 */
#ifndef LB_TOOLCALL_TEXT_H
#define LB_TOOLCALL_TEXT_H

#include <cjson/cJSON.h>

/* The messages of a text-mode request (LB_TOOL_MODE_TEXT): the tools
 * described at the end of the system prompt, assistant tool calls written
 * back as <function=...> text, tool results as user messages
 * "Observation of NAME:" (consecutive ones joined). Caller frees. */
cJSON *lb_text_mode_messages(const cJSON *messages, const cJSON *tools);
/* The system prompt addition describing tools (OpenAI shape) and the call
 * format. Caller frees. */
char *lb_text_mode_tools_prompt(const cJSON *tools);

#endif
