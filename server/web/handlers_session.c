/* POST /api/login, POST /api/logout, GET /api/session: the page's login
 * with an API token, and the session cookie it gets (see auth.c).
 *
 * The cookie: a random 256-bit id, HttpOnly (no script reads it),
 * SameSite=Strict (no other site's page sends it), Path=/api/, Max-Age =
 * session_ttl_s, and Secure when the request came over TLS. The database
 * keeps only its SHA-256. */
#include "web/handlers_session.h"

#include "web/auth.h"
#include "web/http.h"
#include "common/config.h"
#include "store/store.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/status.h"
#include "common/token.h"
#include "common/util.h"
#include "web/req_body.h"

#include <cjson/cJSON.h>
#include <fcgiapp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define LB_LOGIN_BODY_MAX 4096
#define LB_SESSIONS_PER_USER 64 /* the newest; older ones end */

static void lb_cookie_header(lb_req *r, const char *value, int max_age, char *out, size_t outsz)
{
    snprintf(out, outsz, "Set-Cookie: llmbox_session=%s; Path=/api/; Max-Age=%d; HttpOnly; SameSite=Strict%s\r\n",
             value, max_age, lb_auth_cookie_secure(r) ? "; Secure" : "");
}

static cJSON *lb_limits_json(const lb_user_cfg *u)
{
    cJSON *l = cJSON_CreateObject();
    if (!l)
        return NULL;
    cJSON_AddNumberToObject(l, "max_tasks", u->max_tasks);
    cJSON_AddNumberToObject(l, "tasks_per_minute", u->tasks_per_minute);
    cJSON_AddNumberToObject(l, "upload_bytes", (double)u->max_upload_bytes);
    return l;
}

/* {login_required, user, via, csrf_token?, expires_ms?, limits?} */
static cJSON *lb_session_json(const lb_config *cfg, const lb_user_cfg *u, const char *via, const char *sid,
                              int64_t expires_ms)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddBoolToObject(o, "login_required", cfg->n_users > 0);
    if (u)
        cJSON_AddStringToObject(o, "user", u->name);
    else
        cJSON_AddNullToObject(o, "user");
    if (via)
        cJSON_AddStringToObject(o, "via", via);
    else
        cJSON_AddNullToObject(o, "via");
    if (sid) {
        char csrf[LB_SHA256_HEX];
        lb_auth_csrf_token(sid, csrf);
        cJSON_AddStringToObject(o, "csrf_token", csrf);
        cJSON_AddNumberToObject(o, "expires_ms", (double)expires_ms);
    }
    if (u)
        cJSON_AddItemToObject(o, "limits", lb_limits_json(u));
    return o;
}

static int lb_is_json(const char *ct)
{
    while (*ct == ' ')
        ct++;
    return !strncasecmp(ct, "application/json", 16) && (ct[16] == '\0' || ct[16] == ';' || ct[16] == ' ');
}

void lb_h_login(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    lb_buf body;
    lb_buf_init(&body, LB_LOGIN_BODY_MAX);
    cJSON *in = NULL, *out = NULL;
    if (!cfg->n_users) {
        lb_http_drain(r);
        lb_http_error(r, 404, "not_found",
                      "This llmbox has no users configured, so there is no login: it answers on 127.0.0.1 to "
                      "anyone there.");
        goto done;
    }
    /* A login from another site's page would sign the visitor in as the
     * attacker (login CSRF): JSON only (a cross-site form cannot send it
     * without a CORS preflight, which this server never allows), and
     * never with Sec-Fetch-Site cross-site or same-site. */
    const char *site = lb_http_param(r, "HTTP_SEC_FETCH_SITE");
    if (site && *site && strcmp(site, "same-origin") && strcmp(site, "none")) {
        lb_http_drain(r);
        lb_http_error(r, 403, "csrf", "A login must come from the llmbox page itself, not from another site.");
        goto done;
    }
    if (!lb_is_json(r->content_type)) {
        lb_http_drain(r);
        lb_http_error(r, 415, NULL, "Send the login as JSON: {\"token\": \"<your API token>\"}.");
        goto done;
    }
    if (r->content_length > LB_LOGIN_BODY_MAX) {
        lb_http_drain(r);
        lb_http_error(r, 413, NULL, "The login request is larger than %d bytes.", LB_LOGIN_BODY_MAX);
        goto done;
    }
    char chunk[1024];
    int n, big = 0;
    while ((n = FCGX_GetStr(chunk, sizeof chunk, r->fcgi->in)) > 0)
        if (lb_buf_append(&body, chunk, (size_t)n) != LB_OK)
            big = 1;
    if (big) {
        lb_http_error(r, 413, NULL, "The login request is larger than %d bytes.", LB_LOGIN_BODY_MAX);
        goto done;
    }
    /* through the one budgeted parser of client JSON (req_body.c); a
     * login is {"token": "..."}: a handful of values */
    char why[400];
    int prc;
    in = body.data ? lb_json_parse_checked(body.data, body.len, "login request", 64, 8, &prc, why, sizeof why) : NULL;
    const char *tok = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "token"));
    if (!tok || !*tok) {
        lb_http_error(r, 400, NULL, "Send the login as JSON with your API token: {\"token\": \"lbx_...\"}.");
        goto done;
    }
    size_t tlen = strlen(tok);
    while (tlen && (tok[tlen - 1] == ' ' || tok[tlen - 1] == '\n' || tok[tlen - 1] == '\r'))
        tlen--; /* pasted with a line break */
    while (tlen && (*tok == ' ' || *tok == '\t')) {
        tok++;
        tlen--;
    }
    const lb_user_cfg *u = lb_cfg_user_by_token(cfg, tok, tlen);
    if (!u) {
        const char *a = lb_http_param(r, "REMOTE_ADDR");
        lb_warn("web: login from %s refused: wrong token", a ? a : "?");
        lb_http_error_hdr(r, 401, "unauthorized", "WWW-Authenticate: Bearer realm=\"llmbox\", error=\"invalid_token\"\r\n",
                          "That token is not valid here. Check that it was copied whole (it starts with lbx_), or "
                          "ask the operator for a new one.");
        goto done;
    }
    char sid[65], th[LB_SHA256_HEX];
    lb_session se;
    memset(&se, 0, sizeof se);
    if (lb_random_hex(sid, sizeof sid, 32) != LB_OK || lb_sha256_hex(sid, 64, se.id_sha256) != LB_OK ||
        lb_sha256_hex(tok, tlen, th) != LB_OK) {
        lb_http_error(r, 500, NULL, "Could not make a session.");
        goto done;
    }
    snprintf(se.user, sizeof se.user, "%s", u->name);
    memcpy(se.token_sha256, th, sizeof th);
    se.created_ms = lb_now_ms();
    se.expires_ms = se.created_ms + (int64_t)cfg->session_ttl_s * 1000;
    int rc = lb_store_session_add(r->store, &se, LB_SESSIONS_PER_USER);
    if (rc != LB_OK) {
        if (rc == LB_E_TIMEOUT)
            lb_http_error(r, 503, NULL, "The task database is busy; try again in a moment.");
        else
            lb_http_error(r, 500, NULL, "Could not store the session: %s.", lb_strerror(rc));
        goto done;
    }
    lb_info("web: user %s logged in (session %.8s…, until %lld)", u->name, se.id_sha256, (long long)se.expires_ms);
    char cookie[256];
    lb_cookie_header(r, sid, cfg->session_ttl_s, cookie, sizeof cookie);
    out = lb_session_json(r->cfg, u, "session", sid, se.expires_ms);
    lb_http_json(r, 200, out, cookie);
done:
    cJSON_Delete(in);
    cJSON_Delete(out);
    lb_buf_free(&body);
}

void lb_h_logout(lb_req *r)
{
    lb_http_drain(r);
    char sid[65], h[LB_SHA256_HEX], cookie[256];
    int ended = 0;
    lb_session se;
    const lb_user_cfg *u = NULL;
    if (r->cfg->n_users && lb_auth_cookie(r, sid) && lb_sha256_hex(sid, 64, h) == LB_OK &&
        lb_store_session_get(r->store, h, lb_now_ms(), &se) == LB_OK && (u = lb_cfg_user(r->cfg, se.user)) &&
        lb_cfg_user_has_token(u, se.token_sha256)) {
        /* a live session is ended only with its CSRF token: the same rule
         * as every other change made with the cookie (an ended or unknown
         * one just loses its cookie) */
        if (!lb_auth_request_ok(r))
            return;
        if (r->via_session && lb_store_session_delete(r->store, h) == LB_OK) {
            ended = 1;
            lb_info("web: user %s logged out (session %.8s…)", r->user->name, h);
        }
    }
    lb_cookie_header(r, "", 0, cookie, sizeof cookie);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "logged_out", ended);
    lb_http_json(r, 200, o, cookie);
    cJSON_Delete(o);
}

void lb_h_session(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    cJSON *o = NULL;
    if (!cfg->n_users || (!lb_http_param(r, "HTTP_AUTHORIZATION") && !lb_http_param(r, "HTTP_COOKIE"))) {
        o = lb_session_json(r->cfg, NULL, NULL, NULL, 0);
        lb_http_json(r, 200, o, NULL);
        cJSON_Delete(o);
        return;
    }
    char sid[65];
    if (!lb_http_param(r, "HTTP_AUTHORIZATION") && !lb_auth_cookie(r, sid)) {
        o = lb_session_json(r->cfg, NULL, NULL, NULL, 0); /* other cookies only */
        lb_http_json(r, 200, o, NULL);
        cJSON_Delete(o);
        return;
    }
    if (!lb_auth_request_ok(r)) /* 401 for a wrong token or an ended session */
        return;
    int64_t expires = 0;
    if (r->via_session) {
        char h[LB_SHA256_HEX];
        lb_session se;
        if (lb_sha256_hex(r->session_id, 64, h) == LB_OK && lb_store_session_get(r->store, h, lb_now_ms(), &se) == LB_OK)
            expires = se.expires_ms;
    }
    o = lb_session_json(r->cfg, r->user, r->via_session ? "session" : "token", r->via_session ? r->session_id : NULL, expires);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}
