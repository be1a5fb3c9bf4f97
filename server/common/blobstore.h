/* Where task inputs and outputs live (blobstore.c): the local folder
 * artifacts_dir (the default), or an S3-compatible bucket when s3_bucket
 * is set. Keys are clean relative paths (lb_path_clean_rel), the same
 * layout both ways: "<task id>/input/<path>", "<task id>/output/<path>";
 * locally a key is the file artifacts_dir/<key>. */
#ifndef LB_COMMON_BLOBSTORE_H
#define LB_COMMON_BLOBSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/s3.h"
#include "common/status.h"

struct lb_config; /* common/config.h */

typedef struct lb_blobstore {
    int is_s3;
    char root[4096]; /* local: artifacts_dir */
    lb_s3 s3;
} lb_blobstore;

/* LB_E_INVAL (why) when s3_bucket is set and the other s3_* keys are not
 * usable. */
LB_MUST_CHECK int lb_blob_open(const struct lb_config *cfg, lb_blobstore *b, char *why, size_t whysz);
/* "s3://bucket" or the local folder, for messages. */
const char *lb_blob_where(const lb_blobstore *b, char *out, size_t outsz);

LB_MUST_CHECK int lb_blob_put_file(const lb_blobstore *b, const char *key, const char *path, uint64_t max_bytes,
                                   char *why, size_t whysz);
/* To dest atomically; len < 0: to the end. */
LB_MUST_CHECK int lb_blob_get_file(const lb_blobstore *b, const char *key, const char *dest, int64_t off, int64_t len,
                                   uint64_t max_bytes, char *why, size_t whysz);
LB_MUST_CHECK int lb_blob_head(const lb_blobstore *b, const char *key, uint64_t *size, char *why, size_t whysz);
LB_MUST_CHECK int lb_blob_delete(const lb_blobstore *b, const char *key, char *why, size_t whysz);
/* Copies the object src_key to key (in the bucket: by the store itself;
 * locally: a file copy, atomically). */
LB_MUST_CHECK int lb_blob_copy(const lb_blobstore *b, const char *src_key, const char *key, char *why, size_t whysz);
/* Every object under the folder prefix ("" or a clean path: "<id>/output"),
 * keys in full, at most max_keys. */
LB_MUST_CHECK int lb_blob_list(const lb_blobstore *b, const char *prefix, int max_keys, lb_s3_list_cb cb, void *ctx,
                               char *why, size_t whysz);
/* Every regular file under dir as prefix/<its relative path> (symbolic
 * links and special files are skipped: a sandbox made them); at most
 * max_files files and max_bytes in all. Local store: nothing to do when
 * dir is already the folder of prefix. *n_files: how many were stored. */
LB_MUST_CHECK int lb_blob_put_tree(const lb_blobstore *b, const char *prefix, const char *dir, int max_files,
                                   uint64_t max_bytes, int *n_files, char *why, size_t whysz);
/* Every object under prefix into dir/<rest of its key> (folders made as
 * needed), within the same caps: how a node fetches a task's inputs. */
LB_MUST_CHECK int lb_blob_get_tree(const lb_blobstore *b, const char *prefix, const char *dir, int max_files,
                                   uint64_t max_bytes, int *n_files, char *why, size_t whysz);

#endif
