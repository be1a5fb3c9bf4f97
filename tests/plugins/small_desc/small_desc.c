/* Test fixture: a descriptor whose size is smaller than ABI 1.0's, as from
 * a plugin built against a broken or foreign header. */
#include "llmbox/tool.h"

static int inv(llmbox_ctx *c, const char *a, size_t n, llmbox_result *r)
{
    (void)c, (void)a, (void)n, (void)r;
    return LLMBOX_OK;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "small_desc_tool",
    .description = "fixture",
    .parameters = "{\"type\":\"object\"}",
    .invoke = inv,
}};

static const llmbox_plugin plugin = {
    .size = 8, /* only `size` itself */
    .abi_major = LLMBOX_TOOL_ABI_MAJOR,
    .abi_minor = LLMBOX_TOOL_ABI_MINOR,
    .name = "small_desc",
    .version = "1.0",
    .tools = tools,
    .n_tools = 1,
};

LLMBOX_PLUGIN_EXPORT const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *h)
{
    (void)h;
    return &plugin;
}
