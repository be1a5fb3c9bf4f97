#include "testlib.h"

#include "common/buf.h"
#include "common/path.h"
#include "common/status.h"
#include "common/util.h"

#include <stdlib.h>
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

int main(void)
{
    RUN(path_accepts_plain_and_nested);
    RUN(path_refuses_escapes);
    RUN(path_caps_lengths);
    RUN(buf_respects_cap);
    RUN(ids_are_random_hex);
    RUN(atomic_write_roundtrip);
    return testlib_done();
}
