/* E2B's volumes of a cluster's nodes, for finding them from any web
 * (several nodes, schema v17).
 *
 * A volume lives in one node's sandboxd (volumes/volume_store.h: a
 * sandbox writes it through a live bind mount, which no object store
 * gives), and its id names that node ("<node>.<32 hex>", as an API
 * sandbox's) so the balancer routes its calls there. What any web must
 * answer without asking that node is kept here, one row per volume: a
 * key's list on every node, a name taken by the key anywhere (one per
 * owner in the cluster: the unique index is the arbiter of two creates
 * racing on two nodes), and which node holds the volume a create mounts
 * by name. The row is written by the holder's web once its sandboxd made
 * the volume and deleted once sandboxd deleted it; sandboxd stays the truth
 * for the volume itself, so its web drops a row of its own node that
 * sandboxd no longer has whenever it finds one (e2b/e2b_volume.c). */
#ifndef LB_STORE_VOLUME_H
#define LB_STORE_VOLUME_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/store.h"

#define LB_VOL_OWNER_MAX 63   /* a user's name; "" the shared token's */
#define LB_VOL_NAME_MAX 64    /* E2B's volume name (sandboxd checks its shape) */
#define LB_VOL_ROWS_MAX 10000 /* one walk's cap: every key's volumes of a cluster we run */

/* One volume's row. */
typedef struct lb_vol_row {
    const char *id;    /* "<node>.<32 hex>" */
    const char *owner; /* the user whose key made it, "" the shared token */
    const char *name;
    const char *node;  /* the id's prefix */
    int64_t created_ms;
} lb_vol_row;

/* Inserts row, or replaces the row of its id. LB_E_EXISTS when its owner
 * has another volume of that name (on any node); LB_E_INVAL for an id
 * that names no node or another node than row->node, or a field past its
 * cap. */
LB_MUST_CHECK int lb_store_vol_put(lb_store *s, const lb_vol_row *row);
/* Deletes the row of id (LB_OK when there was none). */
LB_MUST_CHECK int lb_store_vol_delete(lb_store *s, const char *id);

/* One row of a walk; a nonzero return stops it and is returned. The
 * strings live until the callback returns. */
typedef int (*lb_vol_row_cb)(void *arg, const lb_vol_row *row);
/* The rows of owner (NULL: every owner's), oldest first, at most
 * LB_VOL_ROWS_MAX; name non-NULL: only that name's (one per owner). */
LB_MUST_CHECK int lb_store_vol_list(lb_store *s, const char *owner, const char *name, lb_vol_row_cb cb, void *arg);

/* Schema v17 in both dialects (store.c's migration lists). */
extern const char lb_schema_v17_volumes[];
extern const char lb_schema_pg_v17_volumes[];

#endif
