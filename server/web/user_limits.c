/* Per-user limits on starting tasks (the contract is user_limits.h).
 *
 * Tasks queued or running: counted in the database, so the count survives
 * a restart of the web; this early check spares an upload that would be
 * refused, and the insert itself checks again atomically (store.c), so two
 * requests at once cannot both take the last place.
 *
 * Starts per minute: a sliding window, one slot per start a user may make
 * in 60 s holding the time it was taken. A start takes a slot older than
 * 60 s; a request that makes no task gives its slot back, so a refused
 * upload (400, 413) does not count against the user. Several nodes: the slots
 * are rows of the store (store_shared.c), taken by compare-and-swap, so
 * every web on one database counts the same starts, and a restart of a
 * web forgets none. Their times are the wall clock: webs on several
 * hosts compare them, so the hosts' clocks must agree (NTP) to well
 * within the minute. */
#include "web/user_limits.h"

#include "web/http.h"
#include "common/config.h"
#include "store/store.h"
#include "store/store_shared.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>

#define LB_WINDOW_MS 60000

uint64_t lb_limits_upload(const lb_req *r)
{
    return r->user ? r->user->max_upload_bytes : r->cfg->max_upload_bytes;
}

int lb_limits_start(lb_req *r, lb_start_ticket *t)
{
    const lb_config *cfg = r->cfg;
    t->user = -1;
    const lb_user_cfg *u = r->user;
    if (!u)
        return LB_OK;
    if (u->max_tasks > 0) {
        int active = 0;
        int rc = lb_store_tasks_active_of(r->store, u->name, &active);
        if (rc != LB_OK) {
            lb_http_drain(r);
            lb_http_store_error(r, rc, "count your tasks");
            return rc;
        }
        if (active >= u->max_tasks) {
            lb_http_drain(r);
            lb_http_error(r, 429, "too_many_tasks",
                          "You already have %d task%s queued or running, your limit; start this one when one of "
                          "them has finished (or stop one).",
                          active, active == 1 ? "" : "s");
            return LB_E_BUSY;
        }
    }
    int ui = (int)(u - cfg->users);
    if (u->tasks_per_minute <= 0 || ui < 0 || ui >= cfg->n_users)
        return LB_OK;
    int64_t now = lb_now_ms(), oldest = now;
    int slot = -1;
    int64_t old = 0;
    int rc = lb_store_rate_take(r->store, u->name, u->tasks_per_minute, now, LB_WINDOW_MS, &slot, &old, &oldest);
    if (rc == LB_OK) {
        t->user = ui;
        t->slot = slot;
        t->old = old;
        t->at = now;
        t->name = u->name;
        t->store = r->store;
        return LB_OK;
    }
    if (rc != LB_E_BUSY) {
        lb_http_drain(r);
        lb_http_store_error(r, rc, "count your starts");
        return rc;
    }
    long long wait_s = (oldest + LB_WINDOW_MS - now + 999) / 1000;
    if (wait_s < 1)
        wait_s = 1;
    if (wait_s > LB_WINDOW_MS / 1000)
        wait_s = LB_WINDOW_MS / 1000; /* a slot time from a clock ahead of ours */
    char hdr[64];
    snprintf(hdr, sizeof hdr, "Retry-After: %lld\r\n", wait_s);
    lb_http_drain(r);
    lb_http_error_hdr(r, 429, "rate_limited", hdr,
                      "You started %d task%s in the last minute, your limit; the next can start in %lld s.",
                      u->tasks_per_minute, u->tasks_per_minute == 1 ? "" : "s", wait_s);
    return LB_E_BUSY;
}

void lb_limits_refund(lb_start_ticket *t)
{
    if (t->user < 0)
        return;
    /* unless a request more than a minute later took the slot again; a
     * refund that fails leaves the start counted: the safe side */
    if (lb_store_rate_refund(t->store, t->name, t->slot, t->at, t->old) != LB_OK)
        lb_warn("web: could not give a start of %s back: it counts until the minute is over", t->name);
    t->user = -1;
}
