/* MCP's tools run the API's own routes (mcp_sub.c): a tool call becomes a
 * request of the sandbox or task API, answered in memory by lb_route, the
 * router of every HTTP request. The route's "who may call" rule, the
 * owners, the limits and the quotas therefore apply to an MCP client
 * exactly as to an HTTP one, with the same credentials (the outer
 * request's Authorization, cookies and address), and no operation exists
 * twice. */
#ifndef LB_MCP_SUB_H
#define LB_MCP_SUB_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/buf.h"
#include "common/status.h"
#include "web/request.h"

/* One answer of an inner request. */
typedef struct lb_mcp_answer {
    int status;               /* HTTP status the route answered (0: it answered nothing) */
    lb_buf head;              /* the CGI head, without the blank line */
    lb_buf body;              /* the body, at most the caller's cap */
    int cut;                  /* the body was longer than the cap */
} lb_mcp_answer;

/* Runs "method path" through lb_route with body[0..len) as its body
 * (content_type may be NULL), as the client of outer. The answer's body
 * is kept up to max bytes. LB_OK (whatever the status), LB_E_NOMEM.
 * Free a with lb_mcp_answer_free, also after a failure. */
LB_MUST_CHECK int lb_mcp_sub(lb_req *outer, const char *method, const char *path, const char *content_type,
                             const void *body, size_t len, size_t max, lb_mcp_answer *a);
void lb_mcp_answer_free(lb_mcp_answer *a);

/* The value of header name ("X-Accel-Redirect") of a's head into out;
 * 1 when there, 0 when not. */
int lb_mcp_answer_header(const lb_mcp_answer *a, const char *name, char *out, size_t outsz);
/* The answer's body as JSON (NULL when it is not). */
cJSON *lb_mcp_answer_json(const lb_mcp_answer *a);
/* A sentence for a refused answer: the API's error message (its
 * {"error":{"message"}}) or "The API answered <status>." into out. */
void lb_mcp_answer_why(const lb_mcp_answer *a, char *out, size_t outsz);

#endif
