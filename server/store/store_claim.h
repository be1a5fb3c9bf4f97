/* Runner claims: which web drives an evaluation or a rollout group (issue
 * 13, schema v12, store_claim.c).
 *
 * Every web runs the runner thread (jobs/eval_runner.c); with several webs
 * on one store each would drive the same work. So a runner drives only
 * what it has claimed: evals and rollouts carry (runner, runner_gen,
 * runner_expires_ms). A claim takes unclaimed or lapsed work in one
 * statement (PostgreSQL: FOR UPDATE SKIP LOCKED, so claimers never wait
 * for each other nor take one item twice), writes the claimer's owner id,
 * gen + 1 and a lease; the holder renews it every third of the lease. The
 * pair (owner, gen) is the fence: every write that starts a run or
 * records its score (store_eval.h, store_rollout.h) checks it in its own
 * transaction and is refused (LB_E_DENIED) once the claim is another's or
 * its lease has expired, so a web that lost its claim (stalled past its
 * lease, cut off) cannot write. A web that dies: its leases lapse and
 * another web claims the work and goes on from the store's state.
 *
 * Lease times are the database's clock (PostgreSQL's clock_timestamp(),
 * SQLite's julianday('now')), so the hosts' clocks never have to agree. */
#ifndef LB_STORE_CLAIM_H
#define LB_STORE_CLAIM_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/store.h"

#define LB_RUNNER_OWNER_MAX 127 /* [A-Za-z0-9._/-] */
#define LB_RUNNER_CLAIM_MAX 256 /* items one claim or renewal may take */

/* The kinds of work a runner claims: the table that holds the claim. */
typedef enum lb_runner_kind {
    LB_RUNNER_EVALS,    /* evals (their runs: eval_runs) */
    LB_RUNNER_ROLLOUTS, /* rollouts (their samples: rollout_samples) */
} lb_runner_kind;

/* The claim a write is made under: work item id, held by owner as
 * generation gen. */
typedef struct lb_runner_fence {
    char id[33];
    char owner[LB_RUNNER_OWNER_MAX + 1];
    int64_t gen;
} lb_runner_fence;

/* One item claimed or renewed. */
typedef struct lb_runner_claim {
    char id[33];
    int64_t gen;
} lb_runner_claim;

/* 1 when owner is 1..LB_RUNNER_OWNER_MAX of [A-Za-z0-9._/-]. */
int lb_runner_owner_valid(const char *owner);

/* Claims up to max (1..LB_RUNNER_CLAIM_MAX) active items of kind, oldest
 * first, for owner with a lease of lease_ms (>= 1000), in one statement:
 * items no runner holds or whose lease has expired, and, when takeover is
 * not NULL, items whose runner's id starts with takeover but is not owner
 * (an earlier process of the same web, which a web's first claim takes at
 * once rather than after its lease). Each gets gen + 1. Active: an eval
 * queued or running, a group running, or either with runs or samples
 * still running or scoring (a cancel). *n: how many, in out[0..n). */
LB_MUST_CHECK int lb_store_runner_claim(lb_store *s, lb_runner_kind kind, const char *owner, const char *takeover,
                                        int lease_ms, int max, lb_runner_claim *out, size_t *n);
/* Renews owner's unexpired claims on active items for lease_ms from now
 * (one statement) and lists them, at most max, in out (their gens
 * unchanged). What owner held that is not in out is no longer its own. */
LB_MUST_CHECK int lb_store_runner_renew(lb_store *s, lb_runner_kind kind, const char *owner, int lease_ms, int max,
                                        lb_runner_claim *out, size_t *n);
/* Gives up f's claim (runner cleared) while it is still f's. LB_E_DENIED
 * when it is not. */
LB_MUST_CHECK int lb_store_runner_release(lb_store *s, lb_runner_kind kind, const lb_runner_fence *f);
/* Inside a write transaction (store.c's): LB_OK when f still holds its
 * claim with an unexpired lease, LB_E_DENIED (logged) otherwise; on
 * PostgreSQL the item's row is then share-locked to the transaction's
 * end, so no claim can take it before the fenced write commits. For the
 * store's table files (store_eval.c, store_rollout.c). */
LB_MUST_CHECK int lb_store_runner_fence_check(lb_store *s, lb_runner_kind kind, const lb_runner_fence *f);

/* Schema v12 in both dialects (store.c's migration lists): the claims'
 * columns, and the task a run or sample is being started with. */
extern const char lb_schema_v12_claims[];
extern const char lb_schema_pg_v12_claims[];

#endif
