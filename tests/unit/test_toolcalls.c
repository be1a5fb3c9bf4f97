/* Parsing chat completion responses and the model client's failure paths. */
#include "testlib.h"

#include <unistd.h>

#include "agent/model_context.h"
#include "agent/model_replay.h"
#include "agent/prompts.h"
#include "agent/text.h"
#include "common/utf8.h"
#include "common/config.h"
#include "common/status.h"
#include "common/util.h"

#include <stdlib.h>

static int parse(const char *body, lb_model_reply *r, char *err)
{
    return lb_parse_chat_response(body, strlen(body), r, err, 512);
}

TEST(content_and_tool_calls)
{
    lb_model_reply r;
    char err[512];
    const char *b =
        "{\"choices\":[{\"index\":0,\"finish_reason\":\"tool_calls\",\"message\":{\"role\":\"assistant\","
        "\"content\":\"Let me look.\",\"tool_calls\":["
        "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}},"
        "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"finish\",\"arguments\":\"{}\"}}]}}],"
        "\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":7}}";
    CHECK(parse(b, &r, err) == LB_OK);
    CHECK_STR(r.content, "Let me look.");
    CHECK(r.reasoning == NULL);
    CHECK(r.n_calls == 2);
    if (r.n_calls == 2) {
        CHECK_STR(r.calls[0].id, "c1");
        CHECK_STR(r.calls[0].name, "bash");
        CHECK_STR(r.calls[0].arguments, "{\"command\":\"ls\"}");
        CHECK_STR(r.calls[1].name, "finish");
    }
    CHECK(r.prompt_tokens == 120 && r.completion_tokens == 7);
    CHECK_STR(r.finish_reason, "tool_calls");
    lb_model_reply_free(&r);
}

TEST(arguments_invalid_json_kept_verbatim)
{
    lb_model_reply r;
    char err[512];
    const char *b = "{\"choices\":[{\"message\":{\"content\":null,\"tool_calls\":["
                    "{\"id\":\"x\",\"function\":{\"name\":\"bash\",\"arguments\":\"{command: ls\"}}]}}]}";
    CHECK(parse(b, &r, err) == LB_OK);
    CHECK(r.content == NULL);
    CHECK(r.n_calls == 1);
    if (r.n_calls == 1)
        CHECK_STR(r.calls[0].arguments, "{command: ls");
    CHECK(r.prompt_tokens == -1); /* no usage sent */
    lb_model_reply_free(&r);
}

TEST(arguments_as_object_or_missing)
{
    lb_model_reply r;
    char err[512];
    const char *b = "{\"choices\":[{\"message\":{\"tool_calls\":["
                    "{\"function\":{\"name\":\"bash\",\"arguments\":{\"command\":\"pwd\"}}},"
                    "{\"function\":{\"name\":\"finish\"}},"
                    "{\"function\":{\"arguments\":\"{}\"}},"
                    "\"not a call\","
                    "{\"function\":{\"name\":42,\"arguments\":[1,2]}}]}}]}";
    CHECK(parse(b, &r, err) == LB_OK);
    CHECK(r.n_calls == 4);
    if (r.n_calls == 4) {
        CHECK(r.calls[0].id == NULL); /* the loop makes one */
        CHECK_STR(r.calls[0].arguments, "{\"command\":\"pwd\"}");
        CHECK_STR(r.calls[1].arguments, "{}");
        CHECK_STR(r.calls[2].name, "");
        CHECK_STR(r.calls[3].name, "");
        CHECK_STR(r.calls[3].arguments, "[1,2]");
    }
    lb_model_reply_free(&r);
}

TEST(reasoning_fields)
{
    lb_model_reply r;
    char err[512];
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"a\",\"reasoning_content\":\"think\"}}]}", &r, err) == LB_OK);
    CHECK_STR(r.reasoning, "think");
    CHECK(r.n_calls == 0);
    lb_model_reply_free(&r);
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"a\",\"reasoning\":\"hmm\"}}]}", &r, err) == LB_OK);
    CHECK_STR(r.reasoning, "hmm");
    lb_model_reply_free(&r);
    /* content as an array of parts */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"ab\"},"
                "{\"type\":\"text\",\"text\":\"cd\"}]}}]}", &r, err) == LB_OK);
    CHECK_STR(r.content, "abcd");
    lb_model_reply_free(&r);
}

TEST(missing_fields_and_errors)
{
    lb_model_reply r;
    char err[512];
    CHECK(parse("{}", &r, err) == LB_E_PROTO);
    CHECK(strstr(err, "choices[0].message") != NULL);
    CHECK(parse("{\"choices\":[]}", &r, err) == LB_E_PROTO);
    CHECK(parse("{\"choices\":[{\"message\":\"x\"}]}", &r, err) == LB_E_PROTO);
    CHECK(parse("[1,2]", &r, err) == LB_E_PROTO);
    CHECK(parse("", &r, err) == LB_E_PROTO);
    CHECK(strstr(err, "empty") != NULL);
    CHECK(parse("{\"error\":{\"message\":\"model overloaded\"}}", &r, err) == LB_E_PROTO);
    CHECK(strstr(err, "model overloaded") != NULL);
    CHECK(parse("{\"detail\":\"Not Found\"}", &r, err) == LB_E_PROTO);
    CHECK(strstr(err, "Not Found") != NULL);
}

TEST(garbage_and_huge_bodies)
{
    lb_model_reply r;
    char err[512];
    CHECK(parse("<html>502 Bad Gateway</html>", &r, err) == LB_E_PROTO);
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"unterminated", &r, err) == LB_E_PROTO);
    /* a 5 MiB content string is kept, capped at 4 MiB */
    size_t n = 5u << 20;
    char *big = malloc(n + 100);
    strcpy(big, "{\"choices\":[{\"message\":{\"content\":\"");
    size_t o = strlen(big);
    memset(big + o, 'a', n);
    strcpy(big + o + n, "\"}}]}");
    CHECK(lb_parse_chat_response(big, strlen(big), &r, err, sizeof err) == LB_OK);
    CHECK(r.content && strlen(r.content) == (4u << 20));
    lb_model_reply_free(&r);
    free(big);
    /* many tool calls: capped */
    char *many = malloc(200 * 80 + 100);
    strcpy(many, "{\"choices\":[{\"message\":{\"tool_calls\":[");
    for (int i = 0; i < 200; i++)
        strcat(many, i ? ",{\"function\":{\"name\":\"bash\"}}" : "{\"function\":{\"name\":\"bash\"}}");
    strcat(many, "]}}]}");
    CHECK(parse(many, &r, err) == LB_OK);
    CHECK(r.n_calls == LB_MODEL_MAX_CALLS);
    lb_model_reply_free(&r);
    free(many);
}

TEST(invalid_utf8_is_sanitized)
{
    lb_model_reply r;
    char err[512];
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"a\xff\xfe b\\u0000c\"}}]}", &r, err) == LB_OK);
    CHECK(r.content && lb_utf8_valid(r.content, strlen(r.content)));
    CHECK(r.content && strstr(r.content, "a\xEF\xBF\xBD") == r.content);
    lb_model_reply_free(&r);
}

/* Found by tests/fuzz/fuzz_model_reply: 300 bytes of garbage sanitize to up
 * to 900 bytes of U+FFFD, and the copy into a fixed buffer cut the last one
 * in two, so the task's error message was not valid UTF-8. */
TEST(error_text_never_cuts_a_character)
{
    char body[300], out[400];
    memset(body, 0xff, sizeof body);
    lb_model_error_text(body, sizeof body, out, sizeof out);
    CHECK(lb_utf8_valid(out, strlen(out)));
    CHECK(strlen(out) > 300);
    char s[] = "ab\xe2\x82";
    lb_utf8_trim_partial(s);
    CHECK_STR(s, "ab");
    char t[] = "ab\xe2\x82\xac";
    lb_utf8_trim_partial(t);
    CHECK_STR(t, "ab\xe2\x82\xac");
}

TEST(error_text_from_bodies)
{
    char out[400];
    lb_model_error_text("{\"error\":{\"message\":\"bad key\"}}", 31, out, sizeof out);
    CHECK_STR(out, "bad key");
    lb_model_error_text("{\"error\":\"plain\"}", 17, out, sizeof out);
    CHECK_STR(out, "plain");
    lb_model_error_text("line1\nline2", 11, out, sizeof out);
    CHECK_STR(out, "line1 line2");
    char big[1000];
    memset(big, 'x', sizeof big);
    lb_model_error_text(big, sizeof big, out, sizeof out);
    CHECK(strlen(out) <= 303);
}

TEST(request_body_shape)
{
    lb_model m;
    char err[256];
    setenv("LLMBOX_LLM_URL", "http://user:secret@127.0.0.1:9/v1/", 1);
    setenv("LLMBOX_LLM_MODEL", "qwen", 1);
    setenv("LLMBOX_LLM_EXTRA_BODY", "{\"temperature\":0.7,\"messages\":\"ignored\"}", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
    CHECK(lb_model_init(&m, lb_cfg(), "default", NULL, err, sizeof err) == LB_OK);
    CHECK_STR(m.url, "http://user:secret@127.0.0.1:9/v1/chat/completions");
    CHECK_STR(m.shown_url, "http://127.0.0.1:9/v1/chat/completions");
    cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":\"hi\"}]");
    cJSON *tools = cJSON_Parse("[{\"type\":\"function\",\"function\":{\"name\":\"bash\"}}]");
    char *body = lb_model_request_body(&m, msgs, tools);
    cJSON *b = cJSON_Parse(body);
    CHECK_STR(cJSON_GetObjectItem(b, "model")->valuestring, "qwen");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(b, "messages")) == 1);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(b, "tools")) == 1);
    CHECK(cJSON_GetObjectItem(b, "temperature")->valuedouble == 0.7);
    cJSON_Delete(b);
    free(body);
    /* msgs and tools were referenced, not consumed */
    CHECK(cJSON_GetArraySize(msgs) == 1);
    cJSON_Delete(msgs);
    cJSON_Delete(tools);
    lb_model_free(&m);
    /* a name that is not configured is refused with the list */
    CHECK(lb_model_init(&m, lb_cfg(), "qwen", NULL, err, sizeof err) == LB_E_NOTFOUND);
    CHECK(strstr(err, "\"qwen\" is not configured (configured: default)") != NULL);
    unsetenv("LLMBOX_LLM_EXTRA_BODY");
    unsetenv("LLMBOX_LLM_URL");
    unsetenv("LLMBOX_LLM_MODEL");
}

TEST(unreachable_endpoint_fails_fast)
{
    lb_model m;
    char err[512];
    /* port 9 (discard) on loopback: nothing listens, connect is refused */
    setenv("LLMBOX_LLM_URL", "http://127.0.0.1:9/v1", 1);
    setenv("LLMBOX_LLM_KEY", "sk-never-shown", 1);
    LB_IGNORE(lb_config_load(lb_cfg_mut())); /* the checks below say what a bad config did */
    CHECK(lb_model_init(&m, lb_cfg(), NULL, NULL, err, sizeof err) == LB_OK);
    cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":\"hi\"}]");
    lb_model_reply r;
    int64_t t0 = lb_mono_ms();
    int rc = lb_model_chat(&m, msgs, NULL, &r, err, sizeof err);
    int64_t dt = lb_mono_ms() - t0;
    CHECK(rc == LB_E_UNAVAILABLE);
    CHECK(strstr(err, "The model endpoint http://127.0.0.1:9/v1/chat/completions is not reachable") == err);
    CHECK(strstr(err, "connect") != NULL);
    CHECK(strstr(err, "sk-never") == NULL);
    CHECK(dt < 3000);
    cJSON_Delete(msgs);
    lb_model_free(&m);
    unsetenv("LLMBOX_LLM_URL");
    unsetenv("LLMBOX_LLM_KEY");
}

TEST(cancel_flag_stops_retries)
{
    lb_model m;
    char err[512];
    volatile int cancel = 1;
    setenv("LLMBOX_LLM_URL", "http://127.0.0.1:9/v1", 1);
    LB_IGNORE(lb_config_load(lb_cfg_mut())); /* the checks below say what a bad config did */
    CHECK(lb_model_init(&m, lb_cfg(), NULL, &cancel, err, sizeof err) == LB_OK);
    cJSON *msgs = cJSON_Parse("[]");
    lb_model_reply r;
    CHECK(lb_model_chat(&m, msgs, NULL, &r, err, sizeof err) == LB_E_CANCELLED);
    cJSON_Delete(msgs);
    lb_model_free(&m);
    unsetenv("LLMBOX_LLM_URL");
}

/* a bad URL stops the configuration from loading, so nothing starts */
TEST(bad_url_refused)
{
    setenv("LLMBOX_LLM_URL", "ftp://example/v1", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_E_INVAL);
    CHECK(strstr(lb_config_error(), "ftp://example/v1") != NULL);
    unsetenv("LLMBOX_LLM_URL");
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
}

static int parse_content(const char *content, lb_model_reply *r)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "content", content);
    cJSON *choice = cJSON_CreateObject();
    cJSON_AddItemToObject(choice, "message", msg);
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    cJSON_AddItemToArray(choices, choice);
    char *body = cJSON_PrintUnformatted(root);
    char err[512];
    int rc = lb_parse_chat_response(body, strlen(body), r, err, sizeof err);
    free(body);
    cJSON_Delete(root);
    return rc;
}

TEST(text_mode_hermes_json)
{
    lb_model_reply r;
    CHECK(parse_content("Let me check.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls -la\"}}\n</tool_call>", &r) == LB_OK);
    CHECK(r.n_calls == 1);
    if (r.n_calls == 1) {
        CHECK_STR(r.calls[0].name, "bash");
        CHECK_STR(r.calls[0].arguments, "{\"command\":\"ls -la\"}");
    }
    CHECK_STR(r.content, "Let me check.");
    lb_model_reply_free(&r);
    /* code fence, arguments at the top level, no closing tag, trailing prose lost in the call */
    CHECK(parse_content("<tool_call>```json\n{\"name\":\"finish\",\"answer\":\"7\"}\n```</tool_call> done", &r) == LB_OK);
    CHECK(r.n_calls == 1);
    if (r.n_calls == 1) {
        CHECK_STR(r.calls[0].name, "finish");
        CHECK_STR(r.calls[0].arguments, "{\"answer\":\"7\"}");
    }
    CHECK_STR(r.content, "done");
    lb_model_reply_free(&r);
}

TEST(text_mode_xml_functions)
{
    lb_model_reply r;
    const char *c = "I will edit.\n<function=file_editor>\n<parameter=command>\ninsert\n</parameter>\n"
                    "<parameter=path>\n/testbed/a.py\n</parameter>\n<parameter=insert_line>\n3\n</parameter>\n"
                    "<parameter=new_str>\n  x = \"<b>\"\n\n</parameter>\n</function>\n"
                    "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</function>\n</tool_call>";
    CHECK(parse_content(c, &r) == LB_OK);
    CHECK(r.n_calls == 2);
    if (r.n_calls == 2) {
        CHECK_STR(r.calls[0].name, "file_editor");
        cJSON *a = cJSON_Parse(r.calls[0].arguments);
        CHECK_STR(cJSON_GetObjectItem(a, "command")->valuestring, "insert");
        CHECK_STR(cJSON_GetObjectItem(a, "insert_line")->valuestring, "3");
        CHECK_STR(cJSON_GetObjectItem(a, "new_str")->valuestring, "  x = \"<b>\"\n");
        cJSON_Delete(a);
        CHECK_STR(r.calls[1].name, "bash");
        CHECK_STR(r.calls[1].arguments, "{\"command\":\"ls\"}");
    }
    CHECK_STR(r.content, "I will edit.");
    lb_model_reply_free(&r);
}

TEST(text_mode_leaves_prose_alone)
{
    lb_model_reply r;
    CHECK(parse_content("Use <tool_call> tags like <function=x to call tools.", &r) == LB_OK);
    CHECK(r.n_calls == 0);
    CHECK_STR(r.content, "Use <tool_call> tags like <function=x to call tools.");
    lb_model_reply_free(&r);
    CHECK(parse_content("<tool_call>{not json}</tool_call>", &r) == LB_OK);
    CHECK(r.n_calls == 0);
    lb_model_reply_free(&r);
}

/* text mode: a call inside a code fence leaves no empty fence behind */
TEST(text_mode_fenced_function)
{
    lb_model_reply r;
    CHECK(parse_content("Run it:\n```xml\n<function=bash>\n<parameter=command>ls</parameter>\n</function>\n```\nThen look.", &r) == LB_OK);
    CHECK(r.n_calls == 1);
    if (r.n_calls == 1) {
        CHECK_STR(r.calls[0].name, "bash");
        CHECK_STR(r.calls[0].arguments, "{\"command\":\"ls\"}");
    }
    CHECK_STR(r.content, "Run it:\n\nThen look.");
    lb_model_reply_free(&r);
}

/* several calls, quoted names and keys, and trailing prose */
TEST(text_mode_several_calls_and_quoted_names)
{
    lb_model_reply r;
    CHECK(parse_content("<function=\"bash\">\n<parameter= command >pwd</parameter>\n</function>\n"
                        "<function=file_editor>\n<parameter=command>view</parameter>\n"
                        "<parameter=path>/testbed</parameter>\n</function>\nDone for now.", &r) == LB_OK);
    CHECK(r.n_calls == 2);
    if (r.n_calls == 2) {
        CHECK_STR(r.calls[0].name, "bash");
        CHECK_STR(r.calls[0].arguments, "{\"command\":\"pwd\"}");
        CHECK_STR(r.calls[1].name, "file_editor");
        CHECK_STR(r.calls[1].arguments, "{\"command\":\"view\",\"path\":\"/testbed\"}");
    }
    CHECK_STR(r.content, "Done for now.");
    lb_model_reply_free(&r);
}

/* finish(...) written as text at the end of a reply */
TEST(text_mode_finish_as_text)
{
    static const struct { const char *content, *args, *prose; } cases[] = {
        {"All done.\nfinish()", "{}", "All done."},
        {"finish(\"42\")", "{\"answer\":\"42\"}", NULL},
        {"The sum is 7.\nfinish(answer=\"7 (seven)\")\n", "{\"answer\":\"7 (seven)\"}", "The sum is 7."},
        {"finish(answer='x')", "{\"answer\":\"x\"}", NULL},
        {"```\nfinish({\"answer\": \"ok\"})\n```", "{\"answer\":\"ok\"}", NULL},
        {"finish(42).", "{\"answer\":\"42\"}", NULL},
        {"finish(\"a\\nb\")", "{\"answer\":\"a\\nb\"}", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lb_model_reply r;
        CHECK(parse_content(cases[i].content, &r) == LB_OK);
        CHECK(r.n_calls == 1);
        if (r.n_calls == 1) {
            CHECK_STR(r.calls[0].name, "finish");
            CHECK_STR(r.calls[0].arguments, cases[i].args);
        }
        if (cases[i].prose)
            CHECK_STR(r.content, cases[i].prose);
        else
            CHECK(r.content == NULL);
        if (testlib_cur_failed)
            printf("  (case %zu)\n", i);
        lb_model_reply_free(&r);
    }
    /* a mention in prose is not a call */
    const char *no[] = {"I will call finish() when done.", "finish() is next, then more work",
                        "Say finish(\"x\") later please"};
    for (size_t i = 0; i < 3; i++) {
        lb_model_reply r;
        CHECK(parse_content(no[i], &r) == LB_OK);
        CHECK(r.n_calls == 0);
        CHECK_STR(r.content, no[i]);
        lb_model_reply_free(&r);
    }
}

TEST(htbuf_keeps_head_and_tail)
{
    lb_htbuf b;
    lb_htbuf_init(&b, 10, 10);
    for (int i = 0; i < 100; i++)
        CHECK(lb_htbuf_append(&b, "0123456789", 10) == LB_OK);
    CHECK(lb_htbuf_omitted(&b) == 980);
    char *s = lb_htbuf_render(&b, NULL);
    CHECK_STR(s, "0123456789\n[... 980 bytes omitted ...]\n0123456789");
    free(s);
    lb_htbuf_free(&b);
    lb_htbuf_init(&b, 4, 4);
    CHECK(lb_htbuf_append(&b, "abc", 3) == LB_OK);
    s = lb_htbuf_render(&b, NULL);
    CHECK_STR(s, "abc");
    free(s);
    lb_htbuf_free(&b);
}

TEST(prompt_render_one_pass)
{
    lb_prompt_var v[] = {{"problem_statement", "use {working_dir} literally"}, {"working_dir", "/testbed"}};
    char *s = lb_prompt_render("Task: {problem_statement} in {working_dir}; code {x} {", v, 2);
    CHECK_STR(s, "Task: use {working_dir} literally in /testbed; code {x} {");
    free(s);
}

/* ---- Anthropic Messages API ---------------------------------------------- */

static int aparse(const char *body, lb_model_reply *r, char *err)
{
    return lb_parse_anthropic_response(body, strlen(body), r, err, 512);
}

TEST(anthropic_text_and_tool_use)
{
    lb_model_reply r;
    char err[512];
    CHECK(aparse("{\"type\":\"message\",\"role\":\"assistant\",\"content\":["
                 "{\"type\":\"text\",\"text\":\"Let me look.\"},"
                 "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\",\"input\":{\"command\":\"ls -l\"}},"
                 "{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"finish\"}],"
                 "\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":120,\"output_tokens\":30,"
                 "\"cache_read_input_tokens\":5}}", &r, err) == LB_OK);
    CHECK_STR(r.content, "Let me look.");
    CHECK(r.reasoning == NULL && r.blocks == NULL);
    CHECK(r.n_calls == 2);
    CHECK_STR(r.calls[0].id, "toolu_1");
    CHECK_STR(r.calls[0].name, "bash");
    CHECK_STR(r.calls[0].arguments, "{\"command\":\"ls -l\"}");
    CHECK_STR(r.calls[1].arguments, "{}");
    CHECK_STR(r.finish_reason, "tool_use");
    CHECK(r.prompt_tokens == 125 && r.completion_tokens == 30);
    lb_model_reply_free(&r);
}

TEST(anthropic_thinking_kept_verbatim)
{
    lb_model_reply r;
    char err[512];
    CHECK(aparse("{\"content\":[{\"type\":\"thinking\",\"thinking\":\"Plan: ls.\",\"signature\":\"c2ln==\"},"
                 "{\"type\":\"redacted_thinking\",\"data\":\"EncR\"},"
                 "{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"bash\",\"input\":{}}]}", &r, err) == LB_OK);
    CHECK_STR(r.reasoning, "Plan: ls.");
    CHECK(r.content == NULL);
    CHECK(cJSON_GetArraySize(r.blocks) == 2);
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(r.blocks, 0), "signature")->valuestring, "c2ln==");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(r.blocks, 1), "data")->valuestring, "EncR");
    CHECK(r.prompt_tokens == -1);
    lb_model_reply_free(&r);
}

TEST(anthropic_error_and_garbage)
{
    lb_model_reply r;
    char err[512], out[400];
    const char *eb = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}";
    CHECK(aparse(eb, &r, err) == LB_E_PROTO);
    CHECK_STR(err, "The model endpoint returned an error: Overloaded");
    lb_model_error_text(eb, strlen(eb), out, sizeof out);
    CHECK_STR(out, "Overloaded");
    CHECK(aparse("not json", &r, err) == LB_E_PROTO);
    CHECK(strstr(err, "is not JSON: \"not json\"") != NULL);
    CHECK(aparse("{\"content\":[{\"type\":\"te", &r, err) == LB_E_PROTO);
    CHECK(strstr(err, "cut off") != NULL);
    CHECK(aparse("[1]", &r, err) == LB_E_PROTO);
    CHECK(strstr(err, "not an object") != NULL);
    CHECK(aparse("{\"content\":\"text\"}", &r, err) == LB_E_PROTO);
    CHECK(strstr(err, "without a content array") != NULL);
    CHECK(aparse("", &r, err) == LB_E_PROTO);
    /* odd blocks are skipped, not trusted */
    CHECK(aparse("{\"content\":[1,null,{\"type\":7},{\"type\":\"text\",\"text\":5},"
                 "{\"type\":\"tool_use\",\"input\":[1]}]}", &r, err) == LB_OK);
    CHECK(r.content == NULL && r.n_calls == 1);
    CHECK_STR(r.calls[0].name, "");
    CHECK(r.calls[0].id == NULL);
    lb_model_reply_free(&r);
}

TEST(anthropic_request_body_shape)
{
    lb_model m;
    char err[256];
    setenv("LLMBOX_LLM_PROVIDER", "anthropic", 1);
    setenv("LLMBOX_LLM_URL", "http://127.0.0.1:9/v1/", 1);
    setenv("ANTHROPIC_API_KEY", "sk-ant-test", 1);
    setenv("LLMBOX_LLM_MAX_TOKENS", "1000", 1);
    setenv("LLMBOX_LLM_EXTRA_BODY", "{\"temperature\":0.5,\"system\":\"ignored\"}", 1);
    setenv("LLMBOX_LLM_MODEL", "claude", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
    CHECK(lb_model_init(&m, lb_cfg(), NULL, NULL, err, sizeof err) == LB_OK);
    CHECK_STR(m.url, "http://127.0.0.1:9/v1/messages");
    CHECK_STR(m.auth, "x-api-key: sk-ant-test");
    cJSON *msgs = cJSON_Parse(
        "[{\"role\":\"system\",\"content\":\"You are helpful.\"},"
        "{\"role\":\"user\",\"content\":\"hi\"},"
        "{\"role\":\"assistant\",\"content\":\"ok\",\"thinking_blocks\":[{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"S\"}],"
        " \"tool_calls\":[{\"id\":\"tu1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}},"
        "                {\"id\":\"tu2\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{bad\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"tu1\",\"content\":\"a.txt\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"tu2\",\"content\":\"invalid\"},"
        "{\"role\":\"assistant\",\"content\":null},"
        "{\"role\":\"user\",\"content\":\"call a tool\"}]");
    cJSON *tools = cJSON_Parse("[{\"type\":\"function\",\"function\":{\"name\":\"bash\",\"description\":\"Run\","
                               "\"parameters\":{\"type\":\"object\"}}}]");
    char *body = lb_model_request_body(&m, msgs, tools);
    cJSON *b = cJSON_Parse(body);
    CHECK_STR(cJSON_GetObjectItem(b, "model")->valuestring, "claude");
    CHECK(cJSON_GetObjectItem(b, "max_tokens")->valueint == 1000);
    CHECK_STR(cJSON_GetObjectItem(b, "system")->valuestring, "You are helpful.");
    CHECK(cJSON_GetObjectItem(b, "temperature")->valuedouble == 0.5);
    const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "tools"), 0);
    CHECK_STR(cJSON_GetObjectItem(t0, "name")->valuestring, "bash");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(t0, "input_schema"), "type")->valuestring, "object");
    const cJSON *ms = cJSON_GetObjectItem(b, "messages");
    CHECK(cJSON_GetArraySize(ms) == 5); /* user, assistant, user(results), assistant, user */
    const cJSON *a = cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 1), "content");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(a, 0), "signature")->valuestring, "S");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(a, 1), "text")->valuestring, "ok");
    const cJSON *u = cJSON_GetArrayItem(a, 2);
    CHECK_STR(cJSON_GetObjectItem(u, "type")->valuestring, "tool_use");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(u, "input"), "command")->valuestring, "ls");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(a, 3), "input")) == 0);
    const cJSON *res = cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 2), "content");
    CHECK(cJSON_GetArraySize(res) == 2);
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "tool_use_id")->valuestring, "tu2");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 0), "content")->valuestring, "a.txt");
    const cJSON *empty = cJSON_GetObjectItem(cJSON_GetArrayItem(ms, 3), "content");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(empty, 0), "text")->valuestring, "(empty reply)");
    cJSON_Delete(b);
    free(body);
    cJSON_Delete(msgs);
    cJSON_Delete(tools);
    lb_model_free(&m);
    /* a bare host gets /v1/messages; an unknown provider is refused */
    setenv("LLMBOX_LLM_URL", "https://api.anthropic.com", 1);
    LB_IGNORE(lb_config_load(lb_cfg_mut())); /* the checks below say what a bad config did */
    CHECK(lb_model_init(&m, lb_cfg(), NULL, NULL, err, sizeof err) == LB_OK);
    CHECK_STR(m.url, "https://api.anthropic.com/v1/messages");
    CHECK(m.max_tokens == 1000);
    lb_model_free(&m);
    setenv("LLMBOX_LLM_PROVIDER", "gemini", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_E_INVAL);
    CHECK(strstr(lb_config_error(), "LLMBOX_LLM_PROVIDER=gemini: must be openai, anthropic or replay") != NULL);
    unsetenv("LLMBOX_LLM_PROVIDER");
    unsetenv("LLMBOX_LLM_MODEL");
    unsetenv("LLMBOX_LLM_URL");
    unsetenv("ANTHROPIC_API_KEY");
    unsetenv("LLMBOX_LLM_MAX_TOKENS");
    unsetenv("LLMBOX_LLM_EXTRA_BODY");
}

TEST(anthropic_unreachable_endpoint_sentence)
{
    lb_model m;
    char err[512];
    setenv("LLMBOX_LLM_PROVIDER", "anthropic", 1);
    setenv("LLMBOX_LLM_URL", "http://127.0.0.1:9/v1", 1);
    setenv("LLMBOX_LLM_KEY", "sk-ant-never-shown", 1);
    LB_IGNORE(lb_config_load(lb_cfg_mut())); /* the checks below say what a bad config did */
    CHECK(lb_model_init(&m, lb_cfg(), NULL, NULL, err, sizeof err) == LB_OK);
    cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":\"hi\"}]");
    lb_model_reply r;
    CHECK(lb_model_chat(&m, msgs, NULL, &r, err, sizeof err) == LB_E_UNAVAILABLE);
    CHECK(strstr(err, "The model endpoint http://127.0.0.1:9/v1/messages is not reachable") == err);
    CHECK(strstr(err, "sk-ant") == NULL);
    cJSON_Delete(msgs);
    lb_model_free(&m);
    unsetenv("LLMBOX_LLM_PROVIDER");
    unsetenv("LLMBOX_LLM_URL");
    unsetenv("LLMBOX_LLM_KEY");
}

/* sampling settings of a model go into the request; extra_body wins */
TEST(sampling_in_request_bodies)
{
    char conf[] = "/tmp/lb-sampling-XXXXXX";
    int fd = mkstemp(conf);
    const char *text =
        "[model \"q\"]\nbase_url = http://127.0.0.1:9/v1\nmodel = Qwen/Qwen3\ntemperature = 0.6\n"
        "top_p = 0.95\ntop_k = 20\nmin_p = 0\nrepetition_penalty = 1.05\nmax_tokens = 4096\n"
        "extra_body = {\"chat_template_kwargs\":{\"enable_thinking\":true},\"top_k\":40}\n"
        "[model \"c\"]\nprovider = anthropic\nbase_url = http://127.0.0.1:9\ntemperature = 1\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    setenv("LLMBOX_CONF", conf, 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
    lb_model m;
    char err[512];
    CHECK(lb_model_init(&m, lb_cfg(), "q", NULL, err, sizeof err) == LB_OK);
    cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":\"hi\"}]");
    char *body = lb_model_request_body(&m, msgs, NULL);
    cJSON *b = cJSON_Parse(body);
    CHECK_STR(cJSON_GetObjectItem(b, "model")->valuestring, "Qwen/Qwen3");
    CHECK(cJSON_GetObjectItem(b, "temperature")->valuedouble == 0.6);
    CHECK(cJSON_GetObjectItem(b, "top_p")->valuedouble == 0.95);
    CHECK(cJSON_GetObjectItem(b, "top_k")->valueint == 40); /* extra_body's */
    CHECK(cJSON_GetObjectItem(b, "min_p")->valuedouble == 0);
    CHECK(cJSON_GetObjectItem(b, "repetition_penalty")->valuedouble == 1.05);
    CHECK(cJSON_GetObjectItem(b, "max_tokens")->valueint == 4096);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "chat_template_kwargs"), "enable_thinking")));
    cJSON_Delete(b);
    free(body);
    lb_model_free(&m);
    CHECK(lb_model_init(&m, lb_cfg(), "c", NULL, err, sizeof err) == LB_OK);
    CHECK_STR(m.url, "http://127.0.0.1:9/v1/messages");
    body = lb_model_request_body(&m, msgs, NULL);
    b = cJSON_Parse(body);
    CHECK_STR(cJSON_GetObjectItem(b, "model")->valuestring, "c"); /* the name when model is unset */
    CHECK(cJSON_GetObjectItem(b, "temperature")->valuedouble == 1);
    CHECK(cJSON_GetObjectItem(b, "max_tokens")->valueint == 8192);
    CHECK(cJSON_GetObjectItem(b, "top_p") == NULL);
    cJSON_Delete(b);
    free(body);
    lb_model_free(&m);
    cJSON_Delete(msgs);
    unsetenv("LLMBOX_CONF");
    unlink(conf);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
}

static int ctx_err(long http, const char *body, long *limit, long *prompt)
{
    return lb_context_error(http, body, strlen(body), limit, prompt);
}

/* context-length errors of the servers people use, and the retry size */
TEST(context_length_errors)
{
    long L, P;
    CHECK(ctx_err(400, "{\"object\":\"error\",\"message\":\"This model's maximum context length is 32768 tokens. "
                       "However, you requested 33000 tokens (25000 in the messages, 8000 in the completion). "
                       "Please reduce the length of the messages or completion.\",\"type\":\"BadRequestError\"}",
                  &L, &P));
    CHECK(L == 32768 && P == 25000);
    CHECK(lb_context_retry_tokens(8000, L, P, 0) == 32768 - 25000 - 64);
    CHECK(ctx_err(400, "{\"error\":{\"message\":\"Requested token count exceeds the model's maximum context length "
                       "of 4096 tokens. You requested a total of 5000 tokens: 3000 tokens from the input messages "
                       "and 2000 tokens for the completion.\"}}", &L, &P));
    CHECK(L == 4096 && P == 3000);
    CHECK(ctx_err(400, "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens. However, "
                       "your messages resulted in 130532 tokens. Please reduce the length of the messages.\","
                       "\"code\":\"context_length_exceeded\"}}", &L, &P));
    CHECK(L == 128000 && P == 130532);
    CHECK(lb_context_retry_tokens(0, L, P, 0) == 0); /* the prompt alone is too long */
    CHECK(ctx_err(400, "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size, try "
                       "increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":5000,\"n_ctx\":4096}}",
                  &L, &P));
    CHECK(L == 4096 && P == 5000);
    CHECK(ctx_err(400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is "
                       "too long: 210000 tokens > 200000 maximum\"}}", &L, &P));
    CHECK(L == 200000 && P == 210000);
    CHECK(ctx_err(400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"input length "
                       "and `max_tokens` exceed context limit: 190000 + 20000 > 200000, decrease input length or "
                       "`max_tokens` and try again\"}}", &L, &P));
    CHECK(L == 200000 && P == 190000);
    CHECK(lb_context_retry_tokens(20000, L, P, 0) == 200000 - 190000 - 64);
    /* no numbers: halve what was sent, or a guess */
    CHECK(ctx_err(400, "{\"error\":{\"message\":\"context length exceeded\"}}", &L, &P));
    CHECK(L == -1 && P == -1);
    CHECK(lb_context_retry_tokens(4096, L, P, 0) == 2048);
    CHECK(lb_context_retry_tokens(0, L, P, 16384) == 4096);
    CHECK(lb_context_retry_tokens(0, L, P, 0) == 4096);
    CHECK(lb_context_retry_tokens(20, L, P, 0) == 0);
    /* not context errors */
    CHECK(!ctx_err(400, "{\"error\":{\"message\":\"invalid tool schema\"}}", &L, &P));
    CHECK(!ctx_err(401, "{\"error\":{\"message\":\"maximum context length is 5\"}}", &L, &P));
    CHECK(!ctx_err(429, "rate limited", &L, &P));
}

int main(void)
{
    LB_IGNORE(lb_config_load(lb_cfg_mut())); /* the checks below say what a bad config did */
    RUN(content_and_tool_calls);
    RUN(arguments_invalid_json_kept_verbatim);
    RUN(arguments_as_object_or_missing);
    RUN(reasoning_fields);
    RUN(missing_fields_and_errors);
    RUN(garbage_and_huge_bodies);
    RUN(invalid_utf8_is_sanitized);
    RUN(error_text_from_bodies);
    RUN(request_body_shape);
    RUN(unreachable_endpoint_fails_fast);
    RUN(cancel_flag_stops_retries);
    RUN(bad_url_refused);
    RUN(text_mode_hermes_json);
    RUN(text_mode_xml_functions);
    RUN(text_mode_leaves_prose_alone);
    RUN(text_mode_fenced_function);
    RUN(text_mode_several_calls_and_quoted_names);
    RUN(text_mode_finish_as_text);
    RUN(htbuf_keeps_head_and_tail);
    RUN(prompt_render_one_pass);
    RUN(error_text_never_cuts_a_character);
    RUN(anthropic_text_and_tool_use);
    RUN(anthropic_thinking_kept_verbatim);
    RUN(anthropic_error_and_garbage);
    RUN(anthropic_request_body_shape);
    RUN(anthropic_unreachable_endpoint_sentence);
    RUN(sampling_in_request_bodies);
    RUN(context_length_errors);
    return testlib_done();
}
