/* COPY/ADD and WORKDIR layers of the Dockerfile builder, written with
 * libarchive (build_copy.h). */
#include "images/build_copy.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_DEPTH_MAX 256 /* folder levels below a copied folder */
#define DIRS_SEEN_MAX 4096 /* parent folders added to one layer */

typedef struct cw {
    struct archive *a;
    EVP_MD_CTX *content;
    const char *const *lower;
    int nlower;
    long uid, gid;
    int mode;
    long long bytes, max_bytes;
    long entries;
    char *seen[DIRS_SEEN_MAX];
    int nseen;
    char *msg;
    size_t msgsz;
} cw;

static int fail(cw *w, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(cw *w, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg, w->msgsz, fmt, ap);
    va_end(ap);
    return rc;
}

static void hex32(const unsigned char *d, char *out)
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

int lb_build_file_sha256(const char *path, char hex[65], long long *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return LB_E_IO;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(c);
        close(fd);
        return LB_E_NOMEM;
    }
    char buf[65536];
    long long n = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) {
        EVP_DigestUpdate(c, buf, (size_t)r);
        n += r;
    }
    close(fd);
    unsigned char d[32];
    unsigned int dl = 0;
    EVP_DigestFinal_ex(c, d, &dl);
    EVP_MD_CTX_free(c);
    if (r < 0)
        return LB_E_IO;
    hex32(d, hex);
    if (size)
        *size = n;
    return LB_OK;
}

/* Whether name (relative to /) exists in a lower layer root, or was added. */
static int dir_known(cw *w, const char *name)
{
    for (int i = 0; i < w->nseen; i++)
        if (!strcmp(w->seen[i], name))
            return 1;
    char p[PATH_MAX];
    struct stat st;
    for (int i = 0; i < w->nlower; i++)
        if ((size_t)snprintf(p, sizeof p, "%s/%s", w->lower[i], name) < sizeof p &&
            fstatat(AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) == 0)
            return 1;
    return 0;
}

static void hash_meta(cw *w, const char *name, const char *kind, long mode, const char *link)
{
    char m[96];
    int n = snprintf(m, sizeof m, "%s %lo %ld %ld", kind, (unsigned long)mode & 07777, w->uid, w->gid);
    EVP_DigestUpdate(w->content, name, strlen(name) + 1);
    EVP_DigestUpdate(w->content, m, (size_t)n + 1);
    EVP_DigestUpdate(w->content, link ? link : "", link ? strlen(link) + 1 : 1);
}

static int put_header(cw *w, const char *name, mode_t type, mode_t perm, long uid, long gid, time_t mtime,
                      long long size, const char *link)
{
    if (++w->entries > LB_BUILD_COPY_ENTRIES_MAX)
        return fail(w, LB_E_TOOBIG, "more than %s files in one layer", "200,000");
    struct archive_entry *e = archive_entry_new();
    if (!e)
        return fail(w, LB_E_NOMEM, "out of memory%s", "");
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, perm & 07777);
    archive_entry_set_uid(e, uid);
    archive_entry_set_gid(e, gid);
    archive_entry_set_mtime(e, mtime, 0);
    archive_entry_set_size(e, type == AE_IFREG ? size : 0);
    if (link)
        archive_entry_set_symlink(e, link);
    int r = archive_write_header(w->a, e);
    archive_entry_free(e);
    if (r != ARCHIVE_OK)
        return fail(w, LB_E_IO, "cannot write the layer: %s", archive_error_string(w->a));
    return LB_OK;
}

/* Adds the folders above name (relative, "a/b/c") that no lower layer has. */
static int add_parents(cw *w, const char *name, int include_self)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", name);
    size_t n = strlen(p);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && !(i == n && include_self))
            continue;
        char keep = p[i];
        p[i] = '\0';
        if (!dir_known(w, p)) {
            if (w->nseen >= DIRS_SEEN_MAX)
                return fail(w, LB_E_TOOBIG, "more than %s new folders in one layer", "4,096");
            if (!(w->seen[w->nseen] = strdup(p)))
                return fail(w, LB_E_NOMEM, "out of memory%s", "");
            w->nseen++;
            /* not in the content digest: which folders are missing depends
             * on which lower layers are extracted yet, not on the files */
            int rc = put_header(w, p, AE_IFDIR, 0755, 0, 0, 0, 0, NULL);
            if (rc)
                return rc;
        }
        p[i] = keep;
    }
    return LB_OK;
}

static int add_file(cw *w, const char *src, const struct stat *st, const char *name)
{
    int fd = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return fail(w, LB_E_IO, "cannot read %s", src);
    w->bytes += st->st_size;
    if (w->bytes > w->max_bytes) {
        close(fd);
        return fail(w, LB_E_TOOBIG, "the copied files pass the layer's cap at %s", src);
    }
    mode_t perm = w->mode >= 0 ? (mode_t)w->mode : st->st_mode;
    hash_meta(w, name, "file", (long)perm, NULL);
    int rc = put_header(w, name, AE_IFREG, perm, w->uid, w->gid, st->st_mtime, st->st_size, NULL);
    char buf[65536];
    long long left = st->st_size;
    while (!rc && left > 0) {
        ssize_t r = read(fd, buf, left < (long long)sizeof buf ? (size_t)left : sizeof buf);
        if (r <= 0) {
            rc = fail(w, LB_E_IO, "%s changed while it was copied", src);
            break;
        }
        EVP_DigestUpdate(w->content, buf, (size_t)r);
        if (archive_write_data(w->a, buf, (size_t)r) != r)
            rc = fail(w, LB_E_IO, "cannot write the layer: %s", archive_error_string(w->a));
        left -= r;
    }
    close(fd);
    return rc;
}

static int add_tree(cw *w, const char *src, const char *name, int depth);

static int add_one(cw *w, const char *src, const char *name, int depth)
{
    struct stat st;
    if (lstat(src, &st))
        return fail(w, LB_E_IO, "cannot read %s", src);
    if (S_ISREG(st.st_mode))
        return add_file(w, src, &st, name);
    if (S_ISLNK(st.st_mode)) {
        /* kept as a link, never followed: it is resolved in the image */
        char t[PATH_MAX];
        ssize_t n = readlink(src, t, sizeof t - 1);
        if (n < 0)
            return fail(w, LB_E_IO, "cannot read the link %s", src);
        t[n] = '\0';
        hash_meta(w, name, "link", 0777, t);
        return put_header(w, name, AE_IFLNK, 0777, w->uid, w->gid, st.st_mtime, 0, t);
    }
    if (S_ISDIR(st.st_mode)) {
        mode_t perm = w->mode >= 0 ? (mode_t)w->mode : st.st_mode;
        hash_meta(w, name, "dir", (long)perm, NULL);
        int rc = put_header(w, name, AE_IFDIR, perm, w->uid, w->gid, st.st_mtime, 0, NULL);
        return rc ? rc : add_tree(w, src, name, depth + 1);
    }
    return fail(w, LB_E_INVAL, "%s is not a file, a folder or a symlink (only those are copied)", src);
}

/* The folder src's entries under name (sorted, so the layer is the same
 * for the same files). */
static int add_tree(cw *w, const char *src, const char *name, int depth)
{
    if (depth > COPY_DEPTH_MAX)
        return fail(w, LB_E_TOOBIG, "folders nest more than 256 levels below %s", src);
    struct dirent **ents = NULL;
    int n = scandir(src, &ents, NULL, alphasort);
    if (n < 0)
        return fail(w, LB_E_IO, "cannot list %s", src);
    int rc = LB_OK;
    for (int i = 0; i < n; i++) {
        const char *e = ents[i]->d_name;
        if (!rc && strcmp(e, ".") && strcmp(e, "..")) {
            char s[PATH_MAX + 256], d[PATH_MAX + 256];
            if ((size_t)snprintf(s, sizeof s, "%s/%s", src, e) >= sizeof s ||
                (size_t)snprintf(d, sizeof d, "%s%s%s", name, *name ? "/" : "", e) >= sizeof d)
                rc = fail(w, LB_E_TOOBIG, "a path below %s is too long", src);
            else
                rc = add_one(w, s, d, depth);
        }
        free(ents[i]);
    }
    free(ents);
    return rc;
}

/* dest made relative and clean ("/a/./b/" -> "a/b"); ".." may not climb
 * above the root. */
static int clean_dest(const char *dest, char *out, size_t outsz)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", dest) >= (int)sizeof tmp)
        return LB_E_TOOBIG;
    out[0] = '\0';
    size_t len = 0;
    char *save = NULL;
    for (char *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, "."))
            continue;
        if (!strcmp(c, "..")) {
            char *s = strrchr(out, '/');
            len = s ? (size_t)(s - out) : 0;
            out[len] = '\0';
            continue;
        }
        size_t cl = strlen(c);
        if (len + cl + 2 > outsz)
            return LB_E_TOOBIG;
        if (len)
            out[len++] = '/';
        memcpy(out + len, c, cl + 1);
        len += cl;
    }
    return LB_OK;
}

static int open_writer(cw *w, const char *tmp)
{
    w->a = archive_write_new();
    w->content = EVP_MD_CTX_new();
    if (!w->a || !w->content || EVP_DigestInit_ex(w->content, EVP_sha256(), NULL) != 1)
        return fail(w, LB_E_NOMEM, "out of memory%s", "");
    archive_write_set_format_pax_restricted(w->a);
    archive_write_set_bytes_in_last_block(w->a, 1);
    if (archive_write_open_filename(w->a, tmp) != ARCHIVE_OK)
        return fail(w, LB_E_IO, "cannot write the layer: %s", archive_error_string(w->a));
    return LB_OK;
}

/* Closes the writer; on success fsyncs and renames tmp to out_path and
 * fills out; on failure removes tmp. */
static int finish(cw *w, int rc, const char *tmp, const char *out_path, lb_build_tar *out)
{
    if (w->a) {
        if (archive_write_close(w->a) != ARCHIVE_OK && !rc)
            rc = fail(w, LB_E_IO, "cannot write the layer: %s", archive_error_string(w->a));
        archive_write_free(w->a);
    }
    if (w->content) {
        unsigned char d[32];
        unsigned int dl = 0;
        EVP_DigestFinal_ex(w->content, d, &dl);
        EVP_MD_CTX_free(w->content);
        hex32(d, out->content);
    }
    for (int i = 0; i < w->nseen; i++)
        free(w->seen[i]);
    out->entries = w->entries;
    if (!rc) {
        char hex[65];
        int fd = open(tmp, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) || lb_build_file_sha256(tmp, hex, &out->size) != LB_OK)
            rc = fail(w, LB_E_IO, "cannot write the layer %s", tmp);
        if (fd >= 0)
            close(fd);
        snprintf(out->digest, sizeof out->digest, "sha256:%s", hex);
        if (!rc && rename(tmp, out_path))
            rc = fail(w, LB_E_IO, "cannot write the layer %s", out_path);
    }
    if (rc)
        unlink(tmp);
    return rc;
}

int lb_build_copy_layer(const char *ctxreal, const char *const *srcs, int nsrc, const char *dest, long uid,
                        long gid, int mode, const char *const *lower_roots, int nlower, long long max_bytes,
                        const char *out_path, lb_build_tar *out, char *msg, size_t msgsz)
{
    cw w = {.lower = lower_roots, .nlower = nlower, .uid = uid, .gid = gid, .mode = mode,
            .max_bytes = max_bytes, .msg = msg, .msgsz = msgsz};
    memset(out, 0, sizeof *out);
    char tmp[PATH_MAX], dname[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", out_path) >= sizeof tmp ||
        clean_dest(dest, dname, sizeof dname) != LB_OK) {
        snprintf(msg, msgsz, "the destination %.200s is too long", dest);
        return LB_E_TOOBIG;
    }
    int into_dir = dest[strlen(dest) - 1] == '/' || nsrc > 1 || !dname[0];
    /* every source, patterns expanded, resolved and checked first */
    char **paths = NULL;
    int np = 0, rc = LB_OK;
    size_t ctxlen = strlen(ctxreal);
    for (int i = 0; !rc && i < nsrc; i++) {
        char joined[PATH_MAX];
        const char *s = srcs[i];
        while (*s == '/')
            s++;
        if ((size_t)snprintf(joined, sizeof joined, "%s/%s", ctxreal, s) >= sizeof joined) {
            rc = fail(&w, LB_E_TOOBIG, "the source %.200s is too long", srcs[i]);
            break;
        }
        glob_t g = {0};
        int pattern = strpbrk(s, "*?[") != NULL;
        if (pattern) {
            if (glob(joined, GLOB_NOSORT, NULL, &g) || g.gl_pathc == 0) {
                globfree(&g);
                rc = fail(&w, LB_E_INVAL, "no file of the build context matches %.200s", srcs[i]);
                break;
            }
            into_dir = into_dir || g.gl_pathc > 1;
        }
        size_t nm = pattern ? g.gl_pathc : 1;
        for (size_t k = 0; !rc && k < nm; k++) {
            char real[PATH_MAX];
            const char *cand = pattern ? g.gl_pathv[k] : joined;
            if (!realpath(cand, real)) {
                rc = fail(&w, LB_E_INVAL, "%.200s is not in the build context", srcs[i]);
            } else if (strncmp(real, ctxreal, ctxlen) || (real[ctxlen] != '/' && real[ctxlen] != '\0')) {
                rc = fail(&w, LB_E_INVAL, "%.200s is outside the build context", srcs[i]);
            } else {
                char **np2 = realloc(paths, (size_t)(np + 1) * sizeof *paths);
                if (!np2 || !(np2[np] = strdup(real))) {
                    paths = np2 ? np2 : paths;
                    rc = fail(&w, LB_E_NOMEM, "out of memory%s", "");
                } else {
                    paths = np2;
                    np++;
                }
            }
        }
        globfree(&g);
    }
    if (!rc)
        rc = open_writer(&w, tmp);
    if (!rc && dname[0])
        rc = add_parents(&w, dname, into_dir);
    for (int i = 0; !rc && i < np; i++) {
        struct stat st;
        if (stat(paths[i], &st)) {
            rc = fail(&w, LB_E_IO, "cannot read %s", paths[i]);
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            /* a folder's contents go into dest, as docker build does */
            if (!into_dir && dname[0] && !dir_known(&w, dname))
                rc = add_parents(&w, dname, 1);
            if (!rc)
                rc = add_tree(&w, paths[i], dname, 0);
        } else {
            char d[PATH_MAX * 2];
            const char *base = strrchr(paths[i], '/') + 1;
            if (into_dir)
                snprintf(d, sizeof d, "%s%s%s", dname, dname[0] ? "/" : "", base);
            else
                snprintf(d, sizeof d, "%s", dname);
            rc = add_one(&w, paths[i], d, 0);
        }
    }
    for (int i = 0; i < np; i++)
        free(paths[i]);
    free(paths);
    return finish(&w, rc, tmp, out_path, out);
}

int lb_build_dirs_layer(const char *dir, const char *const *lower_roots, int nlower, const char *out_path,
                        lb_build_tar *out, char *msg, size_t msgsz)
{
    cw w = {.lower = lower_roots, .nlower = nlower, .msg = msg, .msgsz = msgsz};
    memset(out, 0, sizeof *out);
    char tmp[PATH_MAX], dname[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", out_path) >= sizeof tmp ||
        clean_dest(dir, dname, sizeof dname) != LB_OK) {
        snprintf(msg, msgsz, "the folder %.200s is too long", dir);
        return LB_E_TOOBIG;
    }
    if (!dname[0] || dir_known(&w, dname))
        return LB_OK;
    int rc = open_writer(&w, tmp);
    if (!rc)
        rc = add_parents(&w, dname, 1);
    return finish(&w, rc, tmp, out_path, out);
}
