/* Who asks, and what they may see.
 *
 * Without users in llmbox.conf there is no login (as before users
 * existed), and the backend answers loopback clients only, whatever nginx
 * was told to listen on.
 *
 * With users, every API request but /api/health, the login routes, the
 * sandbox API (its own token) and preview links names its user (which
 * route needs what: the table of router.c), in one of two ways:
 *   - Authorization: Bearer <token> (scripts): the token's SHA-256 is
 *     compared, in constant time, with every hash in llmbox.conf. A
 *     browser never sends this header on its own, so no CSRF check.
 *   - the session cookie the page got from POST /api/login: its value is a
 *     random 256-bit id whose SHA-256 names a row of the sessions table.
 *     A request that changes state (anything but GET and HEAD) must also
 *     carry X-CSRF-Token, derived from the session id (HMAC), which only
 *     the page can read (from the login answer or GET /api/session).
 *
 * Before any of that, with users or without, on every backend route
 * (lb_route): the Host must be one of this service's names (DNS
 * rebinding), and a request that changes state must come from the page
 * itself, never from an opaque origin (a generated file) or another site
 * (lb_auth_host_ok, lb_auth_origin_ok below say how and why).
 *
 * A task belongs to the user who made it; anyone else gets the 404 of an
 * unknown task, so ids of other people's tasks cannot even be confirmed.
 *
 * Preview links (a key instead of a login) and the other ways to a
 * task's files: artifact_access.c.
 */
#include "web/auth.h"

#include "web/access.h"
#include "web/http.h"
#include "common/config.h"
#include "store/store.h"

#include "common/log.h"
#include "common/status.h"
#include "common/token.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LB_COOKIE_NAME "llmbox_session"

const char *lb_auth_owner(const lb_req *r)
{
    return r->user ? r->user->name : NULL;
}

/* ---- cookies and CSRF ---- */

int lb_auth_cookie(lb_req *r, char out[65])
{
    const char *c = lb_http_param(r, "HTTP_COOKIE");
    size_t nl = strlen(LB_COOKIE_NAME);
    out[0] = '\0';
    for (const char *p = c; p && *p;) {
        p += strspn(p, " \t;");
        if (!strncmp(p, LB_COOKIE_NAME, nl) && p[nl] == '=') {
            const char *v = p + nl + 1;
            size_t vl = strcspn(v, "; \t");
            if (vl != 64)
                return 0;
            memcpy(out, v, 64);
            out[64] = '\0';
            return lb_sha256_hex_valid(out);
        }
        p += strcspn(p, ";");
    }
    return 0;
}

void lb_auth_csrf_token(const char *sid, char out[65])
{
    if (lb_hmac_sha256_hex(sid, strlen(sid), "llmbox-csrf", 11, out) != LB_OK)
        out[0] = '\0';
}

int lb_auth_cookie_secure(lb_req *r)
{
    if (!strcmp(r->cfg->cookie_secure, "on"))
        return 1;
    /* nginx's $https ("on" when this connection is TLS). A proxy in front
     * that ends TLS says so with X-Forwarded-Proto; it is believed only in
     * that direction: a forged "https" can merely make the sender's own
     * cookie Secure, never take Secure away. */
    const char *h = lb_http_param(r, "HTTPS");
    if (h && !strcasecmp(h, "on"))
        return 1;
    const char *x = lb_http_param(r, "HTTP_X_FORWARDED_PROTO");
    return x && !strncasecmp(x, "https", 5) && (x[5] == '\0' || x[5] == ',' || x[5] == ' ');
}

static int lb_changes_state(const char *m)
{
    return strcmp(m, "GET") && strcmp(m, "HEAD") && strcmp(m, "OPTIONS");
}

static const char *lb_remote(lb_req *r)
{
    const char *a = lb_http_param(r, "REMOTE_ADDR");
    return a && *a ? a : "?";
}

/* Header text as it may appear in a log line or a message: at most 100
 * bytes, anything but printable ASCII (and '"', '\\') as '?'. */
static void lb_shown(const char *v, char *out, size_t outsz)
{
    size_t o = 0;
    for (; v && *v && o + 1 < outsz && o < 100; v++)
        out[o++] = (*v < 0x20 || *v >= 0x7f || *v == '"' || *v == '\\') ? '?' : *v;
    out[o] = '\0';
}

/* ---- the host a request names, and the origin it comes from ----
 *
 * DNS rebinding: a page of attacker.example has its name re-pointed to
 * 127.0.0.1, and then reads this service as its own origin (Origin and
 * Host both say attacker.example, so no origin check can tell). What the
 * attacker cannot choose is the name: the browser sends it in Host. So
 * every backend request must name one of this service's own hosts:
 *   - a loopback name: localhost, 127.x.y.z, ::1;
 *   - the address of `listen`, or the local address the connection came
 *     in on (nginx's $server_addr): an IP literal, which no DNS answer can
 *     re-point;
 *   - a name of allowed_hosts (the names a proxy or DNS gives it).
 * The port is not compared, except for an allowed_hosts entry that names
 * one: a port cannot be rebound either, and an SSH tunnel
 * (localhost:9000 -> 127.0.0.1:8080) must keep working. A request with
 * no Host at all (HTTP/1.0) names nothing and passes. */
static int lb_host_is_ours(lb_req *r, const char *host, int port)
{
    const lb_config *cfg = r->cfg;
    if (!strcmp(host, "localhost") || lb_cfg_addr_is_loopback(host))
        return 1;
    char lh[LB_CFG_LISTEN];
    int lport;
    if (lb_cfg_host_split(cfg->listen, strlen(cfg->listen), lh, sizeof lh, &lport) && !strcmp(lh, host) &&
        strcmp(lh, "0.0.0.0") && strcmp(lh, "::"))
        return 1;
    const char *sa = lb_http_param(r, "SERVER_ADDR");
    if (sa && *sa && !strcasecmp(sa, host))
        return 1;
    if (lb_cfg_e2b_host(cfg, host)) /* E2B's protocol: <port>-<sandbox>.<e2b_domain> */
        return 1;
    return lb_cfg_host_allowed(cfg, host, port);
}

int lb_auth_host_ok(lb_req *r)
{
    const char *hv = lb_http_param(r, "HTTP_HOST");
    if (!hv || !*hv)
        return 1;
    char host[256];
    int port;
    if (lb_cfg_host_split(hv, strlen(hv), host, sizeof host, &port) && lb_host_is_ours(r, host, port))
        return 1;
    char shown[128];
    lb_shown(hv, shown, sizeof shown);
    lb_warn("web: %s from %s: refused, Host \"%s\" is not a name of this service (allowed_hosts)", r->method,
            lb_remote(r), shown);
    lb_http_drain(r);
    lb_http_error(r, 403, "host_not_allowed",
                  "This llmbox does not answer to the host name \"%s\": it answers to localhost, its loopback "
                  "and listen addresses, and the names in allowed_hosts. If this is the name it is reached by, "
                  "the operator adds it to allowed_hosts in llmbox.conf (LLMBOX_ALLOWED_HOSTS).",
                  shown);
    return 0;
}

/* Origin ("scheme://host[:port]") names this service: it is the Host of
 * the request, or an allowed_hosts name (a proxy in front that passes its
 * own Host to nginx). */
static int lb_origin_is_ours(lb_req *r, const char *origin)
{
    const char *o = strstr(origin, "://");
    const char *host = lb_http_param(r, "HTTP_HOST");
    if (!o)
        return 0;
    if (host && *host && !strcasecmp(o + 3, host))
        return 1;
    char h[256];
    int port;
    if (!lb_cfg_host_split(o + 3, strlen(o + 3), h, sizeof h, &port))
        return 0;
    if (!port)
        port = !strncasecmp(origin, "https://", 8) ? 443 : 80;
    return lb_cfg_host_allowed(r->cfg, h, port);
}

/* A request that changes state must come from the page itself (CSRF):
 * with users or without, whatever its credentials. The browser says where
 * a request comes from and a page cannot forge it:
 *   - Origin: null (an opaque origin: a generated html or svg file in the
 *     preview's sandboxed frame, or opened in a tab under its CSP
 *     sandbox) is always refused: viewing a result must never act;
 *   - Sec-Fetch-Site, when sent (every current browser), must be
 *     same-origin (same-site is another port or a sibling name: not us);
 *   - else Origin, when sent, must name this service.
 * A request with neither header passes: curl, scripts and the tests send
 * none, and every browser in use sends one of them on a cross-origin
 * request that changes state (Origin on every POST since Chrome 2019 and
 * Firefox 70; Sec-Fetch-Site since Chrome 76, Firefox 90, Safari 16.4),
 * so only a browser too old to matter could be driven without them. Such
 * clients are not at risk from DNS rebinding either: the Host check comes
 * first. With a login cookie, the CSRF token is checked as well. */
int lb_auth_origin_ok(lb_req *r)
{
    if (!lb_changes_state(r->method))
        return 1;
    const char *origin = lb_http_param(r, "HTTP_ORIGIN");
    const char *site = lb_http_param(r, "HTTP_SEC_FETCH_SITE");
    char shown[128], why[256];
    why[0] = '\0';
    if (origin && !strcmp(origin, "null")) {
        snprintf(why, sizeof why,
                 "it came from a document with an opaque origin (Origin: null), such as a generated file "
                 "viewed in a preview or opened in its own tab");
    } else if (site && *site) {
        if (strcmp(site, "same-origin")) {
            lb_shown(site, shown, sizeof shown);
            snprintf(why, sizeof why, "the browser says it came from another page (Sec-Fetch-Site: %s)", shown);
        }
    } else if (origin && *origin && !lb_origin_is_ours(r, origin)) {
        lb_shown(origin, shown, sizeof shown);
        snprintf(why, sizeof why, "its Origin (%s) is not this server", shown);
    }
    if (!why[0])
        return 1;
    lb_warn("web: %s from %s: refused, %s", r->method, lb_remote(r), why);
    lb_http_drain(r);
    lb_http_error(r, 403, "csrf",
                  "This request was refused because %s; requests that change something must come from the "
                  "llmbox page itself (scripts send no Origin header).",
                  why);
    return 0;
}

static void lb_unauthorized(lb_req *r, const char *error, const char *extra_hdr, const char *msg)
{
    char hdr[512];
    snprintf(hdr, sizeof hdr, "WWW-Authenticate: Bearer realm=\"llmbox\"%s%s%s\r\n%s", error ? ", error=\"" : "",
             error ? error : "", error ? "\"" : "", extra_hdr ? extra_hdr : "");
    lb_http_drain(r);
    lb_http_error_hdr(r, 401, "unauthorized", hdr, "%s", msg);
}

/* Bearer <token>: the token (trimmed) in *tok, *tlen; 0 when the header
 * is some other scheme. */
static int lb_bearer(const char *h, const char **tok, size_t *tlen)
{
    while (*h == ' ' || *h == '\t')
        h++;
    if (strncasecmp(h, "Bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
        return 0;
    const char *t = h + 6;
    while (*t == ' ' || *t == '\t')
        t++;
    size_t n = strnlen(t, LB_TOKEN_MAX + 1);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t'))
        n--;
    *tok = t;
    *tlen = n;
    return 1;
}

int lb_auth_request_ok(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    r->user = NULL;
    r->via_session = 0;
    if (!cfg->n_users) {
        /* no login: loopback only, even when nginx was opened wider by hand */
        const char *a = lb_http_param(r, "REMOTE_ADDR");
        if (a && *a && !lb_cfg_addr_is_loopback(a)) {
            lb_http_drain(r);
            lb_http_error(r, 403, "forbidden",
                          "This llmbox has no users configured, so it has no login and answers only on "
                          "127.0.0.1. The operator can add users to llmbox.conf (llmbox user add NAME).");
            return 0;
        }
        return 1;
    }
    const char *authz = lb_http_param(r, "HTTP_AUTHORIZATION");
    if (authz && *authz) {
        const char *tok = NULL;
        size_t tlen = 0;
        if (!lb_bearer(authz, &tok, &tlen) || !tlen) {
            lb_unauthorized(r, "invalid_request", NULL,
                            "The Authorization header must be `Bearer <token>` with an llmbox API token.");
            return 0;
        }
        const lb_user_cfg *u = tlen <= LB_TOKEN_MAX ? lb_cfg_user_by_token(cfg, tok, tlen) : NULL;
        if (!u) {
            char path[101];
            lb_access_path(r->path, path, sizeof path);
            lb_warn("web: %s %s from %s: wrong API token", r->method, path, lb_remote(r));
            lb_unauthorized(r, "invalid_token", NULL,
                            "This API token is not valid here (it may have been replaced); ask the operator "
                            "for a new one.");
            return 0;
        }
        r->user = u;
        return 1;
    }
    char sid[65], h[LB_SHA256_HEX];
    if (!lb_auth_cookie(r, sid)) {
        lb_unauthorized(r, NULL, NULL,
                        "This llmbox needs a login: log in on the page, or send `Authorization: Bearer <token>` "
                        "with your API token.");
        return 0;
    }
    lb_session se;
    int rc = lb_sha256_hex(sid, 64, h);
    if (rc == LB_OK)
        rc = lb_store_session_get(r->store, h, lb_now_ms(), &se);
    const lb_user_cfg *u = rc == LB_OK ? lb_cfg_user(cfg, se.user) : NULL;
    if (rc == LB_E_TIMEOUT) {
        lb_http_drain(r);
        lb_http_error(r, 503, NULL, "The task database is busy; try again in a moment.");
        return 0;
    }
    if (!u || !lb_cfg_user_has_token(u, se.token_sha256)) {
        /* unknown, expired, a user who is gone, or a token that was removed */
        char clear[160];
        snprintf(clear, sizeof clear, "Set-Cookie: %s=; Path=/api/; Max-Age=0; HttpOnly; SameSite=Strict%s\r\n",
                 LB_COOKIE_NAME, lb_auth_cookie_secure(r) ? "; Secure" : "");
        lb_unauthorized(r, "invalid_token", clear, "Your login has expired or was ended; log in again.");
        return 0;
    }
    r->user = u;
    r->via_session = 1;
    memcpy(r->session_id, sid, sizeof sid);
    /* where the request came from was checked before (lb_auth_origin_ok) */
    if (lb_changes_state(r->method)) {
        char want[LB_SHA256_HEX];
        const char *got = lb_http_param(r, "HTTP_X_CSRF_TOKEN");
        lb_auth_csrf_token(sid, want);
        if (!got || strlen(got) != 64 || !want[0] || !lb_ct_equal(got, want, 64)) {
            char path[101];
            lb_access_path(r->path, path, sizeof path);
            lb_warn("web: %s %s from %s (user %s): refused, no valid CSRF token", r->method, path, lb_remote(r),
                    u->name);
            lb_http_drain(r);
            lb_http_error(r, 403, "csrf",
                          "This request came with a login cookie but without the page's CSRF token "
                          "(X-CSRF-Token), so it was refused; reload the page. Scripts should send "
                          "`Authorization: Bearer <token>` instead of a cookie.");
            return 0;
        }
    }
    return 1;
}

const lb_user_cfg *lb_auth_peek(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    const char *authz = lb_http_param(r, "HTTP_AUTHORIZATION");
    if (authz && *authz) {
        const char *tok = NULL;
        size_t tlen = 0;
        if (!lb_bearer(authz, &tok, &tlen) || !tlen || tlen > LB_TOKEN_MAX)
            return NULL;
        return lb_cfg_user_by_token(cfg, tok, tlen);
    }
    char sid[65], h[LB_SHA256_HEX];
    lb_session se;
    if (!lb_auth_cookie(r, sid) || lb_sha256_hex(sid, 64, h) != LB_OK ||
        lb_store_session_get(r->store, h, lb_now_ms(), &se) != LB_OK)
        return NULL;
    const lb_user_cfg *u = lb_cfg_user(cfg, se.user);
    return u && lb_cfg_user_has_token(u, se.token_sha256) ? u : NULL;
}

int lb_auth_task_visible(lb_req *r)
{
    if (!r->user)
        return 1;
    char owner[LB_CFG_USER_NAME];
    int rc = lb_store_task_owner(r->store, r->id, owner, sizeof owner);
    if (rc == LB_OK && strcmp(owner, r->user->name))
        rc = LB_E_NOTFOUND; /* someone else's: exactly as if it did not exist */
    if (rc == LB_E_TOOBIG)
        rc = LB_E_NOTFOUND;
    if (rc != LB_OK) {
        lb_http_drain(r);
        lb_http_store_error(r, rc, "read the task");
        return 0;
    }
    return 1;
}
