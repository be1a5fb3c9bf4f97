/* `llmbox image push`'s work: the image of an OCI image layout folder to a
 * registry, by the OCI distribution API: each blob the registry lacks (a
 * HEAD says which) uploaded in one PUT or, past chunk_bytes, in PATCH
 * chunks, then the manifest PUT under the reference's tag (or digest). */
#ifndef LB_IMAGES_PUSH_IMAGE_H
#define LB_IMAGES_PUSH_IMAGE_H

#include <stddef.h>

#include "common/status.h"

typedef struct lb_push_opts {
    const char *layout_dir;      /* an OCI image layout with one image (or a linux/amd64 one) */
    const char *ref;             /* where to, a registry reference */
    const char *insecure;        /* insecure_registries */
    const char *auth_file;       /* registry_auth_file, "" for none */
    long long chunk_bytes;       /* blobs larger than this go in chunks of this; 0: always one PUT */
    int quiet;
} lb_push_opts;

/* Pushes; manifest (72 bytes, may be NULL) gets the manifest's digest.
 * On failure msg says why: LB_E_INVAL (a bad reference or layout),
 * LB_E_PROTO (a layout blob that is not what its digest says, or a
 * registry that refused one), LB_E_DENIED, LB_E_UNAVAILABLE, LB_E_IO. */
LB_MUST_CHECK int lb_push_image(const lb_push_opts *o, char *manifest, size_t manifestsz, char *msg, size_t msgsz);

#endif
