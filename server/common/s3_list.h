/* The parser of an S3 ListObjectsV2 answer (s3_list.c): the one XML
 * document llmbox reads from an object store. Hostile input: caps on the
 * document, the number of entries and each key. */
#ifndef LB_COMMON_S3_LIST_H
#define LB_COMMON_S3_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define LB_S3_LIST_MAX_DOC (4u << 20) /* one page's answer, bytes */
#define LB_S3_LIST_MAX_ENTRIES 1000   /* S3's own page size */
#define LB_S3_KEY_MAX 1024            /* S3's own key limit, bytes */
#define LB_S3_TOKEN_MAX 1024          /* a continuation token, bytes */

/* Called once per <Contents> entry with its decoded key (NUL-terminated,
 * no NUL inside) and size; a non-zero return stops the parse with it. */
typedef int (*lb_s3_list_cb)(void *ctx, const char *key, uint64_t size);

/* Parses one page (doc, n bytes, need not be NUL-terminated). *truncated
 * is set when the store has more, with its continuation token (decoded)
 * in next (at least LB_S3_TOKEN_MAX + 1 bytes). LB_E_PROTO (why says
 * what) when the document is not a ListBucketResult, an entry lacks its
 * Key or Size, a value is malformed or an entity is unknown; LB_E_TOOBIG
 * past a cap. */
LB_MUST_CHECK int lb_s3_list_parse(const char *doc, size_t n, lb_s3_list_cb cb, void *ctx, int *truncated, char *next,
                                   char *why, size_t whysz);

/* The <Code> of an S3 error document (at most outsz - 1 bytes of
 * [A-Za-z0-9.]), "" when there is none. */
void lb_s3_error_code(const char *doc, size_t n, char *out, size_t outsz);

#endif
