/* build/llmbox-stateio's entry point (stateio.h): argument checks and the
 * shared helpers of save and restore. */
#include "stateio/stateio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int lbst_fail(int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return code;
    if ((size_t)n >= sizeof msg)
        n = sizeof msg - 1;
    ssize_t w = write(LBST_FD_MSG, msg, (size_t)n);
    (void)w; /* sandboxd then says the helper failed without a reason */
    return code;
}

int lbst_open_beneath(int dirfd, const char *path, int flags, int mode)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
        .mode = (uint64_t)((flags & O_CREAT) ? mode : 0),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    long fd;
    do
        fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    while (fd < 0 && errno == EAGAIN);
    return (int)fd;
}

/* A whole non-negative decimal number, at most max. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-' || v > max)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    /* llmbox-stateio save|restore MAX_BYTES MAX_ENTRIES IMAGE */
    lbst_caps caps;
    if (argc != 5 || parse_u64(argv[2], UINT64_MAX / 2, &caps.max_bytes) ||
        parse_u64(argv[3], 100000000, &caps.max_entries) || !argv[4][0] || strlen(argv[4]) > LBST_IMAGE_MAX)
        return lbst_fail(LBST_EXIT_ERROR, "usage: llmbox-stateio save|restore MAX_BYTES MAX_ENTRIES IMAGE "
                                          "(started by sandboxd only)");
    caps.image = argv[4];
    if (getuid() == 0 && geteuid() == 0) {
        /* ns root shows as 0 too: refuse only when it is the host's (no
         * user namespace above us) */
        char buf[64] = "";
        int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n > 0 && strstr(buf, "4294967295"))
            return lbst_fail(LBST_EXIT_ERROR, "llmbox-stateio must not run as host root");
    }
    if (!strcmp(argv[1], "save"))
        return lbst_save(&caps);
    if (!strcmp(argv[1], "restore"))
        return lbst_restore(&caps);
    return lbst_fail(LBST_EXIT_ERROR, "unknown mode \"%s\" (save or restore)", argv[1]);
}
