/* Agent processes (spawn.c): the task slots, spawning, cancelling, the
 * reaper; and short helper commands with captured output. */
#ifndef LB_WEB_SPAWN_H
#define LB_WEB_SPAWN_H

#include <spawn.h>
#include <stddef.h>

#include "common/agent_spawn.h"
#include "common/status.h"

struct lb_config; /* common/config.h */

/* Keeps cfg (read only, for the life of the process: the slots, the
 * database, the agents' command and logs) and starts the reaper thread.
 * Call once, before any spawn. */
LB_MUST_CHECK int lb_spawn_init(const struct lb_config *cfg);
/* Atomically takes a task slot; LB_E_TOOBIG when max_concurrent_tasks are
 * already running. A taken slot is released by lb_spawn_agent's failure or
 * by the reaper when the agent exits. */
LB_MUST_CHECK int lb_spawn_reserve(void);
/* The same, but only while keep_free slots stay free after the take
 * (LB_E_TOOBIG otherwise): the evaluations' runner takes its slots so,
 * and people's tasks (lb_spawn_reserve) may have the last keep_free. */
LB_MUST_CHECK int lb_spawn_reserve_leaving(int keep_free);
void lb_spawn_unreserve(void);
int lb_spawn_running(void);
/* Spawns `self agent --task id` in its own session with output appended to
 * agent-<id>.log in the log folder (lb_cfg_logdir); uses a reserved slot. *pid_out gets the
 * pid. */
LB_MUST_CHECK int lb_spawn_agent(const char *id, int *pid_out, char *err, size_t errsz);
/* hook() runs on the reaper thread after agents exited and their tasks
 * were ended, their slots free (the eval runner's wake: its next run
 * starts then, not at its next poll). Must be quick and not block. */
void lb_spawn_set_exit_hook(void (*hook)(void));
/* Asks the agent of task id to stop (SIGTERM now, SIGKILL after 1.5 s).
 * LB_E_NOTFOUND when no agent of ours runs that task. */
LB_MUST_CHECK int lb_spawn_cancel(const char *id);
/* SIGKILLs the agent of task id and waits (up to timeout_ms) until it is
 * reaped. LB_E_NOTFOUND when there is none. */
LB_MUST_CHECK int lb_spawn_kill_wait(const char *id, int timeout_ms);
/* Follow-ups: waits (up to timeout_ms) until the agent of task
 * id, if any, has been reaped, so that a task's next round never has two
 * agents (the last round's, still exiting, and its own). LB_OK, or
 * LB_E_TIMEOUT when one is still there. */
LB_MUST_CHECK int lb_spawn_wait_gone(const char *id, int timeout_ms);
/* lb_spawn_attr, the agent's log and file actions: common/agent_spawn.h
 * (shared with `llmbox node`, several nodes) */
/* Runs argv (argv[0] a path) with stdin /dev/null, captures up to max bytes
 * of stdout, kills it after timeout_ms. The caller frees *out. */
LB_MUST_CHECK int lb_spawn_capture(char *const argv[], size_t max, int timeout_ms, char **out, size_t *outlen,
                                   int *exit_status);
/* The same with stdin read from the file stdin_path (NULL: /dev/null). */
LB_MUST_CHECK int lb_spawn_capture_in(char *const argv[], const char *stdin_path, size_t max, int timeout_ms,
                                      char **out, size_t *outlen, int *exit_status);

#endif
