/* One watcher per web process for the open event streams (sse_watch.c).
 *
 * A stream registers its task and sleeps on its thread's eventfd; the
 * watcher thread notices new events of the watched tasks in the store and
 * writes to the eventfd of each stream that has not sent them yet. The
 * store stays the source of truth: a woken stream reads by seq itself, so
 * a late or needless wake loses and repeats nothing. A stream the watcher
 * cannot take (no watcher, the table full) polls the store on its own.
 */
#ifndef LB_SSE_WATCH_H
#define LB_SSE_WATCH_H

#include <stdint.h>

#include "common/status.h"

#define LB_SSE_WATCH_TICK_MS 100   /* how often the watcher looks */
#define LB_SSE_WATCH_BACKSTOP_MS 1000 /* on PostgreSQL, besides its notifications (several nodes) */
#define LB_SSE_WATCH_MAX 4096      /* tasks watched at once, at most */

/* One open stream; lives in the stream's own frame. Fields belong to
 * sse_watch.c (read and written under its lock). */
typedef struct lb_sse_waiter {
    struct lb_sse_waiter *next; /* in its task's list */
    int fd;                     /* eventfd the watcher writes to */
    int slot;                   /* its task in the table; -1: not watched */
    int64_t sent;               /* newest seq the stream has sent */
    int woken;                  /* fd written since the stream last reported */
} lb_sse_waiter;

/* Starts the watcher thread with its own connection to db_path, for at
 * most max_tasks tasks at once (capped at LB_SSE_WATCH_MAX). */
LB_MUST_CHECK int lb_sse_watch_start(const char *db_path, int max_tasks);
/* Stops and joins the thread and closes its connection; streams still
 * open go on polling on their own. */
void lb_sse_watch_stop(void);

/* Registers stream w of task id, which has sent up to seq `sent` and
 * waits on fd (an eventfd). Call before the stream's first read of the
 * store, so that nothing committed after that read can be missed. 1 when
 * watched; 0 when the stream must poll (no watcher, or LB_SSE_WATCH_MAX
 * tasks already watched). */
int lb_sse_watch_add(lb_sse_waiter *w, const char *id, int fd, int64_t sent);
/* Before the stream waits: it has sent up to `sent`. Writes to its fd
 * at once when the watcher already knows of newer events. 1 while
 * watched; 0 when the watcher stopped (poll from now on). */
int lb_sse_watch_report(lb_sse_waiter *w, int64_t sent);
/* When the stream ends (after a successful add). */
void lb_sse_watch_remove(lb_sse_waiter *w);

#endif
