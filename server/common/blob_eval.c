/* The eval's folder is the store's cache, as artifacts_dir is a task's:
 * the keys are the folder's own paths under evals/<id>/, so a fetched
 * dataset loads exactly like the uploaded one. Only the store's word is
 * checked on the way in: a listed key must be clean and under the
 * prefix asked for, or nothing is written. */
#include "common/blob_eval.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/path.h"
#include "common/util.h"

/* the caps of an upload (handlers_evals.c): its bytes, and the entries an
 * archive may unpack to, plus the uploaded file itself */
static int max_files(const lb_config *cfg)
{
    long long n = (long long)cfg->eval_max_rows * 8 + 64 + 1;
    return n > INT_MAX / 2 ? INT_MAX / 2 : (int)n;
}

static int prefix_of(const char *eval_id, char *out, size_t outsz, char *why, size_t whysz)
{
    if (!lb_id_valid(eval_id)) {
        snprintf(why, whysz, "not an evaluation's id");
        return LB_E_INVAL;
    }
    snprintf(out, outsz, "evals/%s", eval_id);
    return LB_OK;
}

/* the bucket, or LB_E_NOTFOUND when there is none (nothing to do) */
static int open_s3(const lb_config *cfg, lb_blobstore *b, char *why, size_t whysz)
{
    int rc = lb_blob_open(cfg, b, why, whysz);
    return rc != LB_OK ? rc : b->is_s3 ? LB_OK : LB_E_NOTFOUND;
}

int lb_blob_eval_put_in(const lb_blobstore *b, const lb_config *cfg, const char *eval_id, const char *dir,
                        const char *name, char *why, size_t whysz)
{
    char prefix[64], clean[LB_PATH_MAX + 1], key[LB_PATH_MAX + 80], path[PATH_MAX];
    int rc = prefix_of(eval_id, prefix, sizeof prefix, why, whysz);
    if (rc != LB_OK)
        return rc;
    if (!name || lb_path_clean_rel(name, strlen(name), clean, sizeof clean) != LB_OK || strcmp(clean, name)) {
        snprintf(why, whysz, "\"%.200s\" is not a clean path in the evaluation's folder", name ? name : "");
        return LB_E_INVAL;
    }
    int kn = snprintf(key, sizeof key, "%s/%s", prefix, name);
    if (kn < 0 || (size_t)kn >= sizeof key || lb_path_join(path, sizeof path, dir, name) != LB_OK) {
        snprintf(why, whysz, "the path of %.200s is too long", name);
        return LB_E_TOOBIG;
    }
    struct stat st;
    if (lstat(path, &st) != 0) {
        snprintf(why, whysz, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? LB_E_NOTFOUND : LB_E_IO;
    }
    if (S_ISREG(st.st_mode))
        return lb_blob_put_file(b, key, path, cfg->eval_max_upload_bytes, why, whysz);
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, whysz, "%s is neither a file nor a folder", path);
        return LB_E_INVAL;
    }
    int n = 0;
    return lb_blob_put_tree(b, key, path, max_files(cfg), cfg->eval_max_upload_bytes, &n, why, whysz);
}

int lb_blob_eval_put(const lb_config *cfg, const char *eval_id, const char *dir, const char *name, char *why,
                     size_t whysz)
{
    lb_blobstore b;
    int rc = open_s3(cfg, &b, why, whysz);
    if (rc == LB_E_NOTFOUND)
        return LB_OK; /* no bucket: the folder is the only copy */
    return rc != LB_OK ? rc : lb_blob_eval_put_in(&b, cfg, eval_id, dir, name, why, whysz);
}

/* what a list callback needs: the store, the prefix listed, where the
 * files go, the caps and the counts */
typedef struct eval_ctx {
    const lb_blobstore *b;
    const char *prefix;
    const char *dir;
    int max_files, listed, fetched, failed;
    uint64_t max_bytes, bytes;
    char *why;
    size_t whysz;
} eval_ctx;

/* the rest of key after "<prefix>/" when key is clean and under it */
static const char *listed_rest(const eval_ctx *c, const char *key)
{
    char clean[LB_PATH_MAX + 1];
    size_t pl = strlen(c->prefix);
    if (strncmp(key, c->prefix, pl) || key[pl] != '/' ||
        lb_path_clean_rel(key, strlen(key), clean, sizeof clean) != LB_OK || strcmp(clean, key))
        return NULL;
    return key + pl + 1;
}

static int fetch_listed(void *ctx, const char *key, uint64_t size)
{
    eval_ctx *c = ctx;
    const char *rest = listed_rest(c, key);
    char dest[PATH_MAX];
    struct stat st;
    if (!rest) {
        snprintf(c->why, c->whysz, "the store listed a key that is not a clean path under %s: %.200s", c->prefix,
                 key);
        return LB_E_PROTO;
    }
    c->bytes += size;
    if (++c->listed > c->max_files || c->bytes > c->max_bytes) {
        snprintf(c->why, c->whysz, "the store holds more under %s than an evaluation's upload may be (%d files, "
                 "%llu bytes)", c->prefix, c->max_files, (unsigned long long)c->max_bytes);
        return LB_E_TOOBIG;
    }
    if (lb_path_join(dest, sizeof dest, c->dir, rest) != LB_OK) {
        snprintf(c->why, c->whysz, "the path of %.200s is too long", key);
        return LB_E_TOOBIG;
    }
    if (lstat(dest, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size)
        return LB_OK; /* already here (the uploading web, or an earlier look) */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dest);
    *strrchr(parent, '/') = '\0';
    if (lb_mkdirs(parent, 0750) != LB_OK) {
        snprintf(c->why, c->whysz, "cannot create the folder %s: %s", parent, strerror(errno));
        return LB_E_IO;
    }
    int rc = lb_blob_get_file(c->b, key, dest, 0, -1, c->max_bytes, c->why, c->whysz);
    if (rc == LB_OK)
        c->fetched++;
    return rc;
}

int lb_blob_eval_fetch_in(const lb_blobstore *b, const lb_config *cfg, const char *eval_id, const char *dir,
                          int *n_fetched, char *why, size_t whysz)
{
    char prefix[64];
    *n_fetched = 0;
    int rc = prefix_of(eval_id, prefix, sizeof prefix, why, whysz);
    if (rc != LB_OK)
        return rc;
    eval_ctx c = {.b = b, .prefix = prefix, .dir = dir, .max_files = max_files(cfg),
                  .max_bytes = cfg->eval_max_upload_bytes, .why = why, .whysz = whysz};
    /* one more than the cap is listed: a store over it is refused, not cut */
    rc = lb_blob_list(b, prefix, c.max_files + 1, fetch_listed, &c, why, whysz);
    *n_fetched = c.fetched;
    if (rc == LB_OK && !c.listed) {
        snprintf(why, whysz, "the object store has no files under %s/", prefix);
        rc = LB_E_NOTFOUND;
    }
    return rc;
}

int lb_blob_eval_fetch(const lb_config *cfg, const char *eval_id, const char *dir, int *n_fetched, char *why,
                       size_t whysz)
{
    lb_blobstore b;
    *n_fetched = 0;
    int rc = open_s3(cfg, &b, why, whysz);
    if (rc == LB_E_NOTFOUND)
        return LB_OK;
    return rc != LB_OK ? rc : lb_blob_eval_fetch_in(&b, cfg, eval_id, dir, n_fetched, why, whysz);
}

static int delete_listed(void *ctx, const char *key, uint64_t size)
{
    eval_ctx *c = ctx;
    char one[512];
    (void)size;
    if (!listed_rest(c, key))
        return LB_OK; /* not the eval's: never deleted on a store's word */
    /* every key is tried: one that fails does not keep the others */
    if (lb_blob_delete(c->b, key, one, sizeof one) != LB_OK && c->failed++ == 0)
        snprintf(c->why, c->whysz, "%s", one);
    return LB_OK;
}

int lb_blob_eval_delete_in(const lb_blobstore *b, const lb_config *cfg, const char *eval_id, char *why,
                           size_t whysz)
{
    char prefix[64];
    int rc = prefix_of(eval_id, prefix, sizeof prefix, why, whysz);
    if (rc != LB_OK)
        return rc;
    eval_ctx c = {.b = b, .prefix = prefix, .why = why, .whysz = whysz};
    rc = lb_blob_list(b, prefix, 2 * max_files(cfg), delete_listed, &c, why, whysz);
    if (rc == LB_OK && c.failed) {
        char first[512];
        snprintf(first, sizeof first, "%s", why);
        snprintf(why, whysz, "%d objects not deleted, the first: %s", c.failed, first);
        rc = LB_E_UNAVAILABLE;
    }
    return rc;
}

int lb_blob_eval_delete(const lb_config *cfg, const char *eval_id, char *why, size_t whysz)
{
    lb_blobstore b;
    int rc = open_s3(cfg, &b, why, whysz);
    if (rc == LB_E_NOTFOUND)
        return LB_OK;
    return rc != LB_OK ? rc : lb_blob_eval_delete_in(&b, cfg, eval_id, why, whysz);
}
