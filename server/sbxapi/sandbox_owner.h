/* Who owns a sandbox or snapshot of the sandbox API (and E2B's): the user
 * whose own API token made it, or the shared sandbox token ("").
 *
 * A user's token reaches only that user's sandboxes and snapshots: another
 * user's id is answered exactly as an absent one (404), and lists leave
 * them out. The shared token (sandbox_api_token) reaches every one, as it
 * always did. The router decides access (front/router.c, lb_route_admit);
 * the creates ask lb_sbx_owner_quota for the user's limits. */
#ifndef LB_SANDBOX_OWNER_H
#define LB_SANDBOX_OWNER_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "sbxapi/sandbox_spec.h"
#include "web/request.h"

/* The name r's token owns things as: the user's, "" for the shared token. */
const char *lb_sbx_owner_name(const lb_req *r);

/* Whether r may reach the sandbox id (1 also when there is none: the
 * handler answers why it is absent). */
int lb_sbx_owner_sees(lb_req *r, const char *id);

/* Whether r may reach the snapshot id: the shared token every one, a user
 * those their token made (recorded by lb_snapshot_owner_save). */
int lb_snapshot_owner_sees(lb_req *r, const char *id);

/* Records that r's token made snapshot id (a small file per snapshot,
 * written atomically); logs and goes on when it cannot (then only the
 * shared token reaches it). */
void lb_snapshot_owner_save(lb_req *r, const char *id);
/* Forgets the record of a deleted snapshot. */
void lb_snapshot_owner_forget(lb_req *r, const char *id);

/* One create's place in its user's minute, given back when the create
 * fails (so a refused create does not count). */
typedef struct lb_sbx_quota_ticket {
    int slot;                 /* -1: none taken */
    int64_t at, old;
} lb_sbx_quota_ticket;

/* Before a create by r: sets sp's owner and its limit of sandboxes at
 * once, refuses another user's snapshot (404) and a user who holds their
 * limit already (429), and takes one of the user's creates of the minute
 * into t. 0 when it may go on; else the HTTP status (404, 429, 503) with
 * msg, and *retry_s (seconds, for Retry-After) on a 429 of the minute. */
LB_MUST_CHECK int lb_sbx_owner_quota(lb_req *r, lb_sbx_spec *sp, lb_sbx_quota_ticket *t, char *msg, size_t msgsz,
                                     int *retry_s);
/* Gives t's create back: the create it was for failed. */
void lb_sbx_owner_refund(lb_req *r, lb_sbx_quota_ticket *t);

#endif
