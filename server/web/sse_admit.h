/* Admission of event streams (GET /api/tasks/{id}/events).
 *
 * A stream holds one of the web's worker threads for as long as it is
 * open, so one client with many streams could take every thread and
 * freeze everyone's API (the second security review: 40 streams of one user took all 32).
 * Two bounds, both checked before the stream's answer starts:
 *   - per client: at most per_client streams per user (with users) or per
 *     client address (REMOTE_ADDR, which nginx sets from the connection;
 *     without users only loopback clients are served anyway);
 *   - in total: at most `total` streams, which the web sets to
 *     web_threads minus a reserve, so requests always have threads that no
 *     stream can take.
 * Over either: 429 too_many_streams. The table is small (one slot per
 * possible stream) and guarded by one mutex.
 */
#ifndef LB_SSE_ADMIT_H
#define LB_SSE_ADMIT_H

#include <stddef.h>

#include "common/status.h"

#define LB_SSE_KEY_MAX 72   /* "u:" + user name, or "a:" + an address */

/* Once, before the worker threads (again: resets; for tests). */
LB_MUST_CHECK int lb_sse_admit_init(int total, int per_client);
/* Takes a place for a stream of client `key`: LB_OK (*slot set; give it
 * back with lb_sse_admit_release), LB_E_TOOBIG (the client has
 * per_client streams open) or LB_E_BUSY (total streams open). */
LB_MUST_CHECK int lb_sse_admit_take(const char *key, int *slot);
void lb_sse_admit_release(int slot);
/* Streams open now, of one client (key) or all (key NULL). */
int lb_sse_admit_count(const char *key);
/* The limits in force. */
int lb_sse_admit_total(void);
int lb_sse_admit_per_client(void);
/* The reserve for web_threads threads and a configured reserve: at most a
 * quarter of the threads, so small setups keep streams. Pure. */
int lb_sse_reserve_for(int web_threads, int reserve);

#endif
