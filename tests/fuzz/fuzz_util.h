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

/* Traps on the code points lb_path_clean_rel refuses in names although
 * they are valid UTF-8: C1 controls, bidirectional controls, line and
 * paragraph separators (s is valid UTF-8). */
static inline void fz_assert_no_format_chars(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned cp = *p;
        size_t len = cp < 0x80 ? 1 : (cp >> 5) == 6 ? 2 : (cp >> 4) == 14 ? 3 : 4;
        if (len == 2)
            cp = ((cp & 0x1f) << 6) | (p[1] & 0x3f);
        else if (len == 3)
            cp = ((cp & 0x0f) << 12) | ((p[1] & 0x3f) << 6) | (p[2] & 0x3f);
        if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
            (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029)
            __builtin_trap();
        p += len;
    }
}

/* Traps unless rel is a clean relative path: no leading '/', no empty,
 * "." or ".." component, no backslash or control character, valid UTF-8
 * without bidirectional controls or line separators. */
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
    fz_assert_utf8(rel, strlen(rel));
    fz_assert_no_format_chars(rel);
}

#endif
