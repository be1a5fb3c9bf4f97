/* The request body of OpenAI-compatible chat completions (vLLM, SGLang,
 * OpenAI, llama.cpp server, Ollama ...): the loop's conversation is already
 * in this shape, so it goes as it is. The HTTP side is model_http.c. */
#include "agent/agent.h"

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
    static const char *const keep[] = {"messages", "tools", NULL};
    lb_model_merge_extra(m, req, keep);
    char *body = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    return body;
}
