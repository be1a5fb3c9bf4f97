/* `llmbox image pull`'s work: an image from a registry into an OCI image
 * layout folder (oci-layout, index.json, blobs/sha256/), resolving a
 * manifest list or OCI index to linux/amd64, checking every blob against
 * its digest while it streams, with caps on the manifest, on each blob and
 * on the whole. The folder is a spool: a blob arrives as
 * blobs/sha256/<hex>.partial and is renamed once whole and verified, so a
 * pull that is stopped goes on from where it was (an HTTP Range request)
 * and index.json, written last, says the layout is whole. */
#ifndef LB_IMAGES_PULL_IMAGE_H
#define LB_IMAGES_PULL_IMAGE_H

#include <stddef.h>

#include "common/status.h"

#define LB_PULL_MANIFEST_MAX (4 << 20)   /* a manifest or index: Docker's own cap */
#define LB_PULL_CONFIG_MAX (8 << 20)     /* an image config */
#define LB_PULL_LAYERS_MAX 256           /* layers in one image (overlayfs stacks at most ~500) */

typedef struct lb_pull_opts {
    const char *ref;             /* the reference, as given */
    const char *layout_dir;      /* created if missing; may hold a stopped pull's spool */
    const char *insecure;        /* insecure_registries: plain HTTP allowed to these */
    const char *auth_file;       /* registry_auth_file, "" for none */
    long long blob_max;          /* bytes in one blob */
    long long total_max;         /* bytes in the whole image */
    int quiet;                   /* no progress lines on stderr */
} lb_pull_opts;

/* Pulls o->ref into o->layout_dir. canon (LB_IMAGE_REF_MAX + 1, may be
 * NULL) gets the normalized reference; manifest (72 bytes, may be NULL)
 * the digest of the manifest pulled (the linux/amd64 one of an index).
 * On failure msg says why: LB_E_INVAL (a bad reference or document),
 * LB_E_NOTFOUND (no such image, or no linux/amd64 in its list),
 * LB_E_PROTO (a blob that is not what its digest says, a registry that
 * speaks the protocol wrong), LB_E_TOOBIG, LB_E_DENIED, LB_E_UNAVAILABLE,
 * LB_E_IO. */
LB_MUST_CHECK int lb_pull_image(const lb_pull_opts *o, char *canon, size_t canonsz, char *manifest,
                                size_t manifestsz, char *msg, size_t msgsz);

#endif
