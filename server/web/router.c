/* Maps "METHOD /api/..." to a handler. Routes are few and fixed, so a
 * table of path shapes is clearer than a general router. */
#include "web/web.h"

#include "common/config.h"
#include "common/util.h"

#include <stdio.h>
#include <string.h>

enum { M_GET = 1, M_POST = 2, M_DELETE = 4 };

static int lb_method_bit(const char *m)
{
    if (!strcmp(m, "GET") || !strcmp(m, "HEAD"))
        return M_GET;
    if (!strcmp(m, "POST"))
        return M_POST;
    if (!strcmp(m, "DELETE"))
        return M_DELETE;
    return 0;
}

static const char *lb_allow_text(int allowed)
{
    switch (allowed) {
    case M_GET: return "GET, HEAD";
    case M_POST: return "POST";
    case M_GET | M_POST: return "GET, HEAD, POST";
    case M_GET | M_DELETE: return "GET, HEAD, DELETE";
    default: return "GET, HEAD";
    }
}

/* Checks the method against `allowed`; answers 405 and returns 0 if wrong. */
static int lb_allow(lb_req *r, int allowed)
{
    if (lb_method_bit(r->method) & allowed)
        return 1;
    lb_http_method_not_allowed(r, lb_allow_text(allowed));
    return 0;
}

static void lb_not_found(lb_req *r)
{
    char shown[128];
    size_t n = strnlen(r->path, 100), o = 0;
    for (size_t i = 0; i < n && o + 1 < sizeof shown; i++) {
        unsigned char c = (unsigned char)r->path[i];
        shown[o++] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
    }
    shown[o] = '\0';
    lb_http_error(r, 404, "not_found", "There is no API route %s%s.", shown, n == 100 ? "..." : "");
}

/* The task id segment: exactly 32 lowercase hex characters. */
static int lb_take_id(lb_req *r, const char *seg, size_t len)
{
    if (len != LB_ID_HEX_LEN) {
        r->id[0] = '\0';
        lb_http_error(r, 404, "not_found",
                      "There is no task with that id: task ids are 32 lowercase hexadecimal characters.");
        return 0;
    }
    memcpy(r->id, seg, len);
    r->id[len] = '\0';
    if (!lb_id_valid(r->id)) {
        lb_http_error(r, 404, "not_found",
                      "There is no task with that id: task ids are 32 lowercase hexadecimal characters.");
        r->id[0] = '\0';
        return 0;
    }
    return 1;
}

/* /api/tasks/{id}/preview/{key}/{path}: a task's artifacts, inline, for
 * whoever holds the task's preview key (auth.c says why). p is what
 * follows "tasks/". Returns 0 when the path is not a preview link. */
static int lb_route_preview(lb_req *r, const char *p)
{
    const char *slash = strchr(p, '/');
    if (!slash || strncmp(slash + 1, "preview/", 8))
        return 0;
    const char *key = slash + 9, *kend = strchr(key, '/');
    if (!lb_take_id(r, p, (size_t)(slash - p)))
        return 1;
    if (!lb_allow(r, M_GET))
        return 1;
    if (!kend || !kend[1] || !lb_auth_preview_ok(r->id, key, (size_t)(kend - key))) {
        lb_http_error(r, 404, "not_found", "There is no task with id \"%s\".", r->id);
        return 1;
    }
    r->rest = kend + 1;
    r->preview = 1;
    r->route = "task_preview";
    lb_h_artifact(r);
    return 1;
}

/* The route class of /api/tasks/{id}/{sub}, for logs and metrics: a fixed
 * word, never the path (artifact names are the model's). */
static const char *lb_task_route_class(const char *sub)
{
    static const char *const exact[][2] = {
        {"events", "task_events"},         {"trajectory", "task_trajectory"}, {"cancel", "task_cancel"},
        {"rerun", "task_rerun"},           {"artifacts", "task_artifacts"},   {"bundle.zip", "task_bundle"},
        {"bundle.tar.gz", "task_bundle"},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(sub, exact[i][0]))
            return exact[i][1];
    if (!strncmp(sub, "artifacts/", 10))
        return "task_artifact";
    return "unknown";
}

void lb_route(lb_req *r)
{
    const char *p = r->path;
    /* Every route, the sandbox API and /metrics included: a Host that is
     * not ours (DNS rebinding) and a state change from another origin or
     * a generated file are refused before anything else (auth.c). */
    if (!lb_auth_host_ok(r) || !lb_auth_origin_ok(r)) {
        r->route = "refused";
        return;
    }
    /* Prometheus scrapes a fixed path outside /api/; nginx lets only
     * loopback reach it unless the operator opens it (nginx.conf). */
    if (!strcmp(p, "/metrics")) {
        r->route = "metrics";
        if (lb_allow(r, M_GET))
            lb_h_metrics(r);
        return;
    }
    if (strncmp(p, "/api/", 5) != 0) {
        lb_not_found(r);
        return;
    }
    p += 5;
    if (!strncmp(p, "sandboxes", 9) && (p[9] == '\0' || p[9] == '/')) {
        r->route = "sandboxes";
        lb_h_sandboxes(r, p + 9); /* its own auth, methods and sub-routes */
        return;
    }
    /* without users: no login, loopback clients only, for every route */
    if (!lb_cfg()->n_users && !lb_auth_request(r))
        return;
    /* the routes that need no login: health (monitoring, the page's
     * header), the login itself, and preview links (a key instead) */
    if (!strcmp(p, "health")) {
        r->route = "health";
        if (!lb_allow(r, M_GET))
            return;
        /* no login needed; with users, who is logged in sees the details */
        if (lb_cfg()->n_users)
            r->user = lb_auth_peek(r);
        lb_h_health(r);
        return;
    }
    if (!strcmp(p, "session")) {
        r->route = "session";
        if (lb_allow(r, M_GET))
            lb_h_session(r);
        return;
    }
    if (!strcmp(p, "login")) {
        r->route = "login";
        if (lb_allow(r, M_POST))
            lb_h_login(r);
        return;
    }
    if (!strcmp(p, "logout")) {
        r->route = "logout";
        if (lb_allow(r, M_POST))
            lb_h_logout(r);
        return;
    }
    if (!strncmp(p, "tasks/", 6) && lb_route_preview(r, p + 6))
        return;
    if (lb_cfg()->n_users && !lb_auth_request(r))
        return;
    if (!strcmp(p, "models")) {
        r->route = "models";
        if (lb_allow(r, M_GET))
            lb_h_models(r);
        return;
    }
    if (!strcmp(p, "info")) {
        r->route = "info";
        if (lb_allow(r, M_GET))
            lb_h_info(r);
        return;
    }
    if (!strcmp(p, "tools")) {
        r->route = "tools";
        if (lb_allow(r, M_GET))
            lb_h_tools(r);
        return;
    }
    if (!strcmp(p, "tasks")) {
        r->route = "tasks";
        if (!lb_allow(r, M_GET | M_POST))
            return;
        if (!strcmp(r->method, "POST"))
            lb_h_task_create(r);
        else
            lb_h_task_list(r);
        return;
    }
    if (strncmp(p, "tasks/", 6) != 0) {
        lb_not_found(r);
        return;
    }
    p += 6;
    const char *slash = strchr(p, '/');
    size_t idlen = slash ? (size_t)(slash - p) : strlen(p);
    r->route = "task";
    if (!lb_take_id(r, p, idlen))
        return;
    /* every route of one task, present and future: someone else's task
     * is a 404, before the method or the sub-route is even looked at */
    if (!lb_auth_task_visible(r))
        return;
    if (!slash) {
        if (!lb_allow(r, M_GET | M_DELETE))
            return;
        if (!strcmp(r->method, "DELETE"))
            lb_h_task_delete(r);
        else
            lb_h_task_get(r);
        return;
    }
    const char *sub = slash + 1;
    r->route = lb_task_route_class(sub);
    if (!strcmp(sub, "events")) {
        if (lb_allow(r, M_GET))
            lb_h_task_events(r);
    } else if (!strcmp(sub, "trajectory")) {
        if (lb_allow(r, M_GET))
            lb_h_trajectory(r);
    } else if (!strcmp(sub, "cancel")) {
        if (lb_allow(r, M_POST))
            lb_h_task_cancel(r);
    } else if (!strcmp(sub, "rerun")) {
        if (lb_allow(r, M_POST))
            lb_h_task_rerun(r);
    } else if (!strcmp(sub, "artifacts")) {
        if (lb_allow(r, M_GET))
            lb_h_artifacts(r);
    } else if (!strncmp(sub, "artifacts/", 10) && sub[10]) {
        r->rest = sub + 10;
        if (lb_allow(r, M_GET))
            lb_h_artifact(r);
    } else if (!strcmp(sub, "bundle.zip")) {
        if (lb_allow(r, M_GET))
            lb_h_bundle(r, "zip");
    } else if (!strcmp(sub, "bundle.tar.gz")) {
        if (lb_allow(r, M_GET))
            lb_h_bundle(r, "tar.gz");
    } else {
        lb_not_found(r);
    }
}
