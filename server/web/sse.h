/* GET /api/tasks/{id}/events, the task's event stream (sse.c). */
#ifndef LB_WEB_SSE_H
#define LB_WEB_SSE_H

#include <stddef.h>
#include <stdint.h>

#include "web/request.h"

void lb_h_task_events(lb_req *r);
/* The event id a stream resumes after, from a Last-Event-ID value (or the
 * last_event_id query parameter) of n bytes: 1 to 18 ASCII digits. Any
 * other value (empty, signed, spaced, longer) is 0: the stream replays
 * from its first event, so a garbled id never loses events. Pure. */
int64_t lb_sse_parse_last_id(const char *v, size_t n);

#endif
