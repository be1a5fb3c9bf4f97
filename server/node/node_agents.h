/* The agents one `llmbox node` runs (several nodes): started the web's way
 * (common/agent_spawn.h) with the claim's fence in LLMBOX_NODE_FENCE,
 * reaped, and killed all at once when the node loses its lease. Used by
 * the node's main thread only. */
#ifndef LB_NODE_AGENTS_H
#define LB_NODE_AGENTS_H

#include <stddef.h>

#include "common/status.h"
#include "store/store.h"
#include "store/store_queue.h"

struct lb_config; /* common/config.h */

#define LB_NODE_AGENTS_MAX 256 /* node_capacity's cap */

/* Starts the agent of claim c as node: LB_OK, or the task ended failed
 * (could not start) and the status. The table holds at most capacity. */
LB_MUST_CHECK int lb_node_agent_start(const struct lb_config *cfg, lb_store *s, const char *node, const lb_claim *c);
/* Reaps exited agents; ends (failed, with a sentence) each task its agent
 * left unfinished. Returns how many exited. */
int lb_node_agents_reap(lb_store *s);
/* SIGTERMs the agents whose task became final meanwhile (a cancel from a
 * web on another host: it cannot signal them itself). */
void lb_node_agents_check_cancel(lb_store *s);
/* SIGKILLs the agents past their task's time limit plus
 * task_deadline_grace_s (counted from the start on this node), as the
 * web's reaper does for its own agents: an agent stuck where its own
 * watchdog cannot act would hold a slot and a sandbox forever. The reap
 * then ends the task failed with the deadline's sentence. */
void lb_node_agents_check_deadlines(void);
/* SIGKILLs every agent's process group and reaps them: the lease is lost,
 * and their writes would be refused anyway. */
void lb_node_agents_kill_all(const char *why);
/* The same from the lease watchdog's thread while the main thread may be
 * stuck in a store call (a database that does not answer): signals only;
 * the main thread reaps them once it runs again. */
void lb_node_agents_kill_now(void);
/* SIGKILLs what an earlier run of this node left: the agents recorded in
 * left[] that are still alive on this host (checked by command line). */
void lb_node_agents_kill_left(const lb_node_lease *l);
/* How many run (the main thread; _locked: any thread). */
int lb_node_agents_count(void);
int lb_node_agents_count_locked(void);

#endif
