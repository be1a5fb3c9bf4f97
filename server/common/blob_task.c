/* The artifacts folder doubles as the store's cache: the keys and the
 * local paths are the same, so a fetched file is served by nginx exactly
 * like one written there (X-Accel-Redirect, ranges, sendfile). */
#include "common/blob_task.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "common/blobstore.h"
#include "common/config.h"
#include "common/path.h"
#include "common/util.h"

static int open_s3(const lb_config *cfg, lb_blobstore *b, char *why, size_t whysz)
{
    int rc = lb_blob_open(cfg, b, why, whysz);
    return rc != LB_OK ? rc : b->is_s3 ? LB_OK : LB_E_NOTFOUND;
}

/* open_s3 for one task's objects: LB_E_INVAL with a sentence when task_id
 * is not a task id (it becomes part of every key) */
static int open_s3_task(const lb_config *cfg, const char *task_id, lb_blobstore *b, char *why, size_t whysz)
{
    int rc = open_s3(cfg, b, why, whysz);
    if (rc == LB_OK && !lb_id_valid(task_id)) {
        snprintf(why, whysz, "not a task id");
        return LB_E_INVAL;
    }
    return rc;
}

static int same_dir(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int put_tree(const lb_config *cfg, const char *task_id, const char *kind, const char *dir, char *why,
                    size_t whysz)
{
    lb_blobstore b;
    char prefix[64], mine[LB_CFG_PATH + 64];
    int rc = open_s3(cfg, &b, why, whysz), n = 0;
    if (rc == LB_E_NOTFOUND)
        return LB_OK; /* local only: the files are where they belong */
    if (rc != LB_OK || !lb_id_valid(task_id))
        return rc != LB_OK ? rc : LB_E_INVAL;
    snprintf(prefix, sizeof prefix, "%s/%s", task_id, kind);
    snprintf(mine, sizeof mine, "%s/%s", cfg->artifacts_dir, prefix);
    if (!same_dir(dir, mine))
        return LB_OK;
    return lb_blob_put_tree(&b, prefix, dir, cfg->max_output_files, 0, &n, why, whysz);
}

int lb_blob_task_put_inputs(const lb_config *cfg, const char *task_id, const char *dir, char *why, size_t whysz)
{
    return put_tree(cfg, task_id, "input", dir, why, whysz);
}

int lb_blob_task_put_outputs(const lb_config *cfg, const char *task_id, const char *dir, char *why, size_t whysz)
{
    return put_tree(cfg, task_id, "output", dir, why, whysz);
}

static int fetch_key(const lb_blobstore *b, const lb_config *cfg, const char *key, uint64_t want_size, char *why,
                     size_t whysz);

/* several nodes: inputs, at most this many objects (an upload's files are
 * capped by the web, well below) */
#define LB_BLOB_INPUTS_MAX 100000

int lb_blob_task_put_new_inputs(const lb_config *cfg, const char *task_id, const char *dir, char *why,
                                size_t whysz)
{
    lb_blobstore b;
    char prefix[64];
    int rc = open_s3_task(cfg, task_id, &b, why, whysz), n = 0;
    if (rc == LB_E_NOTFOUND)
        return LB_OK; /* local only: the web moves them beside the others */
    if (rc != LB_OK)
        return rc;
    snprintf(prefix, sizeof prefix, "%s/input", task_id);
    return lb_blob_put_tree(&b, prefix, dir, LB_BLOB_INPUTS_MAX, 0, &n, why, whysz);
}

int lb_blob_record_name_ok(const char *name)
{
    if (!name)
        return 0;
    if (!strcmp(name, "trajectory.json") || !strcmp(name, "tokens.jsonl"))
        return 1;
    if (strncmp(name, "rounds/", 7))
        return 0;
    const char *p = name + 7;
    size_t digits = 0;
    while (p[digits] >= '0' && p[digits] <= '9')
        digits++;
    return digits >= 1 && digits <= 5 && p[0] != '0' && !strcmp(p + digits, ".json");
}

int lb_blob_task_put_record(const lb_config *cfg, const char *task_id, const char *task_dir, int round, char *why,
                            size_t whysz)
{
    lb_blobstore b;
    char mine[LB_CFG_PATH + 64];
    int rc = open_s3_task(cfg, task_id, &b, why, whysz);
    if (rc == LB_E_NOTFOUND)
        return LB_OK; /* local only: the record is where it belongs */
    if (rc != LB_OK)
        return rc;
    snprintf(mine, sizeof mine, "%s/%s", cfg->artifacts_dir, task_id);
    if (!same_dir(task_dir, mine))
        return LB_OK;
    char names[3][32];
    snprintf(names[0], sizeof names[0], "trajectory.json");
    snprintf(names[1], sizeof names[1], "tokens.jsonl");
    snprintf(names[2], sizeof names[2], "rounds/%d.json", round > 0 ? round : 1);
    struct stat traj;
    int traj_put = 0;
    for (int i = 0; i < 3; i++) {
        char key[160], local[sizeof mine + 100];
        struct stat st;
        snprintf(key, sizeof key, "%s/%s", task_id, names[i]);
        snprintf(local, sizeof local, "%s/%s", mine, names[i]);
        if (lstat(local, &st) != 0 || !S_ISREG(st.st_mode))
            continue; /* not written by this run (tokens off, an old agent) */
        if (i == 0)
            traj = st;
        if (i == 2 && traj_put && st.st_dev == traj.st_dev && st.st_ino == traj.st_ino) {
            /* the round's copy is a link of trajectory.json (loop.c): the
             * store copies what was just sent, not this host a second time */
            char src[160];
            snprintf(src, sizeof src, "%s/trajectory.json", task_id);
            rc = lb_blob_copy(&b, src, key, why, whysz);
        } else {
            /* a record is not an output: its cap is the trajectory's own,
             * bounded by the run's token budget, so the output cap bounds it */
            rc = lb_blob_put_file(&b, key, local, cfg->max_output_bytes, why, whysz);
        }
        if (rc != LB_OK)
            return rc;
        traj_put |= i == 0;
    }
    return LB_OK;
}

int lb_blob_task_fetch_record(const lb_config *cfg, const char *task_id, const char *name, char *why,
                              size_t whysz)
{
    lb_blobstore b;
    char local[LB_CFG_PATH + 128];
    struct stat st;
    if (!lb_id_valid(task_id) || !lb_blob_record_name_ok(name)) {
        snprintf(why, whysz, "not a task's record");
        return LB_E_INVAL;
    }
    snprintf(local, sizeof local, "%s/%s/%s", cfg->artifacts_dir, task_id, name);
    int here = lstat(local, &st) == 0 && S_ISREG(st.st_mode);
    int rc = open_s3(cfg, &b, why, whysz);
    if (rc == LB_E_NOTFOUND) {
        if (!here)
            snprintf(why, whysz, "%s: no such file", local);
        return here ? LB_OK : LB_E_NOTFOUND;
    }
    if (rc != LB_OK)
        return rc;
    char key[128];
    uint64_t size = 0;
    snprintf(key, sizeof key, "%s/%s", task_id, name);
    rc = lb_blob_head(&b, key, &size, why, whysz);
    if (rc != LB_OK)
        return here ? LB_OK : rc; /* none stored, or the store away: a copy here is the best there is */
    if (here && (uint64_t)st.st_size == size)
        return LB_OK;
    rc = fetch_key(&b, cfg, key, size, why, whysz);
    return rc != LB_OK && here ? LB_OK : rc;
}

/* The object key into the file local (its folders made), atomically. */
static int get_into(const lb_blobstore *b, const lb_config *cfg, const char *key, const char *local, char *why,
                    size_t whysz)
{
    char dir[LB_CFG_PATH + LB_PATH_MAX + 2];
    snprintf(dir, sizeof dir, "%s", local);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    if (slash && lb_mkdirs(dir, 0750) != LB_OK) {
        snprintf(why, whysz, "cannot create the folder %s: %s", dir, strerror(errno));
        return LB_E_IO;
    }
    return lb_blob_get_file(b, key, local, 0, -1, cfg->max_output_bytes, why, whysz);
}

static int fetch_key(const lb_blobstore *b, const lb_config *cfg, const char *key, uint64_t want_size, char *why,
                     size_t whysz)
{
    char local[LB_CFG_PATH + LB_PATH_MAX + 2];
    struct stat st;
    if (lb_path_join(local, sizeof local, cfg->artifacts_dir, key) != LB_OK) {
        snprintf(why, whysz, "the path of %.200s is too long", key);
        return LB_E_TOOBIG;
    }
    if (lstat(local, &st) == 0 && S_ISREG(st.st_mode) &&
        (want_size == UINT64_MAX || (uint64_t)st.st_size == want_size))
        return LB_OK;
    return get_into(b, cfg, key, local, why, whysz);
}

int lb_blob_task_fetch_output(const lb_config *cfg, const char *task_id, const char *path, char *why, size_t whysz)
{
    lb_blobstore b;
    char key[LB_PATH_MAX + 64];
    int rc = open_s3(cfg, &b, why, whysz);
    if (rc == LB_E_NOTFOUND)
        return LB_OK;
    if (rc != LB_OK)
        return rc;
    int n = snprintf(key, sizeof key, "%s/output/%s", task_id, path);
    if (!lb_id_valid(task_id) || n < 0 || (size_t)n >= sizeof key) {
        snprintf(why, whysz, "no such artifact key");
        return LB_E_INVAL;
    }
    return fetch_key(&b, cfg, key, UINT64_MAX, why, whysz);
}

/* what a list callback of this file needs: the store, the limits, where
 * to say why, and (delete) how many keys failed */
typedef struct task_ctx {
    const lb_blobstore *b;
    const lb_config *cfg;
    const char *prefix; /* what was listed: every key must be under it */
    int failed;
    char *why;
    size_t whysz;
} task_ctx;

/* A listed key is the store's word: clean and under the prefix asked
 * for, or refused (a store that lists another task's key must not make
 * us write into that task's folder). */
static int listed_ok(const task_ctx *t, const char *key)
{
    char clean[LB_PATH_MAX + 1];
    size_t pl = strlen(t->prefix);
    return !strncmp(key, t->prefix, pl) && key[pl] == '/' &&
           lb_path_clean_rel(key, strlen(key), clean, sizeof clean) == LB_OK && !strcmp(clean, key);
}

static int fetch_listed(void *ctx, const char *key, uint64_t size)
{
    task_ctx *f = ctx;
    if (!listed_ok(f, key)) {
        snprintf(f->why, f->whysz, "the store listed a key that is not a clean path under %s: %.200s", f->prefix,
                 key);
        return LB_E_PROTO;
    }
    return fetch_key(f->b, f->cfg, key, size, f->why, f->whysz);
}

int lb_blob_task_fetch_outputs(const lb_config *cfg, const char *task_id, const char *folder, char *why,
                               size_t whysz)
{
    lb_blobstore b;
    char prefix[LB_PATH_MAX + 64];
    int rc = open_s3(cfg, &b, why, whysz);
    if (rc == LB_E_NOTFOUND)
        return LB_OK;
    if (rc != LB_OK)
        return rc;
    int n = snprintf(prefix, sizeof prefix, "%s/output%s%s", task_id, folder[0] ? "/" : "", folder);
    if (!lb_id_valid(task_id) || n < 0 || (size_t)n >= sizeof prefix) {
        snprintf(why, whysz, "no such artifact folder");
        return LB_E_INVAL;
    }
    task_ctx f = {&b, cfg, prefix, 0, why, whysz};
    return lb_blob_list(&b, prefix, cfg->max_output_files, fetch_listed, &f, why, whysz);
}

static int delete_listed(void *ctx, const char *key, uint64_t size)
{
    task_ctx *d = ctx;
    char one[512];
    if (!listed_ok(d, key))
        return LB_OK; /* not the task's: never deleted on a store's word */
    /* every key is tried: one that fails does not keep the others */
    if (lb_blob_delete(d->b, key, one, sizeof one) != LB_OK && d->failed++ == 0)
        snprintf(d->why, d->whysz, "%s", one);
    return LB_OK;
}

int lb_blob_task_keep_round(const lb_config *cfg, const char *task_id, int round, const char *artifacts_json,
                            char *why, size_t whysz)
{
    lb_blobstore b;
    int rc = open_s3_task(cfg, task_id, &b, why, whysz);
    if (rc == LB_E_NOTFOUND)
        return LB_OK;
    if (rc != LB_OK)
        return rc;
    if (round < 1 || round > 99999) {
        snprintf(why, whysz, "no such round");
        return LB_E_INVAL;
    }
    cJSON *list = cJSON_Parse(artifacts_json ? artifacts_json : "[]");
    if (!cJSON_IsArray(list)) {
        cJSON_Delete(list);
        snprintf(why, whysz, "the round's list of files does not read");
        return LB_E_PROTO;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "path"));
        char clean[LB_PATH_MAX + 1], src[LB_PATH_MAX + 64], dst[LB_PATH_MAX + 96];
        /* the store's word, once written by an agent: a clean path or nothing */
        if (!p || lb_path_clean_rel(p, strlen(p), clean, sizeof clean) != LB_OK)
            continue;
        int n1 = snprintf(src, sizeof src, "%s/output/%s", task_id, clean);
        int n2 = snprintf(dst, sizeof dst, "%s/rounds/%d/output/%s", task_id, round, clean);
        if (n1 < 0 || (size_t)n1 >= sizeof src || n2 < 0 || (size_t)n2 >= sizeof dst)
            continue;
        /* a file the store lacks (its round's agent could not store it)
         * stays unkept; the others are */
        if ((rc = lb_blob_copy(&b, src, dst, why, whysz)) == LB_E_NOTFOUND)
            rc = LB_OK;
        else if (rc != LB_OK)
            break;
    }
    cJSON_Delete(list);
    return rc;
}

int lb_blob_task_fetch_round_file(const lb_config *cfg, const char *task_id, int round, int last, const char *path,
                                  uint64_t size, char *why, size_t whysz)
{
    lb_blobstore b;
    char key[LB_PATH_MAX + 96];
    int rc = open_s3_task(cfg, task_id, &b, why, whysz);
    if (rc == LB_E_NOTFOUND)
        return LB_OK;
    if (rc != LB_OK)
        return rc;
    int n = snprintf(key, sizeof key, "%s/rounds/%d/output/%s", task_id, round, path);
    if (round < 1 || n < 0 || (size_t)n >= sizeof key) {
        snprintf(why, whysz, "no such file of a round");
        return LB_E_INVAL;
    }
    rc = fetch_key(&b, cfg, key, size, why, whysz);
    if (rc != LB_E_NOTFOUND || !last)
        return rc;
    /* the last round's files are the task's outputs */
    char src[LB_PATH_MAX + 64], local[LB_CFG_PATH + LB_PATH_MAX + 2];
    n = snprintf(src, sizeof src, "%s/output/%s", task_id, path);
    if (n < 0 || (size_t)n >= sizeof src || lb_path_join(local, sizeof local, cfg->artifacts_dir, key) != LB_OK) {
        snprintf(why, whysz, "the path of %.200s is too long", key);
        return LB_E_TOOBIG;
    }
    return get_into(&b, cfg, src, local, why, whysz);
}

int lb_blob_task_delete(const lb_config *cfg, const char *task_id, char *why, size_t whysz)
{
    lb_blobstore b;
    int rc = open_s3_task(cfg, task_id, &b, why, whysz);
    if (rc == LB_E_NOTFOUND)
        return LB_OK;
    if (rc != LB_OK)
        return rc;
    task_ctx d = {&b, cfg, task_id, 0, why, whysz};
    rc = lb_blob_list(&b, task_id, 2 * cfg->max_output_files + 1000, delete_listed, &d, why, whysz);
    if (rc == LB_OK && d.failed) {
        char first[512];
        snprintf(first, sizeof first, "%s", why);
        snprintf(why, whysz, "%d objects not deleted, the first: %s", d.failed, first);
        rc = LB_E_UNAVAILABLE;
    }
    return rc;
}

int lb_blob_task_fetch_inputs(const lb_config *cfg, const char *task_id, char *why, size_t whysz)
{
    lb_blobstore b;
    char prefix[64];
    int rc = open_s3_task(cfg, task_id, &b, why, whysz);
    if (rc == LB_E_NOTFOUND)
        return LB_OK;
    if (rc != LB_OK)
        return rc;
    snprintf(prefix, sizeof prefix, "%s/input", task_id);
    task_ctx f = {&b, cfg, prefix, 0, why, whysz};
    return lb_blob_list(&b, prefix, LB_BLOB_INPUTS_MAX, fetch_listed, &f, why, whysz);
}

int lb_blob_task_mark_agent(const lb_config *cfg, const char *task_dir)
{
    if (!cfg->s3_bucket[0])
        return LB_OK;
    char p[LB_CFG_PATH + 96];
    snprintf(p, sizeof p, "%s/" LB_BLOB_MARK_AGENT, task_dir);
    struct stat st;
    if (lstat(p, &st) == 0)
        return LB_OK; /* an earlier round of this host's */
    return lb_write_file_atomic(p, "", 0, 0640);
}

int lb_blob_task_mark_stored(const lb_config *cfg, const char *task_dir, int round)
{
    if (!cfg->s3_bucket[0])
        return LB_OK;
    char p[LB_CFG_PATH + 96], n[24];
    snprintf(p, sizeof p, "%s/" LB_BLOB_MARK_STORED, task_dir);
    int len = snprintf(n, sizeof n, "%d\n", round > 0 ? round : 1);
    return lb_write_file_atomic(p, n, (size_t)len, 0640);
}

int lb_blob_task_dir_in_store(const char *task_dir, int round)
{
    char p[LB_CFG_PATH + 96];
    struct stat st;
    snprintf(p, sizeof p, "%s/" LB_BLOB_MARK_AGENT, task_dir);
    if (lstat(p, &st) != 0)
        return errno == ENOENT; /* fetched copies only (an error: keep it) */
    snprintf(p, sizeof p, "%s/" LB_BLOB_MARK_STORED, task_dir);
    char *text = NULL;
    size_t len = 0;
    if (lb_read_file(p, 32, &text, &len) != LB_OK)
        return 0;
    char *end = NULL;
    long stored = strtol(text, &end, 10);
    int ok = end != text && (*end == '\n' || !*end) && stored >= (round > 0 ? round : 1);
    free(text);
    return ok;
}
