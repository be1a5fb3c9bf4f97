/* The task options parser (common/task_opts.c): every field, its values,
 * and each way a stored value can be wrong, refused with a sentence that
 * names the field. */
#include "testlib.h"

#include "common/status.h"
#include "common/task_opts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static lb_task_opts o;
static char err[400];

static int parse(const char *json)
{
    err[0] = '\0';
    return lb_task_opts_parse(json, &o, err, sizeof err);
}

TEST(none_is_the_defaults)
{
    CHECK(parse(NULL) == LB_OK);
    CHECK(o.mode == LB_RUN_SANDBOX && o.layout == LB_LAYOUT_LLMBOX && !o.answer_file &&
          o.tool_names == LB_TOOL_NAMES_DEFAULT && o.max_tokens == 0);
    CHECK(parse("{}") == LB_OK && o.mode == LB_RUN_SANDBOX);
}

TEST(every_field)
{
    CHECK(parse("{\"mode\":\"llm\",\"layout\":\"official\",\"answer_file\":true,\"tool_names\":\"official\","
                "\"max_tokens\":2048}") == LB_OK);
    CHECK(o.mode == LB_RUN_LLM && o.layout == LB_LAYOUT_OFFICIAL && o.answer_file &&
          o.tool_names == LB_TOOL_NAMES_OFFICIAL && o.max_tokens == 2048);
    CHECK(parse("{\"answer_file\":\"1\",\"max_tokens\":\"64\",\"tool_names\":\"llmbox\"}") == LB_OK);
    CHECK(o.answer_file && o.max_tokens == 64 && o.tool_names == LB_TOOL_NAMES_LLMBOX);
    CHECK(parse("{\"answer_file\":false}") == LB_OK && !o.answer_file);
    CHECK(parse("{\"answer_file\":\"0\"}") == LB_OK && !o.answer_file);
    CHECK(parse("{}") == LB_OK && o.capture_tokens == -1); /* the model's setting */
    CHECK(parse("{\"capture_tokens\":true}") == LB_OK && o.capture_tokens == 1);
    CHECK(parse("{\"capture_tokens\":\"0\"}") == LB_OK && o.capture_tokens == 0);
    CHECK(parse("{\"capture_tokens\":\"yes\"}") == LB_E_INVAL && strstr(err, "capture_tokens must be true, false"));
    CHECK(o.capture_tokens == -1);
    CHECK(parse("{\"capture_tokens\":[true]}") == LB_E_INVAL && strstr(err, "capture_tokens must be a string or a boolean"));
    CHECK_STR(lb_layout_input_dir(LB_LAYOUT_OFFICIAL), "/testbed/documents");
    CHECK_STR(lb_layout_answer_file(LB_LAYOUT_OFFICIAL), "/testbed/answer.txt");
    CHECK_STR(lb_layout_input_dir(LB_LAYOUT_LLMBOX), "/testbed/input");
    CHECK_STR(lb_layout_answer_file(LB_LAYOUT_LLMBOX), "/testbed/output/answer.txt");
}

/* json, a word the sentence must contain */
static const char *const bad[][2] = {
    {"{\"mode\":\"fast\"}", "mode must be \"sandbox\" or \"llm\", not \"fast\""},
    {"{\"colour\":\"red\"}", "unknown task option \"colour\""},
    {"{\"colour\":[1]}", "unknown task option \"colour\""},
    {"{\"layout\":\"theirs\"}", "layout must be \"llmbox\" or \"official\""},
    {"{\"layout\":3}", "layout must be \"llmbox\" or \"official\", not \"3\""},
    {"{\"tool_names\":\"openai\"}", "tool_names must be"},
    {"{\"answer_file\":\"yes\"}", "answer_file must be true, false"},
    {"{\"answer_file\":null}", "answer_file must be a string or a boolean"},
    {"{\"max_tokens\":0}", "max_tokens must be a whole number from 1"},
    {"{\"max_tokens\":1.5}", "max_tokens must be a string or a whole number"},
    {"{\"max_tokens\":-3}", "max_tokens must be a whole number"},
    {"{\"max_tokens\":1e300}", "max_tokens must be a string or a whole number"},
    {"{\"max_tokens\":\"12abc\"}", "max_tokens must be a whole number"},
    {"{\"mode\":\"llm\"", "not a JSON object"},
    {"[\"mode\"]", "not a JSON object"},
    {"\"llm\"", "not a JSON object"},
    {"{\"mode\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}", "too long"},
};

TEST(sampling)
{
    CHECK(parse("{}") == LB_OK && isnan(o.temperature) && isnan(o.top_p) && o.top_k == -1); /* the model's */
    CHECK(parse("{\"temperature\":0.6180339887498949,\"top_p\":0.95,\"top_k\":40}") == LB_OK);
    CHECK(o.temperature == 0.6180339887498949 && o.top_p == 0.95 && o.top_k == 40);
    CHECK(parse("{\"temperature\":0,\"top_p\":1}") == LB_OK && o.temperature == 0 && o.top_p == 1);
    CHECK(parse("{\"temperature\":\"0.7\"}") == LB_OK && o.temperature == 0.7);
    CHECK(parse("{\"temperature\":2.5}") == LB_E_INVAL && strstr(err, "temperature must be a number from 0 to 2"));
    CHECK(isnan(o.temperature));
    CHECK(parse("{\"top_p\":0}") == LB_E_INVAL && strstr(err, "top_p must be a number above 0"));
    CHECK(parse("{\"top_k\":1.5}") == LB_E_INVAL && strstr(err, "top_k must be"));
    CHECK(parse("{\"top_k\":-3}") == LB_E_INVAL && strstr(err, "top_k must be a whole number from 0"));
    CHECK(parse("{\"temperature\":\"hot\"}") == LB_E_INVAL && strstr(err, "temperature must be a number"));
}

TEST(bad_options_name_the_field)
{
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse(bad[i][0]);
        CHECK(rc == LB_E_INVAL);
        if (!strstr(err, bad[i][1]))
            printf("  case %zu: %s -> %s\n", i, bad[i][0], err);
        CHECK(strstr(err, bad[i][1]) != NULL);
        /* nothing half-set */
        CHECK(o.mode == LB_RUN_SANDBOX && o.max_tokens == 0 && !o.answer_file);
    }
    /* a good field before a bad one is not kept either */
    CHECK(parse("{\"mode\":\"llm\",\"max_tokens\":\"x\"}") == LB_E_INVAL && o.mode == LB_RUN_SANDBOX);
}

TEST(caps)
{
    size_t n = LB_TASK_OPTS_MAX_JSON + 10;
    char *big = malloc(n + 1);
    CHECK(big != NULL);
    if (!big)
        return;
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = '\0';
    CHECK(parse(big) == LB_E_INVAL && strstr(err, "larger than"));
    free(big);
    /* a control character in a shown value is not echoed */
    CHECK(parse("{\"mode\":\"a\\u0001b\"}") == LB_E_INVAL && strstr(err, "\"a?b\""));
}

TEST(one_option_as_text)
{
    lb_task_opts_default(&o);
    CHECK(lb_task_opts_set(&o, "mode", "llm", err, sizeof err) == LB_OK && o.mode == LB_RUN_LLM);
    CHECK(lb_task_opts_set(&o, "max_tokens", "10000001", err, sizeof err) == LB_E_INVAL);
    CHECK(lb_task_opts_set(&o, "max_tokens", "10000000", err, sizeof err) == LB_OK && o.max_tokens == 10000000);
    CHECK(lb_task_opts_set(&o, "speed", "1", err, sizeof err) == LB_E_INVAL && strstr(err, "speed"));
}

TEST(system_prompt_and_tools)
{
    CHECK(parse("{\"system_prompt\":\"Be {input_dir}.\",\"tools\":[\"bash\",\"file_editor\"]}") == LB_OK);
    CHECK_STR(o.system_prompt, "Be {input_dir}.");
    CHECK(o.n_tools == 2);
    CHECK_STR(o.tools[0], "bash");
    CHECK_STR(o.tools[1], "file_editor");
    CHECK(parse("{\"system_prompt\":\"\"}") == LB_E_INVAL && strstr(err, "system_prompt"));
    CHECK(parse("{\"system_prompt\":7}") == LB_E_INVAL && strstr(err, "system_prompt"));
    CHECK(parse("{\"tools\":[]}") == LB_E_INVAL && strstr(err, "tools"));
    CHECK(parse("{\"tools\":\"bash\"}") == LB_E_INVAL && strstr(err, "tools"));
    CHECK(parse("{\"tools\":[\"Bash\"]}") == LB_E_INVAL && strstr(err, "a-z"));
    CHECK(parse("{\"tools\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\","
                "\"m\",\"n\",\"o\",\"p\",\"q\"]}") == LB_E_INVAL);
    /* a refused option leaves the defaults */
    CHECK(o.n_tools == 0 && !o.system_prompt[0]);
    char *big = malloc(LB_TASK_OPTS_SYSTEM_MAX + 64);
    CHECK(big != NULL);
    int n = snprintf(big, 32, "{\"system_prompt\":\"");
    memset(big + n, 'x', LB_TASK_OPTS_SYSTEM_MAX + 1);
    snprintf(big + n + LB_TASK_OPTS_SYSTEM_MAX + 1, 8, "\"}");
    CHECK(parse(big) == LB_E_INVAL && strstr(err, "system_prompt"));
    free(big);
}

/* An official benchmark folder's directories as task options: the answer
 * file follows output_dir, the inputs input_dir; a directory outside the
 * folders a model may write, or not clean, is refused naming the option. */
TEST(explicit_directories)
{
    char buf[LB_TASK_OPTS_DIR_MAX + 16];
    CHECK(parse("{}") == LB_OK && o.finish_answer == 1 && !o.verbatim_prompts);
    CHECK_STR(lb_task_opts_input_dir(&o), "/testbed/input");
    CHECK_STR(lb_task_opts_answer_file(&o, buf, sizeof buf), "/testbed/output/answer.txt");
    CHECK(parse("{\"layout\":\"official\"}") == LB_OK);
    CHECK_STR(lb_task_opts_answer_file(&o, buf, sizeof buf), "/testbed/answer.txt");
    CHECK(parse("{\"input_dir\":\"/testbed/docs\",\"output_dir\":\"/tmp/out\",\"working_dir\":\"/testbed\","
                "\"verbatim_prompts\":true,\"finish_answer\":false}") == LB_OK);
    CHECK_STR(lb_task_opts_input_dir(&o), "/testbed/docs");
    CHECK_STR(lb_task_opts_answer_file(&o, buf, sizeof buf), "/tmp/out/answer.txt");
    CHECK(o.verbatim_prompts == 1 && o.finish_answer == 0);
    static const char *const refused[] = {"relative", "/proc/self", "/testbed/../etc", "/testbed//x", "/testbed/",
                                      "/etc", "/", "/testbed/a b", "/testbed/$(id)", "/testbed/./x",
                                      "/testbed/input/sub", "/sys", "/dev/shm", "/usr/bin"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char j[300];
        snprintf(j, sizeof j, "{\"input_dir\":\"%s\"}", refused[i]);
        CHECK(parse(j) == LB_E_INVAL && strstr(err, "input_dir"));
        CHECK(!o.input_dir[0]); /* the defaults are left */
    }
    CHECK(parse("{\"working_dir\":\"/tmp\"}") == LB_E_INVAL && strstr(err, "/testbed"));
    CHECK(parse("{\"output_dir\":7}") == LB_E_INVAL && strstr(err, "output_dir"));
    CHECK(parse("{\"finish_answer\":\"maybe\"}") == LB_E_INVAL && strstr(err, "finish_answer"));
    char longd[LB_TASK_OPTS_DIR_MAX + 40] = "/testbed/";
    memset(longd + 9, 'a', LB_TASK_OPTS_DIR_MAX);
    longd[LB_TASK_OPTS_DIR_MAX + 9] = '\0';
    CHECK(lb_sandbox_dir_problem(longd) != NULL);
    CHECK(lb_sandbox_dir_problem("/testbed") == NULL && lb_sandbox_dir_problem("/tmp/x-1.2_b") == NULL);
}

/* A task whose options are only its MCP servers takes follow-ups; any
 * other options (an evaluation's run, a rollout's sample) make a task of
 * one round, whose agent keeps no rounds/ copies. */
TEST(only_mcp_takes_followups)
{
    CHECK(lb_task_opts_only_mcp("{\"mcp\":[\"files\"]}"));
    CHECK(!lb_task_opts_only_mcp(NULL) && !lb_task_opts_only_mcp("") && !lb_task_opts_only_mcp("{}"));
    CHECK(!lb_task_opts_only_mcp("{\"mcp\":[\"files\"],\"mode\":\"sandbox\"}"));
    CHECK(!lb_task_opts_only_mcp("{\"capture_tokens\":true}"));
    CHECK(!lb_task_opts_only_mcp("[\"mcp\"]") && !lb_task_opts_only_mcp("{\"mcp\":") &&
          !lb_task_opts_only_mcp("\"mcp\""));
}

int main(void)
{
    RUN(none_is_the_defaults);
    RUN(every_field);
    RUN(sampling);
    RUN(bad_options_name_the_field);
    RUN(caps);
    RUN(one_option_as_text);
    RUN(system_prompt_and_tools);
    RUN(explicit_directories);
    RUN(only_mcp_takes_followups);
    return testlib_done();
}
