/* `llmbox plugin check FILE.so`: loads one plugin the way an agent does
 * (the same checks, the same one-line refusals) and prints its tools with
 * their descriptions and schemas, or the one error; exit 0 when it would
 * load. For a plugin author before the plugin goes into plugins/. */
#include "agent/plugin_host.h"
#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "entry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: llmbox plugin check FILE.so\n"
               "\n"
               "Loads FILE.so as an agent would and prints its tools and their JSON Schema,\n"
               "or why an agent would refuse it. Exit status 0 when it loads.\n");
}

static int check(const lb_config *cfg, const char *path)
{
    cJSON *errors = cJSON_CreateArray();
    lb_plugins *p = NULL;
    if (!errors || lb_plugins_load_file(path, cfg, &p, errors) != LB_OK) {
        fprintf(stderr, "llmbox plugin: out of memory\n");
        cJSON_Delete(errors);
        return 1;
    }
    int rc = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, errors)
    {
        printf("refused: %s\n", e->valuestring);
        rc = 1;
    }
    for (size_t i = 0; i < lb_plugins_count(p); i++) {
        const lb_tool_entry *t = lb_plugins_at(p, i);
        char *schema = cJSON_Print(t->schema);
        printf("%stool %s (%s)%s\n", i ? "\n" : "", t->tool->name, t->file,
               lb_cfg_tool_enabled(cfg, t->tool->name)
                   ? ""
                   : ": loads, but is not offered: add it to tools = ... in llmbox.conf");
        printf("description:\n%s\nparameters:\n%s\n", t->description, schema ? schema : "(out of memory)");
        free(schema);
    }
    if (!rc)
        printf("\n%s: ok, %zu tool(s); an agent loads it from %s\n", path, lb_plugins_count(p),
               cfg->plugin_dir);
    lb_plugins_free(p);
    cJSON_Delete(errors);
    return fflush(stdout) == 0 ? rc : 1;
}

int lb_plugin_main(int argc, char **argv)
{
    /* refusals go to stdout as "refused: ..." (and, as an agent logs them, to stderr) */
    lb_log_init("plugin");
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 3 || strcmp(argv[1], "check")) {
        usage(stderr);
        return 2;
    }
    return check(lb_cfg(), argv[2]);
}
