/* Evaluations in the task store; the contract is store_eval.h.
 *
 * Statements are prepared per call: the runner asks a few times a second
 * and the API per request, so the cache store.c keeps for the hot task
 * paths would buy nothing here. */
#include "store/store_eval.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_claim.h"
#include "store/store_priv.h"
#include "store/store_sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_EVAL_LIST_MAX 1000
#define LB_EVAL_RUNS_PAGE_MAX 10000

/* v7: evaluations. A run's key is its rowid (rid); (eval, row id, mode,
 * repeat) is unique, so a resumed or repeated insert cannot double a run.
 * eval_runs_sched serves the runner's two questions (pending runs in
 * scheduling order, active runs) and eval_runs_order the results. */
const char lb_schema_v7_evals[] =
    "CREATE TABLE evals("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  owner TEXT,"
    "  name TEXT NOT NULL DEFAULT '',"
    "  status TEXT NOT NULL CHECK(status IN ('queued','running','succeeded','failed','cancelled')),"
    "  options TEXT NOT NULL,"
    "  dataset TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL,"
    "  started_ms INTEGER,"
    "  finished_ms INTEGER,"
    "  error TEXT,"
    "  wall_ms_llm INTEGER NOT NULL DEFAULT 0,"
    "  wall_ms_sandbox INTEGER NOT NULL DEFAULT 0,"
    "  summary TEXT);"
    "CREATE INDEX evals_owner ON evals(owner, created_ms DESC);"
    "CREATE INDEX evals_status ON evals(status, created_ms);"
    "CREATE TABLE eval_runs("
    "  rid INTEGER PRIMARY KEY,"
    "  eval_id TEXT NOT NULL REFERENCES evals(id) ON DELETE CASCADE,"
    "  row_idx INTEGER NOT NULL,"
    "  row_id TEXT NOT NULL,"
    "  mode TEXT NOT NULL CHECK(mode IN ('llm','sandbox')),"
    "  rep INTEGER NOT NULL,"
    "  status TEXT NOT NULL CHECK(status IN ('pending','running','scoring','done','error','skipped')),"
    "  task_id TEXT,"
    "  result TEXT,"
    "  started_ms INTEGER,"
    "  finished_ms INTEGER,"
    "  UNIQUE(eval_id, row_id, mode, rep));"
    "CREATE INDEX eval_runs_sched ON eval_runs(eval_id, status, mode, row_idx, rep);"
    "CREATE INDEX eval_runs_order ON eval_runs(eval_id, row_idx, mode, rep);"
    "CREATE INDEX eval_runs_status ON eval_runs(status);";

void lb_eval_rec_free(lb_eval_rec *e)
{
    if (!e)
        return;
    free(e->owner);
    free(e->name);
    free(e->options_json);
    free(e->dataset);
    free(e->error);
    free(e->summary_json);
    e->owner = e->name = e->options_json = e->dataset = e->error = e->summary_json = NULL;
}

void lb_eval_recs_free(lb_eval_rec *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        lb_eval_rec_free(&v[i]);
    free(v);
}

void lb_eval_runs_free(lb_eval_run *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].row_id);
        free(v[i].result_json);
    }
    free(v);
}

int lb_store_eval_insert(lb_store *s, const lb_eval_rec *e, const lb_eval_run_new *runs, size_t n)
{
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    rc = lb_sql_prep(s,
              "INSERT INTO evals(id, owner, name, status, options, dataset, created_ms)"
              " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
              &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, e->id);
    lb_sql_bind_text(st, 2, e->owner);
    lb_sql_bind_text(st, 3, e->name ? e->name : "");
    lb_sql_bind_text(st, 4, e->status[0] ? e->status : "queued");
    lb_sql_bind_text(st, 5, e->options_json ? e->options_json : "{}");
    lb_sql_bind_text(st, 6, e->dataset ? e->dataset : "");
    lb_db_bind_int64(st, 7, e->created_ms);
    rc = lb_sql_run_write(s, st, "insert an eval", LB_E_INTERNAL);
    st = NULL;
    if (rc)
        goto out;
    rc = lb_sql_prep(s,
              "INSERT INTO eval_runs(eval_id, row_idx, row_id, mode, rep, status, result, finished_ms)"
              " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
              &st);
    if (rc)
        goto out;
    int64_t now = lb_now_ms();
    for (size_t i = 0; i < n; i++) {
        const lb_eval_run_new *r = &runs[i];
        lb_db_reset(st);
        lb_db_clear_bindings(st);
        lb_sql_bind_text(st, 1, e->id);
        lb_db_bind_int64(st, 2, r->row_idx);
        lb_sql_bind_text(st, 3, r->row_id);
        lb_sql_bind_text(st, 4, r->mode);
        lb_db_bind_int(st, 5, r->repeat);
        lb_sql_bind_text(st, 6, r->status ? r->status : "pending");
        lb_sql_bind_text(st, 7, r->result_json);
        if (r->result_json)
            lb_db_bind_int64(st, 8, now);
        int src = lb_db_step(st);
        if (src != LB_DB_DONE) {
            rc = lb_store_sql_err(s, src, "insert an eval run");
            goto out;
        }
    }
out:
    lb_sql_done(s, st);
    return lb_store_tx_end(s, rc);
}

#define EVAL_COLS                                                                                               \
    "id, owner, name, status, options, dataset, created_ms, started_ms, finished_ms, error, wall_ms_llm,"    \
    " wall_ms_sandbox"

static void eval_from_row(lb_db_stmt *st, lb_eval_rec *e)
{
    lb_sql_col_copy(st, 0, e->id, sizeof e->id);
    e->owner = lb_sql_col_dup(st, 1);
    e->name = lb_sql_col_dup(st, 2);
    lb_sql_col_copy(st, 3, e->status, sizeof e->status);
    e->options_json = lb_sql_col_dup(st, 4);
    e->dataset = lb_sql_col_dup(st, 5);
    e->created_ms = lb_sql_col_ms(st, 6);
    e->started_ms = lb_sql_col_ms(st, 7);
    e->finished_ms = lb_sql_col_ms(st, 8);
    e->error = lb_sql_col_dup(st, 9);
    e->wall_ms_llm = lb_db_col_int64(st, 10);
    e->wall_ms_sandbox = lb_db_col_int64(st, 11);
}

int lb_store_eval_load(lb_store *s, const char *id, lb_eval_rec *out)
{
    memset(out, 0, sizeof *out);
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT " EVAL_COLS ", summary FROM evals WHERE id = ?1", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    int src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        eval_from_row(st, out);
        out->summary_json = lb_sql_col_dup(st, 12);
        if (!out->options_json || !out->name || !out->dataset)
            rc = LB_E_NOMEM;
    } else {
        rc = src == LB_DB_DONE ? LB_E_NOTFOUND : lb_store_sql_err(s, src, "read an eval");
    }
    lb_sql_done(s, st);
    if (rc)
        lb_eval_rec_free(out);
    return rc;
}

int lb_store_eval_list(lb_store *s, const char *owner, int limit, lb_eval_rec **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (limit < 1 || limit > LB_EVAL_LIST_MAX)
        limit = LB_EVAL_LIST_MAX;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s,
                  owner ? "SELECT " EVAL_COLS " FROM evals WHERE owner = ?2 ORDER BY created_ms DESC, id DESC"
                          " LIMIT ?1"
                        : "SELECT " EVAL_COLS " FROM evals ORDER BY created_ms DESC, id DESC LIMIT ?1",
                  &st);
    if (rc)
        return rc;
    lb_db_bind_int(st, 1, limit);
    if (owner)
        lb_sql_bind_text(st, 2, owner);
    lb_eval_rec *v = calloc((size_t)limit, sizeof *v);
    size_t k = 0;
    int src = LB_DB_DONE;
    if (!v)
        rc = LB_E_NOMEM;
    while (!rc && (src = lb_db_step(st)) == LB_DB_ROW)
        eval_from_row(st, &v[k++]);
    if (!rc && src != LB_DB_DONE)
        rc = lb_store_sql_err(s, src, "list evals");
    lb_sql_done(s, st);
    if (rc) {
        lb_eval_recs_free(v, k);
        return rc;
    }
    *out = v;
    *n = k;
    return LB_OK;
}

int lb_store_evals_active(lb_store *s, char ***ids, size_t *n)
{
    /* an eval that ended (cancelled) with runs still going stays the
     * runner's until they are scored */
    return lb_sql_ids(s,
                      "SELECT id FROM evals WHERE status IN ('queued', 'running') OR id IN"
                      " (SELECT eval_id FROM eval_runs WHERE status IN ('running', 'scoring'))"
                      " ORDER BY created_ms, id",
                      "list active evals", ids, n);
}

/* several nodes: a write transaction under fence f (NULL: none); LB_E_DENIED
 * (nothing begun) when f's claim is no longer held */
static int fence_begin(lb_store *s, const lb_runner_fence *f)
{
    int rc = lb_store_tx_begin(s);
    if (rc == LB_OK && f && (rc = lb_store_runner_fence_check(s, LB_RUNNER_EVALS, f)) != LB_OK)
        rc = lb_store_tx_end(s, rc);
    return rc;
}

int lb_store_eval_set_running(lb_store *s, const lb_runner_fence *f, const char *id)
{
    lb_db_stmt *st = NULL;
    int rc = fence_begin(s, f);
    if (rc)
        return rc;
    rc = lb_sql_prep(s, "UPDATE evals SET status = 'running', started_ms = ?2 WHERE id = ?1 AND status = 'queued'", &st);
    if (rc)
        return lb_store_tx_end(s, rc);
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int64(st, 2, lb_now_ms());
    return lb_store_tx_end(s, lb_sql_run_write(s, st, "start an eval", LB_E_EXISTS));
}

int lb_store_eval_finish(lb_store *s, const lb_runner_fence *f, const char *id, const char *status, const char *error,
                         const char *summary_json, int64_t wall_ms_llm, int64_t wall_ms_sandbox)
{
    if (strcmp(status, "succeeded") && strcmp(status, "failed"))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = fence_begin(s, f);
    if (rc)
        return rc;
    rc = lb_sql_prep(s, "SELECT status FROM evals WHERE id = ?1", &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, id);
    int src = lb_db_step(st);
    if (src != LB_DB_ROW) {
        rc = src == LB_DB_DONE ? LB_E_NOTFOUND : lb_store_sql_err(s, src, "read an eval's status");
    } else {
        const char *cur = lb_db_col_text(st, 0);
        if (strcmp(cur, "queued") && strcmp(cur, "running"))
            rc = LB_E_EXISTS;
    }
    lb_sql_done(s, st);
    st = NULL;
    if (rc)
        goto out;
    rc = lb_sql_prep(s,
              "UPDATE evals SET status = ?2, error = ?3, summary = ?4, wall_ms_llm = ?5, wall_ms_sandbox = ?6,"
              " finished_ms = ?7, started_ms = COALESCE(started_ms, ?7) WHERE id = ?1",
              &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, id);
    lb_sql_bind_text(st, 2, status);
    lb_sql_bind_text(st, 3, error);
    lb_sql_bind_text(st, 4, summary_json);
    lb_db_bind_int64(st, 5, wall_ms_llm);
    lb_db_bind_int64(st, 6, wall_ms_sandbox);
    lb_db_bind_int64(st, 7, lb_now_ms());
    rc = lb_sql_run_write(s, st, "end an eval", LB_E_NOTFOUND);
out:
    return lb_store_tx_end(s, rc);
}

int lb_store_eval_cancel(lb_store *s, const char *id)
{
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    rc = lb_sql_prep(s,
              "UPDATE evals SET status = 'cancelled', finished_ms = ?2, error = 'cancelled by the user'"
              " WHERE id = ?1 AND status IN ('queued', 'running')",
              &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int64(st, 2, lb_now_ms());
    rc = lb_sql_run_write(s, st, "cancel an eval", LB_E_EXISTS);
    if (rc)
        goto out;
    rc = lb_sql_prep(s, "UPDATE eval_runs SET status = 'skipped' WHERE eval_id = ?1 AND status = 'pending'", &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, id);
    rc = lb_sql_run_write(s, st, "skip an eval's runs", LB_OK);
out:
    return lb_store_tx_end(s, rc);
}

int lb_store_eval_delete(lb_store *s, const char *id)
{
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "DELETE FROM evals WHERE id = ?1", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    return lb_sql_run_write(s, st, "delete an eval", LB_E_NOTFOUND);
}

int lb_store_eval_counts(lb_store *s, const char *id, lb_eval_counts *out)
{
    memset(out, 0, sizeof *out);
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, lb_sql_pick(s, "SELECT status, COUNT(*),"
                     " SUM(CASE WHEN json_valid(result) AND json_extract(result, '$.status') = 'failed'"
                     " THEN 1 ELSE 0 END) FROM eval_runs WHERE eval_id = ?1 GROUP BY status",
                     "SELECT status, COUNT(*), SUM(CASE WHEN lb_json_obj(result) ->> 'status' = 'failed'"
                     " THEN 1 ELSE 0 END) FROM eval_runs WHERE eval_id = ?1 GROUP BY status"), &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        const char *k = (const char *)lb_db_col_text(st, 0);
        int64_t c = lb_db_col_int64(st, 1);
        out->total += c;
        out->failed += lb_db_col_int64(st, 2);
        if (!k)
            continue;
        if (!strcmp(k, "pending"))
            out->pending = c;
        else if (!strcmp(k, "running"))
            out->running = c;
        else if (!strcmp(k, "scoring"))
            out->scoring = c;
        else if (!strcmp(k, "done"))
            out->done = c;
        else if (!strcmp(k, "error"))
            out->error = c;
        else if (!strcmp(k, "skipped"))
            out->skipped = c;
    }
    if (src != LB_DB_DONE)
        rc = lb_store_sql_err(s, src, "count an eval's runs");
    lb_sql_done(s, st);
    return rc;
}

int lb_store_eval_runs(lb_store *s, const char *id, lb_eval_runs_of which, int64_t offset, int limit,
                       lb_eval_run **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (limit < 1 || limit > LB_EVAL_RUNS_PAGE_MAX || offset < 0)
        return LB_E_INVAL;
    static const char cols[] = "SELECT rid, row_idx, row_id, mode, rep, status, task_id, result, started_ms,"
                               " finished_ms, start_task FROM eval_runs WHERE eval_id = ?1";
    char sql[512];
    snprintf(sql, sizeof sql, "%s%s LIMIT ?2 OFFSET ?3", cols,
             which == LB_RUNS_PENDING  ? " AND status = 'pending' ORDER BY mode, row_idx, rep"
             : which == LB_RUNS_ACTIVE ? " AND status IN ('running', 'scoring') ORDER BY rid"
                                       : " ORDER BY row_idx, mode, rep");
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, sql, &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int(st, 2, limit);
    lb_db_bind_int64(st, 3, offset);
    lb_eval_run *v = NULL;
    size_t k = 0, cap = 0;
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        if (k == cap) {
            size_t nc = cap ? cap * 2 : 64;
            lb_eval_run *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = LB_E_NOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        lb_eval_run *r = &v[k];
        memset(r, 0, sizeof *r);
        r->rid = lb_db_col_int64(st, 0);
        r->row_idx = lb_db_col_int64(st, 1);
        r->row_id = lb_sql_col_dup(st, 2);
        lb_sql_col_copy(st, 3, r->mode, sizeof r->mode);
        r->repeat = lb_db_col_int(st, 4);
        lb_sql_col_copy(st, 5, r->status, sizeof r->status);
        lb_sql_col_copy(st, 6, r->task_id, sizeof r->task_id);
        r->result_json = lb_sql_col_dup(st, 7);
        r->started_ms = lb_sql_col_ms(st, 8);
        r->finished_ms = lb_sql_col_ms(st, 9);
        lb_sql_col_copy(st, 10, r->start_task, sizeof r->start_task);
        k++;
        if (!r->row_id) {
            rc = LB_E_NOMEM;
            break;
        }
    }
    if (!rc && src != LB_DB_DONE)
        rc = lb_store_sql_err(s, src, "read an eval's runs");
    lb_sql_done(s, st);
    if (rc) {
        lb_eval_runs_free(v, k);
        return rc;
    }
    *out = v;
    *n = k;
    return LB_OK;
}

/* several nodes: one fenced write of eval_runs: sql with ?1 rid, ?2 task_id
 * and, when with_now, ?3 now */
static int run_write(lb_store *s, const lb_runner_fence *f, const char *sql, int64_t rid, const char *task_id,
                     int with_now, const char *what)
{
    lb_db_stmt *st = NULL;
    int rc = fence_begin(s, f);
    if (rc)
        return rc;
    if ((rc = lb_sql_prep(s, sql, &st)))
        return lb_store_tx_end(s, rc);
    lb_db_bind_int64(st, 1, rid);
    lb_sql_bind_text(st, 2, task_id);
    if (with_now)
        lb_db_bind_int64(st, 3, lb_now_ms());
    return lb_store_tx_end(s, lb_sql_run_write(s, st, what, LB_E_EXISTS));
}

int lb_store_eval_run_reserve(lb_store *s, const lb_runner_fence *f, int64_t rid, const char *task_id)
{
    if (!lb_id_valid(task_id))
        return LB_E_INVAL;
    return run_write(s, f, "UPDATE eval_runs SET start_task = ?2 WHERE rid = ?1 AND status = 'pending'", rid, task_id,
                     0, "reserve an eval run's task");
}

int lb_store_eval_run_start(lb_store *s, const lb_runner_fence *f, int64_t rid, const char *task_id)
{
    if (!lb_id_valid(task_id))
        return LB_E_INVAL;
    return run_write(s, f,
                     "UPDATE eval_runs SET status = 'running', task_id = ?2, started_ms = ?3, start_task = NULL"
                     " WHERE rid = ?1 AND status = 'pending' AND (start_task IS NULL OR start_task = ?2)",
                     rid, task_id, 1, "start an eval run");
}

int lb_store_eval_run_move(lb_store *s, const lb_runner_fence *f, int64_t rid, const char *from, const char *to,
                           const char *result_json)
{
    /* ?2 to, ?4 from, ?5 the result (NULL: kept) */
    lb_db_stmt *st = NULL;
    int rc = fence_begin(s, f);
    if (rc)
        return rc;
    rc = lb_sql_prep(s,
                     "UPDATE eval_runs SET status = ?2, result = COALESCE(?5, result),"
                     " finished_ms = CASE WHEN ?2 IN ('done', 'error') THEN ?3 ELSE finished_ms END"
                     " WHERE rid = ?1 AND status = ?4",
                     &st);
    if (rc)
        return lb_store_tx_end(s, rc);
    lb_db_bind_int64(st, 1, rid);
    lb_sql_bind_text(st, 2, to);
    lb_db_bind_int64(st, 3, lb_now_ms());
    lb_sql_bind_text(st, 4, from);
    lb_sql_bind_text(st, 5, result_json);
    return lb_store_tx_end(s, lb_sql_run_write(s, st, "move an eval run", LB_E_EXISTS));
}

int lb_store_eval_run_task(lb_store *s, int64_t rid, char *task_id, char *start_task)
{
    task_id[0] = start_task[0] = '\0';
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT task_id, start_task FROM eval_runs WHERE rid = ?1", &st);
    if (rc)
        return rc;
    lb_db_bind_int64(st, 1, rid);
    int src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        lb_sql_col_copy(st, 0, task_id, 33);
        lb_sql_col_copy(st, 1, start_task, 33);
    }
    rc = src == LB_DB_ROW ? LB_OK : src == LB_DB_DONE ? LB_E_NOTFOUND : lb_store_sql_err(s, src, "read an eval run");
    lb_sql_done(s, st);
    return rc;
}
