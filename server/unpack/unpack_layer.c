/* The extraction of one layer or outer image tarball (unpack.h). The tar
 * is hostile: each entry's name is checked (unpack_path.c) before anything
 * is done with it, every path is resolved beneath the destination through
 * no symlink and across no mount, the entries and their sizes together are
 * capped, and these are refused with the entry's name: device nodes,
 * sockets' and hard links' targets outside the layer, symlinks that climb
 * out of it, an entry that replaces a folder. setuid and setgid bits are
 * dropped (the sandboxes mount images nosuid anyway), as are extended
 * attributes (file capabilities included). OCI whiteouts become
 * overlayfs's: ".wh.NAME" a character device 0/0 at NAME (a user
 * namespace's root may make that one device since Linux 5.8),
 * ".wh..wh..opq" a line on fd 4 for the importer. */
#include "unpack/unpack.h"
#include "unpack/unpack_path.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define UP_READ_BLOCK (64u << 10)
#define UP_ID_MAX 65535u    /* the ids the namespace maps */
#define UP_ID_NOBODY 65534u /* what an id past the map becomes */

typedef struct up_ctx {
    const lbup_opts *o;
    struct archive *a;
    uint64_t entries, bytes;
} up_ctx;

static int refuse(up_ctx *c, const char *entry, const char *why)
{
    return lbup_fail(c->o, LBUP_EXIT_REFUSED, "entry \"%.300s\" %s", entry, why);
}

static int sys_fail(up_ctx *c, const char *entry, const char *what)
{
    int e = errno;
    return lbup_fail(c->o, e == ENOSPC || e == EDQUOT ? LBUP_EXIT_TOOBIG : LBUP_EXIT_ERROR,
                     "entry \"%.300s\": cannot %s: %s", entry, what, strerror(e));
}

/* The folder of rel, opened beneath the destination, made (0755, owned by
 * the namespace's root) where missing, as tar's implied parents. -1 with
 * errno when a component is a symlink (ELOOP) or not a folder. */
static int open_parent(const char *rel, const char **base)
{
    const char *slash = strrchr(rel, '/');
    *base = slash ? slash + 1 : rel;
    int fd = dup(LBUP_FD_DEST);
    if (fd < 0 || !slash)
        return fd;
    char comp[LBUP_NAME_MAX + 1];
    for (const char *p = rel; p < slash;) {
        const char *e = strchr(p, '/');
        size_t l = (size_t)(e - p);
        memcpy(comp, p, l);
        comp[l] = '\0';
        if (mkdirat(fd, comp, 0755) != 0 && errno != EEXIST) {
            close(fd);
            return -1;
        }
        int nfd = lbup_open_beneath(fd, comp, O_RDONLY | O_DIRECTORY, 0);
        int en = errno;
        close(fd);
        if (nfd < 0) {
            errno = en;
            return -1;
        }
        fd = nfd;
        p = e + 1;
    }
    return fd;
}

static uid_t entry_id(int64_t v)
{
    return v < 0 || v > UP_ID_MAX ? UP_ID_NOBODY : (uid_t)v;
}

static void set_times(int pfd, const char *base, struct archive_entry *e)
{
    if (!archive_entry_mtime_is_set(e))
        return;
    struct timespec ts[2] = {{0, UTIME_OMIT}, {archive_entry_mtime(e), archive_entry_mtime_nsec(e)}};
    if (ts[1].tv_nsec < 0 || ts[1].tv_nsec > 999999999)
        ts[1].tv_nsec = 0;
    if (utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW) != 0)
        return; /* times are a courtesy: the content is what counts */
}

/* Clears what a later entry of the same name replaces: a file, symlink or
 * whiteout goes; a folder stays for a folder and refuses anything else. */
static int make_room(up_ctx *c, int pfd, const char *base, const char *entry, int is_dir, int *exists_dir)
{
    struct stat st;
    *exists_dir = 0;
    if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : sys_fail(c, entry, "look at what is there");
    if (S_ISDIR(st.st_mode)) {
        if (!is_dir)
            return refuse(c, entry, "replaces a folder of the same layer");
        *exists_dir = 1;
        return 0;
    }
    if (unlinkat(pfd, base, 0) != 0)
        return sys_fail(c, entry, "replace the earlier entry of that name");
    return 0;
}

/* The data, with blocks of zeros left as holes (a sparse file stays
 * sparse, and its size was counted whole against the cap). */
static int write_data(up_ctx *c, int fd, const char *entry, int64_t size)
{
    const void *buf;
    size_t len;
    la_int64_t off;
    for (;;) {
        int ar = archive_read_data_block(c->a, &buf, &len, &off);
        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK)
            return lbup_fail(c->o, LBUP_EXIT_REFUSED, "entry \"%.300s\" cannot be read: %s", entry,
                             archive_error_string(c->a) ? archive_error_string(c->a) : "damaged");
        if (off < 0 || (int64_t)len > size || off > size - (int64_t)len)
            return refuse(c, entry, "holds data past its size");
        const char *p = buf;
        for (size_t i = 0; i < len;) {
            size_t k = len - i < UP_READ_BLOCK ? len - i : UP_READ_BLOCK;
            size_t z = 0;
            while (z < k && !p[i + z])
                z++;
            if (z < k && pwrite(fd, p + i, k, off + (off_t)i) != (ssize_t)k)
                return sys_fail(c, entry, "write");
            i += k;
        }
    }
    if (ftruncate(fd, size) != 0)
        return sys_fail(c, entry, "set the size");
    return LBUP_EXIT_OK;
}

static int do_file(up_ctx *c, struct archive_entry *e, int pfd, const char *base, const char *entry)
{
    int64_t size = archive_entry_size(e);
    if (size < 0)
        return refuse(c, entry, "has a negative size");
    int isdir;
    int rc = make_room(c, pfd, base, entry, 0, &isdir);
    if (rc)
        return rc;
    int fd = lbup_open_beneath(pfd, base, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return sys_fail(c, entry, "create the file");
    rc = write_data(c, fd, entry, size);
    mode_t mode = c->o->archive_mode ? 0644 : (mode_t)(archive_entry_perm(e) & 01777);
    if (!rc && !c->o->archive_mode &&
        fchown(fd, entry_id(archive_entry_uid(e)), entry_id(archive_entry_gid(e))) != 0)
        rc = sys_fail(c, entry, "set the owner");
    if (!rc && fchmod(fd, mode) != 0)
        rc = sys_fail(c, entry, "set the mode");
    close(fd);
    if (!rc)
        set_times(pfd, base, e);
    return rc;
}

static int do_dir(up_ctx *c, struct archive_entry *e, int pfd, const char *base, const char *entry)
{
    int exists;
    int rc = make_room(c, pfd, base, entry, 1, &exists);
    if (rc)
        return rc;
    if (!exists && mkdirat(pfd, base, 0700) != 0)
        return sys_fail(c, entry, "make the folder");
    int fd = lbup_open_beneath(pfd, base, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return sys_fail(c, entry, "open the folder");
    mode_t mode = c->o->archive_mode ? 0755 : (mode_t)(archive_entry_perm(e) & 01777);
    if (!c->o->archive_mode &&
        fchown(fd, entry_id(archive_entry_uid(e)), entry_id(archive_entry_gid(e))) != 0)
        rc = sys_fail(c, entry, "set the owner");
    /* a folder the namespace's root cannot write into is still filled: its
     * root has CAP_DAC_OVERRIDE over the namespace's ids */
    if (!rc && fchmod(fd, mode) != 0)
        rc = sys_fail(c, entry, "set the mode");
    close(fd);
    return rc;
}

static int do_symlink(up_ctx *c, struct archive_entry *e, int pfd, const char *base, const char *rel,
                      const char *entry)
{
    const char *target = archive_entry_symlink(e), *why = NULL;
    if (lbup_link_target_ok(rel, target, &why) != 0)
        return refuse(c, entry, why);
    int isdir;
    int rc = make_room(c, pfd, base, entry, 0, &isdir);
    if (rc)
        return rc;
    if (symlinkat(target, pfd, base) != 0)
        return sys_fail(c, entry, "make the symlink");
    if (fchownat(pfd, base, entry_id(archive_entry_uid(e)), entry_id(archive_entry_gid(e)),
                 AT_SYMLINK_NOFOLLOW) != 0)
        return sys_fail(c, entry, "set the symlink's owner");
    set_times(pfd, base, e);
    return LBUP_EXIT_OK;
}

/* A hard link to an earlier regular file of this layer, both resolved
 * beneath the destination: a link cannot reach a file of the host. */
static int do_hardlink(up_ctx *c, struct archive_entry *e, int pfd, const char *base, const char *entry)
{
    char trel[LBUP_PATH_MAX + 1];
    const char *why = NULL, *tbase;
    if (lbup_entry_path(archive_entry_hardlink(e), trel, sizeof trel, &why) != 0 || !trel[0])
        return refuse(c, entry, "is a hard link whose target is not a clean path inside the layer");
    int tfd = open_parent(trel, &tbase);
    if (tfd < 0)
        return refuse(c, entry, "is a hard link to a file that is not in the layer");
    struct stat st;
    int rc = LBUP_EXIT_OK, isdir;
    if (fstatat(tfd, tbase, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        rc = refuse(c, entry, "is a hard link to something that is not an earlier file of the layer");
    if (!rc && !strcmp(trel, entry))
        rc = refuse(c, entry, "is a hard link to itself");
    if (!rc)
        rc = make_room(c, pfd, base, entry, 0, &isdir);
    if (!rc && linkat(tfd, tbase, pfd, base, 0) != 0)
        rc = sys_fail(c, entry, "make the hard link");
    close(tfd);
    return rc;
}

/* ".wh..wh..opq" marks its folder opaque (told to the importer on fd 4);
 * ".wh.NAME" becomes overlayfs's whiteout, a character device 0/0. */
static int do_whiteout(up_ctx *c, int pfd, const char *base, const char *rel, const char *entry)
{
    if (!strcmp(base, ".wh..wh..opq")) {
        size_t dl = base > rel ? (size_t)(base - rel - 1) : 0;
        if (write(LBUP_FD_OPAQUE, rel, dl) != (ssize_t)dl || write(LBUP_FD_OPAQUE, "", 1) != 1)
            return sys_fail(c, entry, "report the opaque folder");
        return LBUP_EXIT_OK;
    }
    if (!strncmp(base, ".wh..wh.", 8))
        return LBUP_EXIT_OK; /* aufs's own bookkeeping (hard link farms): nothing of the image */
    const char *name = base + 4;
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return refuse(c, entry, "is a whiteout of no name");
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return refuse(c, entry, "whites out an entry of its own layer");
    if (mknodat(pfd, name, S_IFCHR | 0, makedev(0, 0)) != 0)
        return sys_fail(c, entry, "make the whiteout");
    return LBUP_EXIT_OK;
}

static int do_entry(up_ctx *c, struct archive_entry *e)
{
    const char *name = archive_entry_pathname(e), *why = NULL, *base;
    char rel[LBUP_PATH_MAX + 1];
    const char *entry = name ? name : "(no name)";
    if (++c->entries > c->o->max_entries)
        return lbup_fail(c->o, LBUP_EXIT_TOOBIG, "holds more than %llu entries (a tar bomb?)",
                         (unsigned long long)c->o->max_entries);
    if (lbup_entry_path(name, rel, sizeof rel, &why) != 0)
        return refuse(c, entry, why);
    mode_t type = archive_entry_filetype(e);
    int hard = archive_entry_hardlink(e) != NULL;
    if (!rel[0])
        return type == AE_IFDIR ? LBUP_EXIT_OK : refuse(c, entry, "is the layer's root but not a folder");
    if (type == AE_IFREG && !hard) {
        int64_t size = archive_entry_size(e);
        if (size < 0 || (uint64_t)size > c->o->max_bytes - c->bytes)
            return lbup_fail(c->o, LBUP_EXIT_TOOBIG, "entry \"%.300s\" takes the layer past %llu bytes "
                             "(a tar bomb or a sparse file of that size?)", entry,
                             (unsigned long long)c->o->max_bytes);
        c->bytes += (uint64_t)size;
    }
    if (archive_entry_fflags_text(e) && !c->o->archive_mode)
        return refuse(c, entry, "carries file flags (immutable, append-only), which a layer may not set");
    /* docker-archive links a layer's old place (<id>/layer.tar) to its
     * blob: a relative symlink inside the archive, resolved by the importer
     * one level, lexically */
    if (c->o->archive_mode && (hard || (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)))
        return refuse(c, entry, "is neither a file, a folder nor a symlink, which an image archive never holds");
    if (c->o->archive_mode && type == AE_IFLNK && archive_entry_symlink(e) && archive_entry_symlink(e)[0] == '/')
        return refuse(c, entry, "is a symlink to an absolute path, which an image archive never holds");
    int pfd = open_parent(rel, &base);
    if (pfd < 0)
        return refuse(c, entry, errno == ELOOP || errno == ENOTDIR || errno == EXDEV
                                    ? "is in a folder that is a symlink, a file or another filesystem"
                                    : "is in a folder that cannot be made");
    int rc;
    if (!c->o->archive_mode && !strncmp(base, ".wh.", 4))
        rc = do_whiteout(c, pfd, base, rel, entry);
    else if (hard)
        rc = do_hardlink(c, e, pfd, base, entry);
    else if (type == AE_IFREG)
        rc = do_file(c, e, pfd, base, entry);
    else if (type == AE_IFDIR)
        rc = do_dir(c, e, pfd, base, entry);
    else if (type == AE_IFLNK)
        rc = do_symlink(c, e, pfd, base, rel, entry);
    else if (type == AE_IFIFO) {
        int isdir;
        rc = make_room(c, pfd, base, entry, 0, &isdir);
        if (!rc && mkfifoat(pfd, base, archive_entry_perm(e) & 0777) != 0)
            rc = sys_fail(c, entry, "make the fifo");
        if (!rc && fchownat(pfd, base, entry_id(archive_entry_uid(e)), entry_id(archive_entry_gid(e)),
                            AT_SYMLINK_NOFOLLOW) != 0)
            rc = sys_fail(c, entry, "set the fifo's owner");
    } else if (type == AE_IFCHR || type == AE_IFBLK)
        rc = refuse(c, entry, "is a device node (only OCI whiteouts, .wh.NAME, become one)");
    else
        rc = refuse(c, entry, "is a socket or of an unknown type");
    close(pfd);
    return rc;
}

int lbup_extract(const lbup_opts *o)
{
    up_ctx c = {.o = o};
    c.a = archive_read_new();
    if (!c.a)
        return lbup_fail(o, LBUP_EXIT_ERROR, "out of memory");
    archive_read_support_filter_gzip(c.a);
    archive_read_support_filter_zstd(c.a);
    archive_read_support_format_tar(c.a);
    int rc = LBUP_EXIT_OK;
    if (archive_read_open_fd(c.a, LBUP_FD_IN, UP_READ_BLOCK) != ARCHIVE_OK) {
        rc = lbup_fail(o, LBUP_EXIT_REFUSED, "is not a tar (plain, gzip or zstd): %s",
                       archive_error_string(c.a) ? archive_error_string(c.a) : "unreadable");
        goto out;
    }
    struct archive_entry *e;
    for (;;) {
        int ar = archive_read_next_header(c.a, &e);
        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
            rc = lbup_fail(o, LBUP_EXIT_REFUSED, "is damaged after %llu entries: %s",
                           (unsigned long long)c.entries,
                           archive_error_string(c.a) ? archive_error_string(c.a) : "unreadable");
            goto out;
        }
        if ((rc = do_entry(&c, e)) != LBUP_EXIT_OK)
            goto out;
    }
    /* the data reached the disk before the importer marks the layer complete */
    if (syncfs(LBUP_FD_DEST) != 0)
        rc = lbup_fail(o, LBUP_EXIT_ERROR, "cannot sync the layer: %s", strerror(errno));
out:
    archive_read_free(c.a);
    return rc;
}
