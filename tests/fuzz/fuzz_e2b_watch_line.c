/* libFuzzer target for a line of watchDir's watcher (lb_e2b_watch_line,
 * server/e2b/e2b_watch.c), which the sandbox's code can forge: any bytes.
 * Promise: an accepted line is one of R, O, L, X alone, or an event letter
 * with a type name and a non-empty name of fewer bytes than the line, with
 * no NUL; the name always fits the buffer it was given (NUL-terminated). */
#include "e2b/e2b_watch.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char kind = 0, name[64];
    memset(name, 'z', sizeof name);
    int rc = lb_e2b_watch_line((const char *)data, size, &kind, name, sizeof name);
    if (!memchr(name, '\0', sizeof name))
        __builtin_trap();
    if (rc != 0) {
        if (rc != -1)
            __builtin_trap();
        return 0;
    }
    if (size == 1) {
        if (!strchr("ROLX", kind) || kind == '\0' || name[0])
            __builtin_trap();
        return 0;
    }
    if (!lb_e2b_watch_type(kind) || !name[0] || strlen(name) >= size || memchr(data, '\0', size))
        __builtin_trap();
    return 0;
}
