/* The Streamable HTTP transport of MCP (see mcp_http.h), revision
 * 2025-11-25 and the two before it. A client POSTs one JSON-RPC message;
 * a request is answered with one JSON body, or, when it asked for progress
 * (params._meta.progressToken), with an event stream that carries the
 * notifications/progress and then the response. Notifications and
 * responses from the client get 202. There is no server-initiated stream:
 * GET /mcp is a 405, as the protocol allows.
 *
 * Sessions: initialize makes one (Mcp-Session-Id, 32 random hex); every
 * later message names it; DELETE ends it. A session belongs to the
 * credential that opened it: another credential gets the 404 of an
 * unknown session. The table is bounded (LB_MCP_SESSIONS_MAX), each
 * caller's share too, and sessions end when idle or old. */
#include "mcp/mcp_http.h"

#include "common/config.h" /* checksrc: allow unused-include (r->cfg->sandbox_api_token needs lb_config whole) */
#include "common/log.h"
#include "common/token.h"
#include "common/util.h"
#include "entry.h"
#include "mcp/mcp_resources.h"
#include "mcp/mcp_rpc.h"
#include "mcp/mcp_tools.h"
#include "web/auth.h"
#include "web/http.h"
#include "web/req_body.h"

#include <fcgiapp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TOKEN_MAX 4096
#define WHO_MAX 96

typedef struct mcp_session {
    char id[33];              /* "" when the slot is free */
    char who[WHO_MAX];        /* the credential that opened it */
    int64_t created_ms, used_ms;
} mcp_session;

static mcp_session sessions[LB_MCP_SESSIONS_MAX];
static pthread_mutex_t sessions_mu = PTHREAD_MUTEX_INITIALIZER;

/* tools/call requests that run now, so that notifications/cancelled
 * (another POST, on another thread) can reach them: a task_run that waits
 * stops waiting. A call that finds the table full runs uncancellable. */
#define INFLIGHT_MAX 256
typedef struct mcp_inflight {
    char session[33];         /* "" when free */
    char id[LB_MCP_ID_STR_MAX + 8]; /* the request's id as compact JSON ("\"a\"", "7") */
    int cancelled;            /* __atomic */
} mcp_inflight;
static mcp_inflight inflight[INFLIGHT_MAX];

static const char *const versions[] = {LB_MCP_PROTOCOL_LATEST, "2025-06-18", "2025-03-26"};

int lb_mcp_version_known(const char *v)
{
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
        if (!strcmp(v, versions[i]))
            return 1;
    return 0;
}

/* ---- who asks ---- */

/* Whether r's bearer token is the sandbox API token (compared as digests,
 * so its length and content do not show in the time taken). */
static int sandbox_token_given(lb_req *r)
{
    const char *want = r->cfg->sandbox_api_token;
    const char *h = lb_http_param(r, "HTTP_AUTHORIZATION");
    if (!want[0] || !h)
        return 0;
    while (*h == ' ' || *h == '\t')
        h++;
    if (strncasecmp(h, "Bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
        return 0;
    const char *tok = h + 6;
    while (*tok == ' ' || *tok == '\t')
        tok++;
    size_t n = strnlen(tok, TOKEN_MAX + 1);
    while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
        n--;
    if (!n || n > TOKEN_MAX)
        return 0;
    char a[LB_SHA256_HEX], b[LB_SHA256_HEX];
    if (lb_sha256_hex(tok, n, a) != LB_OK || lb_sha256_hex(want, strlen(want), b) != LB_OK)
        return 0;
    return lb_ct_equal(a, b, LB_SHA256_HEX - 1);
}

int lb_mcp_auth_ok(lb_req *r)
{
    r->user = NULL;
    if (sandbox_token_given(r))
        return 1;
    return lb_auth_request_ok(r);
}

static void caller(lb_req *r, char *who, size_t whosz)
{
    if (sandbox_token_given(r))
        snprintf(who, whosz, "token:sandbox");
    else if (r->user)
        snprintf(who, whosz, "user:%s", lb_auth_owner(r));
    else
        snprintf(who, whosz, "local");
}

/* ---- sessions ---- */

static int expired(const mcp_session *s, int64_t now)
{
    return now - s->used_ms > (int64_t)LB_MCP_SESSION_IDLE_S * 1000 ||
           now - s->created_ms > (int64_t)LB_MCP_SESSION_LIFE_S * 1000;
}

/* A new session of who into id: LB_OK, LB_E_TOOBIG when the table is
 * full of live sessions of others. */
static int session_open(const char *who, char id[33])
{
    char fresh[33];
    if (lb_random_hex(fresh, sizeof fresh, 16) != LB_OK)
        return LB_E_INTERNAL;
    int64_t now = lb_now_ms();
    int free_at = -1, mine = 0, oldest = -1;
    pthread_mutex_lock(&sessions_mu);
    for (int i = 0; i < LB_MCP_SESSIONS_MAX; i++) {
        mcp_session *s = &sessions[i];
        if (s->id[0] && expired(s, now))
            s->id[0] = '\0';
        if (!s->id[0]) {
            if (free_at < 0)
                free_at = i;
            continue;
        }
        if (strcmp(s->who, who))
            continue;
        mine++;
        if (oldest < 0 || s->used_ms < sessions[oldest].used_ms)
            oldest = i;
    }
    /* a client that opens session after session without ending them
     * (a restarted editor) ends its own oldest, never someone else's */
    if (mine >= LB_MCP_SESSIONS_PER_CALLER)
        free_at = oldest;
    int rc = LB_E_TOOBIG;
    if (free_at >= 0) {
        mcp_session *s = &sessions[free_at];
        snprintf(s->id, sizeof s->id, "%s", fresh);
        snprintf(s->who, sizeof s->who, "%s", who);
        s->created_ms = s->used_ms = now;
        snprintf(id, 33, "%s", fresh);
        rc = LB_OK;
    }
    pthread_mutex_unlock(&sessions_mu);
    return rc;
}

/* Finds session id of who and marks it used (end: removes it). 1 when
 * found; 0 when unknown, expired or another caller's. */
static int session_touch(const char *id, const char *who, int end)
{
    int found = 0;
    int64_t now = lb_now_ms();
    pthread_mutex_lock(&sessions_mu);
    for (int i = 0; i < LB_MCP_SESSIONS_MAX; i++) {
        mcp_session *s = &sessions[i];
        if (!s->id[0] || strcmp(s->id, id))
            continue;
        if (expired(s, now)) {
            s->id[0] = '\0';
            break;
        }
        if (strcmp(s->who, who))
            break;
        found = 1;
        s->used_ms = now;
        if (end)
            s->id[0] = '\0';
        break;
    }
    pthread_mutex_unlock(&sessions_mu);
    return found;
}

/* The request's id as compact JSON into out: 0, or -1 when it does not fit. */
static int id_key(const cJSON *id, char *out, size_t outsz)
{
    char *t = id ? cJSON_PrintUnformatted(id) : NULL;
    int ok = t && strlen(t) < outsz;
    if (ok)
        snprintf(out, outsz, "%s", t);
    free(t);
    return ok ? 0 : -1;
}

/* Registers a running call: its slot, or -1. */
static int inflight_add(const char *session, const cJSON *id)
{
    char key[LB_MCP_ID_STR_MAX + 8];
    if (id_key(id, key, sizeof key))
        return -1;
    int at = -1;
    pthread_mutex_lock(&sessions_mu);
    for (int i = 0; i < INFLIGHT_MAX && at < 0; i++)
        if (!inflight[i].session[0])
            at = i;
    if (at >= 0) {
        snprintf(inflight[at].session, sizeof inflight[at].session, "%s", session);
        snprintf(inflight[at].id, sizeof inflight[at].id, "%s", key);
        __atomic_store_n(&inflight[at].cancelled, 0, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&sessions_mu);
    return at;
}

static void inflight_remove(int at)
{
    if (at < 0)
        return;
    pthread_mutex_lock(&sessions_mu);
    inflight[at].session[0] = '\0';
    pthread_mutex_unlock(&sessions_mu);
}

/* notifications/cancelled: marks the session's call of params.requestId. */
static void inflight_cancel(const char *session, const cJSON *params)
{
    char key[LB_MCP_ID_STR_MAX + 8];
    if (id_key(cJSON_GetObjectItemCaseSensitive(params, "requestId"), key, sizeof key))
        return;
    pthread_mutex_lock(&sessions_mu);
    for (int i = 0; i < INFLIGHT_MAX; i++)
        if (inflight[i].session[0] && !strcmp(inflight[i].session, session) && !strcmp(inflight[i].id, key))
            __atomic_store_n(&inflight[i].cancelled, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&sessions_mu);
}

/* ---- answers ---- */

typedef struct mcp_out {
    lb_req *r;
    char session[33];
    cJSON *token;             /* the request's progressToken, or NULL */
    int sse;                  /* the answer is an event stream (head sent) */
    int broken;               /* the client went away */
    int cancelled;            /* the client cancelled the call: no response then */
    pthread_mutex_t mu;       /* notifications may come from a tool's thread */
} mcp_out;

static void session_header(const mcp_out *o, char *extra, size_t n)
{
    if (o->session[0])
        snprintf(extra, n, "Mcp-Session-Id: %s\r\n", o->session);
    else
        extra[0] = '\0';
}

/* An answer outside any stream: status with one JSON-RPC message. */
static void answer(lb_req *r, const mcp_out *o, int status, cJSON *msg)
{
    char extra[96];
    session_header(o, extra, sizeof extra);
    if (!msg) {
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    lb_http_json(r, status, msg, extra[0] ? extra : NULL);
    cJSON_Delete(msg);
}

static void answer_error(lb_req *r, const mcp_out *o, int status, const cJSON *id, int code, const char *message)
{
    answer(r, o, status, lb_mcp_rpc_error(id, code, message));
}

/* One message on the stream: "event: message", its data, flushed. */
static int sse_send(mcp_out *o, const cJSON *msg)
{
    char *text = cJSON_PrintUnformatted(msg);
    if (!text)
        return -1;
    pthread_mutex_lock(&o->mu);
    if (!o->broken) {
        FCGX_Stream *s = o->r->fcgi->out;
        /* compact JSON has no raw newline: one data line */
        if (FCGX_PutS("event: message\ndata: ", s) < 0 || FCGX_PutS(text, s) < 0 || FCGX_PutS("\n\n", s) < 0 ||
            FCGX_FFlush(s) < 0)
            o->broken = 1;
    }
    int rc = o->broken ? -1 : 0;
    pthread_mutex_unlock(&o->mu);
    free(text);
    return rc;
}

static int progress(lb_mcp_call *c, double p, double total, const char *message)
{
    mcp_out *o = c->transport;
    if (!o->token)
        return 0;
    cJSON *n = cJSON_CreateObject(), *params = n ? cJSON_AddObjectToObject(n, "params") : NULL;
    cJSON *tok = cJSON_Duplicate(o->token, 1);
    int ok = params && tok && cJSON_AddStringToObject(n, "jsonrpc", "2.0") &&
             cJSON_AddStringToObject(n, "method", "notifications/progress") &&
             cJSON_AddItemToObject(params, "progressToken", tok) && cJSON_AddNumberToObject(params, "progress", p) &&
             (total <= 0 || cJSON_AddNumberToObject(params, "total", total)) &&
             (!message || cJSON_AddStringToObject(params, "message", message));
    if (!ok && !cJSON_GetObjectItemCaseSensitive(params, "progressToken"))
        cJSON_Delete(tok);
    int rc = ok ? sse_send(o, n) : 0;
    cJSON_Delete(n);
    return rc;
}

/* ---- methods ---- */

static cJSON *initialize(const lb_mcp_msg *m)
{
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(m->params, "protocolVersion");
    /* the client's revision when we speak it, else our newest: the client
     * then decides whether it can go on */
    const char *v = cJSON_IsString(pv) && lb_mcp_version_known(pv->valuestring) ? pv->valuestring
                                                                                 : LB_MCP_PROTOCOL_LATEST;
    cJSON *o = cJSON_CreateObject();
    cJSON *caps = o ? cJSON_AddObjectToObject(o, "capabilities") : NULL;
    cJSON *tools = caps ? cJSON_AddObjectToObject(caps, "tools") : NULL;
    cJSON *res = caps ? cJSON_AddObjectToObject(caps, "resources") : NULL;
    cJSON *info = o ? cJSON_AddObjectToObject(o, "serverInfo") : NULL;
    if (!tools || !res || !info || !cJSON_AddStringToObject(o, "protocolVersion", v) ||
        !cJSON_AddBoolToObject(tools, "listChanged", 0) || !cJSON_AddBoolToObject(res, "listChanged", 0) ||
        !cJSON_AddBoolToObject(res, "subscribe", 0) || !cJSON_AddStringToObject(info, "name", "llmbox") ||
        !cJSON_AddStringToObject(info, "title", "llmbox sandboxes and agent tasks") ||
        !cJSON_AddStringToObject(info, "version", LLMBOX_VERSION) ||
        !cJSON_AddStringToObject(o, "instructions",
                                 "llmbox gives you Linux sandboxes (sandbox_create, sandbox_exec, sandbox_read_file, "
                                 "sandbox_write_file, sandbox_list, sandbox_destroy; they need the server's sandbox "
                                 "API token) and an agent that works on a task in a sandbox of its own (task_run, "
                                 "task_status, task_cancel; they need a user's token). A task's output files are "
                                 "resources: llmbox://tasks/<id>/artifacts/<path>.")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* tools/call: the tool's result, or a JSON-RPC error into *code/why. */
static cJSON *call_tool(lb_req *r, mcp_out *o, const lb_mcp_msg *m, int *code, const char **why)
{
    int at = -1;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(m->params, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(m->params, "arguments");
    if (!cJSON_IsString(name)) {
        *code = LB_RPC_INVALID_PARAMS;
        *why = "Invalid params: tools/call needs \"name\", the tool's name.";
        return NULL;
    }
    const lb_mcp_tool *t = lb_mcp_tool_find(name->valuestring);
    if (!t) {
        *code = LB_RPC_INVALID_PARAMS;
        *why = "Unknown tool: tools/list names the tools of this server.";
        return NULL;
    }
    if (args && !cJSON_IsObject(args)) {
        *code = LB_RPC_INVALID_PARAMS;
        *why = "Invalid params: \"arguments\" must be an object.";
        return NULL;
    }
    cJSON *empty = args ? NULL : cJSON_CreateObject();
    at = inflight_add(o->session, m->id);
    lb_mcp_call c = {.r = r, .args = args ? args : empty, .wants_progress = o->token != NULL,
                     .cancelled = at >= 0 ? &inflight[at].cancelled : NULL, .progress = progress, .transport = o};
    cJSON *res = c.args ? t->run(&c) : NULL;
    o->cancelled = at >= 0 && __atomic_load_n(&inflight[at].cancelled, __ATOMIC_SEQ_CST);
    inflight_remove(at);
    cJSON_Delete(empty);
    if (!res) {
        *code = LB_RPC_INTERNAL_ERROR;
        *why = "Internal error: the server ran out of memory answering the call.";
    }
    return res;
}

/* The answer to request m: a result, or an error in *code/why. */
static cJSON *dispatch(lb_req *r, mcp_out *o, const lb_mcp_msg *m, int *code, const char **why)
{
    const char *me = m->method;
    *code = LB_RPC_INTERNAL_ERROR;
    *why = "Internal error: out of memory.";
    if (!strcmp(me, "initialize"))
        return initialize(m);
    if (!strcmp(me, "ping"))
        return cJSON_CreateObject();
    if (!strcmp(me, "tools/list"))
        return lb_mcp_tools_list();
    if (!strcmp(me, "tools/call"))
        return call_tool(r, o, m, code, why);
    if (!strcmp(me, "resources/list"))
        return lb_mcp_resources_list(r);
    if (!strcmp(me, "resources/templates/list"))
        return lb_mcp_resource_templates();
    if (!strcmp(me, "resources/read")) {
        static _Thread_local char msg[1400];
        const cJSON *uri = cJSON_GetObjectItemCaseSensitive(m->params, "uri");
        if (!cJSON_IsString(uri)) {
            *code = LB_RPC_INVALID_PARAMS;
            *why = "Invalid params: resources/read needs \"uri\".";
            return NULL;
        }
        cJSON *item = NULL, *res = NULL, *arr = NULL;
        if (lb_mcp_resource_read(r, uri->valuestring, LB_MCP_RESOURCE_MAX, &item, code, msg, sizeof msg) != LB_OK) {
            *why = msg;
            return NULL;
        }
        res = cJSON_CreateObject();
        arr = res ? cJSON_AddArrayToObject(res, "contents") : NULL;
        if (!arr || !cJSON_AddItemToArray(arr, item)) {
            cJSON_Delete(item);
            cJSON_Delete(res);
            return NULL;
        }
        return res;
    }
    *code = LB_RPC_METHOD_NOT_FOUND;
    *why = "Method not found: this server offers initialize, ping, tools/list, tools/call, resources/list, "
           "resources/templates/list and resources/read.";
    return NULL;
}

/* ---- POST /mcp ---- */

static int accepts(const char *accept, const char *type)
{
    return !accept || strstr(accept, type) || strstr(accept, "*/*");
}

/* The params._meta.progressToken of m: a string or a number, or NULL. */
static const cJSON *progress_token(const lb_mcp_msg *m)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(m->params, "_meta");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
    return cJSON_IsString(t) || cJSON_IsNumber(t) ? t : NULL;
}

void lb_h_mcp_post(lb_req *r)
{
    mcp_out o = {.r = r};
    pthread_mutex_init(&o.mu, NULL);
    lb_buf body;
    lb_buf_init(&body, 0);
    lb_mcp_msg m;
    memset(&m, 0, sizeof m);
    cJSON *id = NULL;
    char who[WHO_MAX], msg[400];
    caller(r, who, sizeof who);
    const char *accept = lb_http_param(r, "HTTP_ACCEPT");
    const char *ct = r->content_type;
    if (strncasecmp(ct, "application/json", 16) || (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
        lb_http_drain(r);
        answer_error(r, &o, 415, NULL, LB_RPC_SERVER_ERROR,
                     "Unsupported Media Type: an MCP message is sent as Content-Type: application/json.");
        goto out;
    }
    if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream")) {
        lb_http_drain(r);
        answer_error(r, &o, 406, NULL, LB_RPC_SERVER_ERROR,
                     "Not Acceptable: the client must accept both application/json and text/event-stream.");
        goto out;
    }
    if (r->content_length > (int64_t)LB_MCP_BODY_MAX) {
        lb_http_drain(r);
        answer_error(r, &o, 413, NULL, LB_RPC_PARSE_ERROR,
                     "Parse error: the message is larger than the 8 MiB an MCP message may be.");
        goto out;
    }
    if (lb_req_body(r, LB_MCP_BODY_MAX, &body, "MCP message") != LB_OK)
        goto out; /* answered (413, 500) */
    int code = 0;
    if (lb_mcp_rpc_parse(body.data, body.len, &m, &code, &id, msg, sizeof msg) != LB_OK) {
        answer_error(r, &o, 400, id, code, msg);
        goto out;
    }
    const char *pv = lb_http_param(r, "HTTP_MCP_PROTOCOL_VERSION");
    const char *sid = lb_http_param(r, "HTTP_MCP_SESSION_ID");
    int is_init = m.kind == LB_MCP_REQUEST && !strcmp(m.method, "initialize");
    if (pv && !is_init && !lb_mcp_version_known(pv)) {
        snprintf(msg, sizeof msg, "Bad Request: unsupported MCP-Protocol-Version %.40s; this server speaks %s, "
                                  "2025-06-18 and 2025-03-26.", pv, LB_MCP_PROTOCOL_LATEST);
        answer_error(r, &o, 400, m.id, LB_RPC_SERVER_ERROR, msg);
        goto out;
    }
    if (is_init) {
        if (sid) {
            answer_error(r, &o, 400, m.id, LB_RPC_INVALID_REQUEST,
                         "Invalid Request: initialize opens a new session; send it without Mcp-Session-Id.");
            goto out;
        }
        int rc = session_open(who, o.session);
        if (rc != LB_OK) {
            answer_error(r, &o, 503, m.id, LB_RPC_SERVER_ERROR,
                         "The server holds as many MCP sessions as it may; try again later.");
            goto out;
        }
    } else if (!sid) {
        answer_error(r, &o, 400, m.id, LB_RPC_SERVER_ERROR,
                     "Bad Request: Mcp-Session-Id header is required; send initialize first to get one.");
        goto out;
    } else if (strlen(sid) != 32 || !session_touch(sid, who, 0)) {
        /* 404 tells the client to initialize again */
        answer_error(r, &o, 404, m.id, -32001, "Session not found: it ended or expired; initialize a new one.");
        goto out;
    } else {
        snprintf(o.session, sizeof o.session, "%s", sid);
    }
    if (m.kind != LB_MCP_REQUEST) {
        /* notifications (initialized, cancelled, progress) and the client's
         * answers: nothing here waits for them; a cancel reaches its call */
        if (m.kind == LB_MCP_NOTIFICATION && !strcmp(m.method, "notifications/cancelled"))
            inflight_cancel(o.session, m.params);
        char extra[96];
        session_header(&o, extra, sizeof extra);
        lb_http_head(r, 202, NULL, extra[0] ? extra : NULL);
        goto out;
    }
    const cJSON *tok = !strcmp(m.method, "tools/call") ? progress_token(&m) : NULL;
    if (tok && accepts(accept, "text/event-stream")) {
        o.token = cJSON_Duplicate(tok, 1);
        char extra[160];
        snprintf(extra, sizeof extra, "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\nMcp-Session-Id: %s\r\n",
                 o.session);
        lb_http_head(r, 200, "text/event-stream", extra);
        o.sse = 1;
    }
    const char *why = NULL;
    cJSON *result = dispatch(r, &o, &m, &code, &why);
    cJSON *reply = result ? lb_mcp_rpc_result(m.id, result) : lb_mcp_rpc_error(m.id, code, why);
    if (o.sse) {
        /* a cancelled request gets no response (the protocol says so); its
         * stream just ends */
        if (reply && !o.cancelled && sse_send(&o, reply) < 0)
            lb_info("web: mcp: the client left before the answer of %s", m.method);
        cJSON_Delete(reply);
    } else {
        answer(r, &o, 200, reply);
    }
out:
    cJSON_Delete(o.token);
    cJSON_Delete(id);
    lb_mcp_msg_free(&m);
    lb_buf_free(&body);
    pthread_mutex_destroy(&o.mu);
}

/* ---- DELETE /mcp ---- */

void lb_h_mcp_delete(lb_req *r)
{
    mcp_out o = {.r = r};
    char who[WHO_MAX];
    caller(r, who, sizeof who);
    const char *sid = lb_http_param(r, "HTTP_MCP_SESSION_ID");
    lb_http_drain(r);
    if (!sid) {
        answer_error(r, &o, 400, NULL, LB_RPC_SERVER_ERROR, "Bad Request: Mcp-Session-Id header is required.");
        return;
    }
    if (strlen(sid) != 32 || !session_touch(sid, who, 1)) {
        answer_error(r, &o, 404, NULL, -32001, "Session not found: it ended or expired.");
        return;
    }
    lb_http_head(r, 204, NULL, NULL);
}
