/* Save: the overlay's upper layer (fd 3) into a compressed pax tar (fd 0),
 * as stateio.h describes. Runs as the sandbox's root in its user
 * namespace: it reads what the sandbox wrote with the sandbox's rights. */
#include "stateio/stateio.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define SAVE_CHUNK (256u << 10)

typedef struct save_ctx {
    const lbst_caps *caps;
    struct archive *a;
    struct archive_entry *e;
    uint64_t written;        /* compressed bytes so far */
    int over;                /* the cap was reached */
    uint64_t entries, skipped;
    char *buf;
    int rc;                  /* the first failure's exit status */
} save_ctx;

static la_ssize_t save_write(struct archive *a, void *arg, const void *p, size_t n)
{
    save_ctx *s = arg;
    if (s->written + n > s->caps->max_bytes) {
        s->over = 1;
        archive_set_error(a, EFBIG, "the state is over its cap");
        return -1;
    }
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(LBST_FD_STATE, (const char *)p + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            archive_set_error(a, errno ? errno : EIO, "cannot write the state: %s", strerror(errno));
            return -1;
        }
        off += (size_t)w;
    }
    s->written += n;
    return (la_ssize_t)n;
}

static int save_archive_error(save_ctx *s, const char *what)
{
    if (s->over)
        return s->rc = lbst_fail(LBST_EXIT_TOOBIG, "the saved state would be larger than its cap of %llu MiB",
                                 (unsigned long long)(s->caps->max_bytes >> 20));
    return s->rc = lbst_fail(LBST_EXIT_ERROR, "cannot write %s into the state: %s", what,
                             archive_error_string(s->a) ? archive_error_string(s->a) : "unknown error");
}

/* One header: path under "layer/", st's owner, mode and times. */
static int save_header(save_ctx *s, const char *path, const struct stat *st, int type, int64_t size,
                       const char *link)
{
    if (++s->entries > s->caps->max_entries)
        return s->rc = lbst_fail(LBST_EXIT_TOOBIG, "the sandbox's writable layer holds more than %llu entries, "
                                                  "more than a saved state may",
                                 (unsigned long long)s->caps->max_entries);
    archive_entry_clear(s->e);
    char full[LBST_PATH_MAX + 16];
    snprintf(full, sizeof full, "layer/%s", path);
    archive_entry_copy_pathname(s->e, full);
    archive_entry_set_filetype(s->e, (unsigned)type);
    archive_entry_set_perm(s->e, st ? st->st_mode & 07777 : 0);
    archive_entry_set_uid(s->e, st ? st->st_uid : 0);
    archive_entry_set_gid(s->e, st ? st->st_gid : 0);
    if (st)
        archive_entry_set_mtime(s->e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
    archive_entry_set_size(s->e, size);
    if (link)
        archive_entry_copy_symlink(s->e, link);
    if (archive_write_header(s->a, s->e) != ARCHIVE_OK)
        return save_archive_error(s, path);
    return LBST_EXIT_OK;
}

/* The data is read through the merged view (mfd) where it can be: with
 * overlay's metacopy, a file only chmod'ed holds no data in the upper
 * layer, and the merged view has it whatever the kernel's options. */
static int save_file(save_ctx *s, int dirfd, int mfd, const char *name, const char *path, const struct stat *st)
{
    int fd = mfd >= 0 ? lbst_open_beneath(mfd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0) : -1;
    if (fd < 0)
        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return s->rc = lbst_fail(LBST_EXIT_ERROR, "cannot read /%s: %s", path, strerror(errno));
    int rc = save_header(s, path, st, AE_IFREG, st->st_size, NULL);
    uint64_t left = (uint64_t)st->st_size;
    while (!rc && left) {
        size_t want = left < SAVE_CHUNK ? (size_t)left : SAVE_CHUNK;
        ssize_t n = read(fd, s->buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = s->rc = lbst_fail(LBST_EXIT_ERROR, "cannot read /%s: %s", path, strerror(errno));
            break;
        }
        if (n == 0) {
            /* it shrank while being read (a sandbox saved while running):
             * the header's size is kept, the rest is zeros */
            memset(s->buf, 0, want);
            n = (ssize_t)want;
        }
        if (archive_write_data(s->a, s->buf, (size_t)n) != n)
            rc = save_archive_error(s, path);
        left -= (uint64_t)n;
    }
    close(fd);
    return rc;
}

/* Whether the upper directory udir hides the image's directory under it:
 * every name the merged view shows is one of udir's own. Then overlay
 * shows nothing of the image there (it is opaque, or every image entry is
 * replaced or deleted), and restoring it as opaque gives the same view.
 * mfd: the merged view's directory; -1 when it cannot be seen. */
static int save_hides_image(int udir, int mfd)
{
    if (mfd < 0)
        return 0;
    int fd = dup(mfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    int all_own = 1;
    struct dirent *de;
    struct stat st;
    while (all_own && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (fstatat(udir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            all_own = 0;
    }
    closedir(d);
    return all_own;
}

/* The top of the sandbox's tree that is not its layer: mount points of
 * /proc, /dev and /tmp (tmpfs of their own), and /sys. */
static int save_skip_top(const char *name)
{
    return !strcmp(name, "proc") || !strcmp(name, "dev") || !strcmp(name, "tmp") || !strcmp(name, "sys");
}

static int save_dir(save_ctx *s, int ufd, int mfd, const char *path, int depth);

static int save_entry(save_ctx *s, int ufd, int mfd, const char *path, const char *name, int depth)
{
    struct stat st;
    if (fstatat(ufd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return LBST_EXIT_OK; /* gone meanwhile */
    char rel[LBST_PATH_MAX + 1];
    int n = snprintf(rel, sizeof rel, "%s%s%s", path, path[0] ? "/" : "", name);
    if (n < 0 || (size_t)n >= sizeof rel)
        return s->rc = lbst_fail(LBST_EXIT_TOOBIG, "a path in the sandbox is longer than %d bytes: /%.200s...",
                                 LBST_PATH_MAX, path);
    if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
        /* overlay's whiteout: <name> of the image was deleted */
        char wh[LBST_PATH_MAX + 8];
        snprintf(wh, sizeof wh, "%s%s.wh.%s", path, path[0] ? "/" : "", name);
        return save_header(s, wh, NULL, AE_IFREG, 0, NULL);
    }
    if (!strncmp(name, ".wh.", 4)) {
        s->skipped++; /* a name the state's format keeps for deletions */
        return LBST_EXIT_OK;
    }
    if (S_ISREG(st.st_mode))
        return save_file(s, ufd, mfd, name, rel, &st);
    if (S_ISLNK(st.st_mode)) {
        char target[LBST_PATH_MAX + 1];
        ssize_t k = readlinkat(ufd, name, target, sizeof target - 1);
        if (k < 0)
            return s->rc = lbst_fail(LBST_EXIT_ERROR, "cannot read the symlink /%s: %s", rel, strerror(errno));
        target[k] = '\0';
        return save_header(s, rel, &st, AE_IFLNK, 0, target);
    }
    if (!S_ISDIR(st.st_mode)) {
        s->skipped++; /* fifos and sockets: nothing to keep */
        return LBST_EXIT_OK;
    }
    if (depth >= LBST_DEPTH_MAX)
        return s->rc = lbst_fail(LBST_EXIT_TOOBIG, "folders in the sandbox are nested deeper than %d levels at /%.200s",
                                 LBST_DEPTH_MAX, rel);
    int cu = openat(ufd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (cu < 0)
        return s->rc = lbst_fail(LBST_EXIT_ERROR, "cannot open the folder /%s: %s", rel, strerror(errno));
    int cm = mfd >= 0 ? lbst_open_beneath(mfd, name, O_RDONLY | O_DIRECTORY, 0) : -1;
    int rc = save_header(s, rel, &st, AE_IFDIR, 0, NULL);
    if (!rc && save_hides_image(cu, cm)) {
        char opq[LBST_PATH_MAX + 16];
        snprintf(opq, sizeof opq, "%s/.wh..wh..opq", rel);
        rc = save_header(s, opq, NULL, AE_IFREG, 0, NULL);
    }
    if (!rc)
        rc = save_dir(s, cu, cm, rel, depth + 1);
    if (cm >= 0)
        close(cm);
    close(cu);
    return rc;
}

static int save_dir(save_ctx *s, int ufd, int mfd, const char *path, int depth)
{
    int fd = dup(ufd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return s->rc = lbst_fail(LBST_EXIT_ERROR, "cannot list /%s: %s", path, strerror(errno));
    }
    int rc = LBST_EXIT_OK;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (depth == 0 && save_skip_top(de->d_name))
            continue;
        rc = save_entry(s, ufd, mfd, path, de->d_name, depth);
    }
    closedir(d);
    return rc;
}

int lbst_save(const lbst_caps *caps)
{
    save_ctx s = {.caps = caps};
    s.buf = malloc(SAVE_CHUNK);
    s.a = archive_write_new();
    s.e = archive_entry_new();
    if (!s.buf || !s.a || !s.e) {
        s.rc = lbst_fail(LBST_EXIT_ERROR, "out of memory");
        goto out;
    }
    /* zstd at a low level: a save is on the path of a person waiting for
     * the next round, and the layer is mostly what compresses anyway */
    if (archive_write_set_format_pax_restricted(s.a) != ARCHIVE_OK ||
        archive_write_add_filter_zstd(s.a) != ARCHIVE_OK ||
        archive_write_set_filter_option(s.a, "zstd", "compression-level", "3") != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(s.a, 1) != ARCHIVE_OK ||
        archive_write_open2(s.a, &s, NULL, save_write, NULL, NULL) != ARCHIVE_OK) {
        s.rc = lbst_fail(LBST_EXIT_ERROR, "cannot start the state: %s", archive_error_string(s.a));
        goto out;
    }
    struct stat st;
    if (fstat(LBST_FD_UPPER, &st) != 0 || !S_ISDIR(st.st_mode)) {
        s.rc = lbst_fail(LBST_EXIT_ERROR, "the sandbox's layer cannot be read");
        goto out;
    }
    /* first: the image it ran (stateio.h) */
    size_t il = strlen(caps->image);
    archive_entry_clear(s.e);
    archive_entry_copy_pathname(s.e, "meta/image");
    archive_entry_set_filetype(s.e, AE_IFREG);
    archive_entry_set_perm(s.e, 0644);
    archive_entry_set_size(s.e, (la_int64_t)il);
    if (archive_write_header(s.a, s.e) != ARCHIVE_OK || archive_write_data(s.a, caps->image, il) != (la_ssize_t)il) {
        save_archive_error(&s, "the image's name");
        goto out;
    }
    if (save_header(&s, "", &st, AE_IFDIR, 0, NULL) || save_dir(&s, LBST_FD_UPPER, LBST_FD_ROOT, "", 0))
        goto out;
    if (archive_write_close(s.a) != ARCHIVE_OK) {
        save_archive_error(&s, "the end");
        goto out;
    }
    char res[128];
    int n = snprintf(res, sizeof res, "{\"files\":%llu,\"skipped\":%llu}\n", (unsigned long long)s.entries,
                     (unsigned long long)s.skipped);
    if (write(LBST_FD_RESULT, res, (size_t)n) != n)
        s.rc = LBST_EXIT_ERROR;
out:
    if (s.a)
        archive_write_free(s.a);
    if (s.e)
        archive_entry_free(s.e);
    free(s.buf);
    return s.rc;
}
