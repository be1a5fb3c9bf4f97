/* `llmbox image list`: the images, their state and size (read-only). */
#ifndef LBSD_IMAGE_LIST_H
#define LBSD_IMAGE_LIST_H

struct lb_config;

/* Prints the table on stdout. Returns the exit status. */
int lbsd_image_list(const struct lb_config *cfg);

#endif
