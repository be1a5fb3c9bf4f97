/* The bash plugin without a sandbox: its output capping (bytes and lines,
 * head and tail) and, through a fake host whose exec_ex plays scripted
 * results, what it sends for "" and "C-c" and the status line it reports
 * for every way a command can end. */
#include "testlib.h"

#include "../../plugins/bash/clip.c"
#include "llmbox/tool.h"

#include <dlfcn.h>
#include <stdlib.h>

/* ---- bash_clip ---------------------------------------------------------- */

static char *clip(const char *s, size_t max_bytes, size_t max_lines, int *clipped)
{
    size_t len = 0;
    char *o = bash_clip(s, strlen(s), max_bytes, max_lines, &len, clipped);
    if (o && strlen(o) != len)
        return NULL;
    return o;
}

TEST(clip_short_output_untouched)
{
    int c = -1;
    char *o = clip("a\nb\nc\n", 100, 3, &c);
    CHECK_STR(o, "a\nb\nc\n");
    CHECK(c == 0);
    free(o);
    o = clip("", 10, 2, &c);
    CHECK_STR(o, "");
    free(o);
    o = clip("no newline", 10, 1, &c); /* exactly the caps (min 2 lines) */
    CHECK_STR(o, "no newline");
    CHECK(c == 0);
    free(o);
}

TEST(clip_by_lines_keeps_head_and_tail)
{
    char in[4096] = "";
    for (int i = 1; i <= 100; i++)
        snprintf(in + strlen(in), sizeof in - strlen(in), "line %d\n", i);
    int c = 0;
    char *o = clip(in, 1 << 20, 10, &c);
    CHECK(c == 1);
    CHECK_STR(o, "line 1\nline 2\nline 3\nline 4\nline 5\n"
                 "[... 90 lines (716 bytes) omitted ...]\n"
                 "line 96\nline 97\nline 98\nline 99\nline 100\n");
    free(o);
    /* an odd budget: the tail gets the extra line */
    o = clip("1\n2\n3\n4\n5\n6\n7", 1000, 5, &c);
    CHECK_STR(o, "1\n2\n[... 2 lines (4 bytes) omitted ...]\n5\n6\n7");
    free(o);
}

TEST(clip_by_bytes_cuts_at_line_ends)
{
    /* 20 lines of 10 bytes; 60 bytes: 3 lines each side */
    char in[256] = "";
    for (int i = 0; i < 20; i++)
        snprintf(in + strlen(in), sizeof in - strlen(in), "%c23456789\n", 'a' + i);
    int c = 0;
    char *o = clip(in, 60, 1000, &c);
    CHECK(c == 1);
    CHECK_STR(o, "a23456789\nb23456789\nc23456789\n"
                 "[... 14 lines (140 bytes) omitted ...]\n"
                 "r23456789\ns23456789\nt23456789\n");
    free(o);
}

TEST(clip_one_huge_line_is_cut_inside)
{
    char *in = malloc(10001);
    CHECK(in != NULL);
    if (!in)
        return;
    memset(in, 'x', 10000);
    in[0] = 'A';
    in[9999] = 'Z';
    in[10000] = '\0';
    int c = 0;
    char *o = clip(in, 100, 10, &c);
    CHECK(c == 1);
    CHECK(o && o[0] == 'A' && o[strlen(o) - 1] == 'Z');
    CHECK(o && strstr(o, "\n[... 9900 bytes omitted ...]\n") != NULL);
    CHECK(o && strlen(o) < 100 + 40);
    free(o);
    /* UTF-8 is never split: 3-byte characters, odd cut points */
    char u[3 * 100 + 1];
    for (int i = 0; i < 100; i++)
        memcpy(u + 3 * i, "\xe2\x82\xac", 3); /* the euro sign */
    u[300] = '\0';
    o = clip(u, 31, 10, &c);
    CHECK(o && !strncmp(o, "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\n[", 17));
    CHECK(o && !strcmp(o + strlen(o) - 3, "\xe2\x82\xac"));
    size_t kept = 0;
    for (const char *p = o; p && *p; p++)
        kept += (unsigned char)*p == 0xe2;
    char want[64];
    snprintf(want, sizeof want, "[... %zu bytes omitted ...]", 300 - 3 * kept);
    CHECK(o && strstr(o, want) != NULL);
    free(o);
    free(in);
}

/* ---- the plugin through a fake host ------------------------------------- */

struct llmbox_result {
    char s[3][1 << 16];
    size_t len[3];
    char status[64];
};
struct llmbox_ctx {
    int dummy;
};

/* what the fake exec_ex got, and what it answers */
static char last_cmd[256];
static int last_soft, last_timeout, calls;
static int next_rc;
static llmbox_exec_result next;

static int f_exec_ex(llmbox_ctx *c, const char *cmd, size_t n, const llmbox_exec_opts *o,
                     llmbox_exec_result *res)
{
    (void)c;
    calls++;
    snprintf(last_cmd, sizeof last_cmd, "%.*s", (int)n, cmd);
    last_soft = o ? o->soft_timeout_ms : 12345;
    last_timeout = o ? o->timeout_ms : 12345;
    size_t sz = res->size;
    *res = next;
    res->size = sz;
    if (!res->out)
        res->out = "";
    if (!res->err)
        res->err = "";
    return next_rc;
}

static int f_append(llmbox_result *r, int s, const char *d, size_t n)
{
    if (s < 0 || s > 2)
        return LLMBOX_ERR_INVALID;
    if (r->len[s] + n >= sizeof r->s[s])
        n = sizeof r->s[s] - r->len[s] - 1;
    memcpy(r->s[s] + r->len[s], d, n);
    r->len[s] += n;
    r->s[s][r->len[s]] = '\0';
    return LLMBOX_OK;
}

static void f_status(llmbox_result *r, const char *s) { snprintf(r->status, sizeof r->status, "%s", s); }

static const llmbox_host host = {
    .size = sizeof(llmbox_host),
    .abi_major = LLMBOX_TOOL_ABI_MAJOR,
    .abi_minor = LLMBOX_TOOL_ABI_MINOR,
    .result_append = f_append,
    .result_set_status = f_status,
    .exec_ex = f_exec_ex,
};

static const llmbox_tool *tool;
static llmbox_result R;
static llmbox_ctx C;

static int run(const char *json)
{
    memset(&R, 0, sizeof R);
    return tool->invoke(&C, json, strlen(json), &R);
}

static void answer(int rc, int state, int code, const char *out, const char *err, int64_t dur,
                   int timeout_ms)
{
    memset(&next, 0, sizeof next);
    next_rc = rc;
    next.state = state;
    next.exit_code = code;
    next.out = out;
    next.out_len = out ? strlen(out) : 0;
    next.err = err;
    next.err_len = err ? strlen(err) : 0;
    next.duration_ms = dur;
    next.timeout_ms = timeout_ms;
}

TEST(plugin_refuses_old_host)
{
    void *h = dlopen("plugins/bash.so", RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (!h)
        return;
    llmbox_tool_plugin_fn fn;
    void *sym = dlsym(h, LLMBOX_TOOL_ENTRY);
    memcpy(&fn, &sym, sizeof fn);
    /* a 1.0 host table ends before exec_ex */
    llmbox_host old = host;
    old.size = offsetof(llmbox_host, exec_ex);
    old.abi_minor = 0;
    CHECK(fn(&old) == NULL);
    dlclose(h);
}

TEST(runs_with_soft_timeout_and_reports_exit)
{
    answer(LLMBOX_OK, LLMBOX_EXEC_EXITED, 0, "hi\n", "", 5, 120000);
    CHECK(run("{\"command\":\"echo hi\"}") == LLMBOX_OK);
    CHECK_STR(last_cmd, "echo hi");
    CHECK(last_soft == LLMBOX_SOFT_TIMEOUT_DEFAULT && last_timeout <= 0);
    CHECK_STR(R.s[LLMBOX_STREAM_STDOUT], "hi\n");
    CHECK_STR(R.status, "ok");
    answer(LLMBOX_OK, LLMBOX_EXEC_EXITED, 3, "", "", 5, 120000);
    run("{\"command\":\"exit 3\"}");
    CHECK_STR(R.status, "exit 3");
    CHECK_STR(R.s[LLMBOX_STREAM_TEXT], "(no output)");
}

TEST(still_running_tells_how_to_go_on)
{
    answer(LLMBOX_OK, LLMBOX_EXEC_RUNNING, -1, "partial\n", "", 10012, 120000);
    CHECK(run("{\"command\":\"sleep 30; echo done\"}") == LLMBOX_OK);
    CHECK_STR(R.status, "still running after 10 s");
    CHECK_STR(R.s[LLMBOX_STREAM_STDOUT], "partial\n");
    CHECK(strstr(R.s[LLMBOX_STREAM_TEXT], "empty command") != NULL);
    CHECK(strstr(R.s[LLMBOX_STREAM_TEXT], "\"C-c\"") != NULL);
    /* blank: keep waiting; "" goes to the host, with the soft timeout */
    answer(LLMBOX_OK, LLMBOX_EXEC_EXITED, 0, "done\n", "", 30050, 120000);
    calls = 0;
    CHECK(run("{\"command\":\"  \\n\"}") == LLMBOX_OK);
    CHECK(calls == 1);
    CHECK_STR(last_cmd, "");
    CHECK(last_soft == LLMBOX_SOFT_TIMEOUT_DEFAULT);
    CHECK_STR(R.status, "ok");
    CHECK_STR(R.s[LLMBOX_STREAM_STDOUT], "done\n");
    /* nothing new and over */
    answer(LLMBOX_OK, LLMBOX_EXEC_EXITED, 0, "", "", 30050, 120000);
    run("{\"command\":\"\"}");
    CHECK_STR(R.s[LLMBOX_STREAM_TEXT], "(no more output)");
    /* still nothing new and still running */
    answer(LLMBOX_OK, LLMBOX_EXEC_RUNNING, -1, "", "", 20001, 120000);
    run("{\"command\":\"\"}");
    CHECK_STR(R.status, "still running after 20 s");
    CHECK(strncmp(R.s[LLMBOX_STREAM_TEXT], "(no output yet)", 15) == 0);
}

TEST(ctrl_c_interrupts)
{
    answer(LLMBOX_OK, LLMBOX_EXEC_INTERRUPTED, 130, "", "", 12000, 120000);
    CHECK(run("{\"command\":\" C-c \"}") == LLMBOX_OK);
    CHECK_STR(last_cmd, "C-c");
    CHECK_STR(R.status, "interrupted");
    /* nothing to interrupt */
    answer(LLMBOX_ERR_INVALID, LLMBOX_EXEC_ERROR, -1, NULL, NULL, 0, 0);
    CHECK(run("{\"command\":\"C-c\"}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.s[LLMBOX_STREAM_TEXT], "nothing to interrupt") != NULL);
    CHECK_STR(R.status, "error");
    answer(LLMBOX_ERR_INVALID, LLMBOX_EXEC_ERROR, -1, NULL, NULL, 0, 0);
    run("{\"command\":\"\"}");
    CHECK(strstr(R.s[LLMBOX_STREAM_TEXT], "nothing to wait for") != NULL);
}

TEST(busy_says_how_to_wait_or_interrupt)
{
    answer(LLMBOX_ERR_BUSY, LLMBOX_EXEC_ERROR, -1, NULL, NULL, 0, 0);
    CHECK(run("{\"command\":\"ls\"}") == LLMBOX_ERR_BUSY);
    CHECK_STR(R.status, "busy");
    CHECK(strstr(R.s[LLMBOX_STREAM_TEXT], "still running") != NULL);
    CHECK(strstr(R.s[LLMBOX_STREAM_TEXT], "\"C-c\"") != NULL);
}

TEST(every_end_has_one_status_line)
{
    answer(LLMBOX_OK, LLMBOX_EXEC_TIMEOUT, 130, "", "", 120400, 120000);
    run("{\"command\":\"sleep 999\"}");
    CHECK_STR(R.status, "killed at the 120 s timeout");
    answer(LLMBOX_OK, LLMBOX_EXEC_OOM, 137, "", "Killed\n", 900, 120000);
    run("{\"command\":\"python3 big.py\"}");
    CHECK_STR(R.status, "killed by OOM");
    answer(LLMBOX_OK, LLMBOX_EXEC_ERROR, -1, "", "", 900, 120000);
    run("{\"command\":\"true\"}");
    CHECK_STR(R.status, "sandbox error");
    answer(LLMBOX_ERR_SANDBOX, LLMBOX_EXEC_ERROR, -1, NULL, NULL, 0, 0);
    CHECK(run("{\"command\":\"true\"}") == LLMBOX_ERR_SANDBOX);
    CHECK_STR(R.status, "sandbox error");
    answer(LLMBOX_ERR_CANCELLED, LLMBOX_EXEC_ERROR, -1, NULL, NULL, 0, 0);
    CHECK(run("{\"command\":\"true\"}") == LLMBOX_ERR_CANCELLED);
    CHECK_STR(R.status, "interrupted");
}

TEST(output_capped_in_lines)
{
    static char big[64 << 10];
    big[0] = '\0';
    size_t o = 0;
    for (int i = 1; i <= 1000; i++)
        o += (size_t)snprintf(big + o, sizeof big - o, "row %d\n", i);
    answer(LLMBOX_OK, LLMBOX_EXEC_EXITED, 0, big, "", 50, 120000);
    run("{\"command\":\"seq 1000\"}");
    const char *out = R.s[LLMBOX_STREAM_STDOUT];
    CHECK(strncmp(out, "row 1\n", 6) == 0);
    CHECK(strstr(out, "row 1000\n") != NULL);
    CHECK(strstr(out, "lines (") != NULL && strstr(out, "omitted ...]") != NULL);
    size_t lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    CHECK(lines <= 201);
}

int main(void)
{
    RUN(clip_short_output_untouched);
    RUN(clip_by_lines_keeps_head_and_tail);
    RUN(clip_by_bytes_cuts_at_line_ends);
    RUN(clip_one_huge_line_is_cut_inside);
    void *h = dlopen("plugins/bash.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL load_bash_plugin: %s (run make first, from the repo root)\n", dlerror());
        return 1;
    }
    llmbox_tool_plugin_fn fn;
    void *sym = dlsym(h, LLMBOX_TOOL_ENTRY);
    memcpy(&fn, &sym, sizeof fn);
    const llmbox_plugin *p = sym ? fn(&host) : NULL;
    if (!p || p->n_tools != 1) {
        printf("FAIL load_bash_plugin: no descriptor\n");
        return 1;
    }
    tool = &p->tools[0];
    RUN(plugin_refuses_old_host);
    RUN(runs_with_soft_timeout_and_reports_exit);
    RUN(still_running_tells_how_to_go_on);
    RUN(ctrl_c_interrupts);
    RUN(busy_says_how_to_wait_or_interrupt);
    RUN(every_end_has_one_status_line);
    RUN(output_capped_in_lines);
    dlclose(h);
    return testlib_done();
}
