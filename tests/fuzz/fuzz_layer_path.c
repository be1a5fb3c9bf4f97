/* libFuzzer target: a layer entry's name and a symlink's target (server/
 * unpack/unpack_path.c), which build/llmbox-unpack checks before it creates
 * anything of an image layer. Input: a name, a NUL byte, a link target.
 * Promise checked: an accepted name is a relative path of components that
 * are neither empty, "." nor "..", valid UTF-8, within the caps, and a
 * suffix-free cut of the input; an accepted relative target never climbs
 * above the layer's root from the name's folder; a refusal says why. */
#include "fuzz_util.h"

#include "unpack/unpack_path.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 2);
    if (!in)
        return 0;
    memcpy(in, data, size);
    in[size] = in[size + 1] = '\0';
    const char *target = in + strlen(in) + 1;
    if (target > in + size)
        target = "";
    char rel[LBUP_PATH_MAX + 1];
    const char *why = NULL;
    if (lbup_entry_path(in, rel, sizeof rel, &why) == 0) {
        if (rel[0] == '/' || strlen(rel) > LBUP_PATH_MAX || !strstr(in, rel))
            __builtin_trap();
        fz_assert_utf8(rel, strlen(rel));
        long depth = 0;
        for (const char *c = rel; *c;) {
            size_t n = strcspn(c, "/");
            if (n == 0 || n > LBUP_NAME_MAX || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                __builtin_trap();
            depth++;
            c += n;
            if (*c == '/')
                c++;
        }
        if (depth > LBUP_DEPTH_MAX)
            __builtin_trap();
        if (lbup_link_target_ok(rel, target, &why) == 0 && target[0] != '/') {
            /* walk it: never above the root */
            long d = 0;
            for (const char *c = rel; *c; c++)
                d += *c == '/';
            for (const char *c = target; *c;) {
                size_t n = strcspn(c, "/");
                if (n == 2 && c[0] == '.' && c[1] == '.')
                    d--;
                else if (n && !(n == 1 && c[0] == '.'))
                    d++;
                if (d < 0)
                    __builtin_trap();
                c += n;
                if (*c == '/')
                    c++;
            }
        } else if (target[0] != '/' && (!why || !why[0])) {
            __builtin_trap();
        }
    } else if (!why || !why[0]) {
        __builtin_trap();
    }
    free(in);
    return 0;
}
