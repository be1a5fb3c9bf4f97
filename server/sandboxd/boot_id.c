/* Each sandbox's own boot id (the contract is boot_id.h). */
#include "sandboxd/boot_id.h"

#include "insandbox/sandbox_init.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

int lbsd_boot_id_new(char *out)
{
    uint8_t b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
        return LB_E_IO;
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* the RFC 4122 variant */
    snprintf(out, LBSD_BOOT_ID_LEN + 1,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return LB_OK;
}

int lbsd_boot_id_renew(pid_t init_pid)
{
    char up[64], id[LBSD_BOOT_ID_LEN + 1];
    snprintf(up, sizeof up, "/proc/%ld/fd/%d", (long)init_pid, LBSD_INIT_UPPER_FD);
    if (lbsd_boot_id_new(id) != LB_OK)
        return LB_E_IO;
    int dfd = open(up, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return LB_E_NOTFOUND;
    /* upper/'s parent is the scratch tmpfs's root, which the sandbox never
     * sees. Written in place, not renamed: the bind mount holds this inode.
     * Nothing in the sandbox runs to read it half written (every process
     * but init has ended, and it is frozen next). */
    int fd = openat(dfd, "../" LBSD_BOOT_ID_FILE, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    close(dfd);
    if (fd < 0)
        return errno == ENOENT ? LB_E_NOTFOUND : LB_E_IO;
    int rc = pwrite(fd, id, LBSD_BOOT_ID_LEN, 0) == LBSD_BOOT_ID_LEN ? LB_OK : LB_E_IO;
    close(fd);
    return rc;
}
