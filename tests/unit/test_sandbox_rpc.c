/* Unit tests of the sandbox RPC: framing, request validation, the exec
 * wrapper and sentinel scanner, output capture, and the client library
 * against a scripted fake daemon. No root, no sandbox needed. */
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "llmbox/sandbox.h"
#include "sandbox/rpc.h"
#include "sandboxd/sandbox_exec.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- framing ---------------------------------------------------------------- */

TEST(frame_roundtrip_over_socketpair)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(lbsd_frame_send(sv[0], "hello", 5, NULL) == LB_OK);
    CHECK(lbsd_frame_send(sv[0], "", 0, NULL) == LB_OK);
    char *d;
    size_t n;
    CHECK(lbsd_frame_recv(sv[1], 100, &d, &n, NULL) == LB_OK);
    CHECK(n == 5 && d && !memcmp(d, "hello", 5) && d[5] == '\0');
    free(d);
    CHECK(lbsd_frame_recv(sv[1], 100, &d, &n, NULL) == LB_OK);
    CHECK(n == 0 && d && d[0] == '\0');
    free(d);
    /* over the caller's cap: a protocol error, nothing allocated */
    CHECK(lbsd_frame_send(sv[0], "0123456789", 10, NULL) == LB_OK);
    CHECK(lbsd_frame_recv(sv[1], 4, &d, &n, NULL) == LB_E_PROTO);
    CHECK(d == NULL);
    close(sv[0]);
    /* peer gone */
    CHECK(lbsd_frame_recv(sv[1], 100, &d, &n, NULL) != LB_OK);
    close(sv[1]);
}

TEST(frame_recv_honours_cancel_flag)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    volatile int cancel = 1;
    char *d;
    size_t n;
    /* nothing to read and the flag is set: returns instead of blocking */
    CHECK(lbsd_frame_recv(sv[1], 100, &d, &n, &cancel) == LB_E_CANCELLED);
    close(sv[0]);
    close(sv[1]);
}

TEST(decoder_split_feeds)
{
    lbsd_decoder d;
    lbsd_decoder_init(&d, 1024);
    unsigned char wire[4 + 3 + 4 + 2];
    lbsd_frame_header(wire, 3);
    memcpy(wire + 4, "abc", 3);
    lbsd_frame_header(wire + 7, 2);
    memcpy(wire + 11, "xy", 2);
    /* one byte at a time: two frames come out, in order */
    int frames = 0;
    for (size_t i = 0; i < sizeof wire; i++) {
        char *f;
        size_t fl, used;
        int r = lbsd_decoder_feed(&d, (const char *)wire + i, 1, &used, &f, &fl);
        CHECK(r >= 0 && used == 1);
        if (r == 1) {
            frames++;
            if (frames == 1)
                CHECK(fl == 3 && !memcmp(f, "abc", 3));
            else
                CHECK(fl == 2 && !memcmp(f, "xy", 2));
            free(f);
        }
    }
    CHECK(frames == 2);
    lbsd_decoder_free(&d);
}

TEST(decoder_refuses_oversized_header)
{
    lbsd_decoder d;
    lbsd_decoder_init(&d, 16);
    unsigned char hdr[4];
    lbsd_frame_header(hdr, 17);
    char *f;
    size_t fl, used;
    CHECK(lbsd_decoder_feed(&d, (const char *)hdr, 4, &used, &f, &fl) == -LB_E_PROTO);
    CHECK(f == NULL);
    lbsd_decoder_free(&d);
    /* the global cap applies whatever max the caller asked for */
    lbsd_decoder_init(&d, (size_t)-1);
    lbsd_frame_header(hdr, LLMBOX_RPC_MAX_FRAME + 1u);
    CHECK(lbsd_decoder_feed(&d, (const char *)hdr, 4, &used, &f, &fl) == -LB_E_PROTO);
    lbsd_decoder_free(&d);
}

TEST(decoder_zero_length_frame)
{
    lbsd_decoder d;
    lbsd_decoder_init(&d, 16);
    unsigned char hdr[4];
    lbsd_frame_header(hdr, 0);
    char *f;
    size_t fl, used;
    CHECK(lbsd_decoder_feed(&d, (const char *)hdr, 4, &used, &f, &fl) == 1);
    CHECK(fl == 0 && f && f[0] == '\0');
    free(f);
    lbsd_decoder_free(&d);
}

/* ---- request validation -------------------------------------------------------- */

static int parse(const char *js, lbsd_req *r, char *msg)
{
    return lbsd_req_parse(js, strlen(js), r, msg, 256);
}

#define ID "0123456789abcdef0123456789abcdef"

TEST(req_valid_ops)
{
    lbsd_req r;
    char msg[256];
    CHECK(parse("{\"op\":\"ping\"}", &r, msg) == LB_OK && r.op == LBSD_OP_PING);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"create\",\"image\":\"default\",\"memory_mib\":256,\"pids\":64,"
                "\"input_dir\":\"/tmp/in\"}", &r, msg) == LB_OK);
    CHECK(r.op == LBSD_OP_CREATE && r.memory_mib == 256 && r.pids == 64);
    CHECK_STR(r.image, "default");
    CHECK_STR(r.input_dir, "/tmp/in");
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"exec\",\"id\":\"" ID "\",\"command\":\"ls -la\",\"timeout_ms\":5000}",
                &r, msg) == LB_OK);
    CHECK(r.op == LBSD_OP_EXEC && r.timeout_ms == 5000 && r.command_len == 6 &&
          r.soft_timeout_ms == 0);
    lbsd_req_free(&r);
    /* the soft-timeout protocol: "" keeps waiting, with its own soft timeout */
    CHECK(parse("{\"op\":\"exec\",\"id\":\"" ID "\",\"command\":\"\",\"soft_timeout_ms\":500}",
                &r, msg) == LB_OK);
    CHECK(r.op == LBSD_OP_EXEC && r.command_len == 0 && r.soft_timeout_ms == 500 &&
          r.timeout_ms == 0);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"write\",\"id\":\"" ID "\",\"path\":\"/a//b/./c\",\"data\":true,"
                "\"excl\":true}", &r, msg) == LB_OK);
    CHECK_STR(r.path, "a/b/c");
    CHECK(r.excl && r.has_data && r.mode == 0644);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"list\",\"id\":\"" ID "\",\"path\":\"/\"}", &r, msg) == LB_OK);
    CHECK_STR(r.path, "");
    CHECK(r.max_depth == 1 && r.max_entries == 10000);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"read\",\"id\":\"" ID "\",\"path\":\"/x\",\"max\":10}", &r, msg) == LB_OK);
    CHECK(r.max == 10);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"destroy\",\"id\":\"" ID "\"}", &r, msg) == LB_OK);
    lbsd_req_free(&r);
}

TEST(req_refuses_garbage)
{
    static const char *const bad[] = {
        "",
        "{",
        "[]",
        "\"ping\"",
        "{\"op\":\"nope\"}",
        "{\"op\":7}",
        "{}",
        "{\"op\":\"exec\",\"id\":\"" ID "\"}",                         /* no command */
        "{\"op\":\"exec\",\"id\":\"XYZ\",\"command\":\"x\"}",          /* bad id */
        "{\"op\":\"exec\",\"id\":\"" ID "\",\"command\":1}",
        "{\"op\":\"exec\",\"id\":\"" ID "\",\"command\":\"x\",\"timeout_ms\":-1}",
        "{\"op\":\"exec\",\"id\":\"" ID "\",\"command\":\"x\",\"timeout_ms\":1.5}",
        "{\"op\":\"exec\",\"id\":\"" ID "\",\"command\":\"x\",\"timeout_ms\":1e300}",
        "{\"op\":\"exec\",\"id\":\"" ID "\",\"command\":\"x\",\"soft_timeout_ms\":-5}",
        "{\"op\":\"exec\",\"id\":\"" ID "\",\"command\":\"x\",\"soft_timeout_ms\":\"10\"}",
        "{\"op\":\"read\",\"id\":\"" ID "\",\"path\":\"relative\"}",
        "{\"op\":\"read\",\"id\":\"" ID "\",\"path\":\"/a/../etc\"}",
        "{\"op\":\"read\",\"id\":\"" ID "\",\"path\":\"/a\\u0001b\"}",
        "{\"op\":\"read\",\"id\":\"" ID "\"}",
        "{\"op\":\"read\",\"id\":\"" ID "\",\"path\":\"/x\",\"max\":99999999999}",
        "{\"op\":\"write\",\"id\":\"" ID "\",\"path\":\"/x\"}",           /* no data frame */
        "{\"op\":\"write\",\"id\":\"" ID "\",\"path\":\"/\",\"data\":true}",
        "{\"op\":\"read\",\"id\":\"" ID "\",\"path\":\"/x\",\"data\":true}",
        "{\"op\":\"create\",\"image\":\"../etc\"}",
        "{\"op\":\"create\",\"image\":\"UPPER\"}",
        "{\"op\":\"create\",\"memory_mib\":4}",
        "{\"op\":\"create\",\"input_dir\":\"relative/dir\"}",
        "{\"op\":\"list\",\"id\":\"" ID "\",\"path\":\"/\",\"max_depth\":0}",
        "{\"op\":\"list\",\"id\":\"" ID "\",\"path\":\"/\",\"max_entries\":1e9}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lbsd_req r;
        char msg[256] = "";
        int rc = parse(bad[i], &r, msg);
        if (rc != LB_E_INVAL || !msg[0])
            printf("  (case %zu: %s -> %d)\n", i, bad[i], rc);
        CHECK(rc == LB_E_INVAL && msg[0]);
        lbsd_req_free(&r);
    }
    /* an embedded NUL in the frame */
    lbsd_req r;
    char msg[256];
    CHECK(lbsd_req_parse("{\"op\":\"ping\"}\0x", 15, &r, msg, sizeof msg) == LB_E_INVAL);
    lbsd_req_free(&r);
}

/* follow-ups: freeze, thaw, save, state_delete, state_list and create's restore */
TEST(req_state_ops)
{
    lbsd_req r;
    char msg[256];
    CHECK(parse("{\"op\":\"freeze\",\"id\":\"" ID "\"}", &r, msg) == LB_OK && r.op == LBSD_OP_FREEZE &&
          !r.reboot);
    lbsd_req_free(&r);
    /* E2B's pause without memory: a new boot id (sandboxd/boot_id.h) */
    CHECK(parse("{\"op\":\"freeze\",\"id\":\"" ID "\",\"reboot\":true}", &r, msg) == LB_OK && r.reboot);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"thaw\",\"id\":\"" ID "\"}", &r, msg) == LB_OK && r.op == LBSD_OP_THAW);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"save\",\"id\":\"" ID "\",\"state\":\"t-1_a\",\"max_mib\":5}", &r, msg) == LB_OK);
    CHECK(r.op == LBSD_OP_SAVE && r.max_mib == 5);
    CHECK_STR(r.state, "t-1_a");
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"state_delete\",\"state\":\"x\"}", &r, msg) == LB_OK && r.op == LBSD_OP_STATE_DELETE);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"state_list\"}", &r, msg) == LB_OK && r.op == LBSD_OP_STATE_LIST && !r.state);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"create\",\"restore\":\"s1\"}", &r, msg) == LB_OK);
    CHECK_STR(r.state, "s1");
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"create\"}", &r, msg) == LB_OK && !r.state);
    lbsd_req_free(&r);
    static const char *const bad[] = {
        "{\"op\":\"freeze\"}",
        "{\"op\":\"freeze\",\"id\":\"" ID "\",\"reboot\":\"yes\"}", /* a boolean only */
        "{\"op\":\"save\",\"id\":\"" ID "\"}",                           /* no state */
        "{\"op\":\"save\",\"id\":\"" ID "\",\"state\":\"../x\"}",
        "{\"op\":\"save\",\"id\":\"" ID "\",\"state\":\"A\"}",
        "{\"op\":\"save\",\"id\":\"" ID "\",\"state\":\"\"}",
        "{\"op\":\"save\",\"id\":\"" ID "\",\"state\":\"x\",\"max_mib\":-1}",
        "{\"op\":\"save\",\"id\":\"" ID "\",\"state\":"
        "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}", /* 65 */
        "{\"op\":\"state_delete\"}",
        "{\"op\":\"create\",\"restore\":\"a/b\"}",
        "{\"op\":\"create\",\"restore\":7}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char m[256] = "";
        int rc = parse(bad[i], &r, m);
        if (rc != LB_E_INVAL || !m[0])
            printf("  (case %zu: %s -> %d)\n", i, bad[i], rc);
        CHECK(rc == LB_E_INVAL && m[0]);
        lbsd_req_free(&r);
    }
    CHECK(lbsd_state_name_valid("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")); /* 64 */
    CHECK(!lbsd_state_name_valid(NULL) && !lbsd_state_name_valid(".") && !lbsd_state_name_valid("a b"));
}

TEST(image_names)
{
    CHECK(lbsd_image_name_valid("default"));
    CHECK(lbsd_image_name_valid("a_b-9"));
    CHECK(!lbsd_image_name_valid(""));
    CHECK(!lbsd_image_name_valid("Default"));
    CHECK(!lbsd_image_name_valid("a/b"));
    CHECK(!lbsd_image_name_valid(".."));
    CHECK(!lbsd_image_name_valid("abcdefghijklmnopqrstuvwxyz0123456")); /* 33 */
    CHECK(lbsd_image_name_valid("abcdefghijklmnopqrstuvwxyz012345"));   /* 32 */
}

TEST(error_codes_roundtrip)
{
    static const int st[] = {LB_E_INVAL, LB_E_NOTFOUND, LB_E_EXISTS, LB_E_TOOBIG,
                             LB_E_SANDBOX, LB_E_BUSY, LB_E_INTERNAL};
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
        CHECK(lbsd_code_status(lbsd_status_code(st[i])) == st[i]);
    /* "too many sandboxes" is sent as busy too */
    CHECK_STR(lbsd_status_code(LB_E_UNAVAILABLE), "busy");
    CHECK(lbsd_state_parse("running") == LLMBOX_EXEC_RUNNING);
    CHECK_STR(lbsd_state_name(LLMBOX_EXEC_RUNNING), "running");
    CHECK_STR(lbsd_state_name(99), "error");
    CHECK(lbsd_code_status("isdir") == LB_E_ISDIR);
    CHECK(lbsd_code_status("whatever") == LB_E_PROTO);
    CHECK(lbsd_state_parse(lbsd_state_name(LLMBOX_EXEC_OOM)) == LLMBOX_EXEC_OOM);
    CHECK(lbsd_state_parse("exited") == LLMBOX_EXEC_EXITED);
    CHECK(lbsd_state_parse("bogus") == -1);
}

/* ---- exec wrapper, scanner, capture -------------------------------------------- */

/* The payload line of a wrapper w (bulk form: after its header). */
static const char *wrapper_payload(const char *w, size_t n, size_t *plen)
{
    const char *p = w;
    if (strncmp(w, "builtin read -rN", 16) == 0) {
        char *end = NULL;
        unsigned long want = strtoul(w + 16, &end, 10);
        const char *nl = strchr(w, '\n');
        CHECK(end && strncmp(end, " __lbsd_w&&builtin eval \"$__lbsd_w\"\n", 36) == 0);
        p = nl ? nl + 1 : w + n;
        /* read -N takes exactly the rest: nothing left for bash to parse */
        CHECK(want == (unsigned long)(w + n - p));
    }
    *plen = (size_t)(w + n - p);
    return p;
}

static void check_wrapper(const char *cmd, size_t cmdlen, int bulk)
{
    size_t n;
    char *w = lbsd_exec_wrapper(cmd, cmdlen, "__LBSD_S__", &n);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK((strncmp(w, "builtin read -rN", 16) == 0) == bulk);
    CHECK(!bulk || n <= 4096); /* one atomic pipe write */
    size_t pn;
    const char *pl = wrapper_payload(w, n, &pn);
    /* exactly one newline in the payload (its end), no raw quote or
     * backslash from cmd inside the $'...' literal */
    CHECK(pn > 0 && memchr(pl, '\n', pn) == pl + pn - 1);
    const char *lit = strstr(pl, "__lbsd_c=$'");
    CHECK(lit == pl + strlen("unset __lbsd_w; "));
    if (lit) {
        lit += strlen("__lbsd_c=$'");
        const char *end = strstr(lit, "'; trap ");
        CHECK(end != NULL);
        for (const char *p = lit; end && p < end; p++) {
            CHECK(*p != '\'' && *p != '"' && *p != '`' && *p != '$' && *p != ';' && *p != '\n');
            CHECK((unsigned char)*p < 0x80); /* ASCII: read -N counts characters */
            if (*p == '\\')
                CHECK(p[1] == 'x');
        }
    }
    CHECK(strstr(pl, "'__LBSD_S__' \"$__lbsd_rc\"") != NULL);
    free(w);
}

TEST(wrapper_escapes_everything_dangerous)
{
    const char *cmd = "echo 'a' \"$b\" `c` \\ ; \n x \xc3\xa9";
    check_wrapper(cmd, strlen(cmd), 1);
    /* past one pipe write: the payload alone, still one line */
    size_t big = 3000;
    char *long_cmd = malloc(big + 1);
    CHECK(long_cmd != NULL);
    if (long_cmd) {
        for (size_t i = 0; i < big; i++)
            long_cmd[i] = "a;'\n"[i % 4];
        long_cmd[big] = '\0';
        check_wrapper(long_cmd, big, 0);
        free(long_cmd);
    }
}

static void feed_all(lbsd_scan *s, lbsd_capture *cap, const char *sent, int code, const char *in,
                     size_t step)
{
    size_t n = strlen(in);
    for (size_t i = 0; i < n; i += step)
        lbsd_scan_feed(s, cap, sent, strlen(sent), code, in + i, n - i < step ? n - i : step);
}

static char *cap_text(lbsd_capture *c)
{
    int t = 0;
    return lbsd_capture_text(c, &t);
}

TEST(scanner_finds_split_sentinel)
{
    const char *S = "__LBSD_abcdef__";
    const char *stream = "hello\nworld\n__LBSD_abcdef__42\n";
    for (size_t step = 1; step <= 8; step++) {
        lbsd_scan s;
        memset(&s, 0, sizeof s);
        lbsd_capture cap;
        lbsd_capture_init(&cap);
        feed_all(&s, &cap, S, 1, stream, step);
        lbsd_scan_flush(&s, &cap);
        CHECK(s.found && s.code == 42);
        char *t = cap_text(&cap);
        CHECK_STR(t, "hello\nworld");
        free(t);
        lbsd_capture_free(&cap);
    }
}

TEST(scanner_ignores_other_sentinels)
{
    const char *S = "__LBSD_real__";
    const char *stream = "\n__LBSD_fake__0\n\n__LBSD_real__x\n__LBSD_real__\nafter\n";
    lbsd_scan s;
    memset(&s, 0, sizeof s);
    lbsd_capture cap;
    lbsd_capture_init(&cap);
    feed_all(&s, &cap, S, 1, stream, 3);
    CHECK(!s.found);
    lbsd_scan_feed(&s, &cap, S, strlen(S), 1, "\n__LBSD_real__-1\n", 17);
    CHECK(s.found && s.code == -1);
    lbsd_scan_flush(&s, &cap);
    char *t = cap_text(&cap);
    CHECK_STR(t, "\n__LBSD_fake__0\n\n__LBSD_real__x\n__LBSD_real__\nafter\n");
    free(t);
    lbsd_capture_free(&cap);
}

TEST(scanner_stderr_without_code)
{
    const char *S = "__LBSD_e__";
    lbsd_scan s;
    memset(&s, 0, sizeof s);
    lbsd_capture cap;
    lbsd_capture_init(&cap);
    feed_all(&s, &cap, S, 0, "oops\n\n__LBSD_e__\n", 2);
    CHECK(s.found);
    lbsd_scan_flush(&s, &cap);
    char *t = cap_text(&cap);
    CHECK_STR(t, "oops\n");
    free(t);
    lbsd_capture_free(&cap);
}

/* A "running" reply shows all output so far: only what could be the start
 * of the sentinel line is held back, and only until it is decided. */
TEST(scanner_holds_back_only_sentinel_prefixes)
{
    const char *S = "__LBSD_abcdef__";
    size_t sl = strlen(S);
    lbsd_scan s;
    memset(&s, 0, sizeof s);
    lbsd_capture cap;
    lbsd_capture_init(&cap);
    lbsd_scan_feed(&s, &cap, S, sl, 1, "start\nno newline at the end", 27);
    char *t = cap_text(&cap);
    CHECK_STR(t, "start\nno newline at the end");
    free(t);
    /* a newline at the end could start the sentinel line: held */
    lbsd_scan_feed(&s, &cap, S, sl, 1, "\nline\n", 6);
    t = cap_text(&cap);
    CHECK_STR(t, "start\nno newline at the end\nline");
    free(t);
    /* a prefix of the sentinel is held; a near miss is released at once */
    lbsd_scan_feed(&s, &cap, S, sl, 1, "__LBSD_abc", 10);
    t = cap_text(&cap);
    CHECK_STR(t, "start\nno newline at the end\nline");
    free(t);
    lbsd_scan_feed(&s, &cap, S, sl, 1, "X\n__LBSD_", 9);
    t = cap_text(&cap);
    CHECK_STR(t, "start\nno newline at the end\nline\n__LBSD_abcX");
    free(t);
    CHECK(!s.found);
    lbsd_scan_feed(&s, &cap, S, sl, 1, "abcdef__7\n", 10);
    CHECK(s.found && s.code == 7);
    lbsd_scan_flush(&s, &cap);
    t = cap_text(&cap);
    CHECK_STR(t, "start\nno newline at the end\nline\n__LBSD_abcX");
    free(t);
    lbsd_capture_free(&cap);
}

/* A "running" reply shows the lone newline the scanner holds back; the
 * scanner still matches a sentinel line right after it, and never shows
 * it twice. */
TEST(scanner_show_then_sentinel)
{
    const char *S = "__LBSD_abcdef__";
    size_t sl = strlen(S);
    static const struct {
        const char *before, *after, *want;
    } cases[] = {
        {"start\n", "\n__LBSD_abcdef__0\n", "start\n"},
        {"x\n", "y\n\n__LBSD_abcdef__0\n", "x\ny\n"},
        {"x\n", "\ny\n\n__LBSD_abcdef__0\n", "x\n\ny\n"},
        /* the newline was the sentinel's own, split from it: shown once, harmless */
        {"abc\n", "__LBSD_abcdef__0\n", "abc\n"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        lbsd_scan s;
        memset(&s, 0, sizeof s);
        lbsd_capture cap;
        lbsd_capture_init(&cap);
        lbsd_scan_feed(&s, &cap, S, sl, 1, cases[c].before, strlen(cases[c].before));
        lbsd_scan_show(&s, &cap);
        lbsd_scan_show(&s, &cap); /* twice: still once */
        char *t = cap_text(&cap);
        CHECK_STR(t, cases[c].before);
        free(t);
        lbsd_scan_feed(&s, &cap, S, sl, 1, cases[c].after, strlen(cases[c].after));
        CHECK(s.found && s.code == 0);
        lbsd_scan_flush(&s, &cap);
        t = cap_text(&cap);
        CHECK_STR(t, cases[c].want);
        free(t);
        lbsd_capture_free(&cap);
    }
    /* a partial sentinel is never shown */
    lbsd_scan s;
    memset(&s, 0, sizeof s);
    lbsd_capture cap;
    lbsd_capture_init(&cap);
    lbsd_scan_feed(&s, &cap, S, sl, 1, "out\n__LBSD_ab", 13);
    lbsd_scan_show(&s, &cap);
    char *t = cap_text(&cap);
    CHECK_STR(t, "out");
    free(t);
    lbsd_capture_free(&cap);
}

TEST(capture_keeps_head_and_tail)
{
    lbsd_capture cap;
    lbsd_capture_init(&cap);
    char *chunk = malloc(100000);
    CHECK(chunk != NULL);
    if (!chunk)
        return;
    memset(chunk, 'a', 100000);
    for (int i = 0; i < 30; i++) /* 3 MB of 'a' */
        lbsd_capture_add(&cap, chunk, 100000);
    lbsd_capture_add(&cap, "END", 3);
    int trunc = 0;
    char *t = lbsd_capture_text(&cap, &trunc);
    CHECK(trunc == 1);
    CHECK(t && strlen(t) < LBSD_OUT_HEAD + LBSD_OUT_TAIL + 100);
    CHECK(t && strstr(t, "bytes omitted") != NULL);
    CHECK(t && strlen(t) > 3 && !strcmp(t + strlen(t) - 3, "END"));
    free(t);
    free(chunk);
    lbsd_capture_free(&cap);
}

TEST(capture_sanitizes_utf8)
{
    lbsd_capture cap;
    lbsd_capture_init(&cap);
    lbsd_capture_add(&cap, "ok \xc3\xa9 \xff\x00z \xed\xa0\x80", 13);
    int trunc = 0;
    char *t = lbsd_capture_text(&cap, &trunc);
    CHECK(trunc == 0);
    CHECK_STR(t, "ok \xc3\xa9 \xef\xbf\xbd\xef\xbf\xbdz \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    free(t);
    lbsd_capture_free(&cap);
}

/* ---- the client against a scripted daemon ------------------------------------------ */

/* The fake daemon answers each request with the next canned response
 * (and an optional data frame), then exits. */
static pid_t fake_daemon(const char *path, const char *const *responses, size_t n)
{
    unlink(path);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 1) != 0)
        return -1;
    pid_t pid = fork();
    if (pid != 0) {
        close(lfd);
        return pid;
    }
    int fd = accept(lfd, NULL, NULL);
    for (size_t i = 0; i < n; i++) {
        char *req;
        size_t len;
        if (lbsd_frame_recv(fd, 1 << 20, &req, &len, NULL) != LB_OK)
            _exit(1);
        if (strstr(req, "\"data\":true")) {
            char *d;
            size_t dl;
            if (lbsd_frame_recv(fd, 1 << 20, &d, &dl, NULL) != LB_OK)
                _exit(1);
            free(d);
        }
        const char *r = responses[i];
        /* "?want?json": json only when the request holds want (what the
         * client put on the wire), "!want!json" only when it does not;
         * else an error the client sees */
        if (r[0] == '?' || r[0] == '!') {
            const char *q = strchr(r + 1, r[0]);
            int has = q && memmem(req, len, r + 1, (size_t)(q - r - 1)) != NULL;
            r = q && has == (r[0] == '?') ? q + 1 : "{\"ok\":false,\"error\":\"invalid\",\"message\":\"not the request expected\"}";
        }
        free(req);
        const char *bar = strchr(r, '|'); /* "json|data" */
        size_t jl = bar ? (size_t)(bar - r) : strlen(r);
        LB_IGNORE(lbsd_frame_send(fd, r, jl, NULL)); /* a peer that hung up is what the client side checks */
        if (bar)
            LB_IGNORE(lbsd_frame_send(fd, bar + 1, strlen(bar + 1), NULL)); /* a peer that hung up is what the client side checks */
    }
    /* hold the connection open until the client is done */
    char b;
    while (read(fd, &b, 1) > 0)
        ;
    _exit(0);
}

TEST(client_against_fake_daemon)
{
    char path[108];
    snprintf(path, sizeof path, "/tmp/llmbox-unit-%d.sock", (int)getpid());
    static const char *const resp[] = {
        "{\"ok\":true,\"id\":\"" ID "\"}",
        "{\"ok\":true,\"state\":\"timeout\",\"exit_code\":137,\"stdout\":\"out\",\"stderr\":\"e\","
        "\"truncated\":true,\"duration_ms\":1001}",
        "{\"ok\":true,\"size\":3,\"data\":true}|abc",
        "{\"ok\":false,\"error\":\"notfound\",\"message\":\"no such file: /x\"}",
        "{\"ok\":true,\"entries\":[{\"path\":\"a\",\"type\":\"file\",\"size\":5},"
        "{\"path\":\"l\",\"type\":\"other\",\"size\":0},{\"path\":\"d\",\"type\":\"dir\"}]}",
        "{\"ok\":true,\"type\":\"dir\",\"size\":0}",
        "{\"ok\":true}",
        "{\"ok\":true,\"version\":\"x\",\"sandboxes\":1,\"cgroup\":\"v1\"}",
        "{\"ok\":true,\"size\":9,\"data\":true}|too-long!",
    };
    pid_t pid = fake_daemon(path, resp, sizeof resp / sizeof resp[0]);
    CHECK(pid > 0);
    if (pid <= 0)
        return;
    lbsb_conn *c = NULL;
    char err[256];
    CHECK(lbsb_connect(path, NULL, &c, err, sizeof err) == LB_OK);
    char id[33];
    lbsb_spec spec = {.image = "default", .memory_mib = 256};
    CHECK(lbsb_create(c, &spec, id, sizeof id, err, sizeof err) == LB_OK);
    CHECK_STR(id, ID);
    lbsb_exec_out o;
    CHECK(lbsb_exec(c, id, "sleep 9", 1000, &o, err, sizeof err) == LB_OK);
    CHECK(o.state == LLMBOX_EXEC_TIMEOUT && o.exit_code == 137 && o.truncated &&
          o.duration_ms == 1001 && o.out_len == 3 && o.err_len == 1);
    CHECK_STR(o.out, "out");
    lbsb_exec_out_free(&o);
    char *data;
    size_t len;
    CHECK(lbsb_read(c, id, "/f", 100, &data, &len, err, sizeof err) == LB_OK);
    CHECK(len == 3 && data && !memcmp(data, "abc", 3));
    free(data);
    CHECK(lbsb_read(c, id, "/x", 100, &data, &len, err, sizeof err) == LB_E_NOTFOUND);
    CHECK_STR(err, "no such file: /x");
    lbsb_entry *e;
    size_t n;
    CHECK(lbsb_list(c, id, "/", 2, 100, &e, &n, err, sizeof err) == LB_OK);
    CHECK(n == 3 && e[0].type == 1 && e[0].size == 5 && e[1].type == 3 && e[2].type == 2);
    CHECK_STR(e[1].path, "l");
    lbsb_entries_free(e, n);
    int type;
    uint64_t size;
    CHECK(lbsb_stat(c, id, "/d", &type, &size, err, sizeof err) == LB_OK && type == 2);
    CHECK(lbsb_write(c, id, "/w", "xyz", 3, 1, err, sizeof err) == LB_OK);
    char *info;
    CHECK(lbsb_ping(c, &info, err, sizeof err) == LB_OK);
    CHECK(info && strstr(info, "\"cgroup\":\"v1\""));
    free(info);
    /* a data frame over the caller's max is refused, the connection broken */
    CHECK(lbsb_read(c, id, "/f", 4, &data, &len, err, sizeof err) == LB_E_PROTO);
    CHECK(lbsb_destroy(c, id, err, sizeof err) == LB_E_UNAVAILABLE);
    /* argument checks never reach the wire */
    CHECK(lbsb_exec(c, "bad", "x", 0, &o, err, sizeof err) == LB_E_INVAL);
    CHECK(lbsb_read(c, id, "relative", 4, &data, &len, err, sizeof err) == LB_E_INVAL);
    lbsb_close(c);
    int st;
    waitpid(pid, &st, 0);
    unlink(path);
}

/* follow-ups: the state calls put their fields on the wire and read the answers */
TEST(client_state_calls)
{
    char path[108];
    snprintf(path, sizeof path, "/tmp/llmbox-unit-st-%d.sock", (int)getpid());
    static const char *const resp[] = {
        "{\"ok\":true}",
        "{\"ok\":false,\"error\":\"busy\",\"message\":\"sandbox is frozen\"}",
        "{\"ok\":true}",
        "{\"ok\":true,\"state\":\"s1\",\"bytes\":1234,\"files\":7}",
        "{\"ok\":false,\"error\":\"toobig\",\"message\":\"over the cap of 1 MiB\"}",
        "{\"ok\":true,\"states\":[{\"state\":\"s1\",\"bytes\":1234,\"mtime\":1700000000},"
        "{\"state\":\"../bad\",\"bytes\":1},{\"state\":\"s2\",\"bytes\":5,\"mtime\":2}]}",
        "{\"ok\":false,\"error\":\"notfound\",\"message\":\"no saved state x\"}",
        "{\"ok\":true,\"id\":\"" ID "\"}",
    };
    pid_t pid = fake_daemon(path, resp, sizeof resp / sizeof resp[0]);
    CHECK(pid > 0);
    if (pid <= 0)
        return;
    lbsb_conn *c = NULL;
    char err[256];
    CHECK(lbsb_connect(path, NULL, &c, err, sizeof err) == LB_OK);
    CHECK(lbsb_freeze(c, ID, err, sizeof err) == LB_OK);
    CHECK(lbsb_freeze(c, ID, err, sizeof err) == LB_E_BUSY);
    CHECK_STR(err, "sandbox is frozen");
    CHECK(lbsb_thaw(c, ID, err, sizeof err) == LB_OK);
    uint64_t bytes = 0, files = 0;
    CHECK(lbsb_save(c, ID, "s1", 0, &bytes, &files, err, sizeof err) == LB_OK);
    CHECK(bytes == 1234 && files == 7);
    CHECK(lbsb_save(c, ID, "s1", 1, &bytes, &files, err, sizeof err) == LB_E_TOOBIG);
    lbsb_state *st = NULL;
    size_t n = 0;
    CHECK(lbsb_state_list(c, &st, &n, err, sizeof err) == LB_OK);
    CHECK(n == 2 && st && st[0].bytes == 1234 && st[0].mtime == 1700000000);
    CHECK(n == 2 && !strcmp(st[1].name, "s2"));
    free(st);
    CHECK(lbsb_state_delete(c, "x", err, sizeof err) == LB_E_NOTFOUND);
    char id[33];
    lbsb_spec spec = {.restore = "s1"};
    CHECK(lbsb_create(c, &spec, id, sizeof id, err, sizeof err) == LB_OK);
    /* argument checks never reach the wire */
    CHECK(lbsb_save(c, ID, "Bad/Name", 0, NULL, NULL, err, sizeof err) == LB_E_INVAL);
    CHECK(lbsb_state_delete(c, "", err, sizeof err) == LB_E_INVAL);
    CHECK(lbsb_freeze(c, "nope", err, sizeof err) == LB_E_INVAL);
    lbsb_close(c);
    int wst;
    waitpid(pid, &wst, 0);
    unlink(path);
}

/* E2B's protocol: stat and list carry the file metadata; out-of-range values from
 * sandboxd (which reads a hostile tree) are not passed on as they came */
TEST(client_stat_and_list_metadata)
{
    char path[108];
    snprintf(path, sizeof path, "/tmp/llmbox-unit-meta-%d.sock", (int)getpid());
    static const char *const resp[] = {
        "{\"ok\":true,\"type\":\"other\",\"size\":0,\"kind\":\"symlink\",\"mode\":511,\"uid\":0,"
        "\"gid\":5,\"mtime\":1700000000,\"mtime_ns\":123,\"target\":\"/etc/passwd\"}",
        "{\"ok\":true,\"entries\":[{\"path\":\"a\",\"type\":\"file\",\"size\":5,\"kind\":\"file\","
        "\"mode\":99999,\"uid\":70000,\"gid\":-1,\"mtime\":\"x\",\"mtime_ns\":2e9,\"target\":\"t\"},"
        "{\"path\":\"old\",\"type\":\"dir\"},{\"path\":\"p\",\"type\":\"other\",\"kind\":\"fifo\",\"mode\":420}]}",
        "{\"ok\":true,\"type\":\"missing\",\"size\":0}",
    };
    pid_t pid = fake_daemon(path, resp, sizeof resp / sizeof resp[0]);
    CHECK(pid > 0);
    if (pid <= 0)
        return;
    lbsb_conn *c = NULL;
    char err[256];
    CHECK(lbsb_connect(path, NULL, &c, err, sizeof err) == LB_OK);
    lbsb_entry e;
    CHECK(lbsb_stat_entry(c, ID, "/l", &e, err, sizeof err) == LB_OK);
    CHECK(e.type == 3 && e.has_meta && e.kind == LBSB_KIND_SYMLINK && e.mode == 0777 && e.uid == 0 &&
          e.gid == 5 && e.mtime_s == 1700000000 && e.mtime_ns == 123 && !e.path);
    CHECK(e.target && !strcmp(e.target, "/etc/passwd"));
    lbsb_entry_clear(&e);
    CHECK(!e.target && !e.has_meta);
    lbsb_entry *l = NULL;
    size_t n = 0;
    CHECK(lbsb_list(c, ID, "/", 1, 10, &l, &n, err, sizeof err) == LB_OK);
    CHECK(n == 3);
    if (n == 3) {
        /* out of range: no mode, the overflow ids, no time; a target only on a symlink */
        CHECK(l[0].has_meta && l[0].kind == LBSB_KIND_FILE && l[0].mode == 0 && l[0].uid == 65534 &&
              l[0].gid == 65534 && l[0].mtime_s == 0 && l[0].mtime_ns == 0 && !l[0].target);
        CHECK(!l[1].has_meta && l[1].type == 2);      /* an older sandboxd's entry */
        CHECK(l[2].has_meta && l[2].kind == LBSB_KIND_FIFO && l[2].mode == 0644);
    }
    lbsb_entries_free(l, n);
    CHECK(lbsb_stat_entry(c, ID, "/gone", &e, err, sizeof err) == LB_OK && e.type == 0 && !e.has_meta);
    CHECK(lbsb_stat_entry(c, ID, "rel", &e, err, sizeof err) == LB_E_INVAL);
    lbsb_close(c);
    int wst;
    waitpid(pid, &wst, 0);
    unlink(path);
}

/* exec_ex: the soft timeout goes on the wire, "running" and "busy" come back */
TEST(client_exec_ex_running_and_busy)
{
    char path[108];
    snprintf(path, sizeof path, "/tmp/llmbox-unit-x-%d.sock", (int)getpid());
    unlink(path);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(lfd, 1) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = accept(lfd, NULL, NULL);
        char *req;
        size_t len;
        static const char *const want[] = {"\"soft_timeout_ms\":500", "\"command\":\"ls\"",
                                           "\"command\":\"\""};
        static const char *const resp[] = {
            "{\"ok\":true,\"state\":\"running\",\"exit_code\":-1,\"stdout\":\"so far\","
            "\"stderr\":\"\",\"truncated\":false,\"duration_ms\":503,\"timeout_ms\":9000}",
            "{\"ok\":false,\"error\":\"busy\",\"message\":\"a command started 0 s ago is "
            "still running in this sandbox\"}",
            "{\"ok\":true,\"state\":\"exited\",\"exit_code\":0,\"stdout\":\"rest\","
            "\"stderr\":\"\",\"truncated\":false,\"duration_ms\":1200,\"timeout_ms\":9000,"
            "\"shell_restarted\":true}",
        };
        for (int i = 0; i < 3; i++) {
            if (lbsd_frame_recv(fd, 1 << 20, &req, &len, NULL) || !strstr(req, want[i]))
                _exit(10 + i);
            free(req);
            LB_IGNORE(lbsd_frame_send(fd, resp[i], strlen(resp[i]), NULL)); /* a peer that hung up is what the client side checks */
        }
        char b;
        while (read(fd, &b, 1) > 0)
            ;
        _exit(0);
    }
    close(lfd);
    lbsb_conn *c = NULL;
    char err[256];
    CHECK(lbsb_connect(path, NULL, &c, err, sizeof err) == LB_OK);
    if (!c)
        return;
    lbsb_exec_out o;
    lbsb_exec_opts opts = {.timeout_ms = 9000, .soft_timeout_ms = 500};
    CHECK(lbsb_exec_ex(c, ID, "sleep 1; echo rest", &opts, &o, err, sizeof err) == LB_OK);
    CHECK(o.state == LLMBOX_EXEC_RUNNING && o.exit_code == -1 && o.duration_ms == 503 &&
          o.timeout_ms == 9000 && !o.shell_restarted);
    CHECK_STR(o.out, "so far");
    lbsb_exec_out_free(&o);
    CHECK(lbsb_exec_ex(c, ID, "ls", NULL, &o, err, sizeof err) == LB_E_BUSY);
    CHECK(strstr(err, "still running") != NULL);
    lbsb_exec_out_free(&o);
    CHECK(lbsb_exec_ex(c, ID, "", &opts, &o, err, sizeof err) == LB_OK);
    CHECK(o.state == LLMBOX_EXEC_EXITED && o.exit_code == 0 && o.shell_restarted);
    CHECK_STR(o.out, "rest");
    lbsb_exec_out_free(&o);
    lbsb_close(c);
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    unlink(path);
}

static volatile int g_cancel;
static void on_alarm(int sig)
{
    (void)sig;
    g_cancel = 1;
}

/* A cancelled exec sends "interrupt" and the connection stays usable: the
 * two answers it is owed are dropped before the next call's. */
TEST(client_cancel_interrupts_and_recovers)
{
    char path[108];
    snprintf(path, sizeof path, "/tmp/llmbox-unit-c-%d.sock", (int)getpid());
    unlink(path);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(lfd, 1) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = accept(lfd, NULL, NULL);
        char *req;
        size_t len;
        /* exec: no answer until the interrupt arrives */
        if (lbsd_frame_recv(fd, 1 << 20, &req, &len, NULL) || !strstr(req, "\"exec\""))
            _exit(1);
        free(req);
        if (lbsd_frame_recv(fd, 1 << 20, &req, &len, NULL) || !strstr(req, "\"interrupt\"") ||
            !strstr(req, ID))
            _exit(2);
        free(req);
        const char *ex = "{\"ok\":true,\"state\":\"interrupted\",\"exit_code\":137}";
        const char *ok = "{\"ok\":true}";
        const char *ping = "{\"ok\":true,\"version\":\"after-cancel\"}";
        LB_IGNORE(lbsd_frame_send(fd, ex, strlen(ex), NULL)); /* a peer that hung up is what the client side checks */
        LB_IGNORE(lbsd_frame_send(fd, ok, strlen(ok), NULL)); /* a peer that hung up is what the client side checks */
        if (lbsd_frame_recv(fd, 1 << 20, &req, &len, NULL) || !strstr(req, "\"ping\""))
            _exit(3);
        free(req);
        LB_IGNORE(lbsd_frame_send(fd, ping, strlen(ping), NULL)); /* a peer that hung up is what the client side checks */
        char b;
        while (read(fd, &b, 1) > 0)
            ;
        _exit(0);
    }
    close(lfd);
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_alarm;
    sigaction(SIGALRM, &act, NULL);
    lbsb_conn *c = NULL;
    char err[256];
    g_cancel = 0;
    CHECK(lbsb_connect(path, &g_cancel, &c, err, sizeof err) == LB_OK);
    if (!c)
        return;
    alarm(1);
    lbsb_exec_out o;
    CHECK(lbsb_exec(c, ID, "sleep 100", 0, &o, err, sizeof err) == LB_E_CANCELLED);
    lbsb_exec_out_free(&o);
    /* still set: calls fail fast, without touching the stream */
    char *info = NULL;
    CHECK(lbsb_ping(c, &info, err, sizeof err) == LB_E_CANCELLED);
    g_cancel = 0;
    CHECK(lbsb_ping(c, &info, err, sizeof err) == LB_OK);
    CHECK(info && strstr(info, "after-cancel"));
    free(info);
    lbsb_close(c);
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    unlink(path);
}

TEST(client_reports_missing_daemon)
{
    lbsb_conn *c = NULL;
    char err[256] = "";
    CHECK(lbsb_connect("/nonexistent/llmbox.sock", NULL, &c, err, sizeof err) == LB_E_UNAVAILABLE);
    CHECK(c == NULL && strstr(err, "sandboxd") != NULL);
}


/* E2B's protocol: the process ops need an id; only proc_input may carry data */
TEST(req_proc_ops)
{
    static const char *const ops[] = {"proc_start", "proc_attach", "proc_input", "proc_signal", "proc_list"};
    static const lbsd_op want[] = {LBSD_OP_PROC_START, LBSD_OP_PROC_ATTACH, LBSD_OP_PROC_INPUT, LBSD_OP_PROC_SIGNAL,
                                   LBSD_OP_PROC_LIST};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        lbsd_req r;
        char msg[256] = "", f[160];
        snprintf(f, sizeof f, "{\"op\":\"%s\",\"id\":\"" ID "\"}", ops[i]);
        CHECK(parse(f, &r, msg) == LB_OK && r.op == want[i] && !strcmp(lbsd_op_name(r.op), ops[i]));
        lbsd_req_free(&r);
        snprintf(f, sizeof f, "{\"op\":\"%s\"}", ops[i]);
        CHECK(parse(f, &r, msg) == LB_E_INVAL && msg[0]);
        lbsd_req_free(&r);
        snprintf(f, sizeof f, "{\"op\":\"%s\",\"id\":\"" ID "\",\"data\":true}", ops[i]);
        CHECK(parse(f, &r, msg) == (want[i] == LBSD_OP_PROC_INPUT ? LB_OK : LB_E_INVAL));
        lbsd_req_free(&r);
    }
}

/* E2B's volumes: "volume" carries a data frame (a write), "volume_mount" needs
 * its sandbox; "nospace" (an owner's room) comes back as itself */
TEST(req_volume_ops)
{
    lbsd_req r;
    char msg[256] = "";
    CHECK(parse("{\"op\":\"volume\",\"action\":\"write\",\"data\":true}", &r, msg) == LB_OK && r.op == LBSD_OP_VOLUME &&
          r.has_data);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"volume_mount\",\"id\":\"" ID "\",\"volume\":\"" ID "\",\"path\":\"/v\"}", &r, msg) ==
          LB_OK && r.op == LBSD_OP_VOLUME_MOUNT && !strcmp(lbsd_op_name(r.op), "volume_mount"));
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"volume_mount\",\"volume\":\"" ID "\"}", &r, msg) == LB_E_INVAL && msg[0]);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"volume_mount\",\"id\":\"" ID "\",\"data\":true}", &r, msg) == LB_E_INVAL);
    lbsd_req_free(&r);
    CHECK(lbsd_code_status(lbsd_status_code(LB_E_NOSPACE)) == LB_E_NOSPACE);
}

/* E2B's makeDir, rename, remove: a sandbox and a clean path are checked
 * before sandboxd serves it (action and dest: sandbox_fs.c) */
TEST(req_fs_change)
{
    lbsd_req r;
    char msg[256] = "";
    CHECK(parse("{\"op\":\"fs_change\",\"id\":\"" ID "\",\"action\":\"remove\",\"path\":\"/a//b/\"}", &r, msg) ==
          LB_OK && r.op == LBSD_OP_FS_CHANGE && !strcmp(r.path, "a/b") && !strcmp(lbsd_op_name(r.op), "fs_change"));
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"fs_change\",\"action\":\"remove\",\"path\":\"/a\"}", &r, msg) == LB_E_INVAL && msg[0]);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"fs_change\",\"id\":\"" ID "\",\"action\":\"mkdir\",\"path\":\"/a/../b\"}", &r, msg) ==
          LB_E_INVAL);
    lbsd_req_free(&r);
}

static void send_frames(int fd, const char *const *frames, size_t n)
{
    for (size_t i = 0; i < n; i++)
        LB_IGNORE(lbsd_frame_send(fd, frames[i], strlen(frames[i]), NULL)); /* into a socketpair's empty buffer */
}

/* E2B's protocol: a start with attach, then its events; list and the refusals */
TEST(client_proc_calls)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    static const char *const frames[] = {
        "{\"ok\":true,\"pid\":7}",
        "{\"ok\":true,\"event\":\"out\",\"pid\":7,\"fd\":2,\"data\":true}", "err bytes",
        "{\"ok\":true,\"event\":\"exit\",\"pid\":7,\"signal\":9}",
        "{\"ok\":true,\"event\":\"gone\",\"pid\":7,\"message\":\"it expired\"}",
        "{\"ok\":false,\"error\":\"busy\",\"message\":\"too many\"}",
        "{\"ok\":true,\"procs\":[{\"pid\":7,\"tag\":\"t\"}]}",
        "{\"ok\":true}",
    };
    send_frames(sv[1], frames, sizeof frames / sizeof frames[0]);
    lbsb_conn *c = NULL;
    CHECK(lbsb_conn_from_fd(sv[0], NULL, &c) == LB_OK);
    char err[256];
    const char *argv[] = {"/bin/echo", "hi"}, *env[] = {"A=1", "A=2"};
    lbsb_proc_spec sp = {.argv = argv, .argc = 2, .env = env, .envc = 2, .cwd = "/tmp", .tag = "t", .with_stdin = 1};
    uint32_t pid = 0;
    CHECK(lbsb_proc_start(c, ID, &sp, 1, &pid, err, sizeof err) == LB_OK && pid == 7);
    lbsb_proc_event ev;
    CHECK(lbsb_proc_next(c, 1000, &ev, err, sizeof err) == LB_OK && ev.kind == LBSB_PROC_OUT && ev.fd == 2);
    CHECK(ev.len == 9 && !memcmp(ev.data, "err bytes", 9));
    lbsb_proc_event_free(&ev);
    CHECK(lbsb_proc_next(c, 1000, &ev, err, sizeof err) == LB_OK && ev.kind == LBSB_PROC_EXIT);
    CHECK(ev.signal == 9 && ev.exit_code == -1);
    CHECK(lbsb_proc_next(c, 1000, &ev, err, sizeof err) == LB_OK && ev.kind == LBSB_PROC_GONE);
    CHECK_STR(ev.message, "it expired");
    CHECK(lbsb_proc_signal(c, ID, 7, 15, err, sizeof err) == LB_E_BUSY);
    CHECK_STR(err, "too many");
    char *json = NULL;
    CHECK(lbsb_proc_list(c, ID, &json, err, sizeof err) == LB_OK && json && strstr(json, "\"tag\":\"t\""));
    free(json);
    CHECK(lbsb_proc_input(c, ID, 7, "x", 1, 1, err, sizeof err) == LB_OK);
    /* nothing more comes: a timeout, not a hang */
    CHECK(lbsb_proc_next(c, 50, &ev, err, sizeof err) == LB_E_TIMEOUT);
    /* what went on the wire: the start's fields, the last of a repeated name */
    char *req;
    size_t len;
    CHECK(lbsd_frame_recv(sv[1], 1 << 20, &req, &len, NULL) == LB_OK);
    CHECK(strstr(req, "\"argv\":[\"/bin/echo\",\"hi\"]") && strstr(req, "\"env\":{\"A\":\"2\"}"));
    CHECK(strstr(req, "\"attach\":true") && strstr(req, "\"stdin\":true") && strstr(req, "\"cwd\":\"/tmp\""));
    free(req);
    /* argument checks never reach the wire */
    lbsb_proc_spec none = {0};
    CHECK(lbsb_proc_start(c, ID, &none, 0, &pid, err, sizeof err) == LB_E_INVAL);
    const char *badenv[] = {"NOEQUALS"};
    lbsb_proc_spec be = {.argv = argv, .argc = 1, .env = badenv, .envc = 1};
    CHECK(lbsb_proc_start(c, ID, &be, 0, &pid, err, sizeof err) == LB_E_INVAL);
    CHECK(lbsb_proc_signal(c, "nope", 7, 9, err, sizeof err) == LB_E_INVAL);
    /* a frame that is not an event breaks the stream */
    send_frames(sv[1], (const char *const[]){"{\"ok\":false,\"error\":\"invalid\",\"message\":\"no\"}"}, 1);
    CHECK(lbsb_proc_next(c, 1000, &ev, err, sizeof err) == LB_E_PROTO);
    CHECK_STR(err, "no");
    lbsb_close(c);
    close(sv[1]);
}

/* A frame with a descriptor on its first byte, as sandboxd's port_connect sends it. */
static void send_frame_fd(int sock, const char *json, int fd)
{
    char buf[256];
    size_t n = strlen(json);
    lbsd_frame_header((unsigned char *)buf, (uint32_t)n);
    memcpy(buf + 4, json, n);
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct iovec iov = {.iov_base = buf, .iov_len = n + 4};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    CHECK(sendmsg(sock, &m, 0) == (ssize_t)(n + 4));
}

/* E2B's protocol: port_connect takes the descriptor that comes with the answer;
 * one that comes with a refusal is closed, the refusal reported */
TEST(client_port_connect_takes_the_descriptor)
{
    int sv[2], p[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && pipe(p) == 0);
    send_frame_fd(sv[1], "{\"ok\":true,\"port\":8000,\"fd\":true}", p[1]);
    send_frame_fd(sv[1], "{\"ok\":false,\"error\":\"notfound\",\"message\":\"nothing listens on port 8001\"}", p[1]);
    close(p[1]);
    lbsb_conn *c = NULL;
    CHECK(lbsb_conn_from_fd(sv[0], NULL, &c) == LB_OK);
    char err[256];
    int fd = -1;
    CHECK(lbsb_port_connect(c, ID, 8000, &fd, err, sizeof err) == LB_OK && fd >= 0);
    CHECK(write(fd, "via", 3) == 3);
    char got[8] = "";
    close(fd);
    CHECK(read(p[0], got, sizeof got) == 3 && !memcmp(got, "via", 3));
    fd = -1;
    CHECK(lbsb_port_connect(c, ID, 8001, &fd, err, sizeof err) == LB_E_NOTFOUND && fd == -1);
    CHECK_STR(err, "nothing listens on port 8001");
    /* the refusal's descriptor was closed: the pipe has no writer left */
    CHECK(read(p[0], got, sizeof got) == 0);
    char *req;
    size_t len;
    CHECK(lbsd_frame_recv(sv[1], 1 << 20, &req, &len, NULL) == LB_OK && strstr(req, "\"port\":8000"));
    free(req);
    CHECK(lbsb_port_connect(c, ID, 0, &fd, err, sizeof err) == LB_E_INVAL);
    CHECK(lbsb_port_connect(c, "nope", 80, &fd, err, sizeof err) == LB_E_INVAL);
    lbsb_close(c);
    close(sv[1]);
    close(p[0]);
}

/* A process call whose answer does not come ends at the connection's
 * deadline (the answer, when it comes, is dropped by the next call), and
 * at once when the watched descriptor (the HTTP client's) hangs up. */
TEST(client_call_deadline_and_leaving_caller)
{
    int sv[2], wp[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, wp) == 0);
    lbsb_conn *c = NULL;
    CHECK(lbsb_conn_from_fd(sv[0], NULL, &c) == LB_OK);
    char err[256];
    const char *argv[] = {"true"};
    lbsb_proc_spec sp = {.argv = argv, .argc = 1};
    uint32_t pid = 0;
    int64_t t0 = lb_mono_ms();
    lbsb_set_deadline(c, t0 + 200);
    CHECK(lbsb_proc_start(c, ID, &sp, 0, &pid, err, sizeof err) == LB_E_TIMEOUT && strstr(err, "proc_start"));
    CHECK(lb_mono_ms() - t0 < 5000);
    /* the late answer, then the next call's: the first is dropped */
    send_frames(sv[1], (const char *const[]){"{\"ok\":true,\"pid\":7}", "{\"ok\":true,\"pid\":8}"}, 2);
    lbsb_set_deadline(c, 0);
    CHECK(lbsb_proc_start(c, ID, &sp, 0, &pid, err, sizeof err) == LB_OK && pid == 8);
    /* the caller's client left: the wait ends without an answer */
    lbsb_set_watch_fd(c, wp[0]);
    close(wp[1]);
    t0 = lb_mono_ms();
    CHECK(lbsb_proc_start(c, ID, &sp, 0, &pid, err, sizeof err) == LB_E_CANCELLED);
    CHECK(lb_mono_ms() - t0 < 5000);
    lbsb_close(c);
    close(sv[1]);
    close(wp[0]);
}

/* image jobs (sandboxd/image_jobs.h): the ops parse, the client puts the
 * spec on the wire and reads the answers; a daemon's bad answer is refused */
TEST(client_image_job_calls)
{
    lbsd_req r;
    char msg[256];
    CHECK(parse("{\"op\":\"image_job_start\",\"kind\":\"pull\",\"ref\":\"127.0.0.1:5000/a:1\"}", &r, msg) ==
          LB_OK && r.op == LBSD_OP_IMAGE_JOB_START);
    lbsd_req_free(&r);
    CHECK(parse("{\"op\":\"image_job_poll\",\"job\":\"" ID "\"}", &r, msg) == LB_OK &&
          r.op == LBSD_OP_IMAGE_JOB_POLL);
    lbsd_req_free(&r);
    char path[108];
    snprintf(path, sizeof path, "/tmp/llmbox-unit-ij-%d.sock", (int)getpid());
    static const char *const resp[] = {
        "?\"build_args\":[\"A=1\"]?{\"ok\":true,\"job\":\"" ID "\"}",
        "{\"ok\":true,\"state\":\"running\",\"next_offset\":7,\"data\":true}|llmbox:",
        "{\"ok\":true,\"state\":\"failed\",\"exit_code\":1,\"next_offset\":7,"
        "\"error\":\"Cannot reach the registry.\",\"data\":true}|",
        "{\"ok\":false,\"error\":\"busy\",\"message\":\"sandboxd runs 4 image jobs already\"}",
        "{\"ok\":true,\"job\":\"../x\"}",
        "{\"ok\":true,\"state\":\"exploded\",\"next_offset\":0,\"data\":true}|",
        /* the build's network goes on the wire as "network"; none asked: no field */
        "?\"network\":\"nat\"?{\"ok\":true,\"job\":\"" ID "\"}",
        "!\"network\"!{\"ok\":true,\"job\":\"" ID "\"}",
    };
    pid_t pid = fake_daemon(path, resp, sizeof resp / sizeof resp[0]);
    CHECK(pid > 0);
    if (pid <= 0)
        return;
    lbsb_conn *c = NULL;
    char err[256], job[33];
    CHECK(lbsb_connect(path, NULL, &c, err, sizeof err) == LB_OK);
    const char *args[] = {"A=1"};
    lbsb_image_job_spec spec = {.kind = "build", .ref = "team/app:1", .context = "ctx-1", .build_args = args,
                                .n_build_args = 1};
    CHECK(lbsb_image_job_start(c, &spec, job, err, sizeof err) == LB_OK);
    CHECK_STR(job, ID);
    lbsb_image_job_status st;
    CHECK(lbsb_image_job_poll(c, job, 0, 100, &st, err, sizeof err) == LB_OK);
    CHECK_STR(st.state, "running");
    CHECK(st.log_len == 7 && st.log && !memcmp(st.log, "llmbox:", 7) && st.next_offset == 7);
    lbsb_image_job_status_free(&st);
    CHECK(lbsb_image_job_poll(c, job, 7, 100, &st, err, sizeof err) == LB_OK);
    CHECK(!strcmp(st.state, "failed") && st.exit_code == 1 && st.log_len == 0);
    CHECK_STR(st.error, "Cannot reach the registry.");
    lbsb_image_job_status_free(&st);
    lbsb_image_job_spec pull = {.kind = "pull", .ref = "127.0.0.1:5000/a:1"};
    CHECK(lbsb_image_job_start(c, &pull, job, err, sizeof err) == LB_E_BUSY);
    CHECK(lbsb_image_job_start(c, &pull, job, err, sizeof err) == LB_E_PROTO && !job[0]);
    CHECK(lbsb_image_job_poll(c, ID, 0, 100, &st, err, sizeof err) == LB_E_PROTO && !st.log);
    lbsb_image_job_spec netb = {.kind = "build", .ref = "team/app:2", .context = "ctx-2", .network = "nat"};
    CHECK(lbsb_image_job_start(c, &netb, job, err, sizeof err) == LB_OK);
    CHECK_STR(job, ID);
    netb.network = NULL;
    CHECK(lbsb_image_job_start(c, &netb, job, err, sizeof err) == LB_OK);
    /* argument checks never reach the wire */
    CHECK(lbsb_image_job_poll(c, "nope", 0, 100, &st, err, sizeof err) == LB_E_INVAL);
    lbsb_image_job_spec none = {.kind = "pull"};
    CHECK(lbsb_image_job_start(c, &none, job, err, sizeof err) == LB_E_INVAL);
    lbsb_close(c);
    int wst;
    waitpid(pid, &wst, 0);
    unlink(path);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    RUN(frame_roundtrip_over_socketpair);
    RUN(frame_recv_honours_cancel_flag);
    RUN(decoder_split_feeds);
    RUN(decoder_refuses_oversized_header);
    RUN(decoder_zero_length_frame);
    RUN(req_valid_ops);
    RUN(req_refuses_garbage);
    RUN(req_state_ops);
    RUN(image_names);
    RUN(error_codes_roundtrip);
    RUN(wrapper_escapes_everything_dangerous);
    RUN(scanner_finds_split_sentinel);
    RUN(scanner_ignores_other_sentinels);
    RUN(scanner_stderr_without_code);
    RUN(scanner_holds_back_only_sentinel_prefixes);
    RUN(scanner_show_then_sentinel);
    RUN(capture_keeps_head_and_tail);
    RUN(capture_sanitizes_utf8);
    RUN(client_against_fake_daemon);
    RUN(client_stat_and_list_metadata);
    RUN(client_exec_ex_running_and_busy);
    RUN(client_cancel_interrupts_and_recovers);
    RUN(client_reports_missing_daemon);
    RUN(client_state_calls);
    RUN(req_proc_ops);
    RUN(client_proc_calls);
    RUN(client_port_connect_takes_the_descriptor);
    RUN(client_call_deadline_and_leaving_caller);
    RUN(client_image_job_calls);
    RUN(req_volume_ops);
    RUN(req_fs_change);
    return testlib_done();
}
