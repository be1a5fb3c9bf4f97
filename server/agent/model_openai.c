/* The request body of OpenAI-compatible chat completions (vLLM, SGLang,
 * OpenAI, llama.cpp server, Ollama ...): the loop's conversation is already
 * in this shape, so it goes as it is. The HTTP side is model_http.c. */
#include "agent/model_openai.h"

#include "agent/model_http.h"
#include "agent/toolcall_text.h"

#include <cjson/cJSON.h>
#include <stddef.h>

char *lb_openai_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools)
{
    cJSON *req = cJSON_CreateObject();
    if (!req)
        return NULL;
    cJSON_AddStringToObject(req, "model", m->model);
    if (m->tool_mode == LB_TOOL_MODE_TEXT) {
        /* no `tools`: described in the system prompt, calls and results as text */
        cJSON *msgs = lb_text_mode_messages(messages, tools);
        if (!msgs) {
            cJSON_Delete(req);
            return NULL;
        }
        cJSON_AddItemToObject(req, "messages", msgs);
    } else {
        /* referenced, not copied: the conversation can be megabytes */
        cJSON_AddItemReferenceToObject(req, "messages", (cJSON *)messages);
        if (tools && cJSON_GetArraySize(tools) > 0)
            cJSON_AddItemReferenceToObject(req, "tools", (cJSON *)tools);
    }
    lb_model_add_sampling(m, req);
    if (m->capture_tokens) {
        /* the exact tokens (agent/tokens.h): vLLM (0.10.2+) and SGLang both
         * take return_token_ids; logprobs brings each generated token's
         * log-probability (top_logprobs 0: the sampled token only). An
         * extra_body of the model may still change them (merged below). */
        cJSON_AddTrueToObject(req, "return_token_ids");
        cJSON_AddTrueToObject(req, "logprobs");
        cJSON_AddNumberToObject(req, "top_logprobs", 0);
    }
    static const char *const keep[] = {"messages", "tools", NULL};
    lb_model_merge_extra(m, req, keep);
    char *body = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    return body;
}
