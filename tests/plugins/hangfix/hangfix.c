/* Test fixture: a valid plugin whose tool never returns and never asks
 * whether the task was cancelled. Only the agent's watchdog can end it. */
#include "llmbox/tool.h"

#include <time.h>

static int hang_invoke(llmbox_ctx *ctx, const char *args, size_t len, llmbox_result *r)
{
    (void)ctx, (void)args, (void)len, (void)r;
    for (;;) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
    return LLMBOX_OK;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "hangfix",
    .description = "Never returns (test fixture).",
    .parameters = "{\"type\":\"object\",\"properties\":{}}",
    .invoke = hang_invoke,
}};

static const llmbox_plugin plugin = {
    .size = sizeof(llmbox_plugin),
    .abi_major = LLMBOX_TOOL_ABI_MAJOR,
    .abi_minor = LLMBOX_TOOL_ABI_MINOR,
    .name = "hangfix",
    .version = "1.0",
    .tools = tools,
    .n_tools = 1,
};

LLMBOX_PLUGIN_EXPORT const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *h)
{
    (void)h;
    return &plugin;
}
