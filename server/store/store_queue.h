/* The task queue and the nodes that run it (several nodes, schema v10).
 *
 * With task_runner = queue a web stores a task and marks it claimable
 * instead of spawning its agent; an `llmbox node` (server/node/) claims
 * queued tasks and runs them. Each node holds a lease in the nodes table,
 * renewed every third of node_lease_s. A claim writes (node, attempt + 1)
 * into the task; the agent it spawns writes with that pair as its fence
 * (lb_store_set_fence), and the store refuses (LB_E_DENIED) a write whose
 * pair is no longer the task's or whose node's lease has expired. A node
 * whose lease expired is swept by any other node: its unfinished tasks end
 * failed, with a sentence naming it; nothing is run again.
 *
 * Lease times are the database's clock (PostgreSQL's clock_timestamp(),
 * SQLite's julianday('now')), so the hosts' clocks never have to agree. */
#ifndef LB_STORE_QUEUE_H
#define LB_STORE_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/store.h"

#define LB_NODE_NAME_MAX 63     /* [a-z0-9-], starting with a letter or digit */
#define LB_QUEUE_CLAIM_MAX 256  /* tasks one claim may take */

/* 1 when name is a valid node name (1..63 of [a-z0-9-], not starting with
 * '-'): it prefixes sandbox ids ("n1.") and names processes in messages. */
int lb_node_name_valid(const char *name);

/* Marks queued task id claimable by nodes (the web's task_runner = queue,
 * after lb_store_task_insert or lb_store_round_begin). LB_E_NOTFOUND when
 * there is no such task or it is no longer queued. On PostgreSQL this
 * wakes claimers (NOTIFY llmbox_queue). */
LB_MUST_CHECK int lb_store_queue_push(lb_store *s, const char *id);

/* A claimed task: its id and the attempt the claim made. */
typedef struct lb_claim {
    char id[33];
    int attempt;
} lb_claim;

/* Takes up to max (1..LB_QUEUE_CLAIM_MAX) claimable tasks, oldest first,
 * for node in one statement (PostgreSQL: FOR UPDATE SKIP LOCKED, so
 * claimers never wait for each other nor take a task twice), setting
 * (node, attempt + 1, claimed_ms). Nothing while node's lease has
 * expired. A task whose sandbox_node is another node that is live (lease
 * held, not swept, capacity > 0) is skipped: it waits for that node. *n: how many were taken, written to out[0..n). */
LB_MUST_CHECK int lb_store_queue_claim(lb_store *s, const char *node, int max, lb_claim *out, size_t *n);

/* What lb_store_node_renew found. */
typedef struct lb_node_lease {
    int64_t expires_ms;         /* the new lease's end (database clock) */
    int lapsed;                 /* the node had a row whose lease had expired, or a row of an earlier
                                 * run (restart): its unfinished tasks were ended failed in the same
                                 * transaction, and their ids/pids are in left[0..nleft) */
    size_t nleft;
    struct lb_node_left {
        char id[33];
        int pid;                /* the agent's pid as recorded (0: none) */
    } *left;                    /* free() */
} lb_node_lease;

/* Registers node (or renews its lease) for lease_ms with capacity.
 * started_ms identifies this run of the node: a renewal that finds another
 * run's row, or its own lapsed lease, ends that row's unfinished tasks
 * failed first (the tasks a killed node left: nothing is re-run). */
LB_MUST_CHECK int lb_store_node_renew(lb_store *s, const char *node, int64_t started_ms, int lease_ms,
                                      int capacity, lb_node_lease *out);
/* Ends the unfinished tasks of one other node whose lease expired and that
 * was not swept yet: its row is locked first (PostgreSQL: FOR UPDATE SKIP
 * LOCKED), so of several sweepers at once exactly one does it. *swept_node
 * (LB_NODE_NAME_MAX + 1 bytes): the node swept ("" when none); *ended: how
 * many tasks were ended. */
LB_MUST_CHECK int lb_store_node_sweep(lb_store *s, const char *self, char *swept_node, size_t *ended);
/* Ends task id failed with reason only while it is still the claim
 * (node, attempt): the node's word on an agent that exited without ending
 * its task must not end the next round, which may have begun (and been
 * claimed again) meanwhile. LB_E_EXISTS when the claim is no longer that
 * one or the task is final. */
LB_MUST_CHECK int lb_store_queue_end_attempt(lb_store *s, const char *id, const char *node, int attempt,
                                             const char *reason);
/* PostgreSQL: LISTEN for tasks becoming claimable on s's connection (kept
 * across reconnects); LB_E_INVAL on SQLite, whose claimers poll. */
LB_MUST_CHECK int lb_store_queue_listen(lb_store *s);
/* Waits up to timeout_ms for such a notification (*woke 1) after
 * lb_store_queue_listen. */
LB_MUST_CHECK int lb_store_queue_wait(lb_store *s, int timeout_ms, int *woke);
/* several nodes: node's ended tasks whose round still held a kept sandbox (its
 * agent died in the round), in out->left (pids 0), for node_cleanup.c to
 * destroy at the node's start. free(out->left). */
LB_MUST_CHECK int lb_store_node_orphans(lb_store *s, const char *node, lb_node_lease *out);
/* Removes node's row (a node that stopped with no task left). */
LB_MUST_CHECK int lb_store_node_remove(lb_store *s, const char *node);

/* The agent a node started writes as (node, attempt) from here on: every
 * change to its task (events, status, end; all through the task's row
 * lock) is refused with LB_E_DENIED once the claim is no longer this
 * (node, attempt) or node's lease has expired (store.c). */
LB_MUST_CHECK int lb_store_set_fence(lb_store *s, const char *node, int attempt);

/* several nodes, v11: the node whose sandboxd holds a task's kept sandbox and
 * saved states. Its next round is claimed by that node alone while the
 * node is live (lb_store_queue_claim); once it is not, by any node, whose
 * agent runs the round in a fresh sandbox and says where the old one was.
 *
 * Records the calling agent's node (its fence) as task id's: the agent
 * made the round's sandbox in that node's sandboxd. LB_OK without a fence
 * (the web's agent: nothing recorded); LB_E_DENIED when the claim is no
 * longer this node's. */
LB_MUST_CHECK int lb_store_queue_set_home(lb_store *s, const char *id);
/* Task id's sandbox node into node (nodesz >= LB_NODE_NAME_MAX + 1; ""
 * when none is recorded). */
LB_MUST_CHECK int lb_store_queue_home(lb_store *s, const char *id, char *node, size_t nodesz);
/* Why node can no longer serve its tasks' sandboxes, as a clause for a
 * sentence ("it stopped renewing its lease; last seen at T UTC", "it has
 * stopped and left the cluster", ...). */
LB_MUST_CHECK int lb_store_node_gone_why(lb_store *s, const char *node, char *out, size_t outsz);
/* The node of the fence set on s ("" when none). */
const char *lb_store_fence_node(const lb_store *s);

/* Schema v10 in both dialects (store.c's migration lists). */
extern const char lb_schema_v10_queue[];
extern const char lb_schema_pg_v10_queue[];
/* Schema v11 in both dialects: tasks.sandbox_node. */
extern const char lb_schema_v11_home[];
extern const char lb_schema_pg_v11_home[];

#endif
