/* The layers a Dockerfile builder writes itself, without a sandbox: COPY
 * and ADD of build-context files, and the folders WORKDIR makes. Each is
 * an uncompressed OCI layer tar written with libarchive (pax), atomically,
 * with its sha256. The context is the user's own folder, but a symlink in
 * it may point anywhere: sources are resolved with realpath and must stay
 * inside the context, and symlinks below a copied folder are stored as
 * symlinks, never followed. Alongside the tar, a content digest of what
 * was copied (names, modes, owners, link targets, bytes; not times) keys
 * the build cache, so touching a file does not rerun the steps after it. */
#ifndef LB_IMAGES_BUILD_COPY_H
#define LB_IMAGES_BUILD_COPY_H

#include <stddef.h>

#include "common/status.h"

#define LB_BUILD_COPY_ENTRIES_MAX 200000 /* files of one COPY, as a layer's import takes */

typedef struct lb_build_tar {
    char digest[72];  /* "sha256:<hex>" of the tar */
    char content[65]; /* hex sha256 of what was copied, times left out */
    long long size;   /* bytes of the tar */
    long entries;
} lb_build_tar;

/* Writes a layer of the sources (absolute paths inside ctxreal, already
 * expanded; a pattern of * ? [ is matched with glob) copied to dest (an
 * absolute path in the image; a folder when it ends in '/', when there are
 * several sources or a source is a folder, whose contents are copied).
 * uid/gid own every entry; mode (>= 0) replaces the files' permission
 * bits. Folders of dest missing from every lower layer root (lower_roots:
 * the parent's extracted layers, top first) are added, root's, 0755.
 * max_bytes caps the files' bytes. LB_E_INVAL (a source outside the
 * context, none matched), LB_E_TOOBIG, LB_E_IO, with a sentence. */
LB_MUST_CHECK int lb_build_copy_layer(const char *ctxreal, const char *const *srcs, int nsrc, const char *dest,
                                      long uid, long gid, int mode, const char *const *lower_roots, int nlower,
                                      long long max_bytes, const char *out_path, lb_build_tar *out, char *msg,
                                      size_t msgsz);

/* Writes a layer of the folders of dir (absolute) that no lower layer
 * root has, root's, 0755, time 0 (so the same WORKDIR makes the same
 * layer). *out->entries is 0 and nothing is written when all exist. */
LB_MUST_CHECK int lb_build_dirs_layer(const char *dir, const char *const *lower_roots, int nlower,
                                      const char *out_path, lb_build_tar *out, char *msg, size_t msgsz);

/* The sha256 of a file, as 64 hex digits. */
LB_MUST_CHECK int lb_build_file_sha256(const char *path, char hex[65], long long *size);

#endif
