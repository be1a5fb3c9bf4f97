/* several nodes: a web removes its copies of tasks deleted through other webs
 * (tombstones.c; the store's side is store/store_tombstone.h).
 *
 * With an object store (s3_bucket), each host's artifacts/ is a cache of
 * the bucket, and its nginx serves a signed /dl/ link from its copy with
 * no word from the backend. A task deleted through another web must stop
 * being served here too: one thread reads the store's new tombstones
 * every second and removes artifacts/<id> of each, so the links of a
 * deleted task stop everywhere within about a second (tested by
 * test_stateless_webs.py). Without a bucket the webs share one folder
 * (or there is one web), which the delete itself empties: no thread.
 */
#ifndef LB_WEB_TOMBSTONES_H
#define LB_WEB_TOMBSTONES_H

#include "common/status.h"

struct lb_config; /* common/config.h */

/* How often a web looks for new ones: with nginx's open-file cache (a
 * file looked at again after 1 s, nginx.conf), a deleted task's links
 * stop everywhere within 1.25 s. A look is one indexed query. */
#define LB_TOMBSTONES_LOOK_MS 250

/* Starts the thread (only with s3_bucket set; LB_OK and nothing
 * otherwise). Its first look takes every tombstone still kept, so a web
 * that was down catches up. */
LB_MUST_CHECK int lb_tombstones_start(const struct lb_config *cfg);

#endif
