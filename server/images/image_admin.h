/* Listing, removing and collecting the layered store's images (store.h):
 * `llmbox image ls|rm|gc` and GET /api/images. An image is in use while a
 * sandbox runs it: the sandbox's init holds a shared flock on the image's
 * record for its whole life (sandboxd/image_layers.h), so a probe with
 * LOCK_EX|LOCK_NB tells, without asking sandboxd, and stays right across
 * a restart of sandboxd. */
#ifndef LB_IMAGES_IMAGE_ADMIN_H
#define LB_IMAGES_IMAGE_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/status.h"

#include <cjson/cJSON.h>

/* The images, as a JSON list the caller frees: debootstrap ones
 * ({"name","kind":"debootstrap","default"}) and layered ones
 * ({"name","kind":"layered","manifest","layers":N,"bytes": their layers'
 * disk use, "shared_bytes": the part other images share, "in_use",
 * "pool": named in pool_images, "default", "env","workdir","user",
 * "sandboxes": how many sandboxes run it}), and in *total_bytes (may be
 * NULL) the disk the layers take together, each counted once. with_ids
 * adds "sandbox_ids", the ids of those sandboxes: for the operator's
 * `image ls`, never for GET /api/images, where any user would see every
 * user's sandboxes. Needs only read access (the web runs it). NULL when
 * out of memory. */
cJSON *lb_image_list_json(const lb_config *cfg, uint64_t *total_bytes, int with_ids);

/* Removes the image name: refused (LB_E_BUSY) while a sandbox uses it or
 * when pool_images names it, LB_E_NOTFOUND when there is none. Its layers
 * stay until gc. */
LB_MUST_CHECK int lb_image_rm(const lb_config *cfg, const char *name, char *msg, size_t msgsz);

/* Removes what no image references: layers, blobs, and records retired by
 * a later import once no sandbox uses them (and a minute has passed, so a
 * create that just read the record has mounted it). Each removal is a
 * rename into tmp/ first, so a kill leaves no half-removed layer in
 * layers/. *freed gets the bytes given back. */
LB_MUST_CHECK int lb_image_gc(const lb_config *cfg, uint64_t *freed, int *layers_removed, char *msg,
                              size_t msgsz);

/* True when the record at path is held by a sandbox. */
int lb_image_record_in_use(int dirfd, const char *file);

/* The sandboxes that hold the record: the holders' flocks in /proc/locks
 * (its inode), each holder's sandbox id the last part of its cgroup path
 * (sandboxd/cgroup.h). Up to max ids into ids; returns how many were found
 * (at most max). Read-only, and what /proc shows any user. */
size_t lb_image_record_holders(int dirfd, const char *file, char (*ids)[33], size_t max);

#endif
