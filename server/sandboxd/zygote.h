/* The zygote: a small helper, exec'd fresh from sandboxd's own binary once
 * at start, that clones every sandbox's init on request.
 *
 * Why: an init cloned from sandboxd itself is a copy-on-write copy of a
 * daemon whose heap and descriptor table grow with every sandbox, so each
 * init kept (privately) whatever part of sandboxd's heap sandboxd rewrote
 * after the clone, and the clone copied a descriptor table of thousands of
 * entries (bench/RESULTS.md, "Scale"). The zygote's memory and descriptors
 * do not change with the number of sandboxes, so neither does an init's.
 *
 * Exec'd, not merely forked early: a fresh image holds none of sandboxd's
 * configuration, environment or descriptors, is single-threaded (so init
 * may use glibc freely), and its size is what it needs, whatever sandboxd
 * has done before it started it.
 *
 * Who forks what: sandboxd's main thread forks and execs the zygote
 * (`llmbox-sandboxd zygote`, its socket on fd 3, an empty environment).
 * For each sandbox a worker thread of sandboxd sends it one request over a
 * SOCK_SEQPACKET pair: the init's settings and, by SCM_RIGHTS, init's end
 * of its control socket and the slot's idmap user namespace. The zygote
 * clones with CLONE_PARENT and the sandbox's namespaces, so init is a child
 * of sandboxd (which waits for it, gets its SIGCHLD and its PDEATHSIG as
 * before) and answers the new pid. Nothing crosses back but that pid. The
 * network namespace is one the zygote made ahead while idle, when it has
 * one (zygote.c says why that is the same isolation). */
#ifndef LBSD_ZYGOTE_H
#define LBSD_ZYGOTE_H

#include <sys/types.h>

#include "common/status.h"
#include "insandbox/sandbox_init.h"

/* Starts the zygote. Call from sandboxd's main thread, before any worker
 * thread: the inits it clones have that thread as their parent (their
 * PR_SET_PDEATHSIG fires when it ends). On failure a sentence in msg. */
LB_MUST_CHECK int lbsd_zygote_start(char *msg, size_t msgsz);
/* Clones an init for ic through the zygote (restarted once if it died);
 * ctl is init's end of its control socket (the caller closes its copy).
 * Safe from several threads at once. Returns the host pid, or -1 with a
 * sentence in msg. */
pid_t lbsd_zygote_clone(const lbsd_init_cfg *ic, int ctl, char *msg, size_t msgsz);
/* The zygote's pid (0 if none): sandboxd's reaper knows it is no sandbox. */
pid_t lbsd_zygote_pid(void);
/* Closes the zygote's socket (it exits on EOF). */
void lbsd_zygote_stop(void);
/* The zygote itself: `llmbox-sandboxd zygote`. Serves fd 3 until EOF. */
int lbsd_zygote_main(void);

#endif
