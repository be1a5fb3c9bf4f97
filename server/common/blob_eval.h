/* An evaluation's dataset in the object store (blob_eval.c), several nodes:
 * stored when the evaluation is uploaded, fetched by whichever web drives
 * it (a takeover on another host), deleted with it. Keys are
 * "evals/<eval id>/<path in the eval's folder>" ("evals" is no task id,
 * so no task's objects share the prefix). With no s3_bucket every call is
 * a no-op: the eval's folder (var/web/evals/<id>) is the only copy. */
#ifndef LB_COMMON_BLOB_EVAL_H
#define LB_COMMON_BLOB_EVAL_H

#include <stddef.h>

#include "common/blobstore.h"
#include "common/status.h"

struct lb_config; /* common/config.h */

/* Stores <dir>/<name> (dir: the eval's folder; name: a clean relative
 * path in it, a file or a folder stored with all under it) as
 * evals/<id>/<name>. Capped as an upload is (eval_max_upload_mb in all,
 * eval_max_rows * 8 + 64 files): LB_E_TOOBIG past them; LB_E_INVAL for a
 * bad id or name; else the store's error, with why. */
LB_MUST_CHECK int lb_blob_eval_put(const struct lb_config *cfg, const char *eval_id, const char *dir,
                                   const char *name, char *why, size_t whysz);
/* Makes dir hold every object under evals/<id>/, each fetched (atomically)
 * when its file here is missing or of another size. *n_fetched: how many
 * were. LB_E_NOTFOUND when the store has nothing under evals/<id>/ (an
 * eval stored without a bucket, or deleted); a key that is not a clean
 * path under the prefix is LB_E_PROTO, past the caps LB_E_TOOBIG; else
 * the store's error (LB_E_UNAVAILABLE, LB_E_IO...: it may answer later). */
LB_MUST_CHECK int lb_blob_eval_fetch(const struct lb_config *cfg, const char *eval_id, const char *dir,
                                     int *n_fetched, char *why, size_t whysz);
/* Deletes every object under evals/<id>/. Every key is tried; LB_OK or
 * the first failure with why (what is left is unreachable: no eval row
 * names it). */
LB_MUST_CHECK int lb_blob_eval_delete(const struct lb_config *cfg, const char *eval_id, char *why, size_t whysz);

/* The three on a given store, whatever its kind, the caps still from cfg:
 * what the calls above use with the bucket, and the unit tests with a
 * local folder standing in for it. */
LB_MUST_CHECK int lb_blob_eval_put_in(const lb_blobstore *b, const struct lb_config *cfg, const char *eval_id,
                                      const char *dir, const char *name, char *why, size_t whysz);
LB_MUST_CHECK int lb_blob_eval_fetch_in(const lb_blobstore *b, const struct lb_config *cfg, const char *eval_id,
                                        const char *dir, int *n_fetched, char *why, size_t whysz);
LB_MUST_CHECK int lb_blob_eval_delete_in(const lb_blobstore *b, const struct lb_config *cfg, const char *eval_id,
                                         char *why, size_t whysz);

#endif
