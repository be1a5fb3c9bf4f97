/* Starting agent processes: what the web (web/spawn.c) and `llmbox node`
 * (node/node_agents.c, several nodes) share, so that an agent starts the same
 * way whoever runs it: its own session, an empty signal mask, stdin
 * /dev/null, stdout and stderr appended to agent-<id>.log. */
#ifndef LB_COMMON_AGENT_SPAWN_H
#define LB_COMMON_AGENT_SPAWN_H

#include <spawn.h>
#include <stddef.h>

#include "common/status.h"

struct lb_config; /* common/config.h */

/* Attributes every child of the web or a node gets: its own session
 * (setsid), an empty signal mask, default actions for the signals the
 * parent blocks or ignores. LB_OK, or LB_E_NOMEM / LB_E_INTERNAL (nothing
 * to destroy). */
LB_MUST_CHECK int lb_spawn_attr(posix_spawnattr_t *at, int setsid);
/* Opens (creating the folder) <logdir>/agent-<id>.log for appending: the
 * descriptor (O_CLOEXEC), or -1 with a sentence in err. */
int lb_agent_log_open(const struct lb_config *cfg, const char *id, char *err, size_t errsz);
/* The extended attribute of an agent's log file that names the tool whose
 * code the agent is running ("" between calls): where the agent keeps its
 * marker (agent/watchdog.h) when the file system takes user attributes, so
 * a task makes no marker file (an inode, bench/RESULTS.md). */
#define LB_AGENT_TOOL_XATTR "user.llmbox.tool"
/* The agent's descriptors: stdin /dev/null, stdout and stderr logfd,
 * nothing else. LB_OK or LB_E_NOMEM. */
LB_MUST_CHECK int lb_agent_spawn_files(posix_spawn_file_actions_t *fa, int logfd);
/* True when pid is an `llmbox agent` process running task id (checked by
 * its command line, since a recorded pid may have been reused). */
int lb_agent_alive(int pid, const char *id);

#endif
