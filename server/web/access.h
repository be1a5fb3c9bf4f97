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
/* One access line {"msg":"request", method, route, path, status, bytes,
 * duration_ms, task?, new_task?, client, user?, request_id?} (successful
 * health checks and scrapes at debug level only) and the request's counts
 * in llmbox_http_requests_total and llmbox_http_request_duration_seconds. */
void lb_access_end(lb_req *r, int64_t t0_ms);
/* The path as any log line may show it: cut to outsz - 1 bytes, a preview
 * link's key replaced by "-". */
void lb_access_path(const char *in, char *out, size_t outsz);

#endif
