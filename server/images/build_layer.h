/* A sandbox's saved state made an OCI layer, for the Dockerfile builder:
 * sandboxd's save writes the writable layer as a zstd pax tar (a
 * meta/image entry, then the upper layer's entries under layer/, deletions
 * already in the OCI form .wh.<name> and .wh..wh..opq; see
 * docs/ARCHITECTURE.md, "A sandbox's saved state"). This reads it as
 * hostile input (tar only, zstd or gzip, clean paths under layer/,
 * folders, files and symlinks only, capped entries and bytes) and writes
 * an uncompressed OCI layer tar (application/vnd.oci.image.layer.v1.tar)
 * atomically, with its sha256 (its digest and its diff_id are the same). */
#ifndef LB_IMAGES_BUILD_LAYER_H
#define LB_IMAGES_BUILD_LAYER_H

#include <stddef.h>

#include "common/status.h"

#define LB_BUILD_LAYER_ENTRIES_MAX 200000 /* as a state's restore takes */

typedef struct lb_build_layer {
    char digest[72];          /* "sha256:<hex>" of the layer tar (also its diff_id) */
    long long size;           /* bytes of the layer tar */
    long entries;             /* entries written */
} lb_build_layer;

/* Converts the state at state_path into a layer at out_path (written as
 * out_path.tmp, fsynced, renamed). max_bytes caps the files' sizes
 * together. On failure nothing is left at out_path and msg says why,
 * naming the entry: LB_E_INVAL (not a state, a bad entry), LB_E_TOOBIG,
 * LB_E_IO. */
LB_MUST_CHECK int lb_build_layer_from_state(const char *state_path, const char *out_path, long long max_bytes,
                                            lb_build_layer *out, char *msg, size_t msgsz);

#endif
