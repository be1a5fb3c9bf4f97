/* The image store's layered part (docs/IMAGES.md): content-addressed blobs,
 * extracted layers and one record per image reference, under
 * <image_store>/oci/:
 *
 *   blobs/sha256/<hex>      verified blobs (manifests, configs, layers), 0444
 *   layers/                 host root's, 0700: keeps the host's users and the
 *                           unpacker out of what is below
 *   layers/sha256/<hex>/root/  a layer extracted (hex: the sha256 of its blob),
 *                           owned by the images' host ids, as are sha256/ and
 *                           <hex>/ (the sandboxes' idmapped mount of sha256/
 *                           shows them as their root's); .complete beside
 *                           root/ says it is whole and holds its disk use
 *   refs/<file name>.json   an image: lb_image_ref_file_name of its reference
 *   retired/                records replaced by a later import of the same
 *                           name while a sandbox may still use them
 *   tmp/                    staging; emptied by the next writer
 *   .lock                   flock(LOCK_EX) of a writer (import, rm, gc)
 *
 * Debootstrap images stay <image_store>/NAME/rootfs, a name looked up there
 * first. sandboxd reads the records with its own small reader
 * (sandboxd/image_layers.c); this file is build/llmbox's side. */
#ifndef LB_IMAGES_STORE_H
#define LB_IMAGES_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/status.h"

#include <cjson/cJSON.h>

#define LB_IMAGE_RECORD_MAX (1u << 20) /* one refs/ record: 48 layers and a config's Env fit */

/* A writer's hold on the store: the lock and the folders, open. */
typedef struct lb_image_store {
    char oci[LB_CFG_PATH + 8]; /* <image_store>/oci */
    int lock_fd;
    int oci_fd, blobs_fd, layers_fd, refs_fd, retired_fd, tmp_fd;
} lb_image_store;

/* Makes the folders where missing (oci/ 0711 so that the unprivileged web
 * can read refs/, the rest 0700), takes the writers' lock (waiting for
 * another import, rm or gc), and empties tmp/ and the temporary files a
 * killed writer left in refs/: after this, nothing half-made remains.
 * Release with lb_image_store_close. */
LB_MUST_CHECK int lb_image_store_open(const lb_config *cfg, lb_image_store *st, char *msg, size_t msgsz);
void lb_image_store_close(lb_image_store *st);

/* The record file name of name (a reference or a local name, normalized
 * as lb_image_ref_parse with LB_IMAGE_REF_LOCAL does) into file (a file
 * name under refs/, with ".json"), and its normalized text into canon
 * (both LB_IMAGE_REF_MAX + 8 bytes at least). LB_E_INVAL with a sentence. */
LB_MUST_CHECK int lb_image_record_name(const char *name, char *canon, size_t canonsz, char *file, size_t filesz,
                                       char *msg, size_t msgsz);

/* Reads the record of name (*out: the JSON, the caller's to cJSON_Delete).
 * LB_E_NOTFOUND when no image of that name is registered. */
LB_MUST_CHECK int lb_image_record_read(const lb_config *cfg, const char *name, cJSON **out, char *msg,
                                       size_t msgsz);

/* The disk a folder's tree takes (st_blocks; a file of several hard
 * links counted once in all, split between them), walked through no
 * symlink and into no other filesystem. */
uint64_t lb_image_tree_bytes(int dirfd);

/* True when <image_store>/name is a built debootstrap image. */
int lb_image_is_debootstrap(const lb_config *cfg, const char *name);

#endif
