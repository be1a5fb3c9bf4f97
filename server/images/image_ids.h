/* A user and group of an image as numeric ids ("name|uid[:group|gid]", the
 * form of an image config's User and of COPY --chown), names looked up in
 * the image's own /etc/passwd and /etc/group (image_ids.c). Those files are
 * the image's bytes, so hostile: each is read from the topmost extracted
 * layer that has it, beneath the layer's root through no symlink
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), a regular file of at
 * most LB_IMAGE_IDS_FILE_MAX bytes; ids are 0..65535, the sandboxes' map.
 * The layered store's import resolves the config's User with it, the
 * Dockerfile builder COPY --chown's names. */
#ifndef LB_IMAGES_IMAGE_IDS_H
#define LB_IMAGES_IMAGE_IDS_H

#include <stddef.h>

#include "common/status.h"

#define LB_IMAGE_IDS_FILE_MAX (4u << 20) /* an image's /etc/passwd or /etc/group */
#define LB_IMAGE_IDS_SPEC_MAX 255        /* "user:group" as given */

/* spec as *uid and *gid. layers_fd is the store's extracted layers folder
 * (<hex>/root under it); hexes the image's layers, bottom first, n of them.
 * A user without a group takes its passwd gid (a number's too, when passwd
 * has it), else its uid as gid. "" gives -1 and -1 (the image names none).
 * LB_E_INVAL with a sentence naming the user or the group when a name is
 * not in the file, or a number is out of range. */
LB_MUST_CHECK int lb_image_ids_resolve(int layers_fd, const char *const *hexes, int n, const char *spec, long *uid,
                                       long *gid, char *msg, size_t msgsz);

#endif
