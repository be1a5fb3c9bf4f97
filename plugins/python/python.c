/* python: runs a Python 3 snippet in the sandbox and classifies the result.
 *
 * An example of a plugin that is not one of the three defaults (enable it
 * with `tools = bash, file_editor, finish, python`); docs/PLUGINS.md walks
 * through it. The code never passes through a shell command line: it is
 * written to a fresh file with host->write_file, and the command that runs
 * it holds only that file's name, which this plugin made up.
 *
 * Everything goes through the host table; this file links only cJSON. */
#include "llmbox/tool.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define PY_CODE_MAX (1u << 20)
#define PY_TIMEOUT_MAX_S 3600

LLMBOX_PLUGIN_INIT;

static const char description[] =
    "Run a Python 3 snippet in the sandbox and get its result classified.\n"
    "* The code is saved to a file and run with python3 in the bash session's working directory, "
    "so it sees the same files and installed packages as bash (pip install works with bash). "
    "Variables do not carry over between calls: save state to files.\n"
    "* print() output comes back as stdout, errors as stderr.\n"
    "* The status says how it ended: ok, exception (TypeName) with the traceback's last line, "
    "syntax error, exit N (sys.exit), killed (timeout), killed (out of memory) or interrupted.\n"
    "* It is stopped after timeout_s seconds (default {cmd_timeout_s}).";

static const char parameters[] =
    "{\"type\":\"object\","
    "\"properties\":{"
    "\"code\":{\"type\":\"string\",\"description\":\"The Python 3 code to run.\"},"
    "\"timeout_s\":{\"type\":\"integer\",\"description\":\"Seconds before it is stopped (optional).\"}},"
    "\"required\":[\"code\"]}";

static void say(llmbox_result *r, const char *s)
{
    host->result_append(r, LLMBOX_STREAM_TEXT, s, strlen(s));
}

/* A file name nobody else picks: /tmp/llmbox-python-<16 hex>.py */
static void temp_name(char *out, size_t outsz)
{
    unsigned long long x = 0;
    if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x)
        x = (unsigned long long)time(NULL) * 2654435761u ^ (unsigned long long)getpid() << 32 ^ (uintptr_t)&x;
    snprintf(out, outsz, "/tmp/llmbox-python-%016llx.py", x);
}

/* data with every `from` replaced by `to` (malloc'd, NUL-terminated), so
 * tracebacks name "<snippet>" rather than our temporary file. */
static char *replace_all(const char *data, size_t len, const char *from, const char *to, size_t *outlen)
{
    size_t fl = strlen(from), tl = strlen(to), n = 0;
    for (const char *p = data; (p = memmem(p, len - (size_t)(p - data), from, fl)); p += fl)
        n++;
    char *out = malloc(len + n * (tl > fl ? tl - fl : 0) + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    const char *p = data, *end = data + len;
    for (;;) {
        const char *hit = memmem(p, (size_t)(end - p), from, fl);
        size_t chunk = hit ? (size_t)(hit - p) : (size_t)(end - p);
        memcpy(out + o, p, chunk);
        o += chunk;
        if (!hit)
            break;
        memcpy(out + o, to, tl);
        o += tl;
        p = hit + fl;
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

static void append_stream(llmbox_result *r, int stream, const char *data, size_t len, const char *path)
{
    if (!len)
        return;
    size_t n = 0;
    char *clean = replace_all(data, len, path, "<snippet>", &n);
    host->result_append(r, stream, clean ? clean : data, clean ? n : len);
    free(clean);
}

/* The last non-blank line of s (into out), as a traceback ends with
 * "ValueError: message". */
static void last_line(const char *s, size_t len, char *out, size_t outsz)
{
    out[0] = '\0';
    size_t e = len;
    while (e && (s[e - 1] == '\n' || s[e - 1] == '\r' || s[e - 1] == ' '))
        e--;
    size_t b = e;
    while (b && s[b - 1] != '\n')
        b--;
    size_t n = e - b < outsz - 1 ? e - b : outsz - 1;
    memcpy(out, s + b, n);
    out[n] = '\0';
}

/* "ValueError: x" or "json.decoder.JSONDecodeError: x" or "KeyboardInterrupt":
 * the exception's type into type. */
static int exception_line(const char *line, char *type, size_t typesz)
{
    size_t n = 0;
    while (line[n] && line[n] != ':') {
        char c = line[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
            return 0;
        n++;
    }
    if (!n || (line[0] >= '0' && line[0] <= '9'))
        return 0;
    snprintf(type, typesz, "%.*s", (int)n, line);
    return 1;
}

/* The line of the snippet the error was raised at: the last
 * `File "<path>", line N` of the traceback. */
static long snippet_line(const char *err, size_t len, const char *path)
{
    char needle[128];
    snprintf(needle, sizeof needle, "File \"%s\", line ", path);
    long line = -1;
    size_t nl = strlen(needle);
    for (const char *p = err; (p = memmem(p, len - (size_t)(p - err), needle, nl)); p += nl)
        line = strtol(p + nl, NULL, 10);
    return line;
}

static void classify(llmbox_result *r, const llmbox_exec_result *res, const char *path)
{
    char status[64], msg[512];
    switch (res->state) {
    case LLMBOX_EXEC_EXITED:
        break;
    case LLMBOX_EXEC_TIMEOUT:
        host->result_set_status(r, "killed (timeout)");
        say(r, "The code was stopped at its time limit; make it faster, or pass a larger timeout_s.\n");
        return;
    case LLMBOX_EXEC_OOM:
        host->result_set_status(r, "killed (out of memory)");
        say(r, "The code was killed by the sandbox memory limit; use less memory.\n");
        return;
    case LLMBOX_EXEC_INTERRUPTED:
        host->result_set_status(r, "interrupted");
        return;
    case LLMBOX_EXEC_ERROR:
        host->result_set_status(r, "sandbox error");
        return;
    default:
        /* a state from a newer host: say what we know */
        snprintf(status, sizeof status, "did not finish (state %d)", res->state);
        host->result_set_status(r, status);
        return;
    }
    if (res->exit_code == 0) {
        host->result_set_status(r, "ok");
        if (!res->out_len && !res->err_len)
            say(r, "(no output)");
        return;
    }
    char last[400], type[64];
    last_line(res->err, res->err_len, last, sizeof last);
    int traceback = memmem(res->err, res->err_len, "Traceback (most recent call last):", 34) != NULL;
    int syntax = !strncmp(last, "SyntaxError", 11) || !strncmp(last, "IndentationError", 16) ||
                 !strncmp(last, "TabError", 8);
    if ((traceback || syntax) && exception_line(last, type, sizeof type)) {
        long line = snippet_line(res->err, res->err_len, path);
        char where[48] = "";
        if (line > 0)
            snprintf(where, sizeof where, " (line %ld of the snippet)", line);
        if (syntax) {
            snprintf(status, sizeof status, "syntax error");
            snprintf(msg, sizeof msg, "The code did not compile%s: %s\n", where, last);
        } else if (!strcmp(type, "KeyboardInterrupt")) {
            snprintf(status, sizeof status, "interrupted");
            snprintf(msg, sizeof msg, "The code was interrupted%s.\n", where);
        } else {
            snprintf(status, sizeof status, "exception (%.40s)", type);
            snprintf(msg, sizeof msg, "The code raised %s%s.\n", last, where);
        }
        say(r, msg);
        host->result_set_status(r, status);
        return;
    }
    if (res->exit_code == 127 && memmem(res->err, res->err_len, "python3", 7)) {
        say(r, "python3 is not installed in this sandbox image.\n");
        host->result_set_status(r, "error");
        return;
    }
    snprintf(status, sizeof status, "exit %d", res->exit_code);
    host->result_set_status(r, status);
}

static int python_invoke(llmbox_ctx *ctx, const char *args_json, size_t args_len, llmbox_result *r)
{
    int rc = LLMBOX_OK;
    cJSON *args = cJSON_ParseWithLength(args_json, args_len);
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(args, "code");
    const cJSON *tmo = cJSON_GetObjectItemCaseSensitive(args, "timeout_s");
    if (!cJSON_IsString(code) || !code->valuestring[strspn(code->valuestring, " \t\r\n")]) {
        say(r, "The parameter 'code' must hold some Python code.");
        host->result_set_status(r, "error");
        rc = LLMBOX_ERR_INVALID;
        goto out;
    }
    size_t len = strlen(code->valuestring);
    if (len > PY_CODE_MAX) {
        say(r, "The code is over 1 MiB; write it to a file with file_editor and run it with bash.");
        host->result_set_status(r, "error");
        rc = LLMBOX_ERR_TOOBIG;
        goto out;
    }
    int timeout_ms = 0; /* the host's default */
    if (cJSON_IsNumber(tmo)) {
        if (tmo->valuedouble < 1 || tmo->valuedouble > PY_TIMEOUT_MAX_S) {
            say(r, "timeout_s must be from 1 to 3600 seconds.");
            host->result_set_status(r, "error");
            rc = LLMBOX_ERR_INVALID;
            goto out;
        }
        timeout_ms = (int)tmo->valuedouble * 1000;
    }

    /* the code travels as data, never inside the command */
    char path[64];
    temp_name(path, sizeof path);
    int st = host->write_file(ctx, path, code->valuestring, len, LLMBOX_WRITE_EXCL);
    if (st != LLMBOX_OK) {
        say(r, st == LLMBOX_ERR_CANCELLED ? "The task was cancelled." : "The code could not be written into the sandbox.");
        host->result_set_status(r, st == LLMBOX_ERR_CANCELLED ? "interrupted" : "sandbox error");
        rc = st;
        goto out;
    }
    /* a subshell: the exit status of python3 survives the clean-up, and
     * nothing (not even a variable) is left in the session */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "(python3 %s; s=$?; rm -f %s; exit $s)", path, path);
    llmbox_exec_result res;
    memset(&res, 0, sizeof res);
    res.size = sizeof res;
    st = host->exec(ctx, cmd, strlen(cmd), timeout_ms, &res);
    if (st != LLMBOX_OK) {
        say(r, st == LLMBOX_ERR_CANCELLED ? "The code was interrupted because the task was cancelled."
                                          : "The sandbox could not run the code.");
        host->result_set_status(r, st == LLMBOX_ERR_CANCELLED ? "interrupted" : "sandbox error");
        rc = st;
        goto out;
    }
    append_stream(r, LLMBOX_STREAM_STDOUT, res.out, res.out_len, path);
    append_stream(r, LLMBOX_STREAM_STDERR, res.err, res.err_len, path);
    classify(r, &res, path);
    if (res.truncated)
        say(r, "[the sandbox truncated this output]\n");
out:
    cJSON_Delete(args);
    return rc;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "python",
    .description = description,
    .parameters = parameters,
    .invoke = python_invoke,
}};

LLMBOX_PLUGIN_DEFINE("python", "1.0", tools);
