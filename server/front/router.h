/* The routing table of `llmbox web`: which handler answers which
 * "METHOD path", and who may call it (router.c). */
#ifndef LB_WEB_ROUTER_H
#define LB_WEB_ROUTER_H

#include "web/request.h"

#include <stddef.h>

/* Methods, as bits; HEAD is served as GET. LB_M_ANY: every method, those
 * no route takes (PATCH, FOO) included: the catch-all 404 rows. */
enum { LB_M_GET = 1, LB_M_POST = 2, LB_M_PUT = 4, LB_M_DELETE = 8, LB_M_PATCH = 16, LB_M_ANY = 0xff };

/* Who may call a route. The router checks it before the handler runs
 * (lb_route_admit), in this order: the credentials, the shape of the ids
 * in the path (404), what the caller may see of them (404), the method
 * (405 with Allow). 0 is no rule: the unit test refuses it. */
typedef enum lb_who {
    LB_WHO_NGINX = 1, /* the backend asks nothing: nginx.conf decides who gets
                       * here (/metrics: loopback unless the operator opens it) */
    LB_WHO_ANYONE,    /* anyone; without users, loopback clients only */
    LB_WHO_USER,      /* a user's API token or login session; without users,
                       * loopback clients only */
    LB_WHO_OWNER,     /* LB_WHO_USER, and the {task} of the path is theirs:
                       * anyone else's is a 404, as if it did not exist */
    LB_WHO_PREVIEW,   /* the preview key of the {task} (artifact_access.c);
                       * without users, loopback clients only */
    LB_WHO_SANDBOX,   /* the sandbox API token (handlers_sandboxes.c) */
    LB_WHO_ROLLOUT,   /* the sandbox API token, or a user's API token or login
                       * where users are configured (handlers_rollouts.c);
                       * the handlers show a group to its maker only */
    /* E2B's protocol (docs/E2B.md) */
    LB_WHO_E2B,       /* the sandbox API token as X-API-KEY (e2b_api.c); envd's
                       * /e2b/sandbox/... checks its sandbox's access token */
    LB_WHO_E2B_VOLUME, /* the Bearer token of the path's volume (E2B's volume
                       * content API, e2b_volume.c) */
    /* MCP (docs/MCP.md) */
    LB_WHO_MCP,       /* the sandbox API token, or what LB_WHO_USER takes
                       * (mcp_http.c); each tool's inner request is then
                       * admitted by its own route's rule */
} lb_who;

/* One row: a method and a path pattern. A pattern is literal text with
 *   {task}, {sandbox}  one path segment (possibly empty: its shape is
 *                      checked after the credentials, a 404 naming ids);
 *   {eval}             the same for an evaluation's id (into r->id, as
 *                      {task}: a pattern has one or the other);
 *   {path}             the rest of the path, at least one byte (r->rest);
 *   *                  the rest of the path, maybe empty (r->rest).
 * The first pattern that matches wins; the rows of that pattern stand
 * together, give the methods (their union is the Allow of a 405) and
 * share one lb_who. */
typedef struct lb_route_def {
    int methods;
    const char *pattern;
    lb_who who;
    const char *route;         /* route class: the access log's and metrics' label */
    void (*handler)(lb_req *r);
} lb_route_def;

extern const lb_route_def lb_routes[];
extern const size_t lb_routes_n;

/* Whether path matches pattern; *rest (may be NULL) gets where {path} or *
 * starts. The segments of {task} and {sandbox} go into task (33 bytes) and
 * sandbox (LB_NODE_ID_MAX + 1 bytes: several nodes's "<node>.<hex>"), each may be
 * NULL ({eval} goes into task), "" when longer than an id. Pure. */
int lb_route_match(const char *pattern, const char *path, const char **rest, char *task, char *sandbox);
/* The row for path and method, or NULL when the path's pattern does not
 * take the method; *group gets the first row of the pattern that matched
 * (there always is one: the table ends in "*"). Pure. */
const lb_route_def *lb_route_find(const char *path, const char *method, const lb_route_def **group);
/* The Allow header value of a 405 on group's pattern ("GET, HEAD, POST"). */
void lb_route_allow(const lb_route_def *group, char *out, size_t outsz);

/* Answers r: Host and Origin checks, then the row's who, then its handler. */
void lb_route(lb_req *r);

#endif
