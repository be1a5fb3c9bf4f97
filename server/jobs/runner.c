/* The runner of jobs: the one part the evaluations and the rollout groups,
 * its two sources, share (claims, recovery); the contract is runner.h. */
#include "jobs/runner.h"

#include "common/log.h"
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"
#include "web/spawn.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char lb_rc_owner[LB_RUNNER_OWNER_MAX + 1] = "web/0-0";
static char lb_rc_prefix[LB_RUNNER_OWNER_MAX + 1] = "web/"; /* the owner ids of this web's processes */
static int lb_rc_lease_ms = 15000;

void lb_runner_identity_init(const lb_config *cfg)
{
    char ident[64] = "";
    if (cfg->node_name[0]) {
        snprintf(ident, sizeof ident, "%s", cfg->node_name);
    } else if (gethostname(ident, sizeof ident - 1) != 0) {
        ident[0] = '\0';
    }
    ident[sizeof ident - 1] = '\0';
    /* the host name's first label, in the owner id's characters */
    size_t i = 0;
    for (; ident[i] && ident[i] != '.'; i++) {
        char c = ident[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            ident[i] = '-';
    }
    ident[i] = '\0';
    if (!ident[0])
        snprintf(ident, sizeof ident, "web");
    snprintf(lb_rc_prefix, sizeof lb_rc_prefix, "%s/", ident);
    snprintf(lb_rc_owner, sizeof lb_rc_owner, "%s/%ld-%lld", ident, (long)getpid(), (long long)lb_now_ms());
    lb_rc_lease_ms = cfg->runner_lease_s * 1000;
    lb_info("web: runners: evaluations and rollout groups are driven under claims of %s, a lease of %d s "
            "(runner_lease_s)", lb_rc_owner, cfg->runner_lease_s);
}

const char *lb_runner_owner(void)
{
    return lb_rc_owner;
}

static const char *kind_name(lb_runner_kind k)
{
    return k == LB_RUNNER_EVALS ? "eval" : "rollout";
}

static int held_at(const lb_runner_held *h, const char *id)
{
    for (size_t i = 0; i < h->n; i++)
        if (!strcmp(h->v[i].id, id))
            return (int)i;
    return -1;
}

void lb_runner_held_refresh(lb_store *s, lb_runner_held *h, size_t room)
{
    int64_t t0 = lb_mono_ms();
    static lb_runner_claim got[LB_RUNNER_CLAIM_MAX]; /* runner thread only */
    size_t n = 0;
    if (h->n && t0 - h->renewed_ms >= lb_rc_lease_ms / 3) {
        if (lb_store_runner_renew(s, h->kind, lb_rc_owner, lb_rc_lease_ms, LB_RUNNER_CLAIM_MAX, got, &n) == LB_OK) {
            /* what was held and is not renewed went to another web (or ended) */
            for (size_t i = 0; i < h->n; i++) {
                int still = 0;
                for (size_t k = 0; k < n && !still; k++)
                    still = !strcmp(got[k].id, h->v[i].id) && got[k].gen == h->v[i].gen;
                if (!still)
                    lb_info("web: %s %s: no longer driven by this web (it ended, or another web holds it)",
                            kind_name(h->kind), h->v[i].id);
            }
            memcpy(h->v, got, n * sizeof got[0]);
            h->n = n;
            h->renewed_ms = t0;
        }
    }
    if (room > LB_RUNNER_CLAIM_MAX - h->n)
        room = LB_RUNNER_CLAIM_MAX - h->n;
    if (!room)
        return;
    n = 0;
    /* the first claim takes over what an earlier process of this web held */
    int rc = lb_store_runner_claim(s, h->kind, lb_rc_owner, h->claimed_once ? NULL : lb_rc_prefix, lb_rc_lease_ms,
                                   (int)room, got, &n);
    if (rc != LB_OK)
        return;
    h->claimed_once = 1;
    if (!n)
        return;
    if (!h->n)
        h->renewed_ms = t0; /* the new leases are this fresh; older ones keep their own time */
    for (size_t i = 0; i < n; i++) {
        int at = held_at(h, got[i].id);
        if (at >= 0) {
            h->v[at].gen = got[i].gen; /* lapsed and taken again: the new claim */
        } else if (h->n < LB_RUNNER_CLAIM_MAX) {
            h->v[h->n++] = got[i];
        }
        lb_info("web: %s %s: claimed (claim %lld)", kind_name(h->kind), got[i].id, (long long)got[i].gen);
    }
}

int lb_runner_held_fence(const lb_runner_held *h, const char *id, lb_runner_fence *f)
{
    int at = held_at(h, id);
    if (at < 0 || lb_mono_ms() - h->renewed_ms > (int64_t)lb_rc_lease_ms * 2 / 3)
        return 0;
    snprintf(f->id, sizeof f->id, "%s", id);
    snprintf(f->owner, sizeof f->owner, "%s", lb_rc_owner);
    f->gen = h->v[at].gen;
    return 1;
}

void lb_runner_held_release(lb_store *s, lb_runner_held *h, size_t *released)
{
    for (size_t i = 0; i < h->n; i++) {
        lb_runner_fence f;
        snprintf(f.id, sizeof f.id, "%s", h->v[i].id);
        snprintf(f.owner, sizeof f.owner, "%s", lb_rc_owner);
        f.gen = h->v[i].gen;
        if (lb_store_runner_release(s, h->kind, &f) == LB_OK)
            (*released)++; /* else lapsed or taken meanwhile: nothing of ours to give */
    }
    h->n = 0;
}

void lb_runner_held_drop(lb_runner_held *h, const char *id)
{
    int at = held_at(h, id);
    if (at < 0)
        return;
    memmove(&h->v[at], &h->v[at + 1], (h->n - (size_t)at - 1) * sizeof h->v[0]);
    h->n--;
}

void lb_runner_stop_task(lb_store *s, const char *id, const char *reason)
{
    if (lb_spawn_cancel(id) == LB_OK)
        return;
    int rc = lb_store_task_end(s, id, LB_TASK_CANCELLED, reason, NULL);
    if (rc != LB_OK && rc != LB_E_EXISTS && rc != LB_E_NOTFOUND)
        lb_warn("web: cannot cancel task %s: %s", id, lb_strerror(rc));
}

int lb_runner_adopt(lb_store *s, const lb_runner_fence *f, const char *start_task,
                    lb_runner_start_fn *start, const void *unit, const char *source, const char *what)
{
    char st[16];
    int rc = lb_store_task_state(s, start_task, st, sizeof st, NULL);
    if (rc != LB_OK)
        return rc;
    rc = start(s, f, unit, start_task);
    if (rc == LB_OK)
        lb_info("%s %s: %s started as task %s (made before, adopted)", source, f->id, what, start_task);
    return rc;
}
