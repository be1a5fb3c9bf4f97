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

#endif
