/* JSON-RPC 2.0 messages of MCP (see mcp_rpc.h): the parse of a client's
 * body, hostile bytes, within the JSON budget of web/req_body.c, and the
 * answers. The rules are JSON-RPC's: "jsonrpc" is exactly "2.0"; an id is
 * a string or a whole number (MCP forbids null); a method is a string;
 * params, when there, an object (MCP's are all objects). */
#include "mcp/mcp_rpc.h"

#include "web/req_body.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int fail(int *code, int c, char *msg, size_t msgsz, const char *what)
{
    *code = c;
    snprintf(msg, msgsz, "%s", what);
    return c == LB_RPC_PARSE_ERROR ? LB_E_INVAL : LB_E_PROTO;
}

/* A usable id: a string of at most LB_MCP_ID_STR_MAX bytes, or a whole
 * number that a double holds exactly. */
static int id_ok(const cJSON *id)
{
    if (cJSON_IsString(id))
        return strlen(id->valuestring) <= LB_MCP_ID_STR_MAX;
    if (cJSON_IsNumber(id)) {
        double v = id->valuedouble;
        return isfinite(v) && v == floor(v) && fabs(v) <= 9007199254740991.0;
    }
    return 0;
}

int lb_mcp_rpc_parse(const char *body, size_t n, lb_mcp_msg *m, int *code, cJSON **id_out, char *msg, size_t msgsz)
{
    memset(m, 0, sizeof *m);
    *id_out = NULL;
    *code = 0;
    if (n > LB_MCP_BODY_MAX)
        return fail(code, LB_RPC_PARSE_ERROR, msg, msgsz, "The message is larger than the 8 MiB an MCP message may be.");
    int prc = 0;
    char why[300] = "";
    cJSON *root = lb_json_parse_checked(body ? body : "", n, "JSON-RPC message", LB_MCP_JSON_VALUES,
                                        LB_MCP_JSON_DEPTH, &prc, why, sizeof why);
    if (!root) {
        char s[400];
        snprintf(s, sizeof s, "Parse error: %s", why[0] ? why : "the body is not JSON.");
        return fail(code, LB_RPC_PARSE_ERROR, msg, msgsz, s);
    }
    if (cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return fail(code, LB_RPC_INVALID_REQUEST, msg, msgsz,
                    "Invalid request: JSON-RPC batches are not part of this MCP revision; send one message per POST.");
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fail(code, LB_RPC_INVALID_REQUEST, msg, msgsz, "Invalid request: a JSON-RPC message is a JSON object.");
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
    if (id && id_ok(id))
        *id_out = cJSON_Duplicate(id, 1);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "jsonrpc");
    const char *bad = NULL;
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0"))
        bad = "Invalid request: \"jsonrpc\" must be \"2.0\".";
    else if (id && !id_ok(id))
        bad = "Invalid request: \"id\" must be a string (at most 256 bytes) or a whole number.";
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(root, "method");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(root, "result");
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (!bad && method) {
        if (!cJSON_IsString(method) || !method->valuestring[0] || strlen(method->valuestring) > LB_MCP_METHOD_MAX)
            bad = "Invalid request: \"method\" must be a non-empty string of at most 128 bytes.";
        else if (params && !cJSON_IsObject(params))
            bad = "Invalid request: \"params\" must be an object.";
        else if (result || error)
            bad = "Invalid request: a request has no \"result\" or \"error\".";
    } else if (!bad) {
        if (!id || (!result == !error))
            bad = "Invalid request: a message needs a \"method\" (a request or notification), or an \"id\" with "
                  "exactly one of \"result\" and \"error\" (a response).";
    }
    if (bad) {
        cJSON_Delete(root);
        return fail(code, LB_RPC_INVALID_REQUEST, msg, msgsz, bad);
    }
    m->root = root;
    m->id = id;
    m->params = params;
    if (method) {
        m->method = method->valuestring;
        m->kind = id ? LB_MCP_REQUEST : LB_MCP_NOTIFICATION;
    } else {
        m->kind = LB_MCP_RESPONSE;
    }
    return LB_OK;
}

void lb_mcp_msg_free(lb_mcp_msg *m)
{
    cJSON_Delete(m->root);
    memset(m, 0, sizeof *m);
}

static cJSON *envelope(const cJSON *id)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON *idc = id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull();
    if (!cJSON_AddStringToObject(o, "jsonrpc", "2.0") || !idc || !cJSON_AddItemToObject(o, "id", idc)) {
        cJSON_Delete(idc);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *lb_mcp_rpc_result(const cJSON *id, cJSON *result)
{
    cJSON *o = result ? envelope(id) : NULL;
    if (!o || !cJSON_AddItemToObject(o, "result", result)) {
        cJSON_Delete(o);
        cJSON_Delete(result);
        return NULL;
    }
    return o;
}

cJSON *lb_mcp_rpc_error(const cJSON *id, int code, const char *message)
{
    cJSON *o = envelope(id);
    cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
    if (!e || !cJSON_AddNumberToObject(e, "code", code) || !cJSON_AddStringToObject(e, "message", message)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
