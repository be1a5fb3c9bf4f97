/* libFuzzer target for the messages an MCP server sends the client
 * (server/mcpclient/mcpc_msg.c), and for what the client makes of a
 * response: the tools/list checks (mcpc_tools.c) and the tools/call
 * result (mcpc_result.c). Input: one message's bytes. Promises: a refused
 * message leaves nothing and says why; an accepted one is sorted
 * consistently (a response has exactly one of result and error, id_ours
 * only for a whole-number id, a request or notification a method); the
 * tools taken from any result are within their caps (count, schema size
 * and depth, description) and named SERVER__tool of the allowed
 * characters, and a refused list leaves the set as it was; the
 * observation text of any result is valid UTF-8 within its cap, and every
 * image kept is base64 within its cap. */
#include "mcpclient/mcpc_msg.h"
#include "mcpclient/mcpc_result.h"
#include "mcpclient/mcpc_tools.h"
#include "fuzz_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_tools(const cJSON *result)
{
    lb_mcpc_toolset ts = {0};
    size_t bytes = 0;
    char note[400], err[400];
    int rc = lb_mcpc_tools_add(&ts, "srv", result, &bytes, note, sizeof note, err, sizeof err);
    if (rc != LB_OK && (ts.n || !err[0]))
        __builtin_trap();
    if (ts.n > LB_MCPC_TOOLS_MAX)
        __builtin_trap();
    for (size_t i = 0; i < ts.n; i++) {
        const lb_mcpc_tool *t = &ts.t[i];
        size_t n = strlen(t->offered);
        if (strncmp(t->offered, "srv__", 5) || n > LB_MCPC_NAME_MAX || strcmp(t->offered + 5, t->name) ||
            strspn(t->offered, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != n)
            __builtin_trap();
        if (strlen(t->description) > LB_MCPC_DESC_MAX || !cJSON_IsObject(t->schema) ||
            lb_mcpc_json_depth(t->schema, 100) > LB_MCPC_SCHEMA_DEPTH)
            __builtin_trap();
        fz_assert_utf8(t->description, strlen(t->description));
        char *s = cJSON_PrintUnformatted(t->schema);
        if (s && strlen(s) > LB_MCPC_SCHEMA_MAX)
            __builtin_trap();
        free(s);
    }
    lb_mcpc_tools_free(&ts);
}

static void check_result(const cJSON *result)
{
    lb_mcpc_result r;
    char err[400] = "";
    int rc = lb_mcpc_result_parse(result, &r, err, sizeof err);
    if (rc == LB_OK) {
        size_t n = strlen(r.text);
        if (n > LB_MCPC_TEXT_MAX)
            __builtin_trap();
        fz_assert_utf8(r.text, n);
        if (r.n_images > LB_MCPC_IMAGES)
            __builtin_trap();
        for (int i = 0; i < r.n_images; i++) {
            size_t bn = strlen(r.images[i].b64);
            if (!bn || bn > LB_MCPC_IMAGE_MAX)
                __builtin_trap();
        }
    } else if (!err[0] || r.text || r.n_images) {
        __builtin_trap();
    }
    lb_mcpc_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lb_mcpc_msg m;
    char err[400] = "";
    int rc = lb_mcpc_msg_parse((const char *)data, size, &m, err, sizeof err);
    if (rc != LB_OK) {
        if (m.root || !err[0])
            __builtin_trap();
        return 0;
    }
    switch (m.kind) {
    case LB_MCPC_RESPONSE:
        if (m.method || !m.id_item || !m.result == !m.error)
            __builtin_trap();
        if (m.id_ours && !cJSON_IsNumber(m.id_item))
            __builtin_trap();
        if (m.result) {
            check_tools(m.result);
            check_result(m.result);
        } else {
            char text[200];
            lb_mcpc_msg_error_text(m.error, text, sizeof text);
            fz_assert_utf8(text, strlen(text));
        }
        break;
    case LB_MCPC_REQUEST:
        if (!m.method || !m.method[0] || !m.id_item) /* answered: the text must print */
            __builtin_trap();
        {
            char *a = lb_mcpc_msg_answer(m.id_item, NULL, -32601, "no");
            cJSON *back = a ? cJSON_Parse(a) : NULL;
            if (a && !cJSON_Compare(cJSON_GetObjectItemCaseSensitive(back, "id"), m.id_item, 1))
                __builtin_trap();
            cJSON_Delete(back);
            free(a);
        }
        break;
    case LB_MCPC_NOTIFICATION:
        if (!m.method || m.id_item)
            __builtin_trap();
        break;
    default: __builtin_trap();
    }
    lb_mcpc_msg_free(&m);
    return 0;
}
