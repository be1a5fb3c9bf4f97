/* Bundles of a finished task's results as one .zip or .tar.gz, with
 * libarchive.
 *
 * The whole-task bundle (everything under output/, answer.txt and
 * trajectory.json) is built once and kept next to the outputs
 * (artifacts/<id>/bundle.<format>), so nginx serves it with ranges and
 * validators: at most two such files per task (zip and tar.gz), each
 * within the output cap plus 64 MiB.
 *
 * A folder bundle (?path=plots) holds that folder of the output alone, as
 * "plots/...". It is built once as well, into
 * artifacts/<id>/fbundle-<hash of the folder>.<format>, and nginx serves
 * it the same way. Kept without a bound, every level of a deep output
 * could be bundled once more each (20 levels turned a 191 MB output into
 * 4 GB of kept bundles), so a task keeps at most LB_BUNDLE_FOLDERS_KEPT
 * folder bundles and no more bytes of them than its output cap: building
 * one more removes the oldest. Built in the request, as before, folder
 * bundles took every web thread (40 requests of one user for a 40 MB
 * folder froze everyone's task list for 17 s): now concurrent requests
 * for one bundle wait for one build, and a build takes one of
 * bundle_max_building places, at most bundle_max_per_user of them per
 * user; a request that finds none is refused at once (503 or 429 with
 * Retry-After). A bundle already built takes no place.
 *
 * Who may have a bundle, and of what: artifact_access.c. The output tree
 * was written by code running in a sandbox, so the walk trusts nothing in
 * it: directories are opened with O_NOFOLLOW relative to
 * their parent (no path is ever re-resolved), symlinks and special files
 * are skipped, names that lb_path_clean_rel refuses (backslashes, control
 * characters, bad UTF-8) are skipped so no unzip tool can be steered, and
 * the entry count, total size and depth are capped. Deleting the task
 * removes its folder, bundles included.
 */
#include "web/bundle.h"

#include "web/http.h"
#include "common/path.h"
#include "store/store.h"
#include "web/artifact_access.h"
#include "web/work_slots.h"
#include "common/token.h"
#include "web/task_json.h"
#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LB_BUNDLE_DEPTH_MAX 32
#define LB_BUNDLE_FOLDER_PREFIX "fbundle-"
#define LB_BUNDLE_FOLDERS_KEPT 8   /* folder bundles a task keeps: a few folders asked for in turn */
#define LB_BUNDLE_FOLDERS_SEEN 256 /* kept ones looked at when evicting: more than KEPT ever leaves */
#define LB_BUNDLE_NICE 10 /* a build's thread, while it deflates: the API's threads go first on a busy CPU */

typedef struct lb_bundle {
    struct archive *a;
    int zip;
    uint64_t total, max_total;
    size_t entries, max_entries;
    char *err;
    size_t errsz;
    char copybuf[65536];
} lb_bundle;

/* Media and archives are compressed already: deflating them again costs
 * CPU and saves nothing. WAV is raw PCM, but audio barely deflates (a few
 * percent for anything but silence), so it is stored too; PDF streams are
 * deflated inside the file. */
static int lb_precompressed(const char *name)
{
    static const char *const ext[] = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".heic", ".mp4",
                                      ".m4v", ".webm", ".mkv", ".mov", ".m4a", ".aac", ".mp3", ".ogg",
                                      ".oga", ".opus", ".flac", ".wav", ".pdf", ".woff2", ".zip", ".gz",
                                      ".tgz", ".xz", ".bz2", ".zst", ".7z", ".docx", ".xlsx", ".pptx"};
    const char *dot = strrchr(name, '.');
    if (!dot || strchr(dot, '/'))
        return 0;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (!strcasecmp(dot, ext[i]))
            return 1;
    return 0;
}

static int lb_bundle_fail(lb_bundle *b, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lb_bundle_fail(lb_bundle *b, int rc, const char *fmt, ...)
{
    int e = b->a && archive_errno(b->a) ? archive_errno(b->a) : errno;
    if (rc == LB_E_IO && (e == ENOSPC || e == EDQUOT))
        rc = LB_E_NOSPACE; /* 507, not 500: it works again once there is room */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, b->errsz, fmt, ap);
    va_end(ap);
    return rc;
}

/* Adds one entry `name` with size bytes read from fd (fd < 0: from mem). */
static int lb_bundle_add(lb_bundle *b, const char *name, int fd, const char *mem, uint64_t size, time_t mtime)
{
    if (++b->entries > b->max_entries)
        return lb_bundle_fail(b, LB_E_TOOBIG,
                              "The task has more than %zu files, the most a bundle holds; download them one by one.",
                              b->max_entries);
    if (size > b->max_total - b->total)
        return lb_bundle_fail(b, LB_E_TOOBIG,
                              "The outputs are larger than the bundle limit of %llu MiB; download the files one by one.",
                              (unsigned long long)(b->max_total >> 20));
    b->total += size;
    if (!b->a)
        return LB_OK; /* a dry run: counting only, so caps are answered before the head */
    /* per entry: these two may be called between entries, unlike the
     * "compression" format option */
    if (b->zip && (lb_precompressed(name) ? archive_write_zip_set_compression_store(b->a)
                                          : archive_write_zip_set_compression_deflate(b->a)) != ARCHIVE_OK)
        return lb_bundle_fail(b, LB_E_INTERNAL, "libarchive: %s", archive_error_string(b->a));
    struct archive_entry *e = archive_entry_new();
    if (!e)
        return lb_bundle_fail(b, LB_E_NOMEM, "out of memory");
    /* Names are UTF-8 bytes (lb_path_clean_rel checked). zip marks them as
     * UTF-8; the GNU tar format stores the bytes as they are (pax would
     * want a locale conversion that the C locale cannot do). */
    if (b->zip)
        archive_entry_set_pathname_utf8(e, name);
    else
        archive_entry_copy_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_mtime(e, mtime, 0);
    int rc = LB_OK;
    if (archive_write_header(b->a, e) != ARCHIVE_OK) {
        rc = lb_bundle_fail(b, LB_E_IO, "cannot add %s: %s", name, archive_error_string(b->a));
        goto out;
    }
    uint64_t left = size;
    while (left) {
        size_t want = left < sizeof b->copybuf ? (size_t)left : sizeof b->copybuf;
        const char *p;
        ssize_t n;
        if (fd >= 0) {
            n = read(fd, b->copybuf, want);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break; /* the file shrank: the archive pads the entry */
            p = b->copybuf;
        } else {
            p = mem + (size - left);
            n = (ssize_t)want;
        }
        if (archive_write_data(b->a, p, (size_t)n) < 0) {
            rc = lb_bundle_fail(b, LB_E_IO, "cannot write %s: %s", name, archive_error_string(b->a));
            goto out;
        }
        left -= (uint64_t)n;
    }
    if (archive_write_finish_entry(b->a) != ARCHIVE_OK)
        rc = lb_bundle_fail(b, LB_E_IO, "cannot finish %s: %s", name, archive_error_string(b->a));
out:
    archive_entry_free(e);
    return rc;
}

/* Adds the regular file `name` in directory dfd as entry `entry`. */
static int lb_bundle_add_file(lb_bundle *b, int dfd, const char *name, const char *entry)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT || errno == ELOOP ? LB_OK : lb_bundle_fail(b, LB_E_IO, "cannot open %s: %s", entry, strerror(errno));
    struct stat st;
    int rc = LB_OK;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        rc = lb_bundle_add(b, entry, fd, NULL, (uint64_t)st.st_size, st.st_mtime);
    close(fd);
    return rc;
}

static int lb_bundle_walk(lb_bundle *b, int dfd, const char *prefix, int depth)
{
    if (depth > LB_BUNDLE_DEPTH_MAX)
        return LB_OK; /* deeper folders are left out, like symlinks */
    int fd2 = dup(dfd);
    if (fd2 < 0)
        return lb_bundle_fail(b, LB_E_IO, "cannot read the output folder: %s", strerror(errno));
    DIR *d = fdopendir(fd2);
    if (!d) {
        close(fd2);
        return lb_bundle_fail(b, LB_E_IO, "cannot read the output folder: %s", strerror(errno));
    }
    /* the dup shares dfd's position: a second walk of the same folder (the
     * dry run, then the real one) starts from the top again */
    rewinddir(d);
    int rc = LB_OK;
    struct dirent *de;
    char entry[LB_PATH_MAX + 16];
    while (rc == LB_OK && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        int n = snprintf(entry, sizeof entry, "%s/%s", prefix, de->d_name);
        if (n < 0 || (size_t)n >= sizeof entry)
            continue;
        /* the entry name must be a clean relative path as it is */
        if (!lb_artifact_path_ok(entry, (size_t)n))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISREG(st.st_mode)) {
            rc = lb_bundle_add_file(b, dirfd(d), de->d_name, entry);
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                continue;
            rc = lb_bundle_walk(b, sub, entry, depth + 1);
            close(sub);
        }
    }
    closedir(d);
    return rc;
}

int lb_bundle_name(const char *format, char *out, size_t outsz)
{
    int n = snprintf(out, outsz, "bundle.%s", format);
    return n < 0 || (size_t)n >= outsz ? LB_E_TOOBIG : LB_OK;
}

/* Opens the archive writer of b for its format, writing to fd. */
static int lb_bundle_open(lb_bundle *b, int fd);

/* A folder of ours to sweep, opened without following a link in its last
 * component (a task's folder is written by its agent); NULL when it is
 * not there or not a folder. */
static DIR *lb_opendir_nofollow(const char *path)
{
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d && dfd >= 0)
        close(dfd);
    return d;
}

/* Removes "<final>.tmp.*" files: half-written bundles of a builder that
 * died (a web killed in the middle of one). Called under the lock, so no
 * live builder owns any of them. */
static void lb_bundle_sweep(const char *final)
{
    char dirpath[LB_CFG_PATH + 160], prefix[128];
    snprintf(dirpath, sizeof dirpath, "%s", final);
    char *slash = strrchr(dirpath, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(prefix, sizeof prefix, "%s.tmp.", slash + 1);
    DIR *d = lb_opendir_nofollow(dirpath);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, prefix, strlen(prefix)) && unlinkat(dirfd(d), de->d_name, 0) == 0)
            lb_info("web: removed %s/%s, a bundle left half-written", dirpath, de->d_name);
    closedir(d);
}

/* The kept whole-task bundle at final is of the task's last round: not
 * older than its trajectory.json, which every round rewrites (on another
 * host, a web's copy is refreshed from the object store before a bundle:
 * then newer than a bundle this web built of an earlier round; the web
 * that took a message removes its own). */
static int lb_bundle_current(const char *dir, const char *final)
{
    struct stat b, t;
    char traj[LB_CFG_PATH + 96];
    if (lstat(final, &b) != 0 || !S_ISREG(b.st_mode))
        return 0;
    snprintf(traj, sizeof traj, "%s/trajectory.json", dir);
    if (lstat(traj, &t) != 0)
        return 1; /* no record (an agent that died first): the bundle as built */
    return b.st_mtim.tv_sec > t.st_mtim.tv_sec ||
           (b.st_mtim.tv_sec == t.st_mtim.tv_sec && b.st_mtim.tv_nsec >= t.st_mtim.tv_nsec);
}

/* A folder bundle's file, relative to artifacts/<id>/: the folder's name
 * hashed (any clean relative path, never a name of its own in the
 * folder). */
static int lb_bundle_folder_name(const char *format, const char *folder, char *out, size_t outsz)
{
    char h[LB_SHA256_HEX];
    if (lb_sha256_hex(folder, strlen(folder), h) != LB_OK)
        return LB_E_INTERNAL;
    int n = snprintf(out, outsz, "%s%.32s.%s", LB_BUNDLE_FOLDER_PREFIX, h, format);
    return n < 0 || (size_t)n >= outsz ? LB_E_TOOBIG : LB_OK;
}

typedef struct lb_kept {
    char name[96];
    uint64_t size;
    struct timespec mtime;
} lb_kept;

static int lb_kept_newer_first(const void *a, const void *b)
{
    const lb_kept *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : x->mtime.tv_nsec > y->mtime.tv_nsec ? -1 : 0;
}

/* Keeps a task's folder bundles within LB_BUNDLE_FOLDERS_KEPT files and
 * cap bytes, newest first, `built` (just made) always. Under the lock.
 * A bundle removed while nginx sends it goes on being sent (nginx holds
 * it open); one removed between our answer and nginx's open is a 404, and
 * asking again builds it again. */
static void lb_bundle_evict(const char *dir, const char *built, uint64_t cap)
{
    DIR *d = lb_opendir_nofollow(dir);
    if (!d)
        return;
    lb_kept kept[LB_BUNDLE_FOLDERS_SEEN];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < LB_BUNDLE_FOLDERS_SEEN) {
        struct stat st;
        if (strncmp(de->d_name, LB_BUNDLE_FOLDER_PREFIX, strlen(LB_BUNDLE_FOLDER_PREFIX)) ||
            strstr(de->d_name, ".tmp.") || !strcmp(de->d_name, built) || strlen(de->d_name) >= sizeof kept[0].name ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        snprintf(kept[n].name, sizeof kept[n].name, "%s", de->d_name);
        kept[n].size = (uint64_t)st.st_size;
        kept[n].mtime = st.st_mtim;
        n++;
    }
    struct stat bst;
    uint64_t total = fstatat(dirfd(d), built, &bst, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)bst.st_size : 0;
    qsort(kept, n, sizeof kept[0], lb_kept_newer_first);
    for (size_t i = 0; i < n; i++) {
        total += kept[i].size;
        if ((i + 1 < LB_BUNDLE_FOLDERS_KEPT && total <= cap) || unlinkat(dirfd(d), kept[i].name, 0) != 0)
            continue;
        total -= kept[i].size;
        lb_info("web: removed %s/%s, an older folder bundle (a task keeps %d, within its output cap)", dir,
                kept[i].name, LB_BUNDLE_FOLDERS_KEPT);
    }
    closedir(d);
}

/* Builds (once) the bundle of task id's output folder `folder` ("" for
 * the whole task, with answer.txt and trajectory.json) into
 * artifacts/<id>/<name>. Concurrent builders of one task take turns on
 * its lock, and a later one finds the file made. */
static int lb_bundle_make(const lb_config *cfg, lb_store *s, const char *id, const char *format, const char *folder,
                          const char *name, char *err, size_t errsz)
{
    char dir[LB_CFG_PATH + 64], final[LB_CFG_PATH + 160], tmp[LB_CFG_PATH + 200], rnd[17];
    char lockpath[LB_CFG_PATH + 96];
    int zip = !strcmp(format, "zip");
    lb_bundle *b = NULL;
    cJSON *task = NULL;
    int fd = -1, sub = -1, outfd = -1, lockfd = -1, rc;
    err[0] = '\0';
    tmp[0] = '\0';
    snprintf(dir, sizeof dir, "%s/%s", cfg->artifacts_dir, id);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    if (lb_bundle_current(dir, final))
        return LB_OK; /* a round's end never changes: build once per round */

    /* one builder at a time per task; the others wait, then find it built */
    snprintf(lockpath, sizeof lockpath, "%s/.bundle.lock", dir);
    lockfd = open(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (lockfd < 0 || flock(lockfd, LOCK_EX) != 0) {
        int e = errno;
        if (e == ENOENT) {
            snprintf(err, errsz, "The task's files are gone.");
            rc = LB_E_NOTFOUND;
        } else {
            snprintf(err, errsz, "cannot lock the bundle: %s", strerror(e));
            rc = LB_E_IO;
        }
        goto out;
    }
    if (lb_bundle_current(dir, final)) {
        rc = LB_OK;
        goto out;
    }
    lb_bundle_sweep(final); /* a last round's bundle is replaced by the rename below */

    b = calloc(1, sizeof *b);
    if (!b) {
        rc = LB_E_NOMEM;
        goto out;
    }
    b->zip = zip;
    b->err = err;
    b->errsz = errsz;
    b->max_total = cfg->max_output_bytes + (folder[0] ? 0 : (64u << 20)); /* + trajectory and answer */
    b->max_entries = (size_t)cfg->max_output_files + (folder[0] ? 0 : 2);
    char out_dir[sizeof dir + 16];
    snprintf(out_dir, sizeof out_dir, "%s/output", dir);
    fd = open(out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (folder[0]) {
        sub = fd < 0 ? -1 : lb_artifact_open_dir(fd, folder);
        if (sub < 0) {
            snprintf(err, errsz, "The task has no output folder \"%s\".", folder);
            rc = LB_E_NOTFOUND;
            goto out;
        }
    } else if ((rc = lb_store_task_get(s, id, &task)) != LB_OK) {
        snprintf(err, errsz, "cannot read the task: %s", lb_strerror(rc));
        goto out;
    }
    if (lb_random_hex(rnd, sizeof rnd, 8) != LB_OK) {
        rc = LB_E_IO;
        goto out;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%s", final, rnd);
    outfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (outfd < 0) {
        rc = lb_bundle_fail(b, LB_E_IO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    if ((rc = lb_bundle_open(b, outfd)) != LB_OK)
        goto out;
    if (folder[0]) {
        /* the folder's own name is the top of the bundle: plots/2024 -> 2024/... */
        const char *top = strrchr(folder, '/');
        if ((rc = lb_bundle_walk(b, sub, top ? top + 1 : folder, 0)) != LB_OK)
            goto out;
    } else {
        if (fd >= 0 && (rc = lb_bundle_walk(b, fd, "output", 0)) != LB_OK)
            goto out;
        const char *answer = cJSON_GetStringValue(cJSON_GetObjectItem(task, "answer"));
        if (answer && (rc = lb_bundle_add(b, "answer.txt", -1, answer, strlen(answer), time(NULL))) != LB_OK)
            goto out;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd >= 0) {
            rc = lb_bundle_add_file(b, dfd, "trajectory.json", "trajectory.json");
            close(dfd);
            if (rc)
                goto out;
        }
    }
    if (archive_write_close(b->a) != ARCHIVE_OK) {
        rc = lb_bundle_fail(b, LB_E_IO, "cannot finish the archive: %s", archive_error_string(b->a));
        goto out;
    }
    if (fsync(outfd) != 0 || close(outfd) != 0) {
        outfd = -1;
        rc = lb_bundle_fail(b, LB_E_IO, "cannot write the archive: %s", strerror(errno));
        goto out;
    }
    outfd = -1;
    if (rename(tmp, final) != 0) {
        rc = lb_bundle_fail(b, LB_E_IO, "cannot rename the archive into place: %s", strerror(errno));
        goto out;
    }
    if (folder[0])
        lb_bundle_evict(dir, name, cfg->max_output_bytes);
    lb_info("web: task %s: built %s%s%s (%zu entries, %llu bytes of content)", id, name, folder[0] ? " of " : "",
            folder, b->entries, (unsigned long long)b->total);
    rc = LB_OK;
out:
    if (b && b->a)
        archive_write_free(b->a); /* also closes a half-written archive */
    if (outfd >= 0)
        close(outfd);
    if (sub >= 0)
        close(sub);
    if (fd >= 0)
        close(fd);
    if (rc != LB_OK && tmp[0])
        unlink(tmp);
    if (lockfd >= 0)
        close(lockfd); /* releases the lock */
    free(b);
    cJSON_Delete(task);
    return rc;
}

int lb_bundle_build(const lb_config *cfg, lb_store *s, const char *id, const char *format, char *err,
                    size_t errsz)
{
    char name[96];
    if (lb_bundle_name(format, name, sizeof name) != LB_OK) {
        snprintf(err, errsz, "cannot name the bundle");
        return LB_E_TOOBIG;
    }
    return lb_bundle_make(cfg, s, id, format, "", name, err, errsz);
}

/* ---- the writer ---- */

static int lb_bundle_open(lb_bundle *b, int fd)
{
    b->a = archive_write_new();
    if (!b->a)
        return lb_bundle_fail(b, LB_E_NOMEM, "out of memory");
    int ok = b->zip ? archive_write_set_format_zip(b->a) == ARCHIVE_OK &&
                          archive_write_set_format_option(b->a, "zip", "hdrcharset", "UTF-8") == ARCHIVE_OK
                    : archive_write_set_format_gnutar(b->a) == ARCHIVE_OK &&
                          archive_write_add_filter_gzip(b->a) == ARCHIVE_OK;
    if (ok)
        ok = archive_write_open_fd(b->a, fd) == ARCHIVE_OK;
    if (!ok)
        return lb_bundle_fail(b, LB_E_INTERNAL, "libarchive: %s", archive_error_string(b->a));
    return LB_OK;
}

/* Removes folder bundles that earlier versions kept under
 * artifacts/<id>/bundles/ (they are in fbundle-* files now), so an
 * upgraded install gets that disk back the next time someone asks for
 * one. */
static void lb_bundle_drop_kept(const char *artifacts_dir, const char *id)
{
    char bdir[LB_CFG_PATH + 64];
    snprintf(bdir, sizeof bdir, "%s/%s/bundles", artifacts_dir, id);
    DIR *d = lb_opendir_nofollow(bdir);
    if (!d)
        return;
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.' && unlinkat(dirfd(d), de->d_name, 0) == 0)
            n++;
    closedir(d);
    if (rmdir(bdir) == 0 || n)
        lb_info("web: task %s: removed %d kept folder bundles of an earlier version", id, n);
}

/* A build deflates tens of MB: on a machine with two cores, two builds
 * made everyone's task list wait for CPU (p99 0.8 s) though threads were
 * free. So the building thread runs at a lower priority and comes back
 * to its own after; only where it may come back (RLIMIT_NICE, which the
 * web raises while it is root), since worker threads serve every request
 * after this one. Returns the nice value to restore, or INT_MIN for none. */
static int lb_bundle_nice_down(void)
{
    struct rlimit rl;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    errno = 0;
    int was = getpriority(PRIO_PROCESS, (id_t)tid);
    if ((was == -1 && errno) || was >= LB_BUNDLE_NICE || getrlimit(RLIMIT_NICE, &rl) != 0 ||
        (rl.rlim_cur != RLIM_INFINITY && (long long)rl.rlim_cur < 20 - was) ||
        setpriority(PRIO_PROCESS, (id_t)tid, LB_BUNDLE_NICE) != 0)
        return INT_MIN;
    return was;
}

static void lb_bundle_nice_back(int was)
{
    if (was != INT_MIN && setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), was) != 0)
        lb_warn("web: cannot restore a bundle builder's thread priority: %s", strerror(errno));
}

/* Builds in r's thread: one place of the bounded few (work_slots.h). */
static lb_slots lb_bundle_slots = LB_SLOTS_INIT;

void lb_bundle_serve(lb_req *r, const char *format, const char *folder, const char *disposition)
{
    char name[96], dir[LB_CFG_PATH + 64], final[LB_CFG_PATH + 160], key[LB_SLOT_KEY_MAX], err[512] = "";
    char uri[256];
    const lb_config *cfg = r->cfg;
    int rc = folder[0] ? lb_bundle_folder_name(format, folder, name, sizeof name)
                       : lb_bundle_name(format, name, sizeof name);
    if (rc != LB_OK) {
        lb_http_error(r, 500, NULL, "Could not name the bundle's file.");
        return;
    }
    snprintf(dir, sizeof dir, "%s/%s", cfg->artifacts_dir, r->id);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    if (folder[0])
        lb_bundle_drop_kept(cfg->artifacts_dir, r->id); /* an open() that fails, once they are gone */
    if (!lb_bundle_current(dir, final)) {
        const char *addr = lb_http_param(r, "REMOTE_ADDR");
        /* per user with users; without, per address (nginx's, never a header) */
        if (r->user)
            snprintf(key, sizeof key, "u:%s", r->user->name);
        else
            snprintf(key, sizeof key, "a:%s", addr && *addr ? addr : "?");
        rc = lb_slots_take(&lb_bundle_slots, cfg->bundle_max_building, cfg->bundle_max_per_user, key);
        if (rc == LB_E_TOOBIG) {
            lb_http_error_hdr(r, 429, "too_many_bundles", "Retry-After: 5\r\n",
                              "%s already has %d bundles being built, the most one may have "
                              "(LLMBOX_BUNDLE_MAX_PER_USER); try again once they are done.",
                              r->user ? "This user" : "This client address", cfg->bundle_max_per_user);
            return;
        }
        if (rc != LB_OK) {
            lb_http_error_hdr(r, 503, "bundles_busy", "Retry-After: 5\r\n",
                              "The server is already building %d bundles, the most it builds at once so that "
                              "other requests are still answered (LLMBOX_BUNDLE_MAX_BUILDING); try again in a "
                              "moment.", cfg->bundle_max_building);
            return;
        }
        int was = lb_bundle_nice_down();
        rc = lb_bundle_make(cfg, r->store, r->id, format, folder, name, err, sizeof err);
        lb_bundle_nice_back(was);
        lb_slots_release(&lb_bundle_slots, key);
        if (rc == LB_E_TOOBIG) {
            lb_http_error(r, 413, NULL, "%s", err);
            return;
        }
        if (rc == LB_E_NOTFOUND) {
            lb_http_error(r, 404, "not_found", "%s", err[0] ? err : "The task's files are gone.");
            return;
        }
        if (rc == LB_E_NOSPACE) {
            lb_http_disk_full(r, "build the bundle (the files can still be downloaded one by one)");
            return;
        }
        if (rc != LB_OK) {
            lb_error("web: task %s: %s%s%s: %s", r->id, name, folder[0] ? " of " : "", folder, err);
            lb_http_error(r, 500, NULL, "Could not build the bundle: %s", err[0] ? err : lb_strerror(rc));
            return;
        }
    }
    snprintf(uri, sizeof uri, "/_artifacts/%s/%s", r->id, name);
    lb_http_accel(r, uri, strcmp(format, "zip") ? "application/gzip" : "application/zip", disposition);
}
