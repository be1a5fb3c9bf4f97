/* Unit tests for the runners' claims on evaluations and rollout groups
 * (server/store/store_claim.h, schema v11): a claim takes each active item
 * once, oldest first; a held lease keeps others out; a lapsed one goes to
 * the next claimer with a new generation, and the fence then refuses every
 * write of the old holder (start, reserve, score, finish) while the new
 * one's go through; renewal lists what is still held; a web's first claim
 * takes over its earlier process's items. Run on SQLite here and on
 * PostgreSQL by tests/integration/test_store_pg.py. */
#include "store_down_claims.h"
#include "store_down_fork_shares.h"
#include "store_down_api_sandboxes.h"
#include "store_down_tombstones.h"
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_claim.h"
#include "store/store_eval.h"
#include "store/store_rollout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char db_path[4096];

static lb_store *open_fresh(const char *name) { return tw_store_fresh(name, db_path, sizeof db_path); }

static lb_store *open_again(void)
{
    lb_store *s = NULL;
    return lb_store_open(db_path, &s) == LB_OK ? s : NULL;
}

#define LEASE 15000
#define A "web-a/100-1"
#define B "web-b/200-2"

/* an eval of two pending runs (rows a and b, llm mode), made at created */
static int insert_eval(lb_store *s, char id[33], int64_t created)
{
    if (lb_random_hex(id, 33, 16) != LB_OK)
        return LB_E_INTERNAL;
    lb_eval_rec e;
    memset(&e, 0, sizeof e);
    snprintf(e.id, sizeof e.id, "%s", id);
    e.name = "set";
    e.options_json = "{\"mode\":\"llm\"}";
    e.dataset = "/tmp/x.jsonl";
    e.created_ms = created;
    lb_eval_run_new runs[] = {{0, "a", "llm", 0, "pending", NULL}, {1, "b", "llm", 0, "pending", NULL}};
    return lb_store_eval_insert(s, &e, runs, 2);
}

/* the rid of eval id's first pending run, -1 when none */
static int64_t first_pending(lb_store *s, const char *id, char *start_task)
{
    lb_eval_run *v = NULL;
    size_t n = 0;
    int64_t rid = -1;
    if (lb_store_eval_runs(s, id, LB_RUNS_PENDING, 0, 10, &v, &n) == LB_OK && n) {
        rid = v[0].rid;
        if (start_task)
            snprintf(start_task, 33, "%s", v[0].start_task);
    }
    lb_eval_runs_free(v, n);
    return rid;
}

static void fence_of(lb_runner_fence *f, const char *id, const char *owner, int64_t gen)
{
    memset(f, 0, sizeof *f);
    snprintf(f->id, sizeof f->id, "%s", id);
    snprintf(f->owner, sizeof f->owner, "%s", owner);
    f->gen = gen;
}

static void expire(const char *table, const char *id)
{
    char sql[200];
    snprintf(sql, sizeof sql, "UPDATE %s SET runner_expires_ms = 1000 WHERE id = '%s'", table, id);
    CHECK(tw_exec(db_path, sql) == LB_OK);
}

static int has(const lb_runner_claim *c, size_t n, const char *id, int64_t gen)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(c[i].id, id) && (gen < 0 || c[i].gen == gen))
            return 1;
    return 0;
}

TEST(a_claim_takes_each_active_eval_once_oldest_first)
{
    lb_store *s = open_fresh("claim");
    CHECK(s != NULL);
    char e1[33], e2[33], e3[33], done[33];
    CHECK(insert_eval(s, e2, 2000) == LB_OK && insert_eval(s, e1, 1000) == LB_OK && insert_eval(s, e3, 3000) == LB_OK);
    CHECK(insert_eval(s, done, 500) == LB_OK);
    CHECK(lb_store_eval_finish(s, NULL, done, "failed", "x", NULL, 0, 0) == LB_OK); /* final: nobody's work */
    lb_runner_claim c[8];
    size_t n = 9;
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, A, NULL, LEASE, 2, c, &n) == LB_OK && n == 2);
    CHECK(has(c, n, e1, 1) && has(c, n, e2, 1)); /* the oldest two (RETURNING's own order is no order) */
    /* held: another web gets only what is left, and nothing more after */
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, B, NULL, LEASE, 8, c, &n) == LB_OK && n == 1);
    CHECK(n == 1 && !strcmp(c[0].id, e3));
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, B, NULL, LEASE, 8, c, &n) == LB_OK && n == 0);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, A, NULL, LEASE, 8, c, &n) == LB_OK && n == 0);
    /* renewal lists each web's own, gens unchanged */
    CHECK(lb_store_runner_renew(s, LB_RUNNER_EVALS, A, LEASE, 8, c, &n) == LB_OK && n == 2);
    CHECK(has(c, n, e1, 1) && has(c, n, e2, 1) && !has(c, n, e3, -1));
    CHECK(lb_store_runner_renew(s, LB_RUNNER_EVALS, B, LEASE, 8, c, &n) == LB_OK && n == 1 && has(c, n, e3, 1));
    /* an eval that ends is no longer renewed (nor claimable) */
    lb_runner_fence f;
    fence_of(&f, e1, A, 1);
    CHECK(lb_store_eval_finish(s, &f, e1, "succeeded", NULL, "{}", 0, 0) == LB_OK);
    CHECK(lb_store_runner_renew(s, LB_RUNNER_EVALS, A, LEASE, 8, c, &n) == LB_OK && n == 1 && has(c, n, e2, 1));
    /* bad arguments */
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, "a b", NULL, LEASE, 8, c, &n) == LB_E_INVAL);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, "", NULL, LEASE, 8, c, &n) == LB_E_INVAL);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, A, NULL, 999, 8, c, &n) == LB_E_INVAL);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, A, NULL, LEASE, 0, c, &n) == LB_E_INVAL);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, A, NULL, LEASE, LB_RUNNER_CLAIM_MAX + 1, c, &n) == LB_E_INVAL);
    CHECK(lb_store_runner_claim(s, (lb_runner_kind)7, A, NULL, LEASE, 8, c, &n) == LB_E_INVAL);
    CHECK(lb_store_runner_renew(s, LB_RUNNER_EVALS, A, 10, 8, c, &n) == LB_E_INVAL);
    CHECK(lb_runner_owner_valid("n1/123-456") && !lb_runner_owner_valid("n1 x") && !lb_runner_owner_valid(NULL));
    lb_store_close(s);
}

TEST(a_lapsed_claim_moves_and_fences_out_the_old_holder)
{
    lb_store *s = open_fresh("lapse");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_eval(s, id, 1000) == LB_OK);
    lb_runner_claim c[4];
    size_t n = 0;
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, A, NULL, LEASE, 4, c, &n) == LB_OK && n == 1 && c[0].gen == 1);
    lb_runner_fence fa, fb;
    fence_of(&fa, id, A, 1);
    CHECK(lb_store_eval_set_running(s, &fa, id) == LB_OK);
    /* A reserves and starts run a; reserves run b, then stalls past its lease */
    int64_t ra = first_pending(s, id, NULL);
    CHECK(lb_store_eval_run_reserve(s, &fa, ra, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") == LB_OK);
    CHECK(lb_store_eval_run_start(s, &fa, ra, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") == LB_OK);
    char start[33];
    int64_t rb = first_pending(s, id, start);
    CHECK(rb > 0 && rb != ra && start[0] == '\0');
    CHECK(lb_store_eval_run_reserve(s, &fa, rb, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") == LB_OK);
    CHECK(first_pending(s, id, start) == rb);
    CHECK_STR(start, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"); /* the name the next holder finds */
    expire("evals", id);
    /* a lapsed lease fences at once, before anyone else claims */
    CHECK(lb_store_eval_run_move(s, &fa, ra, "running", "scoring", NULL) == LB_E_DENIED);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, B, NULL, LEASE, 4, c, &n) == LB_OK && n == 1);
    CHECK(n == 1 && !strcmp(c[0].id, id) && c[0].gen == 2);
    fence_of(&fb, id, B, 2);
    /* every write of A is refused and changes nothing */
    CHECK(lb_store_eval_run_start(s, &fa, rb, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") == LB_E_DENIED);
    CHECK(lb_store_eval_run_reserve(s, &fa, rb, "cccccccccccccccccccccccccccccccc") == LB_E_DENIED);
    CHECK(lb_store_eval_run_move(s, &fa, ra, "running", "scoring", NULL) == LB_E_DENIED);
    CHECK(lb_store_eval_finish(s, &fa, id, "failed", "x", NULL, 0, 0) == LB_E_DENIED);
    CHECK(lb_store_runner_release(s, LB_RUNNER_EVALS, &fa) == LB_E_DENIED);
    CHECK(lb_store_runner_renew(s, LB_RUNNER_EVALS, A, LEASE, 4, c, &n) == LB_OK && n == 0);
    char t[33], st[33];
    CHECK(lb_store_eval_run_task(s, rb, t, st) == LB_OK && t[0] == '\0');
    CHECK_STR(st, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    /* B adopts what A reserved: run b starts with A's task; never twice */
    CHECK(lb_store_eval_run_start(s, &fb, rb, "dddddddddddddddddddddddddddddddd") == LB_E_EXISTS); /* not its name */
    CHECK(lb_store_eval_run_start(s, &fb, rb, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") == LB_OK);
    CHECK(lb_store_eval_run_start(s, &fb, rb, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") == LB_E_EXISTS);
    CHECK(lb_store_eval_run_task(s, rb, t, st) == LB_OK && st[0] == '\0');
    CHECK_STR(t, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    CHECK(lb_store_eval_run_move(s, &fb, ra, "running", "scoring", NULL) == LB_OK);
    CHECK(lb_store_eval_run_move(s, &fb, ra, "scoring", "done", "{\"id\":\"a\",\"status\":\"ok\"}") == LB_OK);
    CHECK(lb_store_eval_run_move(s, &fa, rb, "running", "scoring", NULL) == LB_E_DENIED);
    lb_eval_counts k;
    CHECK(lb_store_eval_counts(s, id, &k) == LB_OK && k.done == 1 && k.running == 1 && k.pending == 0);
    /* a cancelled eval with a run still going stays B's work until it is scored */
    CHECK(lb_store_eval_cancel(s, id) == LB_OK);
    CHECK(lb_store_runner_renew(s, LB_RUNNER_EVALS, B, LEASE, 4, c, &n) == LB_OK && n == 1);
    CHECK(lb_store_eval_run_move(s, &fb, rb, "running", "scoring", NULL) == LB_OK);
    CHECK(lb_store_eval_run_move(s, &fb, rb, "scoring", "done", "{\"id\":\"b\",\"status\":\"ok\"}") == LB_OK);
    CHECK(lb_store_runner_renew(s, LB_RUNNER_EVALS, B, LEASE, 4, c, &n) == LB_OK && n == 0);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, A, NULL, LEASE, 4, c, &n) == LB_OK && n == 0);
    /* release: only by the holder, then claimable again with a new gen */
    char id2[33];
    CHECK(insert_eval(s, id2, 5000) == LB_OK);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, B, NULL, LEASE, 4, c, &n) == LB_OK && n == 1 && c[0].gen == 1);
    fence_of(&fb, id2, B, 1);
    fence_of(&fa, id2, A, 1);
    CHECK(lb_store_runner_release(s, LB_RUNNER_EVALS, &fa) == LB_E_DENIED);
    CHECK(lb_store_runner_release(s, LB_RUNNER_EVALS, &fb) == LB_OK);
    CHECK(lb_store_eval_set_running(s, &fb, id2) == LB_E_DENIED);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, A, NULL, LEASE, 4, c, &n) == LB_OK && n == 1 && c[0].gen == 2);
    lb_store_close(s);
}

TEST(a_webs_first_claim_takes_over_its_earlier_process)
{
    lb_store *s = open_fresh("takeover");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_eval(s, id, 1000) == LB_OK);
    lb_runner_claim c[4];
    size_t n = 0;
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, "n1/10-1", NULL, LEASE, 4, c, &n) == LB_OK && n == 1);
    /* another web's takeover, or none: the lease holds */
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, "n2/20-2", "n2/", LEASE, 4, c, &n) == LB_OK && n == 0);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, "n1/30-3", NULL, LEASE, 4, c, &n) == LB_OK && n == 0);
    /* a prefix of the name is not the name */
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, "n/40-4", "n/", LEASE, 4, c, &n) == LB_OK && n == 0);
    /* the same web restarted: its first claim takes it at once */
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, "n1/30-3", "n1/", LEASE, 4, c, &n) == LB_OK && n == 1);
    CHECK(n == 1 && c[0].gen == 2);
    lb_runner_fence old;
    fence_of(&old, id, "n1/10-1", 1);
    CHECK(lb_store_eval_set_running(s, &old, id) == LB_E_DENIED);
    /* its own claim is not taken again by itself */
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, "n1/30-3", "n1/", LEASE, 4, c, &n) == LB_OK && n == 0);
    lb_store_close(s);
}

static int insert_group(lb_store *s, char id[33], int n, int64_t created)
{
    if (lb_random_hex(id, 33, 16) != LB_OK)
        return LB_E_INTERNAL;
    lb_rollout_rec g;
    memset(&g, 0, sizeof g);
    snprintf(g.id, sizeof g.id, "%s", id);
    g.n = n;
    g.request_json = "{\"prompt\":\"p\"}";
    g.created_ms = created;
    return lb_store_rollout_insert(s, &g);
}

TEST(rollout_groups_are_claimed_and_fenced_the_same_way)
{
    lb_store *s = open_fresh("rollouts");
    CHECK(s != NULL);
    char g1[33], g2[33];
    CHECK(insert_group(s, g1, 2, 1000) == LB_OK && insert_group(s, g2, 1, 2000) == LB_OK);
    lb_runner_claim c[4];
    size_t n = 0;
    CHECK(lb_store_runner_claim(s, LB_RUNNER_ROLLOUTS, A, NULL, LEASE, 1, c, &n) == LB_OK && n == 1);
    CHECK(n == 1 && !strcmp(c[0].id, g1) && c[0].gen == 1);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_ROLLOUTS, B, NULL, LEASE, 4, c, &n) == LB_OK && n == 1);
    CHECK(n == 1 && !strcmp(c[0].id, g2));
    /* an eval's claim and a group's are apart */
    char e[33];
    CHECK(insert_eval(s, e, 500) == LB_OK);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_ROLLOUTS, A, NULL, LEASE, 4, c, &n) == LB_OK && n == 0);
    lb_runner_fence fa, fb;
    fence_of(&fa, g1, A, 1);
    CHECK(lb_store_rollout_sample_reserve(s, &fa, g1, 0, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") == LB_OK);
    CHECK(lb_store_rollout_sample_start(s, &fa, g1, 0, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") == LB_OK);
    CHECK(lb_store_rollout_sample_reserve(s, &fa, g1, 1, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") == LB_OK);
    lb_rollout_sample *v = NULL;
    CHECK(lb_store_rollout_samples(s, g1, &v, &n) == LB_OK && n == 2);
    CHECK(n == 2 && v[0].start_task[0] == '\0' && !strcmp(v[1].start_task, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"));
    lb_rollout_samples_free(v, n);
    expire("rollouts", g1);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_ROLLOUTS, B, NULL, LEASE, 4, c, &n) == LB_OK && n == 1 && c[0].gen == 2);
    fence_of(&fb, g1, B, 2);
    CHECK(lb_store_rollout_sample_move(s, &fa, g1, 0, "running", "scoring", NULL, 0, 0, NULL) == LB_E_DENIED);
    CHECK(lb_store_rollout_sample_start(s, &fa, g1, 1, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") == LB_E_DENIED);
    CHECK(lb_store_rollout_sample_start(s, &fb, g1, 1, "cccccccccccccccccccccccccccccccc") == LB_E_EXISTS);
    CHECK(lb_store_rollout_sample_start(s, &fb, g1, 1, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") == LB_OK); /* adopted */
    char t[33], st[33];
    CHECK(lb_store_rollout_sample_task(s, g1, 1, t, st) == LB_OK && st[0] == '\0');
    CHECK_STR(t, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    for (int i = 0; i < 2; i++) {
        CHECK(lb_store_rollout_sample_move(s, &fb, g1, i, "running", "scoring", NULL, 0, 0, NULL) == LB_OK);
        CHECK(lb_store_rollout_sample_move(s, &fa, g1, i, "scoring", "done", "ok", 1, 1, "{}") == LB_E_DENIED);
        CHECK(lb_store_rollout_sample_move(s, &fb, g1, i, "scoring", "done", "ok", 1, 1, "{}") == LB_OK);
    }
    CHECK(lb_store_rollout_finish(s, &fa, g1) == LB_E_DENIED);
    CHECK(lb_store_rollout_finish(s, &fb, g1) == LB_OK);
    CHECK(lb_store_runner_renew(s, LB_RUNNER_ROLLOUTS, B, LEASE, 4, c, &n) == LB_OK && n == 1 && has(c, n, g2, 1));
    lb_store_close(s);
}

/* A v11 database (either engine) migrates to v12: its evals and groups
 * keep their rows, unclaimed, and are claimed as new ones are. */
TEST(v11_database_migrates_to_the_claims)
{
    lb_store *s = open_fresh("v11");
    CHECK(s != NULL);
    char e[33], g[33];
    CHECK(insert_eval(s, e, 1000) == LB_OK && insert_group(s, g, 1, 1000) == LB_OK);
    lb_store_close(s);
    const char *down = LB_DOWN_V12_CLAIMS "UPDATE meta SET value = '11' WHERE key = 'schema_version'";
    CHECK(tw_exec(db_path, lb_down_v15_fork_shares()) == LB_OK);
    CHECK(tw_exec(db_path, LB_DOWN_V14_API_SANDBOXES) == LB_OK);
    CHECK(tw_exec(db_path, lb_down_v13_tombstones()) == LB_OK);
    CHECK(tw_exec(db_path, down) == LB_OK);
    s = open_again();
    CHECK(s != NULL);
    lb_runner_claim c[4];
    size_t n = 0;
    CHECK(lb_store_runner_claim(s, LB_RUNNER_EVALS, A, NULL, LEASE, 4, c, &n) == LB_OK && n == 1);
    CHECK(n == 1 && !strcmp(c[0].id, e) && c[0].gen == 1);
    CHECK(lb_store_runner_claim(s, LB_RUNNER_ROLLOUTS, A, NULL, LEASE, 4, c, &n) == LB_OK && n == 1);
    CHECK(n == 1 && !strcmp(c[0].id, g) && c[0].gen == 1);
    char start[33] = "x";
    CHECK(first_pending(s, e, start) > 0 && start[0] == '\0');
    lb_store_close(s);
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(a_claim_takes_each_active_eval_once_oldest_first);
    RUN(a_lapsed_claim_moves_and_fences_out_the_old_holder);
    RUN(a_webs_first_claim_takes_over_its_earlier_process);
    RUN(rollout_groups_are_claimed_and_fenced_the_same_way);
    RUN(v11_database_migrates_to_the_claims);
    if (tw_done())
        return 1;
    return testlib_done();
}
