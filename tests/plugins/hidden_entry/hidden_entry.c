/* Test fixture: defines llmbox_tool_plugin_v1 but does not export it
 * (no LLMBOX_PLUGIN_EXPORT under -fvisibility=hidden), the mistake the
 * loader names as "defined but not exported". */
#include "llmbox/tool.h"

static int inv(llmbox_ctx *c, const char *a, size_t n, llmbox_result *r)
{
    (void)c, (void)a, (void)n, (void)r;
    return LLMBOX_OK;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "hidden_tool",
    .description = "fixture",
    .parameters = "{\"type\":\"object\"}",
    .invoke = inv,
}};

static const llmbox_plugin plugin = {
    .size = sizeof(llmbox_plugin),
    .abi_major = 1,
    .abi_minor = 0,
    .name = "hidden_entry",
    .version = "1.0",
    .tools = tools,
    .n_tools = 1,
};

const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *h);
const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *h)
{
    (void)h;
    return &plugin;
}
