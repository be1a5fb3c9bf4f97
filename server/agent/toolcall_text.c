/* Text tool-call mode (LLMBOX_LLM_TOOL_MODE=text), for models served
 * without function calling: the request carries no `tools`; the tools are
 * described at the end of the system prompt and the model writes its calls
 * as text,
 *   <function=NAME>
 *   <parameter=ARG>value</parameter>
 *   </function>
 * which toolcall_parse.c takes out of the reply. The loop's conversation
 * stays in the native shape (and so does trajectory.json); only the
 * request is rewritten here: calls back into text, tool results into user
 * messages. */
#include "agent/toolcall_text.h"

#include "agent/prompts.h"
#include "agent/run_state.h"
#include "agent/toolcall_parse.h"
#include "common/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : dflt;
}

static void put(lb_buf *b, const char *s)
{
    LB_IGNORE(lb_buf_append(b, s, strlen(s))); /* the prompt is capped at 4 MiB: past it the list is cut */
}

/* NUL-terminated copy of the buffer's text (the buffer is freed). */
static char *take(lb_buf *b)
{
    char *out = malloc(b->len + 1);
    if (out) {
        if (b->len)
            memcpy(out, b->data, b->len);
        out[b->len] = '\0';
    }
    lb_buf_free(b);
    return out;
}

char *lb_text_mode_tools_prompt(const cJSON *tools)
{
    lb_buf b;
    lb_buf_init(&b, 4u << 20);
    put(&b, "\n\n# Tools\n\n"
            "Call a tool by writing a block in exactly this format in your reply:\n\n"
            "<function=NAME>\n<parameter=ARG>value</parameter>\n</function>\n\n"
            "A value may span several lines. Write it as it is, without quotes or escapes; "
            "numbers as digits, arrays and objects as JSON. You may write several blocks in one "
            "reply: they run in order, and their results come back in the next user message, "
            "each starting with \"Observation of NAME:\". Every reply must call at least one "
            "tool; call finish when you are done.\n\nThe tools:\n");
    const cJSON *t;
    cJSON_ArrayForEach(t, tools)
    {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        if (!fn)
            fn = t;
        const char *name = str_or(fn, "name", NULL);
        if (!name)
            continue;
        put(&b, "\n## ");
        put(&b, name);
        put(&b, "\n");
        put(&b, str_or(fn, "description", ""));
        put(&b, "\nParameters:");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(params, "required");
        const cJSON *p;
        int any = 0;
        cJSON_ArrayForEach(p, props)
        {
            int required = 0;
            const cJSON *r;
            cJSON_ArrayForEach(r, req) required |= cJSON_IsString(r) && !strcmp(r->valuestring, p->string);
            put(&b, "\n- ");
            put(&b, p->string);
            put(&b, " (");
            put(&b, str_or(p, "type", "any"));
            put(&b, required ? ", required)" : ", optional)");
            const char *d = str_or(p, "description", NULL);
            if (d) {
                put(&b, ": ");
                put(&b, d);
            }
            const cJSON *en = cJSON_GetObjectItemCaseSensitive(p, "enum");
            if (cJSON_IsArray(en)) {
                put(&b, " One of:");
                const cJSON *e;
                cJSON_ArrayForEach(e, en)
                {
                    char *v = cJSON_PrintUnformatted(e);
                    if (v) {
                        put(&b, " ");
                        put(&b, cJSON_IsString(e) ? e->valuestring : v);
                    }
                    free(v);
                }
                put(&b, ".");
            }
            any = 1;
        }
        if (!any)
            put(&b, " none");
        put(&b, "\n");
    }
    return take(&b);
}

/* An assistant message's content with its tool calls written back as text,
 * each value wrapped in newlines (the parser drops exactly those). */
static char *assistant_text(const cJSON *m)
{
    lb_buf b;
    lb_buf_init(&b, 64u << 20);
    put(&b, str_or(m, "content", ""));
    const cJSON *tc;
    cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(m, "tool_calls"))
    {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        if (b.len)
            put(&b, "\n\n");
        put(&b, "<function=");
        put(&b, str_or(fn, "name", ""));
        put(&b, ">\n");
        const char *args = str_or(fn, "arguments", "");
        cJSON *a = cJSON_Parse(args);
        if (cJSON_IsObject(a)) {
            const cJSON *v;
            cJSON_ArrayForEach(v, a)
            {
                put(&b, "<parameter=");
                put(&b, v->string);
                put(&b, ">\n");
                if (cJSON_IsString(v)) {
                    put(&b, v->valuestring);
                } else {
                    char *j = cJSON_PrintUnformatted(v);
                    put(&b, j ? j : "");
                    free(j);
                }
                put(&b, "\n</parameter>\n");
            }
        } else if (*args) {
            /* not an object: shown as the model wrote it (it got an error for it) */
            put(&b, args);
            put(&b, "\n");
        }
        cJSON_Delete(a);
        put(&b, "</function>");
    }
    return take(&b);
}

/* The tool name of the call with this id in the assistant messages before. */
static const char *call_name(const cJSON *messages, const cJSON *upto, const char *id)
{
    const char *name = NULL;
    const cJSON *m;
    cJSON_ArrayForEach(m, messages)
    {
        if (m == upto)
            break;
        const cJSON *tc;
        cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(m, "tool_calls"))
        {
            if (id && !strcmp(str_or(tc, "id", ""), id))
                name = str_or(cJSON_GetObjectItemCaseSensitive(tc, "function"), "name", NULL);
        }
    }
    return name ? name : "a tool";
}

cJSON *lb_text_mode_messages(const cJSON *messages, const cJSON *tools)
{
    cJSON *out = cJSON_CreateArray();
    char *tp = lb_text_mode_tools_prompt(tools);
    if (!out || !tp) {
        cJSON_Delete(out);
        free(tp);
        return NULL;
    }
    int sys_done = 0;
    lb_buf obs;                 /* tool results waiting to become one user message */
    lb_buf_init(&obs, 64u << 20);
    const cJSON *m;
    for (m = messages ? messages->child : NULL;; m = m->next) {
        const char *role = m ? str_or(m, "role", "") : "";
        if (obs.len && strcmp(role, "tool")) {
            cJSON *u = cJSON_CreateObject();
            cJSON_AddStringToObject(u, "role", "user");
            char *text = take(&obs);
            cJSON_AddStringToObject(u, "content", text ? text : "");
            free(text);
            cJSON_AddItemToArray(out, u);
            lb_buf_init(&obs, 64u << 20);
        }
        if (!m)
            break;
        cJSON *n = NULL;
        if (!strcmp(role, "tool")) {
            if (obs.len)
                put(&obs, "\n\n");
            put(&obs, "Observation of ");
            put(&obs, call_name(messages, m, str_or(m, "tool_call_id", NULL)));
            put(&obs, ":\n");
            put(&obs, str_or(m, "content", ""));
            continue;
        } else if (!strcmp(role, "assistant")) {
            n = cJSON_CreateObject();
            cJSON_AddStringToObject(n, "role", "assistant");
            char *text = assistant_text(m);
            cJSON_AddStringToObject(n, "content", text ? text : "");
            free(text);
        } else if (!strcmp(role, "system") && !sys_done) {
            n = cJSON_Duplicate(m, 1);
            char *full = NULL;
            const char *c = str_or(m, "content", "");
            size_t clen = strlen(c), tlen = strlen(tp);
            if (n && (full = malloc(clen + tlen + 1)) != NULL) {
                memcpy(full, c, clen);
                memcpy(full + clen, tp, tlen + 1);
                cJSON_DeleteItemFromObjectCaseSensitive(n, "content");
                cJSON_AddStringToObject(n, "content", full);
            }
            free(full);
            sys_done = 1;
        } else {
            n = cJSON_Duplicate(m, 1);
        }
        if (n)
            cJSON_AddItemToArray(out, n);
    }
    lb_buf_free(&obs);
    if (!sys_done) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "role", "system");
        cJSON_AddStringToObject(s, "content", tp + 2); /* without the leading blank line */
        cJSON_InsertItemInArray(out, 0, s);
    }
    free(tp);
    return out;
}
