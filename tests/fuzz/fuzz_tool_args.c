/* libFuzzer target for the check of a tool call's JSON arguments against
 * the tool's schema (lb_tool_validate_args, server/agent/plugin_host.c):
 * the arguments are the model's text, hostile. The first byte picks the
 * schema (the real bash, file_editor and finish ones, and one that uses
 * every type the checker knows); the rest is the arguments text, sanitized
 * to UTF-8 as the reply parser hands it on.
 *
 * Promise on success: an object with every required key, every value of
 * a known property of the type(s) its schema gives (after the checker's
 * "3" -> 3 coercion), string enums kept, and the re-serialized text the
 * plugin gets is UTF-8 and parses back to the same text. On refusal: a
 * non-empty UTF-8 sentence (it becomes the model's observation). */
#include "agent/plugin_host.h"
#include "common/utf8.h"
#include "common/status.h"
#include "fuzz_util.h"

#include <math.h>
#include <stdlib.h>

static const char *const schemas[] = {
    /* plugins/bash/bash.c */
    "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}},\"required\":[\"command\"]}",
    /* plugins/file_editor/file_editor.c */
    "{\"type\":\"object\",\"properties\":{"
    "\"command\":{\"type\":\"string\",\"enum\":[\"view\",\"create\",\"str_replace\",\"insert\",\"undo_edit\"]},"
    "\"path\":{\"type\":\"string\"},\"file_text\":{\"type\":\"string\"},\"old_str\":{\"type\":\"string\"},"
    "\"new_str\":{\"type\":\"string\"},\"insert_line\":{\"type\":\"integer\"},"
    "\"view_range\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}},\"required\":[\"command\",\"path\"]}",
    /* plugins/finish/finish.c */
    "{\"type\":\"object\",\"properties\":{\"answer\":{\"type\":\"string\"}},\"required\":[]}",
    /* every type, type lists, enums, odd schema members */
    "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\"},\"i\":{\"type\":\"integer\"},"
    "\"b\":{\"type\":\"boolean\"},\"o\":{\"type\":\"object\"},\"a\":{\"type\":\"array\"},\"z\":{\"type\":\"null\"},"
    "\"u\":{\"type\":[\"integer\",\"string\"]},\"e\":{\"type\":\"string\",\"enum\":[\"x\",\"y\",3]},"
    "\"w\":{\"type\":\"weird\"},\"t\":{\"type\":7},\"l\":{\"type\":[]}},\"required\":[\"i\",5,\"e\"]}",
};
#define N_SCHEMAS (sizeof schemas / sizeof schemas[0])

static lb_tool_entry entries[N_SCHEMAS];
static llmbox_tool tools[N_SCHEMAS];

static void setup(void)
{
    static const char *const names[] = {"bash", "file_editor", "finish", "every_type"};
    for (size_t i = 0; i < N_SCHEMAS; i++) {
        tools[i].name = names[i];
        entries[i].tool = &tools[i];
        entries[i].schema = cJSON_Parse(schemas[i]);
        if (!entries[i].schema)
            abort();
    }
}

static int matches(const cJSON *v, const char *type)
{
    if (!strcmp(type, "string"))
        return cJSON_IsString(v);
    if (!strcmp(type, "integer"))
        return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
    if (!strcmp(type, "number"))
        return cJSON_IsNumber(v) && isfinite(v->valuedouble);
    if (!strcmp(type, "boolean"))
        return cJSON_IsBool(v);
    if (!strcmp(type, "array"))
        return cJSON_IsArray(v);
    if (!strcmp(type, "object"))
        return cJSON_IsObject(v);
    if (!strcmp(type, "null"))
        return cJSON_IsNull(v);
    return 1;
}

static void check_ok(const cJSON *schema, const cJSON *obj)
{
    if (!cJSON_IsObject(obj))
        __builtin_trap();
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(schema, "required"))
        if (cJSON_IsString(r) && !cJSON_GetObjectItemCaseSensitive(obj, r->valuestring))
            __builtin_trap();
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *v;
    cJSON_ArrayForEach(v, obj)
    {
        const cJSON *prop = v->string ? cJSON_GetObjectItemCaseSensitive(props, v->string) : NULL;
        if (!prop)
            continue;
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(prop, "type");
        if (cJSON_IsString(type) && !matches(v, type->valuestring))
            __builtin_trap();
        if (cJSON_IsArray(type) && cJSON_GetArraySize(type) > 0) {
            int any = 0, strings = 0;
            const cJSON *t;
            cJSON_ArrayForEach(t, type)
            {
                if (cJSON_IsString(t)) {
                    strings++;
                    any |= matches(v, t->valuestring);
                }
            }
            if (strings && !any)
                __builtin_trap();
        }
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(prop, "enum");
        if (cJSON_IsArray(en) && cJSON_IsString(v)) {
            int found = 0;
            const cJSON *e;
            cJSON_ArrayForEach(e, en)
                found |= cJSON_IsString(e) && !strcmp(e->valuestring, v->valuestring);
            if (!found)
                __builtin_trap();
        }
    }
    /* what the plugin gets */
    char *canon = cJSON_PrintUnformatted(obj);
    if (!canon)
        return;
    fz_assert_utf8(canon, strlen(canon));
    /* parses back to the same text (cJSON_Compare is no judge of objects
     * nested inside values that repeat a key, which the check leaves be) */
    cJSON *back = cJSON_Parse(canon);
    char *again = back ? cJSON_PrintUnformatted(back) : NULL;
    if (!back || (again && strcmp(again, canon)))
        __builtin_trap();
    free(again);
    cJSON_Delete(back);
    free(canon);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!entries[0].schema)
        setup();
    if (size < 1)
        return 0;
    const lb_tool_entry *e = &entries[data[0] % N_SCHEMAS];
    size_t n = 0;
    char *args = lb_utf8_sanitize((const char *)data + 1, size - 1, &n);
    if (!args)
        return 0;
    cJSON *parsed = NULL;
    char err[1024];
    err[0] = '\0';
    int rc = lb_tool_validate_args(e, args, n, &parsed, err, sizeof err);
    if (rc == LB_OK) {
        check_ok(e->schema, parsed);
    } else {
        if (parsed || !err[0] || strnlen(err, sizeof err) == sizeof err)
            __builtin_trap();
        fz_assert_utf8(err, strlen(err));
    }
    cJSON_Delete(parsed);
    free(args);
    return 0;
}
