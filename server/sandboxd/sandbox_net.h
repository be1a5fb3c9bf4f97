/*
 * A sandbox's network modes (sandbox_net.c): loopback only, or outbound
 * NAT through slirp4netns, as the operator allows.
 */
#ifndef LBSD_SANDBOX_NET_H
#define LBSD_SANDBOX_NET_H

#include <stddef.h>
#include <sys/types.h>

#include "sandboxd/objects.h"
#include "common/status.h"

/* Checks network_allow (the setting LLMBOX_NETWORK_ALLOW) at startup and
 * keeps the modes it allows; on failure a sentence in msg. */
LB_MUST_CHECK int lbsd_net_check_config(const char *network_allow, char *msg, size_t msgsz);
/* True when the operator allows mode (LBSD_NET_NONE / LBSD_NET_NAT). */
int lbsd_net_allowed(int mode);
/* The allowed modes as a JSON array of names. */
cJSON *lbsd_net_allowed_json(void);
/* Gives the sandbox its network: "none" keeps loopback only; "nat" starts
 * slirp4netns on its netns (waits until the tap is configured, ~10 ms)
 * and writes /etc/resolv.conf through its root fd. */
LB_MUST_CHECK int lbsd_net_attach(lbsd_sandbox *sb, int mode, char *msg, size_t msgsz);
/* Stops the sandbox's helper, if any (destroy calls this). */
void lbsd_net_detach(lbsd_sandbox *sb);
/* SIGCHLD: 1 if pid was sb's slirp4netns (then marked reaped). */
int lbsd_net_child_exited(lbsd_sandbox *sb, pid_t pid, int status);

#endif
