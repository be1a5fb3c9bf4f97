/* `image build` and `image list`: what `llmbox image ...` runs (main.c
 * execs `llmbox-sandboxd image ...`, since a build shifts file owners and
 * mounts as root). */
#ifndef LBSD_IMAGE_BUILD_H
#define LBSD_IMAGE_BUILD_H

/* argv[0] is "image", argv[1] "build" or "list". Returns the exit status. */
int lbsd_image_main(int argc, char **argv);

#endif
