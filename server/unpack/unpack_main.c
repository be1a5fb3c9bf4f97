/* build/llmbox-unpack's entry point (unpack.h): argument checks, the
 * refusal to run as host root, and the helpers the extraction shares. */
#include "unpack/unpack.h"

#include "llmbox/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int lbup_fail(const lbup_opts *o, int code, const char *fmt, ...)
{
    char msg[1200];
    int h = snprintf(msg, sizeof msg, "%s: ", o && o->label ? o->label : "llmbox-unpack");
    if (h < 0 || (size_t)h >= sizeof msg)
        h = 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg + h, sizeof msg - (size_t)h, fmt, ap);
    va_end(ap);
    if (n < 0)
        return code;
    size_t len = (size_t)h + (size_t)n;
    if (len >= sizeof msg)
        len = sizeof msg - 1;
    /* an entry's name may be any bytes: what reaches a person is UTF-8,
     * other bytes shown as \xNN */
    char shown[4 * sizeof msg];
    size_t sl = 0;
    for (size_t i = 0; i < len;) {
        size_t l = llmbox_utf8_decode((const unsigned char *)msg + i, len - i, NULL);
        if (l && msg[i]) {
            memcpy(shown + sl, msg + i, l);
            sl += l;
            i += l;
        } else {
            sl += (size_t)snprintf(shown + sl, sizeof shown - sl, "\\x%02x", (unsigned char)msg[i]);
            i++;
        }
    }
    ssize_t w = write(LBUP_FD_MSG, shown, sl);
    (void)w; /* the importer then says the unpacker failed without a reason */
    return code;
}

int lbup_open_beneath(int dirfd, const char *path, int flags, int mode)
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

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || !*s || s[0] == '-')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

/* True when this process is root of the host's own user namespace: the
 * unpacker must run in a namespace of the images' ids. */
static int host_root(void)
{
    if (geteuid() != 0)
        return 0;
    char buf[64] = "";
    int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    return n <= 0 || strstr(buf, "4294967295") != NULL;
}

int main(int argc, char **argv)
{
    lbup_opts o = {0};
    if (argc != 5 || (strcmp(argv[1], "layer") != 0 && strcmp(argv[1], "archive") != 0) ||
        parse_u64(argv[2], UINT64_MAX / 2, &o.max_bytes) || parse_u64(argv[3], 100000000, &o.max_entries) ||
        !argv[4][0] || strlen(argv[4]) > 200)
        return lbup_fail(NULL, LBUP_EXIT_ERROR, "usage: llmbox-unpack layer|archive MAX_BYTES MAX_ENTRIES "
                                                "LABEL (started by llmbox image import only)");
    o.archive_mode = !strcmp(argv[1], "archive");
    o.label = argv[4];
    if (host_root())
        return lbup_fail(&o, LBUP_EXIT_ERROR, "llmbox-unpack must not run as host root");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return lbup_fail(&o, LBUP_EXIT_ERROR, "cannot set no_new_privs: %s", strerror(errno));
    /* libarchive converts pax's UTF-8 names to the locale's charset: in
     * "C" a non-ASCII name would not convert at all */
    if (!setlocale(LC_CTYPE, "C.UTF-8"))
        setlocale(LC_CTYPE, "C");
    /* nothing we create may be readable by more than the tar says */
    umask(0);
    return lbup_extract(&o);
}
