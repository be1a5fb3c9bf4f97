/* several nodes: the tombstones of deleted tasks (store_tombstone.c).
 *
 * A task deleted through one web leaves copies of its files on other
 * hosts (each web's artifacts/ is the object store's cache there), and a
 * host's nginx serves a signed /dl/ link from its copy without asking its
 * backend. So deleting a task's row leaves a tombstone (a trigger, in the
 * same statement, on either engine), and every web looks for new ones
 * about once a second and removes its copies (web/tombstones.c): a deleted
 * task's links stop everywhere within about a second. Tombstones are kept
 * for as long as a link can live (download_link_ttl_s) and a day more.
 */
#ifndef LB_STORE_TOMBSTONE_H
#define LB_STORE_TOMBSTONE_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/store.h"

/* One task deleted at deleted_ms (the database's clock); a nonzero return
 * stops the walk and is returned. */
typedef int (*lb_tombstone_cb)(void *arg, const char *task_id, int64_t deleted_ms);

/* The tombstones from since_ms on (the database's clock, inclusive), the
 * oldest first, at most limit; *newest the latest deleted_ms seen (left
 * as it was when none). */
LB_MUST_CHECK int lb_store_tombstones_since(lb_store *s, int64_t since_ms, int limit, lb_tombstone_cb cb, void *arg,
                                            int64_t *newest);
/* Removes the tombstones older than keep_s seconds; *removed how many. */
LB_MUST_CHECK int lb_store_tombstones_trim(lb_store *s, int64_t keep_s, size_t *removed);

/* Schema v13 in both dialects (store.c's migration lists). */
extern const char lb_schema_v13_tombstones[];
extern const char lb_schema_pg_v13_tombstones[];

#endif
