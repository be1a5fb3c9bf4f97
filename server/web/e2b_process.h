/* envd's process service (process.Process/...) for E2B's SDK: commands.run
 * (foreground and background), connect, list, kill, sendStdin, closeStdin.
 *
 * Processes run beside the persistent shell, several at once: a short exec
 * in the shell starts each one detached under a small supervisor subshell
 * (its own process group, stdout and stderr appended to the files
 * /var/tmp/.llmbox-e2b/<n>.out and .err in the sandbox, stdin from a FIFO
 * when asked for, its exit status written when it ends), and the streams
 * that watch it read those files with the sandbox RPC's ranged reads. So the output is
 * bounded by the sandbox's own disk quota, never by the web's memory; a
 * process outlives a client that goes away (E2B's behaviour: connect to it
 * again), and nothing holds the shell while processes run. */
#ifndef LB_E2B_PROCESS_H
#define LB_E2B_PROCESS_H

#include "web/request.h"
#include "web/sandbox_registry.h"

/* Answers the RPC method ("Start", "List" ...) of process.Process on s
 * (running, its token checked). */
void lb_e2b_process(lb_req *r, lb_sbx *s, const char *method);

#endif
