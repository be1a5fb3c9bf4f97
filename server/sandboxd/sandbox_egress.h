/* The plumbing of a sandbox whose network is a policy of rules
 * (sandbox_egress.c): a gateway namespace, a veth into the sandbox, the
 * nftables rules that send everything to the gateway, and the gateway
 * process (build/llmbox netgw, unprivileged) started on it. The root
 * daemon reads none of the sandbox's traffic; see docs/NETWORK.md. */
#ifndef LB_SANDBOXD_SANDBOX_EGRESS_H
#define LB_SANDBOXD_SANDBOX_EGRESS_H

#include <stddef.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/status.h"

struct lbsd_sandbox;

/* At startup: finds ip and nft and the gateway binary, and whether the
 * operator allows rules at all (network_egress_max not empty). Never
 * fails the daemon: a host without nftables only refuses egress sandboxes,
 * with a sentence saying why. */
void lbsd_egress_configure(const lb_config *cfg);
/* Whether an egress sandbox can be made here. */
int lbsd_egress_enabled(void);
/* Keeps policy (text) and values (NULL, or its transform secrets' values:
 * egress_secrets.h) for the create of connection conn, until its attach
 * takes them: a connection has one create at a time. LB_OK or LB_E_NOMEM. */
LB_MUST_CHECK int lbsd_egress_stash(const void *conn, const char *policy, const char *values);
/* Gives sb (its owner's stashed policy) the gateway; on failure a sentence
 * in msg and nothing left behind. */
LB_MUST_CHECK int lbsd_egress_attach(struct lbsd_sandbox *sb, char *msg, size_t msgsz);
/* Stops sb's gateway, drops its namespace and removes its folder (the
 * record with it: a task's agent has copied it into the task's files). */
void lbsd_egress_detach(struct lbsd_sandbox *sb);
/* After the var dir's lock and lbsd_kill_stale_procs: removes the gateway
 * folders a previous sandboxd left (it was killed before its detach). */
void lbsd_egress_cleanup_stale(void);
/* SIGCHLD: 1 when pid was sb's gateway. */
int lbsd_egress_child_exited(struct lbsd_sandbox *sb, pid_t pid, int status);

#endif
