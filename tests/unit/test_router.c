/* Unit tests for the routing table (server/front/router.c): every route
 * has an access rule, no pattern shadows another, and the Allow lists of
 * 405 answers are the ones the API documents. The HTTP side is
 * tests/integration/test_web.py and tests/security/test_service_input.py. */
#include "testlib.h"

#include "e2b/e2b_api.h"
#include "e2b/e2b_envd.h"
#include "web/handlers_tasks.h"
#include "front/router.h"
#include "common/node_id.h"

#include <stdio.h>
#include <string.h>

#define ID "0123456789abcdef0123456789abcdef"

static const char *const lb_methods[] = {"GET", "POST", "PUT", "DELETE"};

/* A path the pattern matches: ids for {task}, {eval} and {sandbox}, a file for
 * {path}, tail for *. */
static void lb_example(const char *pattern, const char *tail, char *out, size_t outsz)
{
    size_t o = 0;
    for (const char *p = pattern; *p && o + 40 < outsz;) {
        const char *put = NULL;
        if (!strncmp(p, "{task}", 6) || !strncmp(p, "{sandbox}", 9) || !strncmp(p, "{eval}", 6))
            put = ID;
        else if (!strncmp(p, "{path}", 6))
            put = "a/b.txt";
        else if (*p == '*')
            put = tail;
        if (put) {
            o += (size_t)snprintf(out + o, outsz - o, "%s", put);
            p = *p == '*' ? p + 1 : strchr(p, '}') + 1;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

TEST(every_route_has_a_rule)
{
    CHECK(lb_routes_n > 20);
    for (size_t i = 0; i < lb_routes_n; i++) {
        const lb_route_def *d = &lb_routes[i];
        CHECK(d->pattern && d->route && d->handler && d->methods);
        CHECK(d->who >= LB_WHO_NGINX && d->who <= LB_WHO_MCP);
        /* the rows of one pattern stand together, share their rule, and
         * take each method once */
        for (size_t j = 0; j < i; j++)
            if (!strcmp(lb_routes[j].pattern, d->pattern)) {
                CHECK(lb_routes[j].who == d->who);
                CHECK(!(lb_routes[j].methods & d->methods));
                CHECK(!strcmp(lb_routes[i - 1].pattern, d->pattern));
            }
        /* routes under a {task} say whose task it is; the sandbox API has its token */
        if (strstr(d->pattern, "{task}"))
            CHECK(d->who == LB_WHO_OWNER || d->who == LB_WHO_PREVIEW);
        if (!strncmp(d->pattern, "/api/sandboxes", 14))
            CHECK(d->who == LB_WHO_SANDBOX);
        /* E2B's routes: the key, or envd's per-sandbox token (e2b_api.c); a
         * volume's content: that volume's token (e2b_volume.c), and nothing else */
        if (!strncmp(d->pattern, "/e2b/", 5))
            CHECK(d->who == (strncmp(d->pattern, "/e2b/volumecontent/", 19) ? LB_WHO_E2B : LB_WHO_E2B_VOLUME));
        if (d->who == LB_WHO_E2B_VOLUME)
            CHECK(!strcmp(d->pattern, "/e2b/volumecontent/{path}"));
        /* "/dl/" + anything: only nginx's @dl_fetch sends a signed link there, and its
         * handler checks the signature (several nodes, handlers_dl_fetch.c) */
        if (d->who == LB_WHO_NGINX)
            CHECK(!strcmp(d->pattern, "/metrics") || !strcmp(d->pattern, "*") || !strcmp(d->pattern, "/dl/*"));
    }
    CHECK_STR(lb_routes[lb_routes_n - 1].pattern, "*"); /* every path has a row */
}

TEST(no_pattern_shadows_another)
{
    char path[256];
    for (size_t i = 0; i < lb_routes_n; i++) {
        const lb_route_def *d = &lb_routes[i], *g = NULL;
        for (int t = 0; t < 2; t++) {
            lb_example(d->pattern, t ? "x/y" : "", path, sizeof path);
            if (!t && !strcmp(d->pattern, "*"))
                continue; /* "" is no request path */
            for (size_t m = 0; m < sizeof lb_methods / sizeof lb_methods[0]; m++) {
                const lb_route_def *f = lb_route_find(path, lb_methods[m], &g);
                if (!g || strcmp(g->pattern, d->pattern))
                    printf("  %s (%s) is taken by %s\n", path, d->pattern, g ? g->pattern : "nothing");
                CHECK(g && !strcmp(g->pattern, d->pattern));
                if (d->methods != LB_M_ANY && (d->methods & (1 << m)))
                    CHECK(f == d);
            }
        }
    }
}

TEST(allow_lists)
{
    static const char *const want[][2] = {
        {"/metrics", "GET, HEAD"},
        {"/api/health", "GET, HEAD"},
        {"/api/session", "GET, HEAD"},
        {"/api/login", "POST"},
        {"/api/logout", "POST"},
        {"/api/models", "GET, HEAD"},
        {"/api/info", "GET, HEAD"},
        {"/api/images", "GET, HEAD"},
        {"/api/tools", "GET, HEAD"},
        {"/api/tasks", "GET, HEAD, POST"},
        {"/api/tasks/" ID, "GET, HEAD, DELETE"},
        {"/api/tasks/" ID "/events", "GET, HEAD"},
        {"/api/tasks/" ID "/trajectory", "GET, HEAD"},
        {"/api/tasks/" ID "/tokens.jsonl", "GET, HEAD"},
        {"/api/tasks/" ID "/cancel", "POST"},
        {"/api/tasks/" ID "/rerun", "POST"},
        {"/api/tasks/" ID "/messages", "POST"},
        {"/api/tasks/" ID "/fork", "POST"},
        {"/api/tasks/" ID "/rounds/1/a.txt", "GET, HEAD"},
        {"/api/tasks/" ID "/shares", "GET, HEAD, POST"},
        {"/api/tasks/" ID "/shares/" ID, "DELETE"},
        {"/api/shared/" ID, "GET, HEAD"},
        {"/api/tasks/" ID "/artifacts", "GET, HEAD"},
        {"/api/tasks/" ID "/artifacts/a/b.txt", "GET, HEAD"},
        {"/api/tasks/" ID "/bundle.zip", "GET, HEAD"},
        {"/api/tasks/" ID "/bundle.tar.gz", "GET, HEAD"},
        {"/api/tasks/" ID "/preview/" ID "/page.html", "GET, HEAD"},
        {"/api/evals", "GET, HEAD, POST"},
        {"/api/evals/" ID, "GET, HEAD, DELETE"},
        {"/api/evals/" ID "/results.jsonl", "GET, HEAD"},
        {"/api/evals/" ID "/summary.md", "GET, HEAD"},
        {"/api/evals/" ID "/cancel", "POST"},
        {"/api/rollouts", "POST"},
        {"/api/rollouts/" ID, "GET, HEAD, DELETE"},
        {"/api/rollouts/" ID "/events", "GET, HEAD"},
        {"/api/rollouts/" ID "/cancel", "POST"},
        {"/api/rollouts/" ID "/samples/0/trajectory", "GET, HEAD"},
        {"/api/sandboxes", "GET, HEAD, POST"},
        {"/api/sandboxes/" ID, "GET, HEAD, DELETE"},
        {"/api/sandboxes/" ID "/exec", "POST"},
        {"/api/sandboxes/" ID "/tools/bash", "POST"},
        {"/api/sandboxes/" ID "/files/tmp/x", "GET, HEAD, PUT"},
        {"/api/sandboxes/" ID "/stat/tmp/x", "GET, HEAD"},   /* E2B's protocol */
        {"/api/sandboxes/" ID "/list/tmp", "GET, HEAD"},
        /* follow-ups */
        {"/api/sandboxes/" ID "/pause", "POST"},
        {"/api/sandboxes/" ID "/resume", "POST"},
        {"/api/sandboxes/" ID "/snapshot", "POST"},
        {"/api/snapshots", "GET, HEAD"},
        {"/api/snapshots/" ID, "DELETE"},
        {"/dl/" ID "/a/b.txt", "GET, HEAD"}, /* several nodes */
        {"/api/sandboxes/" ID "/network", "GET, HEAD, PATCH"}, /* a sandbox's network policy and record */
        {"/api/tasks/" ID "/network", "GET, HEAD"},
        {"/mcp", "POST, DELETE"},
        {"/api/images/pull", "POST"}, /* image pulls sandboxd runs for the web */
        {"/api/images/jobs/" ID, "GET, HEAD"},
        {"/e2b/volumes", "GET, HEAD, POST"}, /* E2B's volumes (e2b_volume.c) */
        {"/e2b/volumes/" ID, "GET, HEAD, DELETE"},
    };
    char allow[64];
    size_t seen = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const lb_route_def *g = NULL;
        /* PATCH: only the routes that list it take it; every other known path answers 405 */
        if (strstr(want[i][1], "PATCH"))
            CHECK(lb_route_find(want[i][0], "PATCH", &g) != NULL && g);
        else
            CHECK(lb_route_find(want[i][0], "PATCH", &g) == NULL && g && g->methods != LB_M_ANY);
        if (!g)
            continue;
        lb_route_allow(g, allow, sizeof allow);
        if (strcmp(allow, want[i][1]))
            printf("  %s: Allow %s, want %s\n", want[i][0], allow, want[i][1]);
        CHECK_STR(allow, want[i][1]);
        for (size_t j = 0; j < lb_routes_n; j++)
            seen += !strcmp(lb_routes[j].pattern, g->pattern);
    }
    /* every row that takes a method is in the list above */
    size_t rows = 0;
    for (size_t j = 0; j < lb_routes_n; j++)
        rows += lb_routes[j].methods != LB_M_ANY;
    CHECK(seen == rows);
}

TEST(methods_and_unknown_paths)
{
    const lb_route_def *g = NULL, *d;
    d = lb_route_find("/api/tasks", "HEAD", &g);
    CHECK(d && d->handler == lb_h_task_list);
    d = lb_route_find("/api/tasks", "POST", &g);
    CHECK(d && d->handler == lb_h_task_create);
    d = lb_route_find("/api/tasks/" ID, "DELETE", &g);
    CHECK(d && d->handler == lb_h_task_delete);
    /* unknown paths: a 404 row, whatever the method, under the rule of their part */
    d = lb_route_find("/api/nothing", "FOO", &g);
    CHECK(d && d->methods == LB_M_ANY && d->who == LB_WHO_USER && !strcmp(d->route, "unknown"));
    d = lb_route_find("/api/tasks/" ID "/nothing", "GET", &g);
    CHECK(d && d->methods == LB_M_ANY && d->who == LB_WHO_OWNER);
    d = lb_route_find("/api/tasks/" ID "/artifacts/", "GET", &g);
    CHECK(d && d->methods == LB_M_ANY && d->who == LB_WHO_OWNER);
    d = lb_route_find("/api/sandboxes/" ID "/files/", "PUT", &g);
    CHECK(d && d->methods == LB_M_ANY && d->who == LB_WHO_SANDBOX);
    d = lb_route_find("/api/sandboxesx", "GET", &g);
    CHECK(d && d->who == LB_WHO_USER);
    d = lb_route_find("/api", "GET", &g);
    CHECK(d && d->who == LB_WHO_NGINX);
    d = lb_route_find("/favicon.ico", "GET", &g);
    CHECK(d && d->who == LB_WHO_NGINX && !strcmp(d->pattern, "*"));
    /* preview links come before the owner's routes: no login, a key */
    d = lb_route_find("/api/tasks/" ID "/preview/", "GET", &g);
    CHECK(d && d->who == LB_WHO_PREVIEW);
    d = lb_route_find("/api/tasks/" ID "/preview", "GET", &g);
    CHECK(d && d->who == LB_WHO_OWNER && d->methods == LB_M_ANY);
    /* E2B: envd of every sandbox first, then the control plane */
    d = lb_route_find("/e2b/sandbox/process.Process/Start", "POST", &g);
    CHECK(d && d->handler == lb_h_e2b_envd);
    d = lb_route_find("/e2b/sandboxes/" ID "/timeout", "POST", &g);
    CHECK(d && d->handler == lb_h_e2b_api);
    d = lb_route_find("/e2b/v2/sandboxes", "GET", &g);
    CHECK(d && d->handler == lb_h_e2b_api && d->who == LB_WHO_E2B);
    d = lb_route_find("/e2bx", "GET", &g);
    CHECK(d && d->who == LB_WHO_NGINX);
}

TEST(match_takes_ids_and_rest)
{
    char task[33] = "x", sbx[33] = "x";
    const char *rest = NULL;
    CHECK(lb_route_match("/api/tasks/{task}/artifacts/{path}", "/api/tasks/" ID "/artifacts/a%20b/c", &rest, task,
                         sbx));
    CHECK_STR(task, ID);
    CHECK_STR(rest, "a%20b/c");
    CHECK(!lb_route_match("/api/tasks/{task}/artifacts/{path}", "/api/tasks/" ID "/artifacts/", &rest, task, sbx));
    CHECK(lb_route_match("/api/sandboxes/{sandbox}/*", "/api/sandboxes/" ID "/", &rest, task, sbx));
    CHECK_STR(sbx, ID);
    CHECK_STR(rest, "");
    /* a segment longer than an id is no id; an empty one neither */
    CHECK(lb_route_match("/api/tasks/{task}", "/api/tasks/" ID "0", NULL, task, NULL));
    CHECK_STR(task, "");
    CHECK(lb_route_match("/api/tasks/{task}", "/api/tasks/", NULL, task, NULL));
    CHECK_STR(task, "");
    CHECK(!lb_route_match("/api/tasks", "/api/tasks/", NULL, NULL, NULL));
    CHECK(!lb_route_match("/api/tasks/{task}", "/api/tasks/" ID "/", NULL, NULL, NULL));
    CHECK(lb_route_match("*", "/anything/at/all", &rest, NULL, NULL) && !strcmp(rest, "/anything/at/all"));
}

/* several nodes: {sandbox} takes "<node>.<32 hex>" (up to LB_NODE_ID_MAX), {task} only 32 */
TEST(match_takes_node_ids)
{
    char task[33] = "x", sbx[LB_NODE_ID_MAX + 1] = "x", name63[64], path[300];
    const char *rest = NULL;
    CHECK(lb_route_match("/api/sandboxes/{sandbox}/*", "/api/sandboxes/n1." ID "/exec", &rest, task, sbx));
    CHECK_STR(sbx, "n1." ID);
    CHECK_STR(rest, "exec");
    CHECK(lb_route_match("/api/tasks/{task}", "/api/tasks/n1." ID, NULL, task, NULL));
    CHECK_STR(task, "");
    memset(name63, 'a', 63);
    name63[63] = '\0';
    snprintf(path, sizeof path, "/api/sandboxes/%s.%s", name63, ID);
    CHECK(lb_route_match("/api/sandboxes/{sandbox}", path, NULL, NULL, sbx) && strlen(sbx) == LB_NODE_ID_MAX);
    snprintf(path, sizeof path, "/api/sandboxes/%sb.%s", name63, ID);
    CHECK(lb_route_match("/api/sandboxes/{sandbox}", path, NULL, NULL, sbx));
    CHECK_STR(sbx, ""); /* longer than any id */
}

int main(void)
{
    RUN(every_route_has_a_rule);
    RUN(no_pattern_shadows_another);
    RUN(allow_lists);
    RUN(methods_and_unknown_paths);
    RUN(match_takes_ids_and_rest);
    RUN(match_takes_node_ids);
    return testlib_done();
}
