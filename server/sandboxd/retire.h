/*
 * A sandbox's retirement (retire.c): taken off the loop and torn down by a
 * worker, its connection answered when it waits for that.
 */
#ifndef LBSD_RETIRE_H
#define LBSD_RETIRE_H

#include "sandboxd/objects.h"
#include "common/config.h"

/* The daemon's configuration (read only, kept), for the teardown jobs:
 * lbsd_serve, before the first retirement. */
void lbsd_retire_init(const lb_config *cfg);
/* Retires sb; with c, c waits (is not read) until the teardown is done and
 * then gets answer (LBSD_ANSWER_OK, or LBSD_ANSWER_EXPIRED with msg). The
 * caller has unlinked sb from every list and from its connection. */
void lbsd_retire(lbsd_sandbox *sb, lbsd_conn *c, int answer, const char *msg);
/* lbsd_retire without a connection: tears sb down off the loop (a
 * worker's destroy job; at once when there are no workers); its running
 * command, if any, is abandoned here. */
void lbsd_sandbox_retire(lbsd_sandbox *sb);

#endif
