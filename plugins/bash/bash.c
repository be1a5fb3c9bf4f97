/* bash: runs one command in the task's persistent shell session, with a
 * soft timeout: a command still running after it returns its output so
 * far and goes on; the model then sends "" to keep waiting or "C-c" to
 * interrupt it. Everything goes through the host table (ABI 1.1 for
 * exec_ex); this folder links only cJSON. */
#include "llmbox/tool.h"

#include "clip.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the model sees of each stream: a few screens, start and end kept. */
#define BASH_MAX_BYTES 16384
#define BASH_MAX_LINES 200

LLMBOX_PLUGIN_INIT;

static const char description[] =
    "Run a bash command in the sandbox (a Debian Linux machine with Python 3 and common "
    "scientific packages; you are root and may install more with pip or apt-get).\n"
    "* One command per call. Chain steps with && or ; and use a heredoc or the "
    "file_editor tool to write multi-line files.\n"
    "* The shell session persists between calls: the working directory, environment "
    "variables, activated virtualenvs and shell functions carry over.\n"
    "* stdout and stderr are returned apart, followed by a status line: ok, exit N, "
    "still running, interrupted, killed at the timeout, or killed by OOM.\n"
    "* A command still running after {soft_timeout_s} seconds returns its output so far "
    "with the status \"still running\"; it keeps running. Then call bash with an empty "
    "command (\"\") to keep waiting for it and get the output produced since, or with "
    "\"C-c\" to interrupt it. No other command runs until it has ended or been "
    "interrupted.\n"
    "* A command is stopped after {cmd_timeout_s} seconds in all; run longer jobs in the "
    "background (nohup cmd > log 2>&1 &) and check on them.\n"
    "* Long output is shortened: its first and last lines are kept. Redirect big outputs to "
    "a file and inspect them with head, tail or grep.\n"
    "* Do not start interactive programs (vim, less, python without a script); "
    "they wait for input that never comes.";

static const char parameters[] =
    "{\"type\":\"object\","
    "\"properties\":{\"command\":{\"type\":\"string\","
    "\"description\":\"The bash command to run; \\\"\\\" to keep waiting for a command that "
    "is still running, \\\"C-c\\\" to interrupt it.\"}},"
    "\"required\":[\"command\"]}";

static void say(llmbox_result *r, const char *s)
{
    host->result_append(r, LLMBOX_STREAM_TEXT, s, strlen(s));
}

/* Appends a stream capped in bytes and lines (the host caps bytes only). */
static void append_clipped(llmbox_result *r, int stream, const char *s, size_t n)
{
    if (!n)
        return;
    size_t len = 0;
    char *c = bash_clip(s, n, BASH_MAX_BYTES, BASH_MAX_LINES, &len, NULL);
    if (!c) {
        host->result_append(r, stream, s, n); /* out of memory: the host still caps it */
        return;
    }
    host->result_append(r, stream, c, len);
    free(c);
}

/* What the model asked for: run a command, wait for the running one, or
 * interrupt it. Blanks around "" and "C-c" are forgiven. */
enum { MODE_RUN, MODE_WAIT, MODE_INTERRUPT };

static int command_mode(const char *c, size_t n)
{
    size_t a = 0, b = n;
    while (a < b && (c[a] == ' ' || c[a] == '\t' || c[a] == '\n' || c[a] == '\r'))
        a++;
    while (b > a && (c[b - 1] == ' ' || c[b - 1] == '\t' || c[b - 1] == '\n' || c[b - 1] == '\r'))
        b--;
    if (a == b)
        return MODE_WAIT;
    if (b - a == 3 && !memcmp(c + a, "C-c", 3))
        return MODE_INTERRUPT;
    return MODE_RUN;
}

static long secs(int64_t ms)
{
    return ms > 0 ? (long)(ms / 1000) : 0;
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
    int mode = command_mode(c, n);
    if (mode == MODE_WAIT)
        c = "", n = 0;
    else if (mode == MODE_INTERRUPT)
        c = "C-c", n = 3;

    llmbox_exec_result res;
    memset(&res, 0, sizeof res);
    res.size = sizeof res;
    llmbox_exec_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.size = sizeof opts;
    opts.timeout_ms = 0; /* the host's: LLMBOX_CMD_TIMEOUT_S */
    opts.soft_timeout_ms = LLMBOX_SOFT_TIMEOUT_DEFAULT;
    int st = host->exec_ex(ctx, c, n, &opts, &res);
    if (st == LLMBOX_ERR_CANCELLED) {
        say(r, "The command was interrupted because the task was cancelled.");
        host->result_set_status(r, "interrupted");
        rc = st;
        goto out;
    }
    if (st == LLMBOX_ERR_BUSY) {
        say(r, "A command started earlier is still running, so this one was not run. Call bash "
               "with an empty command (\"\") to wait for the running one, or with \"C-c\" to "
               "interrupt it.");
        host->result_set_status(r, "busy");
        rc = st;
        goto out;
    }
    if (st == LLMBOX_ERR_INVALID && mode != MODE_RUN) {
        say(r, mode == MODE_WAIT
                   ? "No command is running, so there is nothing to wait for. Give a bash "
                     "command to run."
                   : "No command is running, so there is nothing to interrupt.");
        host->result_set_status(r, "error");
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
    append_clipped(r, LLMBOX_STREAM_STDOUT, res.out, res.out_len);
    append_clipped(r, LLMBOX_STREAM_STDERR, res.err, res.err_len);

    /* the status: one line the model (and the page) reads */
    char status[64];
    int no_output = !res.out_len && !res.err_len;
    switch (res.state) {
    case LLMBOX_EXEC_EXITED:
        if (res.exit_code == 0)
            snprintf(status, sizeof status, "ok");
        else
            snprintf(status, sizeof status, "exit %d", res.exit_code);
        if (no_output)
            say(r, mode == MODE_RUN ? "(no output)" : "(no more output)");
        break;
    case LLMBOX_EXEC_RUNNING:
        snprintf(status, sizeof status, "still running after %ld s", secs(res.duration_ms));
        say(r, no_output ? "(no output yet) " : "");
        say(r, "The command is still running. Call bash with an empty command (\"\") to wait "
               "for more of its output, or with \"C-c\" to interrupt it.\n");
        break;
    case LLMBOX_EXEC_TIMEOUT: {
        long t = secs(res.timeout_ms ? res.timeout_ms : res.duration_ms);
        snprintf(status, sizeof status, "killed at the %ld s timeout", t);
        say(r, "The command was stopped at the time limit. Run long jobs in the background "
               "(nohup cmd > log 2>&1 &) and poll them, or make the command faster.\n");
        break;
    }
    case LLMBOX_EXEC_OOM:
        snprintf(status, sizeof status, "killed by OOM");
        say(r, "The command was killed by the sandbox memory limit (out of memory); use less "
               "memory (process data in chunks).\n");
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

LLMBOX_PLUGIN_DEFINE("bash", "1.1", tools);
