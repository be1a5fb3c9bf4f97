/* Unpacking uploaded archives safely; see unpack.h for the rules. */
#include "web/unpack.h"

#include "common/config.h"
#include "common/path.h"
#include "common/status.h"
#include "common/util.h"
#include "web/http.h"
#include "web/request.h"
#include "web/work_slots.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define LB_UNPACK_CHUNK 65536

static int lb_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && !strcasecmp(s + n - m, suffix);
}

lb_archive_kind lb_archive_kind_of(const char *name)
{
    if (lb_ends_with(name, ".zip"))
        return LB_ARCHIVE_ZIP;
    if (lb_ends_with(name, ".tar.gz") || lb_ends_with(name, ".tgz"))
        return LB_ARCHIVE_TAR_GZ;
    if (lb_ends_with(name, ".tar"))
        return LB_ARCHIVE_TAR;
    return LB_ARCHIVE_NONE;
}

/* libarchive converts entry names to the locale's charset, and the C
 * locale cannot hold a zip's UTF-8 names; the unpacking thread switches to
 * C.UTF-8 for the call (uselocale: the other threads are not touched). */
static pthread_once_t lb_utf8_once = PTHREAD_ONCE_INIT;
static locale_t lb_utf8_locale;

static void lb_utf8_init(void)
{
    lb_utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

typedef struct lb_unpacker {
    struct archive *a;
    const char *shown;
    const lb_unpack_limits *lim;
    lb_unpack_totals *tot;
    uint64_t archive_size, written; /* this archive */
    char *err;
    size_t errsz;
    char buf[LB_UNPACK_CHUNK];
} lb_unpacker;

static int lb_unpack_fail(lb_unpacker *u, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lb_unpack_fail(lb_unpacker *u, int rc, const char *fmt, ...)
{
    if (rc == LB_E_IO && (errno == ENOSPC || errno == EDQUOT))
        rc = LB_E_NOSPACE; /* the caller answers 507, not 500 */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->err, u->errsz, fmt, ap);
    va_end(ap);
    return rc;
}

/* A name as it may appear in a message: printable ASCII, capped. */
static void lb_shown_name(const char *in, char *out, size_t outsz)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 4 < outsz; p++)
        out[o++] = (*p < 0x20 || *p == 0x7f) ? '?' : (char)*p;
    if (*in && o + 4 >= outsz && strlen(in) > o) {
        out[o++] = '.';
        out[o++] = '.';
        out[o++] = '.';
    }
    out[o] = '\0';
}

static const char *lb_arch_msg(struct archive *a)
{
    const char *m = archive_error_string(a);
    return m && *m ? m : "unknown error";
}

/* Opens (creating when missing) the folder rel (clean, may be "") under
 * root_fd, one component at a time, never through a link. Returns an fd,
 * or minus an lb_status (LB_E_EXISTS: a file is in the way) with the
 * reason in u->err. */
static int lb_open_dirs(lb_unpacker *u, int root_fd, const char *rel, size_t len, const char *entry)
{
    int dfd = dup(root_fd);
    if (dfd < 0)
        return -lb_unpack_fail(u, LB_E_IO, "Could not unpack %s: %s.", u->shown, strerror(errno));
    char comp[LB_NAME_MAX + 1];
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && rel[j] != '/')
            j++;
        size_t n = j - i;
        memcpy(comp, rel + i, n);
        comp[n] = '\0';
        int nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0 && errno == ENOENT) {
            if (mkdirat(dfd, comp, 0750) != 0 && errno != EEXIST) {
                int e = errno;
                close(dfd);
                return -lb_unpack_fail(u, LB_E_IO, "Could not unpack %s: %s.", u->shown, strerror(e));
            }
            nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (nfd < 0) {
            int e = errno;
            close(dfd);
            if (e == ENOTDIR || e == ELOOP)
                return -lb_unpack_fail(u, LB_E_EXISTS, "The archive %s holds \"%s\", but \"%.*s\" is already a file.",
                                       u->shown, entry, (int)j, rel);
            return -lb_unpack_fail(u, LB_E_IO, "Could not unpack %s: %s.", u->shown, strerror(e));
        }
        close(dfd);
        dfd = nfd;
        i = j + 1;
    }
    return dfd;
}

/* Copies the current entry's data into fd, counting every byte against
 * the caps. */
static int lb_unpack_data(lb_unpacker *u, int fd, const char *entry, uint64_t *size)
{
    const lb_unpack_limits *lim = u->lim;
    uint64_t ratio_cap = u->archive_size * (uint64_t)lim->max_ratio + lim->ratio_slack;
    *size = 0;
    for (;;) {
        la_ssize_t n = archive_read_data(u->a, u->buf, sizeof u->buf);
        if (n == 0)
            return LB_OK;
        if (n < 0)
            return lb_unpack_fail(u, LB_E_INVAL, "The archive %s could not be read at \"%s\": %s.", u->shown, entry,
                                  lb_arch_msg(u->a));
        u->written += (uint64_t)n;
        u->tot->bytes += (uint64_t)n;
        *size += (uint64_t)n;
        if (u->written > ratio_cap)
            return lb_unpack_fail(u, LB_E_TOOBIG,
                                  "The archive %s unpacks to more than %u times its own size, so it looks like an "
                                  "archive bomb and was refused.",
                                  u->shown, lim->max_ratio);
        if (u->tot->bytes > lim->max_bytes)
            return lb_unpack_fail(u, LB_E_TOOBIG,
                                  "The archives unpack to more than %llu MiB, the limit for a task's inputs.",
                                  (unsigned long long)(lim->max_bytes >> 20));
        if (lb_write_all(fd, u->buf, (size_t)n) != LB_OK)
            return lb_unpack_fail(u, LB_E_IO, "Could not unpack %s: %s.", u->shown, strerror(errno));
    }
}

/* Checks one entry's name: the reason it is refused, or NULL. */
static const char *lb_entry_name_problem(const char *name)
{
    if (name[0] == '/')
        return "an absolute path";
    const char *p = name;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return "a path that climbs out with \"..\"";
        if (!slash)
            break;
        p = slash + 1;
    }
    if (strchr(name, '\\'))
        return "a backslash in its name";
    return "a name that is not a clean relative UTF-8 path";
}

static int lb_unpack_entry(lb_unpacker *u, struct archive_entry *e, int root_fd, const char *prefix,
                           lb_unpack_file_cb cb, void *arg)
{
    const char *name = archive_entry_pathname_utf8(e);
    if (!name)
        name = archive_entry_pathname(e);
    if (!name || !*name)
        return lb_unpack_fail(u, LB_E_INVAL, "The archive %s holds an entry without a name.", u->shown);
    char shown[160];
    lb_shown_name(name, shown, sizeof shown);

    unsigned type = archive_entry_filetype(e);
    if (archive_entry_hardlink(e))
        return lb_unpack_fail(u, LB_E_INVAL,
                              "The archive %s holds a hard link (\"%s\"); links are not unpacked. Make the archive "
                              "without links and upload it again.",
                              u->shown, shown);
    if (type == AE_IFLNK || archive_entry_symlink(e))
        return lb_unpack_fail(u, LB_E_INVAL,
                              "The archive %s holds a symbolic link (\"%s\"); links are not unpacked. Make the "
                              "archive without links (for example tar --dereference, or zip without -y) and upload "
                              "it again.",
                              u->shown, shown);
    if (type != AE_IFREG && type != AE_IFDIR)
        return lb_unpack_fail(u, LB_E_INVAL,
                              "The archive %s holds \"%s\", which is a device, a pipe or a socket; only files and "
                              "folders are unpacked.",
                              u->shown, shown);

    size_t nlen = strlen(name);
    /* "./" (tar -C dir .) names the root itself: nothing to make */
    if (type == AE_IFDIR && strspn(name, "./") == nlen && !strstr(name, ".."))
        return LB_OK;
    char clean[LB_PATH_MAX + 1];
    if (lb_path_clean_rel(name, nlen, clean, sizeof clean) != LB_OK)
        return lb_unpack_fail(u, LB_E_INVAL, "The archive %s holds \"%s\", which has %s; it was refused.", u->shown,
                              shown, lb_entry_name_problem(name));
    if (!strcmp(clean, "__MACOSX") || !strncmp(clean, "__MACOSX/", 9))
        return LB_OK;

    char full[LB_PATH_MAX + 1];
    int n = prefix[0] ? snprintf(full, sizeof full, "%s/%s", prefix, clean)
                      : snprintf(full, sizeof full, "%s", clean);
    if (n < 0 || (size_t)n >= sizeof full)
        return lb_unpack_fail(u, LB_E_INVAL, "The archive %s holds \"%s\", whose path is too long.", u->shown, shown);
    int depth = 0;
    for (const char *p = full; *p; p++)
        depth += *p == '/';
    if (depth > LB_UNPACK_DEPTH_MAX)
        return lb_unpack_fail(u, LB_E_INVAL, "The archive %s holds \"%s\", more than %d folders deep.", u->shown,
                              shown, LB_UNPACK_DEPTH_MAX);

    const char *slash = strrchr(full, '/');
    size_t parent_len = slash ? (size_t)(slash - full) : 0;
    const char *base = slash ? slash + 1 : full;
    int dfd = lb_open_dirs(u, root_fd, full, parent_len, shown);
    if (dfd < 0)
        return -dfd;

    int rc = LB_OK;
    if (type == AE_IFDIR) {
        if (mkdirat(dfd, base, 0750) != 0) {
            struct stat st;
            if (errno != EEXIST)
                rc = lb_unpack_fail(u, LB_E_IO, "Could not unpack %s: %s.", u->shown, strerror(errno));
            else if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
                rc = lb_unpack_fail(u, LB_E_EXISTS, "The archive %s holds the folder \"%s\", but a file of that name "
                                    "is already there.", u->shown, shown);
        }
        close(dfd);
        return rc;
    }
    int mode = (archive_entry_perm(e) & 0111) ? 0750 : 0640;
    int fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        if (errno == EEXIST || errno == ELOOP || errno == EISDIR)
            rc = lb_unpack_fail(u, LB_E_EXISTS,
                                "The archive %s holds \"%s\" twice, or it clashes with another uploaded file of that "
                                "name.",
                                u->shown, full);
        else
            rc = lb_unpack_fail(u, LB_E_IO, "Could not unpack %s: %s.", u->shown, strerror(errno));
        close(dfd);
        return rc;
    }
    uint64_t size = 0;
    rc = lb_unpack_data(u, fd, shown, &size);
    if (close(fd) != 0 && rc == LB_OK)
        rc = lb_unpack_fail(u, LB_E_IO, "Could not unpack %s: %s.", u->shown, strerror(errno));
    close(dfd);
    if (rc == LB_OK && cb) {
        rc = cb(arg, full, size);
        if (rc != LB_OK && !u->err[0])
            lb_unpack_fail(u, rc, "Could not unpack %s: %s.", u->shown, lb_strerror(rc));
    }
    return rc;
}

int lb_unpack(const char *archive_path, lb_archive_kind kind, const char *shown, int root_fd,
              const char *prefix, const lb_unpack_limits *lim, lb_unpack_totals *tot,
              lb_unpack_file_cb cb, void *arg, char *err, size_t errsz)
{
    err[0] = '\0';
    lb_unpacker *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, errsz, "Out of memory while unpacking.");
        return LB_E_NOMEM;
    }
    pthread_once(&lb_utf8_once, lb_utf8_init);
    locale_t old_locale = lb_utf8_locale ? uselocale(lb_utf8_locale) : (locale_t)0;
    char shown_buf[160];
    lb_shown_name(shown, shown_buf, sizeof shown_buf);
    u->shown = shown_buf;
    u->lim = lim;
    u->tot = tot;
    u->err = err;
    u->errsz = errsz;
    int rc = LB_OK;
    struct stat st;
    if (stat(archive_path, &st) != 0) {
        rc = lb_unpack_fail(u, LB_E_IO, "Could not read the upload %s: %s.", u->shown, strerror(errno));
        goto out;
    }
    u->archive_size = (uint64_t)st.st_size;
    u->a = archive_read_new();
    if (!u->a) {
        rc = lb_unpack_fail(u, LB_E_NOMEM, "Out of memory while unpacking %s.", u->shown);
        goto out;
    }
    /* Only the formats the name promises: a file called .zip that is
     * really something else is refused, not guessed at. */
    int ok;
    const char *what;
    switch (kind) {
    case LB_ARCHIVE_ZIP:
        ok = archive_read_support_format_zip(u->a) == ARCHIVE_OK;
        what = "zip";
        break;
    case LB_ARCHIVE_TAR_GZ:
        ok = archive_read_support_filter_gzip(u->a) == ARCHIVE_OK &&
             archive_read_support_format_tar(u->a) == ARCHIVE_OK;
        what = "gzip-compressed tar";
        break;
    case LB_ARCHIVE_TAR:
        ok = archive_read_support_format_tar(u->a) == ARCHIVE_OK;
        what = "tar";
        break;
    default:
        rc = lb_unpack_fail(u, LB_E_INVAL, "%s is not an archive this service unpacks.", u->shown);
        goto out;
    }
    if (!ok) {
        rc = lb_unpack_fail(u, LB_E_INTERNAL, "libarchive cannot read %s archives here: %s.", what,
                            lb_arch_msg(u->a));
        goto out;
    }
    if (archive_read_open_filename(u->a, archive_path, LB_UNPACK_CHUNK) != ARCHIVE_OK) {
        rc = lb_unpack_fail(u, LB_E_INVAL, "The upload %s is not a readable %s archive: %s.", u->shown, what,
                            lb_arch_msg(u->a));
        goto out;
    }
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(u->a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r == ARCHIVE_FATAL || r == ARCHIVE_FAILED || r == ARCHIVE_RETRY) {
            rc = lb_unpack_fail(u, LB_E_INVAL, "The upload %s is not a readable %s archive: %s.", u->shown, what,
                                lb_arch_msg(u->a));
            goto out;
        }
        /* ARCHIVE_WARN (for example a name not in the locale's charset):
         * the entry is still checked like any other */
        if (++tot->entries > lim->max_entries) {
            rc = lb_unpack_fail(u, LB_E_TOOBIG, "The archives hold more than %zu entries, the limit for a task.",
                                lim->max_entries);
            goto out;
        }
        rc = lb_unpack_entry(u, e, root_fd, prefix, cb, arg);
        if (rc != LB_OK)
            goto out;
    }
    rc = LB_OK;
out:
    if (u->a)
        archive_read_free(u->a);
    free(u);
    if (old_locale)
        uselocale(old_locale);
    return rc;
}

/* ---- places: archives unpacked at once ---- */

static lb_slots lb_unpack_slots = LB_SLOTS_INIT;

int lb_unpack_place_take(const lb_config *cfg, const char *key)
{
    return lb_slots_take(&lb_unpack_slots, cfg->unpack_max_running, cfg->unpack_max_per_user, key);
}

void lb_unpack_place_release(const char *key)
{
    lb_slots_release(&lb_unpack_slots, key);
}

void lb_unpack_place_key(lb_req *r, char *key, size_t keysz)
{
    /* per user with users; without, per address (nginx's, never a header) */
    const char *addr = lb_http_param(r, "REMOTE_ADDR");
    if (r->user)
        snprintf(key, keysz, "u:%s", r->user->name);
    else
        snprintf(key, keysz, "a:%s", addr && *addr ? addr : "?");
}

int lb_unpack_place_refusal(const lb_config *cfg, int rc, const char *key, char *msg, size_t msgsz,
                            const char **code)
{
    if (rc == LB_E_TOOBIG) {
        *code = "too_many_unpacks";
        snprintf(msg, msgsz, "%s already has %d archives being unpacked, the most one may have "
                 "(LLMBOX_UNPACK_MAX_PER_USER); nothing was kept: send it again once they are done.",
                 key[0] == 'u' ? "This user" : "This client address", cfg->unpack_max_per_user);
        return 429;
    }
    *code = "unpacks_busy";
    snprintf(msg, msgsz, "The server is already unpacking %d archives, the most it unpacks at once so that "
             "other requests are still answered (LLMBOX_UNPACK_MAX_RUNNING); nothing was kept: send it again "
             "in a moment.", cfg->unpack_max_running);
    return 503;
}
