/*
 * build/llmbox-unpack: extracts one image layer, or the outer tarball of a
 * docker-archive or oci-archive, into a folder of the image store. It is
 * the only code that reads a layer's tar, and it never runs as host root:
 * `llmbox image import` (server/images/unpack_run.c) starts it in a user
 * namespace of its own that maps 0..65535 to the images' host ids
 * (LLMBOX_SANDBOX_UID_BASE ...), as that namespace's root, with
 * no_new_privs, and hands it only file descriptors:
 *
 *   fd 0  the tar (plain, gzip or zstd: libarchive finds which)
 *   fd 2  on failure, one sentence naming the layer and the entry
 *   fd 3  the folder to fill (owned by the images' root id, empty)
 *   fd 4  layer mode: the opaque folders, as NUL-ended relative paths
 *         (overlayfs's opaque mark is a trusted.* xattr, which only host
 *         root may set: the importer sets it on an fd it opens beneath
 *         the layer, after this process has ended)
 *
 * So the files it writes can only be owned by the images' ids, and it
 * can reach nothing of the host but those fds: the store's folders above
 * fd 3 belong to host root with mode 0700.
 *
 *   llmbox-unpack layer|archive MAX_BYTES MAX_ENTRIES LABEL
 *
 * LABEL names the layer in messages ("layer sha256:...").
 *
 * Exit status: 0 done; 2 over a cap; 3 a refused entry; 1 anything else.
 */
#ifndef LB_UNPACK_H
#define LB_UNPACK_H

#include <stdint.h>

#define LBUP_EXIT_OK 0
#define LBUP_EXIT_ERROR 1
#define LBUP_EXIT_TOOBIG 2
#define LBUP_EXIT_REFUSED 3

#define LBUP_FD_IN 0
#define LBUP_FD_MSG 2
#define LBUP_FD_DEST 3
#define LBUP_FD_OPAQUE 4

typedef struct lbup_opts {
    int archive_mode;        /* 1: the outer tarball (regular files and folders only) */
    uint64_t max_bytes;      /* the entries' sizes together (a sparse file counts whole) */
    uint64_t max_entries;
    const char *label;
} lbup_opts;

/* The extraction (unpack_layer.c): an exit status above, the sentence
 * written to fd 2 on failure. */
int lbup_extract(const lbup_opts *o);

/* Writes "LABEL: fmt ..." as the sentence on fd 2 and returns code
 * (unpack_main.c). */
int lbup_fail(const lbup_opts *o, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* openat2 of path beneath dirfd: no symlink, no magic link, no other
 * mount (unpack_main.c). */
int lbup_open_beneath(int dirfd, const char *path, int flags, int mode);

#endif
