/* MCP's JSON-RPC messages (server/mcp/mcp_rpc.c) and its tool table
 * (server/mcp/mcp_tools.c): what a message is sorted into, which error a
 * malformed one gets and with which id, and the schemas tools/list shows. */
#include "testlib.h"

#include "common/status.h"
#include "mcp/mcp_http.h"
#include "mcp/mcp_rpc.h"
#include "mcp/mcp_tools.h"

#include <stdlib.h>
#include <string.h>

static int parse(const char *s, lb_mcp_msg *m, int *code, cJSON **id)
{
    char msg[400] = "";
    int rc = lb_mcp_rpc_parse(s, strlen(s), m, code, id, msg, sizeof msg);
    if (rc != LB_OK && (!msg[0] || msg[strlen(msg) - 1] != '.'))
        return -99; /* every refusal says why, as a sentence */
    return rc;
}

TEST(rpc_sorts_requests_notifications_and_responses)
{
    lb_mcp_msg m;
    int code;
    cJSON *id = NULL;
    CHECK(parse("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"ping\"}", &m, &code, &id) == LB_OK);
    CHECK(m.kind == LB_MCP_REQUEST && !strcmp(m.method, "ping") && cJSON_IsString(m.id) && !m.params);
    lb_mcp_msg_free(&m);
    cJSON_Delete(id);
    CHECK(parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\",\"params\":{}}", &m, &code, &id) ==
          LB_OK);
    CHECK(m.kind == LB_MCP_NOTIFICATION && !m.id && cJSON_IsObject(m.params));
    lb_mcp_msg_free(&m);
    CHECK(parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &m, &code, &id) == LB_OK);
    CHECK(m.kind == LB_MCP_RESPONSE && !m.method);
    lb_mcp_msg_free(&m);
    cJSON_Delete(id);
}

TEST(rpc_refuses_malformed_messages_with_the_right_code_and_id)
{
    static const struct {
        const char *text;
        int code;
        int has_id;
    } cases[] = {
        {"{nope", LB_RPC_PARSE_ERROR, 0},
        {"", LB_RPC_PARSE_ERROR, 0},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", LB_RPC_INVALID_REQUEST, 0},
        {"{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}", LB_RPC_INVALID_REQUEST, 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", LB_RPC_INVALID_REQUEST, 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", LB_RPC_INVALID_REQUEST, 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\"}", LB_RPC_INVALID_REQUEST, 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":3}", LB_RPC_INVALID_REQUEST, 1},
        {"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":1,\"error\":{}}", LB_RPC_INVALID_REQUEST, 1},
        {"{\"jsonrpc\":\"2.0\"}", LB_RPC_INVALID_REQUEST, 0},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000\",\"method\":\"ping\"}", LB_RPC_PARSE_ERROR, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lb_mcp_msg m;
        int code = 0;
        cJSON *id = NULL;
        int rc = parse(cases[i].text, &m, &code, &id);
        CHECK(rc != LB_OK && rc != -99);
        CHECK(code == cases[i].code && !m.root);
        CHECK(!!id == cases[i].has_id);
        cJSON_Delete(id);
    }
}

TEST(rpc_budget_refuses_deep_nesting_before_building_it)
{
    char deep[400];
    int n = snprintf(deep, sizeof deep, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":");
    for (int i = 0; i < 40; i++)
        deep[n++] = '[';
    for (int i = 0; i < 40; i++)
        deep[n++] = ']';
    memcpy(deep + n, "}}", 3);
    lb_mcp_msg m;
    int code = 0;
    cJSON *id = NULL;
    CHECK(parse(deep, &m, &code, &id) != LB_OK && code == LB_RPC_PARSE_ERROR);
    cJSON_Delete(id);
}

TEST(rpc_answers_echo_the_id)
{
    cJSON *id = cJSON_CreateNumber(42);
    cJSON *r = lb_mcp_rpc_error(id, LB_RPC_METHOD_NOT_FOUND, "Method not found.");
    char *t = cJSON_PrintUnformatted(r);
    CHECK(t && !strcmp(t, "{\"jsonrpc\":\"2.0\",\"id\":42,\"error\":{\"code\":-32601,\"message\":\"Method not found.\"}}"));
    free(t);
    cJSON_Delete(r);
    r = lb_mcp_rpc_error(NULL, LB_RPC_PARSE_ERROR, "Parse error.");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "id")));
    cJSON_Delete(r);
    cJSON_Delete(id);
}

TEST(tools_list_has_every_tool_with_an_object_schema)
{
    cJSON *o = lb_mcp_tools_list();
    const cJSON *t;
    int n = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(o, "tools")) {
        const cJSON *s = cJSON_GetObjectItem(t, "inputSchema");
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "type")), "object"));
        CHECK(lb_mcp_tool_find(cJSON_GetStringValue(cJSON_GetObjectItem(t, "name"))) != NULL);
        n++;
    }
    CHECK(n == 9);
    CHECK(!lb_mcp_tool_find("bash"));
    cJSON_Delete(o);
}

TEST(protocol_versions_known)
{
    CHECK(lb_mcp_version_known("2025-11-25") && lb_mcp_version_known("2025-06-18"));
    CHECK(!lb_mcp_version_known("2024-10-07") && !lb_mcp_version_known(""));
}

int main(void)
{
    RUN(rpc_sorts_requests_notifications_and_responses);
    RUN(rpc_refuses_malformed_messages_with_the_right_code_and_id);
    RUN(rpc_budget_refuses_deep_nesting_before_building_it);
    RUN(rpc_answers_echo_the_id);
    RUN(tools_list_has_every_tool_with_an_object_schema);
    RUN(protocol_versions_known);
    return testlib_done();
}
