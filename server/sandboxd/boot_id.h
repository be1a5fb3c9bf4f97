/* Each sandbox's own boot id. The kernel's /proc/sys/kernel/random/boot_id
 * is the host's, the same in every sandbox and never changing; E2B's
 * clients take a new one as the sign of a reboot (a pause without its
 * memory, keepMemory: false, after which every process but init has
 * ended). Init writes a random one into the sandbox's scratch tmpfs, out
 * of the sandbox's reach (beside upper/, LBSD_INIT_UPPER_FD), and binds it
 * read-only over that /proc file; sandboxd writes a new one there at such
 * a pause (the freeze request's "reboot"). */
#ifndef LBSD_BOOT_ID_H
#define LBSD_BOOT_ID_H

#include <sys/types.h>

#include "common/status.h"

#define LBSD_BOOT_ID_FILE "boot_id" /* in the scratch tmpfs, beside upper/ */
#define LBSD_BOOT_ID_LEN 37         /* "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx\n", as the kernel writes it */

/* A new random (version 4) UUID as the kernel formats boot_id, into
 * out[LBSD_BOOT_ID_LEN + 1]. */
LB_MUST_CHECK int lbsd_boot_id_new(char *out);
/* Writes a new boot id into the file of the sandbox whose init is
 * init_pid (reached through its upper dir's fd, never a path the sandbox
 * can change). */
LB_MUST_CHECK int lbsd_boot_id_renew(pid_t init_pid);

#endif
