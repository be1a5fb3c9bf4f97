/* What webs behind a balancer share through the store (several nodes, stateless
 * webs): the secrets links are signed with, and the per-user start windows.
 * store_shared.c. */
#ifndef LB_STORE_SHARED_H
#define LB_STORE_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/store.h"

#define LB_SECRET_MAX 128 /* a secret's text, hex: at most 127 characters */

/* The secret called name ([a-z_], 1..31): when the store has none yet,
 * candidate (NULL: none) becomes generation 1 (insert-if-absent: of webs
 * starting at once, exactly one candidate wins and every web reads that
 * one). cur gets the newest generation's value, prev the one before it
 * ("" when none); *gen the newest generation. Values are lowercase hex,
 * 32..127 characters; a stored value that is not is LB_E_INVAL.
 * LB_E_NOTFOUND: none stored and no candidate. */
LB_MUST_CHECK int lb_store_secret_get(lb_store *s, const char *name, const char *candidate,
                                      char cur[LB_SECRET_MAX], char prev[LB_SECRET_MAX], int *gen);
/* Adds fresh as the next generation of name and forgets every generation
 * older than the one it replaces (so two verify: the new and the last).
 * LB_E_EXISTS when another rotation of name came first. */
LB_MUST_CHECK int lb_store_secret_rotate(lb_store *s, const char *name, const char *fresh, int *gen);

/* A start of user's: takes one of its `limit` slots whose time is at
 * least window_ms before now_ms, atomically against every other web
 * (compare and swap on the slot's time). LB_OK with *slot and *old (the
 * slot's time before) when one was free; LB_E_BUSY with *oldest (the
 * earliest slot time: the next start may come window_ms after it) when
 * none was. */
LB_MUST_CHECK int lb_store_rate_take(lb_store *s, const char *user, int limit, int64_t now_ms, int64_t window_ms,
                                     int *slot, int64_t *old, int64_t *oldest);
/* Gives a slot taken at `at` back (its time becomes old again), unless a
 * later start took it meanwhile. */
LB_MUST_CHECK int lb_store_rate_refund(lb_store *s, const char *user, int slot, int64_t at, int64_t old);

#endif
