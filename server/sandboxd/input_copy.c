/*
 * Copies a task's input directory into a sandbox's /testbed/input (through
 * the sandbox's root fd, before the task runs anything in it). What is
 * created belongs to the sandbox's root (the first host uid of its range,
 * uidslot.h), so the model can edit and delete its inputs.
 *
 * The source path comes from a client, and sandboxd is root: for a client
 * that is not root, every source open happens with the client's fsuid and
 * fsgid, so a client can only copy in what it could read itself (asking for
 * /etc as input_dir gets "permission denied" for /etc/shadow). Inside the
 * tree, symlinks and special files are skipped, never followed. Copies are
 * capped in bytes, entries and depth.
 */
#include "sandboxd/input_copy.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#define CP_MAX_BYTES (4ull << 30)
#define CP_MAX_ENTRIES 100000
#define CP_MAX_DEPTH 32

typedef struct cp_ctx {
    uid_t uid;
    gid_t gid;
    int as_peer;              /* switch fsuid/fsgid for source opens */
    uid_t owner;              /* the sandbox's root on the host: owns every copy */
    uint64_t bytes;
    unsigned long entries, skipped;
    char *msg;
    size_t msgsz;
} cp_ctx;

/* openat() on the source side, with the client's file access rights. A
 * non-zero fsuid clears CAP_CHOWN and CAP_DAC_OVERRIDE from our effective
 * set; switching back to 0 restores them before anything is created. */
static int cp_open_src(cp_ctx *c, int dirfd, const char *name, int flags)
{
    if (c->as_peer) {
        setfsgid(c->gid);
        setfsuid(c->uid);
    }
    int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    int e = errno;
    if (c->as_peer) {
        setfsuid(0);
        setfsgid(0);
    }
    errno = e;
    return fd;
}

static int cp_file(cp_ctx *c, int sfd, int dfd, const char *name, mode_t mode)
{
    char buf[65536];
    int rc = LB_E_IO;
    int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) {
        snprintf(c->msg, c->msgsz, "input copy: cannot create %s: %s", name, strerror(errno));
        return errno == ENOSPC ? LB_E_TOOBIG : LB_E_SANDBOX;
    }
    if (fchown(out, c->owner, (gid_t)c->owner) != 0) {
        snprintf(c->msg, c->msgsz, "input copy: chown %s: %s", name, strerror(errno));
        close(out);
        return LB_E_SANDBOX;
    }
    for (;;) {
        ssize_t n = read(sfd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(c->msg, c->msgsz, "input copy: read %s: %s", name, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        c->bytes += (uint64_t)n;
        if (c->bytes > CP_MAX_BYTES) {
            snprintf(c->msg, c->msgsz, "input is larger than %llu bytes",
                     (unsigned long long)CP_MAX_BYTES);
            rc = LB_E_TOOBIG;
            goto out;
        }
        if (lb_write_all(out, buf, (size_t)n) != LB_OK) {
            int e = errno;
            if (e == ENOSPC || e == EFBIG)
                snprintf(c->msg, c->msgsz, "input does not fit the sandbox's disk quota (%s)",
                         name);
            else
                snprintf(c->msg, c->msgsz, "input copy: write %s: %s", name, strerror(e));
            rc = e == ENOSPC || e == EFBIG ? LB_E_TOOBIG : LB_E_SANDBOX;
            goto out;
        }
    }
    /* keep the permission bits (executables stay executable), drop
     * setuid/setgid/sticky, and make sure the sandbox can read it */
    fchmod(out, (mode & 0755) | 0644);
    rc = LB_OK;
out:
    close(out);
    return rc;
}

static int cp_dir(cp_ctx *c, int sdir, int ddir, int depth)
{
    if (depth > CP_MAX_DEPTH) {
        snprintf(c->msg, c->msgsz, "input is nested deeper than %d directories", CP_MAX_DEPTH);
        return LB_E_TOOBIG;
    }
    int dup_fd = dup(sdir);
    if (dup_fd < 0)
        return LB_E_IO;
    DIR *d = fdopendir(dup_fd);
    if (!d) {
        close(dup_fd);
        return LB_E_IO;
    }
    rewinddir(d); /* a dup shares the offset of an fd that may have been read */
    int rc = LB_OK;
    struct dirent *de;
    while (rc == LB_OK && (de = readdir(d))) {
        const char *nm = de->d_name;
        if (!strcmp(nm, ".") || !strcmp(nm, ".."))
            continue;
        if (++c->entries > CP_MAX_ENTRIES) {
            snprintf(c->msg, c->msgsz, "input has more than %d entries", CP_MAX_ENTRIES);
            rc = LB_E_TOOBIG;
            break;
        }
        struct stat st;
        if (fstatat(sdir, nm, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            c->skipped++;
            continue;
        }
        if (S_ISREG(st.st_mode)) {
            int fd = cp_open_src(c, sdir, nm, O_RDONLY);
            struct stat st2;
            /* the entry must still be the regular file we looked at */
            if (fd < 0 || fstat(fd, &st2) != 0 || !S_ISREG(st2.st_mode) || st2.st_ino != st.st_ino) {
                int e = errno;
                if (fd >= 0)
                    close(fd);
                if (e == EACCES || e == EPERM) {
                    snprintf(c->msg, c->msgsz, "input copy: permission denied for %s", nm);
                    rc = LB_E_DENIED;
                    break;
                }
                c->skipped++;
                continue;
            }
            rc = cp_file(c, fd, ddir, nm, st.st_mode);
            close(fd);
        } else if (S_ISDIR(st.st_mode)) {
            int sfd = cp_open_src(c, sdir, nm, O_RDONLY | O_DIRECTORY);
            if (sfd < 0) {
                if (errno == EACCES || errno == EPERM) {
                    snprintf(c->msg, c->msgsz, "input copy: permission denied for %s/", nm);
                    rc = LB_E_DENIED;
                    break;
                }
                c->skipped++;
                continue;
            }
            if (mkdirat(ddir, nm, 0755) != 0) {
                snprintf(c->msg, c->msgsz, "input copy: mkdir %s: %s", nm, strerror(errno));
                close(sfd);
                rc = LB_E_SANDBOX;
                break;
            }
            int dfd = openat(ddir, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (dfd < 0 || fchown(dfd, c->owner, (gid_t)c->owner) != 0) {
                snprintf(c->msg, c->msgsz, "input copy: cannot open %s/: %s", nm, strerror(errno));
                if (dfd >= 0)
                    close(dfd);
                close(sfd);
                rc = LB_E_SANDBOX;
                break;
            }
            rc = cp_dir(c, sfd, dfd, depth + 1);
            close(sfd);
            close(dfd);
        } else {
            c->skipped++; /* symlinks, fifos, sockets, devices */
        }
    }
    closedir(d);
    return rc;
}

int lbsd_copy_input(const char *src, int dstfd, uid_t uid, gid_t gid, uid_t owner, char *msg,
                    size_t msgsz)
{
    cp_ctx c = {.uid = uid, .gid = gid, .as_peer = uid != 0, .msg = msg, .msgsz = msgsz,
                .owner = owner};
    /* the path to input_dir itself may pass through symlinks the client
     * chose (e.g. a symlinked home); what is inside it may not */
    int sfd = cp_open_src(&c, AT_FDCWD, src, O_RDONLY | O_DIRECTORY);
    if (sfd < 0 && errno == ELOOP) {
        if (c.as_peer) {
            setfsgid(gid);
            setfsuid(uid);
        }
        sfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int e = errno;
        if (c.as_peer) {
            setfsuid(0);
            setfsgid(0);
        }
        errno = e;
    }
    if (sfd < 0) {
        int e = errno;
        snprintf(msg, msgsz, "input_dir %s: %s", src, strerror(e));
        return e == ENOENT || e == ENOTDIR ? LB_E_NOTFOUND : LB_E_INVAL;
    }
    int rc = cp_dir(&c, sfd, dstfd, 0);
    close(sfd);
    if (rc == LB_E_DENIED)
        rc = LB_E_INVAL;
    if (rc == LB_OK && c.skipped)
        lb_info("input copy from %s: %lu entries, %llu bytes, %lu symlinks/special files skipped",
                src, c.entries, (unsigned long long)c.bytes, c.skipped);
    return rc;
}
