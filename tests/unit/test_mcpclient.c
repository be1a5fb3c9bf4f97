/* The MCP client of the agent (server/mcpclient/) and its configuration
 * (common/config_mcp.c): [mcp] sections and their mistakes, the task
 * option, the framing and message parsers, the tool list's caps, results
 * made into observations, and a session over a scripted transport (ids
 * matched out of order, a server's request answered, a flood bounded, a
 * silent server timed out). */
#include "testlib.h"
#include "conf_file.h"

#include "common/config.h"
#include "common/status.h"
#include "common/task_opts.h"
#include "common/util.h"
#include "mcpclient/mcpc_lines.h"
#include "mcpclient/mcpc_msg.h"
#include "mcpclient/mcpc_result.h"
#include "mcpclient/mcpc_session.h"
#include "mcpclient/mcpc_sse.h"
#include "mcpclient/mcpc_tools.h"
#include "mcpclient/mcpc_transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


TEST(config_sections_and_model_lists)
{
    unsetenv("LLMBOX_LLM_URL");
    CHECK(load("[model \"m\"]\nbase_url = http://127.0.0.1:9/v1\nmcp = files, web\n\n"
               "[mcp \"files\"]\ncommand = python3 /opt/s.py\ntimeout_s = 5\n\n"
               "[mcp.web]\nurl = https://mcp.example.com/mcp\nheader = Authorization: Bearer abc\n"
               "header3 = X-Team: 7\n") == LB_OK);
    const lb_config *c = lb_cfg();
    const lb_mcp_cfg *f = lb_cfg_mcp(c, "files"), *w = lb_cfg_mcp(c, "web");
    CHECK(c->n_mcp == 2 && f && w && !lb_cfg_mcp(c, "nope"));
    CHECK(f && f->timeout_s == 5 && !strcmp(f->command, "python3 /opt/s.py") && !f->url[0]);
    CHECK(w && w->timeout_s == 60 && w->n_headers == 3 && !strcmp(w->headers[0], "Authorization: Bearer abc") &&
          !w->headers[1][0] && !strcmp(w->headers[2], "X-Team: 7"));
    char names[LB_CFG_MAX_MCP][LB_CFG_MCP_NAME], err[700];
    int n = 0;
    CHECK(lb_cfg_mcp_list(c, " web,files ,web", names, LB_CFG_MAX_MCP, &n, err, sizeof err) == LB_OK && n == 2 &&
          !strcmp(names[0], "web") && !strcmp(names[1], "files"));
    CHECK(lb_cfg_mcp_list(c, "files, gh\x01st", names, LB_CFG_MAX_MCP, &n, err, sizeof err) == LB_E_NOTFOUND);
    CHECK(strstr(err, "There is no MCP server called \"gh?st\"; the configured ones are: files, web.") != NULL);
    CHECK(lb_cfg_mcp_list(c, "files,web", names, 1, &n, err, sizeof err) == LB_E_INVAL);
}

TEST(config_mistakes_are_sentences_without_secrets)
{
    CHECK(load("[mcp \"a\"]\ncommand = x\nurl = http://h/mcp\n") != LB_OK && error_has("exactly one of command"));
    CHECK(load("[mcp \"a\"]\ntimeout_s = 5\n") != LB_OK && error_has("exactly one of command"));
    CHECK(load("[mcp \"a__b\"]\ncommand = x\n") != LB_OK && error_has("without \"__\""));
    CHECK(load("[mcp \"a_\"]\ncommand = x\n") != LB_OK && error_has("not ending in '_'"));
    CHECK(load("[mcp \"a\"]\nurl = ftp://h/\n") != LB_OK && error_has("http:// or https://"));
    CHECK(load("[mcp \"a\"]\ncommand = x\nheader = Authorization: Bearer s3cr3t\n") != LB_OK &&
          error_has("never into the sandbox") && !strstr(lb_config_error(), "s3cr3t"));
    CHECK(load("[mcp \"a\"]\nurl = http://h/\nheader = Bad Name: s3cr3t\n") != LB_OK && error_has("Name: value") &&
          !strstr(lb_config_error(), "s3cr3t"));
    CHECK(load("[mcp \"a\"]\nurl = http://h/\nbogus = 1\n") != LB_OK && error_has("not a key of an MCP server"));
    CHECK(load("[mcp \"a\"]\nurl = http://h/\ntimeout_s = 0\n") != LB_OK && error_has("1 to 3600"));
    CHECK(load("[model \"m\"]\nbase_url = http://127.0.0.1:9/v1\nmcp = ghost\n") != LB_OK &&
          error_has("There is no MCP server called \"ghost\""));
    CHECK(load("[model \"m\"]\nmcp = a;b\n") != LB_OK && error_has("names of [mcp"));
    CHECK(load("[mcpx \"a\"]\ncommand = x\n") != LB_OK && error_has("[mcp \"NAME\"]"));
}

TEST(task_option_mcp)
{
    lb_task_opts o;
    char err[300];
    CHECK(lb_task_opts_parse("{\"mcp\":[\"a\",\"b-2\"]}", &o, err, sizeof err) == LB_OK && o.n_mcp == 2 &&
          !strcmp(o.mcp[1], "b-2"));
    CHECK(lb_task_opts_parse("{\"mcp\":\"a, b\"}", &o, err, sizeof err) == LB_OK && o.n_mcp == 2);
    CHECK(lb_task_opts_parse("{\"mcp\":[]}", &o, err, sizeof err) == LB_E_INVAL && strstr(err, "mcp"));
    CHECK(lb_task_opts_parse("{\"mcp\":[\"a,b\"]}", &o, err, sizeof err) == LB_E_INVAL);
    CHECK(lb_task_opts_parse("{\"mcp\":[1]}", &o, err, sizeof err) == LB_E_INVAL);
    CHECK(lb_task_opts_parse("{\"mcp\":\"a b c d e f g h i\"}", &o, err, sizeof err) == LB_E_INVAL);
    CHECK(lb_task_opts_set(&o, "mcp", "x", err, sizeof err) == LB_OK && o.n_mcp == 1);
}

TEST(lines_frame_and_drop_long_ones)
{
    lb_mcpc_lines l;
    lb_mcpc_lines_init(&l, 8);
    const char *line;
    size_t len;
    const char *in = "ab\r\n\n  \nthis-is-too-long\ncd";
    CHECK(lb_mcpc_lines_feed(&l, in, strlen(in)) == LB_OK);
    CHECK(lb_mcpc_lines_next(&l, &line, &len) && len == 2 && !strcmp(line, "ab"));
    CHECK(!lb_mcpc_lines_next(&l, &line, &len) && l.dropped == 1);
    CHECK(lb_mcpc_lines_feed(&l, "e\n", 2) == LB_OK);
    CHECK(lb_mcpc_lines_next(&l, &line, &len) && !strcmp(line, "cde"));
    /* a line that never ends is not held past the cap */
    CHECK(lb_mcpc_lines_feed(&l, "0123456789abcdef", 16) == LB_OK && !lb_mcpc_lines_next(&l, &line, &len));
    CHECK(lb_mcpc_lines_feed(&l, "more\nok\n", 8) == LB_OK);
    CHECK(lb_mcpc_lines_next(&l, &line, &len) && !strcmp(line, "ok") && l.dropped == 2);
    lb_mcpc_lines_free(&l);
}

static int collect(void *arg, const char *d, size_t n)
{
    char *out = arg;
    size_t at = strlen(out);
    snprintf(out + at, 200 - at, "[%.*s]", (int)n, d);
    return LB_OK;
}

TEST(sse_events_joined_and_capped)
{
    lb_mcpc_sse s;
    char out[200] = "";
    lb_mcpc_sse_init(&s, 16);
    const char *in = ": ping\nevent: message\ndata: {\"a\":\r\ndata:1}\r\n\r\nid: 3\ndata: 0123456789abcdefXYZ\n\n"
                     "data: ok\n\n";
    for (const char *p = in; *p; p++) /* byte by byte: cut anywhere */
        CHECK(lb_mcpc_sse_feed(&s, p, 1, collect, out) == LB_OK);
    CHECK(!strcmp(out, "[{\"a\":\n1}][ok]") && s.dropped == 1);
    lb_mcpc_sse_free(&s);
}

TEST(messages_sorted_and_refused)
{
    lb_mcpc_msg m;
    char err[300];
    CHECK(lb_mcpc_msg_parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", 36, &m, err, sizeof err) == LB_OK);
    CHECK(m.kind == LB_MCPC_RESPONSE && m.id_ours && m.id == 7 && m.result && !m.error);
    lb_mcpc_msg_free(&m);
    CHECK(lb_mcpc_msg_parse("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"ping\"}", 42, &m, err, sizeof err) ==
          LB_OK && m.kind == LB_MCPC_REQUEST && !strcmp(m.method, "ping"));
    lb_mcpc_msg_free(&m);
    const char *bad[] = {"[]", "{\"jsonrpc\":\"1.0\",\"id\":1,\"result\":1}", "{\"jsonrpc\":\"2.0\",\"id\":1}",
                         "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}", "nope",
                         "{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(lb_mcpc_msg_parse(bad[i], strlen(bad[i]), &m, err, sizeof err) != LB_OK && err[0] && !m.root);
    }
    char deep[300] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":";
    size_t at = strlen(deep);
    for (int i = 0; i < 70; i++)
        deep[at++] = '[';
    for (int i = 0; i < 70; i++)
        deep[at++] = ']';
    deep[at++] = '}';
    CHECK(lb_mcpc_msg_parse(deep, at, &m, err, sizeof err) != LB_OK);
}

static cJSON *tools_result(int n, int depth, size_t desc)
{
    cJSON *r = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(r, "tools");
    for (int i = 0; i < n; i++) {
        cJSON *t = cJSON_CreateObject();
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        cJSON_AddStringToObject(t, "name", name);
        char *d = calloc(1, desc + 1);
        memset(d, 'd', desc);
        cJSON_AddStringToObject(t, "description", d);
        free(d);
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "type", "string");
        for (int k = 0; k < depth; k++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToObject(cJSON_AddObjectToObject(o, "properties"), "x", s);
            s = o;
        }
        cJSON_AddItemToObject(t, "inputSchema", s);
        cJSON_AddItemToArray(arr, t);
    }
    return r;
}

TEST(tool_lists_capped_whole)
{
    lb_mcpc_toolset ts = {0};
    size_t bytes = 0;
    char note[400], err[400];
    cJSON *r = tools_result(3, 2, 5000);
    CHECK(lb_mcpc_tools_add(&ts, "srv", r, &bytes, note, sizeof note, err, sizeof err) == LB_OK && ts.n == 3);
    CHECK(!strcmp(ts.t[0].offered, "srv__t0") && strlen(ts.t[0].description) == LB_MCPC_DESC_MAX && !note[0]);
    cJSON_Delete(r);
    bytes = 0;
    r = tools_result(1, 7, 10); /* 7 objects with properties: 14 levels */
    CHECK(lb_mcpc_tools_add(&ts, "deep", r, &bytes, note, sizeof note, err, sizeof err) == LB_E_TOOBIG);
    CHECK(strstr(err, "nested more than 12 levels") && ts.n == 3);
    cJSON_Delete(r);
    bytes = 0;
    r = tools_result(LB_MCPC_TOOLS_MAX + 1, 0, 0);
    CHECK(lb_mcpc_tools_add(&ts, "many", r, &bytes, note, sizeof note, err, sizeof err) == LB_E_TOOBIG &&
          strstr(err, "more than 64 tools") && ts.n == 3);
    cJSON_Delete(r);
    bytes = 0;
    r = tools_result(64, 0, 2048); /* 64 x 2 KiB of descriptions and their schemas: over 128 KiB in all */
    CHECK(lb_mcpc_tools_add(&ts, "big", r, &bytes, note, sizeof note, err, sizeof err) == LB_E_TOOBIG && ts.n == 3);
    cJSON_Delete(r);
    bytes = 0;
    r = cJSON_Parse("{\"tools\":[{\"name\":\"a.b\",\"inputSchema\":{}},{\"name\":\"ok\",\"inputSchema\":{}}]}");
    CHECK(lb_mcpc_tools_add(&ts, "x", r, &bytes, note, sizeof note, err, sizeof err) == LB_OK && ts.n == 4 &&
          strstr(note, "\"a.b\"") && !strcmp(ts.t[3].offered, "x__ok"));
    cJSON_Delete(r);
    r = cJSON_Parse("{\"tools\":[{\"name\":\"ok\",\"inputSchema\":[]}]}");
    CHECK(lb_mcpc_tools_add(&ts, "y", r, &bytes, note, sizeof note, err, sizeof err) == LB_E_INVAL);
    cJSON_Delete(r);
    lb_mcpc_tools_free(&ts);
}

TEST(results_become_text_and_images)
{
    cJSON *r = cJSON_Parse("{\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":\"one\"},"
                           "{\"type\":\"image\",\"data\":\"iVBORw0KGgo=\",\"mimeType\":\"image/png\"},"
                           "{\"type\":\"image\",\"data\":\"not base64!\",\"mimeType\":\"image/png\"},"
                           "{\"type\":\"resource_link\",\"uri\":\"file:///x\"},"
                           "{\"type\":\"resource\",\"resource\":{\"uri\":\"u\",\"text\":\"two\"}}]}");
    lb_mcpc_result res;
    char err[300];
    CHECK(lb_mcpc_result_parse(r, &res, err, sizeof err) == LB_OK);
    CHECK(res.is_error && res.n_images == 1 && res.images_dropped == 1 && !strcmp(res.images[0].ext, "png"));
    CHECK(!strcmp(res.text, "one\n\n[resource_link content file:///x not shown]\n\ntwo"));
    lb_mcpc_result_free(&res);
    cJSON_Delete(r);
    r = cJSON_Parse("{\"content\":[],\"structuredContent\":{\"n\":3}}");
    CHECK(lb_mcpc_result_parse(r, &res, err, sizeof err) == LB_OK && !strcmp(res.text, "{\"n\":3}"));
    lb_mcpc_result_free(&res);
    cJSON_Delete(r);
    r = cJSON_Parse("{\"nocontent\":1}");
    CHECK(lb_mcpc_result_parse(r, &res, err, sizeof err) == LB_E_INVAL && strstr(err, "content"));
    lb_mcpc_result_free(&res);
    cJSON_Delete(r);
}

/* ---- a session over a scripted transport ---- */

typedef struct fake {
    lb_mcpc_transport base;
    const char *const *script; /* what the "server" sends after each of our requests; "%d": the request's id */
    int step, n_script;
    char queue[8][2000];
    int qn, qhead;
    int flood;                 /* send this many notifications before any answer */
    char sent[8][300];         /* what we sent, first 8 */
    int n_sent;
    char out[2000];
} fake;

static int f_send(lb_mcpc_transport *t, const char *msg, size_t len, int64_t dl, char *err, size_t errsz)
{
    fake *f = (fake *)t;
    (void)dl, (void)err, (void)errsz;
    if (f->n_sent < 8)
        snprintf(f->sent[f->n_sent++], sizeof f->sent[0], "%.*s", (int)len, msg);
    const char *idp = strstr(msg, "\"id\":");
    if (!idp || strstr(msg, "\"result\""))
        return LB_OK; /* a notification, or our answer to the server's request */
    int id = (int)strtol(idp + 5, NULL, 10);
    f->qn = f->qhead = 0;
    if (f->step < f->n_script)
        for (const char *p = f->script[f->step++]; *p && f->qn < 8;) {
            size_t n = strcspn(p, "|");
            snprintf(f->queue[f->qn++], sizeof f->queue[0], "%.*s", (int)n, p);
            p += n + (p[n] == '|');
        }
    for (int i = 0; i < f->qn; i++) {
        char *at = strstr(f->queue[i], "ID");
        if (at) {
            char tmp[2000];
            snprintf(tmp, sizeof tmp, "%.*s%d%s", (int)(at - f->queue[i]), f->queue[i], id, at + 2);
            snprintf(f->queue[i], sizeof f->queue[0], "%s", tmp);
        }
    }
    return LB_OK;
}

static int f_recv(lb_mcpc_transport *t, int64_t dl, const char **msg, size_t *len, char *err, size_t errsz)
{
    fake *f = (fake *)t;
    (void)err, (void)errsz;
    if (f->flood > 0) {
        f->flood--;
        snprintf(f->out, sizeof f->out, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
    } else if (f->qhead < f->qn) {
        snprintf(f->out, sizeof f->out, "%s", f->queue[f->qhead++]);
    } else {
        while (lb_mono_ms() < dl) /* a server that says nothing more */
            usleep(1000);
        return LB_E_TIMEOUT;
    }
    *msg = f->out;
    *len = strlen(f->out);
    return LB_OK;
}

static void f_close(lb_mcpc_transport *t)
{
    (void)t; /* on the test's stack */
}

#define INIT_OK "{\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"protocolVersion\":\"2025-03-26\",\"serverInfo\":{\"name\":\"f\"}}}"

TEST(session_matches_ids_and_bounds_the_server)
{
    static const char *const script[] = {
        INIT_OK,
        /* a stray answer and a list change first, then ours */
        "{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{\"wrong\":1}}|"
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}|"
        "{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"method\":\"ping\"}|"
        "{\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"right\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":ID,\"error\":{\"code\":-32602,\"message\":\"bad\\nargs\"}}",
        "", /* says nothing: the timeout */
        "{\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{}}",
        "this is not json",
    };
    fake f = {.base = {.send = f_send, .recv = f_recv, .close = f_close}, .script = script, .n_script = 6};
    lb_mcpc_session s;
    char err[600];
    CHECK(lb_mcpc_session_start(&s, "fk", &f.base, 300, err, sizeof err) == LB_OK);
    CHECK(!strcmp(f.base.proto, "2025-03-26") && !strcmp(s.server_name, "f"));
    CHECK(strstr(f.sent[1], "notifications/initialized") != NULL);
    cJSON *res = NULL;
    CHECK(lb_mcpc_session_request(&s, "tools/list", NULL, &res, err, sizeof err) == LB_OK);
    CHECK(cJSON_GetObjectItem(res, "right") && !cJSON_GetObjectItem(res, "wrong") && s.list_changed == 1);
    cJSON_Delete(res);
    CHECK(strstr(f.sent[3], "\"id\":\"s-1\"") && strstr(f.sent[3], "\"result\":{}")); /* the ping answered */
    CHECK(lb_mcpc_session_request(&s, "tools/call", NULL, &res, err, sizeof err) == LB_E_PROTO && !res);
    CHECK(strstr(err, "answered tools/call with an error: bad args (-32602)") != NULL);
    int64_t t0 = lb_mono_ms();
    CHECK(lb_mcpc_session_request(&s, "tools/call", NULL, &res, err, sizeof err) == LB_E_TIMEOUT);
    CHECK(lb_mono_ms() - t0 < 5000 && strstr(err, "did not answer tools/call within 0 s") != NULL);
    f.flood = LB_MCPC_OTHER_MAX + 10;
    CHECK(lb_mcpc_session_request(&s, "tools/call", NULL, &res, err, sizeof err) == LB_E_TOOBIG);
    CHECK(strstr(err, "more than 1000 other messages") != NULL);
    f.flood = 0;
    f.step = 5;
    CHECK(lb_mcpc_session_request(&s, "tools/call", NULL, &res, err, sizeof err) == LB_E_PROTO);
    CHECK(strstr(err, "sent a message this client refuses") != NULL);
    lb_mcpc_session_close(&s);
}

int main(void)
{
    snprintf(conf, sizeof conf, "/tmp/lb-mcpc-%d.conf", (int)getpid());
    RUN(config_sections_and_model_lists);
    RUN(config_mistakes_are_sentences_without_secrets);
    RUN(task_option_mcp);
    RUN(lines_frame_and_drop_long_ones);
    RUN(sse_events_joined_and_capped);
    RUN(messages_sorted_and_refused);
    RUN(tool_lists_capped_whole);
    RUN(results_become_text_and_images);
    RUN(session_matches_ids_and_bounds_the_server);
    unlink(conf);
    return testlib_done();
}
