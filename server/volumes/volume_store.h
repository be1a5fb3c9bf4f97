/* The volume store on the host (E2B's volumes, docs/E2B.md "Volumes"):
 * sandboxd's alone, under <var_dir>/volumes (mode 0700, root's):
 *
 *   <id>/volume.json   the record (volume_meta.h), written atomically
 *   <id>/data/         the content: what sandboxes see at their mount
 *                      path and the content API reads and writes
 *
 * A volume appears whole: it is made as .new-<id> and renamed; a deleted
 * one is renamed .gone-<id>-<hex> first (gone at once for every request)
 * and then removed. The content is owned by the images' ids on disk
 * (sandbox_uid_base + the id inside: sandboxd/idmap.h), so each sandbox
 * sees it through an idmapped mount as its own ids, whichever uid slot it
 * has, and two sandboxes share it as one user. Everything under data/ is
 * hostile: sandboxes write it (volume_fs.h walks it without following a
 * link). */
#ifndef LBVOL_VOLUME_STORE_H
#define LBVOL_VOLUME_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "volumes/volume_meta.h"

#define LBVOL_STORE_MAX 4096          /* volumes on one node */
#define LBVOL_USAGE_ENTRIES 200000    /* a usage walk counts at most this many entries */
#define LBVOL_WALK_DEPTH 128          /* and goes at most this deep */
#define LBVOL_DATA_UID 1000           /* the content's root folder: E2B's `user` owns it */

typedef struct lbvol_store {
    char root[1024];   /* <var_dir>/volumes */
    int root_fd;
    uint32_t id_base;  /* the on-disk id of a sandbox's 0 */
} lbvol_store;

/* Opens (making it, mode 0700) <var_dir>/volumes. */
LB_MUST_CHECK int lbvol_store_open(const char *var_dir, uint32_t id_base, lbvol_store *st, char *msg, size_t msgsz);
void lbvol_store_close(lbvol_store *st);

/* The record of volume id: LB_E_NOTFOUND when there is none (or id is
 * not 32 lowercase hex), LB_E_INVAL when its record is damaged. */
LB_MUST_CHECK int lbvol_store_get(const lbvol_store *st, const char *id, lbvol_meta *m);
/* Every volume's record (damaged ones left out), at most LBVOL_STORE_MAX;
 * free(*out). */
LB_MUST_CHECK int lbvol_store_list(const lbvol_store *st, lbvol_meta **out, size_t *n);
/* Makes a volume of owner named name: LB_E_INVAL (a bad name), LB_E_EXISTS
 * (owner has one of that name), LB_E_TOOBIG (owner holds max_per_owner, or
 * the node LBVOL_STORE_MAX), each with a sentence in msg. */
LB_MUST_CHECK int lbvol_store_create(const lbvol_store *st, const char *owner, const char *name, int max_per_owner,
                                     lbvol_meta *m, char *msg, size_t msgsz);
/* Takes volume id out of the store (renamed away); gone gets the path of
 * what is left to remove (the caller removes it, never following a link). */
LB_MUST_CHECK int lbvol_store_unlink(const lbvol_store *st, const char *id, char *gone, size_t gonesz);
/* The leftovers of deletes cut short (a crash between the rename and the
 * removal): calls rm on each path. */
void lbvol_store_sweep(const lbvol_store *st, int (*rm)(const char *path));

/* A descriptor of volume id's data/ (O_DIRECTORY, never through a link),
 * or -1 (errno ENOENT when there is no such volume). */
int lbvol_store_data(const lbvol_store *st, const char *id);
/* The bytes of the regular files under data_fd (their sizes), walking at
 * most LBVOL_USAGE_ENTRIES entries LBVOL_WALK_DEPTH deep: past them what
 * was counted (*partial 1). */
LB_MUST_CHECK int lbvol_store_usage(int data_fd, uint64_t *bytes, int *partial);
/* The bytes of every volume of owner, as lbvol_store_usage. */
LB_MUST_CHECK int lbvol_store_owner_usage(const lbvol_store *st, const char *owner, uint64_t *bytes);

#endif
