/* Rollout groups in the task store; the contract is store_rollout.h.
 *
 * Statements are prepared per call, as for evaluations: the runner asks a
 * few times a second and the API per request. */
#include "store/store_rollout.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_claim.h"
#include "store/store_priv.h"
#include "store/store_sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* v8: rollout groups. A sample's key is (group, index); rollout_samples
 * _status serves the runner's questions (running samples in all groups,
 * active groups). */
const char lb_schema_v8_rollouts[] =
    "CREATE TABLE rollouts("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  owner TEXT,"
    "  status TEXT NOT NULL CHECK(status IN ('running','done','cancelled')),"
    "  n INTEGER NOT NULL,"
    "  request TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL,"
    "  finished_ms INTEGER);"
    "CREATE INDEX rollouts_status ON rollouts(status, created_ms);"
    "CREATE TABLE rollout_samples("
    "  rollout_id TEXT NOT NULL REFERENCES rollouts(id) ON DELETE CASCADE,"
    "  idx INTEGER NOT NULL,"
    "  status TEXT NOT NULL CHECK(status IN ('queued','running','scoring','done')),"
    "  task_id TEXT,"
    "  outcome TEXT,"
    "  reward REAL,"
    "  result TEXT,"
    "  started_ms INTEGER,"
    "  finished_ms INTEGER,"
    "  PRIMARY KEY(rollout_id, idx));"
    "CREATE INDEX rollout_samples_status ON rollout_samples(status, rollout_id);";

void lb_rollout_rec_free(lb_rollout_rec *g)
{
    if (!g)
        return;
    free(g->owner);
    free(g->request_json);
    g->owner = g->request_json = NULL;
}

void lb_rollout_samples_free(lb_rollout_sample *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].result_json);
    free(v);
}

int lb_store_rollout_insert(lb_store *s, const lb_rollout_rec *g)
{
    if (g->n < 1 || g->n > LB_ROLLOUT_N_MAX)
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    rc = lb_sql_prep(s,
                     "INSERT INTO rollouts(id, owner, status, n, request, created_ms)"
                     " VALUES(?1, ?2, 'running', ?3, ?4, ?5)",
                     &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, g->id);
    lb_sql_bind_text(st, 2, g->owner);
    lb_db_bind_int(st, 3, g->n);
    lb_sql_bind_text(st, 4, g->request_json ? g->request_json : "{}");
    lb_db_bind_int64(st, 5, g->created_ms);
    rc = lb_sql_run_write(s, st, "insert a rollout group", LB_E_INTERNAL);
    st = NULL;
    if (rc)
        goto out;
    rc = lb_sql_prep(s, "INSERT INTO rollout_samples(rollout_id, idx, status) VALUES(?1, ?2, 'queued')", &st);
    if (rc)
        goto out;
    for (int i = 0; i < g->n; i++) {
        lb_db_reset(st);
        lb_sql_bind_text(st, 1, g->id);
        lb_db_bind_int(st, 2, i);
        int src = lb_db_step(st);
        if (src != LB_DB_DONE) {
            rc = lb_store_sql_err(s, src, "insert a rollout sample");
            goto out;
        }
    }
out:
    lb_sql_done(s, st);
    return lb_store_tx_end(s, rc);
}

int lb_store_rollout_load(lb_store *s, const char *id, int with_request, lb_rollout_rec *out)
{
    memset(out, 0, sizeof *out);
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s,
                         with_request ? "SELECT id, owner, status, n, created_ms, finished_ms, request FROM rollouts"
                                        " WHERE id = ?1"
                                      : "SELECT id, owner, status, n, created_ms, finished_ms FROM rollouts"
                                        " WHERE id = ?1",
                         &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    int src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        lb_sql_col_copy(st, 0, out->id, sizeof out->id);
        out->owner = lb_sql_col_dup(st, 1);
        lb_sql_col_copy(st, 2, out->status, sizeof out->status);
        out->n = lb_db_col_int(st, 3);
        out->created_ms = lb_sql_col_ms(st, 4);
        out->finished_ms = lb_sql_col_ms(st, 5);
        if (with_request && !(out->request_json = lb_sql_col_dup(st, 6)))
            rc = LB_E_NOMEM;
    } else {
        rc = src == LB_DB_DONE ? LB_E_NOTFOUND : lb_store_sql_err(s, src, "read a rollout group");
    }
    lb_sql_done(s, st);
    if (rc)
        lb_rollout_rec_free(out);
    return rc;
}

int lb_store_rollout_samples(lb_store *s, const char *id, lb_rollout_sample **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s,
                         "SELECT idx, status, task_id, outcome, reward, result, started_ms, finished_ms, start_task"
                         " FROM rollout_samples WHERE rollout_id = ?1 ORDER BY idx LIMIT ?2",
                         &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int(st, 2, LB_ROLLOUT_N_MAX);
    lb_rollout_sample *v = calloc(LB_ROLLOUT_N_MAX, sizeof *v);
    size_t k = 0;
    int src = LB_DB_DONE;
    if (!v)
        rc = LB_E_NOMEM;
    while (!rc && (src = lb_db_step(st)) == LB_DB_ROW) {
        lb_rollout_sample *x = &v[k++];
        x->idx = lb_db_col_int(st, 0);
        lb_sql_col_copy(st, 1, x->status, sizeof x->status);
        lb_sql_col_copy(st, 2, x->task_id, sizeof x->task_id);
        lb_sql_col_copy(st, 3, x->outcome, sizeof x->outcome);
        x->has_reward = !lb_db_col_is_null(st, 4);
        x->reward = x->has_reward ? lb_db_col_double(st, 4) : 0;
        x->result_json = lb_sql_col_dup(st, 5);
        x->started_ms = lb_sql_col_ms(st, 6);
        x->finished_ms = lb_sql_col_ms(st, 7);
        lb_sql_col_copy(st, 8, x->start_task, sizeof x->start_task);
    }
    if (!rc && src != LB_DB_DONE && src != LB_DB_ROW)
        rc = lb_store_sql_err(s, src, "list rollout samples");
    lb_sql_done(s, st);
    if (rc) {
        lb_rollout_samples_free(v, k);
        return rc;
    }
    *out = v;
    *n = k;
    return LB_OK;
}

int lb_store_rollouts_active(lb_store *s, char ***ids, size_t *n)
{
    return lb_sql_ids(s,
                      "SELECT id FROM rollouts WHERE status = 'running' OR id IN (SELECT rollout_id FROM"
                      " rollout_samples WHERE status IN ('running','scoring')) ORDER BY created_ms, id",
                      "list active rollout groups", ids, n);
}

int lb_store_rollout_running(lb_store *s, int64_t *n)
{
    *n = 0;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT COUNT(*) FROM rollout_samples WHERE status = 'running'", &st);
    if (rc)
        return rc;
    int src = lb_db_step(st);
    if (src == LB_DB_ROW)
        *n = lb_db_col_int64(st, 0);
    else
        rc = lb_store_sql_err(s, src, "count running rollout samples");
    lb_sql_done(s, st);
    return rc;
}

/* several nodes: a write transaction under fence f (NULL: none); LB_E_DENIED
 * (nothing begun) when f's claim is no longer held */
static int fence_begin(lb_store *s, const lb_runner_fence *f)
{
    int rc = lb_store_tx_begin(s);
    if (rc == LB_OK && f && (rc = lb_store_runner_fence_check(s, LB_RUNNER_ROLLOUTS, f)) != LB_OK)
        rc = lb_store_tx_end(s, rc);
    return rc;
}

/* One fenced write of a sample: sql with ?1 group, ?2 idx, ?3 task id,
 * and when with_now ?4 now */
static int sample_write(lb_store *s, const lb_runner_fence *f, const char *sql, const char *id, int idx,
                        const char *task_id, int with_now, const char *what)
{
    if (!lb_id_valid(task_id))
        return LB_E_INVAL;
    lb_db_stmt *st = NULL;
    int rc = fence_begin(s, f);
    if (rc)
        return rc;
    if ((rc = lb_sql_prep(s, sql, &st)))
        return lb_store_tx_end(s, rc);
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int(st, 2, idx);
    lb_sql_bind_text(st, 3, task_id);
    if (with_now)
        lb_db_bind_int64(st, 4, lb_now_ms());
    return lb_store_tx_end(s, lb_sql_run_write(s, st, what, LB_E_EXISTS));
}

int lb_store_rollout_sample_reserve(lb_store *s, const lb_runner_fence *f, const char *id, int idx,
                                    const char *task_id)
{
    return sample_write(s, f,
                        "UPDATE rollout_samples SET start_task = ?3 WHERE rollout_id = ?1 AND idx = ?2"
                        " AND status = 'queued'",
                        id, idx, task_id, 0, "reserve a rollout sample's task");
}

int lb_store_rollout_sample_start(lb_store *s, const lb_runner_fence *f, const char *id, int idx, const char *task_id)
{
    return sample_write(s, f,
                        "UPDATE rollout_samples SET status = 'running', task_id = ?3, started_ms = ?4, start_task = NULL"
                        " WHERE rollout_id = ?1 AND idx = ?2 AND status = 'queued'"
                        " AND (start_task IS NULL OR start_task = ?3)",
                        id, idx, task_id, 1, "start a rollout sample");
}

int lb_store_rollout_sample_task(lb_store *s, const char *id, int idx, char *task_id, char *start_task)
{
    task_id[0] = start_task[0] = '\0';
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT task_id, start_task FROM rollout_samples WHERE rollout_id = ?1 AND idx = ?2", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int(st, 2, idx);
    int src = lb_db_step(st);
    if (src == LB_DB_ROW) {
        lb_sql_col_copy(st, 0, task_id, 33);
        lb_sql_col_copy(st, 1, start_task, 33);
    }
    rc = src == LB_DB_ROW ? LB_OK : src == LB_DB_DONE ? LB_E_NOTFOUND
                                                      : lb_store_sql_err(s, src, "read a rollout sample");
    lb_sql_done(s, st);
    return rc;
}

int lb_store_rollout_sample_move(lb_store *s, const lb_runner_fence *f, const char *id, int idx, const char *from,
                                 const char *to, const char *outcome, int has_reward, double reward,
                                 const char *result_json)
{
    int done = !strcmp(to, "done");
    lb_db_stmt *st = NULL;
    int rc = fence_begin(s, f);
    if (rc)
        return rc;
    rc = lb_sql_prep(s,
                     done ? "UPDATE rollout_samples SET status = ?4, outcome = ?5, reward = ?6, result = ?7,"
                            " finished_ms = ?8 WHERE rollout_id = ?1 AND idx = ?2 AND status = ?3"
                          : "UPDATE rollout_samples SET status = ?4 WHERE rollout_id = ?1 AND idx = ?2 AND"
                            " status = ?3",
                     &st);
    if (rc)
        return lb_store_tx_end(s, rc);
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int(st, 2, idx);
    lb_sql_bind_text(st, 3, from);
    lb_sql_bind_text(st, 4, to);
    if (done) {
        lb_sql_bind_text(st, 5, outcome);
        if (has_reward)
            lb_db_bind_double(st, 6, reward);
        else
            lb_db_bind_null(st, 6);
        lb_sql_bind_text(st, 7, result_json);
        lb_db_bind_int64(st, 8, lb_now_ms());
    }
    return lb_store_tx_end(s, lb_sql_run_write(s, st, "move a rollout sample", LB_E_EXISTS));
}

int lb_store_rollout_finish(lb_store *s, const lb_runner_fence *f, const char *id)
{
    lb_db_stmt *st = NULL;
    int rc = fence_begin(s, f);
    if (rc)
        return rc;
    rc = lb_sql_prep(s,
                     "UPDATE rollouts SET status = 'done', finished_ms = ?2 WHERE id = ?1 AND status = 'running'"
                     " AND NOT EXISTS (SELECT 1 FROM rollout_samples WHERE rollout_id = ?1 AND status != 'done')",
                     &st);
    if (rc)
        return lb_store_tx_end(s, rc);
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int64(st, 2, lb_now_ms());
    return lb_store_tx_end(s, lb_sql_run_write(s, st, "finish a rollout group", LB_E_EXISTS));
}

int lb_store_rollout_cancel(lb_store *s, const char *id)
{
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    int64_t now = lb_now_ms();
    rc = lb_sql_prep(s, "UPDATE rollouts SET status = 'cancelled', finished_ms = ?2 WHERE id = ?1 AND status = "
                        "'running'",
                     &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int64(st, 2, now);
    rc = lb_sql_run_write(s, st, "cancel a rollout group", LB_E_EXISTS);
    st = NULL;
    if (rc)
        goto out;
    rc = lb_sql_prep(s,
                     "UPDATE rollout_samples SET status = 'done', outcome = 'cancelled', finished_ms = ?2"
                     " WHERE rollout_id = ?1 AND status = 'queued'",
                     &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, id);
    lb_db_bind_int64(st, 2, now);
    rc = lb_sql_run_write(s, st, "cancel rollout samples", LB_OK);
    st = NULL;
out:
    lb_sql_done(s, st);
    return lb_store_tx_end(s, rc);
}

int lb_store_rollout_delete(lb_store *s, const char *id)
{
    lb_db_stmt *st = NULL;
    int rc = lb_store_tx_begin(s);
    if (rc)
        return rc;
    /* the samples first: the cascade needs foreign keys on, which a
     * connection may not have */
    rc = lb_sql_prep(s, "DELETE FROM rollout_samples WHERE rollout_id = ?1", &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, id);
    rc = lb_sql_run_write(s, st, "delete rollout samples", LB_OK);
    st = NULL;
    if (rc)
        goto out;
    rc = lb_sql_prep(s, "DELETE FROM rollouts WHERE id = ?1", &st);
    if (rc)
        goto out;
    lb_sql_bind_text(st, 1, id);
    rc = lb_sql_run_write(s, st, "delete a rollout group", LB_E_NOTFOUND);
    st = NULL;
out:
    lb_sql_done(s, st);
    return lb_store_tx_end(s, rc);
}
