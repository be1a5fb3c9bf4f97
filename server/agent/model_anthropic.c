/* The request body of the Anthropic Messages API (POST /v1/messages).
 *
 * The loop keeps one conversation in the OpenAI shape for every provider
 * (the trajectory, the events and the UI read that shape); this file turns
 * it into Anthropic's at each request:
 *   system messages      -> the top-level "system"
 *   assistant tool_calls -> tool_use blocks {id, name, input}
 *   "thinking_blocks"    -> sent back first and verbatim (signed by the API)
 *   tool messages        -> tool_result blocks in a user message, with
 *                           image blocks for the images they name whose
 *                           bytes m->images still holds (obs_images.h)
 * Strings are referenced, not copied: the conversation can be megabytes.
 * The HTTP side (retries, cancel, errors) is model_http.c; the response
 * parser is lb_parse_anthropic_response in toolcall_parse.c. */
#include "agent/model_anthropic.h"

#include "agent/model_http.h"
#include "agent/obs_images.h"
#include "agent/prompts.h"
#include "agent/toolcall_parse.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <string.h>

static const char *str_of(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int add_text_block(cJSON *content, const char *text)
{
    cJSON *b = cJSON_CreateObject();
    if (!b || !cJSON_AddItemToArray(content, b))
        goto fail;
    if (!cJSON_AddStringToObject(b, "type", "text"))
        return -1;
    cJSON *t = cJSON_CreateStringReference(text);
    if (!t || !cJSON_AddItemToObject(b, "text", t)) {
        cJSON_Delete(t);
        return -1;
    }
    return 0;
fail:
    cJSON_Delete(b);
    return -1;
}

/* The content array of a new message of role appended to out, or of the
 * last one when it has the same role: the API wants user and assistant
 * turns to alternate, and tool results plus a note are one user turn. */
static cJSON *turn(cJSON *out, const char *role)
{
    cJSON *last = cJSON_GetArrayItem(out, cJSON_GetArraySize(out) - 1);
    const char *lr = str_of(last, "role");
    if (lr && !strcmp(lr, role))
        return cJSON_GetObjectItemCaseSensitive(last, "content");
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddItemToArray(out, m)) {
        cJSON_Delete(m);
        return NULL;
    }
    if (!cJSON_AddStringToObject(m, "role", role))
        return NULL;
    return cJSON_AddArrayToObject(m, "content");
}

static int add_assistant(cJSON *out, const cJSON *msg)
{
    cJSON *content = turn(out, "assistant");
    if (!content)
        return -1;
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(msg, "thinking_blocks"))
        if (!cJSON_AddItemReferenceToArray(content, (cJSON *)b))
            return -1;
    const char *text = str_of(msg, "content");
    if (text && *text && add_text_block(content, text))
        return -1;
    const cJSON *tc;
    cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(msg, "tool_calls"))
    {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        const char *id = str_of(tc, "id"), *name = str_of(fn, "name"), *args = str_of(fn, "arguments");
        cJSON *u = cJSON_CreateObject();
        if (!u || !cJSON_AddItemToArray(content, u)) {
            cJSON_Delete(u);
            return -1;
        }
        /* input must be an object; arguments the loop kept that are not one
         * (the model's invalid JSON was answered with an error) go as {} */
        cJSON *input = args ? cJSON_Parse(args) : NULL;
        if (!cJSON_IsObject(input)) {
            cJSON_Delete(input);
            input = cJSON_CreateObject();
        }
        if (!cJSON_AddStringToObject(u, "type", "tool_use") || !cJSON_AddStringToObject(u, "id", id ? id : "") ||
            !cJSON_AddStringToObject(u, "name", name ? name : "") || !input ||
            !cJSON_AddItemToObject(u, "input", input)) {
            cJSON_Delete(input);
            return -1;
        }
    }
    /* the API refuses an empty assistant turn; a reply with nothing in it
     * (it happens) still has to stay in the conversation */
    if (cJSON_GetArraySize(content) == 0 && add_text_block(content, "(empty reply)"))
        return -1;
    return 0;
}

/* {"type":"image","source":{"type":"base64","media_type","data"}} appended
 * to content; data is referenced, not copied. */
static int add_image_block(cJSON *content, const char *media_type, const char *data)
{
    cJSON *b = cJSON_CreateObject();
    if (!b || !cJSON_AddItemToArray(content, b)) {
        cJSON_Delete(b);
        return -1;
    }
    cJSON *src = cJSON_AddObjectToObject(b, "source");
    cJSON *d = cJSON_CreateStringReference(data);
    if (!cJSON_AddStringToObject(b, "type", "image") || !src || !cJSON_AddStringToObject(src, "type", "base64") ||
        !cJSON_AddStringToObject(src, "media_type", media_type) || !d || !cJSON_AddItemToObject(src, "data", d)) {
        cJSON_Delete(d);
        return -1;
    }
    return 0;
}

static int add_tool_result(const lb_model *m, cJSON *out, const cJSON *msg)
{
    cJSON *content = turn(out, "user");
    cJSON *b = cJSON_CreateObject();
    if (!content || !b || !cJSON_AddItemToArray(content, b)) {
        cJSON_Delete(b);
        return -1;
    }
    const char *id = str_of(msg, "tool_call_id"), *text = str_of(msg, "content");
    if (!cJSON_AddStringToObject(b, "type", "tool_result") || !cJSON_AddStringToObject(b, "tool_use_id", id ? id : ""))
        return -1;
    /* images the message names and the store still holds: the content
     * becomes a list, its text first (it names each file too) */
    cJSON *parts = NULL;
    const cJSON *im;
    cJSON_ArrayForEach(im, cJSON_GetObjectItemCaseSensitive(msg, "images"))
    {
        const char *mt = NULL, *data = lb_obs_images_get(m->images, str_of(im, "path"), &mt);
        if (!data)
            continue;
        if (!parts && (!(parts = cJSON_AddArrayToObject(b, "content")) || add_text_block(parts, text ? text : "")))
            return -1;
        if (add_image_block(parts, mt, data))
            return -1;
    }
    if (parts)
        return 0;
    cJSON *t = cJSON_CreateStringReference(text ? text : "");
    if (!t || !cJSON_AddItemToObject(b, "content", t)) {
        cJSON_Delete(t);
        return -1;
    }
    return 0;
}

/* Fills req's "system" and "messages" from the OpenAI-shaped messages. */
static int add_conversation(const lb_model *m, cJSON *req, const cJSON *messages)
{
    cJSON *out = cJSON_AddArrayToObject(req, "messages");
    if (!out)
        return -1;
    const cJSON *msg;
    cJSON_ArrayForEach(msg, messages)
    {
        const char *role = str_of(msg, "role");
        const char *text = str_of(msg, "content");
        if (!role)
            continue;
        if (!strcmp(role, "system")) {
            /* one system prompt in practice; a second one would be lost, so
             * it goes to the conversation as user text instead */
            if (!cJSON_HasObjectItem(req, "system") && text) {
                cJSON *t = cJSON_CreateStringReference(text);
                if (!t || !cJSON_AddItemToObject(req, "system", t)) {
                    cJSON_Delete(t);
                    return -1;
                }
                continue;
            }
            role = "user";
        }
        if (!strcmp(role, "assistant")) {
            if (add_assistant(out, msg))
                return -1;
        } else if (!strcmp(role, "tool")) {
            if (add_tool_result(m, out, msg))
                return -1;
        } else if (text && *text) {
            cJSON *content = turn(out, "user");
            if (!content || add_text_block(content, text))
                return -1;
        }
    }
    return 0;
}

/* OpenAI tools [{type, function:{name, description, parameters}}] as
 * Anthropic's [{name, description, input_schema}]. */
static int add_tools(cJSON *req, const cJSON *tools)
{
    if (!tools || cJSON_GetArraySize(tools) == 0)
        return 0;
    cJSON *out = cJSON_AddArrayToObject(req, "tools");
    if (!out)
        return -1;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools)
    {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const char *name = str_of(fn, "name"), *desc = str_of(fn, "description");
        cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        if (!name || !cJSON_IsObject(params))
            continue;
        cJSON *a = cJSON_CreateObject();
        if (!a || !cJSON_AddItemToArray(out, a)) {
            cJSON_Delete(a);
            return -1;
        }
        if (!cJSON_AddStringToObject(a, "name", name) ||
            (desc && !cJSON_AddStringToObject(a, "description", desc)) ||
            !cJSON_AddItemReferenceToObject(a, "input_schema", params))
            return -1;
    }
    return 0;
}

char *lb_anthropic_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools)
{
    char *body = NULL;
    cJSON *req = cJSON_CreateObject();
    if (!req)
        goto out;
    if (!cJSON_AddStringToObject(req, "model", m->model) ||
        !cJSON_AddNumberToObject(req, "max_tokens", m->max_tokens > 0 ? m->max_tokens : 8192))
        goto out;
    if (add_conversation(m, req, messages) || add_tools(req, tools))
        goto out;
    lb_model_add_sampling(m, req);
    /* e.g. {"thinking":{"type":"enabled","budget_tokens":4096}} or a
     * temperature; the conversation itself is not the extra body's */
    static const char *const keep[] = {"messages", "tools", "system", NULL};
    lb_model_merge_extra(m, req, keep);
    body = cJSON_PrintUnformatted(req);
out:
    cJSON_Delete(req);
    return body;
}
