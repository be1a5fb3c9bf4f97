/* The one check of a layer entry's name (unpack_path.c), apart from the
 * extraction so that a fuzz driver (tests/fuzz/fuzz_layer_path.c) can
 * hold it to its promise: what it accepts is a clean relative path that
 * cannot leave the folder it is extracted into. */
#ifndef LB_UNPACK_PATH_H
#define LB_UNPACK_PATH_H

#include <stddef.h>

#define LBUP_PATH_MAX 4096   /* one entry's path (PATH_MAX) */
#define LBUP_NAME_MAX 255    /* one component (NAME_MAX) */
#define LBUP_DEPTH_MAX 128   /* folders within folders */

/* name as a tar gives it: leading "./" and trailing '/' are dropped, "."
 * (or "./") is the root (rel ""). Refused (-1, *why the rest of a
 * sentence): no name, an absolute path, an empty, "." or ".." component,
 * bytes that are not UTF-8 (names are shown to people and models), a
 * component over LBUP_NAME_MAX, a path over LBUP_PATH_MAX or deeper than
 * LBUP_DEPTH_MAX. rel needs LBUP_PATH_MAX + 1 bytes. */
int lbup_entry_path(const char *name, char *rel, size_t relsz, const char **why);

/* A symlink's target, for the link at rel: refused (-1, *why) when it is
 * empty, longer than LBUP_PATH_MAX, not UTF-8, or relative and climbing
 * with ".." above the layer's root from rel's folder. An absolute target
 * is kept: the sandbox resolves it in its own root, and extraction never
 * follows a link. */
int lbup_link_target_ok(const char *rel, const char *target, const char **why);

#endif
