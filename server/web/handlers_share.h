/* Share links of a task (follow-ups, handlers_share.c): a read-only view of
 * a task (its thread, answers and files) for someone without an account,
 * expiring, revocable by deleting the link or the task. */
#ifndef LB_WEB_HANDLERS_SHARE_H
#define LB_WEB_HANDLERS_SHARE_H

#include "web/request.h"

#define LB_SHARE_TTL_DEFAULT_S (7 * 86400) /* a week: long enough to read, short enough to forget */
#define LB_SHARE_TTL_MAX_S (30 * 86400)
#define LB_SHARES_MAX 100                   /* live links per task */

/* POST /api/tasks/{id}/shares[?ttl_s=N] -> 201 {id, url, api_url, expires_ms} */
void lb_h_share_create(lb_req *r);
/* GET /api/tasks/{id}/shares -> {shares:[{id, url, api_url, created_ms, expires_ms}]} */
void lb_h_share_list(lb_req *r);
/* DELETE /api/tasks/{id}/shares/{share} -> {id, deleted} */
void lb_h_share_delete(lb_req *r);
/* GET /api/shared/{share}: the task as its owner sees it, read-only and
 * without what is the owner's business (the kept sandbox, the preview
 * key); files with signed download links. 404 when the link does not
 * exist, has expired, was revoked, or its task was deleted. */
void lb_h_shared_get(lb_req *r);

#endif
