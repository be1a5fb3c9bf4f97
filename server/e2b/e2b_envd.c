/* E2B's envd routes: which sandbox, whether the caller may use it, and
 * which service answers. */
#include "e2b/e2b_envd.h"

#include "e2b/e2b_api.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_fs.h"
#include "e2b/e2b_port.h"
#include "e2b/e2b_process.h"
#include "e2b/e2b_sign.h"
#include "web/http.h"
#include "sbxapi/sandbox_node.h" /* several nodes */
#include "sbxapi/sandbox_registry.h"
#include "sbxapi/sandbox_spec.h"

#include "common/node_id.h" /* several nodes */
#include "common/token.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_E2B_ENVD_PORT "49983"   /* the port the SDK puts in E2b-Sandbox-Port and host names */
#define LB_E2B_ENVD_PORT_N 49983

int lb_e2b_access_token(const lb_config *cfg, const char *id, char *out, size_t outsz)
{
    if (outsz < LB_SHA256_HEX || !cfg->sandbox_api_token[0])
        return LB_E_INVAL;
    char data[128]; /* several nodes: the id may be "<node>.<32 hex>" */
    int n = snprintf(data, sizeof data, "e2b-envd-access:%.96s", id);
    return lb_hmac_sha256_hex(cfg->sandbox_api_token, strlen(cfg->sandbox_api_token), data, (size_t)n, out);
}

/* The sandbox id the request names: the E2b-Sandbox-Id header (envd),
 * else the first label of the Host "<port>-<id>.<domain>", *port its port
 * (49983 is envd; any other is a server of the sandbox's: e2b_port.h).
 * "" when neither. */
static void lb_e2b_target(lb_req *r, char id[LB_NODE_ID_MAX + 1], int *port)
{
    id[0] = '\0';
    *port = LB_E2B_ENVD_PORT_N;
    const char *h = lb_http_param(r, "HTTP_E2B_SANDBOX_ID");
    if (h) {
        if (lb_node_id_valid(h))
            snprintf(id, LB_NODE_ID_MAX + 1, "%s", h);
        return;
    }
    /* several nodes: "<port>-<node>.<32 hex>.<domain>" too (common/node_id.h) */
    const char *host = lb_http_param(r, "HTTP_HOST");
    int p;
    if (host && lb_node_id_host(host, strnlen(host, 512), r->cfg->e2b_domain, id, LB_NODE_ID_MAX + 1, &p))
        *port = p;
}

/* What E2B's edge answers for a sandbox that is not running: 502, which
 * the SDK reads as "the sandbox is gone" (its health probe, and
 * Code.Unavailable on RPCs: TimeoutError / SandboxNotFoundError). */
static void lb_e2b_gone(lb_req *r, const char *msg)
{
    lb_http_drain(r);
    lb_e2b_error_json(r, 502, "unavailable", msg);
}

/* E2B's autoResume: an authenticated envd call or port request to a
 * paused sandbox made with it resumes it first (the health check does
 * not, so isRunning() still tells a paused one). Without autoResume a
 * paused one is left as it is and sandboxd refuses the call. 0 when it
 * answered r with why the resume failed. */
static int lb_e2b_resume_first(lb_req *r, lb_sbx *s)
{
    char err[512] = "", msg[600];
    if (lb_e2b_auto_resume(r->cfg, s, err, sizeof err) == LB_OK)
        return 1;
    snprintf(msg, sizeof msg, "The paused sandbox could not be resumed (autoResume): %s", err);
    lb_e2b_gone(r, msg);
    return 0;
}

/* The X-Access-Token of the request against the sandbox's, in constant time. */
static int lb_e2b_token_ok(lb_req *r, const char *id, const char *got)
{
    char want[LB_SHA256_HEX];
    if (!got || strlen(got) != LB_E2B_TOKEN_HEX || lb_e2b_access_token(r->cfg, id, want, sizeof want) != LB_OK)
        return 0;
    return lb_ct_equal(got, want, LB_E2B_TOKEN_HEX);
}

/* The user a call names (Authorization: Basic base64("<user>:"), or the
 * files routes' ?username=): "root", E2B's "user" (uid 1000 of E2B's base
 * template and images/default), another user of the sandbox (looked up
 * by lb_e2b_user_known), or none (the sandbox's default: lb_e2b_run_as).
 * 1 when it is none or looks like a user's name. */
static int lb_e2b_user_ok(lb_req *r, char *name, size_t namesz)
{
    char q[64] = "";
    const char *a = lb_http_param(r, "HTTP_AUTHORIZATION");
    name[0] = '\0';
    if (a && !strncmp(a, "Basic ", 6)) {
        char *dec = NULL;
        size_t n = 0;
        if (lb_base64_decode(a + 6, strlen(a + 6), 256, &dec, &n) != LB_OK) {
            snprintf(name, namesz, "(undecodable)");
            return 0;
        }
        size_t u = dec ? strcspn(dec, ":") : 0;
        snprintf(name, namesz, "%.*s", (int)(u < n ? u : n), dec ? dec : "");
        free(dec);
    } else if (r->query && lb_query_get(r->query, "username", q, sizeof q) == LB_OK) {
        snprintf(name, namesz, "%s", q);
    } else if (r->query && lb_query_get(r->query, "username", q, sizeof q) == LB_E_TOOBIG) {
        snprintf(name, namesz, "(too long)");
        return 0;
    }
    /* any user of the sandbox, as envd: a name that looks like one here
     * (what useradd allows), whether the sandbox has it is asked below */
    return !name[0] || lb_e2b_user_name_ok(name);
}

/* A call's user that envd would not find: its authentication error, which a
 * streaming call (Start, Connect) reads as the stream's end. */
static void lb_e2b_user_refused(lb_req *r, const char *user, const char *reason)
{
    char why[300];
    snprintf(why, sizeof why, "invalid username: '%.64s' (%s)", user, reason);
    const char *ct = lb_http_param(r, "CONTENT_TYPE");
    lb_http_drain(r);
    if (ct && !strncmp(ct, "application/connect+", 20))
        lb_e2b_stream_end(r, "unauthenticated", "%s", why);
    else
        lb_e2b_unary_error(r, "unauthenticated", "%s", why);
}

int lb_e2b_call_user(lb_req *r, char *name, size_t namesz)
{
    return lb_e2b_user_ok(r, name, namesz);
}

void lb_h_e2b_envd(lb_req *r)
{
    const char *sub = r->path + strlen("/e2b/sandbox");
    char id[LB_NODE_ID_MAX + 1], msg[512];
    if (!r->cfg->sandbox_api_token[0]) {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "permission_denied", "The sandbox API is turned off: set LLMBOX_SANDBOX_API_TOKEN.");
        return;
    }
    int port;
    lb_e2b_target(r, id, &port);
    /* a signed /files URL the SDK built from E2B_SANDBOX_URL's origin names
     * no sandbox: the signature itself says which (e2b_sign.h) */
    int files = !strcmp(sub, "/files"), signed_url = files && lb_e2b_signed(r);
    const char *op = !strcmp(r->method, "POST") ? "write" : "read";
    if (!lb_node_id_valid(id) && signed_url && !lb_e2b_signed_find(r, op, id)) {
        lb_http_drain(r);
        lb_e2b_error_json(r, 401, NULL, "The URL's signature is no running sandbox's (wrong, expired, or its sandbox "
                                        "is gone): make a new one with downloadUrl/uploadUrl.");
        return;
    }
    if (!lb_node_id_valid(id)) {
        lb_e2b_gone(r, "No sandbox named: send E2b-Sandbox-Id (set E2B_SANDBOX_URL) or use the host name "
                       "49983-<sandbox id>.<E2B_DOMAIN>; sandbox ids are 32 lowercase hexadecimal characters, "
                       "prefixed with the node's name and a dot in a cluster.");
        return;
    }
    char node[LB_NODE_ID_NAME_MAX + 1];
    if (!lb_sbx_id_mine(r->cfg->node_name, id, node, sizeof node)) { /* several nodes: sandbox_node.h */
        lb_sbx_id_elsewhere_msg(r->cfg->node_name, id, node, msg, sizeof msg);
        lb_http_drain(r);
        lb_e2b_error_json(r, 421, "misdirected", msg);
        return;
    }
    lb_sbx *s = lb_sbx_get(id, msg, sizeof msg);
    if (!s && port != LB_E2B_ENVD_PORT_N) {
        /* a port of a sandbox that is gone: E2B's edge's own answer, which
         * clients of the sandbox's servers read (its id and code 502) */
        cJSON *o = cJSON_CreateObject();
        lb_http_drain(r);
        if (o && cJSON_AddStringToObject(o, "message", "The sandbox was not found") &&
            cJSON_AddStringToObject(o, "sandboxId", id) && cJSON_AddNumberToObject(o, "code", 502))
            lb_http_json(r, 502, o, NULL);
        else
            lb_e2b_error_json(r, 500, NULL, "Out of memory.");
        cJSON_Delete(o);
        return;
    }
    if (!s) {
        lb_e2b_gone(r, msg);
        return;
    }
    if (port != LB_E2B_ENVD_PORT_N) {
        /* E2B's protocol: a server of the sandbox's (e2b_port.h), behind its
         * token unless it was made with allowPublicTraffic true */
        const char *t = lb_http_param(r, "HTTP_E2B_TRAFFIC_ACCESS_TOKEN");
        if (!lb_sbx_public_ports_of(s) && !lb_e2b_token_ok(r, id, t ? t : lb_http_param(r, "HTTP_X_ACCESS_TOKEN"))) {
            lb_http_drain(r);
            lb_e2b_error_json(r, 403, NULL, "A sandbox's ports need its envdAccessToken in X-Access-Token or "
                                            "E2b-Traffic-Access-Token (docs/E2B.md).");
        } else if (lb_sbx_state_of(s, NULL, 0) != LB_SBX_RUNNING) {
            lb_e2b_gone(r, "The sandbox is not running (still starting, or failed).");
        } else if (!lb_e2b_resume_first(r, s)) {
            /* answered */
        } else {
            lb_e2b_port(r, s, port);
        }
        goto out;
    }
    if (!strcmp(sub, "/health")) {
        /* envd answers 204; nothing secret in whether a sandbox runs. A
         * paused sandbox's envd does not answer on E2B (its edge says 502),
         * which is how the SDK's isRunning() tells it is not running. */
        if (lb_sbx_is_paused(s)) {
            lb_e2b_gone(r, "The sandbox is paused: Sandbox.connect resumes it.");
            goto out;
        }
        lb_http_drain(r);
        lb_http_head(r, 204, NULL, NULL);
        goto out;
    }
    const char *hdr_tok = lb_http_param(r, "HTTP_X_ACCESS_TOKEN");
    if (signed_url && !hdr_tok) {
        /* envd: a signed URL opens /files without the token, for its op,
         * path and user only (the user is checked below as for any call) */
        char why[300];
        if (!lb_e2b_signed_ok(r, id, op, why, sizeof why)) {
            lb_http_drain(r);
            lb_e2b_error_json(r, 401, NULL, why);
            goto out;
        }
    } else if (!lb_e2b_token_ok(r, id, hdr_tok)) {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "unauthenticated",
                           "The X-Access-Token header is missing or is not this sandbox's envdAccessToken (the one "
                           "its create or connect answered).");
        goto out;
    }
    char user[80];
    if (!lb_e2b_user_ok(r, user, sizeof user)) {
        /* envd cannot look such a name up either */
        lb_e2b_user_refused(r, user, "a user's name is 1 to 32 of [A-Za-z0-9_.-], not starting with '-'");
        goto out;
    }
    if (lb_sbx_state_of(s, NULL, 0) != LB_SBX_RUNNING) {
        lb_e2b_gone(r, "The sandbox is not running (still starting, or failed).");
        goto out;
    }
    if (!lb_e2b_resume_first(r, s))
        goto out;
    /* a user other than root and E2B's own is looked up in the sandbox's
     * /etc/passwd (as envd's Basic authentication does): unknown, the call
     * is an authentication error, as envd answers it */
    if (!lb_e2b_user_known(r, s, user)) {
        lb_e2b_user_refused(r, user, "the sandbox's /etc/passwd has no such user");
        goto out;
    }
    if (!strncmp(sub, "/process.Process/", 17))
        lb_e2b_process(r, s, sub + 17);
    else if (!strncmp(sub, "/filesystem.Filesystem/", 23))
        lb_e2b_filesystem(r, s, sub + 23);
    else if (!strcmp(sub, "/files") || !strncmp(sub, "/files?", 7))
        lb_e2b_files(r, s);
    else {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "unimplemented", "envd has no route %.100s here (docs/E2B.md lists what llmbox answers).",
                           sub);
    }
out:
    lb_sbx_put(s);
}
