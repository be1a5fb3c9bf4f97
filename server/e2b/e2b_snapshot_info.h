/* What E2B says about a snapshot that llmbox's saved state does not keep:
 * the sandbox it was taken of and the name createSnapshot({name}) gave it,
 * so that listSnapshots({sandboxId}) and listSnapshots({name}) can filter
 * and createSnapshot answers its names. One small JSON file per snapshot,
 * e2b_snapshots/<id> beside the database (where the web writes its lease
 * records and snapshot_owners/), written atomically, read with a cap; a
 * snapshot without one (made by the native API, or before this) has no
 * name and no sandbox, so a filter leaves it out. */
#ifndef LB_E2B_SNAPSHOT_INFO_H
#define LB_E2B_SNAPSHOT_INFO_H

#include "common/node_id.h"
#include "common/status.h"
#include "web/request.h"

#define LB_E2B_SNAP_NAME_MAX 64 /* a snapshot's name: 1 to 64 of [A-Za-z0-9._-] */

typedef struct lb_e2b_snap_info {
    char sandbox[LB_NODE_ID_MAX + 1]; /* "" when not known */
    char name[LB_E2B_SNAP_NAME_MAX + 1]; /* "" when none */
} lb_e2b_snap_info;

/* Whether name is a snapshot name this service keeps (1 to 64 of
 * [A-Za-z0-9._-]). */
int lb_e2b_snap_name_ok(const char *name);
/* Records snapshot id's sandbox and name (either may be ""). A record that
 * cannot be written is logged: the snapshot then has no name. */
void lb_e2b_snap_info_save(lb_req *r, const char *id, const lb_e2b_snap_info *in);
/* Reads snapshot id's record into out; LB_OK, LB_E_NOTFOUND when there is
 * none, LB_E_INVAL when it is not one this service wrote (never trusted). */
LB_MUST_CHECK int lb_e2b_snap_info_load(lb_req *r, const char *id, lb_e2b_snap_info *out);
/* Removes snapshot id's record (its snapshot was deleted). */
void lb_e2b_snap_info_forget(lb_req *r, const char *id);

#endif
