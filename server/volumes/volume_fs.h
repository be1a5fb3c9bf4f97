/* The content of a volume, read and written from the host by sandboxd for
 * E2B's volume content API (docs/E2B.md "Volumes").
 *
 * The content is hostile: sandboxes write it through their mount while
 * these run. So every path is resolved beneath the volume's data/ with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV): no
 * link is ever followed, whatever a sandbox puts there, nor a mount
 * crossed; the last component is worked on through its folder's
 * descriptor with O_NOFOLLOW (a link is an entry of its own, shown, never
 * opened). Ownership and modes go through a descriptor of the entry, never
 * a name, so a link swapped in meanwhile is not what is changed. Caps:
 * paths of LB_PATH_MAX, files of LBVOL_FILE_MAX, LBVOL_LIST_MAX entries
 * per list, LBVOL_WALK_DEPTH levels. */
#ifndef LBVOL_VOLUME_FS_H
#define LBVOL_VOLUME_FS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/status.h"

#define LBVOL_FILE_MAX (60u << 20)   /* one file written or read, bytes (under a sandboxd frame) */
#define LBVOL_LIST_MAX 10000         /* entries in one list */
#define LBVOL_LIST_DEPTH 16          /* a list's depth */

/* What a write, makeDir or updateMetadata sets: ids as the sandbox sees
 * them (0..65535), the permission bits; -1 where not given. */
typedef struct lbvol_attrs {
    int64_t uid, gid, mode;
} lbvol_attrs;

/* The content of one volume: its data/ descriptor and the on-disk id of a
 * sandbox's 0. */
typedef struct lbvol_fs {
    int data_fd;
    uint32_t id_base;
} lbvol_fs;

/* Each answers LB_E_NOTFOUND (no such entry, or a folder of its path is
 * missing), LB_E_INVAL (a bad path, a link on the way, the wrong kind of
 * entry), LB_E_EXISTS, LB_E_TOOBIG, LB_E_ISDIR or LB_E_IO with a sentence
 * in msg. Entries are E2B's VolumeEntryStat: {name, type, path, size, mode,
 * uid, gid, atime, mtime, ctime, target?}. */
LB_MUST_CHECK int lbvol_fs_stat(const lbvol_fs *v, const char *path, cJSON **entry, char *msg, size_t msgsz);
LB_MUST_CHECK int lbvol_fs_list(const lbvol_fs *v, const char *path, int depth, cJSON **entries, char *msg,
                                size_t msgsz);
/* force: the missing folders on the way are made too, and an existing
 * folder is no error. */
LB_MUST_CHECK int lbvol_fs_mkdir(const lbvol_fs *v, const char *path, const lbvol_attrs *a, int force, cJSON **entry,
                                 char *msg, size_t msgsz);
/* A regular file's bytes (free(*data)); over max LB_E_TOOBIG. */
LB_MUST_CHECK int lbvol_fs_read(const lbvol_fs *v, const char *path, size_t max, char **data, size_t *len, char *msg,
                                size_t msgsz);
/* Replaces (or makes) a file whole: a temporary file in its folder, then
 * renamed over the name. force: the missing folders on the way are made.
 * *old gets the bytes of the file it replaced (0 if none). */
LB_MUST_CHECK int lbvol_fs_write(const lbvol_fs *v, const char *path, const void *data, size_t len,
                                 const lbvol_attrs *a, int force, cJSON **entry, char *msg, size_t msgsz);
/* The size of the regular file at path, 0 when there is none. */
uint64_t lbvol_fs_size_of(const lbvol_fs *v, const char *path);
/* Removes an entry (a folder with what it holds, never through a link). */
LB_MUST_CHECK int lbvol_fs_remove(const lbvol_fs *v, const char *path, char *msg, size_t msgsz);
LB_MUST_CHECK int lbvol_fs_chmeta(const lbvol_fs *v, const char *path, const lbvol_attrs *a, cJSON **entry, char *msg,
                                  size_t msgsz);

/* The client's path ("/a/b", "a/b", "/" or "") cleaned into out
 * (LB_PATH_MAX + 1 bytes; "" is the volume's root). LB_E_INVAL if not one. */
LB_MUST_CHECK int lbvol_fs_clean(const char *in, char *out, size_t outsz);

#endif
