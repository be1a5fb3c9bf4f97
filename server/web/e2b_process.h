/* envd's process service (process.Process/...) for E2B's SDK
 * (commands.run, list, kill), on top of the sandbox's persistent shell:
 * Start runs the command through the exec RPC and streams its output as
 * Connect events, polling with a soft timeout so output arrives while it
 * runs. One command runs at a time in a sandbox (sandboxd's exec): a second
 * Start while one runs gets failed_precondition. SendInput, CloseStdin,
 * Connect, Update and StreamInput answer unimplemented (docs/E2B.md). */
#ifndef LB_E2B_PROCESS_H
#define LB_E2B_PROCESS_H

#include "web/request.h"
#include "web/sandbox_registry.h"

/* Answers the RPC method ("Start", "List" ...) of process.Process on s
 * (running, its token checked). */
void lb_e2b_process(lb_req *r, lb_sbx *s, const char *method);

#endif
