/* envd's process service (process.Process/...) for E2B's SDK: commands.run
 * (foreground and background), connect, list, kill, sendStdin, closeStdin.
 *
 * Each process is one of sandboxd's own (proc_start, include/llmbox/sandbox.h):
 * forked by the sandbox's init beside the persistent shell, its output
 * pushed by sandboxd on a connection of the stream's own as it comes (no
 * files, no polling). Start and Connect each open such a connection and
 * close it when the client leaves, which detaches: the process runs on
 * (E2B's behaviour: connect to it again), its output dropped meanwhile.
 * List, signals and stdin go over the sandbox's own connection; what List
 * shows (the config as started, the tag) is kept by sandboxd with the
 * process, so a restarted web lists what runs too. */
#ifndef LB_E2B_PROCESS_H
#define LB_E2B_PROCESS_H

#include "web/request.h"
#include "sbxapi/sandbox_registry.h"

/* Answers the RPC method ("Start", "List" ...) of process.Process on s
 * (running, its token checked). */
void lb_e2b_process(lb_req *r, lb_sbx *s, const char *method);

#endif
