/*
 * What a previous sandboxd of this installation left (stale.c): its tag,
 * the var dir's lock, and the old sandboxes' processes.
 */
#ifndef LBSD_STALE_H
#define LBSD_STALE_H

#include <stddef.h>

#include "common/status.h"

/* "llmbox-<FNV-1a of the var dir, 8 hex>": names this installation's
 * cgroups and helper processes, so two installations never touch each
 * other's. */
const char *lbsd_install_tag(void);
/* Sets the tag from the var dir: sandboxd's start, before anything names a
 * cgroup or a helper (until then the tag is that of an empty var dir). */
void lbsd_install_tag_init(const char *var_dir);
/* Takes <var_dir>/sandboxd.lock for the life of the process: one sandboxd
 * per var dir, whatever its socket. Returns the fd, or -1 with a sentence. */
LB_MUST_CHECK int lbsd_lock_var(const char *var_dir, char *msg, size_t msgsz);
/* Kills every process of an old sandbox of this installation (its root is
 * an overlay whose upper layer is under var/sandboxes/) and every
 * slirp4netns it started. Run at startup, before the scratch dirs go. */
void lbsd_kill_stale_procs(void);

#endif
