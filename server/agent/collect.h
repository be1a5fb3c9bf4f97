/*
 * A run's outputs (collect.c): the files the sandbox left, copied to the
 * host and described.
 */
#ifndef LB_COLLECT_H
#define LB_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "llmbox/sandbox.h"
#include "store/store.h"

typedef struct lb_collect_limits {
    size_t max_files;
    uint64_t max_bytes;
} lb_collect_limits;

/* Copies the regular files under sb_dir in the sandbox to host_dir/<path>
 * (paths cleaned with lb_path_clean_rel, symlinks and special files
 * skipped, atomic writes) and describes them (mime, sha256). *arts is
 * malloc'd (caller frees). notes (may be NULL, >= 512 bytes) receives a
 * sentence about files left out, or "". Returns LB_OK even when some files
 * were skipped over the caps or for their names. Errors, with the files
 * copied until then still in *arts: LB_E_NOSPACE when the host's disk
 * filled up (copying stops there), LB_E_UNAVAILABLE when the connection
 * to the sandbox broke during the copy, or the listing's own error. */
LB_MUST_CHECK int lb_collect_outputs(lbsb_conn *c, const char *sb_id, const char *sb_dir,
                                     const char *host_dir, const lb_collect_limits *lim,
                                     lb_artifact **arts, size_t *n, char *notes, size_t notesz);

#endif
