/* Restore: a saved state (fd 0) applied to a fresh sandbox through its
 * merged root (fd 4), as stateio.h describes. The state is hostile input:
 * entries are checked before anything is done with them (a path under
 * "layer/" of clean components, a directory, a regular file or a symlink,
 * sizes and counts within the caps), and every path is resolved beneath
 * the root, through no symlink and across no mount. Deletions go through
 * overlay itself (unlink in the merged view makes its whiteout). Any
 * refusal ends the restore: sandboxd then destroys the half-made sandbox. */
#include "stateio/stateio.h"
#include "stateio/stateio_path.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RST_READ_BLOCK (64u << 10)
#define RST_OWNER_MAX 65535u  /* the ids mapped into a sandbox */

typedef struct rst_ctx {
    const lbst_caps *caps;
    struct archive *a;
    uint64_t entries, bytes;
    int rc;
} rst_ctx;

static int rst_damaged(rst_ctx *r, const char *path, const char *why)
{
    return r->rc = lbst_fail(LBST_EXIT_DAMAGED, "saved state is damaged: entry \"%.300s\" %s", path, why);
}

/* The entry's path below "layer/" into rel (stateio_path.c), or refused. */
static int rst_check_path(rst_ctx *r, const char *name, char *rel, size_t relsz)
{
    const char *why = NULL;
    if (lbst_entry_path(name, rel, relsz, &why) != 0)
        return rst_damaged(r, name ? name : "(no name)", why);
    return LBST_EXIT_OK;
}

/* Removes what the merged view has at name in dirfd, folders with all
 * they hold (overlay whites out what comes from the image). */
static int rst_remove(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    if (depth > LBST_DEPTH_MAX) {
        errno = ELOOP;
        return -1;
    }
    int fd = lbst_open_beneath(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return -1;
    int dfd = dup(fd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        close(fd);
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            rc = rst_remove(fd, de->d_name, depth + 1);
    }
    closedir(d);
    close(fd);
    if (rc)
        return rc;
    return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* Empties the merged folder dirfd (an opaque folder: nothing of the image
 * shows through it). */
static int rst_empty(int dirfd)
{
    int dfd = dup(dirfd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            rc = rst_remove(dirfd, de->d_name, 0);
    }
    closedir(d);
    return rc;
}

/* Splits rel into its folder (opened beneath the root) and last name. */
static int rst_parent(rst_ctx *r, const char *entry, const char *rel, const char **base)
{
    const char *slash = strrchr(rel, '/');
    *base = slash ? slash + 1 : rel;
    char dir[LBST_PATH_MAX + 1];
    size_t dl = slash ? (size_t)(slash - rel) : 0;
    memcpy(dir, rel, dl);
    dir[dl] = '\0';
    int fd = dl ? lbst_open_beneath(LBST_FD_ROOT, dir, O_RDONLY | O_DIRECTORY, 0) : dup(LBST_FD_ROOT);
    if (fd < 0) {
        char why[200];
        snprintf(why, sizeof why, "is in a folder the sandbox cannot hold it in (%s)",
                 errno == EXDEV                      ? "another filesystem"
                 : errno == ELOOP || errno == ENOTDIR ? "a symlink or a file where a folder should be"
                                                      : strerror(errno));
        rst_damaged(r, entry, why);
    }
    return fd;
}

static void rst_owner(int fd, const char *name, struct archive_entry *e, int flags)
{
    int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);
    if (uid < 0 || uid > RST_OWNER_MAX)
        uid = 0;
    if (gid < 0 || gid > RST_OWNER_MAX)
        gid = 0;
    /* best effort: an id the sandbox does not map stays root's */
    if (fchownat(fd, name, (uid_t)uid, (gid_t)gid, flags) != 0)
        return;
}

static void rst_times(int fd, const char *name, struct archive_entry *e, int flags)
{
    if (!archive_entry_mtime_is_set(e))
        return;
    struct timespec ts[2] = {{0, UTIME_OMIT}, {archive_entry_mtime(e), archive_entry_mtime_nsec(e)}};
    if (ts[1].tv_nsec < 0 || ts[1].tv_nsec > 999999999)
        ts[1].tv_nsec = 0;
    if (utimensat(fd, name, ts, flags) != 0)
        return; /* times are a courtesy: the content is what counts */
}

/* The file's data, with blocks of zeros left as holes. */
static int rst_file_data(rst_ctx *r, int fd, const char *entry, int64_t size)
{
    const void *buf;
    size_t len;
    la_int64_t off;
    int64_t end = 0;
    for (;;) {
        int ar = archive_read_data_block(r->a, &buf, &len, &off);
        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK)
            return rst_damaged(r, entry, archive_error_string(r->a) ? archive_error_string(r->a)
                                                                     : "cannot be read");
        if (off < 0 || (int64_t)len > size || off > size - (int64_t)len)
            return rst_damaged(r, entry, "holds data past its size");
        const char *p = buf;
        size_t i = 0;
        while (i < len) {
            size_t k = len - i < RST_READ_BLOCK ? len - i : RST_READ_BLOCK;
            size_t z = 0;
            while (z < k && !p[i + z])
                z++;
            if (z < k) {
                ssize_t w = pwrite(fd, p + i, k, off + (off_t)i);
                if (w != (ssize_t)k)
                    return r->rc = lbst_fail(errno == ENOSPC || errno == EFBIG || errno == EDQUOT
                                                 ? LBST_EXIT_TOOBIG : LBST_EXIT_ERROR,
                                             "cannot restore /%.300s: %s (the new sandbox's disk is "
                                             "smaller than the saved files?)",
                                             entry + 6, strerror(errno));
            }
            i += k;
        }
        if (off + (int64_t)len > end)
            end = off + (int64_t)len;
    }
    if (ftruncate(fd, size) != 0)
        return r->rc = lbst_fail(LBST_EXIT_TOOBIG, "cannot restore /%.300s: %s", entry + 6, strerror(errno));
    return LBST_EXIT_OK;
}

/* "meta/image", the first entry: the state's image must be the sandbox's. */
static int rst_meta(rst_ctx *r, struct archive_entry *e, const char *entry)
{
    if (r->entries || strcmp(entry, "meta/image") != 0 || archive_entry_filetype(e) != AE_IFREG ||
        archive_entry_size(e) <= 0 || archive_entry_size(e) > LBST_IMAGE_MAX)
        return rst_damaged(r, entry, "is not the state's first entry, meta/image, with an image's name");
    char img[LBST_IMAGE_MAX + 1];
    la_ssize_t n = archive_read_data(r->a, img, (size_t)archive_entry_size(e));
    if (n != (la_ssize_t)archive_entry_size(e))
        return rst_damaged(r, entry, "cannot be read");
    img[n] = '\0';
    for (la_ssize_t i = 0; i < n; i++)
        if (!((img[i] >= 'a' && img[i] <= 'z') || (img[i] >= '0' && img[i] <= '9') || img[i] == '_' || img[i] == '-'))
            return rst_damaged(r, entry, "does not hold an image's name");
    if (strcmp(img, r->caps->image) != 0)
        return r->rc = lbst_fail(LBST_EXIT_IMAGE, "the state was saved from a sandbox of image \"%s\": create the "
                                                  "sandbox with that image (this one is \"%s\")",
                                 img, r->caps->image);
    r->entries++;
    return LBST_EXIT_OK;
}

static int rst_entry(rst_ctx *r, struct archive_entry *e)
{
    const char *entry = archive_entry_pathname(e);
    if (entry && !strncmp(entry, "meta/", 5))
        return rst_meta(r, e, entry);
    char rel[LBST_PATH_MAX + 1];
    if (rst_check_path(r, entry, rel, sizeof rel))
        return r->rc;
    if (++r->entries > r->caps->max_entries)
        return r->rc = lbst_fail(LBST_EXIT_DAMAGED, "saved state is damaged: it holds more than %llu entries",
                                 (unsigned long long)r->caps->max_entries);
    if (archive_entry_hardlink(e))
        return rst_damaged(r, entry, "is a hard link, which a saved state never holds");
    unsigned type = archive_entry_filetype(e);
    if (!rel[0]) {
        if (type != AE_IFDIR)
            return rst_damaged(r, entry, "stands for the root but is not a folder");
        return LBST_EXIT_OK; /* the root keeps what the image gives it */
    }
    if (type != AE_IFDIR && type != AE_IFREG && type != AE_IFLNK)
        return rst_damaged(r, entry, "is a device, fifo or socket, which a saved state never holds");
    int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
    if (size < 0)
        return rst_damaged(r, entry, "has a negative size");
    /* a state too big for the disk asked for is not damaged: the client can
     * ask for more (sandboxd says how) */
    if (type == AE_IFREG && (uint64_t)size > r->caps->max_bytes - r->bytes)
        return r->rc = lbst_fail(LBST_EXIT_TOOBIG,
                                 "the saved state's files are larger than the new sandbox's disk (%llu MiB) at "
                                 "\"%.300s\"",
                                 (unsigned long long)(r->caps->max_bytes >> 20), entry);
    if (type == AE_IFREG)
        r->bytes += (uint64_t)size;
    const char *base;
    int pfd = rst_parent(r, entry, rel, &base);
    if (pfd < 0)
        return r->rc;
    int rc = LBST_EXIT_OK;
    mode_t perm = archive_entry_perm(e) & 01777; /* no setuid or setgid bits */
    if (!strcmp(base, ".wh..wh..opq")) {
        if (type != AE_IFREG || size)
            rc = rst_damaged(r, entry, "is an opaque-folder mark that is not an empty file");
        else if (rst_empty(pfd) != 0)
            rc = r->rc = lbst_fail(LBST_EXIT_ERROR, "cannot empty /%.300s: %s", rel, strerror(errno));
    } else if (!strncmp(base, ".wh.", 4)) {
        const char *victim = base + 4;
        if (type != AE_IFREG || size || !victim[0] || !strcmp(victim, ".") || !strcmp(victim, ".."))
            rc = rst_damaged(r, entry, "is a deletion mark of no name");
        else if (rst_remove(pfd, victim, 0) != 0)
            rc = r->rc = lbst_fail(LBST_EXIT_ERROR, "cannot delete /%.300s: %s", rel, strerror(errno));
    } else if (type == AE_IFDIR) {
        struct stat st;
        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) && rst_remove(pfd, base, 0))
            rc = r->rc = lbst_fail(LBST_EXIT_ERROR, "cannot replace /%.300s: %s", rel, strerror(errno));
        else if (mkdirat(pfd, base, 0700) != 0 && errno != EEXIST)
            rc = r->rc = lbst_fail(errno == ENOSPC ? LBST_EXIT_TOOBIG : LBST_EXIT_ERROR,
                                   "cannot make the folder /%.300s: %s", rel, strerror(errno));
        if (!rc) {
            int dfd = lbst_open_beneath(pfd, base, O_RDONLY | O_DIRECTORY, 0);
            if (dfd < 0) {
                rc = rst_damaged(r, entry, "names a folder that cannot be opened beneath the root");
            } else {
                rst_owner(dfd, "", e, AT_EMPTY_PATH);
                if (fchmod(dfd, perm) != 0)
                    rc = r->rc = lbst_fail(LBST_EXIT_ERROR, "cannot set the mode of /%.300s: %s", rel,
                                           strerror(errno));
                close(dfd);
            }
        }
    } else {
        if (rst_remove(pfd, base, 0) != 0) {
            rc = r->rc = lbst_fail(LBST_EXIT_ERROR, "cannot replace /%.300s: %s", rel, strerror(errno));
        } else if (type == AE_IFLNK) {
            const char *target = archive_entry_symlink(e);
            if (!target || !target[0] || strlen(target) > LBST_PATH_MAX)
                rc = rst_damaged(r, entry, "is a symlink without a target");
            else if (symlinkat(target, pfd, base) != 0)
                rc = r->rc = lbst_fail(LBST_EXIT_ERROR, "cannot make the symlink /%.300s: %s", rel,
                                       strerror(errno));
            else {
                rst_owner(pfd, base, e, AT_SYMLINK_NOFOLLOW);
                rst_times(pfd, base, e, AT_SYMLINK_NOFOLLOW);
            }
        } else {
            int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (fd < 0) {
                rc = r->rc = lbst_fail(errno == ENOSPC ? LBST_EXIT_TOOBIG : LBST_EXIT_ERROR,
                                       "cannot make /%.300s: %s", rel, strerror(errno));
            } else {
                rc = rst_file_data(r, fd, entry, size);
                if (!rc) {
                    rst_owner(fd, "", e, AT_EMPTY_PATH);
                    if (fchmod(fd, perm & 0777) != 0)
                        rc = r->rc = lbst_fail(LBST_EXIT_ERROR, "cannot set the mode of /%.300s: %s", rel,
                                               strerror(errno));
                    rst_times(fd, "", e, AT_EMPTY_PATH);
                }
                close(fd);
            }
        }
    }
    close(pfd);
    return rc;
}

int lbst_restore(const lbst_caps *caps)
{
    rst_ctx r = {.caps = caps};
    r.a = archive_read_new();
    if (!r.a)
        return lbst_fail(LBST_EXIT_ERROR, "out of memory");
    /* tar only, and only the decompressors built into libarchive: the
     * others would run an outside program on hostile bytes */
    if (archive_read_support_format_tar(r.a) != ARCHIVE_OK || archive_read_support_filter_zstd(r.a) != ARCHIVE_OK ||
        archive_read_support_filter_gzip(r.a) != ARCHIVE_OK ||
        archive_read_open_fd(r.a, LBST_FD_STATE, 64 << 10) != ARCHIVE_OK) {
        r.rc = lbst_fail(LBST_EXIT_DAMAGED, "saved state is damaged: %s",
                         archive_error_string(r.a) ? archive_error_string(r.a) : "not a state");
        archive_read_free(r.a);
        return r.rc;
    }
    struct archive_entry *e;
    for (;;) {
        int ar = archive_read_next_header(r.a, &e);
        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
            r.rc = lbst_fail(LBST_EXIT_DAMAGED, "saved state is damaged: %s",
                             archive_error_string(r.a) ? archive_error_string(r.a) : "unreadable entry");
            break;
        }
        if (rst_entry(&r, e))
            break;
    }
    if (!r.rc && !r.entries)
        r.rc = lbst_fail(LBST_EXIT_DAMAGED, "saved state is damaged: it holds no entry");
    archive_read_free(r.a);
    if (!r.rc) {
        char res[96];
        int n = snprintf(res, sizeof res, "{\"files\":%llu,\"skipped\":0}\n", (unsigned long long)r.entries);
        if (write(LBST_FD_RESULT, res, (size_t)n) != n)
            r.rc = LBST_EXIT_ERROR;
    }
    return r.rc;
}
