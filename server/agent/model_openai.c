/* The request body of OpenAI-compatible chat completions (vLLM, SGLang,
 * OpenAI, llama.cpp server, Ollama ...): the loop's conversation is already
 * in this shape, so it goes as it is. The HTTP side is model_http.c. */
#include "agent/model_openai.h"

#include "agent/model_http.h"
#include "agent/toolcall_text.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* The conversation without the "images" key that the loop adds to a tool
 * message for Anthropic's image blocks (obs_images.h): a follow-up may go to
 * an OpenAI-compatible model after an Anthropic one, and a strict server
 * refuses a message field it does not know. NULL when no message has one
 * (the usual case: the conversation then goes uncopied), else a copy. */
static cJSON *lb_openai_without_images(const cJSON *messages, int *failed)
{
    *failed = 0;
    const cJSON *msg;
    int any = 0;
    cJSON_ArrayForEach(msg, messages)
    {
        if (cJSON_GetObjectItemCaseSensitive(msg, "images"))
            any = 1;
    }
    if (!any)
        return NULL;
    cJSON *copy = cJSON_Duplicate(messages, 1);
    if (!copy) {
        *failed = 1;
        return NULL;
    }
    cJSON *m;
    cJSON_ArrayForEach(m, copy)
    {
        cJSON_DeleteItemFromObjectCaseSensitive(m, "images");
    }
    return copy;
}

char *lb_openai_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools)
{
    int failed = 0;
    cJSON *plain = lb_openai_without_images(messages, &failed);
    if (failed)
        return NULL;
    if (plain)
        messages = plain;
    cJSON *req = cJSON_CreateObject();
    if (!req) {
        cJSON_Delete(plain);
        return NULL;
    }
    cJSON_AddStringToObject(req, "model", m->model);
    if (m->tool_mode == LB_TOOL_MODE_TEXT) {
        /* no `tools`: described in the system prompt, calls and results as text */
        cJSON *msgs = lb_text_mode_messages(messages, tools);
        if (!msgs) {
            cJSON_Delete(req);
            cJSON_Delete(plain);
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
    cJSON_Delete(req); /* drops the references first: plain outlives them */
    cJSON_Delete(plain);
    return body;
}
