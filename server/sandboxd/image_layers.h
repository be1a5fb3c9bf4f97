/* Which root a sandbox's image gives it (image_layers.c): a debootstrap
 * image's <image_store>/NAME/rootfs, or a layered image's record in
 * <image_store>/oci/refs/ (server/images/store.h), read here with caps:
 * its layers become overlay lower directories (top first) of one idmapped
 * mount of <image_store>/oci/layers, and its config's Env, WorkingDir and
 * User go to the persistent shell and to every process started in the
 * sandbox. The record was written by `llmbox image import` (host root);
 * no layer content is read here. */
#ifndef LBSD_IMAGE_LAYERS_H
#define LBSD_IMAGE_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/status.h"

#define LBSD_LOWERDIRS_MAX 4096  /* "lower/<hex>/root:..." of 48 layers; a mount's options fit a page */
#define LBSD_IMG_ENV_MAX 256     /* Env entries (images/oci_json.h) */
#define LBSD_IMG_ENV_BYTES 16384 /* Env together, NUL-separated */
#define LBSD_IMG_WORKDIR_MAX 4096

typedef struct lbsd_image {
    int layered;
    char lower[LB_CFG_PATH + 64];     /* debootstrap: its rootfs; layered: <store>/oci/layers */
    char lowerdirs[LBSD_LOWERDIRS_MAX]; /* layered: overlay's lowerdir, relative to the scratch dir */
    char hold[LB_CFG_PATH + 300];     /* layered: the record init holds a shared flock on */
    char workdir[LBSD_IMG_WORKDIR_MAX + 1]; /* "" none */
    int64_t uid, gid;                 /* the user processes run as; -1: root */
    int nenv;
    size_t envlen;
    char env[LBSD_IMG_ENV_BYTES];     /* "K=V\0K=V\0" */
} lbsd_image;

/* Fills *out for name (a debootstrap name, or a reference or local name
 * of a layered image). LB_E_NOTFOUND with a sentence when there is no such
 * image or a layer of it is missing; LB_E_INVAL for a name that is
 * neither; LB_E_UNAVAILABLE for a debootstrap image not yet shifted. */
LB_MUST_CHECK int lbsd_image_resolve(const lb_config *cfg, const char *name, lbsd_image *out, char *msg,
                                     size_t msgsz);

/* True when name is a layered image's name (not a debootstrap one). */
int lbsd_image_is_layered_name(const char *name);

#endif
