/* Parsing model responses: OpenAI-compatible chat completions and
 * Anthropic messages. The body comes
 * from a model server we do not control: every field may be missing, of
 * the wrong type, huge or not UTF-8. */
#include "agent/toolcall_parse.h"

#include "agent/model_http.h"
#include "agent/prompts.h"
#include "agent/run_state.h"
#include "agent/sink.h"
#include "agent/text.h"
#include "agent/tokens.h"
#include "agent/trajectory.h"
#include "common/status.h"
#include "common/utf8.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_FIELD_MAX (4u << 20)     /* content, reasoning, arguments */
#define LB_NAME_MAX_LEN 128
#define LB_ID_MAX_LEN 256

void lb_model_reply_free(lb_model_reply *r)
{
    if (!r)
        return;
    free(r->content);
    free(r->reasoning);
    for (size_t i = 0; i < r->n_calls; i++) {
        free(r->calls[i].id);
        free(r->calls[i].name);
        free(r->calls[i].arguments);
    }
    free(r->calls);
    free(r->finish_reason);
    cJSON_Delete(r->blocks);
    lb_tokens_free(r->tokens);
    memset(r, 0, sizeof *r);
}

/* A sanitized, capped copy of a JSON string value (NULL if not a string
 * or empty when skip_empty). */
static char *str_field(const cJSON *v, size_t max, int skip_empty)
{
    if (!cJSON_IsString(v) || !v->valuestring)
        return NULL;
    const char *s = v->valuestring;
    size_t n = strlen(s);
    if (skip_empty && n == 0)
        return NULL;
    if (n > max)
        n = max;
    return lb_utf8_sanitize(s, n, NULL);
}

/* True when part is {"type": type, ...}; any part when type is NULL. */
static int part_is(const cJSON *part, const char *type)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "type");
    return !type || (cJSON_IsString(t) && !strcmp(t->valuestring, type));
}

/* The `key` strings of the parts of an array (only parts of `type` when
 * type is not NULL), joined, capped and sanitized; NULL when none. */
static char *join_parts(const cJSON *v, const char *type, const char *key)
{
    size_t total = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, v)
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, key);
        if (cJSON_IsString(t) && part_is(part, type))
            total += strlen(t->valuestring);
    }
    if (!total)
        return NULL;
    if (total > LB_FIELD_MAX)
        total = LB_FIELD_MAX;
    char *joined = malloc(total + 1);
    if (!joined)
        return NULL;
    size_t o = 0;
    cJSON_ArrayForEach(part, v)
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, key);
        if (!cJSON_IsString(t) || !part_is(part, type))
            continue;
        size_t l = strlen(t->valuestring);
        if (l > total - o)
            l = total - o;
        memcpy(joined + o, t->valuestring, l);
        o += l;
    }
    char *out = lb_utf8_sanitize(joined, o, NULL);
    free(joined);
    return out;
}

/* content is a string, null, or (some servers) an array of parts
 * [{type:"text", text:"..."}]. */
static char *content_field(const cJSON *v)
{
    if (cJSON_IsString(v))
        return str_field(v, LB_FIELD_MAX, 1);
    return cJSON_IsArray(v) ? join_parts(v, NULL, "text") : NULL;
}

static int64_t int_field(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e15)
        return -1;
    return (int64_t)v->valuedouble;
}

/* One call from its id, name and arguments members, whatever the shape
 * around them (OpenAI tool_calls[i] or an Anthropic tool_use block). */
static int parse_call(const cJSON *id, const cJSON *name, const cJSON *args, lb_toolcall *c)
{
    memset(c, 0, sizeof *c);
    c->id = str_field(id, LB_ID_MAX_LEN, 1);
    c->name = str_field(name, LB_NAME_MAX_LEN, 0);
    if (!c->name)
        c->name = strdup("");
    if (cJSON_IsString(args)) {
        /* over the cap we keep the text cut, which then fails validation
         * with a clear message rather than silently losing a field */
        c->arguments = str_field(args, LB_FIELD_MAX, 0);
    } else if (cJSON_IsObject(args)) {
        /* some servers send the arguments already parsed */
        char *txt = cJSON_PrintUnformatted(args);
        if (txt) {
            c->arguments = lb_utf8_sanitize(txt, strlen(txt), NULL);
            free(txt);
        }
    } else if (!args || cJSON_IsNull(args)) {
        c->arguments = strdup("{}");
    } else {
        /* a number, an array ...: hand it on as text; validation names it */
        char *txt = cJSON_PrintUnformatted(args);
        c->arguments = txt ? txt : strdup("");
    }
    if (!c->name || !c->arguments)
        return LB_E_NOMEM;
    return LB_OK;
}

/* The "error" member servers send with 200 or 4xx: {"error":{"message"}},
 * {"error":"text"} or {"detail":"text"}. */
static int error_message(const cJSON *root, char *err, size_t errsz)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *msg = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "message") : e;
    if (!cJSON_IsString(msg))
        msg = cJSON_GetObjectItemCaseSensitive(root, "detail");
    if (!cJSON_IsString(msg))
        return 0;
    char *s = lb_strdup_trunc(msg->valuestring, 300);
    char *z = s ? lb_utf8_sanitize(s, strlen(s), NULL) : NULL;
    snprintf(err, errsz, "%s", z ? z : "(unreadable message)");
    free(z);
    free(s);
    return 1;
}

void lb_model_error_text(const char *body, size_t len, char *out, size_t outsz)
{
    out[0] = '\0';
    if (!body || !len)
        return;
    cJSON *root = len <= LB_MODEL_MAX_RESPONSE ? cJSON_ParseWithLength(body, len) : NULL;
    int found = root && error_message(root, out, outsz);
    cJSON_Delete(root);
    if (!found) {
        size_t n = len < 300 ? len : 300;
        char *z = lb_utf8_sanitize(body, n, NULL);
        snprintf(out, outsz, "%s%s", z ? z : "", len > n ? "..." : "");
        free(z);
    }
    /* the copy into out may have cut a character in two */
    lb_utf8_trim_partial(out);
    /* one line, whatever the server sent */
    for (char *q = out; *q; q++)
        if ((unsigned char)*q < 0x20)
            *q = ' ';
}

/* ---- tool calls written as text ---------------------------------------- */
/* Servers without a tool-call parser hand the model's calls back inside
 * the content. Two shapes are common and recognised, tolerantly (missing
 * closing tags, code fences, arguments at the top level):
 *   <tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>   (Hermes, Qwen)
 *   <function=bash><parameter=command>ls</parameter></function>               (Qwen3-Coder, the paper)
 * Parameter values of the second shape are strings; the argument checker
 * turns "3" or "[1, 5]" into numbers and arrays where the schema says so. */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    return p;
}

/* A value between tags: one leading and one trailing newline belong to
 * the layout, not to the value. */
static char *tag_value(const char *a, const char *b)
{
    if (a < b && *a == '\n')
        a++;
    if (b > a && b[-1] == '\n')
        b--;
    if (b > a && b[-1] == '\r')
        b--;
    return lb_utf8_sanitize(a, (size_t)(b - a), NULL);
}

/* A tag's name or key: also tolerates <function="bash"> and <parameter = path>. */
static char *tag_name(const char *a, const char *b)
{
    while (a < b && (*a == ' ' || *a == '"' || *a == '\'' || *a == '='))
        a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '"' || b[-1] == '\'' || b[-1] == '\n' || b[-1] == '\r'))
        b--;
    return lb_utf8_sanitize(a, (size_t)(b - a), NULL);
}

/* Parses "<function=NAME>...</function>" at p; returns where it ended. */
static const char *parse_xml_call(const char *p, const char *limit, lb_toolcall *c)
{
    p += strlen("<function=");
    const char *gt = strchr(p, '>');
    if (!gt || gt > limit || gt - p > LB_NAME_MAX_LEN)
        return NULL;
    c->name = tag_name(p, gt);
    cJSON *args = cJSON_CreateObject();
    const char *q = gt + 1;
    const char *fend = strstr(q, "</function>");
    if (!fend || fend > limit)
        fend = limit;
    for (;;) {
        const char *ps = strstr(q, "<parameter=");
        if (!ps || ps >= fend)
            break;
        const char *kend = strchr(ps, '>');
        if (!kend || kend >= fend)
            break;
        const char *vs = kend + 1;
        const char *ve = strstr(vs, "</parameter>");
        const char *next = strstr(vs, "<parameter=");
        if (!ve || ve > fend || (next && next < ve))
            ve = next && next < fend ? next : fend;
        char *key = tag_name(ps + strlen("<parameter="), kend);
        char *val = tag_value(vs, ve);
        if (key && val && *key)
            cJSON_AddItemToObject(args, key, cJSON_CreateString(val));
        free(key);
        free(val);
        q = ve;
        if (!strncmp(q, "</parameter>", 12))
            q += 12;
    }
    c->arguments = cJSON_PrintUnformatted(args);
    cJSON_Delete(args);
    return fend < limit ? fend + strlen("</function>") : limit;
}

/* Parses the JSON inside <tool_call>...</tool_call>. */
static int parse_json_call(const char *a, const char *b, lb_toolcall *c)
{
    a = skip_ws(a);
    if (!strncmp(a, "```", 3)) { /* a code fence, with or without "json" */
        const char *nl = memchr(a, '\n', (size_t)(b - a));
        a = nl ? nl + 1 : a + 3;
        const char *fence = NULL;
        for (const char *f = a; f + 3 <= b; f++)
            if (!strncmp(f, "```", 3))
                fence = f;
        if (fence)
            b = fence;
    }
    cJSON *o = cJSON_ParseWithLength(a, (size_t)(b - a));
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    if (!cJSON_IsString(name)) {
        cJSON_Delete(o);
        return -1;
    }
    c->name = str_field(name, LB_NAME_MAX_LEN, 0);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "arguments");
    if (!args)
        args = cJSON_GetObjectItemCaseSensitive(o, "parameters");
    if (cJSON_IsString(args)) {
        c->arguments = str_field(args, LB_FIELD_MAX, 0);
    } else if (args) {
        c->arguments = cJSON_PrintUnformatted(args);
    } else {
        /* the arguments at the top level, beside the name */
        cJSON_DeleteItemFromObjectCaseSensitive(o, "name");
        c->arguments = cJSON_PrintUnformatted(o);
    }
    cJSON_Delete(o);
    return 0;
}

/* Removes code fences left empty once the calls inside were taken out
 * ("```xml\n\n```"), in place. */
static void drop_empty_fences(char *s)
{
    char *p = s;
    while ((p = strstr(p, "```")) != NULL) {
        char *q = p + 3;
        while (*q && (isalnum((unsigned char)*q) || *q == '_' || *q == '-'))
            q++;
        q = (char *)skip_ws(q);
        if (strncmp(q, "```", 3)) {
            p += 3;
            continue;
        }
        memmove(p, q + 3, strlen(q + 3) + 1);
    }
}

/* "finish(...)" written as text on the last line(s) of a reply, the way
 * models without function calling often end: finish(), finish("42"),
 * finish(answer="42"), finish(answer='x'), finish({"answer": "42"}),
 * finish(42). Only when it starts a line and nothing but whitespace,
 * backticks or a full stop follows its closing parenthesis. Returns the
 * start of the call in s (the prose ends there) or NULL. */
static const char *text_finish_call(const char *s, lb_toolcall *c)
{
    const char *at = NULL;
    for (const char *p = s; (p = strstr(p, "finish(")) != NULL; p++) {
        const char *b = p;
        while (b > s && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '`'))
            b--;
        if (b == s || b[-1] == '\n')
            at = p;
    }
    if (!at)
        return NULL;
    const char *close = strrchr(at, ')');
    if (!close)
        return NULL;
    for (const char *t = close + 1; *t; t++)
        if (!strchr(" \t\r\n`.;", *t))
            return NULL;
    const char *a = skip_ws(at + strlen("finish("));
    const char *b = close;
    while (b > a && strchr(" \t\r\n", b[-1]))
        b--;
    cJSON *args = NULL;
    if (a == b) {
        args = cJSON_CreateObject();
    } else if (*a == '{') {
        args = cJSON_ParseWithLength(a, (size_t)(b - a));
        if (!cJSON_IsObject(args)) {
            cJSON_Delete(args);
            return NULL;
        }
    } else {
        if (!strncmp(a, "answer", 6)) { /* answer="..." or answer: "..." */
            const char *k = skip_ws(a + 6);
            if (*k == '=' || *k == ':')
                a = skip_ws(k + 1);
        }
        char *val = NULL;
        if (b - a >= 2 && (*a == '"' || *a == '\'') && b[-1] == *a) {
            cJSON *js = *a == '"' ? cJSON_ParseWithLength(a, (size_t)(b - a)) : NULL;
            val = cJSON_IsString(js) ? lb_utf8_sanitize(js->valuestring, strlen(js->valuestring), NULL)
                                     : lb_utf8_sanitize(a + 1, (size_t)(b - a - 2), NULL);
            cJSON_Delete(js);
        } else {
            val = lb_utf8_sanitize(a, (size_t)(b - a), NULL);
        }
        args = cJSON_CreateObject();
        if (val)
            cJSON_AddStringToObject(args, "answer", val);
        free(val);
    }
    c->name = strdup("finish");
    c->arguments = cJSON_PrintUnformatted(args);
    cJSON_Delete(args);
    if (!c->name || !c->arguments) {
        free(c->name);
        free(c->arguments);
        c->name = c->arguments = NULL;
        return NULL;
    }
    /* a fence opened just before the call belongs to it */
    while (at > s && (at[-1] == '`' || at[-1] == ' ' || at[-1] == '\t'))
        at--;
    return at;
}

/* Moves calls found in r->content into r->calls and leaves the prose. */
static void parse_text_calls(lb_model_reply *r)
{
    const char *s = r->content;
    if (!s)
        return;
    if (!strstr(s, "<tool_call>") && !strstr(s, "<function=")) {
        lb_toolcall c;
        memset(&c, 0, sizeof c);
        const char *at = text_finish_call(s, &c);
        if (!at)
            return;
        free(r->calls);
        r->calls = calloc(1, sizeof *r->calls);
        if (!r->calls) {
            free(c.name);
            free(c.arguments);
            return;
        }
        r->calls[0] = c;
        r->n_calls = 1;
        char *prose = strndup(s, (size_t)(at - s));
        if (prose)
            drop_empty_fences(prose);
        const char *a = prose ? skip_ws(prose) : "";
        size_t al = strlen(a);
        while (al && strchr(" \t\r\n`", a[al - 1]))
            al--;
        char *kept = al ? strndup(a, al) : NULL;
        free(prose);
        free(r->content);
        r->content = kept;
        return;
    }
    const char *end = s + strlen(s);
    lb_toolcall found[LB_MODEL_MAX_CALLS];
    size_t n = 0;
    char *prose = malloc(strlen(s) + 1);
    size_t plen = 0;
    if (!prose)
        return;
    const char *p = s;
    while (*p && n < LB_MODEL_MAX_CALLS) {
        const char *tc = strstr(p, "<tool_call>");
        const char *fn = strstr(p, "<function=");
        const char *at = tc && (!fn || tc < fn) ? tc : fn;
        if (!at)
            break;
        memcpy(prose + plen, p, (size_t)(at - p));
        plen += (size_t)(at - p);
        lb_toolcall c;
        memset(&c, 0, sizeof c);
        const char *next = NULL;
        if (at == tc) {
            const char *in = at + strlen("<tool_call>");
            const char *close = strstr(in, "</tool_call>");
            const char *stop = close ? close : end;
            const char *inner = skip_ws(in);
            if (!strncmp(inner, "<function=", 10)) {
                if (parse_xml_call(inner, stop, &c))
                    next = stop;
            } else if (parse_json_call(in, stop, &c) == 0) {
                next = stop;
            }
            if (next && close)
                next = close + strlen("</tool_call>");
        } else {
            next = parse_xml_call(at, end, &c);
        }
        if (!next || !c.name || !c.arguments) {
            free(c.name);
            free(c.arguments);
            /* not a call after all: keep the text and look further on */
            size_t l = at == tc ? strlen("<tool_call>") : strlen("<function=");
            memcpy(prose + plen, at, l);
            plen += l;
            p = at + l;
            continue;
        }
        found[n++] = c;
        p = next;
    }
    if (n == 0) {
        free(prose);
        return;
    }
    size_t rest = strlen(p);
    memcpy(prose + plen, p, rest);
    plen += rest;
    prose[plen] = '\0';
    drop_empty_fences(prose);
    free(r->calls); /* an array of non-objects may have left an empty one */
    r->calls = calloc(n, sizeof *r->calls);
    if (!r->calls) {
        for (size_t i = 0; i < n; i++) {
            free(found[i].name);
            free(found[i].arguments);
        }
        free(prose);
        return;
    }
    memcpy(r->calls, found, n * sizeof *found);
    r->n_calls = n;
    /* the markup now lives in tool_calls; keep only the prose around it */
    const char *a = skip_ws(prose);
    size_t al = strlen(a);
    while (al && (a[al - 1] == ' ' || a[al - 1] == '\n' || a[al - 1] == '\r' || a[al - 1] == '\t'))
        al--;
    free(r->content);
    r->content = al ? strndup(a, al) : NULL;
    free(prose);
}

/* True when text is JSON that stops in the middle: a string or an object
 * or array still open at its end (an answer cut off in transit). */
static int json_cut_off(const char *p, size_t len)
{
    long depth = 0;
    int in_str = 0, esc = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = p[i];
        if (in_str) {
            if (esc)
                esc = 0;
            else if (ch == '\\')
                esc = 1;
            else if (ch == '"')
                in_str = 0;
        } else if (ch == '"') {
            in_str = 1;
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '}' || ch == ']') {
            if (--depth < 0)
                return 0;
        }
    }
    return in_str || depth > 0;
}

/* The response body as a JSON object, or NULL with a sentence in err when
 * it is empty, too big, not an object, or an error body of any provider. */
static cJSON *open_body(const char *body, size_t len, char *err, size_t errsz)
{
    if (!body || len == 0) {
        snprintf(err, errsz, "The model endpoint sent an empty response.");
        return NULL;
    }
    if (len > LB_MODEL_MAX_RESPONSE) {
        snprintf(err, errsz, "The model endpoint sent a response over %u MiB.",
                 LB_MODEL_MAX_RESPONSE >> 20);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!cJSON_IsObject(root)) {
        /* say which of the usual accidents it was: a page of a proxy or a
         * wrong URL, an answer cut short, or JSON of another shape */
        const char *p = body;
        while (p < body + len && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
            p++;
        size_t at = end && end >= body && end <= body + len ? (size_t)(end - body) : 0;
        if (root)
            snprintf(err, errsz, "The model endpoint sent JSON that is not an object.");
        else if (p < body + len && *p != '{' && *p != '[') {
            char shown[160];
            lb_model_error_text(p, (size_t)(body + len - p), shown, sizeof shown);
            snprintf(err, errsz, "The model endpoint sent a response that is not JSON: \"%s\"", shown);
        } else if (json_cut_off(body, len))
            snprintf(err, errsz, "The model endpoint sent JSON that is cut off: it ends early, after %zu bytes.", len);
        else
            snprintf(err, errsz, "The model endpoint sent invalid JSON (an error at byte %zu of %zu).", at, len);
        cJSON_Delete(root);
        return NULL;
    }
    char emsg[400];
    if (error_message(root, emsg, sizeof emsg)) {
        snprintf(err, errsz, "The model endpoint returned an error: %s", emsg);
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

typedef int (*reply_fields)(const cJSON *root, lb_model_reply *r, char *err, size_t errsz);

/* What every API shares around its own fields: open_body's checks, token
 * counts "not said" until found, and never a half-filled reply on failure. */
static int parse_reply(const char *body, size_t len, lb_model_reply *r, char *err, size_t errsz,
                       reply_fields fields, int want_tokens)
{
    memset(r, 0, sizeof *r);
    r->prompt_tokens = r->completion_tokens = -1;
    cJSON *root = open_body(body, len, err, errsz);
    int rc = root ? fields(root, r, err, errsz) : LB_E_PROTO;
    if (rc == LB_OK && want_tokens)
        rc = lb_tokens_parse(root, &r->tokens);
    cJSON_Delete(root);
    if (rc != LB_OK)
        lb_model_reply_free(r);
    if (rc == LB_E_NOMEM)
        snprintf(err, errsz, "Out of memory while reading the model response.");
    return rc;
}

static int openai_fields(const cJSON *root, lb_model_reply *r, char *err, size_t errsz)
{
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
    const cJSON *choice = cJSON_GetArrayItem(choices, 0);
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(choice, "message");
    if (!cJSON_IsObject(msg)) {
        snprintf(err, errsz, "The model endpoint sent a response without choices[0].message.");
        return LB_E_PROTO;
    }
    r->content = content_field(cJSON_GetObjectItemCaseSensitive(msg, "content"));
    r->reasoning = str_field(cJSON_GetObjectItemCaseSensitive(msg, "reasoning_content"), LB_FIELD_MAX, 1);
    if (!r->reasoning)
        r->reasoning = str_field(cJSON_GetObjectItemCaseSensitive(msg, "reasoning"), LB_FIELD_MAX, 1);
    r->finish_reason = str_field(cJSON_GetObjectItemCaseSensitive(choice, "finish_reason"), 64, 1);

    const cJSON *tcs = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
    int n = cJSON_IsArray(tcs) ? cJSON_GetArraySize(tcs) : 0;
    if (n > LB_MODEL_MAX_CALLS)
        n = LB_MODEL_MAX_CALLS;
    if (n > 0) {
        r->calls = calloc((size_t)n, sizeof *r->calls);
        if (!r->calls)
            return LB_E_NOMEM;
        const cJSON *tc;
        cJSON_ArrayForEach(tc, tcs)
        {
            if (r->n_calls == (size_t)n)
                break;
            if (!cJSON_IsObject(tc))
                continue; /* not a call at all: nothing to answer */
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
            int rc = parse_call(cJSON_GetObjectItemCaseSensitive(tc, "id"),
                                cJSON_GetObjectItemCaseSensitive(fn, "name"),
                                cJSON_GetObjectItemCaseSensitive(fn, "arguments"), &r->calls[r->n_calls]);
            r->n_calls++;
            if (rc != LB_OK)
                return rc;
        }
    }
    if (r->n_calls == 0)
        parse_text_calls(r);
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
    if (cJSON_IsObject(usage)) {
        r->prompt_tokens = int_field(usage, "prompt_tokens");
        r->completion_tokens = int_field(usage, "completion_tokens");
    }
    return LB_OK;
}

int lb_parse_chat_response(const char *body, size_t len, lb_model_reply *r, char *err,
                           size_t errsz)
{
    return parse_reply(body, len, r, err, errsz, openai_fields, 0);
}

int lb_parse_chat_response_tokens(const char *body, size_t len, lb_model_reply *r, int want_tokens, char *err,
                                  size_t errsz)
{
    return parse_reply(body, len, r, err, errsz, openai_fields, want_tokens);
}

/* An Anthropic Messages API response:
 *   {"type":"message","content":[{"type":"text","text"},
 *     {"type":"thinking","thinking","signature"}, {"type":"redacted_thinking","data"},
 *     {"type":"tool_use","id","name","input":{...}}], "stop_reason",
 *    "usage":{"input_tokens","output_tokens"}}
 * Thinking blocks are also kept verbatim in r->blocks: the API checks their
 * signatures when they come back with the tool results, so not a byte of
 * them may change. */
static int anthropic_fields(const cJSON *root, lb_model_reply *r, char *err, size_t errsz)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(root, "content");
    if (!cJSON_IsArray(content)) {
        snprintf(err, errsz, "The model endpoint sent a response without a content array.");
        return LB_E_PROTO;
    }
    r->content = join_parts(content, "text", "text");
    r->reasoning = join_parts(content, "thinking", "thinking");
    r->finish_reason = str_field(cJSON_GetObjectItemCaseSensitive(root, "stop_reason"), 64, 1);
    size_t n = 0;
    const cJSON *b;
    cJSON_ArrayForEach(b, content)
    {
        if (part_is(b, "tool_use") && n < LB_MODEL_MAX_CALLS)
            n++;
        if (part_is(b, "thinking") || part_is(b, "redacted_thinking")) {
            if (!r->blocks && !(r->blocks = cJSON_CreateArray()))
                return LB_E_NOMEM;
            cJSON *dup = cJSON_Duplicate(b, 1);
            if (!dup)
                return LB_E_NOMEM;
            cJSON_AddItemToArray(r->blocks, dup);
        }
    }
    if (n && !(r->calls = calloc(n, sizeof *r->calls)))
        return LB_E_NOMEM;
    cJSON_ArrayForEach(b, content)
    {
        if (r->n_calls == n)
            break;
        if (!part_is(b, "tool_use"))
            continue;
        int rc = parse_call(cJSON_GetObjectItemCaseSensitive(b, "id"),
                            cJSON_GetObjectItemCaseSensitive(b, "name"),
                            cJSON_GetObjectItemCaseSensitive(b, "input"), &r->calls[r->n_calls]);
        r->n_calls++;
        if (rc != LB_OK)
            return rc;
    }
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
    if (cJSON_IsObject(usage)) {
        /* cached prompt tokens are counted apart but are prompt all the same */
        r->prompt_tokens = int_field(usage, "input_tokens");
        int64_t cw = int_field(usage, "cache_creation_input_tokens");
        int64_t cr = int_field(usage, "cache_read_input_tokens");
        if (r->prompt_tokens >= 0)
            r->prompt_tokens += (cw > 0 ? cw : 0) + (cr > 0 ? cr : 0);
        r->completion_tokens = int_field(usage, "output_tokens");
    }
    return LB_OK;
}

int lb_parse_anthropic_response(const char *body, size_t len, lb_model_reply *r, char *err,
                                size_t errsz)
{
    return parse_reply(body, len, r, err, errsz, anthropic_fields, 0);
}
