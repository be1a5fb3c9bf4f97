/* common/task.c: the status names, finality, and the limits a task gets. */
#include "testlib.h"

#include "common/config.h"
#include "common/task.h"

#include <stdlib.h>

TEST(status_names_round_trip)
{
    for (int i = 0; i < LB_TASK_N_STATUS; i++)
        CHECK(lb_task_status_parse(lb_task_status_name((lb_task_status)i)) == (lb_task_status)i);
    CHECK_STR(lb_task_status_name(LB_TASK_SUCCEEDED), "succeeded");
    CHECK_STR(lb_task_status_name(LB_TASK_QUEUED), "queued");
    CHECK_STR(lb_task_status_name(LB_TASK_UNKNOWN), "unknown");
    CHECK_STR(lb_task_status_name((lb_task_status)LB_TASK_N_STATUS), "unknown");
    CHECK(lb_task_status_parse(NULL) == LB_TASK_UNKNOWN);
    CHECK(lb_task_status_parse("") == LB_TASK_UNKNOWN);
    CHECK(lb_task_status_parse("Succeeded") == LB_TASK_UNKNOWN);
    CHECK(lb_task_status_parse("cancelling") == LB_TASK_UNKNOWN);
}

TEST(final_statuses)
{
    CHECK(!lb_task_status_is_final(LB_TASK_QUEUED));
    CHECK(!lb_task_status_is_final(LB_TASK_RUNNING));
    CHECK(lb_task_status_is_final(LB_TASK_SUCCEEDED));
    CHECK(lb_task_status_is_final(LB_TASK_FAILED));
    CHECK(lb_task_status_is_final(LB_TASK_CANCELLED));
    CHECK(!lb_task_status_is_final(LB_TASK_UNKNOWN));
}

static lb_config *cfg_of(void)
{
    static lb_config c; /* 485 KB: not on the stack */
    memset(&c, 0, sizeof c);
    c.max_turns_default = 100;
    c.max_turns_limit = 1000;
    c.token_budget = 65536;
    c.token_budget_max = 1048576;
    c.task_timeout_s = 3600;
    return &c;
}

TEST(limits_default_when_not_asked)
{
    lb_config *c = cfg_of();
    lb_task_limits l;
    lb_task_request none = {.max_turns = 0, .token_budget = -1, .timeout_s = 0};
    lb_task_limits_of(&none, NULL, c, &l);
    CHECK(l.max_turns == 100 && l.token_budget == 65536 && l.timeout_s == 3600);
    lb_task_limits_of(NULL, NULL, c, &l);
    CHECK(l.max_turns == 100 && l.token_budget == 65536 && l.timeout_s == 3600);
    c->token_budget = 0; /* the service's budget is "none" */
    lb_task_limits_of(&none, NULL, c, &l);
    CHECK(l.token_budget == 0);
}

TEST(limits_keep_what_was_asked_within_todays_maxima)
{
    lb_config *c = cfg_of();
    lb_task_limits l;
    lb_task_request asked = {.max_turns = 7, .token_budget = 5000, .timeout_s = 60};
    lb_task_limits_of(&asked, NULL, c, &l);
    CHECK(l.max_turns == 7 && l.token_budget == 5000 && l.timeout_s == 60);
    asked.token_budget = 0; /* asked for no budget */
    lb_task_limits_of(&asked, NULL, c, &l);
    CHECK(l.token_budget == 0);
    /* the operator lowered the maxima after the task was stored */
    asked = (lb_task_request){.max_turns = 900, .token_budget = 2000000, .timeout_s = 7200};
    c->max_turns_limit = 50;
    c->max_turns_default = 80;
    c->token_budget_max = 100000;
    c->task_timeout_s = 600;
    lb_task_limits_of(&asked, NULL, c, &l);
    CHECK(l.max_turns == 50 && l.token_budget == 100000 && l.timeout_s == 600);
    lb_task_request none = {.max_turns = 0, .token_budget = -1, .timeout_s = 0};
    lb_task_limits_of(&none, NULL, c, &l);
    CHECK(l.max_turns == 50 && l.timeout_s == 600);
}

TEST(request_of_a_stored_task)
{
    lb_task t;
    memset(&t, 0, sizeof t);
    t.max_turns = 5;
    t.token_budget = -1; /* stored before limits existed */
    t.timeout_s = -1;
    lb_task_request q;
    lb_task_request_of(&t, &q);
    CHECK(q.max_turns == 5 && q.token_budget == -1 && q.timeout_s == 0);
    t.timeout_s = 1ll << 40;
    lb_task_request_of(&t, &q);
    CHECK(q.timeout_s == 0x7fffffff);
    t.prompt = strdup("p");
    t.answer = strdup("a");
    lb_task_free(&t);
    CHECK(t.prompt == NULL && t.answer == NULL);
    lb_task_free(NULL);
}

int main(void)
{
    RUN(status_names_round_trip);
    RUN(final_statuses);
    RUN(limits_default_when_not_asked);
    RUN(limits_keep_what_was_asked_within_todays_maxima);
    RUN(request_of_a_stored_task);
    return testlib_done();
}
