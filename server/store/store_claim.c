/* Runner claims; the contract is store_claim.h. */
#include "store/store_claim.h"

#include "common/log.h"
#include "store/db.h"
#include "store/store_priv.h"
#include "store/store_sql.h"

#include <stdio.h>
#include <string.h>

/* The database's clock in milliseconds, as the queue's leases (store_queue.c) */
#define NOW_LITE "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
#define NOW_PG "(extract(epoch from clock_timestamp()) * 1000)::bigint"

/* v12. The claim lives on the work's own row, so claiming is one UPDATE
 * of the rows a SELECT picks (and locks, on PostgreSQL), as the queue
 * claims tasks. start_task: the task a runner is making for a pending run
 * or queued sample, written before the task is (fenced), so a web that
 * dies between making the task and recording it leaves a name the next
 * holder finds: the task exists, it is adopted; it does not, the run is
 * started afresh. Nothing is started twice. */
const char lb_schema_v12_claims[] =
    "ALTER TABLE evals ADD COLUMN runner TEXT;"
    "ALTER TABLE evals ADD COLUMN runner_gen INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE evals ADD COLUMN runner_expires_ms INTEGER;"
    "ALTER TABLE eval_runs ADD COLUMN start_task TEXT;"
    "ALTER TABLE rollouts ADD COLUMN runner TEXT;"
    "ALTER TABLE rollouts ADD COLUMN runner_gen INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE rollouts ADD COLUMN runner_expires_ms INTEGER;"
    "ALTER TABLE rollout_samples ADD COLUMN start_task TEXT;";

const char lb_schema_pg_v12_claims[] =
    "ALTER TABLE evals ADD COLUMN runner TEXT;"
    "ALTER TABLE evals ADD COLUMN runner_gen BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE evals ADD COLUMN runner_expires_ms BIGINT;"
    "ALTER TABLE eval_runs ADD COLUMN start_task TEXT;"
    "ALTER TABLE rollouts ADD COLUMN runner TEXT;"
    "ALTER TABLE rollouts ADD COLUMN runner_gen BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE rollouts ADD COLUMN runner_expires_ms BIGINT;"
    "ALTER TABLE rollout_samples ADD COLUMN start_task TEXT;";

int lb_runner_owner_valid(const char *owner)
{
    size_t n = 0;
    if (!owner || !owner[0])
        return 0;
    for (; owner[n]; n++) {
        char c = owner[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '/' || c == '-'))
            return 0;
    }
    return n <= LB_RUNNER_OWNER_MAX;
}

/* Active work, as the runners' lists had it: what is not final, and what
 * was cancelled with runs or samples still running or scoring (their ends
 * are scored by the holder) */
#define EVALS_ACTIVE                                                                                                   \
    "(status IN ('queued', 'running') OR id IN (SELECT eval_id FROM eval_runs WHERE status IN ('running',"            \
    " 'scoring')))"
#define ROLLOUTS_ACTIVE                                                                                                \
    "(status = 'running' OR id IN (SELECT rollout_id FROM rollout_samples WHERE status IN ('running', 'scoring')))"

/* ?1 owner, ?2 lease_ms, ?3 max, ?4 takeover prefix ('' : none). The
 * rows picked are unclaimed, lapsed, or an earlier process's of this web */
#define CLAIM_SQL(T, ACTIVE, NOW, LIMIT, LOCK, TAKE)                                                                  \
    "UPDATE " T " SET runner = ?1, runner_gen = runner_gen + 1, runner_expires_ms = " NOW " + " LIMIT                \
    " WHERE id IN (SELECT id FROM " T " WHERE " ACTIVE " AND (runner IS NULL OR runner_expires_ms <= " NOW " OR " TAKE \
    ") ORDER BY created_ms, id" LOCK ")"                                                                              \
    " RETURNING id, runner_gen"
#define TAKE_LITE "(?4 <> '' AND runner <> ?1 AND substr(runner, 1, length(?4)) = ?4)"
#define TAKE_PG "(?4::text <> '' AND runner <> ?1 AND substr(runner, 1, length(?4::text)) = ?4::text)"

static const char *const lb_claim_sql[2][2] = {
    {CLAIM_SQL("evals", EVALS_ACTIVE, NOW_LITE, "?2", " LIMIT ?3", TAKE_LITE),
     CLAIM_SQL("evals", EVALS_ACTIVE, NOW_PG, "?2::bigint", " LIMIT ?3::bigint FOR UPDATE SKIP LOCKED", TAKE_PG)},
    {CLAIM_SQL("rollouts", ROLLOUTS_ACTIVE, NOW_LITE, "?2", " LIMIT ?3", TAKE_LITE),
     CLAIM_SQL("rollouts", ROLLOUTS_ACTIVE, NOW_PG, "?2::bigint", " LIMIT ?3::bigint FOR UPDATE SKIP LOCKED",
               TAKE_PG)},
};

/* ?1 owner, ?2 lease_ms, ?3 max: the holder's own unexpired claims */
#define RENEW_SQL(T, ACTIVE, NOW, LEASE, LIMIT, LOCK)                                                                 \
    "UPDATE " T " SET runner_expires_ms = " NOW " + " LEASE " WHERE id IN (SELECT id FROM " T                       \
    " WHERE runner = ?1 AND runner_expires_ms > " NOW " AND " ACTIVE " ORDER BY created_ms, id" LIMIT LOCK ")"       \
    " RETURNING id, runner_gen"

static const char *const lb_renew_sql[2][2] = {
    {RENEW_SQL("evals", EVALS_ACTIVE, NOW_LITE, "?2", " LIMIT ?3", ""),
     RENEW_SQL("evals", EVALS_ACTIVE, NOW_PG, "?2::bigint", " LIMIT ?3::bigint", " FOR UPDATE")},
    {RENEW_SQL("rollouts", ROLLOUTS_ACTIVE, NOW_LITE, "?2", " LIMIT ?3", ""),
     RENEW_SQL("rollouts", ROLLOUTS_ACTIVE, NOW_PG, "?2::bigint", " LIMIT ?3::bigint", " FOR UPDATE")},
};

/* ?1 id, ?2 owner, ?3 gen */
static const char *const lb_fence_sql[2][2] = {
    {"SELECT 1 FROM evals WHERE id = ?1 AND runner = ?2 AND runner_gen = ?3 AND runner_expires_ms > " NOW_LITE,
     "SELECT 1 FROM evals WHERE id = ?1 AND runner = ?2 AND runner_gen = ?3::bigint AND runner_expires_ms > " NOW_PG
     " FOR SHARE"},
    {"SELECT 1 FROM rollouts WHERE id = ?1 AND runner = ?2 AND runner_gen = ?3 AND runner_expires_ms > " NOW_LITE,
     "SELECT 1 FROM rollouts WHERE id = ?1 AND runner = ?2 AND runner_gen = ?3::bigint AND runner_expires_ms > "
     NOW_PG " FOR SHARE"},
};

static const char *const lb_release_sql[2][2] = {
    {"UPDATE evals SET runner = NULL, runner_expires_ms = NULL WHERE id = ?1 AND runner = ?2 AND runner_gen = ?3",
     "UPDATE evals SET runner = NULL, runner_expires_ms = NULL WHERE id = ?1 AND runner = ?2"
     " AND runner_gen = ?3::bigint"},
    {"UPDATE rollouts SET runner = NULL, runner_expires_ms = NULL WHERE id = ?1 AND runner = ?2 AND runner_gen = ?3",
     "UPDATE rollouts SET runner = NULL, runner_expires_ms = NULL WHERE id = ?1 AND runner = ?2"
     " AND runner_gen = ?3::bigint"},
};

static int kind_ok(lb_runner_kind kind)
{
    return kind == LB_RUNNER_EVALS || kind == LB_RUNNER_ROLLOUTS;
}

static const char *pick(lb_store *s, const char *const sql[2][2], lb_runner_kind kind)
{
    return lb_sql_pick(s, sql[kind][0], sql[kind][1]);
}

/* Runs a claim or a renewal prepared in st: its rows into out */
static int read_claims(lb_store *s, lb_db_stmt *st, int max, lb_runner_claim *out, size_t *n, const char *what)
{
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        if (*n < (size_t)max) { /* RETURNING gives at most LIMIT rows; the check keeps out[] safe anyway */
            lb_sql_col_copy(st, 0, out[*n].id, sizeof out[*n].id);
            out[*n].gen = lb_db_col_int64(st, 1);
            (*n)++;
        }
    }
    int rc = lb_store_sql_err(s, src, what);
    lb_sql_done(s, st);
    if (rc)
        *n = 0; /* the statement failed as a whole: nothing was taken */
    return rc;
}

int lb_store_runner_claim(lb_store *s, lb_runner_kind kind, const char *owner, const char *takeover, int lease_ms,
                          int max, lb_runner_claim *out, size_t *n)
{
    if (n)
        *n = 0;
    if (!s || !kind_ok(kind) || !lb_runner_owner_valid(owner) || (takeover && strlen(takeover) > LB_RUNNER_OWNER_MAX) ||
        lease_ms < 1000 || max < 1 || max > LB_RUNNER_CLAIM_MAX || !out || !n)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, pick(s, lb_claim_sql, kind), &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, owner);
    lb_db_bind_int(st, 2, lease_ms);
    lb_db_bind_int(st, 3, max);
    lb_sql_bind_text(st, 4, takeover ? takeover : "");
    return read_claims(s, st, max, out, n, kind == LB_RUNNER_EVALS ? "claim evals" : "claim rollout groups");
}

int lb_store_runner_renew(lb_store *s, lb_runner_kind kind, const char *owner, int lease_ms, int max,
                          lb_runner_claim *out, size_t *n)
{
    if (n)
        *n = 0;
    if (!s || !kind_ok(kind) || !lb_runner_owner_valid(owner) || lease_ms < 1000 || max < 1 ||
        max > LB_RUNNER_CLAIM_MAX || !out || !n)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, pick(s, lb_renew_sql, kind), &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, owner);
    lb_db_bind_int(st, 2, lease_ms);
    lb_db_bind_int(st, 3, max);
    return read_claims(s, st, max, out, n, "renew the runner's claims");
}

static int fence_ok(const lb_runner_fence *f)
{
    return f && f->id[0] && lb_runner_owner_valid(f->owner) && f->gen >= 1;
}

/* sql prepared with the fence bound as ?1 (id), ?2 (owner), ?3 (gen) */
static int fence_stmt(lb_store *s, const char *sql, const lb_runner_fence *f, lb_db_stmt **st)
{
    int rc = lb_sql_prep(s, sql, st);
    if (rc)
        return rc;
    lb_sql_bind_text(*st, 1, f->id);
    lb_sql_bind_text(*st, 2, f->owner);
    lb_db_bind_int64(*st, 3, f->gen);
    return LB_OK;
}

int lb_store_runner_release(lb_store *s, lb_runner_kind kind, const lb_runner_fence *f)
{
    if (!s || !kind_ok(kind) || !fence_ok(f))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = fence_stmt(s, pick(s, lb_release_sql, kind), f, &st);
    if (rc)
        return rc;
    return lb_sql_run_write(s, st, "release a runner's claim", LB_E_DENIED);
}

int lb_store_runner_fence_check(lb_store *s, lb_runner_kind kind, const lb_runner_fence *f)
{
    if (!s || !kind_ok(kind) || !fence_ok(f))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = fence_stmt(s, pick(s, lb_fence_sql, kind), f, &st);
    if (rc)
        return rc;
    int src = lb_db_step(st);
    rc = src == LB_DB_ROW ? LB_OK : src == LB_DB_DONE ? LB_E_DENIED : lb_store_sql_err(s, src, "check the claim");
    lb_sql_done(s, st);
    if (rc == LB_E_DENIED)
        lb_info("store: %s %s: write refused: claim %lld of %s is no longer held (another web took it over, or its "
                "lease expired)", kind == LB_RUNNER_EVALS ? "eval" : "rollout", f->id, (long long)f->gen, f->owner);
    return rc;
}
