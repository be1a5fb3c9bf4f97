/*
 * sandboxd's event loop (sandboxd.c): serves the listening socket, every
 * connection and every sandbox until SIGTERM; and what it does to a
 * sandbox that the other files ask of it (retire it).
 */
#ifndef LBSD_SANDBOXD_H
#define LBSD_SANDBOXD_H

#include "sandboxd/objects.h"
#include "common/config.h"
#include "common/status.h"

/* Tears sb down off the loop (a worker's destroy job; at once when there
 * are no workers). The caller has unlinked it from every list and from its
 * connection; its running command, if any, is abandoned here. */
void lbsd_sandbox_retire(lbsd_sandbox *sb);

/* Runs the event loop on the listening socket until SIGTERM/SIGINT; then
 * destroys every sandbox. cfg (read only, kept for the loop's life) gives
 * the limits, defaults and paths. Returns the exit status. */
LB_MUST_CHECK int lbsd_serve(const lb_config *cfg, int lfd);

#endif
