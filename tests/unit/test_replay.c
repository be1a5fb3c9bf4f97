/* The replay provider (model_replay.c) and the text tool-call mode
 * (toolcall_text.c, model_openai.c). */
#include "testlib.h"

#include "agent/model_replay.h"
#include "agent/toolcall_text.h"
#include "agent/plugin_host.h"
#include "common/config.h"
#include "common/status.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[] = "/tmp/llmbox-replay-test.XXXXXX";

static const char *write_tmp(const char *name, const char *text)
{
    static char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    return p;
}

static int load(const char *text, cJSON **steps, char *err)
{
    return lb_replay_load(write_tmp("r.json", text), steps, err, 512);
}

TEST(replay_plain_list)
{
    cJSON *s = NULL;
    char err[512] = "";
    CHECK(load("[{\"content\":\"Looking.\",\"reasoning_content\":\"hm\","
               "\"tool_calls\":[{\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}]},"
               "{\"tool_calls\":[{\"name\":\"finish\",\"arguments\":\"{\\\"answer\\\":\\\"1\\\"}\"}]}]",
               &s, err) == LB_OK);
    CHECK(cJSON_GetArraySize(s) == 2);
    lb_model m;
    memset(&m, 0, sizeof m);
    m.replay = s;
    lb_model_reply r;
    CHECK(lb_replay_next(&m, &r, err, sizeof err) == LB_OK);
    CHECK_STR(r.content, "Looking.");
    CHECK_STR(r.reasoning, "hm");
    CHECK(r.n_calls == 1);
    if (r.n_calls == 1) {
        CHECK_STR(r.calls[0].name, "bash");
        CHECK_STR(r.calls[0].arguments, "{\"command\":\"ls\"}");
        CHECK(r.calls[0].id == NULL); /* the loop makes one */
    }
    lb_model_reply_free(&r);
    CHECK(lb_replay_next(&m, &r, err, sizeof err) == LB_OK);
    CHECK(r.content == NULL);
    CHECK(r.n_calls == 1 && !strcmp(r.calls[0].arguments, "{\"answer\":\"1\"}"));
    lb_model_reply_free(&r);
    /* ran out: finish, again and again */
    for (int i = 0; i < 2; i++) {
        CHECK(lb_replay_next(&m, &r, err, sizeof err) == LB_OK);
        CHECK(r.n_calls == 1 && !strcmp(r.calls[0].name, "finish") && !strcmp(r.calls[0].arguments, "{}"));
        lb_model_reply_free(&r);
    }
    /* a cancelled task stops */
    volatile int cancel = 1;
    m.cancel = &cancel;
    CHECK(lb_replay_next(&m, &r, err, sizeof err) == LB_E_CANCELLED);
    cJSON_Delete(s);
}

/* a trajectory.json: assistant messages only, reasoning from the turns,
 * OpenAI-shaped calls, text calls in content found as in a live run */
TEST(replay_trajectory)
{
    cJSON *s = NULL;
    char err[512] = "";
    const char *t =
        "{\"version\":1,\"task\":{\"id\":\"x\"},\"turns\":[{\"turn\":1,\"reasoning\":\"first think\"},"
        "{\"turn\":2,\"reasoning\":null}],\"messages\":["
        "{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\",\"content\":\"task\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1_0\",\"type\":\"function\","
        "\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"echo hi\\\"}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_1_0\",\"content\":\"hi\"},"
        "{\"role\":\"assistant\",\"content\":\"Now.\\n<function=finish>\\n<parameter=answer>hi</parameter>\\n</function>\"}]}";
    CHECK(load(t, &s, err) == LB_OK);
    CHECK(cJSON_GetArraySize(s) == 2);
    lb_model m;
    memset(&m, 0, sizeof m);
    m.replay = s;
    lb_model_reply r;
    CHECK(lb_replay_next(&m, &r, err, sizeof err) == LB_OK);
    CHECK_STR(r.reasoning, "first think");
    CHECK(r.n_calls == 1 && !strcmp(r.calls[0].id, "call_1_0") &&
          !strcmp(r.calls[0].arguments, "{\"command\":\"echo hi\"}"));
    lb_model_reply_free(&r);
    CHECK(lb_replay_next(&m, &r, err, sizeof err) == LB_OK);
    CHECK(r.reasoning == NULL);
    CHECK_STR(r.content, "Now.");
    CHECK(r.n_calls == 1 && !strcmp(r.calls[0].name, "finish") &&
          !strcmp(r.calls[0].arguments, "{\"answer\":\"hi\"}"));
    lb_model_reply_free(&r);
    cJSON_Delete(s);
}

TEST(replay_bad_files)
{
    cJSON *s = NULL;
    char err[512] = "";
    CHECK(lb_replay_load("/nonexistent/replay.json", &s, err, sizeof err) == LB_E_INVAL);
    CHECK(strstr(err, "does not exist") != NULL);
    CHECK(lb_replay_load(NULL, &s, err, sizeof err) == LB_E_INVAL);
    CHECK(strstr(err, "LLMBOX_REPLAY_FILE is not set") != NULL);
    CHECK(lb_replay_load(dir, &s, err, sizeof err) == LB_E_INVAL); /* a directory */
    CHECK(strstr(err, "Cannot read the replay file") != NULL);
    static const struct { const char *text, *says; } bad[] = {
        {"{\"messages\": [", "is not valid JSON"},
        {"\x01\xff garbage", "is not valid JSON"},
        {"{\"steps\": []}", "neither a trajectory.json"},
        {"42", "neither a trajectory.json"},
        {"[]", "no assistant messages"},
        {"[{\"role\":\"user\",\"content\":\"x\"}]", "no assistant messages"},
        {"[{\"content\":\"a\"}, 3]", "message 2 is not a JSON object"},
        {"[{\"tool_calls\":[{\"arguments\":{}}]}]", "tool call 1 of message 1 has no name"},
        {"[{\"tool_calls\":{\"name\":\"bash\"}}]", "not a list"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(load(bad[i].text, &s, err) == LB_E_INVAL);
        CHECK(strstr(err, bad[i].says) != NULL);
        if (testlib_cur_failed)
            printf("  (case %zu: %s)\n", i, err);
    }
    CHECK(s == NULL);
    /* over the cap (a sparse file: nothing is written) */
    char p[600];
    snprintf(p, sizeof p, "%s/big.json", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)LB_REPLAY_MAX_FILE + 1) == 0);
    close(fd);
    CHECK(lb_replay_load(p, &s, err, sizeof err) == LB_E_INVAL);
    CHECK(strstr(err, "is over 64 MiB") != NULL);
    unlink(p);
}

/* the provider through lb_model_init / lb_model_chat: no URL, no HTTP */
TEST(replay_provider_init)
{
    char err[512] = "";
    setenv("LLMBOX_LLM_PROVIDER", "replay", 1);
    setenv("LLMBOX_LLM_URL", "not a url", 1);
    setenv("LLMBOX_REPLAY_FILE", write_tmp("p.json", "[{\"content\":\"x\",\"tool_calls\":[{\"name\":\"bash\"}]}]"), 1);
    LB_IGNORE(lb_config_load(lb_cfg_mut())); /* the checks below say what a bad config did */
    lb_model m;
    CHECK(lb_model_init(&m, lb_cfg(), NULL, NULL, err, sizeof err) == LB_OK);
    CHECK(m.provider == LB_PROVIDER_REPLAY);
    CHECK_STR(m.shown_url, "replay:p.json");
    lb_model_reply r;
    CHECK(lb_model_chat(&m, NULL, NULL, &r, err, sizeof err) == LB_OK);
    CHECK(r.n_calls == 1 && !strcmp(r.calls[0].name, "bash") && !strcmp(r.calls[0].arguments, "{}"));
    lb_model_reply_free(&r);
    lb_model_free(&m);
    setenv("LLMBOX_REPLAY_FILE", "/nonexistent/x.json", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
    CHECK(lb_model_init(&m, lb_cfg(), NULL, NULL, err, sizeof err) == LB_E_INVAL);
    CHECK(strstr(err, "/nonexistent/x.json does not exist") != NULL);
    unsetenv("LLMBOX_REPLAY_FILE");
    unsetenv("LLMBOX_LLM_PROVIDER");
    unsetenv("LLMBOX_LLM_URL");
    LB_IGNORE(lb_config_load(lb_cfg_mut())); /* the checks below say what a bad config did */
}

static const char *tools_json =
    "[{\"type\":\"function\",\"function\":{\"name\":\"bash\",\"description\":\"Runs a command.\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\",\"description\":\"the command\"},"
    "\"mode\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}},\"required\":[\"command\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"finish\",\"description\":\"Ends.\",\"parameters\":{\"type\":\"object\",\"properties\":{}}}}]";

TEST(text_mode_messages)
{
    cJSON *tools = cJSON_Parse(tools_json);
    cJSON *msgs = cJSON_Parse(
        "[{\"role\":\"system\",\"content\":\"You are an agent.\"},{\"role\":\"user\",\"content\":\"Task.\"},"
        "{\"role\":\"assistant\",\"content\":\"Look.\",\"tool_calls\":["
        "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\\n\\\",\\\"n\\\":3}\"}},"
        "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"finish\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"a.txt\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"Not run.\"},"
        "{\"role\":\"assistant\",\"content\":\"Hm.\"},{\"role\":\"user\",\"content\":\"Call a tool.\"}]");
    cJSON *out = lb_text_mode_messages(msgs, tools);
    CHECK(cJSON_GetArraySize(out) == 6);
    const char *sys = cJSON_GetArrayItem(out, 0)->child->next->valuestring;
    CHECK(!strncmp(sys, "You are an agent.\n\n# Tools", 26));
    CHECK(strstr(sys, "<function=NAME>\n<parameter=ARG>value</parameter>\n</function>") != NULL);
    CHECK(strstr(sys, "## bash\nRuns a command.\nParameters:\n- command (string, required): the command\n"
                      "- mode (string, optional) One of: a b.") != NULL);
    CHECK(strstr(sys, "## finish\nEnds.\nParameters: none") != NULL);
    cJSON *a = cJSON_GetArrayItem(out, 2);
    CHECK(cJSON_GetObjectItem(a, "tool_calls") == NULL);
    const char *at = cJSON_GetObjectItem(a, "content")->valuestring;
    CHECK_STR(at, "Look.\n\n<function=bash>\n<parameter=command>\nls\n\n</parameter>\n<parameter=n>\n3\n</parameter>\n"
                  "</function>\n\n<function=finish>\n</function>");
    cJSON *u = cJSON_GetArrayItem(out, 3);
    CHECK_STR(cJSON_GetObjectItem(u, "role")->valuestring, "user");
    CHECK_STR(cJSON_GetObjectItem(u, "content")->valuestring,
              "Observation of bash:\na.txt\n\nObservation of finish:\nNot run.");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(out, 4), "content")->valuestring, "Hm.");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(out, 5), "role")->valuestring, "user");
    /* the calls written back parse to the same calls */
    lb_model_reply r;
    char err[512];
    cJSON *resp = cJSON_CreateObject();
    cJSON *ch = cJSON_AddArrayToObject(resp, "choices");
    cJSON *c0 = cJSON_CreateObject();
    cJSON_AddItemToArray(ch, c0);
    cJSON *mm = cJSON_AddObjectToObject(c0, "message");
    cJSON_AddStringToObject(mm, "content", at);
    char *body = cJSON_PrintUnformatted(resp);
    CHECK(lb_parse_chat_response(body, strlen(body), &r, err, sizeof err) == LB_OK);
    CHECK(r.n_calls == 2);
    if (r.n_calls == 2) {
        CHECK_STR(r.calls[0].arguments, "{\"command\":\"ls\\n\",\"n\":\"3\"}");
        CHECK_STR(r.calls[1].arguments, "{}");
    }
    CHECK_STR(r.content, "Look.");
    lb_model_reply_free(&r);
    free(body);
    cJSON_Delete(resp);
    cJSON_Delete(out);
    cJSON_Delete(msgs);
    cJSON_Delete(tools);
}

/* the request of text mode: no tools; LLMBOX_LLM_TOOL_MODE checked */
TEST(text_mode_request_body)
{
    char err[512] = "";
    setenv("LLMBOX_LLM_URL", "http://127.0.0.1:9/v1", 1);
    setenv("LLMBOX_LLM_TOOL_MODE", "text", 1);
    LB_IGNORE(lb_config_load(lb_cfg_mut())); /* the checks below say what a bad config did */
    lb_model m;
    CHECK(lb_model_init(&m, lb_cfg(), NULL, NULL, err, sizeof err) == LB_OK);
    CHECK(m.tool_mode == LB_TOOL_MODE_TEXT);
    cJSON *tools = cJSON_Parse(tools_json);
    cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":\"Task.\"}]");
    char *body = lb_model_request_body(&m, msgs, tools);
    cJSON *req = cJSON_Parse(body);
    CHECK(cJSON_GetObjectItem(req, "tools") == NULL);
    cJSON *rm = cJSON_GetObjectItem(req, "messages");
    CHECK(cJSON_GetArraySize(rm) == 2); /* a system message was added for the tools */
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(rm, 0), "role")->valuestring, "system");
    CHECK(!strncmp(cJSON_GetObjectItem(cJSON_GetArrayItem(rm, 0), "content")->valuestring, "# Tools", 7));
    cJSON_Delete(req);
    free(body);
    lb_model_free(&m);
    setenv("LLMBOX_LLM_TOOL_MODE", "native", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
    CHECK(lb_model_init(&m, lb_cfg(), NULL, NULL, err, sizeof err) == LB_OK);
    body = lb_model_request_body(&m, msgs, tools);
    CHECK(strstr(body, "\"tools\":[") != NULL);
    free(body);
    lb_model_free(&m);
    /* bad values stop the configuration itself */
    setenv("LLMBOX_LLM_TOOL_MODE", "xml", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_E_INVAL);
    CHECK(strstr(lb_config_error(), "must be native or text") != NULL);
    setenv("LLMBOX_LLM_TOOL_MODE", "text", 1);
    setenv("LLMBOX_LLM_PROVIDER", "anthropic", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_E_INVAL);
    CHECK(strstr(lb_config_error(), "openai provider only") != NULL);
    unsetenv("LLMBOX_LLM_PROVIDER");
    unsetenv("LLMBOX_LLM_TOOL_MODE");
    unsetenv("LLMBOX_LLM_URL");
    LB_IGNORE(lb_config_load(lb_cfg_mut())); /* the checks below say what a bad config did */
    cJSON_Delete(msgs);
    cJSON_Delete(tools);
}

/* parameters written as text are strings; the schema check turns them
 * into the integers and arrays the tool wants */
TEST(text_mode_values_coerced_by_schema)
{
    lb_plugins *p = NULL;
    CHECK(lb_plugins_load("plugins", lb_cfg(), &p, NULL) == LB_OK);
    const lb_tool_entry *fe = lb_plugins_find(p, "file_editor");
    CHECK(fe != NULL);
    if (fe) {
        const char *args = "{\"command\":\"view\",\"path\":\"/testbed/a\",\"view_range\":\"[1, 5]\"}";
        cJSON *parsed = NULL;
        char err[512] = "";
        CHECK(lb_tool_validate_args(fe, args, strlen(args), &parsed, err, sizeof err) == LB_OK);
        cJSON *vr = cJSON_GetObjectItem(parsed, "view_range");
        CHECK(cJSON_IsArray(vr) && cJSON_GetArraySize(vr) == 2 && cJSON_GetArrayItem(vr, 1)->valueint == 5);
        cJSON_Delete(parsed);
        args = "{\"command\":\"insert\",\"path\":\"/testbed/a\",\"insert_line\":\"3\",\"new_str\":\"x\"}";
        parsed = NULL;
        CHECK(lb_tool_validate_args(fe, args, strlen(args), &parsed, err, sizeof err) == LB_OK);
        CHECK(cJSON_IsNumber(cJSON_GetObjectItem(parsed, "insert_line")) &&
              cJSON_GetObjectItem(parsed, "insert_line")->valueint == 3);
        cJSON_Delete(parsed);
    }
    lb_plugins_free(p);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        printf("FAIL setup: mkdtemp\n");
        return 1;
    }
    RUN(replay_plain_list);
    RUN(replay_trajectory);
    RUN(replay_bad_files);
    RUN(replay_provider_init);
    RUN(text_mode_messages);
    RUN(text_mode_request_body);
    RUN(text_mode_values_coerced_by_schema);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        printf("note: could not remove %s\n", dir);
    return testlib_done();
}
