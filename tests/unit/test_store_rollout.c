/* Unit tests for the rollout groups' tables (server/store/store_rollout.h):
 * a group and its n queued samples in one transaction, a sample's life
 * (queued -> running -> scoring -> done) moving once, the group ending
 * only when every sample is done, cancel ending the queued samples as
 * cancelled and leaving the running ones, the running count, the active
 * list, delete; and the runner's classification of a failed sample
 * (jobs/rollout_runner.h). */
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_rollout.h"
#include "jobs/rollout_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static char db_path[4096];

static lb_store *open_fresh(const char *name) { return tw_store_fresh(name, db_path, sizeof db_path); }

static int insert_group(lb_store *s, char id[33], int n, const char *owner)
{
    lb_rollout_rec g;
    memset(&g, 0, sizeof g);
    CHECK(lb_random_hex(g.id, sizeof g.id, 16) == LB_OK);
    snprintf(id, 33, "%s", g.id);
    g.owner = (char *)owner;
    g.n = n;
    g.request_json = "{\"prompt\":\"p\"}";
    g.created_ms = lb_now_ms();
    return lb_store_rollout_insert(s, &g);
}

TEST(insert_stores_the_group_and_its_queued_samples)
{
    lb_store *s = open_fresh("insert");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_group(s, id, 3, "alice") == LB_OK);
    lb_rollout_rec g;
    CHECK(lb_store_rollout_load(s, id, 1, &g) == LB_OK);
    CHECK_STR(g.status, "running");
    CHECK_STR(g.owner, "alice");
    CHECK_STR(g.request_json, "{\"prompt\":\"p\"}");
    CHECK(g.n == 3 && g.finished_ms == -1);
    lb_rollout_rec_free(&g);
    CHECK(lb_store_rollout_load(s, id, 0, &g) == LB_OK);
    CHECK(g.request_json == NULL);
    lb_rollout_rec_free(&g);
    lb_rollout_sample *v = NULL;
    size_t n = 0;
    CHECK(lb_store_rollout_samples(s, id, &v, &n) == LB_OK);
    CHECK(n == 3);
    for (size_t i = 0; i < n; i++) {
        CHECK(v[i].idx == (int)i);
        CHECK_STR(v[i].status, "queued");
        CHECK(!v[i].task_id[0] && !v[i].outcome[0] && !v[i].has_reward);
    }
    lb_rollout_samples_free(v, n);
    char bad[33];
    CHECK(insert_group(s, bad, 0, NULL) == LB_E_INVAL);
    CHECK(insert_group(s, bad, LB_ROLLOUT_N_MAX + 1, NULL) == LB_E_INVAL);
    CHECK(lb_store_rollout_load(s, "0123456789abcdef0123456789abcdef", 0, &g) == LB_E_NOTFOUND);
    lb_store_close(s);
}

TEST(samples_move_once_and_the_group_ends_when_all_are_done)
{
    lb_store *s = open_fresh("life");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_group(s, id, 2, NULL) == LB_OK);
    CHECK(lb_store_rollout_sample_start(s, NULL, id, 0, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") == LB_OK);
    CHECK(lb_store_rollout_sample_start(s, NULL, id, 0, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") == LB_E_EXISTS);
    int64_t running = -1;
    CHECK(lb_store_rollout_running(s, &running) == LB_OK && running == 1);
    CHECK(lb_store_rollout_finish(s, NULL, id) == LB_E_EXISTS); /* samples left */
    CHECK(lb_store_rollout_sample_move(s, NULL, id, 0, "running", "scoring", NULL, 0, 0, NULL) == LB_OK);
    CHECK(lb_store_rollout_sample_move(s, NULL, id, 0, "running", "scoring", NULL, 0, 0, NULL) == LB_E_EXISTS);
    CHECK(lb_store_rollout_sample_move(s, NULL, id, 0, "scoring", "done", "ok", 1, 0.5, "{\"turns\":2}") == LB_OK);
    CHECK(lb_store_rollout_sample_start(s, NULL, id, 1, "cccccccccccccccccccccccccccccccc") == LB_OK);
    CHECK(lb_store_rollout_sample_move(s, NULL, id, 1, "running", "scoring", NULL, 0, 0, NULL) == LB_OK);
    CHECK(lb_store_rollout_sample_move(s, NULL, id, 1, "scoring", "done", "scorer_error", 0, 0, "{}") == LB_OK);
    CHECK(lb_store_rollout_running(s, &running) == LB_OK && running == 0);
    lb_rollout_sample *v = NULL;
    size_t n = 0;
    CHECK(lb_store_rollout_samples(s, id, &v, &n) == LB_OK && n == 2);
    CHECK_STR(v[0].outcome, "ok");
    CHECK(v[0].has_reward && v[0].reward == 0.5);
    CHECK_STR(v[0].result_json, "{\"turns\":2}");
    CHECK_STR(v[0].task_id, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    CHECK(v[0].started_ms > 0 && v[0].finished_ms >= v[0].started_ms);
    CHECK_STR(v[1].outcome, "scorer_error");
    CHECK(!v[1].has_reward);
    lb_rollout_samples_free(v, n);
    char **ids = NULL;
    size_t na = 0;
    CHECK(lb_store_rollouts_active(s, &ids, &na) == LB_OK && na == 1);
    CHECK_STR(ids[0], id);
    free(ids[0]);
    free(ids);
    CHECK(lb_store_rollout_finish(s, NULL, id) == LB_OK);
    CHECK(lb_store_rollout_finish(s, NULL, id) == LB_E_EXISTS);
    CHECK(lb_store_rollouts_active(s, &ids, &na) == LB_OK && na == 0);
    free(ids);
    lb_rollout_rec g;
    CHECK(lb_store_rollout_load(s, id, 0, &g) == LB_OK);
    CHECK_STR(g.status, "done");
    CHECK(g.finished_ms > 0);
    lb_rollout_rec_free(&g);
    lb_store_close(s);
}

TEST(cancel_ends_queued_samples_and_leaves_running_ones)
{
    lb_store *s = open_fresh("cancel");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_group(s, id, 3, NULL) == LB_OK);
    CHECK(lb_store_rollout_sample_start(s, NULL, id, 1, "dddddddddddddddddddddddddddddddd") == LB_OK);
    CHECK(lb_store_rollout_cancel(s, id) == LB_OK);
    CHECK(lb_store_rollout_cancel(s, id) == LB_E_EXISTS);
    lb_rollout_sample *v = NULL;
    size_t n = 0;
    CHECK(lb_store_rollout_samples(s, id, &v, &n) == LB_OK && n == 3);
    CHECK_STR(v[0].status, "done");
    CHECK_STR(v[0].outcome, "cancelled");
    CHECK_STR(v[1].status, "running");
    CHECK_STR(v[2].outcome, "cancelled");
    lb_rollout_samples_free(v, n);
    /* still the runner's while its running sample is not scored */
    char **ids = NULL;
    size_t na = 0;
    CHECK(lb_store_rollouts_active(s, &ids, &na) == LB_OK && na == 1);
    free(ids[0]);
    free(ids);
    CHECK(lb_store_rollout_sample_start(s, NULL, id, 2, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee") == LB_E_EXISTS);
    CHECK(lb_store_rollout_delete(s, id) == LB_OK);
    CHECK(lb_store_rollout_delete(s, id) == LB_E_NOTFOUND);
    CHECK(lb_store_rollout_samples(s, id, &v, &n) == LB_OK && n == 0);
    lb_rollout_samples_free(v, n);
    lb_store_close(s);
}

TEST(failed_samples_are_classified)
{
    CHECK_STR(lb_rollout_outcome_of(1, "anything"), "cancelled");
    CHECK_STR(lb_rollout_outcome_of(0, "reached the task time limit (60 s)"), "timeout");
    CHECK_STR(lb_rollout_outcome_of(0, "reached the turn limit (3)"), "ok");
    CHECK_STR(lb_rollout_outcome_of(0, "reached the token budget (100 tokens; the last turn used 90)"), "ok");
    CHECK_STR(lb_rollout_outcome_of(0, "The sandbox could not be started: no slot"), "sandbox_error");
    CHECK_STR(lb_rollout_outcome_of(0, "The sandbox stopped working: gone"), "sandbox_error");
    CHECK_STR(lb_rollout_outcome_of(0, "the model endpoint answered HTTP 500: boom"), "model_error");
    CHECK_STR(lb_rollout_outcome_of(0, NULL), "model_error");
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(insert_stores_the_group_and_its_queued_samples);
    RUN(samples_move_once_and_the_group_ends_when_all_are_done);
    RUN(cancel_ends_queued_samples_and_leaves_running_ones);
    RUN(failed_samples_are_classified);
    if (tw_done())
        return 1;
    return testlib_done();
}
