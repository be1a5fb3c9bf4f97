/*
 * The last steps before a sandbox runs anything it did not choose
 * (seccomp.c): capabilities dropped, the seccomp deny list applied.
 */
#ifndef LBSD_SECCOMP_H
#define LBSD_SECCOMP_H

#include "common/status.h"

/* Drops capabilities outside the sandbox set (bounding, permitted,
 * effective, inheritable, ambient). */
LB_MUST_CHECK int lbsd_drop_caps(void);
/* Compiles the seccomp deny list once (sandboxd, before the first clone;
 * later calls return at once). */
LB_MUST_CHECK int lbsd_seccomp_prepare(void);
/* PR_SET_NO_NEW_PRIVS + the seccomp deny list (the prepared program, or
 * compiled here if there is none). The last step before the sandbox runs
 * anything it did not choose. */
LB_MUST_CHECK int lbsd_seccomp_apply(void);
/* The seccomp deny list without no_new_privs: needs CAP_SYS_ADMIN in the
 * caller's user namespace (init, before lbsd_drop_caps). Everything the
 * caller forks inherits the filter, which no process can remove; whether
 * an exec may raise privileges (a setuid binary) is then each child's
 * choice: the shell sets no_new_privs, E2B's processes do not
 * (docs/SECURITY.md). */
LB_MUST_CHECK int lbsd_seccomp_install(void);
/* PR_SET_NO_NEW_PRIVS on the calling process (and what it forks). */
LB_MUST_CHECK int lbsd_no_new_privs(void);

#endif
