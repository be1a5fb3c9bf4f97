/* The two stores behind one interface. The local one is the layout
 * artifacts_dir always had, so the single-machine default changes
 * nothing: storing a task's outputs where they already are is a no-op.
 * Every key passes lb_path_clean_rel first, both ways: a key listed by
 * the bucket is hostile input like any other name. */
#include "common/blobstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/path.h"
#include "common/util.h"

#define TREE_DEPTH_MAX 64

int lb_blob_open(const lb_config *cfg, lb_blobstore *b, char *why, size_t whysz)
{
    memset(b, 0, sizeof *b);
    snprintf(b->root, sizeof b->root, "%s", cfg->artifacts_dir);
    if (!cfg->s3_bucket[0])
        return LB_OK;
    b->is_s3 = 1;
    return lb_s3_from_config(cfg, &b->s3, why, whysz);
}

const char *lb_blob_where(const lb_blobstore *b, char *out, size_t outsz)
{
    if (b->is_s3)
        snprintf(out, outsz, "s3://%s at %s", b->s3.bucket, b->s3.endpoint);
    else
        snprintf(out, outsz, "%s", b->root);
    return out;
}

/* key must already be clean (what lb_path_clean_rel gives back unchanged) */
static int key_check(const char *key, char *why, size_t whysz)
{
    char clean[LB_PATH_MAX + 1];
    if (lb_path_clean_rel(key, strlen(key), clean, sizeof clean) != LB_OK || strcmp(clean, key)) {
        snprintf(why, whysz, "\"%.200s\" is not a clean relative key", key);
        return LB_E_INVAL;
    }
    return LB_OK;
}

static int local_path(const lb_blobstore *b, const char *key, char *out, size_t outsz, char *why, size_t whysz)
{
    int rc = key_check(key, why, whysz);
    if (rc == LB_OK && lb_path_join(out, outsz, b->root, key) != LB_OK) {
        snprintf(why, whysz, "the path of key %.200s is too long", key);
        rc = LB_E_TOOBIG;
    }
    return rc;
}

/* Copies len bytes (len < 0: to the end) from off of src into dest via a
 * temp file beside it and rename. */
static int copy_range(const char *src, const char *dest, int64_t off, int64_t len, uint64_t max_bytes, char *why,
                      size_t whysz)
{
    char tmp[PATH_MAX + 16] = "";
    int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), out = -1, rc = LB_E_IO;
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whysz, "%s: %s", src, in < 0 && errno == ENOENT ? "no such object" : "not a readable file");
        rc = in < 0 && errno == ENOENT ? LB_E_NOTFOUND : LB_E_IO;
        goto out;
    }
    if (off < 0 || len == 0 || off > st.st_size || (off == st.st_size && st.st_size > 0)) {
        snprintf(why, whysz, "%s: the range from byte %lld is outside the object (%lld bytes)", src, (long long)off,
                 (long long)st.st_size);
        rc = LB_E_INVAL;
        goto out;
    }
    uint64_t left = (uint64_t)(st.st_size - off);
    if (len > 0 && (uint64_t)len < left)
        left = (uint64_t)len;
    if (max_bytes && left > max_bytes) {
        snprintf(why, whysz, "%s: %llu bytes, more than the cap of %llu", src, (unsigned long long)left,
                 (unsigned long long)max_bytes);
        rc = LB_E_TOOBIG;
        goto out;
    }
    int tn = snprintf(tmp, sizeof tmp, "%s.blob.XXXXXX", dest);
    if (tn < 0 || (size_t)tn >= sizeof tmp) {
        tmp[0] = '\0';
        snprintf(why, whysz, "the path %s is too long", dest);
        rc = LB_E_TOOBIG;
        goto out;
    }
    out = mkstemp(tmp);
    if (out < 0)
        tmp[0] = '\0';
    if (out < 0 || lseek(in, off, SEEK_SET) < 0) {
        snprintf(why, whysz, "cannot write beside %s: %s", dest, strerror(errno));
        goto out;
    }
    char buf[65536];
    while (left > 0) {
        ssize_t n = read(in, buf, left < sizeof buf ? left : sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || lb_write_all(out, buf, (size_t)n) != LB_OK) {
            snprintf(why, whysz, "copying %s to %s: %s", src, dest, n == 0 ? "the file shrank" : strerror(errno));
            goto out;
        }
        left -= (uint64_t)n;
    }
    if (fchmod(out, 0640) != 0 || fsync(out) != 0 || close(out) != 0) {
        out = -1;
        snprintf(why, whysz, "cannot write %s: %s", tmp, strerror(errno));
        goto out;
    }
    out = -1;
    if (rename(tmp, dest) != 0) {
        snprintf(why, whysz, "cannot rename to %s: %s", dest, strerror(errno));
        goto out;
    }
    tmp[0] = '\0';
    rc = LB_OK;
out:
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    if (rc != LB_OK && tmp[0])
        unlink(tmp); /* a temp file of ours, never dest */
    return rc;
}

static int parent_dirs(const char *path, char *why, size_t whysz)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return LB_OK;
    *slash = '\0';
    if (lb_mkdirs(dir, 0750) != LB_OK) {
        snprintf(why, whysz, "cannot create the folder %s: %s", dir, strerror(errno));
        return LB_E_IO;
    }
    return LB_OK;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int lb_blob_put_file(const lb_blobstore *b, const char *key, const char *path, uint64_t max_bytes, char *why,
                     size_t whysz)
{
    int rc = key_check(key, why, whysz);
    if (rc != LB_OK)
        return rc;
    if (b->is_s3)
        return lb_s3_put_file(&b->s3, key, path, max_bytes, why, whysz);
    char dest[PATH_MAX];
    rc = local_path(b, key, dest, sizeof dest, why, whysz);
    if (rc != LB_OK || same_file(path, dest))
        return rc;
    rc = parent_dirs(dest, why, whysz);
    return rc != LB_OK ? rc : copy_range(path, dest, 0, -1, max_bytes, why, whysz);
}

int lb_blob_get_file(const lb_blobstore *b, const char *key, const char *dest, int64_t off, int64_t len,
                     uint64_t max_bytes, char *why, size_t whysz)
{
    int rc = key_check(key, why, whysz);
    if (rc != LB_OK)
        return rc;
    if (b->is_s3)
        return lb_s3_get_file(&b->s3, key, dest, off, len, max_bytes, why, whysz);
    char src[PATH_MAX];
    rc = local_path(b, key, src, sizeof src, why, whysz);
    return rc != LB_OK ? rc : copy_range(src, dest, off, len, max_bytes, why, whysz);
}

int lb_blob_head(const lb_blobstore *b, const char *key, uint64_t *size, char *why, size_t whysz)
{
    int rc = key_check(key, why, whysz);
    if (rc != LB_OK)
        return rc;
    if (b->is_s3)
        return lb_s3_head(&b->s3, key, size, why, whysz);
    char p[PATH_MAX];
    struct stat st;
    rc = local_path(b, key, p, sizeof p, why, whysz);
    if (rc != LB_OK)
        return rc;
    if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whysz, "%s: no such object", key);
        return LB_E_NOTFOUND;
    }
    *size = (uint64_t)st.st_size;
    return LB_OK;
}

int lb_blob_delete(const lb_blobstore *b, const char *key, char *why, size_t whysz)
{
    int rc = key_check(key, why, whysz);
    if (rc != LB_OK)
        return rc;
    if (b->is_s3)
        return lb_s3_delete(&b->s3, key, why, whysz);
    char p[PATH_MAX];
    rc = local_path(b, key, p, sizeof p, why, whysz);
    if (rc == LB_OK && unlink(p) != 0 && errno != ENOENT) {
        snprintf(why, whysz, "cannot delete %s: %s", p, strerror(errno));
        rc = LB_E_IO;
    }
    return rc;
}

int lb_blob_copy(const lb_blobstore *b, const char *src_key, const char *key, char *why, size_t whysz)
{
    int rc = key_check(src_key, why, whysz);
    if (rc == LB_OK)
        rc = key_check(key, why, whysz);
    if (rc != LB_OK)
        return rc;
    if (b->is_s3)
        return lb_s3_copy(&b->s3, src_key, key, why, whysz);
    char src[PATH_MAX], dst[PATH_MAX];
    if ((rc = local_path(b, src_key, src, sizeof src, why, whysz)) != LB_OK ||
        (rc = local_path(b, key, dst, sizeof dst, why, whysz)) != LB_OK)
        return rc;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", dst);
    *strrchr(dir, '/') = '\0';
    if (lb_mkdirs(dir, 0750) != LB_OK) {
        snprintf(why, whysz, "cannot create the folder %s: %s", dir, strerror(errno));
        return LB_E_IO;
    }
    return copy_range(src, dst, 0, -1, 0, why, whysz);
}

/* Calls fn for every regular file under dir (symbolic links and special
 * files skipped), with its path relative to dir. */
typedef int (*walk_fn)(void *ctx, const char *full, const char *rel, uint64_t size);

static int walk(char *full, size_t fullsz, size_t root_len, int depth, walk_fn fn, void *ctx, char *why,
                size_t whysz)
{
    if (depth > TREE_DEPTH_MAX) {
        snprintf(why, whysz, "%s: folders nested deeper than %d", full, TREE_DEPTH_MAX);
        return LB_E_TOOBIG;
    }
    DIR *d = opendir(full);
    if (!d) {
        if (errno == ENOENT && depth == 0)
            return LB_OK; /* no folder: nothing stored */
        snprintf(why, whysz, "cannot read the folder %s: %s", full, strerror(errno));
        return LB_E_IO;
    }
    size_t len = strlen(full);
    int rc = LB_OK;
    struct dirent *e;
    while (rc == LB_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (len + 1 + strlen(e->d_name) >= fullsz) {
            snprintf(why, whysz, "a path under %s is too long", full);
            rc = LB_E_TOOBIG;
            break;
        }
        snprintf(full + len, fullsz - len, "/%s", e->d_name);
        struct stat st;
        if (lstat(full, &st) != 0) {
            snprintf(why, whysz, "cannot stat %s: %s", full, strerror(errno));
            rc = LB_E_IO;
        } else if (S_ISDIR(st.st_mode)) {
            rc = walk(full, fullsz, root_len, depth + 1, fn, ctx, why, whysz);
        } else if (S_ISREG(st.st_mode)) {
            rc = fn(ctx, full, full + root_len + 1, (uint64_t)st.st_size);
        }
        full[len] = '\0';
    }
    closedir(d);
    return rc;
}

typedef struct tree_ctx {
    const lb_blobstore *b;
    const char *prefix;
    const char *dir;
    int max_files, n;
    uint64_t max_bytes, bytes;
    int store;            /* put_tree: 0 when the files are already in place */
    lb_s3_list_cb cb;     /* list */
    void *cb_ctx;
    char *why;
    size_t whysz;
} tree_ctx;

static int tree_count(tree_ctx *t, uint64_t size)
{
    if (++t->n > t->max_files) {
        snprintf(t->why, t->whysz, "more than %d files under %s", t->max_files, t->prefix);
        return LB_E_TOOBIG;
    }
    t->bytes += size;
    if (t->max_bytes && t->bytes > t->max_bytes) {
        snprintf(t->why, t->whysz, "more than %llu bytes under %s", (unsigned long long)t->max_bytes, t->prefix);
        return LB_E_TOOBIG;
    }
    return LB_OK;
}

static int join_key(char *out, size_t outsz, const char *prefix, const char *rel, char *why, size_t whysz)
{
    int n = snprintf(out, outsz, "%s%s%s", prefix, prefix[0] ? "/" : "", rel);
    if (n < 0 || (size_t)n >= outsz) {
        snprintf(why, whysz, "the key of %.200s is too long", rel);
        return LB_E_TOOBIG;
    }
    return LB_OK;
}

static int put_one(void *ctx, const char *full, const char *rel, uint64_t size)
{
    tree_ctx *t = ctx;
    char key[LB_PATH_MAX + 1];
    int rc = tree_count(t, size);
    if (rc == LB_OK)
        rc = join_key(key, sizeof key, t->prefix, rel, t->why, t->whysz);
    if (rc == LB_OK && t->store)
        rc = lb_blob_put_file(t->b, key, full, 0, t->why, t->whysz);
    return rc;
}

int lb_blob_put_tree(const lb_blobstore *b, const char *prefix, const char *dir, int max_files, uint64_t max_bytes,
                     int *n_files, char *why, size_t whysz)
{
    char full[PATH_MAX], there[PATH_MAX];
    tree_ctx t = {.b = b, .prefix = prefix, .dir = dir, .max_files = max_files, .max_bytes = max_bytes, .store = 1,
                  .why = why, .whysz = whysz};
    *n_files = 0;
    if (prefix[0] && key_check(prefix, why, whysz) != LB_OK)
        return LB_E_INVAL;
    if (!b->is_s3 && lb_path_join(there, sizeof there, b->root, prefix) == LB_OK && same_file(dir, there))
        t.store = 0;
    snprintf(full, sizeof full, "%s", dir);
    int rc = walk(full, sizeof full, strlen(full), 0, put_one, &t, why, whysz);
    *n_files = t.n;
    return rc;
}

static int list_local_one(void *ctx, const char *full, const char *rel, uint64_t size)
{
    tree_ctx *t = ctx;
    char key[LB_PATH_MAX + 1];
    int rc = tree_count(t, 0);
    if (rc == LB_OK)
        rc = join_key(key, sizeof key, t->prefix, rel, t->why, t->whysz);
    return rc != LB_OK ? rc : t->cb(t->cb_ctx, key, size);
}

int lb_blob_list(const lb_blobstore *b, const char *prefix, int max_keys, lb_s3_list_cb cb, void *ctx, char *why,
                 size_t whysz)
{
    if (prefix[0] && key_check(prefix, why, whysz) != LB_OK)
        return LB_E_INVAL;
    if (b->is_s3) {
        char pfx[LB_PATH_MAX + 2];
        snprintf(pfx, sizeof pfx, "%s%s", prefix, prefix[0] ? "/" : "");
        return lb_s3_list(&b->s3, pfx, max_keys, cb, ctx, why, whysz);
    }
    char full[PATH_MAX];
    if (lb_path_join(full, sizeof full, b->root, prefix[0] ? prefix : ".") != LB_OK) {
        snprintf(why, whysz, "the prefix %.200s is too long", prefix);
        return LB_E_TOOBIG;
    }
    tree_ctx t = {.b = b, .prefix = prefix, .max_files = max_keys, .cb = cb, .cb_ctx = ctx, .why = why,
                  .whysz = whysz};
    return walk(full, sizeof full, strlen(full), 0, list_local_one, &t, why, whysz);
}

static int get_one(void *ctx, const char *key, uint64_t size)
{
    tree_ctx *t = ctx;
    size_t pl = strlen(t->prefix);
    char clean[LB_PATH_MAX + 1], dest[PATH_MAX];
    int rc = tree_count(t, size);
    if (rc != LB_OK)
        return rc;
    /* the store's keys are hostile: under the prefix, and clean */
    if (strncmp(key, t->prefix, pl) || key[pl] != '/' ||
        lb_path_clean_rel(key + pl + 1, strlen(key + pl + 1), clean, sizeof clean) != LB_OK ||
        strcmp(clean, key + pl + 1)) {
        snprintf(t->why, t->whysz, "the store listed a key that is not a clean path under %s: %.200s", t->prefix,
                 key);
        return LB_E_PROTO;
    }
    if (lb_path_join(dest, sizeof dest, t->dir, clean) != LB_OK) {
        snprintf(t->why, t->whysz, "the path of %.200s is too long", key);
        return LB_E_TOOBIG;
    }
    rc = parent_dirs(dest, t->why, t->whysz);
    return rc != LB_OK ? rc : lb_blob_get_file(t->b, key, dest, 0, -1, t->max_bytes, t->why, t->whysz);
}

int lb_blob_get_tree(const lb_blobstore *b, const char *prefix, const char *dir, int max_files, uint64_t max_bytes,
                     int *n_files, char *why, size_t whysz)
{
    tree_ctx t = {.b = b, .prefix = prefix, .dir = dir, .max_files = max_files, .max_bytes = max_bytes, .why = why,
                  .whysz = whysz};
    if (key_check(prefix, why, whysz) != LB_OK)
        return LB_E_INVAL;
    int rc = lb_blob_list(b, prefix, max_files + 1, get_one, &t, why, whysz);
    *n_files = t.n;
    return rc;
}
