/* `llmbox image import|ls|rm|gc` (image_cli.c): the layered store's
 * commands, run by build/llmbox itself (libarchive and OpenSSL stay out of
 * build/llmbox-sandboxd, which keeps `image build|list` of debootstrap
 * images). */
#ifndef LB_IMAGES_IMAGE_CLI_H
#define LB_IMAGES_IMAGE_CLI_H

#include "common/config.h"

/* True when `llmbox image SUB` is one of these commands. */
int lb_image_cli_handles(const char *sub);

/* argv[0] is "image", argv[1] the command. Returns the exit status: 0
 * done, 1 failed (a sentence on stderr), 2 usage. */
int lb_image_main(int argc, char **argv, const lb_config *cfg);

#endif
