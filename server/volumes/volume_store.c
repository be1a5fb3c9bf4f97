/* The volume store on the host (volume_store.h). */
#include "volumes/volume_store.h"

#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int lbvol_store_open(const char *var_dir, uint32_t id_base, lbvol_store *st, char *msg, size_t msgsz)
{
    memset(st, 0, sizeof *st);
    st->root_fd = -1;
    st->id_base = id_base;
    int k = snprintf(st->root, sizeof st->root, "%s/volumes", var_dir);
    if (k < 0 || (size_t)k >= sizeof st->root) {
        snprintf(msg, msgsz, "the var dir's path is too long for volumes");
        return LB_E_INVAL;
    }
    if (lb_mkdirs(st->root, 0700) != LB_OK || chmod(st->root, 0700) != 0 ||
        (st->root_fd = open(st->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        snprintf(msg, msgsz, "cannot open the volume store %s: %s", st->root, strerror(errno));
        return LB_E_IO;
    }
    return LB_OK;
}

void lbvol_store_close(lbvol_store *st)
{
    if (st->root_fd >= 0)
        close(st->root_fd);
    st->root_fd = -1;
}

/* Reads <dirfd>/volume.json (a regular file, never through a link). */
static int lbvol_read_meta(int dirfd, lbvol_meta *m)
{
    int fd = openat(dirfd, "volume.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? LB_E_NOTFOUND : LB_E_IO;
    char buf[LBVOL_META_MAX + 1];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == sizeof buf)
            break;
    }
    close(fd);
    return lbvol_meta_parse(buf, n, m);
}

int lbvol_store_get(const lbvol_store *st, const char *id, lbvol_meta *m)
{
    memset(m, 0, sizeof *m);
    if (!id || !lb_id_valid(id))
        return LB_E_NOTFOUND;
    int dfd = openat(st->root_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT || errno == ENOTDIR ? LB_E_NOTFOUND : LB_E_IO;
    int rc = lbvol_read_meta(dfd, m);
    close(dfd);
    if (rc == LB_OK)
        snprintf(m->id, sizeof m->id, "%s", id);
    return rc;
}

int lbvol_store_list(const lbvol_store *st, lbvol_meta **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    int fd = dup(st->root_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return LB_E_IO;
    }
    rewinddir(d);
    lbvol_meta *v = NULL;
    size_t cap = 0, k = 0;
    int rc = LB_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && k < LBVOL_STORE_MAX) {
        if (!lb_id_valid(e->d_name))
            continue; /* ., .., .new-*, .gone-* */
        lbvol_meta m;
        if (lbvol_store_get(st, e->d_name, &m) != LB_OK)
            continue;
        if (k == cap) {
            size_t nc = cap ? cap * 2 : 16;
            lbvol_meta *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = LB_E_NOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        v[k++] = m;
    }
    closedir(d);
    if (rc != LB_OK) {
        free(v);
        return rc;
    }
    *out = v;
    *n = k;
    return LB_OK;
}

int lbvol_store_create(const lbvol_store *st, const char *owner, const char *name, int max_per_owner, lbvol_meta *m,
                       char *msg, size_t msgsz)
{
    memset(m, 0, sizeof *m);
    if (!lbvol_name_valid(name)) {
        snprintf(msg, msgsz, "A volume's name is 1 to %d letters, digits, '_' and '-'.", LBVOL_NAME_MAX);
        return LB_E_INVAL;
    }
    if (!lbvol_owner_valid(owner)) {
        snprintf(msg, msgsz, "The owner's name cannot own a volume.");
        return LB_E_INVAL;
    }
    lbvol_meta *all = NULL;
    size_t n = 0;
    int rc = lbvol_store_list(st, &all, &n);
    if (rc != LB_OK) {
        snprintf(msg, msgsz, "cannot list the volume store: %s", strerror(errno));
        return rc;
    }
    int mine = 0, dup = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(all[i].owner, owner))
            continue;
        mine++;
        dup |= !strcmp(all[i].name, name);
    }
    free(all);
    if (dup) {
        snprintf(msg, msgsz, "There is a volume named \"%s\" already.", name);
        return LB_E_EXISTS;
    }
    if (mine >= max_per_owner || n >= LBVOL_STORE_MAX) {
        snprintf(msg, msgsz, "%s volumes already (volume_max_per_owner is %d): destroy one first.",
                 n >= LBVOL_STORE_MAX ? "This node holds its most" : "This key holds its most", max_per_owner);
        return LB_E_TOOBIG;
    }
    if (lb_random_hex(m->id, sizeof m->id, 16) != LB_OK) {
        snprintf(msg, msgsz, "no random bytes for a volume id");
        return LB_E_IO;
    }
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->owner, sizeof m->owner, "%s", owner);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->created_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    char stage[64], path[1200], text[LBVOL_META_MAX];
    size_t tlen = 0;
    snprintf(stage, sizeof stage, ".new-%s", m->id);
    int dfd = -1;
    rc = LB_E_IO;
    if (lbvol_meta_format(m, text, sizeof text, &tlen) != LB_OK)
        goto fail;
    if (mkdirat(st->root_fd, stage, 0711) != 0 ||
        (dfd = openat(st->root_fd, stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        goto fail;
    /* the content's root: E2B's `user` (1000) may write at the top of the volume */
    if (mkdirat(dfd, "data", 0755) != 0 ||
        fchownat(dfd, "data", st->id_base + LBVOL_DATA_UID, st->id_base + LBVOL_DATA_UID, AT_SYMLINK_NOFOLLOW) != 0)
        goto fail;
    snprintf(path, sizeof path, "%s/%s/volume.json", st->root, stage);
    if (lb_write_file_atomic(path, text, tlen, 0600) != LB_OK)
        goto fail;
    if (renameat(st->root_fd, stage, st->root_fd, m->id) != 0)
        goto fail;
    close(dfd);
    return LB_OK;
fail:
    snprintf(msg, msgsz, "cannot make the volume's folder: %s", strerror(errno));
    if (dfd >= 0) {
        unlinkat(dfd, "volume.json", 0);
        unlinkat(dfd, "data", AT_REMOVEDIR);
        close(dfd);
    }
    unlinkat(st->root_fd, stage, AT_REMOVEDIR);
    return rc;
}

int lbvol_store_unlink(const lbvol_store *st, const char *id, char *gone, size_t gonesz)
{
    if (!id || !lb_id_valid(id))
        return LB_E_NOTFOUND;
    char hex[17], name[80];
    if (lb_random_hex(hex, sizeof hex, 8) != LB_OK)
        return LB_E_IO;
    snprintf(name, sizeof name, ".gone-%s-%s", id, hex);
    if (renameat(st->root_fd, id, st->root_fd, name) != 0)
        return errno == ENOENT ? LB_E_NOTFOUND : LB_E_IO;
    int k = snprintf(gone, gonesz, "%s/%s", st->root, name);
    return k < 0 || (size_t)k >= gonesz ? LB_E_TOOBIG : LB_OK;
}

void lbvol_store_sweep(const lbvol_store *st, int (*rm)(const char *path))
{
    int fd = dup(st->root_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    rewinddir(d);
    struct dirent *e;
    char path[1400];
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, ".gone-", 6) && strncmp(e->d_name, ".new-", 5))
            continue;
        snprintf(path, sizeof path, "%s/%s", st->root, e->d_name);
        LB_IGNORE(rm(path)); /* what stays is retried at the next start */
    }
    closedir(d);
}

int lbvol_store_data(const lbvol_store *st, const char *id)
{
    if (!id || !lb_id_valid(id)) {
        errno = ENOENT;
        return -1;
    }
    int dfd = openat(st->root_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    int fd = openat(dfd, "data", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(dfd);
    errno = e;
    return fd;
}

/* One folder's regular files, its subfolders below it (never a link). */
static void lbvol_walk(int dirfd, int depth, uint64_t *bytes, size_t *seen, int *partial)
{
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (++*seen > LBVOL_USAGE_ENTRIES) {
            *partial = 1;
            break;
        }
        struct stat sb;
        if (fstatat(dirfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISREG(sb.st_mode)) {
            *bytes += (uint64_t)sb.st_size;
        } else if (S_ISDIR(sb.st_mode)) {
            if (depth >= LBVOL_WALK_DEPTH) {
                *partial = 1;
                continue;
            }
            int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                lbvol_walk(sub, depth + 1, bytes, seen, partial);
        }
    }
    closedir(d);
}

int lbvol_store_usage(int data_fd, uint64_t *bytes, int *partial)
{
    *bytes = 0;
    *partial = 0;
    int fd = openat(data_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return LB_E_IO;
    size_t seen = 0;
    lbvol_walk(fd, 0, bytes, &seen, partial);
    return LB_OK;
}

int lbvol_store_owner_usage(const lbvol_store *st, const char *owner, uint64_t *bytes)
{
    *bytes = 0;
    lbvol_meta *all = NULL;
    size_t n = 0;
    int rc = lbvol_store_list(st, &all, &n);
    if (rc != LB_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(all[i].owner, owner))
            continue;
        int fd = lbvol_store_data(st, all[i].id);
        uint64_t b = 0;
        int partial = 0;
        if (fd >= 0 && lbvol_store_usage(fd, &b, &partial) == LB_OK)
            *bytes += b;
        if (fd >= 0)
            close(fd);
    }
    free(all);
    return LB_OK;
}
