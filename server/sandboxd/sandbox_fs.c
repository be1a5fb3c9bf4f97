/*
 * read / write / list / stat on a sandbox's files, from the host side, and
 * E2B's makeDir / rename / remove (fs_change).
 *
 * sandboxd is root on the host and the sandbox's tree is written by hostile
 * code, so every path is walked one component at a time from the sandbox's
 * root fd with O_NOFOLLOW | O_DIRECTORY: a symlink anywhere in the path is
 * refused (E2B's calls, "in_root", follow one among the folders inside the
 * sandbox's root only: fs_open_in_root), ".." never reaches
 * us (lbsd_sandbox_path refuses it), and every directory on the way must be
 * on the overlay or a tmpfs of the sandbox, so /proc, /dev/pts and the like
 * are out of reach (writing /proc/sys as host root would change the host).
 * Only regular files are read or written; symlinks and special files are
 * reported as "other". What write creates (files and missing parents)
 * belongs to the sandbox's root (the first host uid of its range,
 * uidslot.h), so the sandbox can change and delete it, or to the user the
 * write names (E2B's `user`, uid 1000 of the sandbox).
 */
#include "sandboxd/sandbox_fs.h"

#include "sandboxd/image_user.h"
#include "sandboxd/reply.h"

#include "common/log.h"
#include "common/path.h"
#include "common/status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define LBSD_FS_MAX_DEPTH 64    /* components in one path */

static int fs_allowed_fs(int fd)
{
    struct statfs sf;
    if (fstatfs(fd, &sf) != 0)
        return 0;
    return sf.f_type == OVERLAYFS_SUPER_MAGIC || sf.f_type == TMPFS_MAGIC;
}

/* The owner, in the sandbox's ids, of what the write being served
 * creates: root (0:0), or the request's named "user" (E2B's; image_user.h).
 * Set and put back by lbsd_fs_write alone (the loop serves one at a time). */
static uint32_t fs_owner_uid, fs_owner_gid;

/* The call's "in_root": links among its path's folders are followed inside
 * the sandbox's root (fs_open_in_root). Set by fs_enter, cleared by
 * fs_leave (the loop serves one call at a time). */
static int fs_in_root;

/* Hands a file or directory we created to the sandbox's root, or to the
 * write's named user: a host id of the sandbox's own range (uidslot.h,
 * below uid_root + 65536), never another sandbox's. */
static int fs_give(const lbsd_sandbox *sb, int fd)
{
    return fchown(fd, (uid_t)(sb->uid_root + fs_owner_uid), (gid_t)(sb->uid_root + fs_owner_gid));
}

static int fs_errno_status(int e)
{
    switch (e) {
    case EACCES:
    case EPERM:
        return LB_E_DENIED;
    case ENOENT:
        return LB_E_NOTFOUND;
    case EEXIST:
        return LB_E_EXISTS;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
        return LB_E_TOOBIG;
    case ENOMEM:
        return LB_E_NOMEM;
    default:
        return LB_E_INVAL;
    }
}

/* ---- a named user's file calls (E2B's `user`) --------------------------------
 * envd runs in the sandbox as root: its file calls are root's whoever the
 * call's user, and what they make (a file, the folders on the way) it
 * hands to that user. So here: the call is sandboxd's own (root of the
 * host, through the walk above), and the request's "user" only names who
 * owns what write and fs_change make (fs_give). read, list and stat make
 * nothing and take no user. "owner_only": true, which the web sends with
 * a user, says just this; false (the call made with the user's own
 * permissions, which no caller uses any more) is refused. */
static void fs_leave(void)
{
    fs_in_root = 0;
    fs_owner_uid = fs_owner_gid = 0;
}

/* The request's "in_root", and for a write or fs_change (takes_user) its
 * "user", a user of the sandbox's /etc/passwd (none: root), whose ids
 * then own what the call makes; fs_leave after. 0, or -1 when it has
 * answered c (no such user, a field of the wrong kind). */
static int fs_enter(lbsd_conn *c, const lbsd_sandbox *sb, const lbsd_req *req, int takes_user)
{
    const cJSON *user = cJSON_GetObjectItemCaseSensitive(req->json, "user");
    const cJSON *oo = cJSON_GetObjectItemCaseSensitive(req->json, "owner_only");
    const cJSON *ir = cJSON_GetObjectItemCaseSensitive(req->json, "in_root");
    lbsd_user_ids ids;
    char msg[512];
    fs_leave();
    if (ir && !cJSON_IsBool(ir)) {
        lbsd_reply_error(c, LB_E_INVAL, "\"in_root\" must be true or false");
        return -1;
    }
    if (oo && !cJSON_IsTrue(oo)) {
        lbsd_reply_error(c, LB_E_INVAL, "\"owner_only\" may only be true: file calls are made as the sandbox's "
                         "root, what they make handed to \"user\"");
        return -1;
    }
    if (user && !takes_user) {
        lbsd_reply_error(c, LB_E_INVAL, "\"user\" is taken by write and fs_change only: a read, list or stat is "
                         "the sandbox's root's");
        return -1;
    }
    if (user) {
        memset(&ids, 0, sizeof ids);
        int rc = cJSON_IsString(user) ? lbsd_user_lookup(sb->root_fd, user->valuestring, &ids, msg, sizeof msg)
                                      : LB_E_INVAL;
        if (rc) {
            lbsd_reply_error(c, rc, "%s", cJSON_IsString(user) ? msg : "\"user\" must be a user's name");
            return -1;
        }
        fs_owner_uid = ids.uid;
        fs_owner_gid = ids.gid;
    }
    fs_in_root = cJSON_IsTrue(ir);
    return 0;
}

/* ---- links followed inside the sandbox's root (E2B's calls: "in_root") ----
 * envd runs in the sandbox as root and follows symlinks; a link among a
 * path's folders (/home/user/ln -> /tmp/real) is then walked as the
 * sandbox sees it. Here each prefix of the path is opened again from the
 * sandbox's root fd with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS):
 * the kernel resolves an absolute link text or ".." against that fd as
 * "/", so a link to "/", "/etc" or "/../../.." means the sandbox's own,
 * never the host's, and /proc's magic links (/proc/1/root) are refused.
 * Every folder so reached must still be on the overlay or a tmpfs of the
 * sandbox (fs_allowed_fs, as the plain walk), so a link into /proc or
 * /sys is refused. A folder made on the way is made in the folder the
 * previous prefix resolved to (O_NOFOLLOW), then handed to its owner.
 */

/* openat2 from the sandbox's root; EAGAIN (a rename or mount raced the
 * lookup: the kernel cannot vouch for "..") is tried again a few times. */
static int fs_open_in_root(const lbsd_sandbox *sb, const char *rel, int flags)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (uint64_t)flags;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    for (int i = 0;; i++) {
        int fd = (int)syscall(SYS_openat2, sb->root_fd, rel[0] ? rel : ".", &how, sizeof how);
        if (fd >= 0 || errno != EAGAIN || i >= 8)
            return fd;
    }
}

/* Opens the directory rel (cleaned, "" = root) under the sandbox root.
 * mkdirs: create missing components (0755). Returns an fd or -1 with *st
 * set to an lb_status and msg filled. */
static int fs_open_dir(lbsd_sandbox *sb, const char *rel, int mkdirs, int *st, char *msg,
                       size_t msgsz)
{
    int fd = dup(sb->root_fd);
    if (fd < 0) {
        *st = LB_E_INTERNAL;
        snprintf(msg, msgsz, "dup: %s", strerror(errno));
        return -1;
    }
    if (!fs_allowed_fs(fd)) {
        close(fd);
        *st = LB_E_SANDBOX;
        snprintf(msg, msgsz, "the sandbox root is not mounted");
        return -1;
    }
    char comp[LB_NAME_MAX + 1], prefix[LB_PATH_MAX + 1];
    const char *p = rel;
    int depth = 0;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || n > LB_NAME_MAX || ++depth > LBSD_FS_MAX_DEPTH) {
            close(fd);
            *st = LB_E_INVAL;
            snprintf(msg, msgsz, "path too deep or malformed");
            return -1;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        int oflags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
        int nfd;
        if (fs_in_root) {
            /* the path so far, links in it followed inside the root */
            size_t upto = (size_t)(p - rel) + n;
            if (upto > LB_PATH_MAX) {
                close(fd);
                *st = LB_E_INVAL;
                snprintf(msg, msgsz, "path too long");
                return -1;
            }
            memcpy(prefix, rel, upto);
            prefix[upto] = '\0';
            nfd = fs_open_in_root(sb, prefix, oflags);
        } else {
            nfd = openat(fd, comp, oflags | O_NOFOLLOW);
        }
        if (nfd < 0 && errno == ENOENT && mkdirs) {
            int made = mkdirat(fd, comp, 0755) == 0;
            if (!made && errno != EEXIST) {
                int e = errno;
                close(fd);
                *st = fs_errno_status(e);
                snprintf(msg, msgsz, "cannot create directory '%s': %s", comp, strerror(e));
                return -1;
            }
            nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            /* on the sandbox's own filesystems before it is handed over */
            if (made && nfd >= 0 && !fs_allowed_fs(nfd)) {
                close(nfd);
                close(fd);
                *st = LB_E_INVAL;
                snprintf(msg, msgsz, "'%s' is on a special filesystem (proc, devpts ...)", comp);
                return -1;
            }
            if (made && nfd >= 0 && fs_give(sb, nfd) != 0) {
                int e = errno;
                close(nfd);
                close(fd);
                *st = LB_E_SANDBOX;
                snprintf(msg, msgsz, "cannot chown directory '%s': %s", comp, strerror(e));
                return -1;
            }
        }
        if (nfd < 0) {
            int e = errno;
            close(fd);
            if (e == ENOENT) {
                *st = LB_E_NOTFOUND;
                snprintf(msg, msgsz, "no such directory: '%s'", comp);
            } else if ((e == ELOOP || e == ENOTDIR) && fs_in_root) {
                *st = LB_E_INVAL;
                snprintf(msg, msgsz, "'%s' is not a directory", comp);
            } else if (e == ELOOP || e == ENOTDIR) {
                *st = LB_E_INVAL;
                snprintf(msg, msgsz, "'%s' is not a directory (symlinks are not followed)", comp);
            } else {
                *st = fs_errno_status(e);
                snprintf(msg, msgsz, "cannot open '%s': %s", comp, strerror(e));
            }
            return -1;
        }
        close(fd);
        fd = nfd;
        if (!fs_allowed_fs(fd)) {
            close(fd);
            *st = LB_E_INVAL;
            snprintf(msg, msgsz, "'%s' is on a special filesystem (proc, devpts ...)", comp);
            return -1;
        }
        p += n;
        while (*p == '/')
            p++;
    }
    return fd;
}

/* Splits rel into its parent dir (opened) and its last component. */
static int fs_open_parent(lbsd_sandbox *sb, const char *rel, int mkdirs, char *leaf,
                          int *st, char *msg, size_t msgsz)
{
    char parent[LB_PATH_MAX + 1];
    const char *slash = strrchr(rel, '/');
    if (slash) {
        size_t n = (size_t)(slash - rel);
        memcpy(parent, rel, n);
        parent[n] = '\0';
        snprintf(leaf, LB_NAME_MAX + 1, "%s", slash + 1);
    } else {
        parent[0] = '\0';
        snprintf(leaf, LB_NAME_MAX + 1, "%s", rel);
    }
    return fs_open_dir(sb, parent, mkdirs, st, msg, msgsz);
}

/* read's and write's answer for a directory: "isdir" (the web's LB_E_ISDIR) */
static void fs_reply_isdir(lbsd_conn *c)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddFalseToObject(r, "ok");
    cJSON_AddStringToObject(r, "error", "isdir");
    cJSON_AddStringToObject(r, "message", "is a directory");
    lbsd_reply(c, r, NULL, 0, 0);
}

static const char *fs_type_name(mode_t m)
{
    return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : "other";
}

/* ---- E2B's protocol: file metadata (stat and list answer it for E2B's EntryInfo) ----
 * Appended fields, so older clients read type and size as before:
 * kind (what "other" is), mode (07777), uid and gid as the sandbox sees
 * them (its user namespace maps 0..65535 to uid_root..; anything else is
 * shown as 65534, the kernel's overflow id), mtime (s) and mtime_ns, and a
 * symlink's target, read with readlinkat, which never follows it. */
static const char *fs_kind_name(mode_t m)
{
    return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : S_ISFIFO(m) ? "fifo"
         : S_ISSOCK(m) ? "socket" : S_ISCHR(m) ? "chardev" : S_ISBLK(m) ? "blockdev" : "other";
}

static double fs_inner_id(const lbsd_sandbox *sb, uint32_t host)
{
    return host >= sb->uid_root && host - sb->uid_root < 65536u ? (double)(host - sb->uid_root) : 65534.0;
}

/* E2B's file metadata (envd 0.6.2): user.e2b.<key> extended attributes of
 * a regular file. A key is 1 to LBSB_META_KEY_MAX HTTP token characters
 * (the SDK's own rule), a value printable ASCII; the sandbox's code can set
 * such attributes itself, so what is read is checked as written. */
#define FS_META_PREFIX "user.e2b."

int lbsd_fs_meta_key_ok(const char *k, size_t n)
{
    if (n < 1 || n > LBSB_META_KEY_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= '0' && k[i] <= '9') ||
              strchr("!#$%&'*+-.^_`|~", k[i])) || !k[i])
            return 0;
    return 1;
}

int lbsd_fs_meta_value_ok(const char *v, size_t n)
{
    if (n > LBSB_META_VALUE_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] < 0x20 || v[i] > 0x7e)
            return 0;
    return 1;
}

/* The write's "meta" (absent, or an object of valid strings): 1 when usable. */
static int fs_meta_req_ok(const cJSON *m)
{
    if (!m)
        return 1;
    if (!cJSON_IsObject(m) || cJSON_GetArraySize(m) > LBSB_META_KEYS)
        return 0;
    const cJSON *kv;
    cJSON_ArrayForEach(kv, m)
    {
        if (!kv->string || !lbsd_fs_meta_key_ok(kv->string, strlen(kv->string)) || !cJSON_IsString(kv) ||
            !lbsd_fs_meta_value_ok(kv->valuestring, strlen(kv->valuestring)))
            return 0;
    }
    return 1;
}

int lbsd_fs_meta_next(const char *names, size_t n, size_t *at, const char **key)
{
    const size_t pl = sizeof FS_META_PREFIX - 1;
    while (*at < n) {
        const char *name = names + *at;
        size_t nl = strnlen(name, n - *at);
        if (nl == n - *at)
            return 0; /* no NUL before the end: not a name */
        *at += nl + 1;
        if (nl > pl && !strncmp(name, FS_META_PREFIX, pl) && lbsd_fs_meta_key_ok(name + pl, nl - pl)) {
            *key = name + pl;
            return 1;
        }
    }
    return 0;
}

/* The user.e2b.* attributes of dfd/leaf (a regular file) into o's "meta";
 * never through a symlink (l*xattr on our own descriptor's path). */
static void fs_read_meta(cJSON *o, int dfd, const char *leaf)
{
    char path[64 + LB_NAME_MAX], names[4096], val[LBSB_META_VALUE_MAX + 1];
    snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dfd, leaf);
    ssize_t n = llistxattr(path, names, sizeof names);
    if (n <= 0)
        return; /* none, or more names than we read: as none */
    cJSON *m = NULL;
    int count = 0;
    size_t at = 0;
    const char *key;
    while (count < LBSB_META_KEYS && lbsd_fs_meta_next(names, (size_t)n, &at, &key)) {
        const char *name = key - (sizeof FS_META_PREFIX - 1);
        ssize_t vl = lgetxattr(path, name, val, sizeof val - 1);
        if (vl < 0 || !lbsd_fs_meta_value_ok(val, (size_t)vl))
            continue;
        val[vl] = '\0';
        if (!m && !(m = cJSON_AddObjectToObject(o, "meta")))
            return;
        cJSON_DeleteItemFromObjectCaseSensitive(m, key);
        if (cJSON_AddStringToObject(m, key, val))
            count++;
    }
}

static void fs_add_meta(cJSON *o, const lbsd_sandbox *sb, int dfd, const char *leaf, const struct stat *s)
{
    cJSON_AddStringToObject(o, "kind", fs_kind_name(s->st_mode));
    cJSON_AddNumberToObject(o, "mode", (double)(s->st_mode & 07777));
    cJSON_AddNumberToObject(o, "uid", fs_inner_id(sb, (uint32_t)s->st_uid));
    cJSON_AddNumberToObject(o, "gid", fs_inner_id(sb, (uint32_t)s->st_gid));
    cJSON_AddNumberToObject(o, "mtime", (double)s->st_mtim.tv_sec);
    cJSON_AddNumberToObject(o, "mtime_ns", (double)s->st_mtim.tv_nsec);
    /* the filesystem's own size of any kind (a directory's 4096 on ext4), as envd reports it */
    cJSON_AddNumberToObject(o, "st_size", (double)s->st_size);
    if (S_ISREG(s->st_mode) && leaf[0])
        fs_read_meta(o, dfd, leaf);
    if (S_ISLNK(s->st_mode)) {
        char t[LBSB_TARGET_MAX + 1];
        ssize_t n = readlinkat(dfd, leaf, t, sizeof t);
        /* a target as long as the buffer may be cut: none rather than a wrong one */
        if (n > 0 && (size_t)n < sizeof t && !memchr(t, '\0', (size_t)n)) {
            t[n] = '\0';
            cJSON_AddStringToObject(o, "target", t);
        }
    }
}
/* ---- end E2B's protocol ---- */

static void fs_stat_as(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    char leaf[LB_NAME_MAX + 1], msg[512];
    int st;
    if (!req->path[0]) {
        cJSON *r = cJSON_CreateObject();
        struct stat rs;
        cJSON_AddStringToObject(r, "type", "dir");
        cJSON_AddNumberToObject(r, "size", 0);
        if (fstat(sb->root_fd, &rs) == 0 && S_ISDIR(rs.st_mode))
            fs_add_meta(r, sb, sb->root_fd, "", &rs);
        lbsd_reply(c, r, NULL, 0, 0);
        return;
    }
    int dfd = fs_open_parent(sb, req->path, 0, leaf, &st, msg, sizeof msg);
    cJSON *r = cJSON_CreateObject();
    if (dfd < 0) {
        /* a missing or non-directory parent means the path does not exist
         * as asked; a symlinked parent makes it "other" */
        cJSON_AddStringToObject(r, "type", st == LB_E_NOTFOUND ? "missing" : "other");
        cJSON_AddNumberToObject(r, "size", 0);
        lbsd_reply(c, r, NULL, 0, 0);
        return;
    }
    struct stat s;
    int sr = fstatat(dfd, leaf, &s, AT_SYMLINK_NOFOLLOW);
    if (sr != 0) {
        cJSON_AddStringToObject(r, "type", "missing");
        cJSON_AddNumberToObject(r, "size", 0);
    } else {
        cJSON_AddStringToObject(r, "type", fs_type_name(s.st_mode));
        cJSON_AddNumberToObject(r, "size", S_ISREG(s.st_mode) ? (double)s.st_size : 0);
        fs_add_meta(r, sb, dfd, leaf, &s);
    }
    close(dfd);
    lbsd_reply(c, r, NULL, 0, 0);
}

static void fs_read_as(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    char leaf[LB_NAME_MAX + 1], msg[512];
    int st, fd = -1;
    char *data = NULL;
    if (!req->path[0]) {
        lbsd_reply_error(c, LB_E_INVAL, "'/' is a directory");
        return;
    }
    int dfd = fs_open_parent(sb, req->path, 0, leaf, &st, msg, sizeof msg);
    if (dfd < 0) {
        lbsd_reply_error(c, st, "%s", msg);
        return;
    }
    struct stat s;
    if (fstatat(dfd, leaf, &s, AT_SYMLINK_NOFOLLOW) != 0) {
        lbsd_reply_error(c, LB_E_NOTFOUND, "no such file: /%s", req->path);
        goto out;
    }
    if (S_ISDIR(s.st_mode)) {
        fs_reply_isdir(c);
        goto out;
    }
    if (!S_ISREG(s.st_mode)) {
        lbsd_reply_error(c, LB_E_INVAL, "/%s is not a regular file (symlinks and special files "
                                        "are not read)", req->path);
        goto out;
    }
    /* O_NONBLOCK|O_NOCTTY: had the file been swapped for a fifo or a device
     * since the fstatat, opening it must not hang or grab a terminal */
    fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &s) != 0 || !S_ISREG(s.st_mode) || !fs_allowed_fs(fd)) {
        lbsd_reply_error(c, LB_E_INVAL, "/%s could not be opened as a regular file", req->path);
        goto out;
    }
    if (req->offset < 0 && (uint64_t)s.st_size > req->max) {
        lbsd_reply_error(c, LB_E_TOOBIG, "/%s is %lld bytes, over the %zu-byte limit", req->path,
                         (long long)s.st_size, req->max);
        goto out;
    }
    /* a range: up to max bytes from offset (none past the end) */
    int64_t from = req->offset > 0 ? req->offset : 0;
    if (from > 0 && lseek(fd, (off_t)from, SEEK_SET) != (off_t)from) {
        lbsd_reply_error(c, LB_E_INVAL, "seek /%s: %s", req->path, strerror(errno));
        goto out;
    }
    uint64_t left = (uint64_t)s.st_size > (uint64_t)from ? (uint64_t)s.st_size - (uint64_t)from : 0;
    /* the file may grow while we read: never past max */
    size_t cap = left < req->max ? (size_t)left : req->max, got = 0;
    data = malloc(cap + 1);
    if (!data) {
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        goto out;
    }
    while (got < cap) {
        ssize_t n = read(fd, data + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            lbsd_reply_error(c, LB_E_INVAL, "read /%s: %s", req->path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "size", (double)got);
    cJSON_AddNumberToObject(r, "file_size", (double)s.st_size);
    lbsd_reply(c, r, data, got, 1);
out:
    free(data);
    if (fd >= 0)
        close(fd);
    close(dfd);
}

static void fs_write_owned(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, const char *data, size_t len);

static void fs_write_as(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, const char *data, size_t len)
{
    if (!fs_meta_req_ok(cJSON_GetObjectItemCaseSensitive(req->json, "meta"))) {
        lbsd_reply_error(c, LB_E_INVAL, "\"meta\" must be an object of at most %d keys of 1 to %d HTTP token "
                         "characters, each a printable ASCII string of at most %d bytes", LBSB_META_KEYS,
                         LBSB_META_KEY_MAX, LBSB_META_VALUE_MAX);
        return;
    }
    fs_write_owned(c, sb, req, data, len);
}

static void fs_write_owned(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, const char *data, size_t len)
{
    char leaf[LB_NAME_MAX + 1], msg[512], tmp[LB_NAME_MAX + 64], rnd[17];
    int st, fd = -1;
    int dfd = fs_open_parent(sb, req->path, 1, leaf, &st, msg, sizeof msg);
    if (dfd < 0) {
        lbsd_reply_error(c, st, "%s", msg);
        return;
    }
    tmp[0] = '\0';
    struct stat s;
    if (fstatat(dfd, leaf, &s, AT_SYMLINK_NOFOLLOW) == 0) {
        if (req->excl) {
            lbsd_reply_error(c, LB_E_EXISTS, "/%s already exists", req->path);
            goto out;
        }
        if (S_ISDIR(s.st_mode)) {
            fs_reply_isdir(c);
            goto out;
        }
        /* a symlink or special file in the way is replaced by the rename,
         * never written through */
    }
    if (lb_random_hex(rnd, sizeof rnd, 8) != LB_OK) {
        lbsd_reply_error(c, LB_E_INTERNAL, "no randomness");
        goto out;
    }
    snprintf(tmp, sizeof tmp, ".%.200s.lbsd-%s", leaf, rnd);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        tmp[0] = '\0';
        lbsd_reply_error(c, fs_errno_status(e), "cannot create /%s: %s", req->path, strerror(e));
        goto out;
    }
    if (lb_write_all(fd, data, len) != LB_OK) {
        int e = errno;
        lbsd_reply_error(c, fs_errno_status(e), "write /%s: %s", req->path, strerror(e));
        goto out;
    }
    /* E2B's file metadata, on the new file before it is in place */
    const cJSON *kv;
    cJSON_ArrayForEach(kv, cJSON_GetObjectItemCaseSensitive(req->json, "meta"))
    {
        char an[sizeof FS_META_PREFIX + LBSB_META_KEY_MAX];
        snprintf(an, sizeof an, FS_META_PREFIX "%s", kv->string);
        if (fsetxattr(fd, an, kv->valuestring, strlen(kv->valuestring), 0) != 0) {
            int e = errno;
            lbsd_reply_error(c, e == ENOSPC || e == EDQUOT ? LB_E_TOOBIG : LB_E_INTERNAL,
                             "cannot keep the metadata of /%s: %s", req->path, strerror(e));
            goto out;
        }
    }
    /* owner first: chown would clear mode bits set before it */
    if (fs_give(sb, fd) != 0) {
        lbsd_reply_error(c, LB_E_INTERNAL, "chown /%s: %s", req->path, strerror(errno));
        goto out;
    }
    if (fchmod(fd, (mode_t)req->mode) != 0) {
        lbsd_reply_error(c, LB_E_INTERNAL, "chmod /%s: %s", req->path, strerror(errno));
        goto out;
    }
    close(fd);
    fd = -1;
    int rr = req->excl ? renameat2(dfd, tmp, dfd, leaf, RENAME_NOREPLACE)
                       : renameat(dfd, tmp, dfd, leaf);
    if (rr != 0) {
        int e = errno;
        lbsd_reply_error(c, fs_errno_status(e), "cannot put /%s in place: %s", req->path,
                         strerror(e));
        goto out;
    }
    tmp[0] = '\0';
    lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
out:
    if (fd >= 0)
        close(fd);
    if (tmp[0])
        unlinkat(dfd, tmp, 0);
    close(dfd);
}

/* ---- list ------------------------------------------------------------------ */

typedef struct fs_list {
    const lbsd_sandbox *sb;     /* its uid_root: the owners' ids as the sandbox sees them */
    cJSON *arr;
    size_t n, max;
    int max_depth;
    int truncated;
} fs_list;

static int fs_cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists dirfd (whose path relative to the listed dir is prefix) in sorted
 * order, depth-first. Never follows symlinks, never leaves overlay/tmpfs. */
static void fs_list_dir(fs_list *L, int dirfd, const char *prefix, int depth)
{
    int dup_fd = dup(dirfd);
    if (dup_fd < 0)
        return;
    DIR *d = fdopendir(dup_fd);
    if (!d) {
        close(dup_fd);
        return;
    }
    rewinddir(d); /* a dup shares the offset of an fd that may have been read */
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    /* a directory can hold millions of names: read at most what could
     * still be listed (+1 to know we cut it) */
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (n >= L->max - L->n + 1) {
            L->truncated = 1;
            break;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            char **nn = realloc(names, nc * sizeof *nn);
            if (!nn)
                break;
            names = nn;
            cap = nc;
        }
        if (!(names[n] = strdup(de->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, fs_cmp_names);
    for (size_t i = 0; i < n; i++) {
        if (L->n >= L->max) {
            L->truncated = 1;
            break;
        }
        char path[LB_PATH_MAX + LB_NAME_MAX + 2];
        int pl = prefix[0] ? snprintf(path, sizeof path, "%s/%s", prefix, names[i])
                           : snprintf(path, sizeof path, "%s", names[i]);
        if (pl < 0 || (size_t)pl >= sizeof path || pl > LB_PATH_MAX)
            continue;
        struct stat s;
        if (fstatat(dirfd, names[i], &s, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        cJSON *e = cJSON_CreateObject();
        if (!e)
            break;
        cJSON_AddStringToObject(e, "path", path);
        cJSON_AddStringToObject(e, "type", fs_type_name(s.st_mode));
        cJSON_AddNumberToObject(e, "size", S_ISREG(s.st_mode) ? (double)s.st_size : 0);
        fs_add_meta(e, L->sb, dirfd, names[i], &s);
        cJSON_AddItemToArray(L->arr, e);
        L->n++;
        if (S_ISDIR(s.st_mode) && depth < L->max_depth) {
            int sub = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                if (fs_allowed_fs(sub))
                    fs_list_dir(L, sub, path, depth + 1);
                close(sub);
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static void fs_list_as(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    char msg[512];
    int st;
    int dfd = fs_open_dir(sb, req->path, 0, &st, msg, sizeof msg);
    if (dfd < 0) {
        lbsd_reply_error(c, st, "%s", msg);
        return;
    }
    cJSON *r = cJSON_CreateObject();
    fs_list L = {.sb = sb, .arr = cJSON_CreateArray(), .max = req->max_entries, .max_depth = req->max_depth};
    if (!r || !L.arr) {
        cJSON_Delete(r);
        cJSON_Delete(L.arr);
        close(dfd);
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        return;
    }
    fs_list_dir(&L, dfd, "", 1);
    close(dfd);
    cJSON_AddItemToObject(r, "entries", L.arr);
    cJSON_AddBoolToObject(r, "truncated", L.truncated);
    lbsd_reply(c, r, NULL, 0, 0);
}

/* ---- E2B's makeDir, rename and remove -------------------------------------
 * The same walk as above (only the sandbox's overlay and tmpfs; symlinked
 * folders followed inside the sandbox's root with "in_root", else
 * refused), as the sandbox's root, the folders mkdir makes handed to the
 * request's user (fs_enter): no shell and no tool of the image needed.
 * What is not done here the web may run through the sandbox's shell as
 * root: a rename across filesystems or of a directory of the image's
 * layers (overlayfs answers EXDEV), a remove that meets another
 * filesystem mounted in the tree, and one of more than LBSD_FS_RM_MAX
 * entries. */
#define LBSD_FS_RM_MAX 100000   /* entries one remove walks: the loop serves every sandbox */
#define LBSD_FS_RM_DEPTH 128    /* directories deep (one fd each while walked) */

typedef struct fs_rm {
    size_t seen;
    dev_t dev;                  /* the first folder's filesystem: rm --one-file-system */
    int have_dev;
    int err;                    /* the first errno met; rm -rf goes on past it */
    char what[LB_NAME_MAX + 1]; /* the name it was met at */
} fs_rm;

static void fs_rm_fail(fs_rm *R, int e, const char *name)
{
    if (!R->err) {
        R->err = e;
        snprintf(R->what, sizeof R->what, "%s", name);
    }
}

/* Removes dfd's entry leaf and, for a directory, what is in it first. */
static void fs_rm_tree(fs_rm *R, int dfd, const char *leaf, int depth)
{
    if (++R->seen > LBSD_FS_RM_MAX) {
        fs_rm_fail(R, EFBIG, leaf);
        return;
    }
    if (unlinkat(dfd, leaf, 0) == 0)
        return;
    if (errno != EISDIR) {
        fs_rm_fail(R, errno, leaf);
        return;
    }
    if (depth > LBSD_FS_RM_DEPTH) {
        fs_rm_fail(R, EFBIG, leaf);
        return;
    }
    /* O_NOFOLLOW: swapped for a symlink meanwhile, the link is not walked */
    int fd = openat(dfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        fs_rm_fail(R, errno, leaf);
        return;
    }
    /* a mount of another kind (proc ...) or another filesystem mounted in
     * the tree (a volume, a bind): left alone, as rm --one-file-system */
    struct stat ds;
    if (!fs_allowed_fs(fd) || fstat(fd, &ds) != 0 || (R->have_dev && ds.st_dev != R->dev)) {
        close(fd);
        fs_rm_fail(R, EBUSY, leaf);
        return;
    }
    if (!R->have_dev) {
        R->dev = ds.st_dev;
        R->have_dev = 1;
    }
    DIR *d = fdopendir(fd); /* one fd a level: closedir closes it */
    if (!d) {
        fs_rm_fail(R, errno, leaf);
        close(fd);
        return;
    }
    struct dirent *de;
    while (R->err != EFBIG && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        fs_rm_tree(R, dirfd(d), de->d_name, depth + 1);
    }
    closedir(d);
    if (unlinkat(dfd, leaf, AT_REMOVEDIR) != 0)
        fs_rm_fail(R, errno, leaf);
}

/* strerror(e) in msg; e's status */
static int fs_errmsg(char *msg, size_t msgsz, int e)
{
    snprintf(msg, msgsz, "%s", strerror(e));
    return fs_errno_status(e);
}

static void fs_change_as(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, const char *action,
                         const char *dest);

static void fs_change_req(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(req->json, "action");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(req->json, "dest");
    const char *action = cJSON_IsString(a) ? a->valuestring : "";
    char dest[LB_PATH_MAX + 1] = "";
    int mv = !strcmp(action, "rename");
    if (!mv && strcmp(action, "mkdir") && strcmp(action, "remove")) {
        lbsd_reply_error(c, LB_E_INVAL, "\"action\" must be \"mkdir\", \"rename\" or \"remove\"");
        return;
    }
    if (mv && (!cJSON_IsString(d) || strlen(d->valuestring) > LB_PATH_MAX ||
               lbsd_sandbox_path(d->valuestring, dest, sizeof dest) != LB_OK)) {
        lbsd_reply_error(c, LB_E_INVAL, "\"dest\" must be an absolute path without \"..\", control characters or "
                         "invalid UTF-8");
        return;
    }
    if (!req->path[0] || (mv && !dest[0])) {
        lbsd_reply_error(c, LB_E_INVAL, "not on the sandbox's root directory");
        return;
    }
    fs_change_as(c, sb, req, action, dest);
}

static void fs_change_as(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, const char *action,
                         const char *dest)
{
    char leaf[LB_NAME_MAX + 1], dleaf[LB_NAME_MAX + 1], msg[600];
    int st;
    if (!strcmp(action, "mkdir")) {
        int fd = fs_open_dir(sb, req->path, 1, &st, msg, sizeof msg);
        if (fd < 0) {
            lbsd_reply_error(c, st, "cannot make the directory /%.400s: %s", req->path, msg);
            return;
        }
        close(fd);
        lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
        return;
    }
    int dfd = fs_open_parent(sb, req->path, 0, leaf, &st, msg, sizeof msg);
    if (dfd < 0) {
        lbsd_reply_error(c, st, "cannot %s /%.400s: %s", action, req->path, msg);
        return;
    }
    if (!strcmp(action, "remove")) {
        fs_rm R = {0};
        fs_rm_tree(&R, dfd, leaf, 0);
        close(dfd);
        if (R.err == ENOENT && R.seen == 1)
            R.err = 0; /* nothing there: what rm -f asks */
        if (R.err)
            lbsd_reply_error(c, R.err == EFBIG ? LB_E_TOOBIG : fs_errno_status(R.err), "cannot remove /%.400s: %s%s%s",
                             req->path, R.err == EFBIG ? "more entries or levels than one remove walks" : strerror(R.err),
                             R.what[0] ? " at " : "", R.what);
        else
            lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
        return;
    }
    int tfd = fs_open_parent(sb, dest, 0, dleaf, &st, msg, sizeof msg);
    if (tfd < 0) {
        close(dfd);
        lbsd_reply_error(c, st, "cannot move /%.400s to /%.400s: %s", req->path, dest, msg);
        return;
    }
    /* across filesystems (EXDEV): LB_E_INVAL, and the web runs mv in the
     * sandbox's shell as its root */
    int rc = renameat(dfd, leaf, tfd, dleaf) != 0 ? fs_errmsg(msg, sizeof msg, errno) : 0;
    close(dfd);
    close(tfd);
    if (rc != 0)
        lbsd_reply_error(c, rc, "cannot move /%.400s to /%.400s: %s", req->path, dest, msg);
    else
        lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
}

/* ---- the requests: each between fs_enter and fs_leave ---- */
typedef enum { FS_READ, FS_WRITE, FS_LIST, FS_STAT, FS_CHANGE } fs_op;

/* Serves one file request: its "in_root" and (write, fs_change: what they
 * make is the named user's, root's the sandbox's root's) its "user" taken
 * for the call, put back after. */
static void fs_serve(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, fs_op op, const char *data, size_t len)
{
    if (fs_enter(c, sb, req, op == FS_WRITE || op == FS_CHANGE) < 0)
        return;
    switch (op) {
    case FS_READ: fs_read_as(c, sb, req); break;
    case FS_WRITE: fs_write_as(c, sb, req, data, len); break;
    case FS_LIST: fs_list_as(c, sb, req); break;
    case FS_STAT: fs_stat_as(c, sb, req); break;
    case FS_CHANGE: fs_change_req(c, sb, req); break;
    }
    fs_leave();
}

void lbsd_fs_read(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    fs_serve(c, sb, req, FS_READ, NULL, 0);
}

void lbsd_fs_write(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, const char *data, size_t len)
{
    fs_serve(c, sb, req, FS_WRITE, data, len);
}

void lbsd_fs_list(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    fs_serve(c, sb, req, FS_LIST, NULL, 0);
}

void lbsd_fs_stat(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    fs_serve(c, sb, req, FS_STAT, NULL, 0);
}

void lbsd_fs_change(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    fs_serve(c, sb, req, FS_CHANGE, NULL, 0);
}
