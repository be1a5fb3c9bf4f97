/* libFuzzer target for the parsers of sandboxd's metrics request
 * (server/sandboxd/sandbox_metrics.c): any bytes as a cgroup's flat-keyed
 * file (memory.stat, cpu.stat) or a /proc/<pid>/stat line, which a
 * sandbox's processes can shape (their command names). The first byte
 * picks the parser. Promise: no read past the input; a keyed value is
 * found only at a line's start after "key "; ticks never above 2^41. */
#include "sandboxd/sandbox_metrics.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* a NUL-terminated copy of its own size, so a read past it is ASan's to see */
    char *buf = malloc(size);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    uint64_t v = 0;
    if (data[0] & 1) {
        if (lbsd_metrics_stat_ticks(buf, &v) && v > (2ull << 40))
            __builtin_trap();
    } else if (lbsd_metrics_keyed(buf, "usage_usec", &v)) {
        int at_line = 0; /* some line must start with the key and a space */
        for (const char *l = buf; l && *l && !at_line; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
            at_line = !strncmp(l, "usage_usec ", 11);
        if (!at_line)
            __builtin_trap();
    }
    free(buf);
    return 0;
}
