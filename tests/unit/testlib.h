/* A tiny single-header test runner.
 * Each test prints one line "PASS name" or "FAIL name: where"; tests/run.sh
 * counts those lines. Usage:
 *
 *   TEST(parses_empty) { CHECK(parse("") == 0); }
 *   int main(void) { RUN(parses_empty); return testlib_done(); }
 */
#ifndef TESTLIB_H
#define TESTLIB_H
#include <stdio.h>
#include <string.h>

static int testlib_failed_total;
static int testlib_cur_failed;
static const char *testlib_cur_name;

#define TEST(name) static void test_##name(void)
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            if (!testlib_cur_failed)                                             \
                printf("FAIL %s: %s:%d: %s\n", testlib_cur_name, __FILE__,       \
                       __LINE__, #cond);                                         \
            testlib_cur_failed = 1;                                              \
        }                                                                        \
    } while (0)
static inline int testlib_streq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }
#define CHECK_STR(a, b) CHECK(testlib_streq((a), (b)))
#define RUN(name)                                                                \
    do {                                                                         \
        testlib_cur_name = #name;                                                \
        testlib_cur_failed = 0;                                                  \
        test_##name();                                                           \
        if (!testlib_cur_failed)                                                 \
            printf("PASS %s\n", #name);                                          \
        else                                                                     \
            testlib_failed_total++;                                              \
        fflush(stdout);                                                          \
    } while (0)

static inline int testlib_done(void) { return testlib_failed_total ? 1 : 0; }

#endif
