/* Internals of `llmbox web`, shared by the files of server/web/.
 *
 * One lb_req per FastCGI request, handled start to end by one worker
 * thread, which owns its own store connection. Handlers answer through the
 * lb_http_* helpers, which write the CGI-style response head ("Status:",
 * headers, blank line) and a body to the FastCGI stream.
 */
#ifndef LB_WEB_H
#define LB_WEB_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <fcgiapp.h>

#include "common/config.h"
/* checksrc: allow unused-include (the files that include web.h use it) */
#include "common/path.h"
#include "store/store.h"

#define LB_WEB_URI_MAX 8192        /* longest request URI we look at */
#define LB_WEB_PROMPT_MAX (100u << 10)
#define LB_UPLOAD_MAX_FILES 1000          /* files in one task upload */
#define LB_UNPACK_MAX_ENTRIES 10000       /* entries of a task's archives together */
#define LB_UNPACK_MAX_RATIO 100           /* unpacked bytes per archive byte */
#define LB_UNPACK_RATIO_SLACK (1u << 20)  /* unpacked before the ratio counts */

typedef struct lb_req {
    FCGX_Request *fcgi;
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
    int64_t head_bytes;        /* bytes of the response head (access.c) */
    char new_task[33];         /* the task this request created, if any */
    size_t body_bytes;         /* request body bytes read (req_body.c): large ones trim the heap after */
    /* route parameters */
    char id[33];               /* task id, validated */
    const char *rest;          /* artifacts/{rest}: raw, percent-encoded */
    int preview;               /* served through a preview key (inline, no login) */
    /* who asks (auth.c); user NULL when no users are configured */
    const lb_user_cfg *user;
    int via_session;           /* by the session cookie (then session_id holds its value) */
    char session_id[65];
} lb_req;

/* ---- http.c ---- */
const char *lb_http_reason(int status);
/* A CGI parameter (e.g. "HTTP_LAST_EVENT_ID"), or NULL. */
const char *lb_http_param(lb_req *r, const char *name);
/* Writes the response head: status line, the given extra header lines
 * (each ending in "\r\n", may be NULL), and the blank line. */
void lb_http_head(lb_req *r, int status, const char *content_type, const char *extra);
/* Sends body as compact JSON (and frees nothing: the caller owns body). */
void lb_http_json(lb_req *r, int status, const cJSON *body, const char *extra);
/* {"error":{"code":code,"message":<formatted sentence>}} */
void lb_http_error(lb_req *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with extra header lines (each ending in "\r\n"), e.g.
 * WWW-Authenticate on a 401. code NULL: the usual code of the status. */
void lb_http_error_hdr(lb_req *r, int status, const char *code, const char *extra, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* 405 with the Allow header. */
void lb_http_method_not_allowed(lb_req *r, const char *allow);
/* Maps a store status to a response for task `id`. */
/* 507 disk_full: "The server's disk is full, so it could not <what>. ..." */
void lb_http_disk_full(lb_req *r, const char *what);
void lb_http_store_error(lb_req *r, int rc, const char *what);
/* Reads and discards what is left of the request body (up to a cap), so
 * the front end can read our early answer without a broken pipe. */
void lb_http_drain(lb_req *r);
/* Percent-decodes n bytes of in into out (outsz >= n + 1); *outlen gets
 * the decoded length (it may contain NULs, which callers refuse). '+' is
 * kept as is (only form queries use it for spaces: form=1). */
int lb_url_decode(const char *in, size_t n, char *out, size_t outsz, size_t *outlen, int form);
/* Percent-encodes s for a URI path: unreserved characters and '/' stay. */
int lb_url_encode_path(const char *s, char *out, size_t outsz);
/* Value of query parameter key (decoded) into out; LB_E_NOTFOUND if absent. */
int lb_query_get(const char *query, const char *key, char *out, size_t outsz);
/* Content-Disposition value for file name `name` (the last path component
 * is used): disposition; filename="ascii"; filename*=UTF-8''pct. */
int lb_content_disposition(const char *disposition, const char *name, char *out, size_t outsz);
/* Sends an empty response that nginx completes from an internal location
 * (X-Accel-Redirect). uri must already be percent-encoded. */
void lb_http_accel(lb_req *r, const char *uri, const char *content_type, const char *disposition);

/* ---- router.c ---- */
void lb_route(lb_req *r);

/* ---- auth.c: who asks, and what they may see ---- */
/* Once, before the worker threads: the key of preview links. */
int lb_auth_init(void);
/* Finds the user of the request (Bearer token or session cookie) and
 * checks the CSRF token of a cookie request that changes state. Without
 * users: no login, but only loopback clients. Answers (401, 403) and
 * returns 0 when the request may not go on; returns 1 otherwise. */
int lb_auth_request(lb_req *r);
/* Whether the Host of r names this service (loopback, the listen or
 * local address, allowed_hosts): answers 403 host_not_allowed and returns
 * 0 when not. Every backend route, first. */
int lb_auth_host_ok(lb_req *r);
/* For a request that changes state (not GET/HEAD/OPTIONS): whether it
 * comes from the page itself: never Origin: null, Sec-Fetch-Site
 * same-origin when sent, else an Origin naming this service when sent.
 * Answers 403 csrf and returns 0 when not. Every backend route. */
int lb_auth_origin_ok(lb_req *r);
/* The user r's credentials (Bearer token or session cookie) name, or
 * NULL; answers nothing (for /api/health, which needs no login). */
const lb_user_cfg *lb_auth_peek(lb_req *r);
/* Whether r may see task r->id: answers 404 (as for an unknown task)
 * and returns 0 when the task belongs to someone else. */
int lb_auth_task_visible(lb_req *r);
/* The owner new tasks of r get: the user's name, or NULL without users. */
const char *lb_auth_owner(const lb_req *r);
/* The preview key of task id (32 hex) into out[33]; 1 when key is it. */
void lb_auth_preview_key(const char *id, char out[33]);
int lb_auth_preview_ok(const char *id, const char *key, size_t keylen);
/* Adds "preview_base" (the URL prefix of the task's preview links) to a
 * task object. */
void lb_auth_add_preview(cJSON *task, const char *id);
/* ---- download_link.c: downloads nginx serves without the backend ---- */
/* Once, before the worker threads: reads var/web/download.key (links are
 * off, with a warning, when it is missing or download_link_ttl_s is 0). */
void lb_download_links_init(void);
/* The signed link of task_id's artifact path under key, expiring at
 * `expires` (seconds since 1970), into out. */
int lb_download_link_sign(const char *key, long long expires, const char *task_id, const char *path, char *out,
                          size_t outsz);
/* Adds "download_url" and "download_expires" to each artifact object of
 * the array (nothing when links are off). */
void lb_download_links_add(cJSON *artifacts, const char *task_id);

/* The session cookie of the request (64 hex) into out, or 0 when none. */
int lb_auth_cookie(lb_req *r, char out[65]);
/* The CSRF token of session id sid into out[65]. */
void lb_auth_csrf_token(const char *sid, char out[65]);
/* Whether Set-Cookie should carry Secure for this request. */
int lb_auth_cookie_secure(lb_req *r);

/* ---- handlers_session.c: /api/login, /api/logout, /api/session ---- */
void lb_h_login(lb_req *r);
void lb_h_logout(lb_req *r);
void lb_h_session(lb_req *r);

/* ---- user_limits.c: per-user limits on starting tasks ---- */
typedef struct lb_start_ticket {
    int user;                  /* index in lb_cfg()->users, -1: none taken */
    int slot;
    int64_t old, at;           /* the slot's time before and after the take */
} lb_start_ticket;
/* Once, before the worker threads. */
int lb_limits_init(void);
/* Before a task is made for r (create, rerun): its user's tasks queued or
 * running and its starts in the last minute. Answers 429 and returns 0
 * when over a limit; else takes a start (give it back with
 * lb_limits_refund when no task is made) and returns 1. */
int lb_limits_start(lb_req *r, lb_start_ticket *t);
void lb_limits_refund(lb_start_ticket *t);
/* The largest upload r may send for one task (bytes). */
uint64_t lb_limits_upload(const lb_req *r);

/* ---- access.c: access log and HTTP metrics ---- */
/* Starts counting the bytes the request writes (call before any output). */
void lb_access_begin(lb_req *r);
/* Bytes written so far, head included. */
int64_t lb_access_bytes(const lb_req *r);
/* One access line {"msg":"request", method, route, path, status, bytes,
 * duration_ms, task?, new_task?, client, request_id?} (successful health
 * checks and scrapes at debug level only) and the request's counts in
 * llmbox_http_requests_total and llmbox_http_request_duration_seconds. */
void lb_access_end(lb_req *r, int64_t t0_ms);
/* The path as any log line may show it: cut to outsz - 1 bytes, a preview
 * link's key replaced by "-". */
void lb_access_path(const char *in, char *out, size_t outsz);

/* ---- handlers_metrics.c: GET /metrics (Prometheus text format 0.0.4) ---- */
void lb_h_metrics(lb_req *r);

/* ---- handlers ---- */
void lb_h_health(lb_req *r);
void lb_h_models(lb_req *r);
void lb_h_tools(lb_req *r);
void lb_h_task_create(lb_req *r);
void lb_h_task_list(lb_req *r);
void lb_h_task_get(lb_req *r);
void lb_h_task_cancel(lb_req *r);
void lb_h_task_delete(lb_req *r);
void lb_h_task_events(lb_req *r);    /* sse.c */
/* The event id a stream resumes after, from a Last-Event-ID value (or the
 * last_event_id query parameter) of n bytes: 1 to 18 ASCII digits. Any
 * other value (empty, signed, spaced, longer) is 0: the stream replays
 * from its first event, so a garbled id never loses events. Pure; sse.c. */
int64_t lb_sse_parse_last_id(const char *v, size_t n);
void lb_h_trajectory(lb_req *r);
void lb_h_artifacts(lb_req *r);
void lb_h_artifact(lb_req *r);
void lb_h_bundle(lb_req *r, const char *format); /* "zip" or "tar.gz" */
/* Everything under /api/sandboxes; rest is what follows that prefix ("" or
 * "/..."). handlers_sandboxes.c */
void lb_h_sandboxes(lb_req *r, const char *rest);

/* ---- handlers_tasks.c ---- */
/* Stores task t (status queued), spawns its agent and answers 201 with the
 * task, using the task slot the caller reserved (released on failure).
 * Returns 1 when the task was stored (its folder is now the task's), 0 when
 * not (an error answer was sent; the caller removes the folder). */
int lb_task_start(lb_req *r, const lb_task_new *t);
void lb_h_task_rerun(lb_req *r);      /* handlers_rerun.c */

/* ---- task_options.c ---- */
/* network "none" or "nat" (nat only when network_allow has it): LB_OK,
 * LB_E_DENIED (not allowed here) or LB_E_INVAL, with a sentence in err. */
int lb_network_check(const char *v, char *err, size_t errsz);
/* A built image of that name: LB_OK, LB_E_INVAL or LB_E_NOTFOUND. */
int lb_image_check(const char *v, char *err, size_t errsz);
/* [{name, default}] of the built images, sorted; NULL when out of memory. */
cJSON *lb_images_list(void);
void lb_h_info(lb_req *r);            /* handlers_info.c */
/* sandboxd's ping answer with "ok":true, or {"ok":false,"message"} when it
 * cannot be reached; cached 3 s, waits at most 2 s. Caller frees.
 * handlers_info.c */
cJSON *lb_sandboxd_info(void);

/* ---- spawn.c: agent processes ---- */
/* Starts the reaper thread. Call once, before any spawn. */
int lb_spawn_init(void);
/* Atomically takes a task slot; LB_E_TOOBIG when max_concurrent_tasks are
 * already running. A taken slot is released by lb_spawn_agent's failure or
 * by the reaper when the agent exits. */
int lb_spawn_reserve(void);
void lb_spawn_unreserve(void);
int lb_spawn_running(void);
/* Spawns `self agent --task id` in its own session with output appended to
 * var/log/agent-<id>.log; uses a reserved slot. *pid_out gets the pid. */
int lb_spawn_agent(const char *id, int *pid_out, char *err, size_t errsz);
/* Asks the agent of task id to stop (SIGTERM now, SIGKILL after 1.5 s).
 * LB_E_NOTFOUND when no agent of ours runs that task. */
int lb_spawn_cancel(const char *id);
/* SIGKILLs the agent of task id and waits (up to timeout_ms) until it is
 * reaped. LB_E_NOTFOUND when there is none. */
int lb_spawn_kill_wait(const char *id, int timeout_ms);
/* Runs argv (argv[0] a path) with stdin /dev/null, captures up to max bytes
 * of stdout, kills it after timeout_ms. The caller frees *out. */
int lb_spawn_capture(char *const argv[], size_t max, int timeout_ms, char **out, size_t *outlen,
                     int *exit_status);

/* ---- bundle.c ---- */
/* The kept whole-task bundle's file, relative to artifacts/<id>/:
 * "bundle.<format>". */
int lb_bundle_name(const char *format, char *out, size_t outsz);
/* Builds (once) the whole-task bundle of a finished task: the output with
 * answer.txt and trajectory.json, kept for nginx to serve. LB_E_TOOBIG over
 * the caps; err gets a sentence. */
int lb_bundle_build(lb_store *s, const char *id, const char *format, char *err, size_t errsz);
/* Answers r (task r->id, finished) with the bundle of its output folder
 * `folder` (clean, relative), written straight into the response: nothing
 * is kept. 404 for no such folder and 413 over the caps come before the
 * head; a failure after it cuts the connection. */
void lb_bundle_stream(lb_req *r, const char *format, const char *folder, const char *disposition);

/* ---- web_main.c ---- */
/* Where agent logs go: "log/" next to the database (var/log by default),
 * a folder the service user owns. */
void lb_web_logdir(char *out, size_t outsz);
/* Crash recovery: finishes active tasks whose agent is gone. */
void lb_web_recover(lb_store *s);
/* True when pid is an `llmbox agent` process running task id (checked by
 * its command line, since a recorded pid may have been reused). */
int lb_agent_alive(int pid, const char *id);

#endif
