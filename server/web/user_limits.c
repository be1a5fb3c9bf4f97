/* Per-user limits on starting tasks (the contract is user_limits.h).
 *
 * Tasks queued or running: counted in the database, so the count survives
 * a restart of the web; this early check spares an upload that would be
 * refused, and the insert itself checks again atomically (store.c), so two
 * requests at once cannot both take the last place.
 *
 * Starts per minute: a sliding window kept in memory, one slot per start a
 * user may make in 60 s holding the time it was taken. A start takes a
 * slot older than 60 s; a request that makes no task gives its slot back,
 * so a refused upload (400, 413) does not count against the user. The
 * window starts empty when the web restarts. */
#include "web/user_limits.h"

#include "web/http.h"
#include "common/config.h"
#include "store/store.h"

#include "common/status.h"
#include "common/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define LB_WINDOW_MS 60000

static pthread_mutex_t lb_limits_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t *lb_slots[LB_CFG_MAX_USERS]; /* tasks_per_minute times each, 0 = free */

int lb_limits_init(const lb_config *cfg)
{
    for (int i = 0; i < cfg->n_users; i++) {
        int n = cfg->users[i].tasks_per_minute;
        if (n > 0 && !(lb_slots[i] = calloc((size_t)n, sizeof(int64_t))))
            return LB_E_NOMEM;
    }
    return LB_OK;
}

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
    if (u->tasks_per_minute <= 0 || ui < 0 || ui >= cfg->n_users || !lb_slots[ui])
        return LB_OK;
    int64_t now = lb_mono_ms();
    int64_t *s = lb_slots[ui];
    int free_slot = -1;
    int64_t oldest = INT64_MAX;
    pthread_mutex_lock(&lb_limits_mu);
    for (int i = 0; i < u->tasks_per_minute; i++) {
        if (!s[i] || now - s[i] >= LB_WINDOW_MS) {
            free_slot = i;
            break;
        }
        if (s[i] < oldest)
            oldest = s[i];
    }
    if (free_slot >= 0) {
        t->user = ui;
        t->slot = free_slot;
        t->old = s[free_slot];
        t->at = now;
        s[free_slot] = now;
    }
    pthread_mutex_unlock(&lb_limits_mu);
    if (free_slot < 0) {
        long long wait_s = (oldest + LB_WINDOW_MS - now + 999) / 1000;
        if (wait_s < 1)
            wait_s = 1;
        char hdr[64];
        snprintf(hdr, sizeof hdr, "Retry-After: %lld\r\n", wait_s);
        lb_http_drain(r);
        lb_http_error_hdr(r, 429, "rate_limited", hdr,
                          "You started %d task%s in the last minute, your limit; the next can start in %lld s.",
                          u->tasks_per_minute, u->tasks_per_minute == 1 ? "" : "s", wait_s);
        return LB_E_BUSY;
    }
    return LB_OK;
}

void lb_limits_refund(lb_start_ticket *t)
{
    if (t->user < 0)
        return;
    pthread_mutex_lock(&lb_limits_mu);
    /* unless a request more than a minute later took the slot again */
    if (lb_slots[t->user] && lb_slots[t->user][t->slot] == t->at)
        lb_slots[t->user][t->slot] = t->old;
    pthread_mutex_unlock(&lb_limits_mu);
    t->user = -1;
}
