/* `llmbox image pull|push`: the registry side of the image commands (the
 * others run in build/llmbox-sandboxd or images-core's store code), and
 * the pull a node does on the first use of an image it lacks. */
#ifndef LB_IMAGES_REGISTRY_CLI_H
#define LB_IMAGES_REGISTRY_CLI_H

#include <stddef.h>

#include "common/config.h"
#include "common/status.h"

/* Whether argv (argv[0] "image") is a command of this file: pull, push. */
int lb_registry_cli_handles(int argc, char **argv);

/* Runs `llmbox image pull|push ...` (argv[0] "image"); the exit status. */
int lb_registry_cli_main(int argc, char **argv, const lb_config *cfg);

/* Whether s is a reference with a registry host ("127.0.0.1:5000/team/img:1",
 * "docker.io/library/debian"), not a local name. */
int lb_image_is_registry_ref(const char *s);

/* Makes sure the image ref (a registry reference) is in the store:
 * nothing when it is; otherwise pulls and registers it, under a lock
 * (flock on <image_store>/oci/spool/<file name>.lock) so that two
 * creates that want it at once pull once: the second waits and finds it.
 * LB_E_* with a sentence in msg when it cannot be pulled. Registering
 * writes the root-owned store: a caller that is not root (the web, its
 * own user) asks sandboxd to run the pull (image_job_start, one job per
 * reference however many ask) and waits for its end, at most
 * image_pull_wait_s; a failed pull's sentence is the job's. */
LB_MUST_CHECK int lb_pull_ensure(const lb_config *cfg, const char *ref, char *msg, size_t msgsz);

#endif
