/* A small S3 client on libcurl (s3.c): put, get (ranges), head, delete,
 * list by prefix. libcurl signs every request (CURLOPT_AWS_SIGV4); this
 * file adds what libcurl 7.88 leaves to its caller: the
 * x-amz-content-sha256 header and query strings in canonical form
 * (sorted, strictly encoded). Timeouts, retries with backoff on 5xx and
 * connection errors; every failure a stable status and a sentence. */
#ifndef LB_COMMON_S3_H
#define LB_COMMON_S3_H

#include <stddef.h>
#include <stdint.h>

#include "common/s3_list.h"
#include "common/status.h"

struct lb_config; /* common/config.h */

typedef struct lb_s3 {
    char endpoint[256];   /* http(s)://host[:port], no path, no trailing '/' */
    char bucket[64];
    char region[64];
    char access_key[128];
    char secret_key[256];
    int virtual_host;     /* 1: https://BUCKET.host/key; 0: host/BUCKET/key (path style) */
    int timeout_s;        /* connect timeout, and the longest a transfer may stall */
    int retries;          /* extra tries on 5xx and connection errors */
} lb_s3;

/* From cfg's s3_* keys. LB_E_INVAL (why) when the endpoint is not
 * http(s)://host[:port], the bucket name is not a valid S3 name or the
 * keys are missing. */
LB_MUST_CHECK int lb_s3_from_config(const struct lb_config *cfg, lb_s3 *s, char *why, size_t whysz);

/* Uploads the file at path as key; LB_E_TOOBIG when it is larger than
 * max_bytes (0: no cap). */
LB_MUST_CHECK int lb_s3_put_file(const lb_s3 *s, const char *key, const char *path, uint64_t max_bytes, char *why,
                                 size_t whysz);
/* Downloads key to dest atomically (a temp file beside it, renamed when
 * complete). len < 0: the whole object from off; otherwise bytes off ..
 * off+len-1. LB_E_TOOBIG when more than max_bytes (0: no cap) arrive. */
LB_MUST_CHECK int lb_s3_get_file(const lb_s3 *s, const char *key, const char *dest, int64_t off, int64_t len,
                                 uint64_t max_bytes, char *why, size_t whysz);
/* The size of key; LB_E_NOTFOUND when there is no such object. */
LB_MUST_CHECK int lb_s3_head(const lb_s3 *s, const char *key, uint64_t *size, char *why, size_t whysz);
/* Deletes key (no error when it did not exist: S3 answers 204 either way). */
LB_MUST_CHECK int lb_s3_delete(const lb_s3 *s, const char *key, char *why, size_t whysz);
/* several nodes: copies the object src_key to key inside the bucket
 * (CopyObject: the store copies, nothing passes through here). */
LB_MUST_CHECK int lb_s3_copy(const lb_s3 *s, const char *src_key, const char *key, char *why, size_t whysz);
/* Every object whose key starts with prefix, page by page, at most
 * max_keys in all (LB_E_TOOBIG past it). */
LB_MUST_CHECK int lb_s3_list(const lb_s3 *s, const char *prefix, int max_keys, lb_s3_list_cb cb, void *ctx,
                             char *why, size_t whysz);
/* Creates the bucket (tests and first setup); an existing one is fine. */
LB_MUST_CHECK int lb_s3_create_bucket(const lb_s3 *s, char *why, size_t whysz);

#endif
