/* Test fixture: a valid plugin whose tool floods every channel it has:
 * `mib` MiB (default 256) into each result stream and 100,000 log lines.
 * The host must keep what reaches the model, the events and the log small. */
#include "llmbox/tool.h"

#include <cjson/cJSON.h>
#include <string.h>

static const llmbox_host *host;
static char chunk[1 << 20];

static int flood_invoke(llmbox_ctx *ctx, const char *args, size_t len, llmbox_result *r)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(a, "mib");
    int mib = cJSON_IsNumber(m) && m->valueint > 0 ? m->valueint : 256;
    cJSON_Delete(a);
    memset(chunk, 'x', sizeof chunk);
    memcpy(chunk, "FLOOD-START", 11);
    for (int i = 0; i < mib; i++) {
        if (i == mib - 1)
            memcpy(chunk + sizeof chunk - 9, "FLOOD-END", 9);
        for (int s = 0; s < 3; s++)
            host->result_append(r, s, chunk, sizeof chunk);
        if (i == 0)
            memset(chunk, 'x', 11);
    }
    for (int i = 0; i < 100000; i++)
        host->log(ctx, 1, "floodfix: a log line");
    host->result_set_status(r, "ok");
    return LLMBOX_OK;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "floodfix",
    .description = "Floods its output (test fixture).",
    .parameters = "{\"type\":\"object\",\"properties\":{\"mib\":{\"type\":\"integer\"}}}",
    .invoke = flood_invoke,
}};

static const llmbox_plugin plugin = {
    .size = sizeof(llmbox_plugin),
    .abi_major = LLMBOX_TOOL_ABI_MAJOR,
    .abi_minor = LLMBOX_TOOL_ABI_MINOR,
    .name = "floodfix",
    .version = "1.0",
    .tools = tools,
    .n_tools = 1,
};

LLMBOX_PLUGIN_EXPORT const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *h)
{
    host = h;
    return &plugin;
}
