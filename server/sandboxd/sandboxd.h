/*
 * sandboxd's event loop (sandboxd.c): serves the listening socket, every
 * connection and every sandbox until SIGTERM.
 */
#ifndef LBSD_SANDBOXD_H
#define LBSD_SANDBOXD_H

#include "common/config.h"
#include "common/status.h"

/* Runs the event loop on the listening socket until SIGTERM/SIGINT; then
 * destroys every sandbox. cfg (read only, kept for the loop's life) gives
 * the limits, defaults and paths. Returns the exit status. */
LB_MUST_CHECK int lbsd_serve(const lb_config *cfg, int lfd);

/* The frame being dispatched, when data is it (a request's data frame, as
 * its handler was given it): the caller owns it now (free), the loop no
 * longer frees it; NULL otherwise. A handler that hands a large write to a
 * worker (volume_jobs.c) takes it rather than copy it on the loop. */
char *lbsd_frame_take(const char *data);

#endif
