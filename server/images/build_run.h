/* Running a Dockerfile (`llmbox image build -f`): FROM a layered image
 * (local, or a reference pulled first), each RUN in an ordinary sandbox
 * of the image so far (sandboxd's create with that image, exec, save; the
 * saved writable layer becomes the next layer through build_layer.h),
 * COPY/ADD and WORKDIR layers written here (build_copy.h), ENV, ARG,
 * USER, LABEL, SHELL into the image config. The result is an OCI layout
 * under <image_store>/oci/build-cache/stage-<pid>-<random>/ handed to the layered
 * store's import under the build's name; a failed step registers nothing
 * and removes what it made.
 *
 * The cache: <image_store>/oci/build-cache/steps/<key> names the layer a
 * step made (its blob kept in build-cache/blobs/, a hard link), where key
 * is the sha256 of the parent's key (the FROM image's manifest digest at
 * the start), the instruction with its variables expanded, and for RUN
 * the ARG values and the shell, for COPY/ADD the content digest of the
 * copied files. A step whose key is there is not run again. */
#ifndef LB_IMAGES_BUILD_RUN_H
#define LB_IMAGES_BUILD_RUN_H

#include <stddef.h>

#include "common/config.h"
#include "common/status.h"
#include "images/dockerfile_parse.h"

#define LB_BUILD_LAYERS_MAX 120 /* the parent's layers and the build's new ones */

typedef struct lb_build_opts {
    const char *const *bargs; /* --build-arg NAME=value */
    int nb;
    const char *network;      /* a RUN sandbox's network: "none" (default) or "nat" */
    int no_cache;             /* run every step, still filling the cache */
    int timeout_s;            /* one RUN's limit (0: 1800) */
} lb_build_opts;

typedef struct lb_build_result {
    int steps, run, cached, layers;
    char canon[272];          /* the name registered */
} lb_build_result;

/* Runs df (parsed) with the build context at ctxreal (a realpath) and
 * registers the image under name. Logs go to stderr, each line of a
 * step's output prefixed with "Step N/M". Needs host root (the store) and
 * a running sandboxd. On failure msg says which step failed and why, and
 * nothing is registered. */
LB_MUST_CHECK int lb_build_run(const lb_config *cfg, const lb_dockerfile *df, const char *ctxreal,
                               const char *name, const lb_build_opts *opts, lb_build_result *res, char *msg,
                               size_t msgsz);

#endif
