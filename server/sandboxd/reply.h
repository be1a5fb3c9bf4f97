/*
 * sandboxd's answers to a connection (reply.c): a JSON frame, optionally
 * followed by a data frame, queued in order behind a running exec.
 */
#ifndef LBSD_REPLY_H
#define LBSD_REPLY_H

#include <stddef.h>

#include "sandboxd/objects.h"

/* Queues a JSON response (r is consumed) and optionally a data frame. */
void lbsd_reply(lbsd_conn *c, cJSON *r, const void *data, size_t dlen, int with_data);
void lbsd_reply_error(lbsd_conn *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A notfound for id on c, saying so when the TTL reaper took it (the ids
 * it took are kept per connection, lbsd_conn.expired). */
void lbsd_reply_notfound(lbsd_conn *c, const char *id);
/* Clears busy and moves the replies deferred behind an exec to the output.
 * Call right after queuing the exec's own reply. */
void lbsd_conn_unbusy(lbsd_conn *c);

#endif
