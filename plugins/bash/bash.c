/* bash: runs one command in the task's persistent shell session.
 * Everything goes through the host table; this file links only cJSON. */
#include "llmbox/tool.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const llmbox_host *host;

static const char description[] =
    "Run a bash command in the sandbox (a Debian Linux machine with Python 3 and common "
    "scientific packages; you are root and may install more with pip or apt-get).\n"
    "* One command per call. Chain steps with && or ; and use a heredoc or the "
    "file_editor tool to write multi-line files.\n"
    "* The shell session persists between calls: the working directory, environment "
    "variables, activated virtualenvs and shell functions carry over.\n"
    "* stdout and stderr are returned apart, with a status: ok, exit N, "
    "killed (timeout), killed (out of memory) or interrupted.\n"
    "* Long output is truncated: its start and end are kept. Redirect big outputs to a "
    "file and inspect them with head, tail or grep.\n"
    "* A command is killed after {cmd_timeout_s} seconds; run long jobs in the "
    "background (nohup cmd > log 2>&1 &) and check on them.\n"
    "* Do not start interactive programs (vim, less, python without a script); "
    "they wait for input that never comes.";

static const char parameters[] =
    "{\"type\":\"object\","
    "\"properties\":{\"command\":{\"type\":\"string\","
    "\"description\":\"The bash command to run.\"}},"
    "\"required\":[\"command\"]}";

static void say(llmbox_result *r, const char *s)
{
    host->result_append(r, LLMBOX_STREAM_TEXT, s, strlen(s));
}

static int bash_invoke(llmbox_ctx *ctx, const char *args_json, size_t args_len,
                       llmbox_result *r)
{
    int rc = LLMBOX_OK;
    cJSON *args = cJSON_ParseWithLength(args_json, args_len);
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command");
    if (!cJSON_IsString(cmd)) {
        say(r, "The parameter 'command' must be a string.");
        host->result_set_status(r, "error");
        rc = LLMBOX_ERR_INVALID;
        goto out;
    }
    const char *c = cmd->valuestring;
    size_t n = strlen(c);
    size_t i = 0;
    while (i < n && (c[i] == ' ' || c[i] == '\t' || c[i] == '\n' || c[i] == '\r'))
        i++;
    if (i == n) {
        say(r, "The command is empty; give a bash command to run.");
        host->result_set_status(r, "error");
        rc = LLMBOX_ERR_INVALID;
        goto out;
    }

    llmbox_exec_result res;
    memset(&res, 0, sizeof res);
    res.size = sizeof res;
    int st = host->exec(ctx, c, n, 0, &res);
    if (st == LLMBOX_ERR_CANCELLED) {
        say(r, "The command was interrupted because the task was cancelled.");
        host->result_set_status(r, "interrupted");
        rc = st;
        goto out;
    }
    if (st != LLMBOX_OK) {
        say(r, "The sandbox could not run the command.");
        if (res.err && res.err_len)
            host->result_append(r, LLMBOX_STREAM_STDERR, res.err, res.err_len);
        host->result_set_status(r, "sandbox error");
        rc = st;
        goto out;
    }
    if (res.out_len)
        host->result_append(r, LLMBOX_STREAM_STDOUT, res.out, res.out_len);
    if (res.err_len)
        host->result_append(r, LLMBOX_STREAM_STDERR, res.err, res.err_len);

    char status[64];
    switch (res.state) {
    case LLMBOX_EXEC_EXITED:
        if (res.exit_code == 0)
            snprintf(status, sizeof status, "ok");
        else
            snprintf(status, sizeof status, "exit %d", res.exit_code);
        break;
    case LLMBOX_EXEC_TIMEOUT:
        snprintf(status, sizeof status, "killed (timeout)");
        say(r, "The command was killed at the time limit. Run long jobs in the background "
               "and poll them, or make the command faster.\n");
        break;
    case LLMBOX_EXEC_OOM:
        snprintf(status, sizeof status, "killed (out of memory)");
        say(r, "The command was killed by the sandbox memory limit; use less memory "
               "(process data in chunks).\n");
        break;
    case LLMBOX_EXEC_INTERRUPTED:
        snprintf(status, sizeof status, "interrupted");
        break;
    default:
        snprintf(status, sizeof status, "sandbox error");
        break;
    }
    if (res.truncated)
        say(r, "[the sandbox truncated this output]\n");
    if (!res.out_len && !res.err_len && res.state == LLMBOX_EXEC_EXITED)
        say(r, "(no output)");
    host->result_set_status(r, status);
out:
    cJSON_Delete(args);
    return rc;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "bash",
    .description = description,
    .parameters = parameters,
    .invoke = bash_invoke,
}};

static const llmbox_plugin plugin = {
    .size = sizeof(llmbox_plugin),
    .abi_major = LLMBOX_TOOL_ABI_MAJOR,
    .abi_minor = LLMBOX_TOOL_ABI_MINOR,
    .name = "bash",
    .version = "1.0",
    .tools = tools,
    .n_tools = 1,
};

LLMBOX_PLUGIN_EXPORT const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *h)
{
    if (!h || h->abi_major != LLMBOX_TOOL_ABI_MAJOR || h->size < sizeof(llmbox_host))
        return NULL;
    host = h;
    return &plugin;
}
