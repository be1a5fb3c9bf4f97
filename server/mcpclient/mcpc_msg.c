/* JSON-RPC messages of an MCP server, parsed within a budget; the
 * contract is mcpc_msg.h. */
#include "mcpclient/mcpc_msg.h"

#include "common/utf8.h"
#include "web/req_body.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lb_mcpc_msg_free(lb_mcpc_msg *m)
{
    cJSON_Delete(m->root);
    memset(m, 0, sizeof *m);
}

static int refuse(lb_mcpc_msg *m, char *err, size_t errsz, const char *why)
{
    lb_mcpc_msg_free(m);
    snprintf(err, errsz, "%s", why);
    return LB_E_INVAL;
}

int lb_mcpc_msg_parse(const char *s, size_t n, lb_mcpc_msg *m, char *err, size_t errsz)
{
    memset(m, 0, sizeof *m);
    if (n > LB_MCPC_MSG_MAX) {
        snprintf(err, errsz, "a message of %zu bytes is over the limit of %u", n, LB_MCPC_MSG_MAX);
        return LB_E_TOOBIG;
    }
    int rc = LB_OK;
    char why[300];
    m->root = lb_json_parse_checked(s, n, "message", LB_MCPC_MSG_VALUES, LB_MCPC_MSG_DEPTH, &rc, why, sizeof why);
    if (!m->root) {
        snprintf(err, errsz, "%s", why);
        return rc == LB_E_NOMEM ? LB_E_NOMEM : LB_E_INVAL;
    }
    if (!cJSON_IsObject(m->root))
        return refuse(m, err, errsz, "a message that is not a JSON object (batches are not sent to this client)");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->root, "jsonrpc");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0"))
        return refuse(m, err, errsz, "a message whose \"jsonrpc\" is not \"2.0\"");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(m->root, "id");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(m->root, "method");
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(m->root, "result");
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(m->root, "error");
    if (id && !cJSON_IsString(id) && !cJSON_IsNumber(id) && !cJSON_IsNull(id))
        return refuse(m, err, errsz, "a message whose id is neither a string nor a number");
    if (method) {
        if (!cJSON_IsString(method) || !method->valuestring[0] || result || error)
            return refuse(m, err, errsz, "a message with a method that is not a non-empty string, or with a "
                                         "result or error beside it");
        m->method = method->valuestring;
        m->kind = id && !cJSON_IsNull(id) ? LB_MCPC_REQUEST : LB_MCPC_NOTIFICATION;
        m->id_item = m->kind == LB_MCPC_REQUEST ? id : NULL;
        return LB_OK;
    }
    if (!id || !result == !error)
        return refuse(m, err, errsz, "a message that is neither a request, a notification nor a response with "
                                     "exactly one of result and error");
    if (error && !cJSON_IsObject(error))
        return refuse(m, err, errsz, "a response whose error is not an object");
    m->kind = LB_MCPC_RESPONSE;
    m->id_item = id;
    m->result = result;
    m->error = error;
    double d = cJSON_IsNumber(id) ? id->valuedouble : NAN;
    if (isfinite(d) && d == floor(d) && fabs(d) < 9e15) {
        m->id_ours = 1;
        m->id = (int64_t)d;
    }
    return LB_OK;
}

static char *print(cJSON *o)
{
    char *t = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return t;
}

char *lb_mcpc_msg_request(int64_t id, const char *method, cJSON *params)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "jsonrpc", "2.0") || !cJSON_AddNumberToObject(o, "id", (double)id) ||
        !cJSON_AddStringToObject(o, "method", method)) {
        cJSON_Delete(params);
        cJSON_Delete(o);
        return NULL;
    }
    if (params && !cJSON_AddItemToObject(o, "params", params)) {
        cJSON_Delete(params);
        cJSON_Delete(o);
        return NULL;
    }
    return print(o);
}

char *lb_mcpc_msg_notification(const char *method)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "jsonrpc", "2.0") || !cJSON_AddStringToObject(o, "method", method)) {
        cJSON_Delete(o);
        return NULL;
    }
    return print(o);
}

char *lb_mcpc_msg_answer(const cJSON *id, cJSON *result, int code, const char *message)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *idc = cJSON_Duplicate(id, 1);
    if (!o || !idc || !cJSON_AddStringToObject(o, "jsonrpc", "2.0") || !cJSON_AddItemToObject(o, "id", idc)) {
        cJSON_Delete(idc);
        cJSON_Delete(result);
        cJSON_Delete(o);
        return NULL;
    }
    if (result) {
        if (!cJSON_AddItemToObject(o, "result", result)) {
            cJSON_Delete(result);
            cJSON_Delete(o);
            return NULL;
        }
    } else {
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        if (!e || !cJSON_AddNumberToObject(e, "code", code) || !cJSON_AddStringToObject(e, "message", message)) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return print(o);
}

void lb_mcpc_msg_error_text(const cJSON *error, char *out, size_t outsz)
{
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(error, "code");
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(error, "message"));
    char shown[300];
    size_t k = 0;
    const char *q = msg ? msg : "no message";
    for (; *q && k + 1 < sizeof shown; q++)
        shown[k++] = ((unsigned char)*q < 0x20 || *q == 0x7f) ? ' ' : *q;
    shown[k] = '\0';
    if (*q)
        lb_utf8_trim_partial(shown); /* cut: not inside a UTF-8 sequence */
    if (cJSON_IsNumber(code) && fabs(code->valuedouble) < 1e9)
        snprintf(out, outsz, "%s (%d)", shown, (int)code->valuedouble);
    else
        snprintf(out, outsz, "%s", shown);
}
