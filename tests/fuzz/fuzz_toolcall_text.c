/* libFuzzer target for the text tool-call mode (server/agent/toolcall_parse.c
 * takes <function=NAME><parameter=ARG>value</parameter></function>,
 * <tool_call>{json}</tool_call> and a trailing finish(...) out of a reply's
 * text; server/agent/toolcall_text.c writes calls back as that text for
 * the next request). The first byte picks the mode:
 *
 *  even: the rest is the content a model endpoint sent (any bytes, NUL as
 *        \u0000), parsed as a chat completion. Promise: every string kept
 *        is UTF-8, every call has a name and arguments, at most
 *        LB_MODEL_MAX_CALLS calls; the conversation rebuilt from the reply
 *        renders as a text-mode request whose strings are UTF-8.
 *  odd:  the rest describes calls (names, keys and string values); they are
 *        written as text the way the next request carries them and parsed
 *        back. Promise: the same calls in the same order with the same
 *        arguments (values without the markup itself, and not ending in a
 *        CR, which the layout's CRLF takes).
 */
#include "agent/toolcall_parse.h"
#include "agent/toolcall_text.h"
#include "common/utf8.h"
#include "common/status.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>

static void check(const char *s)
{
    if (s)
        fz_assert_utf8(s, strlen(s));
}

/* Every string in a JSON tree is UTF-8. */
static void check_tree(const cJSON *v)
{
    for (; v; v = v->next) {
        check(v->string);
        if (cJSON_IsString(v))
            check(v->valuestring);
        check_tree(v->child);
    }
}

/* data as the body of a chat completion whose content holds those bytes:
 * printable bytes (also invalid UTF-8) go in raw, as a sloppy server may
 * send them; the rest as \u00XX escapes. Caller frees. */
static char *body_with_content(const uint8_t *d, size_t n, size_t *len)
{
    static const char head[] = "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"";
    static const char tail[] = "\"},\"finish_reason\":\"stop\"}]}";
    char *b = malloc(sizeof head + n * 6 + sizeof tail);
    if (!b)
        return NULL;
    size_t o = 0;
    memcpy(b, head, sizeof head - 1);
    o += sizeof head - 1;
    for (size_t i = 0; i < n; i++) {
        if (d[i] < 0x20 || d[i] == '"' || d[i] == '\\')
            o += (size_t)sprintf(b + o, "\\u%04x", d[i]);
        else
            b[o++] = (char)d[i];
    }
    memcpy(b + o, tail, sizeof tail);
    *len = o + sizeof tail - 1;
    return b;
}

/* The assistant message the loop keeps for a reply (OpenAI shape). */
static cJSON *assistant_of(const lb_model_reply *r)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "assistant");
    if (r->content)
        cJSON_AddStringToObject(m, "content", r->content);
    cJSON *tcs = cJSON_AddArrayToObject(m, "tool_calls");
    for (size_t i = 0; i < r->n_calls; i++) {
        cJSON *tc = cJSON_CreateObject();
        char id[16];
        snprintf(id, sizeof id, "c%zu", i);
        cJSON_AddStringToObject(tc, "id", id);
        cJSON_AddStringToObject(tc, "type", "function");
        cJSON *fn = cJSON_AddObjectToObject(tc, "function");
        cJSON_AddStringToObject(fn, "name", r->calls[i].name);
        cJSON_AddStringToObject(fn, "arguments", r->calls[i].arguments);
        cJSON_AddItemToArray(tcs, tc);
    }
    return m;
}

static const char tools_json[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"bash\",\"description\":\"Run a command.\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}},"
    "\"required\":[\"command\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"finish\",\"description\":\"End.\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"answer\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}}}}}]";

/* Renders the conversation (system, user, the reply, one result per call)
 * as a text-mode request; returns the assistant message's text. */
static char *render(const lb_model_reply *r)
{
    cJSON *msgs = cJSON_CreateArray();
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "role", "system");
    cJSON_AddStringToObject(s, "content", "You are a helper.");
    cJSON_AddItemToArray(msgs, s);
    cJSON *u = cJSON_CreateObject();
    cJSON_AddStringToObject(u, "role", "user");
    cJSON_AddStringToObject(u, "content", "Do it.");
    cJSON_AddItemToArray(msgs, u);
    cJSON_AddItemToArray(msgs, assistant_of(r));
    for (size_t i = 0; i < r->n_calls; i++) {
        cJSON *t = cJSON_CreateObject();
        char id[16];
        snprintf(id, sizeof id, "c%zu", i);
        cJSON_AddStringToObject(t, "role", "tool");
        cJSON_AddStringToObject(t, "tool_call_id", id);
        cJSON_AddStringToObject(t, "content", "ok");
        cJSON_AddItemToArray(msgs, t);
    }
    cJSON *tools = cJSON_Parse(tools_json);
    cJSON *out = lb_text_mode_messages(msgs, tools);
    char *text = NULL;
    if (out) {
        check_tree(out);
        char *printed = cJSON_PrintUnformatted(out);
        if (printed)
            fz_assert_utf8(printed, strlen(printed));
        free(printed);
        /* the system prompt, the user message, then the assistant */
        const cJSON *a = cJSON_GetArrayItem(out, 2);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(a, "content");
        if (!cJSON_IsString(c))
            __builtin_trap();
        text = strdup(c->valuestring);
    }
    cJSON_Delete(out);
    cJSON_Delete(tools);
    cJSON_Delete(msgs);
    return text;
}

static int parse_content(const char *text, lb_model_reply *r)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *choices = cJSON_AddArrayToObject(body, "choices");
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, ch);
    cJSON *msg = cJSON_AddObjectToObject(ch, "message");
    cJSON_AddStringToObject(msg, "content", text);
    char *b = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    char err[512];
    int rc = b ? lb_parse_chat_response(b, strlen(b), r, err, sizeof err) : LB_E_NOMEM;
    free(b);
    return rc;
}

static void hostile_content(const uint8_t *data, size_t size)
{
    size_t len = 0;
    char *body = body_with_content(data, size, &len);
    if (!body)
        return;
    lb_model_reply r;
    char err[512];
    if (lb_parse_chat_response(body, len, &r, err, sizeof err) == LB_OK) {
        check(r.content);
        if (r.n_calls > LB_MODEL_MAX_CALLS)
            __builtin_trap();
        for (size_t i = 0; i < r.n_calls; i++) {
            if (!r.calls[i].name || !r.calls[i].arguments)
                __builtin_trap();
            check(r.calls[i].name);
            check(r.calls[i].arguments);
        }
        free(render(&r));
        lb_model_reply_free(&r);
    } else {
        fz_assert_utf8(err, strlen(err));
    }
    free(body);
}

/* ---- round trip ---- */

static int value_ok(const char *v)
{
    size_t n = strlen(v);
    return !strstr(v, "<parameter=") && !strstr(v, "</parameter>") && !strstr(v, "</function>") &&
           !(n && v[n - 1] == '\r');
}

static void round_trip(const uint8_t *data, size_t size)
{
    /* 0xFF separates calls, 0xFE pairs within a call:
     * name 0xFE key 0xFE value 0xFE key 0xFE value ... */
    lb_model_reply r;
    memset(&r, 0, sizeof r);
    r.calls = calloc(4, sizeof *r.calls);
    if (!r.calls)
        return;
    size_t i = 0;
    while (i <= size && r.n_calls < 4) {
        size_t j = i;
        while (j < size && data[j] != 0xFF)
            j++;
        /* one call: data[i..j) */
        char name[17];
        size_t nl = 0, k = i;
        for (; k < j && data[k] != 0xFE && nl < 16; k++)
            name[nl++] = (char)("abcdefghijklmnopqrstuvwxyz_0123456789"[data[k] % 37]);
        name[nl] = '\0';
        while (k < j && data[k] != 0xFE)
            k++;
        cJSON *args = cJSON_CreateObject();
        while (k < j) {
            k++; /* the 0xFE */
            size_t ks = k;
            while (k < j && data[k] != 0xFE)
                k++;
            char key[17];
            size_t kl = 0;
            for (size_t q = ks; q < k && kl < 16; q++)
                key[kl++] = (char)("abcdefghijklmnopqrstuvwxyz_"[data[q] % 27]);
            key[kl] = '\0';
            size_t vs = k < j ? k + 1 : k;
            k = vs;
            while (k < j && data[k] != 0xFE)
                k++;
            char *val = lb_utf8_sanitize((const char *)data + vs, k - vs, NULL);
            if (kl && val && value_ok(val) && !cJSON_GetObjectItemCaseSensitive(args, key))
                cJSON_AddStringToObject(args, key, val);
            free(val);
        }
        if (nl) {
            r.calls[r.n_calls].name = strdup(name);
            r.calls[r.n_calls].arguments = cJSON_PrintUnformatted(args);
            r.n_calls++;
        }
        cJSON_Delete(args);
        i = j + 1;
    }
    char *text = r.n_calls ? render(&r) : NULL;
    if (text) {
        lb_model_reply back;
        if (parse_content(text, &back) != LB_OK || back.n_calls != r.n_calls)
            __builtin_trap();
        for (size_t c = 0; c < r.n_calls; c++) {
            if (strcmp(back.calls[c].name, r.calls[c].name))
                __builtin_trap();
            cJSON *a = cJSON_Parse(r.calls[c].arguments), *b = cJSON_Parse(back.calls[c].arguments);
            if (!cJSON_Compare(a, b, 1))
                __builtin_trap();
            cJSON_Delete(a);
            cJSON_Delete(b);
        }
        lb_model_reply_free(&back);
    }
    free(text);
    lb_model_reply_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    if (data[0] & 1)
        round_trip(data + 1, size - 1);
    else
        hostile_content(data + 1, size - 1);
    return 0;
}
