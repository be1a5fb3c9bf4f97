/* The content of a volume from the host, never through a link (volume_fs.h). */
#include "volumes/volume_fs.h"

#include "common/path.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LBVOL_IDS 65536u /* ids a sandbox has (sandboxd/idmap.h) */
#define LBVOL_WALK_DEPTH_RM 128 /* a remove goes at most this deep */

int lbvol_fs_clean(const char *in, char *out, size_t outsz)
{
    if (!in || outsz < LB_PATH_MAX + 1)
        return LB_E_INVAL;
    while (*in == '/')
        in++;
    out[0] = '\0';
    if (!*in)
        return LB_OK;
    return lb_path_clean_rel(in, strlen(in), out, outsz);
}

/* rel ("" the root itself) beneath dirfd: no link followed, no mount crossed, no
 * way out; a last component that is a link is opened as itself only with O_PATH */
static int lbvol_open(int dirfd, const char *rel, int flags)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    /* openat2 refuses O_PATH with any flag but O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC */
    how.flags = (uint64_t)(flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY));
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    return (int)syscall(SYS_openat2, dirfd, rel[0] ? rel : ".", &how, sizeof how);
}

static int lbvol_errno_status(int e, const char *path, const char *what, char *msg, size_t msgsz)
{
    switch (e) {
    case ENOENT:
        snprintf(msg, msgsz, "Path /%s not found.", path);
        return LB_E_NOTFOUND;
    case ELOOP:
    case EXDEV:
        snprintf(msg, msgsz, "/%s: a link is on the way (links in a volume are never followed).", path);
        return LB_E_INVAL;
    case ENOTDIR:
        snprintf(msg, msgsz, "/%s: a part of the path is not a folder.", path);
        return LB_E_INVAL;
    case EEXIST:
        snprintf(msg, msgsz, "/%s exists already.", path);
        return LB_E_EXISTS;
    case EISDIR:
        snprintf(msg, msgsz, "/%s is a folder.", path);
        return LB_E_ISDIR;
    case ENOTEMPTY:
        snprintf(msg, msgsz, "/%s is a folder that is not empty.", path);
        return LB_E_EXISTS;
    case ENOSPC:
    case EDQUOT:
        snprintf(msg, msgsz, "No space left for /%s.", path);
        return LB_E_NOSPACE;
    default:
        snprintf(msg, msgsz, "cannot %s /%s: %s", what, path, strerror(e));
        return LB_E_IO;
    }
}

/* Splits rel into its folder (a descriptor, *pfd) and its last name (*leaf
 * points into rel; NULL for the root). */
static int lbvol_parent(const lbvol_fs *v, char *rel, int *pfd, const char **leaf, char *msg, size_t msgsz)
{
    *leaf = NULL;
    char *slash = strrchr(rel, '/');
    if (!rel[0]) {
        *pfd = lbvol_open(v->data_fd, "", O_RDONLY | O_DIRECTORY);
    } else if (slash) {
        *slash = '\0';
        *pfd = lbvol_open(v->data_fd, rel, O_RDONLY | O_DIRECTORY);
        int e = errno;
        *slash = '/';
        errno = e;
        *leaf = slash + 1;
    } else {
        *pfd = lbvol_open(v->data_fd, "", O_RDONLY | O_DIRECTORY);
        *leaf = rel;
    }
    if (*pfd < 0)
        return lbvol_errno_status(errno, rel, "open the folder of", msg, msgsz);
    return LB_OK;
}

static void lbvol_time(char out[48], const struct timespec *t)
{
    struct tm tm;
    time_t s = t->tv_sec;
    gmtime_r(&s, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 48, "%s.%09ldZ", day, (long)t->tv_nsec);
}

/* The id inside a sandbox of an on-disk id (65534, nobody, when outside its range). */
static double lbvol_id_in(const lbvol_fs *v, uint32_t id)
{
    return id >= v->id_base && id - v->id_base < LBVOL_IDS ? (double)(id - v->id_base) : 65534.0;
}

/* E2B's VolumeEntryStat of name in dirfd ("" dirfd itself), shown as /rel. */
static cJSON *lbvol_entry(const lbvol_fs *v, int dirfd, const char *name, const char *rel)
{
    struct stat sb;
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH)) != 0)
        return NULL;
    const char *type = S_ISREG(sb.st_mode) ? "file" : S_ISDIR(sb.st_mode) ? "directory"
                       : S_ISLNK(sb.st_mode) ? "symlink" : "unknown";
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    char path[LB_PATH_MAX + 2], at[48], mt[48], ct[48];
    snprintf(path, sizeof path, "/%s", rel);
    lbvol_time(at, &sb.st_atim);
    lbvol_time(mt, &sb.st_mtim);
    lbvol_time(ct, &sb.st_ctim);
    cJSON *e = cJSON_CreateObject();
    int ok = e && cJSON_AddStringToObject(e, "name", base) && cJSON_AddStringToObject(e, "type", type) &&
             cJSON_AddStringToObject(e, "path", path) && cJSON_AddNumberToObject(e, "size", (double)sb.st_size) &&
             cJSON_AddNumberToObject(e, "mode", (double)(sb.st_mode & 07777)) &&
             cJSON_AddNumberToObject(e, "uid", lbvol_id_in(v, sb.st_uid)) &&
             cJSON_AddNumberToObject(e, "gid", lbvol_id_in(v, sb.st_gid)) && cJSON_AddStringToObject(e, "atime", at) &&
             cJSON_AddStringToObject(e, "mtime", mt) && cJSON_AddStringToObject(e, "ctime", ct);
    if (ok && S_ISLNK(sb.st_mode) && name[0]) {
        /* shown as text, never followed */
        char target[4097];
        ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
        if (n >= 0) {
            target[n] = '\0';
            ok = cJSON_AddStringToObject(e, "target", target) != NULL;
        }
    }
    if (!ok) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

int lbvol_fs_stat(const lbvol_fs *v, const char *path, cJSON **entry, char *msg, size_t msgsz)
{
    *entry = NULL;
    char rel[LB_PATH_MAX + 1];
    if (lbvol_fs_clean(path, rel, sizeof rel) != LB_OK) {
        snprintf(msg, msgsz, "The path is not one a volume may hold.");
        return LB_E_INVAL;
    }
    int pfd;
    const char *leaf;
    int rc = lbvol_parent(v, rel, &pfd, &leaf, msg, msgsz);
    if (rc != LB_OK)
        return rc;
    *entry = lbvol_entry(v, pfd, leaf ? leaf : "", rel);
    int e = errno;
    close(pfd);
    if (!*entry)
        return lbvol_errno_status(e, rel, "stat", msg, msgsz);
    return LB_OK;
}

/* The entries of dirfd (shown under /rel) into arr, depth levels down. */
static int lbvol_list_dir(const lbvol_fs *v, int dirfd, const char *rel, int depth, cJSON *arr, char *msg,
                          size_t msgsz)
{
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return lbvol_errno_status(errno, rel, "list", msg, msgsz);
    }
    int rc = LB_OK;
    struct dirent *de;
    while (rc == LB_OK && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char sub[LB_PATH_MAX + 1];
        int k = snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        if (k < 0 || (size_t)k >= sizeof sub)
            continue; /* longer than any path the API takes: not shown */
        if (cJSON_GetArraySize(arr) >= LBVOL_LIST_MAX) {
            snprintf(msg, msgsz, "More than %d entries: list a folder further down, or with a smaller depth.",
                     LBVOL_LIST_MAX);
            rc = LB_E_TOOBIG;
            break;
        }
        cJSON *e = lbvol_entry(v, dirfd, de->d_name, sub);
        if (!e)
            continue; /* gone meanwhile */
        cJSON_AddItemToArray(arr, e);
        if (depth > 1 && de->d_type == DT_DIR) {
            int sfd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sfd >= 0)
                rc = lbvol_list_dir(v, sfd, sub, depth - 1, arr, msg, msgsz);
        }
    }
    closedir(d);
    return rc;
}

int lbvol_fs_list(const lbvol_fs *v, const char *path, int depth, cJSON **entries, char *msg, size_t msgsz)
{
    *entries = NULL;
    char rel[LB_PATH_MAX + 1];
    if (lbvol_fs_clean(path, rel, sizeof rel) != LB_OK) {
        snprintf(msg, msgsz, "The path is not one a volume may hold.");
        return LB_E_INVAL;
    }
    if (depth < 1)
        depth = 1;
    if (depth > LBVOL_LIST_DEPTH) {
        snprintf(msg, msgsz, "depth is at most %d.", LBVOL_LIST_DEPTH);
        return LB_E_INVAL;
    }
    int fd = lbvol_open(v->data_fd, rel, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return lbvol_errno_status(errno, rel, "list", msg, msgsz);
    cJSON *arr = cJSON_CreateArray();
    if (!arr) {
        close(fd);
        return LB_E_NOMEM;
    }
    int rc = lbvol_list_dir(v, fd, rel, depth, arr, msg, msgsz);
    if (rc != LB_OK) {
        cJSON_Delete(arr);
        return rc;
    }
    *entries = arr;
    return LB_OK;
}

/* Sets a's ids and mode on the entry fd. */
static int lbvol_apply(const lbvol_fs *v, int fd, const lbvol_attrs *a)
{
    if (!a)
        return 0;
    uid_t u = a->uid >= 0 ? (uid_t)(v->id_base + (uint32_t)a->uid) : (uid_t)-1;
    gid_t g = a->gid >= 0 ? (gid_t)(v->id_base + (uint32_t)a->gid) : (gid_t)-1;
    if ((a->uid >= 0 || a->gid >= 0) && fchown(fd, u, g) != 0)
        return -1;
    if (a->mode >= 0 && fchmod(fd, (mode_t)(a->mode & 07777)) != 0)
        return -1;
    return 0;
}

static int lbvol_attrs_ok(const lbvol_attrs *a, char *msg, size_t msgsz)
{
    if (a && (a->uid >= (int64_t)LBVOL_IDS || a->gid >= (int64_t)LBVOL_IDS || a->mode > 07777)) {
        snprintf(msg, msgsz, "uid and gid are 0 to %u, mode 0 to 07777.", LBVOL_IDS - 1);
        return 0;
    }
    return 1;
}

/* Walks (and with make, makes) the folders of rel[0..n), each never through a
 * link; the new ones get the content's default owner (E2B's user) and a. */
static int lbvol_mkdirs(const lbvol_fs *v, const char *rel, size_t n, int make, int *out, char *msg, size_t msgsz)
{
    int fd = lbvol_open(v->data_fd, "", O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return lbvol_errno_status(errno, "", "open", msg, msgsz);
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && rel[j] != '/')
            j++;
        char comp[LB_NAME_MAX + 1];
        memcpy(comp, rel + i, j - i);
        comp[j - i] = '\0';
        int made = make && mkdirat(fd, comp, 0755) == 0;
        int sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        if (sub >= 0 && made) {
            lbvol_attrs own = {1000, 1000, -1};
            LB_IGNORE(lbvol_apply(v, sub, &own)); /* a folder left root's is still usable by root */
        }
        close(fd);
        if (sub < 0) {
            char shown[LB_PATH_MAX + 1];
            snprintf(shown, sizeof shown, "%.*s", (int)j, rel);
            return lbvol_errno_status(e, shown, "open", msg, msgsz);
        }
        fd = sub;
        i = j + 1;
    }
    *out = fd;
    return LB_OK;
}

int lbvol_fs_mkdir(const lbvol_fs *v, const char *path, const lbvol_attrs *a, int force, cJSON **entry, char *msg,
                   size_t msgsz)
{
    *entry = NULL;
    char rel[LB_PATH_MAX + 1];
    if (lbvol_fs_clean(path, rel, sizeof rel) != LB_OK || !rel[0]) {
        snprintf(msg, msgsz, "The path is not a folder a volume may make.");
        return LB_E_INVAL;
    }
    if (!lbvol_attrs_ok(a, msg, msgsz))
        return LB_E_INVAL;
    const char *slash = strrchr(rel, '/');
    const char *leaf = slash ? slash + 1 : rel;
    int pfd;
    int rc = lbvol_mkdirs(v, rel, slash ? (size_t)(slash - rel) : 0, force, &pfd, msg, msgsz);
    if (rc != LB_OK)
        return rc;
    if (mkdirat(pfd, leaf, 0755) != 0 && !(force && errno == EEXIST)) {
        rc = lbvol_errno_status(errno, rel, "make", msg, msgsz);
        close(pfd);
        return rc;
    }
    int fd = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    lbvol_attrs d = {a && a->uid >= 0 ? a->uid : 1000, a && a->gid >= 0 ? a->gid : 1000, a ? a->mode : -1};
    if (fd < 0 || lbvol_apply(v, fd, &d) != 0) {
        rc = lbvol_errno_status(errno, rel, "make", msg, msgsz);
        if (fd >= 0)
            close(fd);
        close(pfd);
        return rc;
    }
    close(fd);
    *entry = lbvol_entry(v, pfd, leaf, rel);
    close(pfd);
    return *entry ? LB_OK : LB_E_NOMEM;
}

int lbvol_fs_read(const lbvol_fs *v, const char *path, size_t max, char **data, size_t *len, char *msg, size_t msgsz)
{
    *data = NULL;
    *len = 0;
    char rel[LB_PATH_MAX + 1];
    if (lbvol_fs_clean(path, rel, sizeof rel) != LB_OK || !rel[0]) {
        snprintf(msg, msgsz, "The path is not a file a volume may hold.");
        return LB_E_INVAL;
    }
    /* O_NONBLOCK: a fifo a sandbox left there does not hang the read */
    int fd = lbvol_open(v->data_fd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return lbvol_errno_status(errno, rel, "read", msg, msgsz);
    struct stat sb;
    int rc = LB_OK;
    if (fstat(fd, &sb) != 0) {
        rc = lbvol_errno_status(errno, rel, "read", msg, msgsz);
    } else if (S_ISDIR(sb.st_mode)) {
        rc = lbvol_errno_status(EISDIR, rel, "read", msg, msgsz);
    } else if (!S_ISREG(sb.st_mode)) {
        snprintf(msg, msgsz, "/%s is not a regular file.", rel);
        rc = LB_E_INVAL;
    } else if ((uint64_t)sb.st_size > max) {
        snprintf(msg, msgsz, "/%s is larger than %zu bytes, the most one read returns.", rel, max);
        rc = LB_E_TOOBIG;
    }
    char *buf = rc == LB_OK ? malloc((size_t)sb.st_size + 1) : NULL;
    if (rc == LB_OK && !buf)
        rc = LB_E_NOMEM;
    size_t n = 0;
    while (rc == LB_OK && n < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)sb.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            rc = lbvol_errno_status(errno, rel, "read", msg, msgsz);
        if (r <= 0)
            break; /* shorter meanwhile: what is there */
        n += (size_t)r;
    }
    close(fd);
    if (rc != LB_OK) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = n;
    return LB_OK;
}

uint64_t lbvol_fs_size_of(const lbvol_fs *v, const char *path)
{
    char rel[LB_PATH_MAX + 1];
    if (lbvol_fs_clean(path, rel, sizeof rel) != LB_OK || !rel[0])
        return 0;
    int fd = lbvol_open(v->data_fd, rel, O_PATH | O_NOFOLLOW);
    struct stat sb;
    uint64_t n = fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
    if (fd >= 0)
        close(fd);
    return n;
}

int lbvol_fs_write(const lbvol_fs *v, const char *path, const void *data, size_t len, const lbvol_attrs *a, int force,
                   cJSON **entry, char *msg, size_t msgsz)
{
    *entry = NULL;
    char rel[LB_PATH_MAX + 1];
    if (lbvol_fs_clean(path, rel, sizeof rel) != LB_OK || !rel[0]) {
        snprintf(msg, msgsz, "The path is not a file a volume may hold.");
        return LB_E_INVAL;
    }
    if (len > LBVOL_FILE_MAX) {
        snprintf(msg, msgsz, "A file in a volume is at most %u bytes.", LBVOL_FILE_MAX);
        return LB_E_TOOBIG;
    }
    if (!lbvol_attrs_ok(a, msg, msgsz))
        return LB_E_INVAL;
    const char *slash = strrchr(rel, '/');
    const char *leaf = slash ? slash + 1 : rel;
    int pfd;
    int rc = lbvol_mkdirs(v, rel, slash ? (size_t)(slash - rel) : 0, force, &pfd, msg, msgsz);
    if (rc != LB_OK)
        return rc;
    char tmp[64], hex[17];
    if (lb_random_hex(hex, sizeof hex, 8) != LB_OK) {
        close(pfd);
        snprintf(msg, msgsz, "no random bytes for a temporary name");
        return LB_E_IO;
    }
    snprintf(tmp, sizeof tmp, ".lbvol-%s", hex);
    int fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = lbvol_errno_status(errno, rel, "write", msg, msgsz);
        close(pfd);
        return rc;
    }
    lbvol_attrs d = {a && a->uid >= 0 ? a->uid : 1000, a && a->gid >= 0 ? a->gid : 1000, a ? a->mode : -1};
    size_t n = 0;
    int bad = lbvol_apply(v, fd, &d) != 0;
    while (!bad && n < len) {
        ssize_t w = write(fd, (const char *)data + n, len - n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            bad = 1;
            break;
        }
        n += (size_t)w;
    }
    int e = errno;
    if (!bad && fsync(fd) != 0)
        bad = 1, e = errno;
    close(fd);
    /* the rename replaces whatever has the name (a link included) and never follows it */
    if (!bad && renameat(pfd, tmp, pfd, leaf) != 0)
        bad = 1, e = errno;
    if (bad) {
        unlinkat(pfd, tmp, 0);
        rc = lbvol_errno_status(e, rel, "write", msg, msgsz);
        close(pfd);
        return rc;
    }
    *entry = lbvol_entry(v, pfd, leaf, rel);
    close(pfd);
    return *entry ? LB_OK : LB_E_NOMEM;
}

/* Removes name in dirfd and, for a folder, what it holds (depth levels at most). */
static int lbvol_rm(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    if (depth > LBVOL_WALK_DEPTH_RM) {
        errno = E2BIG; /* said as "too deep" by lbvol_fs_remove */
        return -1;
    }
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct dirent *de;
    int r = 0;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (lbvol_rm(fd, de->d_name, depth + 1) != 0) {
            r = -1;
            break;
        }
    }
    int e = errno;
    closedir(d);
    if (r != 0) {
        errno = e;
        return -1;
    }
    return unlinkat(dirfd, name, AT_REMOVEDIR);
}

int lbvol_fs_remove(const lbvol_fs *v, const char *path, char *msg, size_t msgsz)
{
    char rel[LB_PATH_MAX + 1];
    if (lbvol_fs_clean(path, rel, sizeof rel) != LB_OK || !rel[0]) {
        snprintf(msg, msgsz, "The path is not an entry a volume may remove (the volume's root is destroyed with it).");
        return LB_E_INVAL;
    }
    int pfd;
    const char *leaf;
    int rc = lbvol_parent(v, rel, &pfd, &leaf, msg, msgsz);
    if (rc != LB_OK)
        return rc;
    if (lbvol_rm(pfd, leaf, 0) != 0) {
        if (errno == E2BIG) {
            snprintf(msg, msgsz, "/%s holds folders more than %d levels deep: remove a deeper one first.", rel,
                     LBVOL_WALK_DEPTH_RM);
            rc = LB_E_TOOBIG;
        } else {
            rc = lbvol_errno_status(errno, rel, "remove", msg, msgsz);
        }
    }
    close(pfd);
    return rc;
}

int lbvol_fs_chmeta(const lbvol_fs *v, const char *path, const lbvol_attrs *a, cJSON **entry, char *msg,
                    size_t msgsz)
{
    *entry = NULL;
    char rel[LB_PATH_MAX + 1];
    if (lbvol_fs_clean(path, rel, sizeof rel) != LB_OK) {
        snprintf(msg, msgsz, "The path is not one a volume may hold.");
        return LB_E_INVAL;
    }
    if (!lbvol_attrs_ok(a, msg, msgsz))
        return LB_E_INVAL;
    int pfd;
    const char *leaf;
    int rc = lbvol_parent(v, rel, &pfd, &leaf, msg, msgsz);
    if (rc != LB_OK)
        return rc;
    /* a descriptor of the entry itself: a link is refused (ELOOP), never followed */
    int fd = leaf ? openat(pfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) : dup(pfd);
    if (fd < 0 || lbvol_apply(v, fd, a) != 0) {
        rc = lbvol_errno_status(errno, rel, "change", msg, msgsz);
        if (fd >= 0)
            close(fd);
        close(pfd);
        return rc;
    }
    close(fd);
    *entry = lbvol_entry(v, pfd, leaf ? leaf : "", rel);
    close(pfd);
    return *entry ? LB_OK : LB_E_NOMEM;
}
