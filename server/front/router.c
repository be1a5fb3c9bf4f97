/* Maps "METHOD path" to a handler through one table, and checks who may
 * call each route in one place (lb_route_admit) before its handler runs.
 * Routes are few and fixed, so a table of path shapes is clearer than a
 * general router (kcgi's page table is the model). */
#include "front/router.h"

#include "web/artifact_access.h"
#include "web/auth.h"
#include "e2b/e2b_api.h"
#include "e2b/e2b_envd.h"
#include "e2b/e2b_volume.h"
#include "web/handlers_dl_fetch.h" /* several nodes */
#include "jobs/handlers_evals.h"
#include "web/handlers_files.h"
#include "front/handlers_info.h"
#include "front/handlers_metrics.h"
#include "images/handlers_images.h"
#include "web/handlers_rerun.h"
#include "jobs/handlers_rollouts.h"
#include "sbxapi/handlers_sandbox_pause.h"
#include "sbxapi/handlers_sandbox_tools.h"
#include "sbxapi/handlers_sandboxes.h"
#include "sbxapi/handlers_sandbox_fsmeta.h"
#include "sbxapi/handlers_sandbox_network.h"
#include "sbxapi/sandbox_owner.h"
#include "e2b/e2b_connect.h"
#include "web/handlers_session.h"
#include "web/handlers_tasks.h"
#include "web/handlers_task_network.h"
#include "web/handlers_messages.h"
#include "web/handlers_share.h"
#include "web/handlers_fork.h"
#include "web/handlers_tokens.h"
#include "web/http.h"
#include "sbxapi/sandbox_node.h" /* several nodes */
#include "web/sse.h"
#include "mcp/mcp_http.h"

#include "common/config.h" /* checksrc: allow unused-include (r->cfg->n_users needs lb_config whole) */
#include "common/node_id.h" /* several nodes */
#include "common/util.h"

#include <stdio.h>
#include <string.h>

static void lb_route_not_found(lb_req *r);

/* clang-format off */
const lb_route_def lb_routes[] = {
    /* method       pattern                                  who may call it  route class        handler */
    {LB_M_GET,    "/metrics",                               LB_WHO_NGINX,   "metrics",         lb_h_metrics},
    {LB_M_GET,    "/api/sandboxes",                         LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_list},
    {LB_M_POST,   "/api/sandboxes",                         LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_create},
    {LB_M_GET,    "/api/sandboxes/{sandbox}",               LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_get},
    {LB_M_DELETE, "/api/sandboxes/{sandbox}",               LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_delete},
    {LB_M_POST,   "/api/sandboxes/{sandbox}/exec",          LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_exec},
    {LB_M_GET,    "/api/sandboxes/{sandbox}/files/{path}",  LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_get_file},
    {LB_M_PUT,    "/api/sandboxes/{sandbox}/files/{path}",  LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_put_file},
    {LB_M_POST,   "/api/sandboxes/{sandbox}/tools/{path}",  LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_tool},
    /* E2B's protocol: file metadata (handlers_sandbox_fsmeta.c) */
    {LB_M_GET,    "/api/sandboxes/{sandbox}/stat/{path}",   LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_stat},
    {LB_M_GET,    "/api/sandboxes/{sandbox}/list/{path}",   LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_list_dir},
    /* follow-ups: pause, resume, snapshots ({sandbox} of /api/snapshots is the snapshot's id) */
    {LB_M_POST,   "/api/sandboxes/{sandbox}/pause",         LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_pause},
    {LB_M_POST,   "/api/sandboxes/{sandbox}/resume",        LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_resume},
    {LB_M_POST,   "/api/sandboxes/{sandbox}/snapshot",      LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_snapshot},
    {LB_M_GET,    "/api/sandboxes/{sandbox}/network",       LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_network_get},
    {LB_M_PATCH,  "/api/sandboxes/{sandbox}/network",       LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_network_patch},
    {LB_M_GET,    "/api/snapshots",                         LB_WHO_SANDBOX, "sandboxes",       lb_h_snapshots_list},
    {LB_M_DELETE, "/api/snapshots/{sandbox}",               LB_WHO_SANDBOX, "sandboxes",       lb_h_snapshot_delete},
    {LB_M_ANY,    "/api/sandboxes/{sandbox}/*",             LB_WHO_SANDBOX, "sandboxes",       lb_h_sbx_no_route},
    /* E2B's protocol (docs/E2B.md): envd of every sandbox, then the control plane */
    {LB_M_ANY,    "/e2b/sandbox/*",                         LB_WHO_E2B,     "e2b_envd",        lb_h_e2b_envd},
    /* E2B's volumes (e2b_volume.c): the control plane with X-API-KEY (a user's key: its own volumes), the content with
     * the volume's own token */
    {LB_M_GET,    "/e2b/volumes",                           LB_WHO_E2B,     "e2b_volumes",     lb_h_e2b_volumes},
    {LB_M_POST,   "/e2b/volumes",                           LB_WHO_E2B,     "e2b_volumes",     lb_h_e2b_volumes},
    {LB_M_GET,    "/e2b/volumes/{path}",                    LB_WHO_E2B,     "e2b_volume",      lb_h_e2b_volume},
    {LB_M_DELETE, "/e2b/volumes/{path}",                    LB_WHO_E2B,     "e2b_volume",      lb_h_e2b_volume},
    {LB_M_ANY,    "/e2b/volumecontent/{path}",              LB_WHO_E2B_VOLUME, "e2b_volume_content", lb_h_e2b_volume_content},
    {LB_M_ANY,    "/e2b/*",                                 LB_WHO_E2B,     "e2b",             lb_h_e2b_api},
    {LB_M_GET,    "/api/health",                            LB_WHO_ANYONE,  "health",          lb_h_health},
    {LB_M_GET,    "/api/session",                           LB_WHO_ANYONE,  "session",         lb_h_session},
    {LB_M_POST,   "/api/login",                             LB_WHO_ANYONE,  "login",           lb_h_login},
    {LB_M_POST,   "/api/logout",                            LB_WHO_ANYONE,  "logout",          lb_h_logout},
    {LB_M_GET,    "/api/tasks/{task}/preview/*",            LB_WHO_PREVIEW, "task_preview",    lb_h_artifact},
    {LB_M_GET,    "/api/models",                            LB_WHO_USER,    "models",          lb_h_models},
    {LB_M_GET,    "/api/info",                              LB_WHO_USER,    "info",            lb_h_info},
    {LB_M_GET,    "/api/images",                            LB_WHO_USER,    "images",          lb_h_images},
    /* a pull sandboxd runs for the web; a user can start one anyway by naming the reference in a task */
    {LB_M_POST,   "/api/images/pull",                       LB_WHO_USER,    "images_pull",     lb_h_image_pull},
    {LB_M_GET,    "/api/images/jobs/{path}",                LB_WHO_USER,    "images_job",      lb_h_image_job},
    {LB_M_GET,    "/api/tools",                             LB_WHO_USER,    "tools",           lb_h_tools},
    {LB_M_GET,    "/api/tasks",                             LB_WHO_USER,    "tasks",           lb_h_task_list},
    {LB_M_POST,   "/api/tasks",                             LB_WHO_USER,    "tasks",           lb_h_task_create},
    {LB_M_GET,    "/api/tasks/{task}",                      LB_WHO_OWNER,   "task",            lb_h_task_get},
    {LB_M_DELETE, "/api/tasks/{task}",                      LB_WHO_OWNER,   "task",            lb_h_task_delete},
    {LB_M_GET,    "/api/tasks/{task}/network",              LB_WHO_OWNER,   "task",            lb_h_task_network},
    {LB_M_GET,    "/api/tasks/{task}/events",               LB_WHO_OWNER,   "task_events",     lb_h_task_events},
    {LB_M_GET,    "/api/tasks/{task}/trajectory",           LB_WHO_OWNER,   "task_trajectory", lb_h_trajectory},
    {LB_M_GET,    "/api/tasks/{task}/tokens.jsonl",         LB_WHO_OWNER,   "task_tokens",     lb_h_tokens},
    {LB_M_POST,   "/api/tasks/{task}/cancel",               LB_WHO_OWNER,   "task_cancel",     lb_h_task_cancel},
    {LB_M_POST,   "/api/tasks/{task}/rerun",                LB_WHO_OWNER,   "task_rerun",      lb_h_task_rerun},
    /* follow-ups */
    {LB_M_POST,   "/api/tasks/{task}/messages",             LB_WHO_OWNER,   "task_messages",   lb_h_task_message},
    {LB_M_GET,    "/api/tasks/{task}/rounds/{path}",        LB_WHO_OWNER,   "task_round_file", lb_h_round_artifact},
    {LB_M_POST,   "/api/tasks/{task}/fork",                 LB_WHO_OWNER,   "task_fork",       lb_h_task_fork},
    {LB_M_POST,   "/api/tasks/{task}/shares",               LB_WHO_OWNER,   "task_shares",     lb_h_share_create},
    {LB_M_GET,    "/api/tasks/{task}/shares",               LB_WHO_OWNER,   "task_shares",     lb_h_share_list},
    {LB_M_DELETE, "/api/tasks/{task}/shares/{path}",        LB_WHO_OWNER,   "task_share",      lb_h_share_delete},
    {LB_M_GET,    "/api/shared/{path}",                     LB_WHO_ANYONE,  "shared",          lb_h_shared_get},
    {LB_M_GET,    "/api/tasks/{task}/artifacts",            LB_WHO_OWNER,   "task_artifacts",  lb_h_artifacts},
    {LB_M_GET,    "/api/tasks/{task}/artifacts/{path}",     LB_WHO_OWNER,   "task_artifact",   lb_h_artifact},
    {LB_M_GET,    "/api/tasks/{task}/bundle.zip",           LB_WHO_OWNER,   "task_bundle",     lb_h_bundle_zip},
    {LB_M_GET,    "/api/tasks/{task}/bundle.tar.gz",        LB_WHO_OWNER,   "task_bundle",     lb_h_bundle_tgz},
    /* evaluations: the handlers show an eval to its owner only (404 to others) */
    {LB_M_GET,    "/api/evals",                             LB_WHO_USER,    "evals",           lb_h_eval_list},
    {LB_M_POST,   "/api/evals",                             LB_WHO_USER,    "evals",           lb_h_eval_create},
    {LB_M_GET,    "/api/evals/{eval}",                      LB_WHO_USER,    "eval",            lb_h_eval_get},
    {LB_M_DELETE, "/api/evals/{eval}",                      LB_WHO_USER,    "eval",            lb_h_eval_delete},
    {LB_M_GET,    "/api/evals/{eval}/results.jsonl",        LB_WHO_USER,    "eval_results",    lb_h_eval_results},
    {LB_M_GET,    "/api/evals/{eval}/summary.md",           LB_WHO_USER,    "eval_summary",    lb_h_eval_summary_md},
    {LB_M_POST,   "/api/evals/{eval}/cancel",               LB_WHO_USER,    "eval_cancel",     lb_h_eval_cancel},
    {LB_M_ANY,    "/api/evals/{eval}/*",                    LB_WHO_USER,    "unknown",         lb_route_not_found},
    /* rollout groups: the handlers show a group to the credential that made it (404 to others) */
    {LB_M_POST,   "/api/rollouts",                          LB_WHO_ROLLOUT, "rollouts",        lb_h_rollout_create},
    {LB_M_GET,    "/api/rollouts/{rollout}",                LB_WHO_ROLLOUT, "rollout",         lb_h_rollout_get},
    {LB_M_DELETE, "/api/rollouts/{rollout}",                LB_WHO_ROLLOUT, "rollout",         lb_h_rollout_delete},
    {LB_M_GET,    "/api/rollouts/{rollout}/events",         LB_WHO_ROLLOUT, "rollout_events",  lb_h_rollout_events},
    {LB_M_POST,   "/api/rollouts/{rollout}/cancel",         LB_WHO_ROLLOUT, "rollout_cancel",  lb_h_rollout_cancel},
    {LB_M_GET,    "/api/rollouts/{rollout}/samples/*",      LB_WHO_ROLLOUT, "rollout_sample",  lb_h_rollout_sample},
    {LB_M_ANY,    "/api/rollouts/{rollout}/*",              LB_WHO_ROLLOUT, "unknown",         lb_route_not_found},
    /* what no row above takes: a 404, after the credentials of its part */
    {LB_M_ANY,    "/api/tasks/{task}/*",                    LB_WHO_OWNER,   "unknown",         lb_route_not_found},
    {LB_M_ANY,    "/api/*",                                 LB_WHO_USER,    "unknown",         lb_route_not_found},
    /* several nodes: a signed link's file fetched from the object store; only nginx's @dl_fetch sends a link here,
     * and the handler checks the link's signature (the link is the permission, as in nginx) */
    {LB_M_GET,    "/dl/*",                                  LB_WHO_NGINX,   "dl_fetch",        lb_h_dl_fetch},
    /* MCP's Streamable HTTP (docs/MCP.md): GET is a 405, there is no server-initiated stream */
    {LB_M_POST,   "/mcp",                                   LB_WHO_MCP,     "mcp",             lb_h_mcp_post},
    {LB_M_DELETE, "/mcp",                                   LB_WHO_MCP,     "mcp",             lb_h_mcp_delete},
    {LB_M_ANY,    "*",                                      LB_WHO_NGINX,   "unknown",         lb_route_not_found},
};
/* clang-format on */
const size_t lb_routes_n = sizeof lb_routes / sizeof lb_routes[0];

static int lb_method_bit(const char *m)
{
    if (!strcmp(m, "GET") || !strcmp(m, "HEAD"))
        return LB_M_GET;
    if (!strcmp(m, "POST"))
        return LB_M_POST;
    if (!strcmp(m, "PUT"))
        return LB_M_PUT;
    if (!strcmp(m, "DELETE"))
        return LB_M_DELETE;
    if (!strcmp(m, "PATCH"))
        return LB_M_PATCH;
    return 0;
}

/* One {task} or {sandbox} segment into out[max + 1]: "" when longer than an id. */
static void lb_take_segment(const char *seg, size_t n, char *out, size_t max)
{
    if (!out)
        return;
    if (n > max)
        n = 0;
    memcpy(out, seg, n);
    out[n] = '\0';
}

int lb_route_match(const char *pattern, const char *path, const char **rest, char *task, char *sandbox)
{
    const char *p = pattern, *s = path;
    while (*p) {
        if (*p == '*' || !strncmp(p, "{path}", 6)) {
            if (*p != '*' && !*s)
                return 0;
            if (rest)
                *rest = s;
            return 1; /* the tail is last in every pattern */
        }
        if (*p == '{') {
            size_t n = strcspn(s, "/");
            if (!strncmp(p, "{task}", 6) || !strncmp(p, "{eval}", 6) || !strncmp(p, "{rollout}", 9))
                lb_take_segment(s, n, task, LB_ID_HEX_LEN);
            else if (!strncmp(p, "{sandbox}", 9))
                lb_take_segment(s, n, sandbox, LB_NODE_ID_MAX);
            else
                return 0;
            p = strchr(p, '}') + 1;
            s += n;
            continue;
        }
        if (*p++ != *s++)
            return 0;
    }
    return !*s;
}

const lb_route_def *lb_route_find(const char *path, const char *method, const lb_route_def **group)
{
    int bit = lb_method_bit(method);
    *group = NULL;
    for (size_t i = 0; i < lb_routes_n; i++) {
        const lb_route_def *d = &lb_routes[i];
        if (*group) {
            if (strcmp(d->pattern, (*group)->pattern))
                break; /* the rows of one pattern stand together */
        } else if (!lb_route_match(d->pattern, path, NULL, NULL, NULL)) {
            continue;
        } else {
            *group = d;
        }
        if (d->methods == LB_M_ANY || (d->methods & bit))
            return d;
    }
    return NULL;
}

void lb_route_allow(const lb_route_def *group, char *out, size_t outsz)
{
    static const struct {
        int bit;
        const char *text;
    } names[] = {{LB_M_GET, "GET, HEAD"}, {LB_M_POST, "POST"}, {LB_M_PUT, "PUT"}, {LB_M_DELETE, "DELETE"},
                  {LB_M_PATCH, "PATCH"}};
    int bits = 0;
    for (size_t i = 0; i < lb_routes_n; i++)
        if (!strcmp(lb_routes[i].pattern, group->pattern))
            bits |= lb_routes[i].methods;
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(bits & names[i].bit))
            continue;
        int n = snprintf(out + o, outsz - o, "%s%s", o ? ", " : "", names[i].text);
        if (n < 0 || (size_t)n >= outsz - o)
            break;
        o += (size_t)n;
    }
}

static void lb_route_not_found(lb_req *r)
{
    char shown[128];
    size_t n = strnlen(r->path, 100), o = 0;
    for (size_t i = 0; i < n && o + 1 < sizeof shown; i++) {
        unsigned char c = (unsigned char)r->path[i];
        shown[o++] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
    }
    shown[o] = '\0';
    lb_http_drain(r);
    lb_http_error(r, 404, "not_found", "There is no API route %s%s.", shown, n == 100 ? "..." : "");
}

/* The {task} or {sandbox} of the path: exactly 32 lowercase hex
 * characters, else a 404 that says what ids look like. */
static int lb_route_ids_ok(lb_req *r, const char *pattern)
{
    if (strstr(pattern, "{task}") && !lb_id_valid(r->id)) {
        r->id[0] = '\0';
        lb_http_drain(r);
        lb_http_error(r, 404, "not_found",
                      "There is no task with that id: task ids are 32 lowercase hexadecimal characters.");
        return 0;
    }
    if (strstr(pattern, "{eval}") && !lb_id_valid(r->id)) {
        r->id[0] = '\0';
        lb_http_drain(r);
        lb_http_error(r, 404, "not_found",
                      "There is no evaluation with that id: ids are 32 lowercase hexadecimal characters.");
        return 0;
    }
    if (strstr(pattern, "{rollout}") && !lb_id_valid(r->id)) {
        r->id[0] = '\0';
        lb_http_drain(r);
        lb_http_error(r, 404, "not_found",
                      "There is no rollout group with that id: ids are 32 lowercase hexadecimal characters.");
        return 0;
    }
    if (strstr(pattern, "{sandbox}") && !lb_node_id_valid(r->sandbox)) {
        lb_http_drain(r);
        lb_http_error(r, 404, "not_found",
                      "There is no sandbox with that id: sandbox ids are 32 lowercase hexadecimal characters, "
                      "prefixed with the name of the node that holds them and a dot in a cluster (n1.<32 hex>).");
        return 0;
    }
    /* several nodes: snapshot ids name their node as sandbox ids do */
    if (strstr(pattern, "/api/snapshots/{sandbox}") && !lb_snapshot_id_here(r, r->sandbox))
        return 0;
    /* several nodes: an id of another node reached this web (a balancer's map
     * that is out of date, or a client that bypassed it) */
    if (strstr(pattern, "/api/sandboxes/{sandbox}") && !lb_sbx_id_here(r, r->sandbox))
        return 0;
    return 1;
}

/* What a user's own API token may reach of the sandbox API and E2B's:
 * its own sandboxes and snapshots; another user's id answers the 404 of
 * an absent one (sandbox_owner.h). The shared sandbox token reaches all. */
static int lb_route_owner_ok(lb_req *r, const lb_route_def *g)
{
    if (!r->user)
        return 1;
    if (g->who == LB_WHO_SANDBOX) {
        int snap = !strncmp(g->pattern, "/api/snapshots/{sandbox}", 24);
        if (!strstr(g->pattern, "{sandbox}") ||
            (snap ? lb_snapshot_owner_sees(r, r->sandbox) : lb_sbx_owner_sees(r, r->sandbox)))
            return 1;
        lb_http_drain(r);
        if (snap) /* the words of an absent one's 404 */
            lb_http_error(r, 404, "not_found", "There is no snapshot %s.", r->sandbox);
        else
            lb_http_error(r, 404, "not_found",
                          "There is no sandbox with id \"%s\" (it may have been deleted or expired a while ago, or "
                          "the service restarted).", r->sandbox);
        return 0;
    }
    /* E2B's volumes: another user's is a 404, as an absent one */
    if (!strncmp(r->path, "/e2b/volumes/", 13) && !lb_e2b_volume_owner_sees(r, r->path + 13)) {
        lb_http_drain(r);
        lb_e2b_error_json(r, 404, NULL, "There is no such volume.");
        return 0;
    }
    /* E2B: /sandboxes/<id>[/...] (also /v2/), and DELETE /templates/<snapshot id> */
    const char *p = r->path, *id = NULL;
    int snap = 0;
    if (!strncmp(p, "/e2b/v2/sandboxes/", 18))
        id = p + 18;
    else if (!strncmp(p, "/e2b/sandboxes/", 15))
        id = p + 15;
    else if (!strncmp(p, "/e2b/templates/", 15))
        id = p + 15, snap = 1;
    if (!id)
        return 1;
    char one[LB_NODE_ID_MAX + 1];
    size_t n = strcspn(id, "/");
    if (n > LB_NODE_ID_MAX)
        return 1; /* no id: the handler says what ids look like */
    memcpy(one, id, n);
    one[n] = '\0';
    if (!lb_node_id_valid(one) || (snap ? lb_snapshot_owner_sees(r, one) : lb_sbx_owner_sees(r, one)))
        return 1;
    char msg[256];
    if (snap)
        snprintf(msg, sizeof msg, "There is no snapshot %s.", one);
    else
        snprintf(msg, sizeof msg, "There is no sandbox with id \"%s\" (it may have been deleted or expired a while "
                 "ago, or the service restarted).", one);
    lb_http_drain(r);
    lb_e2b_error_json(r, 404, NULL, msg);
    return 0;
}

/* The one place that enforces a route's lb_who: the credentials, the
 * shape of the path's ids, then what the caller may see of them. Answers
 * (401, 403, 404) and returns 0 when r may not go on. */
static int lb_route_admit(lb_req *r, const lb_route_def *g)
{
    int ok = 1;
    switch (g->who) {
    case LB_WHO_NGINX: break;
    case LB_WHO_SANDBOX: ok = lb_sandbox_auth_ok(r); break;
    case LB_WHO_ROLLOUT: ok = lb_rollout_auth_ok(r); break;
    case LB_WHO_E2B: ok = lb_e2b_auth_ok(r); break;
    case LB_WHO_E2B_VOLUME: ok = lb_e2b_volume_auth_ok(r); break;
    case LB_WHO_MCP: ok = lb_mcp_auth_ok(r); break;
    case LB_WHO_ANYONE:
    case LB_WHO_PREVIEW: ok = r->cfg->n_users || lb_auth_request_ok(r); break;
    case LB_WHO_USER:
    case LB_WHO_OWNER: ok = lb_auth_request_ok(r); break;
    default: /* a row without a rule is nobody's: closed, not open */
        lb_http_error(r, 500, NULL, "This route has no access rule.");
        return 0;
    }
    if (!ok)
        return 0;
    if (!lb_route_ids_ok(r, g->pattern))
        return 0;
    if ((g->who == LB_WHO_SANDBOX || g->who == LB_WHO_E2B) && !lb_route_owner_ok(r, g))
        return 0;
    if (g->who == LB_WHO_OWNER)
        return lb_auth_task_visible(r);
    if (g->who == LB_WHO_PREVIEW)
        return lb_artifact_preview_ok(r);
    return 1;
}

void lb_route(lb_req *r)
{
    /* Every route, the sandbox API and /metrics included: a Host that is
     * not ours (DNS rebinding) and a state change from another origin or
     * a generated file are refused before anything else (auth.c). */
    if (!lb_auth_host_ok(r) || !lb_auth_origin_ok(r)) {
        r->route = "refused";
        return;
    }
    /* E2B's protocol: on an E2B sandbox host name (<port>-<id>.<e2b_domain>) every
     * path is that sandbox's envd: /health is /e2b/sandbox/health */
    char host[256];
    int port;
    const char *hv = lb_http_param(r, "HTTP_HOST");
    if (hv && strncmp(r->path, "/e2b/", 5) && lb_cfg_host_split(hv, strlen(hv), host, sizeof host, &port) &&
        lb_cfg_e2b_host(r->cfg, host) && strlen(r->path) + 12 < sizeof r->path) {
        memmove(r->path + 12, r->path, strlen(r->path) + 1);
        memcpy(r->path, "/e2b/sandbox", 12);
    }
    /* E2B's signed file URLs built from E2B_SANDBOX_URL's origin: /files at
     * the root, with a signature that names the sandbox (e2b/e2b_sign.h) */
    if (!strcmp(r->path, "/files") && r->query && strstr(r->query, "signature=")) {
        memmove(r->path + 12, r->path, strlen(r->path) + 1);
        memcpy(r->path, "/e2b/sandbox", 12);
    }
    const lb_route_def *g, *d = lb_route_find(r->path, r->method, &g);
    r->route = (d ? d : g)->route;
    /* matched already (lb_route_find); this takes the ids and the tail */
    (void)lb_route_match(g->pattern, r->path, &r->rest, r->id, r->sandbox);
    if (!lb_route_admit(r, g))
        return;
    if (!d) {
        char allow[64];
        lb_route_allow(g, allow, sizeof allow);
        lb_http_drain(r);
        lb_http_method_not_allowed(r, allow);
        return;
    }
    d->handler(r);
}
