/* The score pool (jobs/score_pool.c): what users sharing it rely on. One
 * user's slow scorers hold at most their share of the slow threads, so
 * another user's job starts at once; a built-in scorer (exact) never waits
 * behind slow ones; cancelling a group kills its running scorer process
 * and answers its queued jobs without starting one. The pool runs here
 * with 2 slow threads, a share of 1 and 1 fast thread, on a store in a
 * temporary folder; "llmbox score" is a script that sleeps. The text
 * scorers answer without it. */
#include "testlib.h"

#include "common/config.h"
#include "common/status.h"
#include "common/util.h"
#include "jobs/score_pool.h"
#include "store/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char T[] = "/tmp/llmbox-score-pool-XXXXXX";
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct job {
    const char *key, *group, *owner, *scorer;
    int use_exec;               /* run lb_score_exec (the sleeping script) instead of waiting */
    int started, released, finished;
    int exec_rc;
    char error_class[64];
    int64_t ran_ms;             /* how long lb_score_exec took */
} job;

static int get(const int *v)
{
    pthread_mutex_lock(&mu);
    int x = *v;
    pthread_mutex_unlock(&mu);
    return x;
}

static void set(int *v, int x)
{
    pthread_mutex_lock(&mu);
    *v = x;
    pthread_mutex_unlock(&mu);
}

static void run(struct lb_store *s, void *arg)
{
    (void)s;
    job *j = arg;
    set(&j->started, 1);
    if (j->use_exec) {
        char req[300];
        snprintf(req, sizeof req, "%s/req-%s.json", T, j->key);
        lb_score_req q = {.scorer = "script", .answer = "1", .timeout_s = 30, .req_path = req};
        lb_score_out o;
        int64_t t0 = lb_mono_ms();
        int rc = lb_score_exec(lb_cfg(), &q, &o);
        pthread_mutex_lock(&mu);
        j->exec_rc = rc;
        j->ran_ms = lb_mono_ms() - t0;
        snprintf(j->error_class, sizeof j->error_class, "%s", o.error_class);
        pthread_mutex_unlock(&mu);
        free(o.detail);
        return;
    }
    /* held until the test lets it go (bounded: a broken test ends) */
    for (int i = 0; i < 2000 && !get(&j->released); i++)
        usleep(5000);
}

static void done(void *arg)
{
    set(&((job *)arg)->finished, 1);
}

static int submit(job *j)
{
    lb_score_job_info info = {.key = j->key, .group = j->group, .owner = j->owner, .scorer = j->scorer};
    return lb_score_pool_submit_job(&info, run, done, j);
}

/* Waits up to ms for *v to become 1. */
static int wait_for(const int *v, int ms)
{
    for (int i = 0; i < ms / 5; i++) {
        if (get(v))
            return 1;
        usleep(5000);
    }
    return get(v);
}

/* exact, numeric and choice answer from the web's own process, with what
 * `llmbox score` says (its checks included): here "llmbox score" is the
 * sleeping script, so a scorer process would end in scorer_timeout. */
static void text_score(const char *scorer, const char *answer, const char *gt, const char *row, lb_score_out *o,
                       int *rc)
{
    char req[300];
    snprintf(req, sizeof req, "%s/req-text.json", T);
    lb_score_req q = {.scorer = scorer, .answer = answer, .gt_json = gt, .row_json = row, .timeout_s = 1,
                      .req_path = req};
    *rc = lb_score_exec(lb_cfg(), &q, o);
}

TEST(text_scorers_answer_without_a_process)
{
    lb_score_out o;
    int rc;
    text_score("numeric", "so the answer is 1,234.5 meters", "1234.5", NULL, &o, &rc);
    CHECK(rc == LB_OK && o.score == 1 && !o.error_class[0] && !strcmp(o.scorer, "numeric"));
    CHECK(o.detail && strstr(o.detail, "numeric"));
    free(o.detail);
    text_score("exact", "  Paris\n", "[\"London\", \"paris\"]", "{}", &o, &rc);
    CHECK(rc == LB_OK && o.score == 1 && !o.error_class[0]);
    free(o.detail);
    text_score("exact", "Rome", "\"Paris\"", NULL, &o, &rc);
    CHECK(rc == LB_OK && o.score == 0 && !o.error_class[0]);
    free(o.detail);
    text_score("choice", "The answer is (B).", "\"B\"", NULL, &o, &rc);
    CHECK(rc == LB_OK && o.score == 1 && !o.error_class[0] && !strcmp(o.scorer, "choice"));
    free(o.detail);
    /* the row's tolerance, as the scorer process reads it */
    text_score("numeric", "10.4", "10", "{\"rel_tol\": 0.05}", &o, &rc);
    CHECK(rc == LB_OK && o.score == 1);
    free(o.detail);
    /* no verdict without a ground truth: an error, never a zero */
    text_score("numeric", "3", NULL, NULL, &o, &rc);
    CHECK(rc == LB_OK && o.score == -1 && !strcmp(o.error_class, "bad_request"));
    CHECK(o.detail && strstr(o.detail, "ground_truth"));
    free(o.detail);
    /* a detail that quotes invalid UTF-8 comes back valid */
    text_score("exact", "\xff\xfe", "\"x\"", NULL, &o, &rc);
    CHECK(rc == LB_OK && o.score == 0 && o.detail && !strstr(o.detail, "\xff"));
    free(o.detail);
}

TEST(one_users_slow_jobs_leave_room_for_another)
{
    job a1 = {.key = "a1", .owner = "alice", .scorer = "script"};
    job a2 = {.key = "a2", .owner = "alice", .scorer = "script"};
    job a3 = {.key = "a3", .owner = "alice", .scorer = "judge"};
    job b1 = {.key = "b1", .owner = "bob", .scorer = "script"};
    job c1 = {.key = "c1", .owner = "carol", .scorer = "exact", .released = 1};
    CHECK(submit(&a1) == LB_OK);
    CHECK(submit(&a2) == LB_OK);
    CHECK(submit(&a3) == LB_OK);
    CHECK(submit(&a1) == LB_E_EXISTS); /* a run is never queued twice */
    CHECK(lb_score_pool_has("a2"));
    CHECK(submit(&b1) == LB_OK);
    CHECK(submit(&c1) == LB_OK);
    CHECK(wait_for(&a1.started, 10000));
    /* bob's job takes the second slow thread although alice queued first */
    CHECK(wait_for(&b1.started, 10000));
    /* the exact scorer is done while both slow threads are held */
    CHECK(wait_for(&c1.finished, 10000));
    usleep(200000);
    CHECK(!get(&a2.started) && !get(&a3.started)); /* alice holds her share (1) */
    set(&b1.released, 1);
    CHECK(wait_for(&b1.finished, 10000));
    usleep(200000);
    CHECK(!get(&a2.started)); /* bob's thread freed, alice still at her share */
    set(&a1.released, 1);
    CHECK(wait_for(&a2.started, 10000));
    CHECK(!get(&a3.started));
    set(&a2.released, 1);
    set(&a3.released, 1);
    CHECK(wait_for(&a3.finished, 10000));
    CHECK(!lb_score_pool_has("a3"));
}

TEST(the_user_served_least_recently_goes_first)
{
    /* dave holds the second thread; erin and frank each queue two: when a
     * thread frees, each of them gets one before either gets a second */
    job d = {.key = "d", .owner = "dave", .scorer = "script"};
    job e1 = {.key = "e1", .owner = "erin", .scorer = "script"};
    job e2 = {.key = "e2", .owner = "erin", .scorer = "script"};
    job f1 = {.key = "f1", .owner = "frank", .scorer = "script"};
    job g = {.key = "g", .owner = "gina", .scorer = "script"};
    CHECK(submit(&g) == LB_OK);
    CHECK(submit(&d) == LB_OK);
    CHECK(wait_for(&g.started, 10000) && wait_for(&d.started, 10000));
    CHECK(submit(&e1) == LB_OK);
    CHECK(submit(&e2) == LB_OK);
    CHECK(submit(&f1) == LB_OK);
    set(&g.released, 1);
    CHECK(wait_for(&e1.started, 10000));
    set(&e1.released, 1);
    /* erin was served just now, frank never: frank's job goes before e2 */
    CHECK(wait_for(&f1.started, 10000));
    CHECK(!get(&e2.started));
    set(&d.released, 1);
    set(&f1.released, 1);
    set(&e2.released, 1);
    CHECK(wait_for(&e2.finished, 10000));
}

TEST(cancel_kills_a_running_scorer_and_answers_queued_jobs)
{
    job x = {.key = "x", .group = "rollout:g1", .owner = "alice", .scorer = "script", .use_exec = 1};
    job y = {.key = "y", .group = "rollout:g1", .owner = "alice", .scorer = "script", .use_exec = 1};
    job z = {.key = "z", .group = "rollout:g2", .owner = "bob", .scorer = "script", .released = 1};
    CHECK(submit(&x) == LB_OK);
    CHECK(submit(&y) == LB_OK); /* queued: alice's share is 1 */
    CHECK(wait_for(&x.started, 10000));
    usleep(300000); /* the sleeping scorer is running */
    CHECK(!get(&x.finished));
    CHECK(lb_score_pool_cancel("rollout:g1") == 2);
    CHECK(submit(&z) == LB_OK);
    CHECK(wait_for(&x.finished, 15000));
    CHECK(wait_for(&y.finished, 15000));
    CHECK(get(&x.exec_rc) == LB_E_CANCELLED);
    CHECK_STR(x.error_class, "cancelled");
    CHECK(x.ran_ms < 10000); /* killed, not waited out (it sleeps 30 s) */
    CHECK(get(&y.exec_rc) == LB_E_CANCELLED);
    CHECK_STR(y.error_class, "cancelled");
    CHECK(y.ran_ms < 2500); /* never started a process (a started one is killed, not at once) */
    CHECK(wait_for(&z.finished, 10000)); /* another group's job is untouched */
    CHECK(lb_score_pool_cancel("rollout:g1") == 0);
}

int main(void)
{
    if (!mkdtemp(T)) {
        printf("FAIL setup: mkdtemp\n");
        return 1;
    }
    char db[200], sleeper[200];
    snprintf(db, sizeof db, "%s/llmbox.db", T);
    snprintf(sleeper, sizeof sleeper, "%s/sleeper", T);
    FILE *f = fopen(sleeper, "w");
    if (!f) {
        printf("FAIL setup: %s\n", sleeper);
        return 1;
    }
    fputs("#!/bin/sh\nexec sleep 30\n", f);
    fclose(f);
    chmod(sleeper, 0755);
    setenv("LLMBOX_HOME", T, 1);
    setenv("LLMBOX_DB", db, 1);
    setenv("LLMBOX_SCORE_THREADS", "2", 1);
    setenv("LLMBOX_SCORE_USER_SHARE", "1", 1);
    setenv("LLMBOX_SCORE_FAST_THREADS", "1", 1);
    if (lb_config_load(lb_cfg_mut()) != LB_OK) {
        printf("FAIL setup: the configuration\n");
        return 1;
    }
    snprintf(lb_cfg_mut()->self_exe, sizeof lb_cfg_mut()->self_exe, "%s", sleeper);
    /* the store made first, as the web makes it before it starts the pool:
     * three scorer threads creating one new database at once could find
     * it locked, and a thread that cannot open the store skips its job */
    lb_store *st = NULL;
    if (lb_store_open(db, &st) != LB_OK) {
        printf("FAIL setup: the store\n");
        return 1;
    }
    lb_store_close(st);
    if (lb_score_pool_start(lb_cfg(), lb_cfg()->score_threads) != LB_OK) {
        printf("FAIL setup: the pool\n");
        return 1;
    }
    RUN(one_users_slow_jobs_leave_room_for_another);
    RUN(the_user_served_least_recently_goes_first);
    RUN(cancel_kills_a_running_scorer_and_answers_queued_jobs);
    RUN(text_scorers_answer_without_a_process);
    LB_IGNORE(lb_rmtree(T)); /* a temporary folder left behind is only disk */
    return testlib_done();
}
