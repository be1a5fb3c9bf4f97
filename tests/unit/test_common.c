#include "testlib.h"

#include "common/buf.h"
#include "common/path.h"
#include "common/status.h"
#include "common/util.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int clean(const char *in, char *out)
{
    return lb_path_clean_rel(in, strlen(in), out, LB_PATH_MAX + 1);
}

TEST(path_accepts_plain_and_nested)
{
    char out[LB_PATH_MAX + 1];
    CHECK(clean("data.csv", out) == LB_OK);
    CHECK_STR(out, "data.csv");
    CHECK(clean("a//b/./c/", out) == LB_OK);
    CHECK_STR(out, "a/b/c");
    CHECK(clean("./x", out) == LB_OK);
    CHECK_STR(out, "x");
    CHECK(clean("caf\xc3\xa9.txt", out) == LB_OK);
}

TEST(path_refuses_escapes)
{
    char out[LB_PATH_MAX + 1];
    CHECK(clean("../etc/passwd", out) == LB_E_INVAL);
    CHECK(clean("a/../../b", out) == LB_E_INVAL);
    CHECK(clean("/etc/passwd", out) == LB_E_INVAL);
    CHECK(clean("", out) == LB_E_INVAL);
    CHECK(clean(".", out) == LB_E_INVAL);
    CHECK(clean("a\\..\\b", out) == LB_E_INVAL);
    CHECK(clean("bad\x01name", out) == LB_E_INVAL);
    CHECK(clean("bad\xff", out) == LB_E_INVAL);
    CHECK(clean("\xed\xa0\x80", out) == LB_E_INVAL); /* UTF-16 surrogate */
    CHECK(lb_path_clean_rel("a\0b", 3, out, sizeof out) == LB_E_INVAL);
}

TEST(path_refuses_controls_bidi_and_bad_utf8)
{
    char out[LB_PATH_MAX + 1];
    CHECK(clean("a\x7f", out) == LB_E_INVAL);                 /* DEL */
    CHECK(clean("a\xc2\x85" "b", out) == LB_E_INVAL);            /* C1 NEL */
    CHECK(clean("a\xc2\x9b" "[31m", out) == LB_E_INVAL);         /* C1 CSI */
    CHECK(clean("evil\xe2\x80\xaetxt.exe", out) == LB_E_INVAL); /* RTL override */
    CHECK(clean("a\xe2\x81\xa6" "b\xe2\x81\xa9", out) == LB_E_INVAL); /* isolates */
    CHECK(clean("a\xe2\x80\x8f" "b", out) == LB_E_INVAL);       /* RLM */
    CHECK(clean("a\xe2\x80\xa8" "b", out) == LB_E_INVAL);       /* line separator */
    CHECK(clean("\xc0\xae\xc0\xae/x", out) == LB_E_INVAL);   /* overlong ".." */
    CHECK(clean("a\xc0\xaf" "b", out) == LB_E_INVAL);            /* overlong '/' */
    CHECK(clean("\xed\xbf\xbf", out) == LB_E_INVAL);          /* lone low surrogate */
    CHECK(clean("\xf4\x90\x80\x80", out) == LB_E_INVAL);      /* past U+10FFFF */
    CHECK(clean("\xe2\x82", out) == LB_E_INVAL);              /* cut short */
}

TEST(path_keeps_combining_marks_and_scripts)
{
    char out[LB_PATH_MAX + 1];
    /* "résumé" as macOS sends it (NFD), Arabic, Japanese, an emoji */
    const char *ok[] = {"re\xcc\x81sume\xcc\x81.txt", "\xd8\xaa\xd9\x82\xd8\xb1.csv",
                        "\xe6\x97\xa5/\xe8\xaa\x9e.txt", "\xf0\x9f\x98\x80.png"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        CHECK(clean(ok[i], out) == LB_OK);
        CHECK_STR(out, ok[i]);
    }
}

TEST(path_caps_lengths)
{
    char out[LB_PATH_MAX + 1];
    char name[300];
    memset(name, 'a', 256);
    name[256] = '\0';
    CHECK(clean(name, out) == LB_E_INVAL);
    name[255] = '\0';
    CHECK(clean(name, out) == LB_OK);
    char *big = malloc(2000);
    for (int i = 0; i < 1999; i++)
        big[i] = (i % 10 == 9) ? '/' : 'b';
    big[1999] = '\0';
    CHECK(clean(big, out) == LB_E_INVAL);
    free(big);
}

TEST(buf_respects_cap)
{
    lb_buf b;
    lb_buf_init(&b, 10);
    CHECK(lb_buf_appends(&b, "hello") == LB_OK);
    CHECK(lb_buf_appends(&b, "world!") == LB_E_TOOBIG);
    CHECK(b.len == 5);
    CHECK(lb_buf_append_trunc(&b, "world!", 6) == 1);
    CHECK(b.len == 10);
    CHECK_STR(b.data, "helloworld");
    lb_buf_free(&b);
}

TEST(ids_are_random_hex)
{
    char a[33], b[33];
    CHECK(lb_random_hex(a, sizeof a, 16) == LB_OK);
    CHECK(lb_random_hex(b, sizeof b, 16) == LB_OK);
    CHECK(lb_id_valid(a));
    CHECK(strcmp(a, b) != 0);
    CHECK(!lb_id_valid("../../etc"));
    CHECK(!lb_id_valid("0123456789abcdef0123456789ABCDEF"));
}

TEST(atomic_write_roundtrip)
{
    char path[] = "/tmp/lbtest.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(lb_write_file_atomic(path, "abc", 3, 0644) == LB_OK);
    char *d = NULL;
    size_t n = 0;
    CHECK(lb_read_file(path, 10, &d, &n) == LB_OK);
    CHECK(n == 3 && d && !strcmp(d, "abc"));
    free(d);
    CHECK(lb_read_file(path, 2, &d, &n) == LB_E_TOOBIG);
    unlink(path);
}

/* the unsynced replace (sandbox records): replaces whole, leaves no temp
 * file behind, and fails cleanly when the folder is not there */
TEST(replace_write_roundtrip)
{
    char dir[] = "/tmp/lbtest.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[64], missing[80];
    snprintf(path, sizeof path, "%s/rec.json", dir);
    snprintf(missing, sizeof missing, "%s/nodir/rec.json", dir);
    CHECK(lb_write_file_replace(path, "first", 5, 0600) == LB_OK);
    CHECK(lb_write_file_replace(path, "second", 6, 0600) == LB_OK);
    char *d = NULL;
    size_t n = 0;
    CHECK(lb_read_file(path, 64, &d, &n) == LB_OK);
    CHECK(n == 6 && d && !strcmp(d, "second"));
    free(d);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(lb_write_file_replace(missing, "x", 1, 0600) == LB_E_IO);
    DIR *dh = opendir(dir);
    CHECK(dh != NULL);
    int entries = 0;
    for (struct dirent *e; dh && (e = readdir(dh));)
        entries += e->d_name[0] != '.';
    if (dh)
        closedir(dh);
    CHECK(entries == 1); /* rec.json only: no .tmp. left */
    unlink(path);
    rmdir(dir);
}

TEST(parse_ll_takes_whole_numbers_only)
{
    long long v = 7;
    CHECK(lb_parse_ll("42", 0, 100, &v) == LB_OK && v == 42);
    CHECK(lb_parse_ll("-5", -10, 10, &v) == LB_OK && v == -5);
    v = 7;
    CHECK(lb_parse_ll("", 0, 100, &v) == LB_E_INVAL && v == 7);
    CHECK(lb_parse_ll("12abc", 0, 100, &v) == LB_E_INVAL && v == 7);
    CHECK(lb_parse_ll("101", 0, 100, &v) == LB_E_INVAL && v == 7);
    CHECK(lb_parse_ll("99999999999999999999", 0, LLONG_MAX, &v) == LB_E_INVAL && v == 7);
    CHECK(lb_parse_ll("-", -10, 10, &v) == LB_E_INVAL && v == 7);
    CHECK(lb_parse_ll(NULL, 0, 1, &v) == LB_E_INVAL);
}

TEST(assert_aborts_unless_ndebug)
{
#ifdef NDEBUG
    printf("SKIP assert_aborts_unless_ndebug: built with NDEBUG\n");
#else
    LB_ASSERT(1 + 1 == 2); /* a true invariant costs nothing */
    pid_t pid = fork();
    if (pid == 0) {
        fclose(stderr); /* the expected message is not test output */
        LB_ASSERT(1 + 1 == 3);
        _exit(0);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#endif
}

int main(void)
{
    RUN(path_accepts_plain_and_nested);
    RUN(path_refuses_escapes);
    RUN(path_refuses_controls_bidi_and_bad_utf8);
    RUN(path_keeps_combining_marks_and_scripts);
    RUN(path_caps_lengths);
    RUN(buf_respects_cap);
    RUN(ids_are_random_hex);
    RUN(atomic_write_roundtrip);
    RUN(replace_write_roundtrip);
    RUN(parse_ll_takes_whole_numbers_only);
    RUN(assert_aborts_unless_ndebug);
    return testlib_done();
}
