/* The access log and the HTTP metrics of `llmbox web` (access.c). */
#ifndef LB_WEB_ACCESS_H
#define LB_WEB_ACCESS_H

#include <stddef.h>
#include <stdint.h>

#include "web/request.h"

/* Starts counting the bytes the request writes (call before any output). */
void lb_access_begin(lb_req *r);
/* Bytes written so far, head included. */
int64_t lb_access_bytes(const lb_req *r);
/* The request is answered: takes its duration, its bytes and the FastCGI
 * parameters the log line names (client, request id), before
 * FCGX_Finish_r frees them. */
void lb_access_close(lb_req *r, int64_t t0_ms);
/* After FCGX_Finish_r (the answer is with nginx, so the log line's
 * formatting and write are not in the client's wait): one access line
 * {"msg":"request", method, route, path, status, bytes, duration_ms,
 * task?, new_task?, client, user?, request_id?} (successful health checks
 * and scrapes at debug level only) and the request's counts in
 * llmbox_http_requests_total and llmbox_http_request_duration_seconds,
 * from what lb_access_close took and r's own fields. */
void lb_access_log(const lb_req *r);
/* The path as any log line may show it: cut to outsz - 1 bytes, a preview
 * link's key replaced by "-". */
void lb_access_path(const char *in, char *out, size_t outsz);

#endif
