/* An MCP session: the handshake, requests matched to responses by id,
 * and what else a server sends kept within bounds; the contract is
 * mcpc_session.h. */
#include "mcpclient/mcpc_session.h"

#include "common/log.h"
#include "common/util.h"
#include "mcpclient/mcpc_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_JSONRPC_METHOD_NOT_FOUND (-32601)

void lb_mcpc_session_close(lb_mcpc_session *s)
{
    if (s->t)
        s->t->close(s->t);
    s->t = NULL;
}

/* Answers a request of the server's; a failure to answer is the server's
 * to notice (its own timeout), never a reason to stop ours. */
static void answer_request(lb_mcpc_session *s, const lb_mcpc_msg *m, int64_t deadline)
{
    char *text = !strcmp(m->method, "ping")
                     ? lb_mcpc_msg_answer(m->id_item, cJSON_CreateObject(), 0, NULL)
                     : lb_mcpc_msg_answer(m->id_item, NULL, LB_JSONRPC_METHOD_NOT_FOUND,
                                          "This client offers no such method.");
    char err[300];
    if (text && s->t->send(s->t, text, strlen(text), deadline, err, sizeof err) != LB_OK)
        lb_debug("mcp %s: the answer to its request %s was not sent: %s", s->name, m->method, err);
    free(text);
}

/* Reads until the response to id comes. */
static int wait_for(lb_mcpc_session *s, int64_t id, const char *method, int64_t deadline, cJSON **result,
                    char *err, size_t errsz)
{
    size_t other = 0;
    for (;;) {
        const char *text;
        size_t len;
        char why[400] = "";
        int rc = s->t->recv(s->t, deadline, &text, &len, why, sizeof why);
        if (rc == LB_E_TIMEOUT) {
            if (lb_mono_ms() < deadline) /* HTTP: the answer was read to its end without our response */
                snprintf(err, errsz, "The MCP server %s answered %s without its response.", s->name, method);
            else
                snprintf(err, errsz, "The MCP server %s did not answer %s within %d s.", s->name, method,
                         s->timeout_ms / 1000);
            return LB_E_TIMEOUT;
        }
        if (rc != LB_OK) {
            snprintf(err, errsz, "The MCP server %s failed during %s: %s.", s->name, method, why);
            return rc;
        }
        lb_mcpc_msg m;
        rc = lb_mcpc_msg_parse(text, len, &m, why, sizeof why);
        if (rc == LB_OK && m.kind == LB_MCPC_RESPONSE && m.id_ours && m.id == id) {
            if (m.error) {
                char e[400];
                lb_mcpc_msg_error_text(m.error, e, sizeof e);
                snprintf(err, errsz, "The MCP server %s answered %s with an error: %s.", s->name, method, e);
                lb_mcpc_msg_free(&m);
                return LB_E_PROTO;
            }
            *result = cJSON_DetachItemViaPointer(m.root, (cJSON *)m.result);
            lb_mcpc_msg_free(&m);
            return *result ? LB_OK : LB_E_NOMEM;
        }
        if (rc == LB_OK && m.kind == LB_MCPC_REQUEST)
            answer_request(s, &m, deadline);
        else if (rc == LB_OK && m.kind == LB_MCPC_NOTIFICATION && !strcmp(m.method, "notifications/tools/list_changed") &&
                 !s->list_changed++)
            lb_info("mcp %s: the server changed its tool list; this task keeps the tools it was offered at its "
                    "start", s->name);
        else if (rc != LB_OK) {
            /* stdout (or the answer) carries messages only: a text that is
             * not one, or over the budget, may be our response, so the
             * request fails now rather than at its timeout */
            snprintf(err, errsz, "The MCP server %s sent a message this client refuses during %s: %s.", s->name,
                     method, why);
            return rc == LB_E_NOMEM ? rc : LB_E_PROTO;
        }
        lb_mcpc_msg_free(&m);
        s->other++;
        if (++other > LB_MCPC_OTHER_MAX) {
            snprintf(err, errsz, "The MCP server %s sent more than %d other messages while %s waited for its "
                     "response; the request was given up.", s->name, LB_MCPC_OTHER_MAX, method);
            return LB_E_TOOBIG;
        }
    }
}

/* One request, sent once. */
static int request_once(lb_mcpc_session *s, const char *method, cJSON *params, cJSON **result, char *err,
                        size_t errsz)
{
    *result = NULL;
    if (!s->t) {
        cJSON_Delete(params);
        snprintf(err, errsz, "The MCP server %s is not running.", s->name);
        return LB_E_UNAVAILABLE;
    }
    int64_t id = ++s->next_id;
    int64_t deadline = lb_mono_ms() + s->timeout_ms;
    char *text = lb_mcpc_msg_request(id, method, params);
    if (!text) {
        snprintf(err, errsz, "Out of memory.");
        return LB_E_NOMEM;
    }
    char why[400] = "";
    int rc = s->t->send(s->t, text, strlen(text), deadline, why, sizeof why);
    free(text);
    if (rc == LB_E_TIMEOUT) {
        snprintf(err, errsz, "The MCP server %s did not answer %s within %d s.", s->name, method,
                 s->timeout_ms / 1000);
        return rc;
    }
    if (rc != LB_OK) {
        snprintf(err, errsz, "The MCP server %s could not be sent %s: %s.", s->name, method, why);
        return rc;
    }
    return wait_for(s, id, method, deadline, result, err, errsz);
}

/* initialize and notifications/initialized on s->t. */
static int handshake(lb_mcpc_session *s, char *err, size_t errsz)
{
    lb_mcpc_transport *t = s->t;
    const char *name = s->name;
    cJSON *p = cJSON_CreateObject();
    cJSON *info = p ? cJSON_AddObjectToObject(p, "clientInfo") : NULL;
    if (!info || !cJSON_AddStringToObject(p, "protocolVersion", LB_MCPC_PROTOCOL) ||
        !cJSON_AddObjectToObject(p, "capabilities") || !cJSON_AddStringToObject(info, "name", "llmbox") ||
        !cJSON_AddStringToObject(info, "version", "1")) {
        cJSON_Delete(p);
        snprintf(err, errsz, "Out of memory.");
        return LB_E_NOMEM;
    }
    cJSON *res = NULL;
    int rc = request_once(s, "initialize", p, &res, err, errsz);
    if (rc != LB_OK)
        return rc;
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "protocolVersion"));
    const char *sn = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "serverInfo"), "name"));
    if (!cJSON_IsObject(res) || !v || !*v || strlen(v) >= sizeof t->proto ||
        strspn(v, "0123456789-") != strlen(v)) {
        cJSON_Delete(res);
        snprintf(err, errsz, "The MCP server %s answered initialize without a protocol version this client can "
                 "read.", name);
        return LB_E_PROTO;
    }
    snprintf(t->proto, sizeof t->proto, "%s", v);
    size_t k = 0;
    for (const char *q = sn ? sn : ""; *q && k + 1 < sizeof s->server_name; q++)
        s->server_name[k++] = (*q > 0x20 && *q < 0x7f) ? *q : '?';
    s->server_name[k] = '\0';
    cJSON_Delete(res);
    char *note = lb_mcpc_msg_notification("notifications/initialized");
    char why[400] = "";
    rc = note ? t->send(t, note, strlen(note), lb_mono_ms() + s->timeout_ms, why, sizeof why) : LB_E_NOMEM;
    free(note);
    if (rc != LB_OK) {
        snprintf(err, errsz, "The MCP server %s could not be sent notifications/initialized: %s.", name, why);
        return rc;
    }
    return LB_OK;
}

int lb_mcpc_session_start(lb_mcpc_session *s, const char *name, lb_mcpc_transport *t, int timeout_ms, char *err,
                          size_t errsz)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->t = t;
    s->timeout_ms = timeout_ms > 0 ? timeout_ms : 60000;
    int rc = handshake(s, err, errsz);
    if (rc != LB_OK)
        lb_mcpc_session_close(s);
    return rc;
}

int lb_mcpc_session_request(lb_mcpc_session *s, const char *method, cJSON *params, cJSON **result, char *err,
                            size_t errsz)
{
    cJSON *again = params && s->t && s->t->forget ? cJSON_Duplicate(params, 1) : NULL;
    int rc = request_once(s, method, params, result, err, errsz);
    if (rc == LB_E_NOTFOUND && s->t && s->t->forget) {
        /* the server forgot the session (HTTP 404): the protocol's answer
         * is a new session, and the request once more in it */
        lb_info("mcp %s: the server no longer knows the session; starting a new one", s->name);
        s->t->forget(s->t);
        rc = handshake(s, err, errsz);
        if (rc == LB_OK) {
            rc = request_once(s, method, again, result, err, errsz);
            again = NULL; /* request_once took it */
        }
    }
    cJSON_Delete(again);
    return rc;
}
