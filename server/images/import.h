/* Importing images into the layered store (store.h): from an OCI image
 * layout folder (what the registry client and the Dockerfile builder hand
 * over), and, for `llmbox image import FILE`, from the tarballs
 * `docker save`/`podman save` (docker-archive) and `skopeo copy ...
 * oci-archive:` (oci-archive) write. Every blob is checked against its
 * digest before it is used; each layer is extracted by build/llmbox-unpack
 * in a user namespace of the images' ids (unpack_run.h); the image's
 * record is written last, atomically, so a kill at any point leaves
 * nothing registered that is not whole (the next writer removes what is
 * left in tmp/). Needs host root. */
#ifndef LB_IMAGES_IMPORT_H
#define LB_IMAGES_IMPORT_H

#include <stddef.h>

#include "common/config.h"
#include "common/status.h"

/* The layout's blobs may be moved into the store instead of copied: the
 * layout is the caller's own staging folder, on the store's filesystem
 * (under <image_store>/oci/tmp/, named "<what>-<pid>-<anything>" so that
 * a writer cleaning up after a killed one leaves it alone while the pid
 * lives). */
#define LB_IMPORT_MOVE 1u

/* Imports the image of the OCI image layout at layout_dir under name (a
 * reference or a local name, normalized as lb_image_ref_parse with
 * LB_IMAGE_REF_LOCAL does; it replaces an image of that name). index.json
 * may list one manifest, several (the one whose
 * org.opencontainers.image.ref.name is want_tag when that is not NULL or
 * "", else linux/amd64, else the only one) or an image index (a multi-arch
 * list: linux/amd64). Layers already in the store are not extracted
 * again. canon (LB_IMAGE_REF_MAX + 1 bytes, may be NULL) gets the name
 * registered. On failure msg says why, naming the layer and the entry for
 * a refused layer entry: LB_E_INVAL (a bad layout, document or entry),
 * LB_E_TOOBIG (a cap), LB_E_NOTFOUND (no manifest for linux/amd64),
 * LB_E_IO, LB_E_DENIED (not root). */
LB_MUST_CHECK int lb_image_import_layout(const lb_config *cfg, const char *layout_dir, const char *name,
                                         const char *want_tag, unsigned flags, char *canon, size_t canonsz,
                                         char *msg, size_t msgsz);

/* `llmbox image import PATH [NAME]`: PATH is a docker-archive or
 * oci-archive tarball (its outer tar is itself extracted by the unpacker,
 * regular files and folders only) or an OCI image layout folder. Without
 * name, the archive's own is taken (docker-archive's first RepoTag, an
 * oci-archive's ref.name annotation); LB_E_INVAL when it has none. canon
 * as above. */
LB_MUST_CHECK int lb_image_import_path(const lb_config *cfg, const char *path, const char *name, char *canon,
                                       size_t canonsz, char *msg, size_t msgsz);

#endif
