/* The API sandboxes of a cluster's nodes; the contract is store_sandbox.h. */
#include "store/store_sandbox.h"

#include "store/db.h"
#include "store/store_priv.h"
#include "store/store_sql.h"

#include "common/node_id.h"

#include <string.h>

/* The database's clock in milliseconds: one clock for every web */
#define NOW_LITE "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
#define NOW_PG "(extract(epoch from clock_timestamp()) * 1000)::bigint"

/* v14. info is the status object its web answers (the list shows it
 * as is); the other columns are what a list filters and sorts on. */
const char lb_schema_v14_api_sandboxes[] =
    "CREATE TABLE api_sandboxes("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  node TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL,"
    "  expires_ms INTEGER NOT NULL,"
    "  paused INTEGER NOT NULL DEFAULT 0,"
    "  info TEXT NOT NULL,"
    "  seen_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX api_sandboxes_node ON api_sandboxes(node);"
    "CREATE INDEX api_sandboxes_created ON api_sandboxes(created_ms, id);";
const char lb_schema_pg_v14_api_sandboxes[] =
    "CREATE TABLE api_sandboxes("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  node TEXT NOT NULL,"
    "  created_ms BIGINT NOT NULL,"
    "  expires_ms BIGINT NOT NULL,"
    "  paused INTEGER NOT NULL DEFAULT 0,"
    "  info TEXT NOT NULL,"
    "  seen_ms BIGINT NOT NULL);"
    "CREATE INDEX api_sandboxes_node ON api_sandboxes(node);"
    "CREATE INDEX api_sandboxes_created ON api_sandboxes(created_ms, id);";

/* v16: the owner of each row's sandbox (the user whose API token made it,
 * "" for the shared token), so that a user's list through any web shows
 * that user's sandboxes on every node. Rows an older web wrote are the
 * shared token's (''). */
const char lb_schema_v16_api_sandbox_owner[] =
    "ALTER TABLE api_sandboxes ADD COLUMN owner TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX api_sandboxes_owner ON api_sandboxes(owner, created_ms);";
const char lb_schema_pg_v16_api_sandbox_owner[] =
    "ALTER TABLE api_sandboxes ADD COLUMN owner TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX api_sandboxes_owner ON api_sandboxes(owner, created_ms);";

#define LB_SBX_ROWS_MAX 100000 /* one walk's cap */
#define LB_SBX_OWNER_MAX 63    /* a user's name (config_user.h keeps them shorter) */

/* 1 when row is one this table may hold: an id of its node, info capped */
static int lb_row_ok(const lb_sbx_row *row)
{
    char node[LB_NODE_ID_NAME_MAX + 1];
    return row && row->id && row->node && row->info && lb_node_id_node(row->id, node, sizeof node) && node[0] &&
           !strcmp(node, row->node) && (!row->owner || strlen(row->owner) <= LB_SBX_OWNER_MAX);
}

static int lb_row_bind(lb_db_stmt *st, const lb_sbx_row *row)
{
    int rc = lb_db_bind_text(st, 1, row->id);
    if (!rc)
        rc = lb_db_bind_text(st, 2, row->node);
    if (!rc)
        rc = lb_db_bind_int64(st, 3, row->created_ms);
    if (!rc)
        rc = lb_db_bind_int64(st, 4, row->expires_ms);
    if (!rc)
        rc = lb_db_bind_int64(st, 5, row->paused ? 1 : 0);
    if (!rc)
        rc = lb_db_bind_text(st, 6, row->info);
    if (!rc)
        rc = lb_db_bind_text(st, 7, row->owner ? row->owner : "");
    return rc;
}

static int lb_row_write(lb_store *s, const lb_sbx_row *row, const char *lite, const char *pg, int none_rc)
{
    if (!s || !lb_row_ok(row))
        return LB_E_INVAL;
    if (strlen(row->info) > LB_SBX_ROW_INFO_MAX)
        return LB_E_TOOBIG;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_sql_pick(s, lite, pg), &st);
    if (rc)
        return rc;
    if ((rc = lb_row_bind(st, row)) != LB_OK) {
        lb_sql_done(s, st);
        return rc;
    }
    return lb_sql_run_write(s, st, "write an API sandbox's row", none_rc);
}

int lb_store_sbx_put(lb_store *s, const lb_sbx_row *row)
{
    return lb_row_write(s, row,
                        "INSERT INTO api_sandboxes(id, node, created_ms, expires_ms, paused, info, owner, seen_ms)"
                        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, " NOW_LITE ")"
                        " ON CONFLICT(id) DO UPDATE SET node = excluded.node, created_ms = excluded.created_ms,"
                        " expires_ms = excluded.expires_ms, paused = excluded.paused, info = excluded.info,"
                        " owner = excluded.owner, seen_ms = excluded.seen_ms",
                        "INSERT INTO api_sandboxes(id, node, created_ms, expires_ms, paused, info, owner, seen_ms)"
                        " VALUES(?1, ?2, ?3::bigint, ?4::bigint, ?5::integer, ?6, ?7, " NOW_PG ")"
                        " ON CONFLICT(id) DO UPDATE SET node = excluded.node, created_ms = excluded.created_ms,"
                        " expires_ms = excluded.expires_ms, paused = excluded.paused, info = excluded.info,"
                        " owner = excluded.owner, seen_ms = excluded.seen_ms",
                        LB_OK);
}

int lb_store_sbx_update(lb_store *s, const lb_sbx_row *row)
{
    return lb_row_write(s, row,
                        "UPDATE api_sandboxes SET node = ?2, created_ms = ?3, expires_ms = ?4, paused = ?5,"
                        " info = ?6, owner = ?7, seen_ms = " NOW_LITE " WHERE id = ?1",
                        "UPDATE api_sandboxes SET node = ?2, created_ms = ?3::bigint, expires_ms = ?4::bigint,"
                        " paused = ?5::integer, info = ?6, owner = ?7, seen_ms = " NOW_PG " WHERE id = ?1",
                        LB_E_NOTFOUND);
}

/* Runs a delete or update of one text parameter; *changed how many rows */
static int lb_run1(lb_store *s, const char *sql, const char *arg, const char *what, size_t *changed)
{
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, sql, &st);
    if (rc)
        return rc;
    if ((rc = lb_db_bind_text(st, 1, arg)) != LB_OK) {
        lb_sql_done(s, st);
        return rc;
    }
    int src = lb_db_step(st);
    if (src == LB_DB_DONE) {
        int64_t n = lb_db_changes(lb_store_db(s));
        if (changed)
            *changed = n > 0 ? (size_t)n : 0;
        rc = LB_OK;
    } else {
        rc = lb_store_sql_err(s, src == LB_DB_ROW ? LB_E_INTERNAL : src, what);
    }
    lb_sql_done(s, st);
    return rc;
}

int lb_store_sbx_delete(lb_store *s, const char *id)
{
    if (!s || !id || !lb_node_id_valid(id))
        return LB_E_INVAL;
    return lb_run1(s, "DELETE FROM api_sandboxes WHERE id = ?1", id, "delete an API sandbox's row", NULL);
}

int lb_store_sbx_forget_node(lb_store *s, const char *node, size_t *removed)
{
    if (!s || !node || !lb_node_id_name_ok(node, strlen(node)) || !removed)
        return LB_E_INVAL;
    *removed = 0;
    return lb_run1(s, "DELETE FROM api_sandboxes WHERE node = ?1", node, "forget a node's API sandboxes", removed);
}

int lb_store_sbx_touch(lb_store *s, const char *node)
{
    if (!s || !node || !lb_node_id_name_ok(node, strlen(node)))
        return LB_E_INVAL;
    return lb_run1(s, lb_sql_pick(s, "UPDATE api_sandboxes SET seen_ms = " NOW_LITE " WHERE node = ?1",
                                  "UPDATE api_sandboxes SET seen_ms = " NOW_PG " WHERE node = ?1"),
                   node, "refresh a node's API sandboxes", NULL);
}

int lb_store_sbx_sweep(lb_store *s, int64_t fresh_ms, size_t *removed)
{
    if (!s || fresh_ms < 1 || !removed)
        return LB_E_INVAL;
    *removed = 0;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_sql_pick(s, "DELETE FROM api_sandboxes WHERE seen_ms < " NOW_LITE " - ?1",
                                        "DELETE FROM api_sandboxes WHERE seen_ms < " NOW_PG " - ?1::bigint"),
                         &st);
    if (rc)
        return rc;
    lb_db_bind_int64(st, 1, fresh_ms);
    int src = lb_db_step(st);
    if (src == LB_DB_DONE) {
        int64_t n = lb_db_changes(lb_store_db(s));
        *removed = n > 0 ? (size_t)n : 0;
        rc = LB_OK;
    } else {
        rc = lb_store_sql_err(s, src == LB_DB_ROW ? LB_E_INTERNAL : src, "sweep the API sandboxes' rows");
    }
    lb_sql_done(s, st);
    return rc;
}

int lb_store_sbx_list(lb_store *s, const char *node, int64_t fresh_ms, int limit, lb_sbx_row_cb cb, void *arg)
{
    return lb_store_sbx_list_of(s, node, NULL, fresh_ms, limit, cb, arg);
}

int lb_store_sbx_list_of(lb_store *s, const char *node, const char *owner, int64_t fresh_ms, int limit,
                         lb_sbx_row_cb cb, void *arg)
{
    if (!s || !node || (node[0] && !lb_node_id_name_ok(node, strlen(node))) || fresh_ms < 0 || limit < 1 ||
        limit > LB_SBX_ROWS_MAX || !cb || (owner && strlen(owner) > LB_SBX_OWNER_MAX))
        return LB_E_INVAL;
    /* every node's: fresh and unexpired; one node's (its own web's look):
     * all of them, fresh_ms 0 meaning however old */
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_sql_pick(s,
                                        "SELECT id, node, created_ms, expires_ms, paused, info, owner FROM api_sandboxes"
                                        " WHERE (?1 = '' OR node = ?1) AND (?2 = 0 OR seen_ms >= " NOW_LITE " - ?2)"
                                        " AND (?1 <> '' OR expires_ms > " NOW_LITE ") AND (?4 = 0 OR owner = ?5)"
                                        " ORDER BY created_ms, id LIMIT ?3",
                                        "SELECT id, node, created_ms, expires_ms, paused, info, owner FROM api_sandboxes"
                                        " WHERE (?1 = '' OR node = ?1) AND (?2::bigint = 0 OR seen_ms >= " NOW_PG
                                        " - ?2::bigint) AND (?1 <> '' OR expires_ms > " NOW_PG ")"
                                        " AND (?4::integer = 0 OR owner = ?5)"
                                        " ORDER BY created_ms, id LIMIT ?3::bigint"),
                         &st);
    if (rc)
        return rc;
    lb_db_bind_text(st, 1, node);
    lb_db_bind_int64(st, 2, fresh_ms);
    lb_db_bind_int64(st, 3, limit);
    lb_db_bind_int64(st, 4, owner ? 1 : 0); /* NULL: every owner's (the shared token's list) */
    lb_db_bind_text(st, 5, owner ? owner : "");
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        char id[LB_NODE_ID_MAX + 1], nd[LB_NODE_ID_NAME_MAX + 1], ow[LB_SBX_OWNER_MAX + 1];
        lb_sql_col_copy(st, 0, id, sizeof id);
        lb_sql_col_copy(st, 1, nd, sizeof nd);
        lb_sql_col_copy(st, 6, ow, sizeof ow);
        lb_sbx_row row = {.id = id, .node = nd, .created_ms = lb_db_col_int64(st, 2),
                          .expires_ms = lb_db_col_int64(st, 3), .paused = lb_db_col_int(st, 4) != 0,
                          .info = lb_db_col_text(st, 5), .owner = ow};
        if (!lb_row_ok(&row))
            continue; /* not one this table writes: never shown */
        if ((rc = cb(arg, &row)) != 0)
            break;
    }
    if (!rc && src != LB_DB_DONE && src != LB_DB_ROW)
        rc = lb_store_sql_err(s, src, "list the API sandboxes");
    lb_sql_done(s, st);
    return rc;
}
