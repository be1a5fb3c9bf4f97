/* Starting build/llmbox-unpack (server/unpack/unpack.h) for one layer or
 * one outer tarball: in a user namespace of its own that maps 0..65535 to
 * the images' host ids (base ...), as that namespace's root, so the tar is
 * never read by host root and what it writes belongs to the images' ids. */
#ifndef LB_IMAGES_UNPACK_RUN_H
#define LB_IMAGES_UNPACK_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

typedef struct lb_unpack_job {
    const char *exe;        /* build/llmbox-unpack */
    const char *mode;       /* "layer" or "archive" */
    uint32_t base;          /* the images' first host id (LLMBOX_SANDBOX_UID_BASE) */
    uint64_t max_bytes, max_entries;
    const char *label;      /* "layer sha256:<hex>", named in each refusal */
    int in_fd;              /* the tar */
    int dest_fd;            /* the folder to fill, owned by base */
    int opaque_fd;          /* layer mode: where the opaque folders are written; else -1 */
} lb_unpack_job;

/* Runs the job and waits for it. LB_OK; LB_E_TOOBIG over a cap; LB_E_INVAL
 * a refused entry; LB_E_IO anything else: msg gets the unpacker's sentence
 * (which names the layer and the entry) or why it could not run. Needs
 * host root (to write the namespace's id maps). */
LB_MUST_CHECK int lb_unpack_run(const lb_unpack_job *j, char *msg, size_t msgsz);

#endif
