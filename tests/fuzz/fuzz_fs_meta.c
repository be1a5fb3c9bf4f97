/* libFuzzer target for E2B's file metadata as sandboxd reads it back
 * (lbsd_fs_meta_next, lbsd_fs_meta_value_ok, server/sandboxd/sandbox_fs.c):
 * any bytes as an llistxattr answer, whose names the sandbox's code chooses
 * (setfattr on its own files). Promise: every key handed back lies inside
 * the input, after "user.e2b.", NUL-ended there, 1 to LBSB_META_KEY_MAX
 * HTTP token characters; the walk ends; nothing is read past the input. */
#include "sandboxd/sandbox_fs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of its own size, so a read past it is ASan's to see */
    char *names = malloc(size ? size : 1);
    if (!names)
        return 0;
    memcpy(names, data, size);
    size_t at = 0, last = 0;
    const char *key;
    int steps = 0;
    while (lbsd_fs_meta_next(names, size, &at, &key)) {
        if (at <= last || at > size || ++steps > (int)size)
            __builtin_trap(); /* it must move on, within the input */
        last = at;
        size_t kl = strnlen(key, (size_t)(names + size - key));
        if (key < names + 9 || key >= names + size || key + kl >= names + size || memcmp(key - 9, "user.e2b.", 9) ||
            !lbsd_fs_meta_key_ok(key, kl) || kl < 1 || kl > LBSB_META_KEY_MAX)
            __builtin_trap();
    }
    lbsd_fs_meta_value_ok(names, size > LBSB_META_VALUE_MAX ? LBSB_META_VALUE_MAX : size);
    free(names);
    return 0;
}
