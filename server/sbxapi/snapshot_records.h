/* The web's own records of snapshots, beside the database: who owns one
 * (snapshot_owners/<id>, sandbox_owner.c) and E2B's sandbox and name of it
 * (e2b_snapshots/<id>, e2b/e2b_snapshot_info.c). A delete through the API
 * removes them at once; a snapshot that sandboxd drops by age
 * (sandbox_state_max_age_s) tells the web nothing, so this sweep removes
 * the records whose snapshot sandboxd no longer lists: at the web's start
 * and at each list of the snapshots. */
#ifndef LB_SNAPSHOT_RECORDS_H
#define LB_SNAPSHOT_RECORDS_H

#include "common/config.h"
#include "llmbox/sandbox.h"

#include <stddef.h>
#include <time.h>

/* Removes this node's records whose snapshot sandboxd does not list. Does
 * nothing when sandboxd cannot be asked or its list may be cut short: a
 * record is removed only when its snapshot is known to be gone. */
void lb_snapshot_records_sweep(const lb_config *cfg);
/* The same with a list the caller already has: st[n], sandboxd's states
 * as listed by a call begun at asked (time(NULL) taken before it). */
void lb_snapshot_records_drop_unlisted(const lb_config *cfg, const lbsb_state *st, size_t n, time_t asked);

#endif
