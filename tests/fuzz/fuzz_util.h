/* Shared checks for the fuzz targets: what every parser promises about the
 * strings it hands on. A broken promise is a crash (__builtin_trap), which
 * libFuzzer reports with the input that caused it. */
#ifndef LB_FUZZ_UTIL_H
#define LB_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Traps unless s[0..n) is well-formed UTF-8 without NUL. */
static inline void fz_assert_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    while (p < e) {
        unsigned c = *p;
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!c || !len || (size_t)(e - p) < len || (len == 2 && c < 0xc2))
            __builtin_trap();
        for (size_t i = 1; i < len; i++)
            if ((p[i] & 0xc0) != 0x80)
                __builtin_trap();
        p += len;
    }
}

/* Traps unless rel is a clean relative path: no leading '/', no empty,
 * "." or ".." component, no backslash or control character. */
static inline void fz_assert_clean_rel(const char *rel)
{
    if (rel[0] == '/')
        __builtin_trap();
    const char *c = rel;
    while (*c) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            __builtin_trap();
        c += n;
        if (*c == '/')
            c++;
    }
    for (c = rel; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '\\')
            __builtin_trap();
}

#endif
