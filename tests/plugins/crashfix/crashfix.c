/* Test fixture: a valid plugin whose tool dereferences NULL in invoke.
 * Only its task may end, with a reason that names the tool: the agent's
 * crash handler logs plugins/crashfix.so+OFFSET and ends the task (outputs
 * and trajectory kept); if that fails, the process dies of SIGSEGV and the
 * web's reaper says the same. */
#include "llmbox/tool.h"

#include <stddef.h>

/* volatile, so the compiler cannot see it is NULL and turn the store
 * into a trap instruction: a real SIGSEGV, like a real bug */
static int *volatile nowhere;

static int crash_invoke(llmbox_ctx *ctx, const char *args, size_t len, llmbox_result *r)
{
    (void)ctx, (void)args, (void)len, (void)r;
    *nowhere = 42;
    return LLMBOX_OK;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "crashfix",
    .description = "Crashes the agent (test fixture).",
    .parameters = "{\"type\":\"object\",\"properties\":{}}",
    .invoke = crash_invoke,
}};

static const llmbox_plugin plugin = {
    .size = sizeof(llmbox_plugin),
    .abi_major = LLMBOX_TOOL_ABI_MAJOR,
    .abi_minor = LLMBOX_TOOL_ABI_MINOR,
    .name = "crashfix",
    .version = "1.0",
    .tools = tools,
    .n_tools = 1,
};

LLMBOX_PLUGIN_EXPORT const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *h)
{
    (void)h;
    return &plugin;
}
