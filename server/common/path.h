/* Path safety for names that come from clients, models and sandboxes. */
#ifndef LB_PATH_H
#define LB_PATH_H
#include <stddef.h>

#define LB_PATH_MAX 1024     /* whole relative path, bytes */
#define LB_NAME_MAX 255      /* one component, bytes */

/* Cleans a relative path of n bytes (it may hold NULs, which are refused)
 * into out: repeated and trailing '/' collapse, "./" components vanish.
 * Refused with LB_E_INVAL: empty result, absolute paths, "..", control
 * characters (C0, DEL, C1), bidirectional controls (U+202A-202E,
 * U+2066-2069, U+200E/200F, U+061C), line and paragraph separators,
 * backslashes, invalid UTF-8 (also overlong forms, surrogates, past
 * U+10FFFF), components over LB_NAME_MAX or a whole over LB_PATH_MAX. out is NUL-terminated; outsz >= LB_PATH_MAX + 1. */
int lb_path_clean_rel(const char *in, size_t n, char *out, size_t outsz);

/* Joins base and a path already cleaned by lb_path_clean_rel. */
int lb_path_join(char *out, size_t outsz, const char *base, const char *rel);

#endif
