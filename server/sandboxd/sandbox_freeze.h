/* Freezing a sandbox (follow-ups): none of its processes gets CPU, its
 * memory stays where it is (and counted). The cgroup freezer (v2
 * cgroup.freeze, v1 freezer.state) stops the whole group at once; without
 * one, SIGSTOP to every process but init, with a warning logged once. */
#ifndef LBSD_SANDBOX_FREEZE_H
#define LBSD_SANDBOX_FREEZE_H

#include <stddef.h>

#include "common/status.h"

struct lbsd_sandbox;

/* sb->frozen: how it was frozen */
#define LBSD_FROZEN_NO 0
#define LBSD_FROZEN_CGROUP 1
#define LBSD_FROZEN_SIGSTOP 2

/* Freezes sb (a no-op when frozen). On failure a sentence in msg and sb is
 * running. */
LB_MUST_CHECK int lbsd_sandbox_freeze(struct lbsd_sandbox *sb, char *msg, size_t msgsz);
/* Thaws sb (a no-op when running). On failure a sentence in msg. */
LB_MUST_CHECK int lbsd_sandbox_thaw(struct lbsd_sandbox *sb, char *msg, size_t msgsz);

#endif
