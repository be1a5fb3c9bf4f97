/* The image's Env, WorkingDir and User inside a sandbox (image_user.c):
 * init keeps them from its configuration, and what it forks (the
 * persistent shell, the spawner's processes) applies them. Runs in the
 * sandbox only, on values sandboxd checked (image_layers.h). */
#ifndef LBSD_IMAGE_USER_H
#define LBSD_IMAGE_USER_H

#include <stddef.h>
#include <stdint.h>

/* Keeps env ("K=V\0...", envlen bytes), workdir and uid/gid (-1: root),
 * copied into static memory (init is a clone: no allocations). */
void lbsd_img_proc_set(const char *env, size_t envlen, const char *workdir, int64_t uid, int64_t gid);

/* base (a NULL-ended "K=V" list) with the image's Env over it, into out
 * (max entries, NULL-ended); returns the count. */
int lbsd_img_proc_env(const char *const *base, char **out, int max);

/* The image's WorkingDir, "" when it names none. */
const char *lbsd_img_proc_workdir(void);

/* Becomes the image's user (its gid as the only group) in a child about
 * to exec; 0 when done or when the image names none, -1 with errno. */
int lbsd_img_proc_become(void);

#endif
