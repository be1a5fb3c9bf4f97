/* Unit tests for the web's side of evaluations: the llm-mode prompt
 * (jobs/eval_prompt.h), the slots kept for people (lb_eval_reserve_slots)
 * and the stored options (lb_eval_opts_parse, jobs/eval_runner.h). */
#include "testlib.h"

#include "common/status.h"
#include "eval/dataset.h"
#include "jobs/eval_prompt.h"
#include "jobs/eval_runner.h"

#include <stdlib.h>
#include <string.h>

TEST(llm_prompt_is_the_problem_alone_for_a_plain_row)
{
    lb_eval_file f = {.name = "data.csv", .data = (unsigned char *)"a,b\n", .len = 4};
    lb_eval_row row = {.id = "r", .domain = "math", .problem = "What is 2+2?", .files = &f, .nfiles = 1};
    char *p = lb_eval_llm_prompt(&row);
    CHECK(p != NULL);
    CHECK_STR(p, "What is 2+2?");
    free(p);
}

TEST(llm_prompt_puts_documents_inline_under_headers)
{
    char *docs[] = {"first doc", "second doc"};
    lb_eval_row row = {.id = "r", .domain = "long_context", .problem = "Compare them.", .documents = docs,
                       .ndocuments = 2};
    char *p = lb_eval_llm_prompt(&row);
    CHECK(p != NULL);
    CHECK_STR(p, "Compare them.\n\n=== FILE: document_1.txt ===\nfirst doc\n\n=== FILE: document_2.txt ===\nsecond doc");
    free(p);
}

TEST(llm_prompt_takes_text_files_of_a_long_context_row_without_documents)
{
    lb_eval_file f[] = {{.name = "a.txt", .data = (unsigned char *)"alpha", .len = 5},
                        {.name = "b.bin", .data = (unsigned char *)"\0\1\2", .len = 3},
                        {.name = "c.md", .data = (unsigned char *)"\xff\xfe", .len = 2}};
    lb_eval_row row = {.id = "r", .domain = "long_context", .problem = "Q", .files = f, .nfiles = 3};
    char *p = lb_eval_llm_prompt(&row);
    CHECK(p != NULL);
    /* binary and invalid UTF-8 files cannot go into a prompt */
    CHECK_STR(p, "Q\n\n=== FILE: a.txt ===\nalpha");
    free(p);
}

TEST(llm_prompt_over_its_cap_is_refused)
{
    size_t n = LB_EVAL_PROMPT_MAX + 1;
    char *big = malloc(n + 1);
    CHECK(big != NULL);
    memset(big, 'x', n);
    big[n] = '\0';
    char *docs[] = {big};
    lb_eval_row row = {.id = "r", .domain = "long_context", .problem = "Q", .documents = docs, .ndocuments = 1};
    CHECK(lb_eval_llm_prompt(&row) == NULL);
    free(big);
}

TEST(reserve_is_a_quarter_at_least_two_and_leaves_one)
{
    CHECK(lb_eval_reserve_slots(-1, 16) == 4);
    CHECK(lb_eval_reserve_slots(-1, 64) == 16);
    CHECK(lb_eval_reserve_slots(-1, 4) == 2);
    CHECK(lb_eval_reserve_slots(-1, 2) == 1); /* never all: an eval can run one */
    CHECK(lb_eval_reserve_slots(-1, 1) == 0);
    CHECK(lb_eval_reserve_slots(0, 16) == 0);
    CHECK(lb_eval_reserve_slots(5, 16) == 5);
    CHECK(lb_eval_reserve_slots(100, 16) == 15);
}

TEST(options_parse_and_refuse_damage)
{
    lb_eval_opts o;
    CHECK(lb_eval_opts_parse("{\"mode\":\"both\",\"model\":\"m\",\"repeats\":3,\"concurrency\":8,\"layout\":\"llmbox\","
                             "\"max_tokens\":512,\"judge_model\":\"j\",\"judge_votes\":3}",
                             &o) == LB_OK);
    CHECK(o.llm && o.sandbox && o.repeats == 3 && o.concurrency == 8 && o.max_tokens == 512 && o.judge_votes == 3);
    CHECK_STR(o.layout, "llmbox");
    CHECK_STR(o.judge_model, "j");
    CHECK(o.token_budget == -1 && o.max_turns == 0 && o.timeout_s == 0);
    CHECK(lb_eval_opts_parse("{\"mode\":\"llm\"}", &o) == LB_OK);
    CHECK(o.llm && !o.sandbox && o.repeats == 1 && o.concurrency == 1);
    CHECK_STR(o.layout, "official");
    CHECK(lb_eval_opts_parse("{\"mode\":\"fast\"}", &o) == LB_E_INVAL);
    CHECK(lb_eval_opts_parse("{\"mode\":\"llm\",\"repeats\":65}", &o) == LB_E_INVAL);
    CHECK(lb_eval_opts_parse("{\"mode\":\"llm\",\"model\":7}", &o) == LB_E_INVAL);
    CHECK(lb_eval_opts_parse("[]", &o) == LB_E_INVAL);
    CHECK(lb_eval_opts_parse("{", &o) == LB_E_INVAL);
    CHECK(lb_eval_opts_parse(NULL, &o) == LB_E_INVAL);
}

int main(void)
{
    RUN(llm_prompt_is_the_problem_alone_for_a_plain_row);
    RUN(llm_prompt_puts_documents_inline_under_headers);
    RUN(llm_prompt_takes_text_files_of_a_long_context_row_without_documents);
    RUN(llm_prompt_over_its_cap_is_refused);
    RUN(reserve_is_a_quarter_at_least_two_and_leaves_one);
    RUN(options_parse_and_refuse_damage);
    return testlib_done();
}
