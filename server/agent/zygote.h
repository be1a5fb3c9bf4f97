/* The agent zygote (zygote.c): `llmbox agent --spare`, started once by the
 * web, has paid the exec and the dynamic linking of build/llmbox (~15 ms
 * of CPU a process: bench/RESULTS.md) and forks one agent per task from
 * then on. Each agent is made a child of the web itself (CLONE_PARENT),
 * so the web waits for it, kills it and enforces its deadline exactly as
 * for an agent it started with posix_spawn. */
#ifndef LB_AGENT_ZYGOTE_H
#define LB_AGENT_ZYGOTE_H

/* Serves the web on fd 0 (a SOCK_SEQPACKET socketpair) until it closes
 * its end. Each message is a task id (32 hex characters) with two
 * descriptors (SCM_RIGHTS): the task's log and the read end of a "go"
 * pipe. For each, it forks an agent and answers with its pid (an int32;
 * a negative errno when the fork failed: -ENOSYS when this kernel, or a
 * tool like valgrind, cannot make one: the web then stops asking). Returns:
 * - 0 in a forked agent, with id filled: fd 0 is /dev/null, fds 1 and 2
 *   the task's log, its own session; it ran on only after the web wrote
 *   one byte to the go pipe (the web has recorded its pid by then); when
 *   the web closed the pipe instead it has exited without running;
 * - 1 in the zygote when the web has gone (end of file) or sent something
 *   it does not understand: the caller exits. */
int lb_agent_zygote_serve(char id[33]);

#endif
