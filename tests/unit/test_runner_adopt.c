/* Unit tests for the job runner's recovery (server/jobs/runner.h,
 * lb_runner_adopt), which both of its sources use: a unit of work (an
 * evaluation's run, a rollout's sample) whose recorded start_task exists
 * takes that task through its source's start, once, and is answered
 * with what the start answered; one whose task does not exist is told to
 * start anew (LB_E_NOTFOUND) without its start being called. */
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "jobs/runner.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char db_path[4096];

static lb_store *open_fresh(const char *name) { return tw_store_fresh(name, db_path, sizeof db_path); }

/* what the fake start saw, and what it answers */
static int g_calls, g_answer;
static const void *g_unit;
static char g_task[33];

static int fake_start(lb_store *s, const lb_runner_fence *f, const void *unit, const char *task_id)
{
    g_calls++;
    g_unit = unit;
    snprintf(g_task, sizeof g_task, "%s", task_id);
    return g_answer;
}

static void reset(int answer)
{
    g_calls = 0;
    g_unit = NULL;
    g_task[0] = '\0';
    g_answer = answer;
}

TEST(a_unit_whose_task_exists_takes_it_through_its_start)
{
    lb_store *s = open_fresh("runner_adopt_exists");
    CHECK(s != NULL);
    char id[33];
    CHECK(lb_random_hex(id, sizeof id, 16) == LB_OK);
    lb_task_new t = {.id = id, .prompt = "p", .model = "m", .max_turns = 3, .timeout_s = 60};
    CHECK(lb_store_task_insert(s, &t) == LB_OK);
    lb_runner_fence f;
    memset(&f, 0, sizeof f);
    snprintf(f.id, sizeof f.id, "%s", "0123456789abcdef0123456789abcdef");
    int unit = 7;
    reset(LB_OK);
    CHECK(lb_runner_adopt(s, &f, id, fake_start, &unit, "eval", "run 7") == LB_OK);
    CHECK(g_calls == 1 && g_unit == &unit);
    CHECK_STR(g_task, id);
    /* the start's refusal (another web holds the work) is the answer */
    reset(LB_E_DENIED);
    CHECK(lb_runner_adopt(s, &f, id, fake_start, &unit, "rollout", "sample 7") == LB_E_DENIED);
    CHECK(g_calls == 1);
    lb_store_close(s);
}

TEST(a_unit_whose_task_is_missing_starts_anew)
{
    lb_store *s = open_fresh("runner_adopt_missing");
    CHECK(s != NULL);
    lb_runner_fence f;
    memset(&f, 0, sizeof f);
    snprintf(f.id, sizeof f.id, "%s", "0123456789abcdef0123456789abcdef");
    int unit = 1;
    reset(LB_OK);
    CHECK(lb_runner_adopt(s, &f, "ffffffffffffffffffffffffffffffff", fake_start, &unit, "eval", "run 1") ==
          LB_E_NOTFOUND);
    CHECK(g_calls == 0);
    lb_store_close(s);
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(a_unit_whose_task_exists_takes_it_through_its_start);
    RUN(a_unit_whose_task_is_missing_starts_anew);
    if (tw_done())
        return 1;
    return testlib_done();
}
