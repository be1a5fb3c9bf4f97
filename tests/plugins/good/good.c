/* Test fixture: a valid plugin with one tool, echo_test, that writes its
 * "text" argument `repeat` times to a stream (0 text, 1 stdout, 2 stderr). */
#include "llmbox/tool.h"

#include <cjson/cJSON.h>
#include <string.h>

static const llmbox_host *host;

static int echo_invoke(llmbox_ctx *ctx, const char *args, size_t len, llmbox_result *r)
{
    (void)ctx;
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(a, "text");
    const cJSON *rep = cJSON_GetObjectItemCaseSensitive(a, "repeat");
    const cJSON *stream = cJSON_GetObjectItemCaseSensitive(a, "stream");
    const char *t = cJSON_IsString(text) ? text->valuestring : "";
    int n = cJSON_IsNumber(rep) ? rep->valueint : 1;
    int s = cJSON_IsNumber(stream) ? stream->valueint : LLMBOX_STREAM_TEXT;
    for (int i = 0; i < n; i++)
        host->result_append(r, s, t, strlen(t));
    host->result_set_status(r, "ok");
    cJSON_Delete(a);
    return LLMBOX_OK;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "echo_test",
    .description = "Echoes text back (test fixture). Timeout {cmd_timeout_s} s.",
    .parameters = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
                  "\"repeat\":{\"type\":\"integer\"},\"stream\":{\"type\":\"integer\"},"
                  "\"flag\":{\"type\":\"boolean\"},\"ratio\":{\"type\":\"number\"},"
                  "\"list\":{\"type\":\"array\"},\"obj\":{\"type\":\"object\"}},"
                  "\"required\":[\"text\"]}",
    .invoke = echo_invoke,
}};

static const llmbox_plugin plugin = {
    .size = sizeof(llmbox_plugin),
    .abi_major = LLMBOX_TOOL_ABI_MAJOR,
    .abi_minor = LLMBOX_TOOL_ABI_MINOR,
    .name = "good",
    .version = "1.0",
    .tools = tools,
    .n_tools = 1,
};

LLMBOX_PLUGIN_EXPORT const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *h)
{
    host = h;
    return &plugin;
}
