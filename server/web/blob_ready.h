/* several nodes: a task's output files made local from the object store before
 * nginx serves them (blob_ready.c). */
#ifndef LB_WEB_BLOB_READY_H
#define LB_WEB_BLOB_READY_H

#include "web/request.h"

/* path: one artifact (tree 0) or a folder of the output ("" = all, tree
 * 1). 1 when the files are local (always, with no s3_bucket); 0 when
 * answered: 404 (listed but gone from the store) or a JSON 503 with
 * Retry-After (the store cannot be read). */
int lb_blob_ready(lb_req *r, const char *path, int tree);

/* A task's record (name: "trajectory.json", "tokens.jsonl",
 * "rounds/<n>.json") made current here from the object store (a round
 * another node ran). 1: go on and serve the local file if there is one
 * (none anywhere: the caller's own 404); 0 when answered: a JSON 503 with
 * Retry-After (the store cannot be read and there is no copy here). */
int lb_blob_record_ready(lb_req *r, const char *name);

#endif
