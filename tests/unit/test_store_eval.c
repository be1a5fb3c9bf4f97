/* Unit tests for the evaluations' tables (server/store/store_eval.h):
 * one transaction per eval and its runs, the run's life
 * (pending -> running -> scoring -> done), cancel skipping what was
 * pending, the order results are read in, and delete taking the runs. */
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static char db_path[4096];

static lb_store *open_fresh(const char *name) { return tw_store_fresh(name, db_path, sizeof db_path); }

/* an eval of rows a, b in both modes, one repeat; b's llm run already done */
static int insert_eval(lb_store *s, char id[33])
{
    CHECK(lb_random_hex(id, 33, 16) == LB_OK);
    lb_eval_rec e;
    memset(&e, 0, sizeof e);
    snprintf(e.id, sizeof e.id, "%s", id);
    e.owner = "alice";
    e.name = "set";
    e.options_json = "{\"mode\":\"both\"}";
    e.dataset = "/tmp/x.jsonl";
    e.created_ms = lb_now_ms();
    lb_eval_run_new runs[] = {
        {0, "a", "llm", 0, "pending", NULL},
        {0, "a", "sandbox", 0, "pending", NULL},
        {1, "b", "llm", 0, "done", "{\"id\":\"b\",\"status\":\"ok\"}"},
        {1, "b", "sandbox", 0, "pending", NULL},
    };
    return lb_store_eval_insert(s, &e, runs, 4);
}

TEST(insert_stores_the_eval_and_its_runs_at_once)
{
    lb_store *s = open_fresh("insert");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_eval(s, id) == LB_OK);
    lb_eval_rec e;
    CHECK(lb_store_eval_load(s, id, &e) == LB_OK);
    CHECK_STR(e.status, "queued");
    CHECK_STR(e.owner, "alice");
    CHECK(e.started_ms == -1 && e.summary_json == NULL);
    lb_eval_rec_free(&e);
    lb_eval_counts k;
    CHECK(lb_store_eval_counts(s, id, &k) == LB_OK);
    CHECK(k.total == 4 && k.pending == 3 && k.done == 1 && k.failed == 0);
    /* a run twice (same row id, mode, repeat) refuses the whole eval */
    lb_eval_rec e2;
    memset(&e2, 0, sizeof e2);
    CHECK(lb_random_hex(e2.id, sizeof e2.id, 16) == LB_OK);
    e2.options_json = "{}";
    e2.dataset = "d";
    lb_eval_run_new dup[] = {{0, "a", "llm", 0, "pending", NULL}, {1, "a", "llm", 0, "pending", NULL}};
    CHECK(lb_store_eval_insert(s, &e2, dup, 2) == LB_E_EXISTS);
    CHECK(lb_store_eval_load(s, e2.id, &e) == LB_E_NOTFOUND);
    lb_store_close(s);
}

TEST(runs_move_through_their_states_once)
{
    lb_store *s = open_fresh("life");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_eval(s, id) == LB_OK);
    lb_eval_run *v = NULL;
    size_t n = 0;
    /* scheduling order: llm before sandbox, then row */
    CHECK(lb_store_eval_runs(s, id, LB_RUNS_PENDING, 0, 10, &v, &n) == LB_OK);
    CHECK(n == 3);
    CHECK(!strcmp(v[0].mode, "llm") && !strcmp(v[0].row_id, "a"));
    CHECK(!strcmp(v[1].mode, "sandbox") && !strcmp(v[1].row_id, "a"));
    CHECK(!strcmp(v[2].mode, "sandbox") && !strcmp(v[2].row_id, "b"));
    int64_t rid = v[0].rid;
    lb_eval_runs_free(v, n);
    CHECK(lb_store_eval_set_running(s, NULL, id) == LB_OK);
    CHECK(lb_store_eval_set_running(s, NULL, id) == LB_E_EXISTS);
    CHECK(lb_store_eval_run_start(s, NULL, rid, "0123456789abcdef0123456789abcdef") == LB_OK);
    CHECK(lb_store_eval_run_start(s, NULL, rid, "0123456789abcdef0123456789abcdef") == LB_E_EXISTS);
    CHECK(lb_store_eval_runs(s, id, LB_RUNS_ACTIVE, 0, 10, &v, &n) == LB_OK);
    CHECK(n == 1 && v[0].rid == rid && !strcmp(v[0].status, "running") && v[0].started_ms > 0);
    lb_eval_runs_free(v, n);
    CHECK(lb_store_eval_run_move(s, NULL, rid, "running", "scoring", NULL) == LB_OK);
    CHECK(lb_store_eval_run_move(s, NULL, rid, "running", "scoring", NULL) == LB_E_EXISTS);
    CHECK(lb_store_eval_run_move(s, NULL, rid, "scoring", "done", "{\"id\":\"a\",\"status\":\"failed\"}") == LB_OK);
    lb_eval_counts k;
    CHECK(lb_store_eval_counts(s, id, &k) == LB_OK);
    CHECK(k.done == 2 && k.failed == 1 && k.pending == 2 && k.running == 0);
    /* results in row order: a/llm, a/sandbox, b/llm, b/sandbox */
    CHECK(lb_store_eval_runs(s, id, LB_RUNS_ALL, 0, 10, &v, &n) == LB_OK);
    CHECK(n == 4);
    CHECK(!strcmp(v[0].row_id, "a") && !strcmp(v[0].mode, "llm") && v[0].result_json && v[0].finished_ms > 0);
    CHECK(!strcmp(v[3].row_id, "b") && !strcmp(v[3].mode, "sandbox") && !v[3].result_json);
    lb_eval_runs_free(v, n);
    /* a page */
    CHECK(lb_store_eval_runs(s, id, LB_RUNS_ALL, 3, 10, &v, &n) == LB_OK);
    CHECK(n == 1 && !strcmp(v[0].row_id, "b"));
    lb_eval_runs_free(v, n);
    CHECK(lb_store_eval_runs(s, id, LB_RUNS_ALL, 0, 0, &v, &n) == LB_E_INVAL);
    lb_store_close(s);
}

TEST(cancel_skips_pending_runs_and_ends_once)
{
    lb_store *s = open_fresh("cancel");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_eval(s, id) == LB_OK);
    CHECK(lb_store_eval_cancel(s, id) == LB_OK);
    CHECK(lb_store_eval_cancel(s, id) == LB_E_EXISTS);
    lb_eval_counts k;
    CHECK(lb_store_eval_counts(s, id, &k) == LB_OK);
    CHECK(k.skipped == 3 && k.pending == 0 && k.done == 1);
    CHECK(lb_store_eval_finish(s, NULL, id, "succeeded", NULL, "{}", 1, 2) == LB_E_EXISTS);
    char **ids = NULL;
    size_t n = 0;
    CHECK(lb_store_evals_active(s, &ids, &n) == LB_OK);
    CHECK(n == 0);
    free(ids);
    lb_store_close(s);
}

TEST(finish_keeps_the_summary_and_delete_takes_the_runs)
{
    lb_store *s = open_fresh("finish");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_eval(s, id) == LB_OK);
    char **ids = NULL;
    size_t n = 0;
    CHECK(lb_store_evals_active(s, &ids, &n) == LB_OK);
    CHECK(n == 1 && !strcmp(ids[0], id));
    free(ids[0]);
    free(ids);
    CHECK(lb_store_eval_finish(s, NULL, id, "cancelled", NULL, NULL, 0, 0) == LB_E_INVAL);
    CHECK(lb_store_eval_finish(s, NULL, id, "succeeded", NULL, "{\"overall\":1}", 1500, 2500) == LB_OK);
    lb_eval_rec e;
    CHECK(lb_store_eval_load(s, id, &e) == LB_OK);
    CHECK_STR(e.status, "succeeded");
    CHECK_STR(e.summary_json, "{\"overall\":1}");
    CHECK(e.wall_ms_llm == 1500 && e.wall_ms_sandbox == 2500 && e.finished_ms > 0);
    lb_eval_rec_free(&e);
    lb_eval_rec *list = NULL;
    CHECK(lb_store_eval_list(s, "alice", 10, &list, &n) == LB_OK);
    CHECK(n == 1);
    lb_eval_recs_free(list, n);
    CHECK(lb_store_eval_list(s, "bob", 10, &list, &n) == LB_OK);
    CHECK(n == 0);
    lb_eval_recs_free(list, n);
    CHECK(lb_store_eval_delete(s, id) == LB_OK);
    CHECK(lb_store_eval_delete(s, id) == LB_E_NOTFOUND);
    lb_eval_counts k;
    CHECK(lb_store_eval_counts(s, id, &k) == LB_OK);
    CHECK(k.total == 0);
    lb_store_close(s);
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(insert_stores_the_eval_and_its_runs_at_once);
    RUN(runs_move_through_their_states_once);
    RUN(cancel_skips_pending_runs_and_ends_once);
    RUN(finish_keeps_the_summary_and_delete_takes_the_runs);
    if (tw_done())
        return 1;
    return testlib_done();
}
