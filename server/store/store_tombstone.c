/* The tombstones of deleted tasks; the contract is store_tombstone.h. */
#include "store/store_tombstone.h"

#include "store/db.h"
#include "store/store_priv.h"
#include "store/store_sql.h"

#include "common/util.h"

#include <stdio.h>

/* The database's clock in milliseconds: one clock for every web */
#define NOW_LITE "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
#define NOW_PG "(extract(epoch from clock_timestamp()) * 1000)::bigint"

/* v13. A trigger, so that every way a task row goes (the API's delete, a
 * cascade) leaves one, in the same statement; a task deleted twice (an id
 * made again) keeps the newest. */
const char lb_schema_v13_tombstones[] =
    "CREATE TABLE task_tombstones("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  deleted_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX task_tombstones_ms ON task_tombstones(deleted_ms);"
    "CREATE TRIGGER tasks_tombstone AFTER DELETE ON tasks BEGIN"
    "  INSERT OR REPLACE INTO task_tombstones(id, deleted_ms) VALUES(old.id, " NOW_LITE ");"
    " END;";
const char lb_schema_pg_v13_tombstones[] =
    "CREATE TABLE task_tombstones("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  deleted_ms BIGINT NOT NULL);"
    "CREATE INDEX task_tombstones_ms ON task_tombstones(deleted_ms);"
    "CREATE FUNCTION lb_task_tombstone() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
    "  INSERT INTO task_tombstones(id, deleted_ms) VALUES(OLD.id, " NOW_PG ")"
    "  ON CONFLICT(id) DO UPDATE SET deleted_ms = excluded.deleted_ms;"
    "  RETURN NULL; END $$;"
    "CREATE TRIGGER tasks_tombstone AFTER DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION lb_task_tombstone();";

#define LB_TOMBSTONES_MAX 10000 /* one walk's cap: the rest at the next */

int lb_store_tombstones_since(lb_store *s, int64_t since_ms, int limit, lb_tombstone_cb cb, void *arg,
                              int64_t *newest)
{
    if (!s || !cb || !newest || limit < 1 || limit > LB_TOMBSTONES_MAX)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_sql_pick(s, "SELECT id, deleted_ms FROM task_tombstones WHERE deleted_ms >= ?1"
                                           " ORDER BY deleted_ms, id LIMIT ?2",
                                        "SELECT id, deleted_ms FROM task_tombstones WHERE deleted_ms >= ?1::bigint"
                                        " ORDER BY deleted_ms, id LIMIT ?2::bigint"),
                         &st);
    if (rc)
        return rc;
    lb_db_bind_int64(st, 1, since_ms);
    lb_db_bind_int64(st, 2, limit);
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        char id[40];
        lb_sql_col_copy(st, 0, id, sizeof id);
        int64_t ms = lb_sql_col_ms(st, 1);
        if (!lb_id_valid(id))
            continue; /* not a task id: never a path to remove */
        if (ms > *newest)
            *newest = ms;
        if ((rc = cb(arg, id, ms)) != 0)
            break;
    }
    if (!rc && src != LB_DB_DONE)
        rc = lb_store_sql_err(s, src, "read the tombstones");
    lb_sql_done(s, st);
    return rc;
}

int lb_store_tombstones_trim(lb_store *s, int64_t keep_s, size_t *removed)
{
    if (!s || keep_s < 0 || !removed)
        return LB_E_INVAL;
    *removed = 0;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_sql_pick(s, "DELETE FROM task_tombstones WHERE deleted_ms < " NOW_LITE " - ?1 * 1000",
                                        "DELETE FROM task_tombstones WHERE deleted_ms < " NOW_PG
                                        " - ?1::bigint * 1000"),
                         &st);
    if (rc)
        return rc;
    lb_db_bind_int64(st, 1, keep_s);
    int src = lb_db_step(st);
    if (src == LB_DB_DONE) {
        int64_t n = lb_db_changes(lb_store_db(s));
        *removed = n > 0 ? (size_t)n : 0;
        rc = LB_OK;
    } else {
        rc = lb_store_sql_err(s, src, "trim the tombstones");
    }
    lb_sql_done(s, st);
    return rc;
}
