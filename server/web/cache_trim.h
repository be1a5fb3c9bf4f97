/* several nodes: the web keeps this host's artifacts/ (the object store's
 * cache here) under artifacts_cache_max_mb (cache_trim.c).
 *
 * With s3_bucket set every task's files are in the bucket, and each host's
 * artifacts/ only holds copies: inputs an admission or a node wrote,
 * outputs and records an agent wrote, files a web fetched to serve them.
 * Every artifacts_cache_trim_s a thread measures the task folders and,
 * over the cap, removes the least recently written ones down to nine
 * tenths of it. A folder's size is its files' blocks on disk, a file
 * with several names (a round's outputs are kept as hard links) counted
 * once. It removes only a folder that holds nothing the bucket lacks
 * (common/blob_task.h's markers: no agent wrote there, or the agent of
 * the task's last round stored it all), of a task that is final (or
 * deleted), written to at least artifacts_cache_min_age_s ago. A removed
 * task's files are fetched again when asked for (downloads, previews,
 * bundles, records), as any host does for a task it never ran.
 */
#ifndef LB_WEB_CACHE_TRIM_H
#define LB_WEB_CACHE_TRIM_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

struct lb_config; /* common/config.h */

/* Starts the thread: with s3_bucket and artifacts_cache_max_mb > 0 only
 * (LB_OK and nothing otherwise). */
LB_MUST_CHECK int lb_cache_trim_start(const struct lb_config *cfg);

/* One pass now (the thread's; tests and `llmbox` commands may call it):
 * *removed folders and *freed bytes. */
LB_MUST_CHECK int lb_cache_trim_once(const struct lb_config *cfg, size_t *removed, uint64_t *freed);

#endif
