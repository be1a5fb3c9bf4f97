/* An evaluation's dataset in the object store (common/blob_eval.c), with a
 * local folder standing in for the bucket (the _in calls): stored once,
 * fetched where missing or of another size, deleted; every refusal (a bad
 * id or name, the caps both ways, nothing stored, a store that cannot be
 * read) with its status and a sentence, and nothing written on the way.
 * Without a bucket the cfg calls do nothing. */
#include "common/blob_eval.h"
#include "common/config.h"
#include "common/util.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ID "0123456789abcdef0123456789abcdef"

static char T[64];
static lb_config cfg;
static lb_blobstore store;
static char why[1024];

static void put(const char *rel, const char *text)
{
    char p[512], d[512];
    snprintf(p, sizeof p, "%s/%s", T, rel);
    snprintf(d, sizeof d, "%s", p);
    *strrchr(d, '/') = '\0';
    CHECK(lb_mkdirs(d, 0750) == LB_OK);
    CHECK(lb_write_file_atomic(p, text, strlen(text), 0640) == LB_OK);
}

/* the file's text, "" when it is missing */
static const char *text(const char *rel)
{
    static char buf[256];
    char p[512];
    snprintf(p, sizeof p, "%s/%s", T, rel);
    buf[0] = '\0';
    FILE *f = fopen(p, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

static int exists(const char *rel)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", T, rel);
    return lstat(p, &st) == 0;
}

static void path(char *out, size_t outsz, const char *rel)
{
    snprintf(out, outsz, "%s/%s", T, rel);
}

static void reset_caps(void)
{
    cfg.eval_max_rows = 10000;
    cfg.eval_max_upload_bytes = 1 << 20;
}

TEST(put_a_file_and_a_folder)
{
    char w1[256];
    path(w1, sizeof w1, "w1/evals/" ID);
    put("w1/evals/" ID "/upload/set.jsonl", "{\"id\":\"a\"}\n");
    put("w1/evals/" ID "/dataset/rows/a/row.json", "{\"id\":\"a\"}");
    put("w1/evals/" ID "/dataset/rows/a/files/x.txt", "42\n");
    put("w1/evals/" ID "/resume.jsonl", "not stored\n");
    CHECK(lb_blob_eval_put_in(&store, &cfg, ID, w1, "upload/set.jsonl", why, sizeof why) == LB_OK);
    CHECK(lb_blob_eval_put_in(&store, &cfg, ID, w1, "dataset", why, sizeof why) == LB_OK);
    CHECK_STR(text("bucket/evals/" ID "/upload/set.jsonl"), "{\"id\":\"a\"}\n");
    CHECK_STR(text("bucket/evals/" ID "/dataset/rows/a/files/x.txt"), "42\n");
    CHECK(!exists("bucket/evals/" ID "/resume.jsonl")); /* only what it was asked to store */
}

TEST(put_refusals)
{
    char w1[256];
    path(w1, sizeof w1, "w1/evals/" ID);
    why[0] = '\0';
    CHECK(lb_blob_eval_put_in(&store, &cfg, "../x", w1, "dataset", why, sizeof why) == LB_E_INVAL);
    CHECK(strstr(why, "not an evaluation's id") != NULL);
    CHECK(lb_blob_eval_put_in(&store, &cfg, ID, w1, "../../x", why, sizeof why) == LB_E_INVAL);
    CHECK(strstr(why, "is not a clean path") != NULL);
    CHECK(lb_blob_eval_put_in(&store, &cfg, ID, w1, "/etc/passwd", why, sizeof why) == LB_E_INVAL);
    CHECK(lb_blob_eval_put_in(&store, &cfg, ID, w1, "upload/none.jsonl", why, sizeof why) == LB_E_NOTFOUND);
    CHECK(strstr(why, "none.jsonl") != NULL);
    /* the caps of an upload: its bytes, its files */
    cfg.eval_max_upload_bytes = 4;
    CHECK(lb_blob_eval_put_in(&store, &cfg, ID, w1, "upload/set.jsonl", why, sizeof why) == LB_E_TOOBIG);
    CHECK(lb_blob_eval_put_in(&store, &cfg, ID, w1, "dataset", why, sizeof why) == LB_E_TOOBIG);
    reset_caps();
    cfg.eval_max_rows = 0; /* 65 files at most */
    for (int i = 0; i < 70; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "w1/many/f%d", i);
        put(rel, "x");
    }
    char many[256];
    path(many, sizeof many, "w1");
    CHECK(lb_blob_eval_put_in(&store, &cfg, ID, many, "many", why, sizeof why) == LB_E_TOOBIG);
    CHECK(strstr(why, "more than 65 files") != NULL);
    char left[256]; /* what the refused put had stored before the cap: not the eval's dataset */
    path(left, sizeof left, "bucket/evals/" ID "/many");
    CHECK(lb_rmtree(left) == LB_OK);
    reset_caps();
}

TEST(fetch_where_missing_or_of_another_size)
{
    char w2[256];
    int n = -1;
    path(w2, sizeof w2, "w2/evals/" ID);
    CHECK(lb_blob_eval_fetch_in(&store, &cfg, ID, w2, &n, why, sizeof why) == LB_OK);
    CHECK(n == 3);
    CHECK_STR(text("w2/evals/" ID "/upload/set.jsonl"), "{\"id\":\"a\"}\n");
    CHECK_STR(text("w2/evals/" ID "/dataset/rows/a/files/x.txt"), "42\n");
    CHECK(lb_blob_eval_fetch_in(&store, &cfg, ID, w2, &n, why, sizeof why) == LB_OK);
    CHECK(n == 0); /* all here already */
    put("w2/evals/" ID "/dataset/rows/a/files/x.txt", "4"); /* a copy of another size */
    CHECK(lb_blob_eval_fetch_in(&store, &cfg, ID, w2, &n, why, sizeof why) == LB_OK);
    CHECK(n == 1);
    CHECK_STR(text("w2/evals/" ID "/dataset/rows/a/files/x.txt"), "42\n");
}

TEST(fetch_refusals)
{
    char w3[256];
    int n = -1;
    path(w3, sizeof w3, "w3/evals/x");
    CHECK(lb_blob_eval_fetch_in(&store, &cfg, "nope", w3, &n, why, sizeof why) == LB_E_INVAL);
    CHECK(lb_blob_eval_fetch_in(&store, &cfg, "ffffffffffffffffffffffffffffffff", w3, &n, why, sizeof why) ==
          LB_E_NOTFOUND);
    CHECK(strstr(why, "no files under evals/ffffffffffffffffffffffffffffffff/") != NULL);
    CHECK(n == 0 && !exists("w3"));
    /* more in the store than an upload may be: refused, not cut */
    cfg.eval_max_upload_bytes = 8;
    CHECK(lb_blob_eval_fetch_in(&store, &cfg, ID, w3, &n, why, sizeof why) == LB_E_TOOBIG);
    CHECK(strstr(why, "more under evals/" ID) != NULL);
    reset_caps();
    /* a store that cannot be read: its error, nothing written */
    lb_blobstore broken = store;
    snprintf(broken.root, sizeof broken.root, "%s/w1/upload-is-not-a-bucket", T);
    put("w1/upload-is-not-a-bucket", "a file, not a folder");
    CHECK(lb_blob_eval_fetch_in(&broken, &cfg, ID, w3, &n, why, sizeof why) == LB_E_IO);
    CHECK(strstr(why, "cannot read the folder") != NULL);
    CHECK(n == 0 && !exists("w3"));
    char w1[256];
    path(w1, sizeof w1, "w1/evals/" ID);
    CHECK(lb_blob_eval_put_in(&broken, &cfg, ID, w1, "dataset", why, sizeof why) == LB_E_IO);
}

TEST(delete_then_nothing_to_fetch)
{
    char w4[256];
    int n = -1;
    path(w4, sizeof w4, "w4/evals/" ID);
    CHECK(lb_blob_eval_delete_in(&store, &cfg, ID, why, sizeof why) == LB_OK);
    CHECK(!exists("bucket/evals/" ID "/upload/set.jsonl"));
    CHECK(!exists("bucket/evals/" ID "/dataset/rows/a/row.json"));
    CHECK(lb_blob_eval_fetch_in(&store, &cfg, ID, w4, &n, why, sizeof why) == LB_E_NOTFOUND);
    CHECK(lb_blob_eval_delete_in(&store, &cfg, ID, why, sizeof why) == LB_OK); /* twice: nothing left, fine */
    CHECK(lb_blob_eval_delete_in(&store, &cfg, "x/../y", why, sizeof why) == LB_E_INVAL);
}

TEST(no_bucket_no_op)
{
    char w1[256];
    int n = -1;
    path(w1, sizeof w1, "w1/evals/" ID);
    snprintf(cfg.artifacts_dir, sizeof cfg.artifacts_dir, "%s/artifacts", T);
    CHECK(lb_blob_eval_put(&cfg, ID, w1, "dataset", why, sizeof why) == LB_OK);
    CHECK(lb_blob_eval_fetch(&cfg, ID, w1, &n, why, sizeof why) == LB_OK);
    CHECK(n == 0);
    CHECK(lb_blob_eval_delete(&cfg, ID, why, sizeof why) == LB_OK);
    CHECK(!exists("artifacts")); /* the local store is not the bucket: nothing copied */
    CHECK(exists("w1/evals/" ID "/dataset/rows/a/row.json"));
}

int main(void)
{
    snprintf(T, sizeof T, "/tmp/lb-blob-eval-XXXXXX");
    if (!mkdtemp(T)) {
        perror("mkdtemp");
        return 1;
    }
    memset(&store, 0, sizeof store);
    snprintf(store.root, sizeof store.root, "%s/bucket", T);
    reset_caps();
    RUN(put_a_file_and_a_folder);
    RUN(put_refusals);
    RUN(fetch_where_missing_or_of_another_size);
    RUN(fetch_refusals);
    RUN(delete_then_nothing_to_fetch);
    RUN(no_bucket_no_op);
    LB_IGNORE(lb_rmtree(T));
    return testlib_done();
}
