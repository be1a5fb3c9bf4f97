/* several nodes: the sandboxes an earlier run of this node left.
 *
 * An agent that keeps its sandbox between rounds (follow-ups) creates it
 * with a lease, so it outlives the agent's connection; when the node dies
 * (or its lease lapses) and its agents are killed, those sandboxes would
 * stay in this host's sandboxd until their leases end, holding memory and
 * a slot. A node that finds its tasks ended (lb_node_lease.left) asks its
 * sandboxd to destroy each such task's kept sandbox, by the lease key the
 * store recorded, and forgets the record: the task ended failed, no round
 * will adopt it again.
 */
#ifndef LB_NODE_CLEANUP_H
#define LB_NODE_CLEANUP_H

#include "common/config.h"
#include "store/store.h"
#include "store/store_queue.h"

/* Destroys the kept sandboxes of l's tasks in cfg's sandboxd; logs each.
 * The number destroyed. Never fails the node: a sandbox it cannot reach
 * ends with its lease. */
int lb_node_cleanup_left(const lb_config *cfg, lb_store *s, const char *node, const lb_node_lease *l);

/* At the node's start: the same for every ended task of node whose round
 * still held its kept sandbox, which includes tasks another node swept
 * while this one was dead (they are no longer in lb_node_lease.left). */
int lb_node_cleanup_orphans(const lb_config *cfg, lb_store *s, const char *node);

#endif
