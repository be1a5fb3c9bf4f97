/* MCP's stdio transport with the server run INSIDE the task's sandbox:
 * `sh -c COMMAND` started through sandboxd's process API (lbsb_proc_start,
 * include/llmbox/sandbox.h), so it has the sandbox's namespaces, cgroup,
 * seccomp, user and network policy and never runs on the host. Messages
 * go to its stdin with lbsb_proc_input on the task's own connection;
 * its stdout and stderr come back as events on a second connection of
 * the same uid, attached to the process (events arrive unasked there, so
 * the task's connection stays free for the tools). stdout is framed by
 * mcpc_lines.c; the last LB_MCPC_STDERR_TAIL bytes of stderr are kept to
 * say why a server that exits died. */
#ifndef LB_MCPC_STDIO_H
#define LB_MCPC_STDIO_H

#include <stddef.h>

#include "common/status.h"
#include "llmbox/sandbox.h"
#include "mcpclient/mcpc_transport.h"

#define LB_MCPC_STDERR_TAIL 600   /* bytes of a server's stderr quoted when it exits */
#define LB_MCPC_INPUT_MAX (1u << 20) /* one message to its stdin: sandboxd's stdin queue */

/* Starts command in sandbox sb_id: socket is sandboxd's (for the event
 * connection), conn the task's connection (borrowed: it must outlive the
 * transport), name the server's (in the process's meta). cancel
 * (may be NULL) ends a wait when set by a signal. LB_OK with *out, or a
 * status with a sentence in err. */
LB_MUST_CHECK int lb_mcpc_stdio_open(const char *socket, volatile int *cancel, lbsb_conn *conn, const char *sb_id,
                                     const char *name, const char *command, lb_mcpc_transport **out, char *err,
                                     size_t errsz);

#endif
