/* The checks of an MCP server's tool list; the contract is mcpc_tools.h. */
#include "mcpclient/mcpc_tools.h"

#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lb_mcpc_json_depth(const cJSON *v, int stop)
{
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return 0;
    if (stop <= 0)
        return 1;
    int deepest = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, v)
    {
        int d = lb_mcpc_json_depth(c, stop - 1);
        if (d > deepest)
            deepest = d;
        if (deepest >= stop)
            break;
    }
    return 1 + deepest;
}

static void tool_free(lb_mcpc_tool *t)
{
    free(t->description);
    cJSON_Delete(t->schema);
    memset(t, 0, sizeof *t);
}

void lb_mcpc_tools_truncate(lb_mcpc_toolset *ts, size_t from)
{
    while (ts->n > from)
        tool_free(&ts->t[--ts->n]);
}

void lb_mcpc_tools_free(lb_mcpc_toolset *ts)
{
    lb_mcpc_tools_truncate(ts, 0);
    free(ts->t);
    ts->t = NULL;
}

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    return n && n <= LB_MCPC_NAME_MAX &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static size_t server_count(const lb_mcpc_toolset *ts, const char *server)
{
    size_t n = 0, k = strlen(server);
    for (size_t i = 0; i < ts->n; i++)
        n += !strncmp(ts->t[i].offered, server, k) && !strncmp(ts->t[i].offered + k, "__", 2);
    return n;
}

int lb_mcpc_tools_add(lb_mcpc_toolset *ts, const char *server, const cJSON *result, size_t *bytes, char *note,
                      size_t notesz, char *err, size_t errsz)
{
    note[0] = '\0';
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(result, "tools");
    if (!cJSON_IsArray(tools)) {
        snprintf(err, errsz, "its tools/list answer has no \"tools\" list");
        return LB_E_INVAL;
    }
    size_t have = server_count(ts, server), start = ts->n, skipped = 0;
    int n = cJSON_GetArraySize(tools);
    if (have + (size_t)n > LB_MCPC_TOOLS_MAX) {
        snprintf(err, errsz, "it lists more than %d tools", LB_MCPC_TOOLS_MAX);
        return LB_E_TOOBIG;
    }
    lb_mcpc_tool *nt = realloc(ts->t, (ts->n + (size_t)n + 1) * sizeof *nt);
    if (!nt) {
        snprintf(err, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    ts->t = nt;
    char first_skipped[80] = "";
    const cJSON *it;
    int rc = LB_OK;
    cJSON_ArrayForEach(it, tools)
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(it, "inputSchema");
        const char *desc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "description"));
        if (!cJSON_IsObject(it) || !name) {
            snprintf(err, errsz, "its tools/list answer has a tool without a name");
            rc = LB_E_INVAL;
            break;
        }
        char offered[LB_MCPC_NAME_MAX + 8];
        int w = snprintf(offered, sizeof offered, "%s__%s", server, name);
        if (!name_ok(name) || w < 0 || (size_t)w > LB_MCPC_NAME_MAX) {
            if (!skipped++) {
                snprintf(first_skipped, sizeof first_skipped, "%.60s", name);
                lb_utf8_trim_partial(first_skipped);
                for (char *q = first_skipped; *q; q++)
                    if ((unsigned char)*q < 0x20 || *q == '"' || *q == 0x7f)
                        *q = '?';
            }
            continue;
        }
        if (!cJSON_IsObject(schema)) {
            snprintf(err, errsz, "its tool %s has no inputSchema object", name);
            rc = LB_E_INVAL;
            break;
        }
        int depth = lb_mcpc_json_depth(schema, LB_MCPC_SCHEMA_DEPTH + 1);
        if (depth > LB_MCPC_SCHEMA_DEPTH) {
            snprintf(err, errsz, "the inputSchema of its tool %s is nested more than %d levels deep", name,
                     LB_MCPC_SCHEMA_DEPTH);
            rc = LB_E_TOOBIG;
            break;
        }
        char *text = cJSON_PrintUnformatted(schema);
        size_t tl = text ? strlen(text) : 0;
        free(text);
        if (!text) {
            snprintf(err, errsz, "out of memory");
            rc = LB_E_NOMEM;
            break;
        }
        if (tl > LB_MCPC_SCHEMA_MAX) {
            snprintf(err, errsz, "the inputSchema of its tool %s is %zu bytes, over the limit of %u", name, tl,
                     LB_MCPC_SCHEMA_MAX);
            rc = LB_E_TOOBIG;
            break;
        }
        for (size_t i = 0; i < ts->n; i++)
            if (!strcmp(ts->t[i].offered, offered)) {
                snprintf(err, errsz, "it lists the tool %s twice", name);
                rc = LB_E_INVAL;
            }
        if (rc != LB_OK)
            break;
        size_t dl = desc ? strlen(desc) : 0;
        if (dl > LB_MCPC_DESC_MAX)
            dl = LB_MCPC_DESC_MAX;
        *bytes += tl + dl;
        if (*bytes > LB_MCPC_SERVER_MAX) {
            snprintf(err, errsz, "its tools' schemas and descriptions come to more than %u bytes",
                     LB_MCPC_SERVER_MAX);
            rc = LB_E_TOOBIG;
            break;
        }
        lb_mcpc_tool *t = &ts->t[ts->n];
        memset(t, 0, sizeof *t);
        memcpy(t->name, name, strlen(name) + 1);        /* name_ok: fits */
        memcpy(t->offered, offered, (size_t)w + 1);     /* checked above */
        t->description = malloc(dl + 1);
        t->schema = cJSON_Duplicate(schema, 1);
        if (!t->description || !t->schema) {
            tool_free(t);
            snprintf(err, errsz, "out of memory");
            rc = LB_E_NOMEM;
            break;
        }
        memcpy(t->description, desc ? desc : "", dl);
        t->description[dl] = '\0';
        lb_utf8_trim_partial(t->description); /* the message was valid UTF-8; a cut may not be */
        ts->n++;
    }
    if (rc != LB_OK) {
        lb_mcpc_tools_truncate(ts, start);
        return rc;
    }
    if (skipped)
        snprintf(note, notesz, "%zu of its tools (the first: \"%s\") were left out: a tool is offered as %s__NAME, "
                 "at most %d characters of A-Z, a-z, 0-9, _ and -", skipped, first_skipped, server, LB_MCPC_NAME_MAX);
    return LB_OK;
}
