/* The task queue and the nodes' leases (several nodes); the contract is
 * store_queue.h. */
#include "store/store_queue.h"

#include "store/db.h"
#include "store/store_priv.h"
#include "store/store_sql.h"

#include "common/task.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The database's clock in milliseconds: one clock for every host's lease */
#define NOW_LITE "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
#define NOW_PG "(extract(epoch from clock_timestamp()) * 1000)::bigint"

/* v10 (with the tables of store_shared.c at its end). claimable = 1: a queued task that waits for a node (only a web
 * with task_runner = queue sets it, so a local web's queued tasks, which
 * it spawns itself, are never claimed); the partial index holds only
 * those rows, so a claim reads a handful of entries however many tasks
 * the table keeps. (node, attempt) is the fence of the agent's writes.
 * A node's row is its lease; swept_ms marks a lapsed lease whose tasks
 * were ended, and run_ms tells one run of a node from the next. */
const char lb_schema_v10_queue[] =
    "ALTER TABLE tasks ADD COLUMN claimable INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE tasks ADD COLUMN node TEXT;"
    "ALTER TABLE tasks ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE tasks ADD COLUMN claimed_ms INTEGER;"
    "CREATE INDEX tasks_claimable ON tasks(created_ms, id) WHERE claimable = 1;"
    "CREATE INDEX tasks_node ON tasks(node, status) WHERE node IS NOT NULL;"
    "CREATE TABLE nodes("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  run_ms INTEGER NOT NULL,"
    "  seen_ms INTEGER NOT NULL,"
    "  lease_expires_ms INTEGER NOT NULL,"
    "  capacity INTEGER NOT NULL DEFAULT 0,"
    "  swept_ms INTEGER) WITHOUT ROWID;"
    /* the secrets and start windows webs share (store_shared.c) */
    "CREATE TABLE web_secrets("
    "  name TEXT NOT NULL,"
    "  gen INTEGER NOT NULL,"
    "  value TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL,"
    "  PRIMARY KEY(name, gen));"
    "CREATE TABLE rate_slots("
    "  owner TEXT NOT NULL,"
    "  slot INTEGER NOT NULL,"
    "  at_ms INTEGER NOT NULL,"
    "  PRIMARY KEY(owner, slot));";

const char lb_schema_pg_v10_queue[] =
    "ALTER TABLE tasks ADD COLUMN claimable BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE tasks ADD COLUMN node TEXT;"
    "ALTER TABLE tasks ADD COLUMN attempt BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE tasks ADD COLUMN claimed_ms BIGINT;"
    "CREATE INDEX tasks_claimable ON tasks(created_ms, id) WHERE claimable = 1;"
    "CREATE INDEX tasks_node ON tasks(node, status) WHERE node IS NOT NULL;"
    "CREATE TABLE nodes("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  run_ms BIGINT NOT NULL,"
    "  seen_ms BIGINT NOT NULL,"
    "  lease_expires_ms BIGINT NOT NULL,"
    "  capacity BIGINT NOT NULL DEFAULT 0,"
    "  swept_ms BIGINT);"
    /* a task becoming claimable wakes the nodes that LISTEN (the nodes'
     * slow poll is only the backstop of a lost connection) */
    "CREATE FUNCTION lb_queue_notify() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
    "  PERFORM pg_notify('llmbox_queue', ''); RETURN NULL; END $$;"
    "CREATE TRIGGER tasks_queue_notify AFTER INSERT OR UPDATE OF claimable ON tasks FOR EACH ROW"
    "  WHEN (NEW.claimable = 1) EXECUTE FUNCTION lb_queue_notify();"
    /* the secrets and start windows webs share (store_shared.c) */
    "CREATE TABLE web_secrets("
    "  name TEXT NOT NULL,"
    "  gen INTEGER NOT NULL,"
    "  value TEXT NOT NULL,"
    "  created_ms BIGINT NOT NULL,"
    "  PRIMARY KEY(name, gen));"
    "CREATE TABLE rate_slots("
    "  owner TEXT NOT NULL,"
    "  slot INTEGER NOT NULL,"
    "  at_ms BIGINT NOT NULL,"
    "  PRIMARY KEY(owner, slot));";

/* v11: the node whose sandboxd holds a task's kept sandbox and saved
 * states (its last round's sandbox was made there); NULL for a task a
 * local web ran. Existing final tasks: the node of their last claim. */
const char lb_schema_v11_home[] =
    "ALTER TABLE tasks ADD COLUMN sandbox_node TEXT;"
    "UPDATE tasks SET sandbox_node = node WHERE node IS NOT NULL;";
const char lb_schema_pg_v11_home[] =
    "ALTER TABLE tasks ADD COLUMN sandbox_node TEXT;"
    "UPDATE tasks SET sandbox_node = node WHERE node IS NOT NULL;";

int lb_node_name_valid(const char *name)
{
    size_t n = 0;
    if (!name || !name[0] || name[0] == '-')
        return 0;
    for (; name[n]; n++) {
        char c = name[n];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return 0;
    }
    return n <= LB_NODE_NAME_MAX;
}

/* ---- the queue ---- */

static const char lb_push_sql[] = "UPDATE tasks SET claimable = 1 WHERE id = ?1 AND status = 'queued'";

int lb_store_queue_push(lb_store *s, const char *id)
{
    if (!s || !lb_id_valid(id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_push_sql, &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    return lb_sql_run_write(s, st, "queue the task", LB_E_NOTFOUND);
}

/* One statement: the oldest claimable rows, taken only while the node's
 * lease holds. PostgreSQL locks the rows it picks and skips those another
 * claimer holds; SQLite runs the statement under its write lock. A round
 * whose sandbox (kept, or its saved states) is on another node is left to
 * that node while it is live: its lease holds, it was not swept, and it
 * takes work (capacity > 0: a draining node renews with 0). */
#define LB_CLAIM_HOME(now)                                                                                   \
    " AND (q.sandbox_node IS NULL OR q.sandbox_node = ?1 OR NOT EXISTS (SELECT 1 FROM nodes h"              \
    "  WHERE h.name = q.sandbox_node AND h.lease_expires_ms > " now " AND h.swept_ms IS NULL"               \
    "  AND h.capacity > 0))"
static const char lb_claim_sql[] =
    "UPDATE tasks SET claimable = 0, node = ?1, attempt = attempt + 1, claimed_ms = " NOW_LITE
    " WHERE id IN (SELECT q.id FROM tasks q WHERE q.claimable = 1 AND q.status = 'queued'" LB_CLAIM_HOME(NOW_LITE)
    "  ORDER BY q.created_ms, q.id LIMIT ?2)"
    " AND EXISTS (SELECT 1 FROM nodes WHERE name = ?1 AND lease_expires_ms > " NOW_LITE ")"
    " RETURNING id, attempt";
static const char lb_claim_sql_pg[] =
    "UPDATE tasks SET claimable = 0, node = ?1, attempt = attempt + 1, claimed_ms = " NOW_PG
    " WHERE id IN (SELECT q.id FROM tasks q WHERE q.claimable = 1 AND q.status = 'queued'" LB_CLAIM_HOME(NOW_PG)
    "  ORDER BY q.created_ms, q.id FOR UPDATE OF q SKIP LOCKED LIMIT ?2::bigint)"
    " AND EXISTS (SELECT 1 FROM nodes WHERE name = ?1 AND lease_expires_ms > " NOW_PG ")"
    " RETURNING id, attempt";

int lb_store_queue_claim(lb_store *s, const char *node, int max, lb_claim *out, size_t *n)
{
    if (n)
        *n = 0;
    if (!s || !lb_node_name_valid(node) || max < 1 || max > LB_QUEUE_CLAIM_MAX || !out || !n)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_sql_pick(s, lb_claim_sql, lb_claim_sql_pg), &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, node);
    lb_db_bind_int(st, 2, max);
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        if (*n < (size_t)max) { /* RETURNING gives at most LIMIT rows; the check keeps out[] safe anyway */
            lb_sql_col_copy(st, 0, out[*n].id, sizeof out[*n].id);
            out[*n].attempt = lb_db_col_int(st, 1);
            (*n)++;
        }
    }
    rc = lb_store_sql_err(s, src, "claim tasks");
    lb_sql_done(s, st);
    if (rc)
        *n = 0; /* the statement failed as a whole: nothing was claimed */
    return rc;
}

/* ---- leases ---- */

/* Fills out's sentence for the tasks of node, whose lease ended at
 * expires_ms (database clock) */
static void lb_lapse_reason(const char *node, int64_t seen_ms, char *out, size_t outsz)
{
    time_t t = (time_t)(seen_ms / 1000);
    struct tm tm;
    char when[32] = "an unknown time";
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    snprintf(out, outsz,
             "node %s stopped renewing its lease (last seen at %s); the task was not run again", node, when);
}

/* The unfinished tasks of node: ids and pids, at most cap */
static const char lb_left_sql[] =
    "SELECT id, COALESCE(pid, 0) FROM tasks WHERE node = ?1 AND status IN ('queued', 'running')"
    " AND claimable = 0 ORDER BY id";
#define LB_LEFT_MAX 4096

static int lb_node_left(lb_store *s, const char *sql, const char *node, struct lb_node_left **v, size_t *n)
{
    *v = NULL;
    *n = 0;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, sql, &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, node);
    size_t cap = 0;
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW && *n < LB_LEFT_MAX) {
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            struct lb_node_left *nv = realloc(*v, nc * sizeof *nv);
            if (!nv) {
                rc = LB_E_NOMEM;
                break;
            }
            *v = nv;
            cap = nc;
        }
        lb_sql_col_copy(st, 0, (*v)[*n].id, sizeof (*v)[*n].id);
        (*v)[*n].pid = lb_db_col_int(st, 1);
        (*n)++;
    }
    if (rc == LB_OK && src != LB_DB_ROW)
        rc = lb_store_sql_err(s, src, "list a node's tasks");
    lb_sql_done(s, st);
    if (rc) {
        free(*v);
        *v = NULL;
        *n = 0;
    }
    return rc;
}

/* Ends every unfinished task of node (in the caller's transaction) */
static int lb_node_end_left(lb_store *s, const char *node, int64_t seen_ms, struct lb_node_left **v, size_t *n)
{
    int rc = lb_node_left(s, lb_left_sql, node, v, n);
    if (rc)
        return rc;
    char reason[256];
    lb_lapse_reason(node, seen_ms, reason, sizeof reason);
    for (size_t i = 0; i < *n; i++) {
        rc = lb_store_task_end_in_tx(s, (*v)[i].id, LB_TASK_FAILED, reason);
        if (rc == LB_E_EXISTS || rc == LB_E_NOTFOUND)
            rc = LB_OK; /* ended meanwhile: nothing to do */
        if (rc)
            return rc;
    }
    return LB_OK;
}

static const char lb_node_read_sql[] =
    "SELECT run_ms, seen_ms, lease_expires_ms < " NOW_LITE ", swept_ms IS NOT NULL FROM nodes WHERE name = ?1";
static const char lb_node_read_sql_pg[] =
    "SELECT run_ms, seen_ms, lease_expires_ms < " NOW_PG ", swept_ms IS NOT NULL FROM nodes WHERE name = ?1"
    " FOR UPDATE";
static const char lb_node_upsert_sql[] =
    "INSERT INTO nodes(name, run_ms, seen_ms, lease_expires_ms, capacity, swept_ms)"
    " VALUES(?1, ?2, " NOW_LITE ", " NOW_LITE " + ?3, ?4, NULL)"
    " ON CONFLICT(name) DO UPDATE SET run_ms = excluded.run_ms, seen_ms = excluded.seen_ms,"
    " lease_expires_ms = excluded.lease_expires_ms, capacity = excluded.capacity, swept_ms = NULL"
    " RETURNING lease_expires_ms";
static const char lb_node_upsert_sql_pg[] =
    "INSERT INTO nodes(name, run_ms, seen_ms, lease_expires_ms, capacity, swept_ms)"
    " VALUES(?1, ?2::bigint, " NOW_PG ", " NOW_PG " + ?3::bigint, ?4::bigint, NULL)"
    " ON CONFLICT(name) DO UPDATE SET run_ms = excluded.run_ms, seen_ms = excluded.seen_ms,"
    " lease_expires_ms = excluded.lease_expires_ms, capacity = excluded.capacity, swept_ms = NULL"
    " RETURNING lease_expires_ms";

int lb_store_node_renew(lb_store *s, const char *node, int64_t started_ms, int lease_ms, int capacity,
                        lb_node_lease *out)
{
    if (!s || !lb_node_name_valid(node) || lease_ms < 1000 || capacity < 0 || !out)
        return LB_E_INVAL;
    memset(out, 0, sizeof *out);
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    if ((rc = lb_sql_prep(s, lb_sql_pick(s, lb_node_read_sql, lb_node_read_sql_pg), &st)))
        goto out;
    lb_sql_bind_text(st, 1, node);
    int src = lb_db_step(st);
    int had = src == LB_DB_ROW, other_run = 0, expired = 0;
    int64_t seen = 0;
    if (had) {
        other_run = lb_db_col_int64(st, 0) != started_ms;
        seen = lb_db_col_int64(st, 1);
        expired = lb_db_col_int(st, 2) || lb_db_col_int(st, 3);
    }
    rc = lb_store_sql_err(s, src, "read the node's lease");
    lb_sql_done(s, st);
    st = NULL;
    if (rc)
        goto out;
    /* a lapsed lease or an earlier run: whatever that run left unfinished
     * ends now, before this run claims anything (its agents may still
     * write; their fence no longer holds once the tasks are final) */
    if (had && (other_run || expired)) {
        out->lapsed = 1;
        if ((rc = lb_node_end_left(s, node, seen, &out->left, &out->nleft)))
            goto out;
    }
    if ((rc = lb_sql_prep(s, lb_sql_pick(s, lb_node_upsert_sql, lb_node_upsert_sql_pg), &st)))
        goto out;
    lb_sql_bind_text(st, 1, node);
    lb_db_bind_int64(st, 2, started_ms);
    lb_db_bind_int(st, 3, lease_ms);
    lb_db_bind_int(st, 4, capacity);
    src = lb_db_step(st);
    if (src == LB_DB_ROW)
        out->expires_ms = lb_db_col_int64(st, 0);
    rc = src == LB_DB_ROW ? LB_OK : lb_store_sql_err(s, src == LB_DB_DONE ? LB_E_INTERNAL : src, "renew the lease");
    lb_sql_done(s, st);
    st = NULL;
out:
    rc = lb_store_tx_end(s, rc);
    if (rc) {
        free(out->left);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

/* One lapsed, unswept node other than ?1, its row locked: of several
 * sweepers, the others skip it (PostgreSQL) or wait for the write lock
 * and then find it swept (SQLite) */
static const char lb_sweep_pick_sql[] =
    "SELECT name, seen_ms FROM nodes WHERE lease_expires_ms < " NOW_LITE " AND swept_ms IS NULL AND name <> ?1"
    " ORDER BY lease_expires_ms LIMIT 1";
static const char lb_sweep_pick_sql_pg[] =
    "SELECT name, seen_ms FROM nodes WHERE lease_expires_ms < " NOW_PG " AND swept_ms IS NULL AND name <> ?1"
    " ORDER BY lease_expires_ms LIMIT 1 FOR UPDATE SKIP LOCKED";
static const char lb_sweep_mark_sql[] = "UPDATE nodes SET swept_ms = " NOW_LITE " WHERE name = ?1";
static const char lb_sweep_mark_sql_pg[] = "UPDATE nodes SET swept_ms = " NOW_PG " WHERE name = ?1";

int lb_store_node_sweep(lb_store *s, const char *self, char *swept_node, size_t *ended)
{
    if (!s || !self || !swept_node || !ended)
        return LB_E_INVAL;
    swept_node[0] = '\0';
    *ended = 0;
    struct lb_node_left *left = NULL;
    char name[LB_NODE_NAME_MAX + 1] = "";
    int64_t seen = 0;
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    if ((rc = lb_sql_prep(s, lb_sql_pick(s, lb_sweep_pick_sql, lb_sweep_pick_sql_pg), &st)))
        goto out;
    lb_sql_bind_text(st, 1, self);
    int src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        lb_sql_col_copy(st, 0, name, sizeof name);
        seen = lb_db_col_int64(st, 1);
    }
    rc = lb_store_sql_err(s, src, "find a lapsed node");
    lb_sql_done(s, st);
    st = NULL;
    if (rc || !name[0])
        goto out;
    size_t n = 0;
    if ((rc = lb_node_end_left(s, name, seen, &left, &n)))
        goto out;
    if ((rc = lb_sql_prep(s, lb_sql_pick(s, lb_sweep_mark_sql, lb_sweep_mark_sql_pg), &st)))
        goto out;
    lb_sql_bind_text(st, 1, name);
    rc = lb_sql_run_write(s, st, "mark the node swept", LB_E_INTERNAL);
    if (rc == LB_OK) {
        snprintf(swept_node, LB_NODE_NAME_MAX + 1, "%s", name);
        *ended = n;
    }
out:
    rc = lb_store_tx_end(s, rc);
    free(left);
    if (rc) {
        swept_node[0] = '\0';
        *ended = 0;
    }
    return rc;
}

/* several nodes: the tasks of node that ended while a round of theirs held a
 * kept sandbox (kept_until_ms NULL: the agent died in the round), e.g. swept
 * by another node while this one was dead */
static const char lb_orphans_sql[] =
    "SELECT k.task_id, 0 FROM task_sandboxes k JOIN tasks t ON t.id = k.task_id"
    " WHERE t.node = ?1 AND k.kept_until_ms IS NULL AND t.status IN ('succeeded', 'failed', 'cancelled')";

int lb_store_node_orphans(lb_store *s, const char *node, lb_node_lease *out)
{
    memset(out, 0, sizeof *out);
    if (!s || !lb_node_name_valid(node))
        return LB_E_INVAL;
    return lb_node_left(s, lb_orphans_sql, node, &out->left, &out->nleft);
}

int lb_store_node_remove(lb_store *s, const char *node)
{
    if (!s || !lb_node_name_valid(node))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "DELETE FROM nodes WHERE name = ?1", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, node);
    return lb_sql_run_write(s, st, "remove the node", LB_E_NOTFOUND);
}

int lb_store_queue_listen(lb_store *s)
{
    if (!s || !lb_db_is_pg(lb_store_db(s)))
        return LB_E_INVAL;
    return lb_store_sql_err(s, lb_db_listen(lb_store_db(s), "llmbox_queue"), "listen for the queue");
}

int lb_store_queue_wait(lb_store *s, int timeout_ms, int *woke)
{
    *woke = 0;
    if (!s)
        return LB_E_INVAL;
    return lb_store_sql_err(s, lb_db_wait_notify(lb_store_db(s), timeout_ms, woke), "wait for the queue");
}

/* the task is still this claim's, its row locked (PostgreSQL) for the
 * transaction that ends it */
static const char lb_attempt_sql[] = "SELECT 1 FROM tasks WHERE id = ?1 AND node = ?2 AND attempt = ?3";
static const char lb_attempt_sql_pg[] =
    "SELECT 1 FROM tasks WHERE id = ?1 AND node = ?2 AND attempt = ?3::bigint FOR UPDATE";

int lb_store_queue_end_attempt(lb_store *s, const char *id, const char *node, int attempt, const char *reason)
{
    if (!s || !lb_id_valid(id) || !lb_node_name_valid(node) || attempt < 1)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    if ((rc = lb_sql_prep(s, lb_sql_pick(s, lb_attempt_sql, lb_attempt_sql_pg), &st)))
        goto out;
    lb_sql_bind_text(st, 1, id);
    lb_sql_bind_text(st, 2, node);
    lb_db_bind_int(st, 3, attempt);
    int src = lb_db_step(st);
    rc = src == LB_DB_ROW ? LB_OK : src == LB_DB_DONE ? LB_E_EXISTS : lb_store_sql_err(s, src, "read the claim");
    lb_sql_done(s, st);
    if (rc == LB_OK)
        rc = lb_store_task_end_in_tx(s, id, LB_TASK_FAILED, reason);
out:
    return lb_store_tx_end(s, rc);
}

/* ---- where a task's sandbox lives (v11) ---- */

int lb_store_queue_set_home(lb_store *s, const char *id)
{
    if (!s || !lb_id_valid(id))
        return LB_E_INVAL;
    const char *node = lb_store_fence_node(s);
    if (!node[0])
        return LB_OK; /* the web's own agent: its sandboxd is the web host's */
    lb_db_stmt *st = NULL;
    /* only while the claim is this node's: a fenced-out agent moves nothing */
    int rc = lb_sql_prep(s, "UPDATE tasks SET sandbox_node = ?2 WHERE id = ?1 AND node = ?2", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    lb_sql_bind_text(st, 2, node);
    return lb_sql_run_write(s, st, "record the sandbox's node", LB_E_DENIED);
}

int lb_store_queue_home(lb_store *s, const char *id, char *node, size_t nodesz)
{
    if (nodesz)
        node[0] = '\0';
    if (!s || !lb_id_valid(id) || nodesz < LB_NODE_NAME_MAX + 1)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT COALESCE(sandbox_node, '') FROM tasks WHERE id = ?1", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    int src = lb_db_step(st);
    if (src == LB_DB_ROW)
        lb_sql_col_copy(st, 0, node, nodesz);
    rc = src == LB_DB_ROW    ? LB_OK
         : src == LB_DB_DONE ? LB_E_NOTFOUND
                             : lb_store_sql_err(s, src, "read the sandbox's node");
    lb_sql_done(s, st);
    return rc;
}

static const char lb_node_state_sql[] =
    "SELECT seen_ms, lease_expires_ms > " NOW_LITE ", swept_ms IS NOT NULL, capacity FROM nodes WHERE name = ?1";
static const char lb_node_state_sql_pg[] =
    "SELECT seen_ms, lease_expires_ms > " NOW_PG ", swept_ms IS NOT NULL, capacity FROM nodes WHERE name = ?1";

int lb_store_node_gone_why(lb_store *s, const char *node, char *out, size_t outsz)
{
    if (outsz)
        out[0] = '\0';
    if (!s || !lb_node_name_valid(node) || outsz < 2)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_sql_pick(s, lb_node_state_sql, lb_node_state_sql_pg), &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, node);
    int src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        int64_t seen = lb_db_col_int64(st, 0);
        int live = lb_db_col_int(st, 1), swept = lb_db_col_int(st, 2);
        int64_t capacity = lb_db_col_int64(st, 3);
        if (!live || swept) {
            time_t t = (time_t)(seen / 1000);
            struct tm tm;
            char when[32] = "an unknown time";
            if (gmtime_r(&t, &tm))
                strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
            snprintf(out, outsz, "it stopped renewing its lease; last seen at %s", when);
        } else if (capacity <= 0) {
            snprintf(out, outsz, "it is shutting down and takes no more work");
        } else {
            /* live again: it came back after the round was claimed here */
            snprintf(out, outsz, "its lease had lapsed when this round was claimed");
        }
    } else if (src == LB_DB_DONE) {
        snprintf(out, outsz, "it has stopped and left the cluster");
    }
    rc = src == LB_DB_ROW || src == LB_DB_DONE ? LB_OK : lb_store_sql_err(s, src, "read a node's lease");
    lb_sql_done(s, st);
    return rc;
}
