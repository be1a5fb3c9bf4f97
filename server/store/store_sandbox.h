/* The API sandboxes of a cluster's nodes, for listing them from any web
 * (several nodes, schema v14).
 *
 * In a cluster each node runs its own web beside its sandboxd, and an API
 * sandbox lives in the registry of the web that made it
 * (sbxapi/sandbox_registry.h); the balancer routes every call on one by its
 * id's node prefix, but a list may reach any web. So each web keeps a row
 * per live API sandbox here (sbxapi/sandbox_rows.c): written when the sandbox
 * runs (created or adopted after a restart) and when it changes (pause,
 * resume, a new timeout), deleted when it goes. The web refreshes its rows'
 * seen_ms every third of node_lease_s; a list shows only rows seen within
 * the bound it is given (node_lease_s), so the sandboxes of a web that
 * died (killed, its host gone) drop out of every list within that bound,
 * and any web's sweep deletes such rows.
 *
 * seen_ms is the database's clock (as the nodes' leases: store_queue.h);
 * expires_ms is the holding web's wall clock, as its API answers it. */
#ifndef LB_STORE_SANDBOX_H
#define LB_STORE_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/store.h"

#define LB_SBX_ROW_INFO_MAX (1u << 20) /* a row's status object: the spec echo and metadata, capped far below */

/* One API sandbox's row. info is its status object as its web answers GET
 * /api/sandboxes/{id} (JSON text, with "spec" and "metadata"). */
typedef struct lb_sbx_row {
    const char *id;             /* "<node>.<32 hex>" */
    const char *node;
    int64_t created_ms, expires_ms;
    int paused;
    const char *info;
    const char *owner;          /* the user whose API token made it, "" (or NULL) the shared token (v16) */
} lb_sbx_row;

/* Writes row (insert, or replace the row of its id), seen now. LB_E_INVAL
 * for an id or node that is not one, LB_E_TOOBIG for info past its cap. */
LB_MUST_CHECK int lb_store_sbx_put(lb_store *s, const lb_sbx_row *row);
/* Replaces the row of row->id only while it is there (seen now):
 * LB_E_NOTFOUND when it is not, so a change racing the sandbox's delete
 * never brings its row back. */
LB_MUST_CHECK int lb_store_sbx_update(lb_store *s, const lb_sbx_row *row);
/* Deletes the row of id (LB_OK when there was none). */
LB_MUST_CHECK int lb_store_sbx_delete(lb_store *s, const char *id);
/* Deletes every row of node; *removed how many (a web starting: what it
 * adopts it writes again). */
LB_MUST_CHECK int lb_store_sbx_forget_node(lb_store *s, const char *node, size_t *removed);
/* Sets seen_ms of every row of node to now (the web's refresh). */
LB_MUST_CHECK int lb_store_sbx_touch(lb_store *s, const char *node);
/* Deletes the rows not seen within fresh_ms; *removed how many. */
LB_MUST_CHECK int lb_store_sbx_sweep(lb_store *s, int64_t fresh_ms, size_t *removed);

/* One row of a walk; a nonzero return stops it and is returned. The
 * strings live until the callback returns. */
typedef int (*lb_sbx_row_cb)(void *arg, const lb_sbx_row *row);
/* The rows seen within fresh_ms whose expires_ms has not passed (the
 * database's clock), oldest created first, at most limit; node "" for
 * every node's, else that node's alone (then fresh_ms 0 takes them
 * however old). */
LB_MUST_CHECK int lb_store_sbx_list(lb_store *s, const char *node, int64_t fresh_ms, int limit, lb_sbx_row_cb cb,
                                    void *arg);
/* The same, of owner's rows only (a user's list; "" the shared token's
 * own); owner NULL: every owner's, as lb_store_sbx_list. */
LB_MUST_CHECK int lb_store_sbx_list_of(lb_store *s, const char *node, const char *owner, int64_t fresh_ms, int limit,
                                       lb_sbx_row_cb cb, void *arg);

/* Schema v14 in both dialects (store.c's migration lists). */
extern const char lb_schema_v14_api_sandboxes[];
extern const char lb_schema_pg_v14_api_sandboxes[];
/* Schema v16: the rows' owner, in both dialects. */
extern const char lb_schema_v16_api_sandbox_owner[];
extern const char lb_schema_pg_v16_api_sandbox_owner[];

#endif
