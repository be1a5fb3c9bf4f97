/* The second example plugin, plugins/wordcount.so (tool `count_words`),
 * through a fake host table: its tool name differs from its file's, it
 * counts code points rather than bytes, reads files through read_file, and
 * links libm through its folder's LDLIBS file. */
#include "testlib.h"

#include "agent/plugin_host.h"
#include "common/config.h"
#include "common/status.h"
#include "llmbox/tool.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

struct llmbox_result {
    char text[4096];
    size_t tl;
    char status[64];
};
struct llmbox_ctx {
    int dummy;
};

static const char *file_path = "/testbed/input/notes.txt";
static const char *file_data = "one two\nthree\n";

static int f_read(llmbox_ctx *c, const char *path, size_t max, const char **data, size_t *len)
{
    (void)c, (void)max;
    *data = "";
    *len = 0;
    if (strcmp(path, file_path))
        return LLMBOX_ERR_NOTFOUND;
    *data = file_data;
    *len = strlen(file_data);
    return LLMBOX_OK;
}

static int f_append(llmbox_result *r, int stream, const char *d, size_t n)
{
    if (stream == LLMBOX_STREAM_TEXT && r->tl + n < sizeof r->text) {
        memcpy(r->text + r->tl, d, n);
        r->tl += n;
        r->text[r->tl] = '\0';
    }
    return LLMBOX_OK;
}

static void f_status(llmbox_result *r, const char *s)
{
    snprintf(r->status, sizeof r->status, "%s", s);
}

static llmbox_host fake = {
    .size = sizeof(llmbox_host),
    .abi_major = LLMBOX_TOOL_ABI_MAJOR,
    .abi_minor = LLMBOX_TOOL_ABI_MINOR,
    .read_file = f_read,
    .result_append = f_append,
    .result_set_status = f_status,
};

static const llmbox_tool *tool;

static int call(const char *args, llmbox_result *r)
{
    memset(r, 0, sizeof *r);
    llmbox_ctx ctx = {0};
    return tool->invoke(&ctx, args, strlen(args), r);
}

TEST(tool_name_is_not_the_file_name)
{
    cJSON *errors = cJSON_CreateArray();
    lb_plugins *p = NULL;
    CHECK(lb_plugins_load_file("plugins/wordcount.so", lb_cfg(), &p, errors) == LB_OK);
    CHECK(cJSON_GetArraySize(errors) == 0 && lb_plugins_count(p) == 1);
    const lb_tool_entry *e = lb_plugins_at(p, 0);
    CHECK(e && !strcmp(e->tool->name, "count_words") && !strcmp(e->file, "plugins/wordcount.so"));
    lb_plugins_free(p);
    cJSON_Delete(errors);
}

TEST(counts_text_in_code_points)
{
    llmbox_result r;
    CHECK(call("{\"text\":\"h\\u00e9llo w\\u00f6rld\\nzwei\\n\"}", &r) == LLMBOX_OK);
    CHECK_STR(r.status, "ok");
    CHECK(strstr(r.text, "2 lines, 3 words, 17 characters, 19 bytes; mean word length 4.7") == r.text);
}

TEST(counts_a_file)
{
    llmbox_result r;
    CHECK(call("{\"path\":\"/testbed/input/notes.txt\"}", &r) == LLMBOX_OK);
    CHECK(strstr(r.text, "2 lines, 3 words, 14 characters, 14 bytes; mean word length 3.7") == r.text);
}

TEST(explains_refusals)
{
    llmbox_result r;
    CHECK(call("{\"path\":\"/nope\"}", &r) == LLMBOX_ERR_NOTFOUND);
    CHECK_STR(r.text, "Cannot read /nope: no such file.");
    CHECK(call("{}", &r) == LLMBOX_ERR_INVALID && strstr(r.text, "exactly one of"));
    CHECK(call("{\"path\":\"a\",\"text\":\"b\"}", &r) == LLMBOX_ERR_INVALID);
    CHECK(call("{\"path\":\"relative.txt\"}", &r) == LLMBOX_ERR_INVALID && strstr(r.text, "absolute"));
    CHECK(call("{\"text\":\"\"}", &r) == LLMBOX_OK && strstr(r.text, "0 lines, 0 words, 0 characters"));
}

int main(void)
{
    void *h = dlopen("plugins/wordcount.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL setup: %s (run `make unit` first)\n", dlerror());
        return 1;
    }
    llmbox_tool_plugin_fn fn;
    void *sym = dlsym(h, LLMBOX_TOOL_ENTRY);
    memcpy(&fn, &sym, sizeof fn);
    const llmbox_plugin *d = fn(&fake);
    if (!d) {
        printf("FAIL setup: the plugin refused the fake host\n");
        return 1;
    }
    tool = &d->tools[0];
    RUN(counts_text_in_code_points);
    RUN(counts_a_file);
    RUN(explains_refusals);
    /* last: loading it as the agent does hands the plugin the real host table */
    RUN(tool_name_is_not_the_file_name);
    dlclose(h);
    return testlib_done();
}
