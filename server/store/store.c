/* The task store on SQLite or PostgreSQL (db.h): tasks, their events and
 * artifacts; the contract is store.h.
 *
 * Concurrency model: the web service (one connection per worker thread) and
 * every agent process (one connection each) share one database file in WAL
 * mode. Readers never block writers. Writers take the write lock up front
 * (BEGIN IMMEDIATE) so two writers never deadlock upgrading a read lock, and
 * wait up to busy_timeout for each other instead of failing. Every state
 * change is one short transaction.
 *
 * Statements are prepared once per connection and kept (store_sql.h,
 * the one way every file of the store prepares them); each use binds,
 * steps and hands them back.
 */
#include "store/store.h"

#include "store/db.h"
#include "store/store_priv.h"
#include "store/store_sql.h"
#include "store/store_claim.h" /* several nodes: schema v12, the runners' claims */
#include "store/store_queue.h" /* several nodes: schema v10, the fence */
#include "store/store_sandbox.h" /* several nodes: schema v14, the nodes' API sandboxes */
#include "store/store_volume.h"  /* several nodes: schema v17, E2B's volumes of every node */
#include "store/store_tombstone.h" /* several nodes: schema v13, deleted tasks */

#include "common/log.h"
#include "common/path.h"
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_STORE_BUSY_MS 10000
#define LB_STORE_EVENT_MAX (16u << 20)  /* one event's JSON; a model turn fits easily */
#define LB_STORE_TEXT_MAX (16u << 20)   /* prompt, answer, inputs JSON */
#define LB_STORE_OPTIONS_MAX 4096       /* a task's options JSON */
#define LB_STORE_LIST_MAX 200           /* rows per task_list page */
#define LB_STORE_RESERVE_BYTES (2u << 20) /* see lb_store_reserve_keep */

enum {
    Q_TASK_INSERT,
    Q_TASK_STATUS,
    Q_TASK_SET_RUNNING,
    Q_TASK_SET_PID,
    Q_TASK_FINISH,
    Q_TASK_USAGE,
    Q_TASK_GET,
    Q_TASK_LIST,
    Q_TASK_LIST_BEFORE,
    Q_TASK_LIST_AFTER_ROW,
    Q_TASK_DELETE,
    Q_TASKS_ACTIVE,
    Q_EVENT_NEXT_SEQ,
    Q_EVENT_INSERT,
    Q_EVENTS_AFTER,
    Q_EVENTS_NEWEST,
    Q_DATA_VERSION,
    Q_ART_DELETE,
    Q_ART_INSERT,
    Q_ART_GET,
    Q_ART_FIND,
    Q_TASK_OWNER,
    Q_OWN_LIST,
    Q_OWN_LIST_BEFORE,
    Q_OWN_LIST_AFTER_ROW,
    Q_OWN_ACTIVE,
    Q_SESSION_INSERT,
    Q_SESSION_GET,
    Q_SESSION_DELETE,
    Q_SESSION_EXPIRE,
    Q_SESSION_TRIM,
    Q_METRIC_ADD,
    Q_METRICS_ALL,
    Q_TASK_COUNTS,
    Q_ROUND_ARTS,
    Q_EVENT_APPEND_PG,
    Q_EVENT_SAME,
    Q__COUNT
};

static const char *const lb_sql[Q__COUNT] = {
    /* ?13 > 0: only while the owner ?12 has fewer than ?13 tasks queued or
     * running. One statement under SQLite's write lock, so two requests
     * at once can never both take the last place. */
    [Q_TASK_INSERT] = "INSERT INTO tasks(id, status, prompt, model, max_turns, created_ms, inputs,"
                      " token_budget, timeout_s, network, image, rerun_of, owner, options)"
                      " SELECT ?1, 'queued', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?14"
                      " WHERE ?13 <= 0 OR (SELECT COUNT(*) FROM tasks WHERE owner = ?12"
                      " AND status IN ('queued', 'running')) < ?13",
    [Q_TASK_STATUS] = "SELECT status, pid FROM tasks WHERE id = ?1",
    [Q_TASK_SET_RUNNING] = "UPDATE tasks SET status = 'running', pid = ?2,"
                           " started_ms = COALESCE(started_ms, ?3)"
                           " WHERE id = ?1 AND status IN ('queued', 'running')",
    [Q_TASK_SET_PID] = "UPDATE tasks SET pid = ?2 WHERE id = ?1",
    /* claimable = 0: a task ended while queued (cancelled) leaves the
     * queue's index (schema v10) */
    [Q_TASK_FINISH] = "UPDATE tasks SET status = ?2, reason = ?3, answer = COALESCE(?4, answer),"
                      " finished_ms = ?5, claimable = 0 WHERE id = ?1",
    [Q_TASK_USAGE] = "UPDATE tasks SET turns = ?2, prompt_tokens = ?3, completion_tokens = ?4,"
                     " usage = ?5 WHERE id = ?1",
    /* turns and tokens: the whole conversation's, summed over its rounds */
    [Q_TASK_GET] = "SELECT id, status, reason, prompt, model, max_turns, created_ms, started_ms,"
                   " finished_ms, COALESCE((SELECT SUM(r.turns) FROM rounds r WHERE r.task_id = tasks.id), turns),"
                   " COALESCE((SELECT SUM(r.prompt_tokens) FROM rounds r WHERE r.task_id = tasks.id), prompt_tokens),"
                   " COALESCE((SELECT SUM(r.completion_tokens) FROM rounds r WHERE r.task_id = tasks.id),"
                   " completion_tokens), answer, inputs,"
                   " token_budget, timeout_s, usage, network, image, rerun_of, owner, COALESCE(pid, 0), options,"
                   " round FROM tasks WHERE id = ?1",
    [Q_TASK_LIST] = "SELECT id, status, substr(prompt, 1, 200), model, created_ms, finished_ms"
                    " FROM tasks ORDER BY created_ms DESC, id DESC LIMIT ?1",
    [Q_TASK_LIST_BEFORE] = "SELECT id, status, substr(prompt, 1, 200), model, created_ms, finished_ms"
                           " FROM tasks WHERE created_ms < ?2"
                           " ORDER BY created_ms DESC, id DESC LIMIT ?1",
    /* the cursor is (created_ms, id): tasks made in the same millisecond
     * are neither skipped nor repeated across pages */
    [Q_TASK_LIST_AFTER_ROW] = "SELECT id, status, substr(prompt, 1, 200), model, created_ms, finished_ms"
                              " FROM tasks WHERE (created_ms, id) < (?2, ?3)"
                              " ORDER BY created_ms DESC, id DESC LIMIT ?1",
    [Q_TASK_DELETE] = "DELETE FROM tasks WHERE id = ?1",
    /* the web's own tasks only: not those in the queue or a node's
     * (schema v10), whose agents the nodes watch (store_queue.h) */
    [Q_TASKS_ACTIVE] = "SELECT id, COALESCE(pid, 0) FROM tasks"
                       " WHERE status IN ('queued', 'running') AND claimable = 0 AND node IS NULL ORDER BY created_ms",
    [Q_EVENT_NEXT_SEQ] = "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE task_id = ?1",
    /* every event carries the round it belongs to (schema v9), in its
     * row and in its data, so a client reading the stream needs no join */
    [Q_EVENT_INSERT] = "INSERT INTO events(task_id, seq, ts_ms, type, data, round)"
                       " SELECT ?1, ?2, ?3, ?4, CASE WHEN json_valid(?5) AND json_type(?5) = 'object'"
                       "  THEN json_set(?5, '$.round', t.round) ELSE ?5 END, t.round FROM tasks t WHERE t.id = ?1",
    /* the event a writer may have stored already: one its commit was not
     * answered for (lb_store_event_append_at) */
    [Q_EVENT_SAME] = "SELECT e.seq FROM events e, tasks t WHERE t.id = ?1 AND e.task_id = ?1 AND e.ts_ms = ?2"
                     " AND e.type = ?3 AND e.data = CASE WHEN json_valid(?4) AND json_type(?4) = 'object'"
                     "  THEN json_set(?4, '$.round', t.round) ELSE ?4 END ORDER BY e.seq DESC LIMIT 1",
    [Q_EVENTS_AFTER] = "SELECT seq, ts_ms, type, data FROM events"
                       " WHERE task_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
    /* ?1 a JSON array of task ids: one index search per id (the newest
     * row of its primary-key range), all in one snapshot */
    [Q_EVENTS_NEWEST] = "SELECT j.key, (SELECT MAX(seq) FROM events WHERE task_id = j.value)"
                        " FROM json_each(?1) AS j",
    [Q_DATA_VERSION] = "PRAGMA data_version",
    [Q_ART_DELETE] = "DELETE FROM artifacts WHERE task_id = ?1",
    [Q_ART_INSERT] = "INSERT INTO artifacts(task_id, path, size, mime, sha256) VALUES(?1, ?2, ?3, ?4, ?5)",
    [Q_ART_GET] = "SELECT path, size, mime, sha256 FROM artifacts WHERE task_id = ?1 ORDER BY path",
    [Q_ART_FIND] = "SELECT path, size, mime, sha256 FROM artifacts WHERE task_id = ?1 AND path = ?2",
    [Q_TASK_OWNER] = "SELECT owner FROM tasks WHERE id = ?1",
    /* the same three pages as Q_TASK_LIST*, of one owner's tasks (index tasks_owner) */
    [Q_OWN_LIST] = "SELECT id, status, substr(prompt, 1, 200), model, created_ms, finished_ms"
                   " FROM tasks WHERE owner = ?4 ORDER BY created_ms DESC, id DESC LIMIT ?1",
    [Q_OWN_LIST_BEFORE] = "SELECT id, status, substr(prompt, 1, 200), model, created_ms, finished_ms"
                          " FROM tasks WHERE owner = ?4 AND created_ms < ?2"
                          " ORDER BY created_ms DESC, id DESC LIMIT ?1",
    [Q_OWN_LIST_AFTER_ROW] = "SELECT id, status, substr(prompt, 1, 200), model, created_ms, finished_ms"
                             " FROM tasks WHERE owner = ?4 AND (created_ms, id) < (?2, ?3)"
                             " ORDER BY created_ms DESC, id DESC LIMIT ?1",
    [Q_OWN_ACTIVE] = "SELECT COUNT(*) FROM tasks WHERE owner = ?1 AND status IN ('queued', 'running')",
    [Q_SESSION_INSERT] = "INSERT INTO sessions(id_sha256, \"user\", token_sha256, created_ms, expires_ms)"
                         " VALUES(?1, ?2, ?3, ?4, ?5)",
    [Q_SESSION_GET] = "SELECT \"user\", token_sha256, created_ms, expires_ms FROM sessions"
                      " WHERE id_sha256 = ?1 AND expires_ms > ?2",
    [Q_SESSION_DELETE] = "DELETE FROM sessions WHERE id_sha256 = ?1",
    [Q_SESSION_EXPIRE] = "DELETE FROM sessions WHERE expires_ms <= ?1",
    /* a user keeps their ?2 newest sessions: logging in again and again
     * (a script that never logs out) cannot fill the table */
    [Q_SESSION_TRIM] = "DELETE FROM sessions WHERE \"user\" = ?1 AND id_sha256 NOT IN"
                       " (SELECT id_sha256 FROM sessions WHERE \"user\" = ?1"
                       " ORDER BY created_ms DESC, id_sha256 LIMIT ?2)",
    [Q_METRIC_ADD] = "INSERT INTO metrics(name, labels, le, value) VALUES(?1, ?2, ?3, ?4)"
                     " ON CONFLICT(name, labels, le) DO UPDATE SET value = value + excluded.value",
    [Q_METRICS_ALL] = "SELECT name, labels, le, value FROM metrics ORDER BY name, labels, le",
    [Q_TASK_COUNTS] = "SELECT status, COUNT(*) FROM tasks GROUP BY status",
    /* the outputs at the end of the current round, kept with the round
     * (schema v9) so the page can mark what changed from one to the next */
    [Q_ROUND_ARTS] = "UPDATE rounds SET artifacts = (SELECT json_group_array(json_object('path', a.path,"
                     " 'size', a.size, 'sha256', a.sha256)) FROM artifacts a WHERE a.task_id = ?1)"
                     " WHERE task_id = ?1 AND n = (SELECT round FROM tasks WHERE id = ?1)",
    /* PostgreSQL's alone (lb_event_append_pg); SQLite never prepares it */
    [Q_EVENT_APPEND_PG] = "SELECT NULL",
};

/* The statements PostgreSQL writes differently (NULL: lb_sql's text is
 * the same in both): JSON through functions of the schema (store_schema_pg.c),
 * casts where a parameter's type cannot be inferred, and row locks where
 * SQLite's BEGIN IMMEDIATE already serialized the writers. */
static const char *const lb_sql_pg[Q__COUNT] = {
    [Q_TASK_INSERT] = "INSERT INTO tasks(id, status, prompt, model, max_turns, created_ms, inputs,"
                      " token_budget, timeout_s, network, image, rerun_of, owner, options)"
                      " SELECT ?1::text, 'queued', ?2::text, ?3::text, ?4::bigint, ?5::bigint, ?6::text,"
                      " ?7::bigint, ?8::bigint, ?9::text, ?10::text, ?11::text, ?12::text, ?14::text"
                      " WHERE ?13::bigint <= 0 OR (SELECT COUNT(*) FROM tasks WHERE owner = ?12"
                      " AND status IN ('queued', 'running')) < ?13::bigint",
    /* read in the transaction that then changes the task: the row lock
     * makes two writers of one task wait for each other, as SQLite's
     * write lock did */
    [Q_TASK_STATUS] = "SELECT status, pid FROM tasks WHERE id = ?1 FOR UPDATE",
    [Q_EVENT_INSERT] = "INSERT INTO events(task_id, seq, ts_ms, type, data, round)"
                       " SELECT ?1, ?2, ?3, ?4, lb_json_with_round(?5::text, t.round), t.round"
                       " FROM tasks t WHERE t.id = ?1",
    [Q_EVENTS_NEWEST] = "SELECT j.idx - 1, (SELECT MAX(seq) FROM events WHERE task_id = j.v)"
                        " FROM jsonb_array_elements_text(?1::jsonb) WITH ORDINALITY AS j(v, idx)",
    /* any commit moves the WAL's insert position at once (the write
     * position waits for the WAL writer): a change indicator like SQLite's
     * data_version. It also moves for other databases' writes and for
     * maintenance, which only wakes the watcher for nothing. */
    [Q_DATA_VERSION] = "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint",
    [Q_METRIC_ADD] = "INSERT INTO metrics(name, labels, le, value) VALUES(?1, ?2, ?3, ?4)"
                     " ON CONFLICT(name, labels, le) DO UPDATE SET value = metrics.value + excluded.value",
    [Q_ROUND_ARTS] = "UPDATE rounds SET artifacts = (SELECT COALESCE(json_agg(json_build_object('path', a.path,"
                     " 'size', a.size, 'sha256', a.sha256) ORDER BY a.path)::text, '[]') FROM artifacts a"
                     " WHERE a.task_id = ?1) WHERE task_id = ?1 AND n = (SELECT round FROM tasks WHERE id = ?1)",
    [Q_EVENT_SAME] = "SELECT e.seq FROM events e JOIN tasks t ON t.id = e.task_id WHERE e.task_id = ?1"
                     " AND e.ts_ms = ?2::bigint AND e.type = ?3 AND e.data = lb_json_with_round(?4::text, t.round)"
                     " ORDER BY e.seq DESC LIMIT 1",
    [Q_EVENT_APPEND_PG] =
        "WITH t AS (SELECT id, round FROM tasks WHERE id = ?1 AND status IN ('queued', 'running') FOR UPDATE)"
        " INSERT INTO events(task_id, seq, ts_ms, type, data, round)"
        " SELECT t.id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE task_id = ?1), ?2::bigint, ?3::text,"
        "  lb_json_with_round(?4::text, t.round), t.round FROM t RETURNING seq",
};

struct lb_store {
    lb_db *db;
    struct lb_sql_cache *sql;      /* its statements, kept (store_sql.h) */
    /* several nodes: an agent a node started writes with the (node, attempt)
     * of its claim (lb_store_set_fence); "" when not fenced */
    char fence_node[64];
    int fence_attempt;
};

/* ---- small helpers ---------------------------------------------------- */

/* The database layer's answer rc (LB_DB_ROW, LB_DB_DONE or an lb_status)
 * as an lb_status, logged with what when it is an error: busy and
 * unavailable as warnings (the caller answers 503 and is tried again),
 * the rest as errors. */
static int lb_store_err(lb_store *s, int rc, const char *what)
{
    if (rc == LB_OK || rc == LB_DB_ROW || rc == LB_DB_DONE)
        return LB_OK;
    if (rc == LB_E_TIMEOUT || rc == LB_E_UNAVAILABLE)
        lb_warn("store: %s: %s", what, lb_db_errmsg(s->db));
    else if (rc != LB_E_EXISTS && rc != LB_E_NOTFOUND && rc != LB_E_INVAL)
        lb_error("store: %s: %s", what, lb_db_errmsg(s->db));
    return rc;
}

static int lb_exec(lb_store *s, const char *sql)
{
    int rc = lb_db_exec(s->db, sql);
    if (rc)
        return lb_store_err(s, rc, "exec");
    return LB_OK;
}

/* Write transactions: lb_begin, the work with each failure going to one
 * label, and there lb_end_tx(s, rc), which keeps the work only when all
 * of it succeeded. */
static int lb_begin(lb_store *s) { return lb_store_err(s, lb_db_begin(s->db), "begin"); }
static void lb_rollback(lb_store *s) { lb_db_rollback(s->db); }
/* Ends the caller's write transaction: COMMIT when rc is LB_OK (its error
 * when it fails), else ROLLBACK; returns the outcome. */
static int lb_end_tx(lb_store *s, int rc)
{
    if (rc == LB_OK)
        rc = lb_store_err(s, lb_db_commit(s->db), "commit");
    if (rc != LB_OK)
        lb_rollback(s);
    return rc;
}

/* The statement q in the back end's dialect */
static const char *lb_sql_of(lb_store *s, int q)
{
    return lb_db_is_pg(s->db) && lb_sql_pg[q] ? lb_sql_pg[q] : lb_sql[q];
}

/* Statement q in the back end's dialect, reset and with no bindings (kept
 * per connection, store_sql.h); hand it back with lb_sql_done. NULL on
 * failure (logged). */
static lb_db_stmt *lb_stmt(lb_store *s, int q)
{
    lb_db_stmt *st;
    if (lb_sql_prep(s, lb_sql_of(s, q), &st) != LB_OK)
        return NULL;
    return st;
}

static int lb_bind_text(lb_db_stmt *st, int i, const char *v)
{
    return lb_db_bind_text(st, i, v);
}

/* Steps a statement that returns no rows; LB_OK when done. */
static int lb_step_done(lb_store *s, lb_db_stmt *st, const char *what)
{
    int rc = lb_db_step(st);
    return lb_store_err(s, rc, what);
}

/* Steps a statement that writes one row and resets it: LB_OK, none_rc
 * when it changed no row (no such task, a condition not met), or the
 * error. A single statement is its own transaction. */
static int lb_step_write(lb_store *s, lb_db_stmt *st, const char *what, int none_rc)
{
    int rc = lb_step_done(s, st, what);
    if (rc == LB_OK && lb_db_changes(s->db) == 0)
        rc = none_rc;
    lb_sql_done(s, st);
    return rc;
}

static const char *lb_col_text(lb_db_stmt *st, int i) { return lb_db_col_text(st, i); }

/* ---- open and migrate ------------------------------------------------- */

/* Schema v1. Events and artifacts belong to their task (ON DELETE CASCADE),
 * so deleting a task is one statement. events is WITHOUT ROWID: its primary
 * key is the only way it is ever read. */
static const char lb_schema_v1[] =
    "CREATE TABLE tasks("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  status TEXT NOT NULL CHECK(status IN ('queued','running','succeeded','failed','cancelled')),"
    "  reason TEXT,"
    "  prompt TEXT NOT NULL,"
    "  model TEXT,"
    "  max_turns INTEGER NOT NULL DEFAULT 0,"
    "  created_ms INTEGER NOT NULL,"
    "  started_ms INTEGER,"
    "  finished_ms INTEGER,"
    "  pid INTEGER,"
    "  turns INTEGER NOT NULL DEFAULT 0,"
    "  prompt_tokens INTEGER NOT NULL DEFAULT 0,"
    "  completion_tokens INTEGER NOT NULL DEFAULT 0,"
    "  answer TEXT,"
    "  inputs TEXT NOT NULL DEFAULT '[]');"
    "CREATE INDEX tasks_created ON tasks(created_ms DESC, id DESC);"
    "CREATE INDEX tasks_status ON tasks(status);"
    "CREATE TABLE events("
    "  task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  ts_ms INTEGER NOT NULL,"
    "  type TEXT NOT NULL,"
    "  data TEXT NOT NULL,"
    "  PRIMARY KEY(task_id, seq)) WITHOUT ROWID;"
    "CREATE TABLE artifacts("
    "  task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,"
    "  path TEXT NOT NULL,"
    "  size INTEGER NOT NULL,"
    "  mime TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  PRIMARY KEY(task_id, path)) WITHOUT ROWID;";

/* v2: the task's own limits (NULL for tasks made before: the service's
 * limits applied) and the detailed usage as a JSON object, so accounting
 * can grow without a migration per number. */
static const char lb_schema_v2[] =
    "ALTER TABLE tasks ADD COLUMN token_budget INTEGER;"
    "ALTER TABLE tasks ADD COLUMN timeout_s INTEGER;"
    "ALTER TABLE tasks ADD COLUMN usage TEXT;";

/* v3: the task's sandbox options (network mode, image; NULL = the
 * service's default) and, for "Run again", the task it was copied from. */
static const char lb_schema_v3[] =
    "ALTER TABLE tasks ADD COLUMN network TEXT;"
    "ALTER TABLE tasks ADD COLUMN image TEXT;"
    "ALTER TABLE tasks ADD COLUMN rerun_of TEXT;";

/* v4: access. Each task belongs to the user who made it (NULL: made
 * without users, or before they existed). A login session is kept as the
 * SHA-256 of its random id (the cookie's value never reaches the disk)
 * and the hash of the token it was opened with, so that removing that
 * token from llmbox.conf ends the session too. */
static const char lb_schema_v4[] =
    "ALTER TABLE tasks ADD COLUMN owner TEXT;"
    "CREATE INDEX tasks_owner ON tasks(owner, created_ms DESC, id DESC);"
    "CREATE TABLE sessions("
    "  id_sha256 TEXT PRIMARY KEY NOT NULL,"
    "  user TEXT NOT NULL,"
    "  token_sha256 TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL,"
    "  expires_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX sessions_user ON sessions(user, created_ms);"
    "CREATE INDEX sessions_expires ON sessions(expires_ms);";

/* v5: counters that must outlive the rows they count (a deleted task still
 * finished) and the observations of agents, which are separate processes:
 * one row per series, see store.h. The task counters are kept by triggers,
 * so every path that inserts or ends a task (the agent, the web's reaper
 * and recovery) counts in the same statement, and nothing can forget to. */
static const char lb_schema_v5[] =
    "CREATE TABLE metrics("
    "  name TEXT NOT NULL,"
    "  labels TEXT NOT NULL DEFAULT '',"
    "  le TEXT NOT NULL DEFAULT '',"
    "  value REAL NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(name, labels, le)) WITHOUT ROWID;"
    "CREATE TRIGGER tasks_metrics_created AFTER INSERT ON tasks BEGIN"
    "  INSERT INTO metrics(name, labels, le, value) VALUES('llmbox_tasks_created_total', '', '', 1)"
    "  ON CONFLICT(name, labels, le) DO UPDATE SET value = value + 1;"
    " END;"
    "CREATE TRIGGER tasks_metrics_finished AFTER UPDATE OF status ON tasks"
    " WHEN NEW.status IN ('succeeded', 'failed', 'cancelled')"
    "  AND OLD.status NOT IN ('succeeded', 'failed', 'cancelled') BEGIN"
    "  INSERT INTO metrics(name, labels, le, value)"
    "  VALUES('llmbox_tasks_finished_total', 'status=\"' || NEW.status || '\"', '', 1)"
    "  ON CONFLICT(name, labels, le) DO UPDATE SET value = value + 1;"
    " END;"
    /* the tasks already there count from the start, so the counters of an
     * upgraded installation begin where its history is */
    "INSERT INTO metrics(name, labels, le, value)"
    " SELECT 'llmbox_tasks_created_total', '', '', COUNT(*) FROM tasks;"
    "INSERT INTO metrics(name, labels, le, value)"
    " SELECT 'llmbox_tasks_finished_total', 'status=\"' || status || '\"', '', COUNT(*) FROM tasks"
    " WHERE status IN ('succeeded', 'failed', 'cancelled') GROUP BY status;";

/* v6: how a task runs besides its prompt (a JSON object: mode, layout,
 * answer_file, tool_names, max_tokens; NULL = none, as before). The
 * agent validates it when it runs the task, so a field added later needs
 * no migration. */
static const char lb_schema_v6[] = "ALTER TABLE tasks ADD COLUMN options TEXT;";

/* One entry per version; migrations[i] takes the schema from i to i+1.
 * Append only: a released migration is never edited. */
static const char *const lb_migrations[] = {lb_schema_v1, lb_schema_v2, lb_schema_v3, lb_schema_v4,
                                            lb_schema_v5, lb_schema_v6, lb_schema_v7_evals,
                                            lb_schema_v8_rollouts, lb_schema_v9_rounds,
                                            lb_schema_v10_queue,
                                            lb_schema_v11_home, /* several nodes: tasks.sandbox_node */
                                            lb_schema_v12_claims, /* several nodes: the runners' claims */
                                            lb_schema_v13_tombstones, /* several nodes: deleted tasks */
                                            lb_schema_v14_api_sandboxes, /* several nodes: listing every node's */
                                            lb_schema_v15_fork_shares, /* forks share their source's events */
                                            lb_schema_v16_api_sandbox_owner, /* several nodes: a user's list */
                                            lb_schema_v17_volumes, /* several nodes: E2B's volumes of every node */
};
_Static_assert(sizeof lb_migrations / sizeof lb_migrations[0] == LB_STORE_SCHEMA_VERSION,
               "one migration per schema version");

/* PostgreSQL's migrations: NULL below version 9, where its schema starts
 * whole (store_schema_pg.c); a version added later appends to both lists. */
static const char *const lb_migrations_pg[] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                               lb_schema_pg_v9, lb_schema_pg_v10_queue,
                                               lb_schema_pg_v11_home, /* several nodes: tasks.sandbox_node */
                                               lb_schema_pg_v12_claims, /* several nodes: the runners' claims */
                                               lb_schema_pg_v13_tombstones, /* several nodes: deleted tasks */
                                               lb_schema_pg_v14_api_sandboxes, /* several nodes: listing every node's */
                                               lb_schema_pg_v15_fork_shares, /* forks share their source's events */
                                               lb_schema_pg_v16_api_sandbox_owner, /* several nodes: a user's list */
                                               lb_schema_pg_v17_volumes, /* several nodes: E2B's volumes of every node */
};
_Static_assert(sizeof lb_migrations_pg / sizeof lb_migrations_pg[0] == LB_STORE_SCHEMA_VERSION,
               "one PostgreSQL migration per schema version");

/* Reads the stored schema version into *v (0: a new database). */
static int lb_schema_read(lb_store *s, int *v)
{
    *v = 0;
    lb_db_stmt *st = NULL;
    int rc;
    if (lb_db_is_pg(s->db)) {
        /* PostgreSQL refuses a statement naming a missing table: ask first */
        rc = lb_db_prepare(s->db, "SELECT to_regclass('meta') IS NOT NULL", 0, &st);
        if (rc == LB_OK && (rc = lb_db_step(st)) == LB_DB_ROW) {
            int has = lb_db_col_int(st, 0);
            rc = LB_OK;
            lb_db_finalize(st);
            st = NULL;
            if (!has)
                return LB_OK;
        } else {
            lb_db_finalize(st);
            return lb_store_err(s, rc == LB_DB_DONE ? LB_E_INTERNAL : rc, "read schema version");
        }
    }
    rc = lb_db_prepare(s->db, "SELECT value FROM meta WHERE key = 'schema_version'", 0, &st);
    if (rc != LB_OK) {
        /* SQLite: no meta table yet is a new database */
        return lb_db_is_pg(s->db) ? lb_store_err(s, rc, "read schema version") : LB_OK;
    }
    rc = lb_db_step(st);
    if (rc == LB_DB_ROW)
        *v = (int)strtol(lb_col_text(st, 0), NULL, 10);
    lb_db_finalize(st);
    return lb_store_err(s, rc, "read schema version");
}

static int lb_store_migrate(lb_store *s)
{
    /* Every agent opens the store: when the schema is current, opening
     * takes no write lock, so it neither waits behind a long writer nor
     * needs a byte of disk. */
    int version = 0;
    int rc = lb_schema_read(s, &version);
    if (rc == LB_OK && version == LB_STORE_SCHEMA_VERSION)
        return LB_OK;
    if (rc && rc != LB_E_INTERNAL)
        return rc;
    int pg = lb_db_is_pg(s->db);
    rc = lb_begin(s);
    if (rc)
        return rc;
    /* PostgreSQL: two processes migrating at once wait for each other
     * here (SQLite's BEGIN IMMEDIATE already did) */
    if (pg && (rc = lb_exec(s, "SELECT pg_advisory_xact_lock(7261001)")))
        goto out;
    rc = lb_exec(s, "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)");
    if (rc)
        goto out;
    rc = lb_schema_read(s, &version);
    if (rc)
        goto out;
    if (version > LB_STORE_SCHEMA_VERSION) {
        /* an older binary must not write into a newer schema */
        lb_error("store: the database has schema version %d but this llmbox knows only up to %d;"
                 " upgrade llmbox", version, LB_STORE_SCHEMA_VERSION);
        rc = LB_E_INVAL;
        goto out;
    }
    for (int v = version; v < LB_STORE_SCHEMA_VERSION; v++) {
        const char *m = pg ? lb_migrations_pg[v] : lb_migrations[v];
        if (pg && !m) {
            /* the first PostgreSQL schema is a whole one: skip to it from empty */
            if (v != 0) {
                lb_error("store: the PostgreSQL database has schema version %d, which no llmbox made", v);
                rc = LB_E_INVAL;
                goto out;
            }
            while (!lb_migrations_pg[v])
                v++;
            m = lb_migrations_pg[v];
        }
        rc = lb_exec(s, m);
        if (rc)
            goto out;
        lb_info("store: migrated the database schema to version %d", v + 1);
    }
    if (version != LB_STORE_SCHEMA_VERSION) {
        char sql[160];
        snprintf(sql, sizeof sql,
                 "INSERT INTO meta(key, value) VALUES('schema_version', '%d')"
                 " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                 LB_STORE_SCHEMA_VERSION);
        rc = lb_exec(s, sql);
        if (rc)
            goto out;
    }
out:
    rc = lb_end_tx(s, rc);
    return rc;
}

int lb_store_open(const char *path, lb_store **out)
{
    *out = NULL;
    if (!path || !*path)
        return LB_E_INVAL;
    lb_store *s = calloc(1, sizeof *s);
    if (!s)
        return LB_E_NOMEM;
    int rc = lb_db_open(path, &s->db);
    if (rc)
        goto out;
    rc = lb_store_migrate(s);
out:
    if (rc) {
        lb_store_close(s);
        return rc;
    }
    *out = s;
    return LB_OK;
}

void lb_store_where_shown(const char *where, char *out, size_t outsz)
{
    lb_db_where_redact(where, out, outsz);
}

void lb_store_close(lb_store *s)
{
    if (!s)
        return;
    lb_sql_cache_free(s->sql);
    lb_db_close(s->db);
    free(s);
}

/* ---- tasks ------------------------------------------------------------ */

static void lb_task_insert_bind(lb_db_stmt *st, const lb_task_new *t)
{
    lb_bind_text(st, 1, t->id);
    lb_bind_text(st, 2, t->prompt);
    lb_bind_text(st, 3, t->model);
    lb_db_bind_int(st, 4, t->max_turns);
    lb_db_bind_int64(st, 5, lb_now_ms());
    lb_bind_text(st, 6, t->inputs_json ? t->inputs_json : "[]");
    lb_db_bind_int64(st, 7, t->token_budget);
    if (t->timeout_s > 0)
        lb_db_bind_int(st, 8, t->timeout_s);
    else
        lb_db_bind_null(st, 8);
    lb_bind_text(st, 9, t->network);
    lb_bind_text(st, 10, t->image);
    lb_bind_text(st, 11, t->rerun_of);
    lb_bind_text(st, 12, t->owner);
    lb_db_bind_int(st, 13, t->owner ? t->owner_max_active : 0);
    lb_bind_text(st, 14, t->options_json);
}

int lb_store_task_insert(lb_store *s, const lb_task_new *t)
{
    if (!s || !t || !lb_id_valid(t->id) || !t->prompt || strlen(t->prompt) > LB_STORE_TEXT_MAX ||
        (t->options_json && strlen(t->options_json) > LB_STORE_OPTIONS_MAX))
        return LB_E_INVAL;
    /* PostgreSQL: a statement sees the rows committed when it began, so
     * the owner's count and the insert are one step only under the owner's
     * lock; SQLite: a single statement is its own transaction, under the
     * one write lock */
    int locked = lb_db_is_pg(s->db) && t->owner && t->owner_max_active > 0;
    int rc = locked ? lb_begin(s) : LB_OK;
    if (rc)
        return rc;
    if (locked && (rc = lb_store_owner_lock(s, t->owner)))
        goto out;
    lb_db_stmt *st = lb_stmt(s, Q_TASK_INSERT);
    if (!st) {
        rc = LB_E_INTERNAL;
        goto out;
    }
    lb_task_insert_bind(st, t);
    rc = lb_step_write(s, st, "insert task", LB_E_BUSY); /* the owner's limit was reached */
out:
    return locked ? lb_end_tx(s, rc) : rc;
}

int lb_store_owner_lock(lb_store *s, const char *owner)
{
    if (!lb_db_is_pg(s->db) || !owner)
        return LB_OK; /* SQLite: BEGIN IMMEDIATE already holds the one write lock */
    lb_db_stmt *st = NULL;
    int rc = lb_db_prepare(s->db, "SELECT pg_advisory_xact_lock(7261002, hashtext(?1))", 0, &st);
    if (rc == LB_OK) {
        lb_db_bind_text(st, 1, owner);
        rc = lb_db_step(st);
    }
    lb_db_finalize(st);
    return lb_store_err(s, rc, "lock the owner's tasks");
}

/* Reads status (and pid) of a task inside the caller's transaction. */
static int lb_task_status_read(lb_store *s, const char *id, char *status, size_t statussz, int *pid)
{
    lb_db_stmt *st = lb_stmt(s, Q_TASK_STATUS);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, id);
    int src = lb_db_step(st);
    int rc;
    if (src == LB_DB_ROW) {
        snprintf(status, statussz, "%s", lb_col_text(st, 0));
        if (pid)
            *pid = lb_db_col_int(st, 1);
        rc = LB_OK;
    } else if (src == LB_DB_DONE) {
        rc = LB_E_NOTFOUND;
    } else {
        rc = lb_store_err(s, src, "task status");
    }
    lb_sql_done(s, st);
    return rc;
}

/* several nodes: the fence of an agent a node started. Read under the task's
 * row lock that lb_task_status_read just took (PostgreSQL: FOR UPDATE;
 * SQLite: the write lock), which every writer of the task takes first, so
 * the answer holds until this transaction ends: the claim is still this
 * agent's (node, attempt) and its node's lease has not expired by the
 * database's clock. LB_E_DENIED otherwise. */
static const char lb_fence_sql[] =
    "SELECT 1 FROM tasks t JOIN nodes n ON n.name = t.node WHERE t.id = ?1 AND t.node = ?2 AND t.attempt = ?3"
    " AND n.lease_expires_ms > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
static const char lb_fence_sql_pg[] =
    "SELECT 1 FROM tasks t JOIN nodes n ON n.name = t.node WHERE t.id = ?1 AND t.node = ?2"
    " AND t.attempt = ?3::bigint AND n.lease_expires_ms > (extract(epoch from clock_timestamp()) * 1000)::bigint"
    " FOR SHARE OF n";

static int lb_fence_check(lb_store *s, const char *id)
{
    lb_db_stmt *st = NULL;
    int rc = lb_db_prepare(s->db, lb_db_is_pg(s->db) ? lb_fence_sql_pg : lb_fence_sql, 0, &st);
    if (rc != LB_OK)
        return lb_store_err(s, rc, "prepare the fence");
    lb_bind_text(st, 1, id);
    lb_bind_text(st, 2, s->fence_node);
    lb_db_bind_int(st, 3, s->fence_attempt);
    int src = lb_db_step(st);
    rc = src == LB_DB_ROW ? LB_OK : src == LB_DB_DONE ? LB_E_DENIED : lb_store_err(s, src, "check the fence");
    lb_db_finalize(st);
    if (rc == LB_E_DENIED)
        lb_warn("store: task %s: write refused: attempt %d on node %s is no longer the task's, or the node's"
                " lease expired", id, s->fence_attempt, s->fence_node);
    return rc;
}

const char *lb_store_fence_node(const lb_store *s) { return s ? s->fence_node : ""; }

int lb_store_set_fence(lb_store *s, const char *node, int attempt)
{
    if (!s || !lb_node_name_valid(node) || attempt < 1)
        return LB_E_INVAL;
    snprintf(s->fence_node, sizeof s->fence_node, "%s", node);
    s->fence_attempt = attempt;
    return LB_OK;
}

/* Starts a write transaction on a task that exists and is not final yet:
 * LB_E_NOTFOUND or LB_E_EXISTS (rolled back) otherwise. Every change to a
 * running task goes through here, so a final task never changes again. */
static int lb_begin_live(lb_store *s, const char *id)
{
    char status[16];
    int rc = lb_begin(s);
    if (rc)
        return rc;
    rc = lb_task_status_read(s, id, status, sizeof status, NULL);
    if (rc == LB_OK && lb_task_status_is_final(lb_task_status_parse(status)))
        rc = LB_E_EXISTS;
    if (rc == LB_OK && s->fence_node[0])
        rc = lb_fence_check(s, id);
    if (rc)
        lb_rollback(s);
    return rc;
}

int lb_store_task_set_running(lb_store *s, const char *id, int pid)
{
    if (!s || !lb_id_valid(id))
        return LB_E_INVAL;
    int rc = lb_begin_live(s, id);
    if (rc)
        return rc;
    lb_db_stmt *st = lb_stmt(s, Q_TASK_SET_RUNNING);
    if (!st) {
        rc = LB_E_INTERNAL;
        goto out;
    }
    lb_bind_text(st, 1, id);
    lb_db_bind_int(st, 2, pid);
    lb_db_bind_int64(st, 3, lb_now_ms());
    rc = lb_step_done(s, st, "set running");
    lb_sql_done(s, st);
    if (rc)
        goto out;
out:
    rc = lb_end_tx(s, rc);
    return rc;
}

int lb_store_task_set_pid(lb_store *s, const char *id, int pid)
{
    if (!s || !lb_id_valid(id))
        return LB_E_INVAL;
    lb_db_stmt *st = lb_stmt(s, Q_TASK_SET_PID);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, id);
    lb_db_bind_int(st, 2, pid);
    return lb_step_write(s, st, "set pid", LB_E_NOTFOUND);
}

/* Appends an event inside the caller's transaction. */
static int lb_event_insert(lb_store *s, const char *task_id, int64_t ts_ms, const char *type, const char *data,
                           int64_t *seq_out)
{
    lb_db_stmt *st = lb_stmt(s, Q_EVENT_NEXT_SEQ);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, task_id);
    int src = lb_db_step(st);
    if (src != LB_DB_ROW) {
        int rc = lb_store_err(s, src, "next event seq");
        lb_sql_done(s, st);
        return rc ? rc : LB_E_INTERNAL;
    }
    int64_t seq = lb_db_col_int64(st, 0);
    lb_sql_done(s, st);

    st = lb_stmt(s, Q_EVENT_INSERT);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, task_id);
    lb_db_bind_int64(st, 2, seq);
    lb_db_bind_int64(st, 3, ts_ms);
    lb_bind_text(st, 4, type);
    lb_bind_text(st, 5, data);
    int rc = lb_step_done(s, st, "insert event");
    lb_sql_done(s, st);
    if (rc == LB_OK && seq_out)
        *seq_out = seq;
    return rc;
}

/* ---- the disk reserve ----------------------------------------------- */

/* <db>-reserve: a file of LB_STORE_RESERVE_BYTES next to the database.
 * When the disk is full, the end of a task could not be recorded and the
 * task would stay "running" until space came back; deleting the reserve
 * frees room for exactly those records (lb_store_task_end does, and
 * only it). The web puts it back once there is room again. */
static void lb_reserve_path(const char *db_path, char *out, size_t outsz)
{
    snprintf(out, outsz, "%s-reserve", db_path);
}

static int lb_reserve_release(lb_store *s)
{
    const char *db = lb_db_file(s->db);
    char p[4200];
    if (!db || !*db)
        return 0;
    lb_reserve_path(db, p, sizeof p);
    if (unlink(p) != 0)
        return 0;
    lb_warn("store: the disk is full: released the %u MiB reserve (%s) to record the end of a task",
            LB_STORE_RESERVE_BYTES >> 20, p);
    return 1;
}

int lb_store_reserve_keep(const char *db_path)
{
    char p[4200], tmp[4300];
    struct stat st;
    lb_reserve_path(db_path, p, sizeof p);
    if (lstat(p, &st) == 0)
        return LB_OK;
    /* only when there is plenty of room: the reserve must not be what
     * fills the disk again */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", db_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    struct statvfs vfs;
    if (statvfs(slash ? dir : ".", &vfs) != 0 ||
        (uint64_t)vfs.f_bavail * vfs.f_frsize < 4ull * LB_STORE_RESERVE_BYTES)
        return LB_E_NOSPACE;
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return LB_E_IO;
    /* real blocks (not a sparse file): freeing them must free space */
    int rc = posix_fallocate(fd, 0, LB_STORE_RESERVE_BYTES) == 0 ? LB_OK : LB_E_NOSPACE;
    if (close(fd) != 0 && rc == LB_OK)
        rc = LB_E_IO;
    if (rc == LB_OK && rename(tmp, p) != 0)
        rc = LB_E_IO;
    if (rc != LB_OK)
        unlink(tmp);
    else
        lb_info("store: the %u MiB disk reserve is in place (%s)", LB_STORE_RESERVE_BYTES >> 20, p);
    return rc;
}

static int lb_task_finish_once(lb_store *s, const char *id, const char *status, const char *reason,
                               const char *answer);

int lb_store_task_end(lb_store *s, const char *id, lb_task_status status, const char *reason,
                      const char *answer)
{
    if (!s || !lb_id_valid(id) || !lb_task_status_is_final(status))
        return LB_E_INVAL;
    if ((reason && strlen(reason) > LB_STORE_TEXT_MAX) || (answer && strlen(answer) > LB_STORE_TEXT_MAX))
        return LB_E_TOOBIG;
    const char *name = lb_task_status_name(status);
    int rc = lb_task_finish_once(s, id, name, reason, answer);
    if (rc == LB_E_NOSPACE && lb_reserve_release(s))
        rc = lb_task_finish_once(s, id, name, reason, answer);
    return rc;
}

int lb_store_task_finish(lb_store *s, const char *id, const char *status, const char *reason,
                         const char *answer)
{
    return lb_store_task_end(s, id, lb_task_status_parse(status), reason, answer);
}

/* The end itself, in the caller's transaction on a live task: the final
 * status and the "done" event. */
static int lb_task_finish_body(lb_store *s, const char *id, const char *status, const char *reason,
                               const char *answer)
{
    char *data = NULL;
    cJSON *ev = NULL;
    lb_db_stmt *st = lb_stmt(s, Q_TASK_FINISH);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, id);
    lb_bind_text(st, 2, status);
    lb_bind_text(st, 3, reason);
    lb_bind_text(st, 4, answer);
    lb_db_bind_int64(st, 5, lb_now_ms());
    int rc = lb_step_done(s, st, "finish task");
    lb_sql_done(s, st);
    if (rc)
        return rc;
    ev = cJSON_CreateObject();
    if (!ev || !cJSON_AddStringToObject(ev, "status", status) ||
        (reason && !cJSON_AddStringToObject(ev, "reason", reason))) {
        rc = LB_E_NOMEM;
        goto out;
    }
    data = cJSON_PrintUnformatted(ev);
    if (!data) {
        rc = LB_E_NOMEM;
        goto out;
    }
    rc = lb_event_insert(s, id, lb_now_ms(), "done", data, NULL);
out:
    cJSON_Delete(ev);
    free(data);
    return rc;
}

static int lb_task_finish_once(lb_store *s, const char *id, const char *status, const char *reason,
                               const char *answer)
{
    int rc = lb_begin_live(s, id); /* the first finisher wins */
    if (rc)
        return rc;
    rc = lb_task_finish_body(s, id, status, reason, answer);
    return lb_end_tx(s, rc);
}

int lb_store_task_end_in_tx(lb_store *s, const char *id, lb_task_status status, const char *reason)
{
    if (!s || !lb_id_valid(id) || !lb_task_status_is_final(status) || !lb_db_in_tx(s->db))
        return LB_E_INVAL;
    char cur[16];
    int rc = lb_task_status_read(s, id, cur, sizeof cur, NULL); /* locks the row (PostgreSQL) */
    if (rc == LB_OK && lb_task_status_is_final(lb_task_status_parse(cur)))
        rc = LB_E_EXISTS;
    if (rc == LB_OK)
        rc = lb_task_finish_body(s, id, lb_task_status_name(status), reason, NULL);
    return rc;
}

int lb_store_task_set_usage(lb_store *s, const char *id, const lb_task_usage *u)
{
    if (!s || !lb_id_valid(id) || !u)
        return LB_E_INVAL;
    /* answer_source is one of four words; anything else is left out */
    const char *src = u->answer_source;
    int src_ok = !strcmp(src, "file") || !strcmp(src, "finish") || !strcmp(src, "reply") || !strcmp(src, "none");
    /* tokens_captured: the turns whose exact tokens are usable, of those
     * judged (only when the run asked for them) */
    char tok[96] = "";
    if (u->tokens_capture)
        snprintf(tok, sizeof tok, ",\"tokens_captured\":{\"ok\":%d,\"turns\":%d}", u->tokens_ok, u->tokens_turns);
    char json[640];
    snprintf(json, sizeof json,
             "{\"environment_tokens\":%lld,\"environment_estimated\":%s,\"context_tokens\":%lld,"
             "\"model_ms\":%lld,\"tools_ms\":%lld,\"sandbox_ms\":%lld%s%s%s%s}",
             (long long)u->environment_tokens, u->environment_estimated ? "true" : "false",
             (long long)u->context_tokens, (long long)u->model_ms, (long long)u->tools_ms,
             (long long)u->sandbox_ms, src_ok ? ",\"answer_source\":\"" : "", src_ok ? src : "",
             src_ok ? "\"" : "", tok);
    /* several nodes: a fenced agent's usage goes through the fence too */
    int fenced = s->fence_node[0] != '\0', rc;
    if (fenced && (rc = lb_begin_live(s, id)))
        return rc;
    lb_db_stmt *st = lb_stmt(s, Q_TASK_USAGE);
    if (!st)
        return fenced ? lb_end_tx(s, LB_E_INTERNAL) : LB_E_INTERNAL;
    lb_bind_text(st, 1, id);
    lb_db_bind_int(st, 2, u->turns);
    lb_db_bind_int64(st, 3, u->prompt_tokens);
    lb_db_bind_int64(st, 4, u->completion_tokens);
    lb_bind_text(st, 5, json);
    rc = lb_step_write(s, st, "set usage", LB_E_NOTFOUND);
    return fenced ? lb_end_tx(s, rc) : rc;
}

int lb_store_task_state(lb_store *s, const char *id, char *status, size_t statussz, int *pid)
{
    if (!s || !lb_id_valid(id) || !status || statussz < 16)
        return LB_E_INVAL;
    status[0] = '\0';
    if (pid)
        *pid = 0;
    return lb_task_status_read(s, id, status, statussz, pid);
}

/* A column as a malloc'd string, NULL when the column is NULL. *bad is
 * set when a copy could not be made. */
static char *lb_col_dup(lb_db_stmt *st, int i, int *bad)
{
    if (lb_db_col_is_null(st, i))
        return NULL;
    char *v = strdup(lb_col_text(st, i));
    if (!v)
        *bad = 1;
    return v;
}

/* A column as a number, -1 when the column is NULL. */
static int64_t lb_col_int_or_none(lb_db_stmt *st, int i)
{
    return lb_db_col_is_null(st, i) ? -1 : lb_db_col_int64(st, i);
}

int lb_store_task_load(lb_store *s, const char *id, lb_task *out)
{
    memset(out, 0, sizeof *out);
    if (!s || !lb_id_valid(id))
        return LB_E_INVAL;
    lb_db_stmt *st = lb_stmt(s, Q_TASK_GET);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, id);
    int src = lb_db_step(st);
    int rc = LB_OK, bad = 0;
    if (src == LB_DB_DONE) {
        rc = LB_E_NOTFOUND;
    } else if (src != LB_DB_ROW) {
        rc = lb_store_err(s, src, "get task");
    } else {
        snprintf(out->id, sizeof out->id, "%s", lb_col_text(st, 0));
        out->status = lb_task_status_parse(lb_col_text(st, 1));
        out->reason = lb_col_dup(st, 2, &bad);
        out->prompt = strdup(lb_col_text(st, 3));
        bad |= !out->prompt;
        out->model = lb_col_dup(st, 4, &bad);
        out->max_turns = lb_db_col_int(st, 5);
        out->created_ms = lb_col_int_or_none(st, 6);
        out->started_ms = lb_col_int_or_none(st, 7);
        out->finished_ms = lb_col_int_or_none(st, 8);
        out->turns = lb_db_col_int(st, 9);
        out->prompt_tokens = lb_db_col_int64(st, 10);
        out->completion_tokens = lb_db_col_int64(st, 11);
        out->answer = lb_col_dup(st, 12, &bad);
        out->inputs_json = lb_col_dup(st, 13, &bad);
        out->token_budget = lb_col_int_or_none(st, 14);
        out->timeout_s = lb_col_int_or_none(st, 15);
        out->usage_json = lb_col_dup(st, 16, &bad);
        out->network = lb_col_dup(st, 17, &bad);
        out->image = lb_col_dup(st, 18, &bad);
        out->rerun_of = lb_col_dup(st, 19, &bad);
        out->owner = lb_col_dup(st, 20, &bad);
        out->pid = lb_db_col_int(st, 21);
        out->options_json = lb_col_dup(st, 22, &bad);
        out->round = lb_db_col_int(st, 23);
        if (bad)
            rc = LB_E_NOMEM;
    }
    lb_sql_done(s, st);
    if (rc)
        lb_task_free(out);
    return rc;
}

int lb_store_task_rows(lb_store *s, const char *owner, int limit, int64_t before_ms, const char *before_id,
                       lb_task **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    if (!s)
        return LB_E_INVAL;
    if (limit <= 0 || limit > LB_STORE_LIST_MAX)
        limit = limit <= 0 ? 50 : LB_STORE_LIST_MAX;
    int after_row = before_ms > 0 && before_id && *before_id;
    int q = before_ms <= 0 ? Q_TASK_LIST : after_row ? Q_TASK_LIST_AFTER_ROW : Q_TASK_LIST_BEFORE;
    if (owner)
        q = before_ms <= 0 ? Q_OWN_LIST : after_row ? Q_OWN_LIST_AFTER_ROW : Q_OWN_LIST_BEFORE;
    lb_task *v = calloc((size_t)limit, sizeof *v);
    if (!v)
        return LB_E_NOMEM;
    lb_db_stmt *st = lb_stmt(s, q);
    if (!st) {
        free(v);
        return LB_E_INTERNAL;
    }
    lb_db_bind_int(st, 1, limit);
    if (before_ms > 0)
        lb_db_bind_int64(st, 2, before_ms);
    if (after_row)
        lb_bind_text(st, 3, before_id);
    if (owner)
        lb_bind_text(st, 4, owner);
    int rc = LB_OK, src = LB_DB_DONE, bad = 0;
    size_t cnt = 0;
    while (cnt < (size_t)limit && (src = lb_db_step(st)) == LB_DB_ROW) {
        lb_task *t = &v[cnt++];
        snprintf(t->id, sizeof t->id, "%s", lb_col_text(st, 0));
        t->status = lb_task_status_parse(lb_col_text(st, 1));
        t->prompt = strdup(lb_col_text(st, 2));
        bad |= !t->prompt;
        t->model = lb_col_dup(st, 3, &bad);
        t->created_ms = lb_col_int_or_none(st, 4);
        t->finished_ms = lb_col_int_or_none(st, 5);
        t->started_ms = t->token_budget = t->timeout_s = -1; /* not read */
        if (bad) {
            rc = LB_E_NOMEM;
            break;
        }
    }
    if (rc == LB_OK && cnt < (size_t)limit && src != LB_DB_DONE)
        rc = lb_store_err(s, src, "list tasks");
    lb_sql_done(s, st);
    if (rc) {
        lb_tasks_free(v, cnt);
        return rc;
    }
    *rows = v;
    *n = cnt;
    return LB_OK;
}

int lb_store_task_delete(lb_store *s, const char *id)
{
    if (!s || !lb_id_valid(id))
        return LB_E_INVAL;
    lb_db_stmt *st = lb_stmt(s, Q_TASK_DELETE);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, id);
    /* events and artifacts go with it (ON DELETE CASCADE), atomically */
    return lb_step_write(s, st, "delete task", LB_E_NOTFOUND);
}

int lb_store_tasks_active(lb_store *s, char ***ids, int **pids, size_t *n)
{
    *ids = NULL;
    *pids = NULL;
    *n = 0;
    if (!s)
        return LB_E_INVAL;
    lb_db_stmt *st = lb_stmt(s, Q_TASKS_ACTIVE);
    if (!st)
        return LB_E_INTERNAL;
    char **iv = NULL;
    int *pv = NULL;
    size_t cnt = 0, cap = 0;
    int rc = LB_OK, src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        if (cnt == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **ni = realloc(iv, ncap * sizeof *ni);
            if (!ni) {
                rc = LB_E_NOMEM;
                goto out;
            }
            iv = ni;
            int *np = realloc(pv, ncap * sizeof *np);
            if (!np) {
                rc = LB_E_NOMEM;
                goto out;
            }
            pv = np;
            cap = ncap;
        }
        iv[cnt] = strdup(lb_col_text(st, 0));
        if (!iv[cnt]) {
            rc = LB_E_NOMEM;
            goto out;
        }
        pv[cnt] = lb_db_col_int(st, 1);
        cnt++;
    }
    if (src != LB_DB_DONE)
        rc = lb_store_err(s, src, "active tasks");
out:
    lb_sql_done(s, st);
    if (rc) {
        for (size_t i = 0; i < cnt; i++)
            free(iv[i]);
        free(iv);
        free(pv);
        return rc;
    }
    *ids = iv;
    *pids = pv;
    *n = cnt;
    return LB_OK;
}

/* ---- events ----------------------------------------------------------- */

static int lb_type_valid(const char *t)
{
    size_t n = 0;
    for (; t[n]; n++)
        if (!((t[n] >= 'a' && t[n] <= 'z') || (t[n] >= '0' && t[n] <= '9') || t[n] == '_'))
            return 0;
    return n > 0 && n <= 32;
}

/* PostgreSQL: an event in one statement, one round trip instead of five
 * (BEGIN, the task's row, the next seq, the insert, COMMIT; bench/RESULTS.md).
 * The task's row is locked (FOR UPDATE) and re-read once the lock is had,
 * so nothing is appended to a task that became final meanwhile. The next
 * seq, though, is read in the statement's snapshot, taken before that
 * wait: when another writer of the same task committed in between, the
 * insert meets its seq (a unique key). Then this answers LB_E_BUSY and the
 * caller takes the transaction's way, which reads the seq under the lock
 * (a retry here could lose to a busy writer again and again). */
static int lb_event_append_pg(lb_store *s, const char *task_id, int64_t ts_ms, const char *type,
                              const char *data_json, int64_t *seq_out)
{
    lb_db_stmt *st = lb_stmt(s, Q_EVENT_APPEND_PG);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, task_id);
    lb_db_bind_int64(st, 2, ts_ms);
    lb_bind_text(st, 3, type);
    lb_bind_text(st, 4, data_json);
    int rc, src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        if (seq_out)
            *seq_out = lb_db_col_int64(st, 0);
        rc = LB_OK;
    } else if (src == LB_DB_DONE) {
        rc = LB_E_NOTFOUND; /* no such task, or it is final: told apart below */
    } else {
        rc = src == LB_E_EXISTS ? LB_E_BUSY : lb_store_err(s, src, "insert event");
    }
    lb_sql_done(s, st);
    if (rc == LB_E_NOTFOUND) {
        char status[16];
        rc = lb_task_status_read(s, task_id, status, sizeof status, NULL);
        if (rc == LB_OK)
            rc = LB_E_EXISTS; /* final: nothing is appended after "done" */
    }
    return rc;
}

/* The seq of the event (task_id, ts_ms, type, data) when it is stored:
 * LB_OK, LB_E_NOTFOUND, or the store's error. */
static int lb_event_same(lb_store *s, const char *task_id, int64_t ts_ms, const char *type, const char *data,
                         int64_t *seq_out)
{
    lb_db_stmt *st = lb_stmt(s, Q_EVENT_SAME);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, task_id);
    lb_db_bind_int64(st, 2, ts_ms);
    lb_bind_text(st, 3, type);
    lb_bind_text(st, 4, data);
    int src = lb_db_step(st), rc;
    if (src == LB_DB_ROW) {
        if (seq_out)
            *seq_out = lb_db_col_int64(st, 0);
        rc = LB_OK;
    } else {
        rc = src == LB_DB_DONE ? LB_E_NOTFOUND : lb_store_err(s, src, "look for an event");
    }
    lb_sql_done(s, st);
    return rc;
}

int lb_store_event_append(lb_store *s, const char *task_id, const char *type, const char *data_json,
                          int64_t *seq_out)
{
    return lb_store_event_append_at(s, task_id, lb_now_ms(), type, data_json, 0, seq_out);
}

int lb_store_event_append_at(lb_store *s, const char *task_id, int64_t ts_ms, const char *type,
                             const char *data_json, int again, int64_t *seq_out)
{
    if (seq_out)
        *seq_out = 0;
    if (!s || !lb_id_valid(task_id) || !type || !lb_type_valid(type) || ts_ms < 0)
        return LB_E_INVAL;
    if (!data_json)
        data_json = "{}";
    if (strlen(data_json) > LB_STORE_EVENT_MAX)
        return LB_E_TOOBIG;
    if (again) {
        /* the last try's commit may have happened unanswered (the server
         * went away between the two): not stored twice */
        int src = lb_event_same(s, task_id, ts_ms, type, data_json, seq_out);
        if (src != LB_E_NOTFOUND)
            return src;
    }
    if (lb_db_is_pg(s->db) && !s->fence_node[0]) { /* a fenced writer takes the transaction's way */
        int frc = lb_event_append_pg(s, task_id, ts_ms, type, data_json, seq_out);
        if (frc != LB_E_BUSY)
            return frc;
    }
    /* "done" is always the last event of a task: nothing is appended once
     * the task is final (the next seq is computed under the write lock, so
     * two writers can never take the same seq either). */
    int rc = lb_begin_live(s, task_id);
    if (rc) {
        if (seq_out)
            *seq_out = 0;
        return rc;
    }
    rc = lb_event_insert(s, task_id, ts_ms, type, data_json, seq_out);
    if (rc)
        goto out;
out:
    rc = lb_end_tx(s, rc);
    if (rc) {
        if (seq_out)
            *seq_out = 0;
    }
    return rc;
}

int lb_store_events_after(lb_store *s, const char *task_id, int64_t after_seq, int limit,
                          lb_event_cb cb, void *arg)
{
    if (!s || !lb_id_valid(task_id) || !cb)
        return LB_E_INVAL;
    if (limit <= 0)
        limit = 1000;
    lb_db_stmt *st = lb_stmt(s, Q_EVENTS_AFTER);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, task_id);
    lb_db_bind_int64(st, 2, after_seq < 0 ? 0 : after_seq);
    lb_db_bind_int(st, 3, limit);
    int rc = LB_OK, src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        rc = cb(arg, lb_db_col_int64(st, 0), lb_db_col_int64(st, 1), lb_col_text(st, 2),
                lb_col_text(st, 3));
        if (rc)
            goto out;
    }
    if (src != LB_DB_DONE)
        rc = lb_store_err(s, src, "read events");
out:
    lb_sql_done(s, st);
    return rc;
}

int lb_store_events_newest(lb_store *s, const char *const *ids, size_t n, int64_t *newest)
{
    if (!s || (n && (!ids || !newest)))
        return LB_E_INVAL;
    if (!n)
        return LB_OK;
    if (n > LB_STORE_NEWEST_MAX)
        return LB_E_TOOBIG;
    /* ids are 32 hex characters (checked), so the array needs no escaping */
    char *json = malloc(n * 35 + 3);
    if (!json)
        return LB_E_NOMEM;
    size_t len = 0;
    json[len++] = '[';
    for (size_t i = 0; i < n; i++) {
        newest[i] = 0;
        if (!lb_id_valid(ids[i])) {
            free(json);
            return LB_E_INVAL;
        }
        len += (size_t)snprintf(json + len, n * 35 + 3 - len, "%s\"%s\"", i ? "," : "", ids[i]);
    }
    json[len++] = ']';
    json[len] = '\0';
    lb_db_stmt *st = lb_stmt(s, Q_EVENTS_NEWEST);
    if (!st) {
        free(json);
        return LB_E_INTERNAL;
    }
    lb_db_bind_text(st, 1, json);
    int rc = LB_OK, src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        int64_t k = lb_db_col_int64(st, 0);
        if (k >= 0 && (size_t)k < n)
            newest[k] = lb_db_col_int64(st, 1); /* NULL (no events) reads 0 */
    }
    if (src != LB_DB_DONE)
        rc = lb_store_err(s, src, "read the newest events");
    lb_sql_done(s, st);
    free(json);
    return rc;
}

int lb_store_listen_events(lb_store *s)
{
    if (!s || !lb_db_is_pg(s->db))
        return LB_E_INVAL;
    return lb_store_err(s, lb_db_listen(s->db, "llmbox_events"), "listen for events");
}

int lb_store_wait_events(lb_store *s, int timeout_ms, int *woke)
{
    *woke = 0;
    if (!s)
        return LB_E_INVAL;
    return lb_store_err(s, lb_db_wait_notify(s->db, timeout_ms, woke), "wait for events");
}

int lb_store_data_version(lb_store *s, int64_t *out)
{
    if (!s || !out)
        return LB_E_INVAL;
    lb_db_stmt *st = lb_stmt(s, Q_DATA_VERSION);
    if (!st)
        return LB_E_INTERNAL;
    int src = lb_db_step(st);
    int rc = src == LB_DB_ROW ? LB_OK : lb_store_err(s, src, "read the data version");
    if (src == LB_DB_ROW)
        *out = lb_db_col_int64(st, 0);
    lb_sql_done(s, st);
    return rc;
}

/* ---- artifacts -------------------------------------------------------- */

int lb_store_artifacts_set(lb_store *s, const char *task_id, const lb_artifact *a, size_t n)
{
    if (!s || !lb_id_valid(task_id) || (n && !a))
        return LB_E_INVAL;
    /* Only clean relative paths enter the index: the web serves files by
     * looking paths up here, so the index is the allow-list. */
    char clean[LB_PATH_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        size_t len = strnlen(a[i].path, sizeof a[i].path);
        if (len == sizeof a[i].path || lb_path_clean_rel(a[i].path, len, clean, sizeof clean) ||
            strcmp(clean, a[i].path) != 0)
            return LB_E_INVAL;
    }
    /* several nodes: a fenced agent's outputs go through the fence too */
    int rc = s->fence_node[0] ? lb_begin_live(s, task_id) : lb_begin(s);
    if (rc)
        return rc;
    char status[16];
    rc = lb_task_status_read(s, task_id, status, sizeof status, NULL);
    if (rc)
        goto out;
    lb_db_stmt *st = lb_stmt(s, Q_ART_DELETE);
    if (!st) {
        rc = LB_E_INTERNAL;
        goto out;
    }
    lb_bind_text(st, 1, task_id);
    rc = lb_step_done(s, st, "clear artifacts");
    lb_sql_done(s, st);
    if (rc)
        goto out;
    for (size_t i = 0; i < n; i++) {
        st = lb_stmt(s, Q_ART_INSERT);
        if (!st) {
            rc = LB_E_INTERNAL;
            goto out;
        }
        lb_bind_text(st, 1, task_id);
        lb_bind_text(st, 2, a[i].path);
        lb_db_bind_int64(st, 3, (int64_t)a[i].size);
        char mime[sizeof a[i].mime + 1], sha[sizeof a[i].sha256 + 1];
        snprintf(mime, sizeof mime, "%.*s", (int)strnlen(a[i].mime, sizeof a[i].mime), a[i].mime);
        snprintf(sha, sizeof sha, "%.*s", (int)strnlen(a[i].sha256, sizeof a[i].sha256), a[i].sha256);
        lb_db_bind_text(st, 4, mime);
        lb_db_bind_text(st, 5, sha);
        rc = lb_step_done(s, st, "insert artifact");
        lb_sql_done(s, st);
        if (rc)
            goto out;
    }
    st = lb_stmt(s, Q_ROUND_ARTS);
    if (!st) {
        rc = LB_E_INTERNAL;
        goto out;
    }
    lb_bind_text(st, 1, task_id);
    rc = lb_step_done(s, st, "round artifacts");
    lb_sql_done(s, st);
out:
    rc = lb_end_tx(s, rc);
    return rc;
}

int lb_store_artifacts_rows(lb_store *s, const char *task_id, lb_artifact **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    if (!s || !lb_id_valid(task_id))
        return LB_E_INVAL;
    lb_db_stmt *st = lb_stmt(s, Q_ART_GET);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, task_id);
    int rc = LB_OK, src;
    lb_artifact *a = NULL;
    size_t cnt = 0, cap = 0;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        if (cnt == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            lb_artifact *na = realloc(a, ncap * sizeof *a);
            if (!na) {
                rc = LB_E_NOMEM;
                goto out;
            }
            a = na;
            cap = ncap;
        }
        lb_artifact *e = &a[cnt++];
        memset(e, 0, sizeof *e);
        /* the index holds only what lb_store_artifacts_set let in, which
         * fits these fields */
        snprintf(e->path, sizeof e->path, "%s", lb_col_text(st, 0));
        e->size = (uint64_t)lb_db_col_int64(st, 1);
        snprintf(e->mime, sizeof e->mime, "%s", lb_col_text(st, 2));
        snprintf(e->sha256, sizeof e->sha256, "%s", lb_col_text(st, 3));
    }
    if (src != LB_DB_DONE)
        rc = lb_store_err(s, src, "read artifacts");
out:
    lb_sql_done(s, st);
    if (rc) {
        free(a);
        return rc;
    }
    *rows = a;
    *n = cnt;
    return LB_OK;
}

int lb_store_artifact_find(lb_store *s, const char *task_id, const char *path, lb_artifact *out)
{
    if (!s || !lb_id_valid(task_id) || !path || !out)
        return LB_E_INVAL;
    memset(out, 0, sizeof *out);
    lb_db_stmt *st = lb_stmt(s, Q_ART_FIND);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, task_id);
    lb_bind_text(st, 2, path);
    int rc, src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        snprintf(out->path, sizeof out->path, "%s", lb_col_text(st, 0));
        out->size = (uint64_t)lb_db_col_int64(st, 1);
        snprintf(out->mime, sizeof out->mime, "%s", lb_col_text(st, 2));
        snprintf(out->sha256, sizeof out->sha256, "%s", lb_col_text(st, 3));
        rc = LB_OK;
    } else if (src == LB_DB_DONE) {
        rc = LB_E_NOTFOUND;
    } else {
        rc = lb_store_err(s, src, "find artifact");
    }
    lb_sql_done(s, st);
    return rc;
}

/* ---- owners ----------------------------------------------------------- */

int lb_store_task_owner(lb_store *s, const char *id, char *owner, size_t ownersz)
{
    if (!s || !lb_id_valid(id) || !owner || !ownersz)
        return LB_E_INVAL;
    owner[0] = '\0';
    lb_db_stmt *st = lb_stmt(s, Q_TASK_OWNER);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, id);
    int rc, src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        const char *o = lb_col_text(st, 0);
        rc = strlen(o) < ownersz ? LB_OK : LB_E_TOOBIG;
        if (rc == LB_OK)
            memcpy(owner, o, strlen(o) + 1);
    } else if (src == LB_DB_DONE) {
        rc = LB_E_NOTFOUND;
    } else {
        rc = lb_store_err(s, src, "task owner");
    }
    lb_sql_done(s, st);
    return rc;
}

int lb_store_tasks_active_of(lb_store *s, const char *owner, int *n)
{
    *n = 0;
    if (!s || !owner)
        return LB_E_INVAL;
    lb_db_stmt *st = lb_stmt(s, Q_OWN_ACTIVE);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, owner);
    int rc = LB_OK, src = lb_db_step(st);
    if (src == LB_DB_ROW)
        *n = lb_db_col_int(st, 0);
    else
        rc = lb_store_err(s, src, "count active tasks");
    lb_sql_done(s, st);
    return rc;
}

/* ---- sessions --------------------------------------------------------- */

static int lb_hash_ok(const char *h)
{
    if (!h || strlen(h) != 64)
        return 0;
    for (const char *p = h; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

int lb_store_session_add(lb_store *s, const lb_session *se, int keep_per_user)
{
    if (!s || !se || !lb_hash_ok(se->id_sha256) || !lb_hash_ok(se->token_sha256) || !se->user[0])
        return LB_E_INVAL;
    int rc = lb_begin(s);
    if (rc)
        return rc;
    lb_db_stmt *st = lb_stmt(s, Q_SESSION_EXPIRE);
    if (!st) {
        rc = LB_E_INTERNAL;
        goto out;
    }
    lb_db_bind_int64(st, 1, lb_now_ms());
    rc = lb_step_done(s, st, "expire sessions");
    lb_sql_done(s, st);
    if (rc)
        goto out;
    if (!(st = lb_stmt(s, Q_SESSION_INSERT))) {
        rc = LB_E_INTERNAL;
        goto out;
    }
    lb_bind_text(st, 1, se->id_sha256);
    lb_bind_text(st, 2, se->user);
    lb_bind_text(st, 3, se->token_sha256);
    lb_db_bind_int64(st, 4, se->created_ms);
    lb_db_bind_int64(st, 5, se->expires_ms);
    rc = lb_step_done(s, st, "insert session");
    lb_sql_done(s, st);
    if (rc)
        goto out;
    if (keep_per_user > 0) {
        if (!(st = lb_stmt(s, Q_SESSION_TRIM))) {
            rc = LB_E_INTERNAL;
            goto out;
        }
        lb_bind_text(st, 1, se->user);
        lb_db_bind_int(st, 2, keep_per_user);
        rc = lb_step_done(s, st, "trim sessions");
        lb_sql_done(s, st);
        if (rc)
            goto out;
    }
out:
    rc = lb_end_tx(s, rc);
    return rc;
}

int lb_store_session_get(lb_store *s, const char *id_sha256, int64_t now_ms, lb_session *out)
{
    if (!s || !lb_hash_ok(id_sha256) || !out)
        return LB_E_INVAL;
    memset(out, 0, sizeof *out);
    lb_db_stmt *st = lb_stmt(s, Q_SESSION_GET);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, id_sha256);
    lb_db_bind_int64(st, 2, now_ms);
    int rc, src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        snprintf(out->id_sha256, sizeof out->id_sha256, "%s", id_sha256);
        snprintf(out->user, sizeof out->user, "%s", lb_col_text(st, 0));
        snprintf(out->token_sha256, sizeof out->token_sha256, "%s", lb_col_text(st, 1));
        out->created_ms = lb_db_col_int64(st, 2);
        out->expires_ms = lb_db_col_int64(st, 3);
        rc = LB_OK;
    } else if (src == LB_DB_DONE) {
        rc = LB_E_NOTFOUND;
    } else {
        rc = lb_store_err(s, src, "read session");
    }
    lb_sql_done(s, st);
    return rc;
}

int lb_store_session_delete(lb_store *s, const char *id_sha256)
{
    if (!s || !lb_hash_ok(id_sha256))
        return LB_E_INVAL;
    lb_db_stmt *st = lb_stmt(s, Q_SESSION_DELETE);
    if (!st)
        return LB_E_INTERNAL;
    lb_bind_text(st, 1, id_sha256);
    int rc = lb_step_done(s, st, "delete session");
    lb_sql_done(s, st);
    return rc;
}

/* ---- metrics ---------------------------------------------------------- */

/* the one list of statuses (common/task.h), in its order */
#define LB_STORE_STATUS_NAME_(e, name) name,
const char *const lb_store_status_names[LB_STORE_N_STATUS] = {LB_TASK_STATUSES(LB_STORE_STATUS_NAME_)};
#undef LB_STORE_STATUS_NAME_
_Static_assert(LB_STORE_N_STATUS == LB_TASK_N_STATUS, "one metrics state per task status");

int lb_store_metrics_add(lb_store *s, const lb_metric_row *rows, size_t n)
{
    if (!s || (n && !rows))
        return LB_E_INVAL;
    if (!n)
        return LB_OK;
    int rc = lb_begin(s);
    if (rc)
        return rc;
    for (size_t i = 0; i < n && !rc; i++) {
        lb_db_stmt *st = lb_stmt(s, Q_METRIC_ADD);
        if (!st) {
            rc = LB_E_INTERNAL;
            break;
        }
        lb_bind_text(st, 1, rows[i].name);
        lb_bind_text(st, 2, rows[i].labels);
        lb_bind_text(st, 3, rows[i].le);
        lb_db_bind_double(st, 4, rows[i].value);
        rc = lb_step_done(s, st, "add metrics");
        lb_sql_done(s, st);
    }
    return lb_end_tx(s, rc);
}

int lb_store_metrics_all(lb_store *s, lb_metric_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    if (!s)
        return LB_E_INVAL;
    lb_db_stmt *st = lb_stmt(s, Q_METRICS_ALL);
    if (!st)
        return LB_E_INTERNAL;
    lb_metric_row *out = NULL;
    size_t cnt = 0, cap = 0;
    int rc = LB_OK, src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        if (cnt == cap) {
            size_t nc = cap ? cap * 2 : 64;
            lb_metric_row *nr = nc <= 4 * LB_METRICS_MAX_SERIES ? realloc(out, nc * sizeof *nr) : NULL;
            if (!nr) {
                rc = cap >= 4 * LB_METRICS_MAX_SERIES ? LB_E_TOOBIG : LB_E_NOMEM;
                break;
            }
            out = nr;
            cap = nc;
        }
        lb_metric_row *r = &out[cnt];
        /* a row that does not fit the fixed fields was not written by us */
        if ((size_t)lb_db_col_bytes(st, 0) >= sizeof r->name ||
            (size_t)lb_db_col_bytes(st, 1) >= sizeof r->labels ||
            (size_t)lb_db_col_bytes(st, 2) >= sizeof r->le)
            continue;
        snprintf(r->name, sizeof r->name, "%s", lb_col_text(st, 0));
        snprintf(r->labels, sizeof r->labels, "%s", lb_col_text(st, 1));
        snprintf(r->le, sizeof r->le, "%s", lb_col_text(st, 2));
        r->value = lb_db_col_double(st, 3);
        cnt++;
    }
    if (!rc && src != LB_DB_DONE)
        rc = lb_store_err(s, src, "read metrics");
    lb_sql_done(s, st);
    if (rc) {
        free(out);
        return rc;
    }
    *rows = out;
    *n = cnt;
    return LB_OK;
}

int lb_store_task_counts(lb_store *s, int64_t counts[LB_STORE_N_STATUS])
{
    memset(counts, 0, sizeof(int64_t) * LB_STORE_N_STATUS);
    if (!s)
        return LB_E_INVAL;
    lb_db_stmt *st = lb_stmt(s, Q_TASK_COUNTS);
    if (!st)
        return LB_E_INTERNAL;
    int rc = LB_OK, src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        const char *status = lb_col_text(st, 0);
        for (int i = 0; i < LB_STORE_N_STATUS; i++)
            if (!strcmp(status, lb_store_status_names[i]))
                counts[i] = lb_db_col_int64(st, 1);
    }
    if (src != LB_DB_DONE)
        rc = lb_store_err(s, src, "count tasks");
    lb_sql_done(s, st);
    return rc;
}

/* ---- for the store's other files (store_priv.h) ---- */

lb_db *lb_store_db(lb_store *s) { return s->db; }
struct lb_sql_cache *lb_store_sql_cache(lb_store *s)
{
    if (!s->sql)
        s->sql = lb_sql_cache_new();
    return s->sql;
}
int lb_store_tx_begin(lb_store *s) { return lb_begin(s); }
int lb_store_tx_end(lb_store *s, int rc) { return lb_end_tx(s, rc); }
int lb_store_sql_err(lb_store *s, int src, const char *what) { return lb_store_err(s, src, what); }
