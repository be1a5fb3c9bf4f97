/* E2B's volumes of a cluster's nodes; the contract is store_volume.h. */
#include "store/store_volume.h"

#include "store/db.h"
#include "store/store_priv.h"
#include "store/store_sql.h"

#include "common/node_id.h"

#include <string.h>

/* v17: one row per volume; (owner, name) unique across the cluster, as
 * one node's sandboxd keeps it unique on that node. IF NOT EXISTS: a step
 * of its own, which a test that takes a store back to an older version
 * (without undoing this one) may run again. */
const char lb_schema_v17_volumes[] =
    "CREATE TABLE IF NOT EXISTS e2b_volumes("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  owner TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  node TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX IF NOT EXISTS e2b_volumes_name ON e2b_volumes(owner, name);"
    "CREATE INDEX IF NOT EXISTS e2b_volumes_created ON e2b_volumes(created_ms, id);";
const char lb_schema_pg_v17_volumes[] =
    "CREATE TABLE IF NOT EXISTS e2b_volumes("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  owner TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  node TEXT NOT NULL,"
    "  created_ms BIGINT NOT NULL);"
    "CREATE UNIQUE INDEX IF NOT EXISTS e2b_volumes_name ON e2b_volumes(owner, name);"
    "CREATE INDEX IF NOT EXISTS e2b_volumes_created ON e2b_volumes(created_ms, id);";

/* 1 when row is one this table may hold: an id of its node, fields capped */
static int lb_vrow_ok(const lb_vol_row *row)
{
    char node[LB_NODE_ID_NAME_MAX + 1];
    return row && row->id && row->owner && row->name && row->node && lb_node_id_node(row->id, node, sizeof node) &&
           node[0] && !strcmp(node, row->node) && strlen(row->owner) <= LB_VOL_OWNER_MAX && row->name[0] &&
           strlen(row->name) <= LB_VOL_NAME_MAX;
}

int lb_store_vol_put(lb_store *s, const lb_vol_row *row)
{
    if (!s || !lb_vrow_ok(row))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    /* a conflict on the id replaces (a web mending its own rows); one on
     * (owner, name) is the name taken: LB_E_EXISTS */
    int rc = lb_sql_prep(s, lb_sql_pick(s,
                                        "INSERT INTO e2b_volumes(id, owner, name, node, created_ms)"
                                        " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(id) DO UPDATE SET"
                                        " owner = excluded.owner, name = excluded.name, node = excluded.node,"
                                        " created_ms = excluded.created_ms",
                                        "INSERT INTO e2b_volumes(id, owner, name, node, created_ms)"
                                        " VALUES(?1, ?2, ?3, ?4, ?5::bigint) ON CONFLICT(id) DO UPDATE SET"
                                        " owner = excluded.owner, name = excluded.name, node = excluded.node,"
                                        " created_ms = excluded.created_ms"),
                         &st);
    if (rc)
        return rc;
    rc = lb_db_bind_text(st, 1, row->id);
    if (!rc)
        rc = lb_db_bind_text(st, 2, row->owner);
    if (!rc)
        rc = lb_db_bind_text(st, 3, row->name);
    if (!rc)
        rc = lb_db_bind_text(st, 4, row->node);
    if (!rc)
        rc = lb_db_bind_int64(st, 5, row->created_ms);
    if (rc) {
        lb_sql_done(s, st);
        return rc;
    }
    return lb_sql_run_write(s, st, "write a volume's row", LB_OK);
}

int lb_store_vol_delete(lb_store *s, const char *id)
{
    if (!s || !id || !lb_node_id_valid(id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "DELETE FROM e2b_volumes WHERE id = ?1", &st);
    if (rc)
        return rc;
    if ((rc = lb_db_bind_text(st, 1, id)) != LB_OK) {
        lb_sql_done(s, st);
        return rc;
    }
    return lb_sql_run_write(s, st, "delete a volume's row", LB_OK);
}

int lb_store_vol_list(lb_store *s, const char *owner, const char *name, lb_vol_row_cb cb, void *arg)
{
    if (!s || !cb || (owner && strlen(owner) > LB_VOL_OWNER_MAX) || (name && strlen(name) > LB_VOL_NAME_MAX))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_sql_pick(s,
                                        "SELECT id, owner, name, node, created_ms FROM e2b_volumes"
                                        " WHERE (?1 = 0 OR owner = ?2) AND (?3 = 0 OR name = ?4)"
                                        " ORDER BY created_ms, id LIMIT ?5",
                                        "SELECT id, owner, name, node, created_ms FROM e2b_volumes"
                                        " WHERE (?1::integer = 0 OR owner = ?2) AND (?3::integer = 0 OR name = ?4)"
                                        " ORDER BY created_ms, id LIMIT ?5::bigint"),
                         &st);
    if (rc)
        return rc;
    lb_db_bind_int64(st, 1, owner ? 1 : 0);
    lb_db_bind_text(st, 2, owner ? owner : "");
    lb_db_bind_int64(st, 3, name ? 1 : 0);
    lb_db_bind_text(st, 4, name ? name : "");
    lb_db_bind_int64(st, 5, LB_VOL_ROWS_MAX);
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        char id[LB_NODE_ID_MAX + 1], ow[LB_VOL_OWNER_MAX + 1], nm[LB_VOL_NAME_MAX + 1], nd[LB_NODE_ID_NAME_MAX + 1];
        lb_sql_col_copy(st, 0, id, sizeof id);
        lb_sql_col_copy(st, 1, ow, sizeof ow);
        lb_sql_col_copy(st, 2, nm, sizeof nm);
        lb_sql_col_copy(st, 3, nd, sizeof nd);
        lb_vol_row row = {.id = id, .owner = ow, .name = nm, .node = nd, .created_ms = lb_db_col_int64(st, 4)};
        if (!lb_vrow_ok(&row))
            continue; /* not one this table writes (cut by a copy): never shown */
        if ((rc = cb(arg, &row)) != 0)
            break;
    }
    if (!rc && src != LB_DB_DONE && src != LB_DB_ROW)
        rc = lb_store_sql_err(s, src, "list the volumes");
    lb_sql_done(s, st);
    return rc;
}
