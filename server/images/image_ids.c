/* An image's user and group as ids, from its own /etc/passwd and
 * /etc/group read as hostile input (image_ids.h). */
#include "images/image_ids.h"

#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open_beneath(int dirfd, const char *path, int flags)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    long fd;
    do
        fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    while (fd < 0 && errno == EAGAIN);
    return (int)fd;
}

/* The image's file rel (etc/passwd), read from the topmost layer that has
 * it beneath its root through no symlink; a whiteout there (a character
 * device) means the image has none. NULL when none. */
static char *layer_file(int layers_fd, const char *const *hexes, int n, const char *rel)
{
    for (int i = n - 1; i >= 0; i--) {
        char root[128];
        snprintf(root, sizeof root, "%.64s/root", hexes[i]);
        int rfd = openat(layers_fd, root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rfd < 0)
            return NULL;
        struct stat st;
        int fd = open_beneath(rfd, rel, O_RDONLY | O_NONBLOCK);
        if (fd < 0) {
            int e = errno;
            struct stat ws;
            int whiteout = fstatat(rfd, rel, &ws, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(ws.st_mode);
            close(rfd);
            if (e == ENOENT && !whiteout)
                continue;
            return NULL;
        }
        close(rfd);
        char *buf = NULL;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= LB_IMAGE_IDS_FILE_MAX &&
            (buf = malloc((size_t)st.st_size + 1)) && lb_read_full(fd, buf, (size_t)st.st_size) == LB_OK)
            buf[st.st_size] = '\0';
        else {
            free(buf);
            buf = NULL;
        }
        close(fd);
        return buf;
    }
    return NULL;
}

/* The id of name in a passwd or group file's text (field 3), or -1. */
static long file_id(const char *text, const char *name, int *gid_out)
{
    size_t nl = strlen(name);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, name, nl) != 0 || l[nl] != ':')
            continue;
        const char *f = strchr(l + nl + 1, ':');
        if (!f)
            return -1;
        char *end;
        long id = strtol(f + 1, &end, 10);
        if (end == f + 1 || *end != ':' || id < 0 || id > 65535)
            return -1;
        if (gid_out) {
            char *gend;
            long g = strtol(end + 1, &gend, 10);
            *gid_out = gend != end + 1 && g >= 0 && g <= 65535 ? (int)g : -1;
        }
        return id;
    }
    return -1;
}

static int numeric_id(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < 0 || v > 65535)
        return -1;
    *out = v;
    return 0;
}

int lb_image_ids_resolve(int layers_fd, const char *const *hexes, int n, const char *spec, long *uid, long *gid,
                         char *msg, size_t msgsz)
{
    *uid = *gid = -1;
    if (!spec[0])
        return LB_OK;
    if (strlen(spec) > LB_IMAGE_IDS_SPEC_MAX) {
        lb_say(msg, msgsz, "the user \"%.64s...\" is longer than %d bytes", spec, LB_IMAGE_IDS_SPEC_MAX);
        return LB_E_INVAL;
    }
    char u[LB_IMAGE_IDS_SPEC_MAX + 1], *g = NULL;
    snprintf(u, sizeof u, "%s", spec);
    if ((g = strchr(u, ':')))
        *g++ = '\0';
    char *passwd = NULL, *group = NULL;
    int pgid = -1, rc = LB_OK;
    if (numeric_id(u, uid) != 0) {
        passwd = layer_file(layers_fd, hexes, n, "etc/passwd");
        if (!passwd || (*uid = file_id(passwd, u, &pgid)) < 0) {
            lb_say(msg, msgsz, "the user \"%s\" is not in the image's /etc/passwd (nor a number of 0 to 65535)", u);
            rc = LB_E_INVAL;
        }
    } else if (!g) {
        passwd = layer_file(layers_fd, hexes, n, "etc/passwd");
        char num[16];
        snprintf(num, sizeof num, "%ld", *uid);
        /* a number's user, when passwd has it, brings its group */
        for (const char *l = passwd; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
            const char *f1 = strchr(l, ':'), *f2 = f1 ? strchr(f1 + 1, ':') : NULL;
            if (f2 && !strncmp(f2 + 1, num, strlen(num)) && f2[1 + strlen(num)] == ':') {
                char *end;
                long gg = strtol(f2 + 2 + strlen(num), &end, 10);
                if (*end == ':' && gg >= 0 && gg <= 65535)
                    pgid = (int)gg;
                break;
            }
        }
    }
    if (rc == LB_OK) {
        if (!g || !*g)
            *gid = pgid >= 0 ? pgid : *uid;
        else if (numeric_id(g, gid) != 0) {
            group = layer_file(layers_fd, hexes, n, "etc/group");
            if (!group || (*gid = file_id(group, g, NULL)) < 0) {
                lb_say(msg, msgsz, "the group \"%s\" is not in the image's /etc/group (nor a number of 0 to 65535)",
                       g);
                rc = LB_E_INVAL;
            }
        }
    }
    if (rc != LB_OK)
        *uid = *gid = -1;
    free(passwd);
    free(group);
    return rc;
}
