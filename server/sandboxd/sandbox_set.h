/*
 * The daemon's live sandboxes (sandbox_set.c): the one list every owned or
 * leased sandbox is on, and the lookups over it. The warm pool's sandboxes
 * are not on it (pool.h). Event loop thread only.
 */
#ifndef LBSD_SANDBOX_SET_H
#define LBSD_SANDBOX_SET_H

#include "sandboxd/objects.h"

/* The first live sandbox (then ->next), or NULL. */
lbsd_sandbox *lbsd_set_first(void);
/* How many are live. */
int lbsd_set_count(void);
/* Changes whenever a sandbox joins or leaves the set: what the loop's
 * caches of the list (its active set, the lifecycle scans) check. */
unsigned lbsd_set_gen(void);
/* Puts sb at the head of the set. */
void lbsd_set_add(lbsd_sandbox *sb);
/* Takes sb off the set (no-op if it is not on it). */
void lbsd_set_remove(lbsd_sandbox *sb);
/* c's sandbox of that id, or NULL: others' sandboxes do not exist for c. */
lbsd_sandbox *lbsd_set_find(const lbsd_conn *c, const char *id);
/* The live sandbox of that id, whichever connection holds it, or NULL (a
 * save's end finds the sandbox it froze). */
lbsd_sandbox *lbsd_sandbox_by_id(const char *id);

#endif
