/* The image's Env, WorkingDir and User inside a sandbox (image_user.c):
 * init keeps them from its configuration, and what it forks (the
 * persistent shell, the spawner's processes) applies them. Runs in the
 * sandbox only, on values sandboxd checked (image_layers.h). */
#ifndef LBSD_IMAGE_USER_H
#define LBSD_IMAGE_USER_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

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

/* ---- a named user (E2B's `user`), read from the host -----------------------
 * sandboxd resolves a name against the sandbox's /etc/passwd and
 * /etc/group, files the sandbox's code may write: read as host root with
 * no symlink followed, regular files of the sandbox's own filesystems
 * only, at most LBSD_USER_DB_MAX bytes each; ids over the sandbox's map
 * count as absent. What the files say only decides which of the sandbox's
 * own ids a process gets, never a host id. */
#define LBSD_USER_NAME_MAX 32
#define LBSD_USER_HOME_MAX 512
#define LBSD_USER_GROUPS_MAX 64    /* supplementary groups kept, the primary first */
#define LBSD_USER_ID_LIMIT 65536   /* a sandbox maps ids 0..65535 (idmap.h) */
#define LBSD_USER_DB_MAX (256u << 10)

typedef struct lbsd_user_ids {
    char name[LBSD_USER_NAME_MAX + 1];
    uint32_t uid, gid;
    int ngroups;
    uint32_t groups[LBSD_USER_GROUPS_MAX];
    char home[LBSD_USER_HOME_MAX + 1];
} lbsd_user_ids;

/* 1 when name looks like a user's name (what useradd allows). */
int lbsd_user_name_ok(const char *name);
/* name's ids from passwd (pn bytes) and group (gn bytes), either NULL when
 * absent; root without a line of its own is 0:0 in /root. 0 found, -1 not
 * (or a malformed name). Any bytes are safe input. */
int lbsd_user_parse(const char *pw, size_t pn, const char *gr, size_t gn, const char *name, lbsd_user_ids *out);
/* The same from the sandbox whose root directory is root_fd (host side;
 * "root" is always 0:0, groups 0, in /root, without reading the files):
 * LB_E_NOTFOUND when it has no such user, LB_E_INVAL for a bad name or
 * files that cannot be read safely; msg says which. */
LB_MUST_CHECK int lbsd_user_lookup(int root_fd, const char *name, lbsd_user_ids *out, char *msg, size_t msgsz);
/* In a child of the spawner about to exec: the given ids (groups, gid, uid;
 * capabilities go with the uid), -1 with errno. */
int lbsd_user_become(const lbsd_user_ids *ids);

#endif
