/* The python plugin (plugins/python.so) driven through a fake host table:
 * the code travels through write_file and never through the command line,
 * and each way a run can end is classified. The real interpreter in a real
 * sandbox is exercised by tests/integration/test_agent_web.py. */
#include "testlib.h"

#include "llmbox/tool.h"

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

struct llmbox_result {
    char text[65536], out[65536], err[65536];
    size_t tl, ol, el;
    char status[64];
};
struct llmbox_ctx {
    int dummy;
};

/* what the fake sandbox saw, and what its next exec answers */
static char written_path[256], written[4096], last_cmd[1024];
static int writes, execs, exec_timeout;
static llmbox_exec_result next;
static char next_out[4096], next_err[4096];

static int f_write(llmbox_ctx *c, const char *p, const void *d, size_t n, unsigned flags)
{
    (void)c;
    writes++;
    snprintf(written_path, sizeof written_path, "%s", p);
    snprintf(written, sizeof written, "%.*s", (int)n, (const char *)d);
    return (flags & LLMBOX_WRITE_EXCL) ? LLMBOX_OK : LLMBOX_ERR_INVALID; /* must be a fresh file */
}

static int f_exec(llmbox_ctx *c, const char *cmd, size_t len, int timeout_ms, llmbox_exec_result *res)
{
    (void)c;
    execs++;
    exec_timeout = timeout_ms;
    snprintf(last_cmd, sizeof last_cmd, "%.*s", (int)len, cmd);
    size_t size = res->size;
    *res = next;
    res->size = size;
    /* the traceback names the file the plugin wrote */
    static char out[4096], err[4096];
    char *at;
    snprintf(out, sizeof out, "%s", next_out);
    snprintf(err, sizeof err, "%s", next_err);
    while ((at = strstr(err, "@PATH@"))) {
        char rest[4096];
        snprintf(rest, sizeof rest, "%s", at + 6);
        snprintf(at, sizeof err - (size_t)(at - err), "%s%s", written_path, rest);
    }
    res->out = out;
    res->out_len = strlen(out);
    res->err = err;
    res->err_len = strlen(err);
    return LLMBOX_OK;
}

static int f_append(llmbox_result *r, int s, const char *d, size_t n)
{
    char *buf = s == 0 ? r->text : s == 1 ? r->out : r->err;
    size_t *l = s == 0 ? &r->tl : s == 1 ? &r->ol : &r->el;
    if (*l + n >= sizeof r->text)
        n = sizeof r->text - 1 - *l;
    memcpy(buf + *l, d, n);
    *l += n;
    buf[*l] = '\0';
    return LLMBOX_OK;
}

static void f_status(llmbox_result *r, const char *s) { snprintf(r->status, sizeof r->status, "%s", s); }
static int f_cancelled(llmbox_ctx *c) { (void)c; return 0; }
static void f_log(llmbox_ctx *c, int l, const char *m) { (void)c, (void)l, (void)m; }

static const llmbox_host host = {
    .size = sizeof(llmbox_host),
    .abi_major = LLMBOX_TOOL_ABI_MAJOR,
    .abi_minor = LLMBOX_TOOL_ABI_MINOR,
    .exec = f_exec,
    .write_file = f_write,
    .is_cancelled = f_cancelled,
    .log = f_log,
    .result_append = f_append,
    .result_set_status = f_status,
};

static const llmbox_tool *tool;
static struct llmbox_result R;
static struct llmbox_ctx C;

static int run(const char *args)
{
    memset(&R, 0, sizeof R);
    return tool->invoke(&C, args, strlen(args), &R);
}

static void answer(int state, int code, const char *out, const char *err)
{
    memset(&next, 0, sizeof next);
    next.state = state;
    next.exit_code = code;
    snprintf(next_out, sizeof next_out, "%s", out);
    snprintf(next_err, sizeof next_err, "%s", err);
}

TEST(code_travels_as_data)
{
    answer(LLMBOX_EXEC_EXITED, 0, "4\n", "");
    const char *args = "{\"code\":\"x = '$(rm -rf /)'; print(2 + 2)\"}";
    CHECK(run(args) == LLMBOX_OK);
    CHECK(writes == 1 && execs == 1);
    CHECK_STR(written, "x = '$(rm -rf /)'; print(2 + 2)");
    CHECK(!strncmp(written_path, "/tmp/llmbox-python-", 19) && strlen(written_path) == 19 + 16 + 3);
    CHECK(strstr(last_cmd, "rm -rf /)") == NULL && strstr(last_cmd, "print") == NULL);
    CHECK(strstr(last_cmd, written_path) != NULL && strstr(last_cmd, "python3 ") != NULL);
    CHECK_STR(R.status, "ok");
    CHECK_STR(R.out, "4\n");
    CHECK(exec_timeout == 0);
    /* a second call uses another file */
    char first[256];
    snprintf(first, sizeof first, "%s", written_path);
    answer(LLMBOX_EXEC_EXITED, 0, "", "");
    run("{\"code\":\"pass\",\"timeout_s\":5}");
    CHECK(strcmp(first, written_path) != 0);
    CHECK(exec_timeout == 5000);
    CHECK_STR(R.text, "(no output)");
}

TEST(exception_classified)
{
    answer(LLMBOX_EXEC_EXITED, 1, "partial\n",
           "Traceback (most recent call last):\n"
           "  File \"@PATH@\", line 3, in <module>\n"
           "    f()\n"
           "  File \"@PATH@\", line 2, in f\n"
           "    def f(): return int('x')\n"
           "ValueError: invalid literal for int() with base 10: 'x'\n");
    CHECK(run("{\"code\":\"def f(): return int('x')\\nf()\"}") == LLMBOX_OK);
    CHECK_STR(R.status, "exception (ValueError)");
    CHECK(strstr(R.text, "The code raised ValueError: invalid literal for int() with base 10: 'x' (line 2 of the snippet)"));
    CHECK(strstr(R.err, "File \"<snippet>\", line 3") != NULL);
    CHECK(strstr(R.err, "/tmp/llmbox-python-") == NULL);
    CHECK_STR(R.out, "partial\n");
    /* dotted type names */
    answer(LLMBOX_EXEC_EXITED, 1, "", "Traceback (most recent call last):\n  File \"@PATH@\", line 1\n"
                                      "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n");
    run("{\"code\":\"import json; json.loads('')\"}");
    CHECK_STR(R.status, "exception (json.decoder.JSONDecodeError)");
}

TEST(syntax_error_exit_and_kills)
{
    answer(LLMBOX_EXEC_EXITED, 1, "", "  File \"@PATH@\", line 1\n    def (\n        ^\nSyntaxError: invalid syntax\n");
    run("{\"code\":\"def (\"}");
    CHECK_STR(R.status, "syntax error");
    CHECK(strstr(R.text, "The code did not compile (line 1 of the snippet): SyntaxError: invalid syntax"));
    answer(LLMBOX_EXEC_EXITED, 3, "", "");
    run("{\"code\":\"import sys; sys.exit(3)\"}");
    CHECK_STR(R.status, "exit 3");
    answer(LLMBOX_EXEC_EXITED, 1, "", "some tool printed: this is not a traceback\n");
    run("{\"code\":\"raise SystemExit('no')\"}");
    CHECK_STR(R.status, "exit 1");
    answer(LLMBOX_EXEC_TIMEOUT, 0, "", "");
    run("{\"code\":\"while True: pass\"}");
    CHECK_STR(R.status, "killed (timeout)");
    answer(LLMBOX_EXEC_OOM, 0, "", "");
    run("{\"code\":\"x = ' ' * 10**12\"}");
    CHECK_STR(R.status, "killed (out of memory)");
    answer(LLMBOX_EXEC_EXITED, 1, "", "Traceback (most recent call last):\n  File \"@PATH@\", line 1\nKeyboardInterrupt\n");
    run("{\"code\":\"input()\"}");
    CHECK_STR(R.status, "interrupted");
    answer(LLMBOX_EXEC_EXITED, 127, "", "bash: line 1: python3: command not found\n");
    run("{\"code\":\"1\"}");
    CHECK_STR(R.status, "error");
    CHECK(strstr(R.text, "python3 is not installed") != NULL);
    answer(9, 0, "", ""); /* a state from a newer host */
    run("{\"code\":\"1\"}");
    CHECK_STR(R.status, "did not finish (state 9)");
}

TEST(bad_arguments)
{
    int w = writes;
    CHECK(run("{\"code\":\"  \\n\"}") == LLMBOX_ERR_INVALID);
    CHECK_STR(R.status, "error");
    CHECK(run("{\"code\":\"1\",\"timeout_s\":0}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.text, "timeout_s") != NULL);
    CHECK(writes == w); /* nothing reached the sandbox */
}

int main(void)
{
    void *h = dlopen("plugins/python.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL setup: %s (run make first)\n", dlerror());
        return 1;
    }
    llmbox_tool_plugin_fn fn;
    void *sym = dlsym(h, LLMBOX_TOOL_ENTRY);
    memcpy(&fn, &sym, sizeof fn);
    const llmbox_plugin *p = fn(&host);
    if (!p || p->n_tools != 1 || strcmp(p->tools[0].name, "python")) {
        printf("FAIL setup: the python plugin did not load\n");
        return 1;
    }
    tool = &p->tools[0];
    RUN(code_travels_as_data);
    RUN(exception_classified);
    RUN(syntax_error_exit_and_kills);
    RUN(bad_arguments);
    dlclose(h);
    return testlib_done();
}
