/* A unit test's llmbox.conf: load() writes text to the file `conf` names
 * (the test sets it to a path of its own in main) and loads it;
 * error_is() and error_has() look at the sentence the loader gave. One
 * copy for the tests of the config files' sections (settings, users,
 * secrets, MCP servers). */
#ifndef LB_TEST_CONF_FILE_H
#define LB_TEST_CONF_FILE_H

#include "common/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char conf[300];

/* Writes text as the config file and loads it. */
static inline int load(const char *text)
{
    FILE *f = fopen(conf, "w");
    if (!f)
        return -1;
    fputs(text, f);
    fclose(f);
    setenv("LLMBOX_CONF", conf, 1);
    return lb_config_load(lb_cfg_mut());
}

/* The error names file:line and says what. */
static inline int error_is(int line, const char *what)
{
    char where[sizeof conf + 32];
    snprintf(where, sizeof where, "%s:%d: ", conf, line);
    const char *e = lb_config_error();
    int ok = !strncmp(e, where, strlen(where)) && strstr(e, what);
    if (!ok)
        printf("    error was: %s\n", e);
    return ok;
}

/* The error says what, wherever. */
static inline int error_has(const char *what)
{
    int ok = strstr(lb_config_error(), what) != NULL;
    if (!ok)
        printf("    error was: %s\n", lb_config_error());
    return ok;
}

#endif
