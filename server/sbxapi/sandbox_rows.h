/* The store's rows of this web's API sandboxes, so that any web of a
 * cluster lists every node's (several nodes; the table is
 * store/store_sandbox.h).
 *
 * Kept only when node_name is set (a cluster); on one machine every
 * function here does nothing and the list is the registry's alone. The
 * registry (sandbox_registry.c) writes a sandbox's row when it runs
 * (created, or adopted after a restart), rewrites it when it is paused,
 * resumed or given a new timeout, and deletes it before its delete
 * answers. A thread refreshes the node's rows every third of node_lease_s,
 * deletes rows of the node that the registry no longer holds, writes
 * again those it holds that are missing (a write that failed), and sweeps
 * every node's rows not seen for twice node_lease_s. Writes go over one
 * store connection of this module's, one at a time; a failed one is
 * logged and the refresh mends it. */
#ifndef LB_SANDBOX_ROWS_H
#define LB_SANDBOX_ROWS_H

#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/status.h"
#include "store/store.h"
#include "sbxapi/sandbox_registry.h"

/* With node_name set: deletes the node's rows left by the web before (what
 * lb_sbx_leases_start adopts is written again) and starts the refresh
 * thread; LB_OK and nothing else without node_name. Call once, after
 * lb_sbx_registry_init and before lb_sbx_leases_start. LB_E_NOMEM when the
 * thread cannot start. */
LB_MUST_CHECK int lb_sbx_rows_start(const lb_config *cfg);
/* Writes s's row (it runs); deletes it again when s was removed meanwhile. */
void lb_sbx_row_put(lb_sbx *s);
/* Rewrites s's row if it is there (pause, resume, timeout). */
void lb_sbx_row_update(lb_sbx *s);
/* Deletes the row of the API sandbox id (it is being destroyed). */
void lb_sbx_row_drop(const char *id);

/* Every node's fresh sandboxes from the store, in lb_sbx_list_json's
 * shape ({"sandboxes":[...], "count", "max"}), each with its "node", and
 * its "spec" when with_spec: into *out (the caller's, cJSON_Delete). The
 * store's status otherwise (*out NULL). */
LB_MUST_CHECK int lb_sbx_rows_list(lb_store *st, const lb_config *cfg, int with_spec, cJSON **out);
/* The same, of owner's sandboxes only (a user's token: that user's on
 * every node; each row records its owner); owner NULL: every one. */
LB_MUST_CHECK int lb_sbx_rows_list_of(lb_store *st, const lb_config *cfg, const char *owner, int with_spec,
                                      cJSON **out);

#endif
