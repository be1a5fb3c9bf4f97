/* Rounds, kept sandboxes and share links in the task store; the contract
 * is store_round.h.
 *
 * Statements are prepared per call: a round begins once per message, the
 * kept sandbox is written twice per round, and the rounds are read per
 * GET of a task. */
#include "store/store_round.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_priv.h"
#include "store/store_sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* v9: follow-up rounds (store_round.h). The tasks row stays the current
 * round: two triggers keep that round's row a copy of it (the first round
 * made with the task, every later change of the task copied into the row
 * of tasks.round), so every writer of a task (agent, reaper, cancel,
 * recovery) writes the round too without knowing rounds exist. Existing
 * tasks become one-round conversations. Events get their round; those
 * stored before are round 1's. */
const char lb_schema_v9_rounds[] =
    "ALTER TABLE tasks ADD COLUMN round INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE tasks ADD COLUMN fork_of TEXT;"
    "ALTER TABLE tasks ADD COLUMN fork_round INTEGER;"
    "ALTER TABLE events ADD COLUMN round INTEGER NOT NULL DEFAULT 1;"
    "CREATE TABLE rounds("
    "  task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,"
    "  n INTEGER NOT NULL,"
    "  prompt TEXT NOT NULL,"
    "  inputs TEXT NOT NULL DEFAULT '[]',"
    "  status TEXT NOT NULL,"
    "  reason TEXT,"
    "  answer TEXT,"
    "  artifacts TEXT,"
    "  usage TEXT,"
    "  sandbox TEXT,"
    "  state TEXT,"
    "  state_bytes INTEGER,"
    "  fresh INTEGER NOT NULL DEFAULT 0,"
    "  turns INTEGER NOT NULL DEFAULT 0,"
    "  prompt_tokens INTEGER NOT NULL DEFAULT 0,"
    "  completion_tokens INTEGER NOT NULL DEFAULT 0,"
    "  created_ms INTEGER NOT NULL,"
    "  started_ms INTEGER,"
    "  finished_ms INTEGER,"
    "  PRIMARY KEY(task_id, n)) WITHOUT ROWID;"
    "INSERT INTO rounds(task_id, n, prompt, inputs, status, reason, answer, usage, turns, prompt_tokens,"
    "  completion_tokens, created_ms, started_ms, finished_ms)"
    " SELECT id, 1, prompt, inputs, status, reason, answer, usage, turns, prompt_tokens, completion_tokens,"
    "  created_ms, started_ms, finished_ms FROM tasks;"
    "UPDATE rounds SET artifacts = (SELECT json_group_array(json_object('path', a.path, 'size', a.size,"
    "  'sha256', a.sha256)) FROM artifacts a WHERE a.task_id = rounds.task_id);"
    "CREATE TRIGGER tasks_round_first AFTER INSERT ON tasks BEGIN"
    "  INSERT INTO rounds(task_id, n, prompt, inputs, status, created_ms)"
    "  VALUES(NEW.id, NEW.round, NEW.prompt, NEW.inputs, NEW.status, NEW.created_ms);"
    " END;"
    "CREATE TRIGGER tasks_round_copy AFTER UPDATE OF status, reason, answer, started_ms, finished_ms, turns,"
    "  prompt_tokens, completion_tokens, usage ON tasks BEGIN"
    "  UPDATE rounds SET status = NEW.status, reason = NEW.reason, answer = NEW.answer,"
    "  started_ms = NEW.started_ms, finished_ms = NEW.finished_ms, turns = NEW.turns,"
    "  prompt_tokens = NEW.prompt_tokens, completion_tokens = NEW.completion_tokens, usage = NEW.usage"
    "  WHERE task_id = NEW.id AND n = NEW.round;"
    " END;"
    "CREATE TABLE task_sandboxes("
    "  task_id TEXT PRIMARY KEY NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,"
    "  sandbox_id TEXT NOT NULL,"
    "  lease_key TEXT NOT NULL,"
    "  kept_until_ms INTEGER) WITHOUT ROWID;"
    "CREATE TABLE shares("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,"
    "  created_ms INTEGER NOT NULL,"
    "  expires_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX shares_task ON shares(task_id, created_ms);";

/* Frees the strings of one round. */
static void lb_round_clear(lb_round *r)
{
    free(r->prompt);
    free(r->inputs_json);
    free(r->reason);
    free(r->answer);
    free(r->artifacts_json);
    free(r->usage_json);
    free(r->state);
    memset(r, 0, sizeof *r);
}

void lb_round_free(lb_round *r)
{
    if (r)
        lb_round_clear(r);
}

void lb_rounds_free(lb_round *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        lb_round_clear(&v[i]);
    free(v);
}

/* ---- beginning a round ---- */

/* The statements of lb_store_round_begin, in its transaction, in order. */
static const char lb_round_check_sql[] =
    "SELECT status, round, (SELECT COUNT(*) FROM tasks WHERE owner = ?2 AND status IN ('queued', 'running'))"
    " FROM tasks WHERE id = ?1";
/* PostgreSQL: the task's row locked for the round's transaction */
static const char lb_round_check_sql_pg[] =
    "SELECT status, round, (SELECT COUNT(*) FROM tasks WHERE owner = ?2 AND status IN ('queued', 'running'))"
    " FROM tasks WHERE id = ?1 FOR UPDATE";
static const char lb_round_insert_sql[] =
    "INSERT INTO rounds(task_id, n, prompt, inputs, status, fresh, created_ms) VALUES(?1, ?2, ?3, ?4, 'queued', ?5, ?6)";
/* the task becomes the new round: queued, its answer and times cleared,
 * its inputs the union of every round's */
static const char lb_round_task_sql[] =
    "UPDATE tasks SET round = ?2, status = 'queued', reason = NULL, answer = NULL, started_ms = NULL,"
    " finished_ms = NULL, pid = NULL, turns = 0, prompt_tokens = 0, completion_tokens = 0, usage = NULL,"
    " node = NULL," /* several nodes: the last round's claim is over (attempt keeps counting) */
    " inputs = (SELECT json_group_array(json(value)) FROM (SELECT value FROM json_each(tasks.inputs)"
    "  UNION ALL SELECT value FROM json_each(?3)))"
    " WHERE id = ?1";
static const char lb_round_task_sql_pg[] =
    "UPDATE tasks SET round = ?2, status = 'queued', reason = NULL, answer = NULL, started_ms = NULL,"
    " finished_ms = NULL, pid = NULL, turns = 0, prompt_tokens = 0, completion_tokens = 0, usage = NULL,"
    " node = NULL,"
    " inputs = (SELECT COALESCE(jsonb_agg(x.v ORDER BY x.src, x.o)::text, '[]') FROM"
    "  (SELECT a.v, 1 AS src, a.o FROM jsonb_array_elements(tasks.inputs::jsonb) WITH ORDINALITY AS a(v, o)"
    "   UNION ALL SELECT b.v, 2, b.o FROM jsonb_array_elements(?3::jsonb) WITH ORDINALITY AS b(v, o)) x)"
    " WHERE id = ?1";
static const char lb_round_event_sql_pg[] =
    "INSERT INTO event_rows(task_id, seq, ts_ms, type, data, round)"
    " SELECT ?1::text, COALESCE(MAX(seq), 0) + 1, ?3::bigint, 'round', json_build_object('round', ?2::bigint,"
    "  'prompt', ?4::text, 'inputs', ?5::json, 'fresh', ?6::bigint <> 0)::text, ?2::bigint"
    " FROM events WHERE task_id = ?1";
/* into event_rows (schema v15): SQLite counts no change for a row put
 * through the events view's trigger, and this write checks that it made
 * one; the seq is still the view's, after any rows a fork shares */
static const char lb_round_event_sql[] =
    "INSERT INTO event_rows(task_id, seq, ts_ms, type, data, round)"
    " SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?3, 'round', json_object('round', ?2, 'prompt', ?4,"
    "  'inputs', json(?5), 'fresh', json(CASE WHEN ?6 THEN 'true' ELSE 'false' END)), ?2"
    " FROM events WHERE task_id = ?1";

/* Checks that the task may begin round *next: final, under the owner's
 * limit and LB_ROUNDS_MAX. */
static int lb_round_check(lb_store *s, const lb_round_new *m, int *next)
{
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_sql_pick(s, lb_round_check_sql, lb_round_check_sql_pg), &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, m->task_id);
    lb_sql_bind_text(st, 2, m->owner);
    int src = lb_db_step(st);
    if (src == LB_DB_DONE) {
        rc = LB_E_NOTFOUND;
    } else if (src != LB_DB_ROW) {
        rc = lb_store_sql_err(s, src, "read the task for a round");
    } else {
        const char *status = (const char *)lb_db_col_text(st, 0);
        int cur = lb_db_col_int(st, 1);
        int active = lb_db_col_int(st, 2);
        if (!lb_task_status_is_final(lb_task_status_parse(status)))
            rc = LB_E_EXISTS;
        else if (cur >= LB_ROUNDS_MAX)
            rc = LB_E_TOOBIG;
        else if (m->owner && m->owner_max_active > 0 && active >= m->owner_max_active)
            rc = LB_E_BUSY;
        *next = cur + 1;
    }
    lb_sql_done(s, st);
    return rc;
}

int lb_store_round_begin(lb_store *s, const lb_round_new *m, int *round_out)
{
    if (!s || !m || !lb_id_valid(m->task_id) || !m->prompt)
        return LB_E_INVAL;
    const char *inputs = m->inputs_json ? m->inputs_json : "[]";
    int next = 0;
    int64_t now = lb_now_ms();
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    if (m->owner_max_active > 0 && (rc = lb_store_owner_lock(s, m->owner)))
        goto out;
    if ((rc = lb_round_check(s, m, &next)))
        goto out;
    if ((rc = lb_sql_prep(s, lb_round_insert_sql, &st)))
        goto out;
    lb_sql_bind_text(st, 1, m->task_id);
    lb_db_bind_int(st, 2, next);
    lb_sql_bind_text(st, 3, m->prompt);
    lb_sql_bind_text(st, 4, inputs);
    lb_db_bind_int(st, 5, m->fresh ? 1 : 0);
    lb_db_bind_int64(st, 6, now);
    if ((rc = lb_sql_run_write(s, st, "insert round", LB_E_INTERNAL)))
        goto out;
    if ((rc = lb_sql_prep(s, lb_sql_pick(s, lb_round_task_sql, lb_round_task_sql_pg), &st)))
        goto out;
    lb_sql_bind_text(st, 1, m->task_id);
    lb_db_bind_int(st, 2, next);
    lb_sql_bind_text(st, 3, inputs);
    if ((rc = lb_sql_run_write(s, st, "reopen task", LB_E_NOTFOUND)))
        goto out;
    if ((rc = lb_sql_prep(s, lb_sql_pick(s, lb_round_event_sql, lb_round_event_sql_pg), &st)))
        goto out;
    lb_sql_bind_text(st, 1, m->task_id);
    lb_db_bind_int(st, 2, next);
    lb_db_bind_int64(st, 3, now);
    lb_sql_bind_text(st, 4, m->prompt);
    lb_sql_bind_text(st, 5, inputs);
    lb_db_bind_int(st, 6, m->fresh ? 1 : 0);
    rc = lb_sql_run_write(s, st, "round event", LB_E_INTERNAL);
out:
    rc = lb_store_tx_end(s, rc);
    if (rc == LB_OK && round_out)
        *round_out = next;
    return rc;
}

/* ---- fork ---- */

/* The new task: the source's record as at the end of round ?3 (that
 * round's status, answer and times), owned by the forker, at round ?3 */
static const char lb_fork_task_sql[] =
    "INSERT INTO tasks(id, status, reason, prompt, model, max_turns, created_ms, started_ms, finished_ms, answer,"
    " inputs, token_budget, timeout_s, network, image, owner, options, round, fork_of, fork_round, turns,"
    " prompt_tokens, completion_tokens, usage, sandbox_node)"
    " SELECT ?1, r.status, r.reason, t.prompt, t.model, t.max_turns, ?5, r.started_ms, r.finished_ms, r.answer,"
    "  (SELECT json_group_array(json(j.value)) FROM rounds q, json_each(q.inputs) j"
    "   WHERE q.task_id = ?2 AND q.n <= ?3),"
    "  t.token_budget, t.timeout_s, t.network, t.image, ?4, t.options, ?3, ?2, ?3, r.turns, r.prompt_tokens,"
    "  r.completion_tokens, r.usage, t.sandbox_node" /* several nodes: the states it restores are on that node */
    " FROM tasks t JOIN rounds r ON r.task_id = t.id AND r.n = ?3"
    " WHERE t.id = ?2 AND r.status IN ('succeeded', 'failed', 'cancelled')";
static const char lb_fork_task_sql_pg[] =
    "INSERT INTO tasks(id, status, reason, prompt, model, max_turns, created_ms, started_ms, finished_ms, answer,"
    " inputs, token_budget, timeout_s, network, image, owner, options, round, fork_of, fork_round, turns,"
    " prompt_tokens, completion_tokens, usage, sandbox_node)"
    " SELECT ?1::text, r.status, r.reason, t.prompt, t.model, t.max_turns, ?5::bigint, r.started_ms,"
    "  r.finished_ms, r.answer,"
    "  (SELECT COALESCE(jsonb_agg(j.v ORDER BY q.n, j.o)::text, '[]') FROM rounds q,"
    "   jsonb_array_elements(q.inputs::jsonb) WITH ORDINALITY AS j(v, o) WHERE q.task_id = ?2 AND q.n <= ?3),"
    "  t.token_budget, t.timeout_s, t.network, t.image, ?4::text, t.options, ?3::bigint, ?2::text, ?3::bigint,"
    "  r.turns, r.prompt_tokens, r.completion_tokens, r.usage, t.sandbox_node"
    " FROM tasks t JOIN rounds r ON r.task_id = t.id AND r.n = ?3"
    " WHERE t.id = ?2 AND r.status IN ('succeeded', 'failed', 'cancelled')";
/* its rounds are the source's up to round ?3 (the insert's trigger made a
 * round ?3 of the task's first prompt: replaced). Its events are shared,
 * not copied (schema v15 below): the fork reads what the source reads (its
 * own rows and those it shares), clipped to round ?3. */
static const char lb_fork_rounds_sql[] =
    "DELETE FROM rounds WHERE task_id = ?1;"
    "INSERT INTO rounds(task_id, n, prompt, inputs, status, reason, answer, artifacts, usage, sandbox, state,"
    " state_bytes, fresh, turns, prompt_tokens, completion_tokens, created_ms, started_ms, finished_ms)"
    " SELECT ?1, n, prompt, inputs, status, reason, answer, artifacts, usage, sandbox, state, state_bytes, fresh,"
    "  turns, prompt_tokens, completion_tokens, created_ms, started_ms, finished_ms"
    " FROM rounds WHERE task_id = ?2 AND n <= ?3;"
    "INSERT INTO event_shares(task_id, src_id, max_round)"
    " SELECT ?1, src_id, CASE WHEN max_round < ?3 THEN max_round ELSE ?3 END FROM event_shares WHERE task_id = ?2;"
    /* the files on disk are the source's last round's: only a fork of that
     * round has them (the web links them) */
    "INSERT INTO artifacts(task_id, path, size, mime, sha256)"
    " SELECT ?1, a.path, a.size, a.mime, a.sha256 FROM artifacts a WHERE a.task_id = ?2"
    " AND ?3 = (SELECT round FROM tasks WHERE id = ?2);";
static const char lb_fork_rounds_sql_pg[] =
    "DELETE FROM rounds WHERE task_id = ?1;"
    "INSERT INTO rounds(task_id, n, prompt, inputs, status, reason, answer, artifacts, usage, sandbox, state,"
    " state_bytes, fresh, turns, prompt_tokens, completion_tokens, created_ms, started_ms, finished_ms)"
    " SELECT ?1, n, prompt, inputs, status, reason, answer, artifacts, usage, sandbox, state, state_bytes, fresh,"
    "  turns, prompt_tokens, completion_tokens, created_ms, started_ms, finished_ms"
    " FROM rounds WHERE task_id = ?2 AND n <= ?3;"
    "INSERT INTO event_shares(task_id, src_id, max_round)"
    " SELECT ?1::text, src_id, LEAST(max_round, ?3::bigint) FROM event_shares WHERE task_id = ?2::text;"
    "INSERT INTO artifacts(task_id, path, size, mime, sha256)"
    " SELECT ?1, a.path, a.size, a.mime, a.sha256 FROM artifacts a WHERE a.task_id = ?2"
    " AND ?3 = (SELECT round FROM tasks WHERE id = ?2);";

/* v15: shared events. A fork used to copy its source's events (tool
 * outputs: most of a store), so sixty forks of one long task multiplied
 * it. Now the rows are event_rows, and event_shares says whose rows a task
 * reads up to which round: every task reads its own (a row made with the
 * task, max_round LB_ROUND_ALL), a fork also what its source reads,
 * clipped to the forked round. `events` is a view of that join, so every
 * reader and writer of events works unchanged: a fork's next seq (MAX + 1
 * over the view) comes after the shared rows, and inserts go to
 * event_rows. The view is one join, not a UNION, so SQLite flattens it
 * into a reader's query: MAX(seq) of a task reads the index
 * event_rows_round only (a UNION view is a co-routine that reads every
 * row's data: 100 times slower for a long task).
 * A source deleted while forks share its rows hands them over: the fork
 * sharing the most rounds (the heir) takes the rows up to its round, and
 * the other forks read them from the heir instead (or drop the span when
 * they already read the heir's, which holds the same rows). SQLite counts
 * no change for a row inserted through the view (its INSTEAD OF trigger):
 * a writer that checks its insert made a row inserts into event_rows,
 * reading the next seq from the view. */
#define LB_V15_SELF "9223372036854775807" /* a task's own rows: every round */
#define LB_V15_HEIR "(SELECT task_id FROM event_shares WHERE src_id = OLD.id AND task_id <> OLD.id" \
                    " ORDER BY max_round DESC, task_id LIMIT 1)"
const char lb_schema_v15_fork_shares[] =
    "ALTER TABLE events RENAME TO event_rows;"
    "CREATE INDEX event_rows_round ON event_rows(task_id, round);"
    "CREATE TABLE event_shares("
    "  task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,"
    "  src_id TEXT NOT NULL,"
    "  max_round INTEGER NOT NULL,"
    "  PRIMARY KEY(task_id, src_id)) WITHOUT ROWID;"
    "CREATE INDEX event_shares_src ON event_shares(src_id, max_round);"
    "INSERT INTO event_shares(task_id, src_id, max_round) SELECT id, id, " LB_V15_SELF " FROM tasks;"
    "CREATE TRIGGER tasks_events_own AFTER INSERT ON tasks BEGIN"
    "  INSERT INTO event_shares(task_id, src_id, max_round) VALUES(NEW.id, NEW.id, " LB_V15_SELF ");"
    " END;"
    "CREATE VIEW events(task_id, seq, ts_ms, type, data, round) AS"
    " SELECT s.task_id, e.seq, e.ts_ms, e.type, e.data, e.round FROM event_shares s"
    "  JOIN event_rows e ON e.task_id = s.src_id AND e.round <= s.max_round;"
    /* a writer that names no round (older code, tests) gets the default */
    "CREATE TRIGGER events_insert INSTEAD OF INSERT ON events BEGIN"
    "  INSERT INTO event_rows(task_id, seq, ts_ms, type, data, round)"
    "  VALUES(NEW.task_id, NEW.seq, NEW.ts_ms, NEW.type, NEW.data, COALESCE(NEW.round, 1));"
    " END;"
    /* LB_V15_HEIR reads the shares unchanged until the last statement
     * drops those of the source's rows */
    "CREATE TRIGGER tasks_events_handover BEFORE DELETE ON tasks"
    " WHEN EXISTS (SELECT 1 FROM event_shares WHERE src_id = OLD.id AND task_id <> OLD.id) BEGIN"
    "  UPDATE event_rows SET task_id = " LB_V15_HEIR
    "   WHERE task_id = OLD.id AND round <= (SELECT MAX(max_round) FROM event_shares"
    "   WHERE src_id = OLD.id AND task_id <> OLD.id);"
    "  UPDATE event_shares SET src_id = " LB_V15_HEIR
    "   WHERE src_id = OLD.id AND task_id <> OLD.id AND task_id <> " LB_V15_HEIR
    "   AND NOT EXISTS (SELECT 1 FROM event_shares h WHERE h.task_id = event_shares.task_id"
    "   AND h.src_id = " LB_V15_HEIR ");"
    "  DELETE FROM event_shares WHERE src_id = OLD.id AND task_id <> OLD.id;"
    " END;";
const char lb_schema_pg_v15_fork_shares[] =
    "ALTER TABLE events RENAME TO event_rows;"
    "CREATE INDEX event_rows_round ON event_rows(task_id, round, seq);"
    "CREATE TABLE event_shares("
    "  task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,"
    "  src_id TEXT NOT NULL,"
    "  max_round BIGINT NOT NULL,"
    "  PRIMARY KEY(task_id, src_id));"
    "CREATE INDEX event_shares_src ON event_shares(src_id, max_round);"
    "INSERT INTO event_shares(task_id, src_id, max_round) SELECT id, id, " LB_V15_SELF " FROM tasks;"
    "CREATE FUNCTION lb_events_own() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
    "  INSERT INTO event_shares(task_id, src_id, max_round) VALUES(NEW.id, NEW.id, " LB_V15_SELF ");"
    "  RETURN NULL; END $$;"
    "CREATE TRIGGER tasks_events_own AFTER INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION lb_events_own();"
    "CREATE VIEW events(task_id, seq, ts_ms, type, data, round) AS"
    " SELECT s.task_id, e.seq, e.ts_ms, e.type, e.data, e.round FROM event_shares s"
    "  JOIN event_rows e ON e.task_id = s.src_id AND e.round <= s.max_round;"
    "CREATE FUNCTION lb_events_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
    "  NEW.round := COALESCE(NEW.round, 1);"
    "  INSERT INTO event_rows(task_id, seq, ts_ms, type, data, round)"
    "  VALUES(NEW.task_id, NEW.seq, NEW.ts_ms, NEW.type, NEW.data, NEW.round);"
    "  RETURN NEW; END $$;"
    "CREATE TRIGGER events_insert INSTEAD OF INSERT ON events FOR EACH ROW EXECUTE FUNCTION lb_events_insert();"
    "CREATE FUNCTION lb_events_handover() RETURNS trigger LANGUAGE plpgsql AS $$"
    " DECLARE heir text; top bigint; BEGIN"
    "  SELECT task_id, max_round INTO heir, top FROM event_shares WHERE src_id = OLD.id AND task_id <> OLD.id"
    "   ORDER BY max_round DESC, task_id LIMIT 1;"
    "  IF heir IS NULL THEN RETURN OLD; END IF;"
    "  UPDATE event_rows SET task_id = heir WHERE task_id = OLD.id AND round <= top;"
    "  UPDATE event_shares s SET src_id = heir WHERE s.src_id = OLD.id AND s.task_id <> OLD.id"
    "   AND s.task_id <> heir"
    "   AND NOT EXISTS (SELECT 1 FROM event_shares h WHERE h.task_id = s.task_id AND h.src_id = heir);"
    "  DELETE FROM event_shares WHERE src_id = OLD.id AND task_id <> OLD.id;"
    "  RETURN OLD; END $$;"
    "CREATE TRIGGER tasks_events_handover BEFORE DELETE ON tasks FOR EACH ROW"
    " EXECUTE FUNCTION lb_events_handover();";

/* Runs one statement of a fork's script with its parameters. */
static int lb_fork_step(lb_store *s, lb_db_stmt *st, const lb_fork *f, int64_t now, const char *what,
                        int none_rc)
{
    int n = lb_db_param_count(st);
    if (n >= 1)
        lb_sql_bind_text(st, 1, f->new_id);
    if (n >= 2)
        lb_sql_bind_text(st, 2, f->src_id);
    if (n >= 3)
        lb_db_bind_int(st, 3, f->round);
    if (n >= 4)
        lb_sql_bind_text(st, 4, f->owner);
    if (n >= 5)
        lb_db_bind_int64(st, 5, now);
    return lb_sql_run_write(s, st, what, none_rc);
}

int lb_store_task_fork(lb_store *s, const lb_fork *f)
{
    if (!s || !f || !lb_id_valid(f->src_id) || !lb_id_valid(f->new_id) || f->round < 1)
        return LB_E_INVAL;
    int64_t now = lb_now_ms();
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    if ((rc = lb_sql_prep(s, lb_sql_pick(s, lb_fork_task_sql, lb_fork_task_sql_pg), &st)))
        goto out;
    /* no row: no such task, no such round, or that round has not ended */
    if ((rc = lb_fork_step(s, st, f, now, "fork task", LB_E_NOTFOUND)))
        goto out;
    const char *sql = lb_sql_pick(s, lb_fork_rounds_sql, lb_fork_rounds_sql_pg);
    /* one statement at a time (no ';' inside the script's strings) */
    while (rc == LB_OK && *sql) {
        char one[1024];
        size_t len = strcspn(sql, ";");
        LB_ASSERT(len < sizeof one);
        snprintf(one, sizeof one, "%.*s", (int)len, sql);
        sql += len + (sql[len] == ';');
        st = NULL;
        if ((rc = lb_sql_prep(s, one, &st)))
            break;
        /* a step with nothing to copy is fine */
        rc = lb_fork_step(s, st, f, now, "fork rounds", LB_OK);
    }
out:
    return lb_store_tx_end(s, rc);
}

int lb_store_task_fork_of(lb_store *s, const char *id, char *src, size_t srcsz, int *round)
{
    src[0] = '\0';
    *round = 0;
    if (!s || !lb_id_valid(id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT COALESCE(fork_of, ''), COALESCE(fork_round, 0) FROM tasks WHERE id = ?1", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    int r = lb_db_step(st);
    if (r == LB_DB_ROW) {
        lb_sql_col_copy(st, 0, src, srcsz);
        *round = lb_db_col_int(st, 1);
    } else {
        rc = r == LB_DB_DONE ? LB_E_NOTFOUND : lb_store_sql_err(s, r, "read a fork");
    }
    lb_sql_done(s, st);
    return rc;
}

/* ---- reading rounds ---- */

#define LB_ROUND_COLS                                                                                       \
    "n, prompt, inputs, status, reason, answer, artifacts, usage, COALESCE(sandbox, ''), state, fresh, turns," \
    " prompt_tokens, completion_tokens, created_ms, started_ms, finished_ms, state_bytes"

/* The row of st (LB_ROUND_COLS) into r; LB_E_NOMEM when a copy failed. */
static int lb_round_read(lb_db_stmt *st, lb_round *r)
{
    memset(r, 0, sizeof *r);
    r->n = lb_db_col_int(st, 0);
    r->prompt = lb_sql_col_dup(st, 1);
    r->inputs_json = lb_sql_col_dup(st, 2);
    lb_sql_col_copy(st, 3, r->status, sizeof r->status);
    r->reason = lb_sql_col_dup(st, 4);
    r->answer = lb_sql_col_dup(st, 5);
    r->artifacts_json = lb_sql_col_dup(st, 6);
    r->usage_json = lb_sql_col_dup(st, 7);
    lb_sql_col_copy(st, 8, r->sandbox, sizeof r->sandbox);
    r->state = lb_sql_col_dup(st, 9);
    r->fresh = lb_db_col_int(st, 10);
    r->turns = lb_db_col_int(st, 11);
    r->prompt_tokens = lb_db_col_int64(st, 12);
    r->completion_tokens = lb_db_col_int64(st, 13);
    r->created_ms = lb_sql_col_ms(st, 14);
    r->started_ms = lb_sql_col_ms(st, 15);
    r->finished_ms = lb_sql_col_ms(st, 16);
    r->state_bytes = lb_sql_col_ms(st, 17);
    int bad = !r->prompt || !r->inputs_json || (!lb_db_col_is_null(st, 4) && !r->reason) ||
              (!lb_db_col_is_null(st, 5) && !r->answer) ||
              (!lb_db_col_is_null(st, 6) && !r->artifacts_json) ||
              (!lb_db_col_is_null(st, 7) && !r->usage_json) ||
              (!lb_db_col_is_null(st, 9) && !r->state);
    return bad ? LB_E_NOMEM : LB_OK;
}

int lb_store_rounds(lb_store *s, const char *task_id, lb_round **v, size_t *n)
{
    *v = NULL;
    *n = 0;
    if (!s || !lb_id_valid(task_id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT " LB_ROUND_COLS " FROM rounds WHERE task_id = ?1 ORDER BY n", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, task_id);
    lb_round *arr = NULL;
    size_t cnt = 0;
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW && cnt < LB_ROUNDS_MAX) {
        lb_round *na = realloc(arr, (cnt + 1) * sizeof *na);
        if (!na) {
            rc = LB_E_NOMEM;
            break;
        }
        arr = na;
        rc = lb_round_read(st, &arr[cnt++]);
        if (rc)
            break;
    }
    if (rc == LB_OK && src != LB_DB_ROW && src != LB_DB_DONE)
        rc = lb_store_sql_err(s, src, "read rounds");
    lb_sql_done(s, st);
    if (rc) {
        lb_rounds_free(arr, cnt);
        return rc;
    }
    *v = arr;
    *n = cnt;
    return LB_OK;
}

int lb_store_round_get(lb_store *s, const char *task_id, int n, lb_round *out)
{
    memset(out, 0, sizeof *out);
    if (!s || !lb_id_valid(task_id) || n < 1)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT " LB_ROUND_COLS " FROM rounds WHERE task_id = ?1 AND n = ?2", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, task_id);
    lb_db_bind_int(st, 2, n);
    int src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        rc = lb_round_read(st, out);
        if (rc)
            lb_round_clear(out);
    } else {
        rc = src == LB_DB_DONE ? LB_E_NOTFOUND : lb_store_sql_err(s, src, "read a round");
    }
    lb_sql_done(s, st);
    return rc;
}

int lb_store_round_set_sandbox(lb_store *s, const char *task_id, const char *how)
{
    if (!s || !lb_id_valid(task_id) || !how)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "UPDATE rounds SET sandbox = ?2 WHERE task_id = ?1"
                            " AND n = (SELECT round FROM tasks WHERE id = ?1)", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, task_id);
    lb_sql_bind_text(st, 2, how);
    return lb_sql_run_write(s, st, "round sandbox", LB_E_NOTFOUND);
}

int lb_store_round_set_state(lb_store *s, const char *task_id, const char *state, int64_t bytes)
{
    if (!s || !lb_id_valid(task_id) || !state || !*state || strlen(state) > 64)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "UPDATE rounds SET state = ?2, state_bytes = ?3 WHERE task_id = ?1"
                            " AND n = (SELECT round FROM tasks WHERE id = ?1)", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, task_id);
    lb_sql_bind_text(st, 2, state);
    lb_db_bind_int64(st, 3, bytes);
    return lb_sql_run_write(s, st, "round state", LB_E_NOTFOUND);
}

/* ---- the kept sandbox ---- */

int lb_store_kept_set(lb_store *s, const char *task_id, const char *sandbox_id, const char *lease_key)
{
    if (!s || !lb_id_valid(task_id) || !sandbox_id || !*sandbox_id || strlen(sandbox_id) >= 64 || !lease_key ||
        strlen(lease_key) >= 40)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "INSERT INTO task_sandboxes(task_id, sandbox_id, lease_key, kept_until_ms)"
                            " VALUES(?1, ?2, ?3, NULL) ON CONFLICT(task_id) DO UPDATE SET"
                            " sandbox_id = excluded.sandbox_id, lease_key = excluded.lease_key,"
                            " kept_until_ms = NULL", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, task_id);
    lb_sql_bind_text(st, 2, sandbox_id);
    lb_sql_bind_text(st, 3, lease_key);
    return lb_sql_run_write(s, st, "record the sandbox", LB_E_INTERNAL);
}

int lb_store_kept_keep(lb_store *s, const char *task_id, int64_t now_ms, int64_t until_ms, int max_kept)
{
    if (!s || !lb_id_valid(task_id) || max_kept < 0)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    /* one statement under the write lock: two rounds ending at once can
     * never both take the last place */
    rc = lb_sql_prep(s, "UPDATE task_sandboxes SET kept_until_ms = ?3 WHERE task_id = ?1"
                        " AND (?4 <= 0 OR (SELECT COUNT(*) FROM task_sandboxes WHERE task_id != ?1"
                        "  AND kept_until_ms > ?2) < ?4)", &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, task_id);
    lb_db_bind_int64(st, 2, now_ms);
    lb_db_bind_int64(st, 3, until_ms);
    lb_db_bind_int(st, 4, max_kept);
    rc = lb_sql_run_write(s, st, "keep the sandbox", LB_E_BUSY);
    if (rc == LB_E_BUSY) {
        /* the cap, or no record at all: say which */
        lb_kept k;
        if (lb_store_kept_get(s, task_id, &k) == LB_E_NOTFOUND)
            rc = LB_E_NOTFOUND;
    }
out:;
    /* nothing to undo when refused: the UPDATE changed no row */
    int erc = lb_store_tx_end(s, rc == LB_E_BUSY || rc == LB_E_NOTFOUND ? LB_OK : rc);
    return erc != LB_OK ? erc : rc;
}

int lb_store_kept_get(lb_store *s, const char *task_id, lb_kept *out)
{
    memset(out, 0, sizeof *out);
    if (!s || !lb_id_valid(task_id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT sandbox_id, lease_key, kept_until_ms FROM task_sandboxes WHERE task_id = ?1",
                         &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, task_id);
    int src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        lb_sql_col_copy(st, 0, out->sandbox_id, sizeof out->sandbox_id);
        lb_sql_col_copy(st, 1, out->lease_key, sizeof out->lease_key);
        out->kept_until_ms = lb_sql_col_ms(st, 2);
    } else {
        rc = src == LB_DB_DONE ? LB_E_NOTFOUND : lb_store_sql_err(s, src, "read the kept sandbox");
    }
    lb_sql_done(s, st);
    return rc;
}

int lb_store_kept_clear(lb_store *s, const char *task_id)
{
    if (!s || !lb_id_valid(task_id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "DELETE FROM task_sandboxes WHERE task_id = ?1", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, task_id);
    rc = lb_sql_run_write(s, st, "forget the sandbox", LB_E_NOTFOUND);
    return rc == LB_E_NOTFOUND ? LB_OK : rc;
}

/* ---- share links ---- */

int lb_store_share_add(lb_store *s, const lb_share *sh)
{
    if (!s || !sh || !lb_id_valid(sh->id) || !lb_id_valid(sh->task_id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "INSERT INTO shares(id, task_id, created_ms, expires_ms) VALUES(?1, ?2, ?3, ?4)", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, sh->id);
    lb_sql_bind_text(st, 2, sh->task_id);
    lb_db_bind_int64(st, 3, sh->created_ms);
    lb_db_bind_int64(st, 4, sh->expires_ms);
    return lb_sql_run_write(s, st, "add share", LB_E_INTERNAL);
}

static void lb_share_read(lb_db_stmt *st, lb_share *out)
{
    lb_sql_col_copy(st, 0, out->id, sizeof out->id);
    lb_sql_col_copy(st, 1, out->task_id, sizeof out->task_id);
    out->created_ms = lb_sql_col_ms(st, 2);
    out->expires_ms = lb_sql_col_ms(st, 3);
}

int lb_store_share_get(lb_store *s, const char *id, int64_t now_ms, lb_share *out)
{
    memset(out, 0, sizeof *out);
    if (!s || !lb_id_valid(id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT id, task_id, created_ms, expires_ms FROM shares WHERE id = ?1 AND expires_ms > ?2",
                         &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int64(st, 2, now_ms);
    int src = lb_db_step(st);
    if (src == LB_DB_ROW)
        lb_share_read(st, out);
    else
        rc = src == LB_DB_DONE ? LB_E_NOTFOUND : lb_store_sql_err(s, src, "read a share");
    lb_sql_done(s, st);
    return rc;
}

int lb_store_share_delete(lb_store *s, const char *task_id, const char *id)
{
    if (!s || !lb_id_valid(task_id) || !lb_id_valid(id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "DELETE FROM shares WHERE id = ?2 AND task_id = ?1", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, task_id);
    lb_sql_bind_text(st, 2, id);
    return lb_sql_run_write(s, st, "revoke share", LB_E_NOTFOUND);
}

int lb_store_shares_of(lb_store *s, const char *task_id, int64_t now_ms, lb_share **v, size_t *n)
{
    *v = NULL;
    *n = 0;
    if (!s || !lb_id_valid(task_id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT id, task_id, created_ms, expires_ms FROM shares WHERE task_id = ?1"
                            " AND expires_ms > ?2 ORDER BY created_ms DESC LIMIT 100", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, task_id);
    lb_db_bind_int64(st, 2, now_ms);
    lb_share *arr = NULL;
    size_t cnt = 0;
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        lb_share *na = realloc(arr, (cnt + 1) * sizeof *na);
        if (!na) {
            rc = LB_E_NOMEM;
            break;
        }
        arr = na;
        lb_share_read(st, &arr[cnt++]);
    }
    if (rc == LB_OK && src != LB_DB_DONE)
        rc = lb_store_sql_err(s, src, "read shares");
    lb_sql_done(s, st);
    if (rc) {
        free(arr);
        return rc;
    }
    *v = arr;
    *n = cnt;
    return LB_OK;
}
