/* Per-user limits on starting tasks (user_limits.c). */
#ifndef LB_WEB_USER_LIMITS_H
#define LB_WEB_USER_LIMITS_H

#include <stdint.h>

#include "common/status.h"
#include "web/request.h"

struct lb_store;
typedef struct lb_start_ticket {
    int user;                  /* index in the configuration's users, -1: none taken */
    int slot;
    int64_t old, at;           /* the slot's time before and after the take (wall clock, ms) */
    const char *name;          /* the user's name (the configuration's) */
    struct lb_store *store;    /* the request's connection, for the refund */
} lb_start_ticket;
/* Before a task is made for r (create, rerun): its user's tasks queued or
 * running and its starts in the last minute. Answers 429 and returns
 * LB_E_BUSY when over a limit (the store's status, answered, when it
 * cannot count); else takes a start (give it back with lb_limits_refund
 * when no task is made) and returns LB_OK. */
LB_MUST_CHECK int lb_limits_start(lb_req *r, lb_start_ticket *t);
void lb_limits_refund(lb_start_ticket *t);
/* The largest upload r may send for one task (bytes). */
uint64_t lb_limits_upload(const lb_req *r);

#endif
