/* libFuzzer target for the JSON-RPC messages of MCP (lb_mcp_rpc_parse,
 * server/mcp/mcp_rpc.c): any bytes a client POSTs to /mcp. Promises: the
 * parse never reads past the body (ASan); an accepted message is an
 * object whose "jsonrpc" is "2.0", sorted consistently (a request has a
 * method and a string or whole-number id, a notification a method and no
 * id, a response an id and exactly one of result and error), its params an
 * object or absent; a refusal leaves nothing behind, says why in a
 * sentence, and is a parse error or an invalid request and nothing else;
 * the answers built for it (result and error) print as JSON that parses
 * back with the same id. */
#include "common/status.h"
#include "mcp/mcp_rpc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_answer(cJSON *reply, const cJSON *id)
{
    char *text = reply ? cJSON_PrintUnformatted(reply) : NULL;
    cJSON *back = text ? cJSON_Parse(text) : NULL;
    const cJSON *bid = cJSON_GetObjectItemCaseSensitive(back, "id");
    if (reply && (!back || !(id ? cJSON_Compare(bid, id, 1) : cJSON_IsNull(bid))))
        __builtin_trap();
    cJSON_Delete(back);
    free(text);
    cJSON_Delete(reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lb_mcp_msg m;
    int code = 0;
    cJSON *id = NULL;
    char msg[400] = "";
    int rc = lb_mcp_rpc_parse((const char *)data, size, &m, &code, &id, msg, sizeof msg);
    if (rc != LB_OK) {
        if (m.root || !msg[0] || (code != LB_RPC_PARSE_ERROR && code != LB_RPC_INVALID_REQUEST))
            __builtin_trap();
        if (id && !cJSON_IsString(id) && !cJSON_IsNumber(id))
            __builtin_trap();
        check_answer(lb_mcp_rpc_error(id, code, msg), id);
        cJSON_Delete(id);
        return 0;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m.root, "jsonrpc");
    if (!cJSON_IsObject(m.root) || !cJSON_IsString(v) || strcmp(v->valuestring, "2.0") || code)
        __builtin_trap();
    if (m.params && !cJSON_IsObject(m.params))
        __builtin_trap();
    if (m.id && !cJSON_IsString(m.id) && !cJSON_IsNumber(m.id))
        __builtin_trap();
    int has_result = cJSON_GetObjectItemCaseSensitive(m.root, "result") != NULL;
    int has_error = cJSON_GetObjectItemCaseSensitive(m.root, "error") != NULL;
    switch (m.kind) {
    case LB_MCP_REQUEST:
        if (!m.method || !m.method[0] || !m.id || has_result || has_error)
            __builtin_trap();
        break;
    case LB_MCP_NOTIFICATION:
        if (!m.method || m.id)
            __builtin_trap();
        break;
    case LB_MCP_RESPONSE:
        if (m.method || !m.id || has_result == has_error)
            __builtin_trap();
        break;
    default: __builtin_trap();
    }
    check_answer(lb_mcp_rpc_result(m.id, cJSON_CreateObject()), m.id);
    check_answer(lb_mcp_rpc_error(m.id, LB_RPC_METHOD_NOT_FOUND, "Method not found."), m.id);
    cJSON_Delete(id);
    lb_mcp_msg_free(&m);
    return 0;
}
