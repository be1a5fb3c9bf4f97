/* The one check of a saved state's entry names (follow-ups): what
 * build/llmbox-stateio's restore accepts as a path, apart from everything
 * else so that a fuzz driver (tests/fuzz/fuzz_state_path.c) can hold it to
 * its promise. */
#ifndef LB_STATEIO_PATH_H
#define LB_STATEIO_PATH_H

#include <stddef.h>

#define LBST_NAME_MAX 255    /* one component (NAME_MAX) */

/* name must be "layer" or "layer/<path>" (trailing slashes allowed) where
 * <path> is at most LBST_PATH_MAX bytes of components that are neither
 * empty, "." nor "..", each at most LBST_NAME_MAX bytes, at most
 * LBST_DEPTH_MAX deep. Then rel (relsz >= LBST_PATH_MAX + 1) gets <path>
 * without trailing slashes ("" for the root) and it returns 0; else -1
 * and *why says why, as the rest of a sentence ("is not under layer/"). */
int lbst_entry_path(const char *name, char *rel, size_t relsz, const char **why);

#endif
