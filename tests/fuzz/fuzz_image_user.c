/* libFuzzer target for a named user's ids (lbsd_user_parse,
 * server/sandboxd/image_user.c): any bytes as the sandbox's /etc/passwd
 * and /etc/group, which its code can write. The first byte picks the name
 * looked up, the second where passwd ends and group begins. Promise: a
 * user found has ids inside the sandbox's map, its primary group first
 * among at most LBSD_USER_GROUPS_MAX, a home that is an absolute path
 * NUL-terminated within its buffer; nothing is read past the input. */
#include "sandboxd/image_user.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"user", "root", "a", "sudo", "x$"};
    if (size < 2)
        return 0;
    const char *name = names[data[0] % 5];
    size_t n = size - 2, cut = n ? data[1] % (n + 1) : 0;
    /* copies of their own sizes, so a read past either is ASan's to see */
    char *pw = malloc(cut ? cut : 1), *gr = malloc(n - cut ? n - cut : 1);
    if (!pw || !gr) {
        free(pw);
        free(gr);
        return 0;
    }
    memcpy(pw, data + 2, cut);
    memcpy(gr, data + 2 + cut, n - cut);
    lbsd_user_ids u;
    if (lbsd_user_parse(pw, cut, gr, n - cut, name, &u) == 0) {
        if (u.uid >= LBSD_USER_ID_LIMIT || u.gid >= LBSD_USER_ID_LIMIT || u.ngroups < 1 ||
            u.ngroups > LBSD_USER_GROUPS_MAX || u.groups[0] != u.gid || strcmp(u.name, name))
            __builtin_trap();
        for (int i = 0; i < u.ngroups; i++)
            if (u.groups[i] >= LBSD_USER_ID_LIMIT)
                __builtin_trap();
        if (strnlen(u.home, sizeof u.home) >= sizeof u.home || u.home[0] != '/')
            __builtin_trap();
    }
    free(pw);
    free(gr);
    return 0;
}
