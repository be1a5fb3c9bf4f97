/* One request of `llmbox web`: the struct every handler gets.
 *
 * One lb_req per FastCGI request, filled by web_main.c and the router,
 * handled start to end by one worker thread, which owns its own store
 * connection. Handlers answer through the lb_http_* helpers (http.h). */
#ifndef LB_WEB_REQUEST_H
#define LB_WEB_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#define LB_WEB_URI_MAX 8192 /* longest request URI we look at */

/* Only pointers here: the files that use them include what defines them. */
struct FCGX_Request;              /* <fcgiapp.h> */
struct lb_config;                 /* common/config.h */
struct lb_user_cfg;               /* common/config.h */
typedef struct lb_store lb_store; /* store/store.h */

typedef struct lb_req {
    /* The configuration: loaded before the threads start and never written
     * after, so every worker reads it without a lock. */
    const struct lb_config *cfg;
    struct FCGX_Request *fcgi;
    lb_store *store;           /* this worker's connection; never NULL in handlers */
    const char *method;        /* "GET", "POST", ... ("HEAD" is served as GET) */
    int is_head;
    char path[LB_WEB_URI_MAX]; /* REQUEST_URI before '?', still percent-encoded */
    const char *query;         /* after '?', "" if none; percent-encoded */
    const char *content_type;  /* "" if none */
    int64_t content_length;    /* -1 if absent or unparsable */
    int responded;             /* a response head was written */
    int status;                /* for the access log */
    const char *route;         /* route class for the access log and metrics
                                * ("task", "task_events" ...; set by lb_route) */
    int64_t head_bytes;        /* bytes of the response head (set by lb_http_head) */
    char new_task[33];         /* the task this request created, if any */
    size_t body_bytes;         /* request body bytes read (req_body.c): large ones trim the heap after */
    /* route parameters (router.c) */
    char id[33];               /* {task} or {eval} of the route: validated before the handler */
    char sandbox[97];          /* {sandbox} of the route: validated before the handler; several nodes:
                                * "[<node>.]<32 hex>" (common/node_id.h) */
    const char *rest;          /* {path} or * of the route: raw, percent-encoded */
    int preview;               /* served through a preview key (inline, no login) */
    /* who asks (auth.c); user NULL when no users are configured */
    const struct lb_user_cfg *user;
    int via_session;           /* by the session cookie (then session_id holds its value) */
    char session_id[65];
} lb_req;

#endif
