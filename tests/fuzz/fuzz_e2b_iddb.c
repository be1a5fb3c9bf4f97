/* libFuzzer target for the owners' names of E2B's entries
 * (lb_e2b_id_lookup, server/e2b/e2b_entry.c): any bytes as the sandbox's
 * /etc/passwd or /etc/group, which its code can write. The first 4 bytes
 * are the id looked up. Promise: a name handed back is 1 to 32 bytes of
 * [A-Za-z0-9_.-] (a '$' last allowed, no '-' first), NUL-terminated within
 * the buffer, and appears in the input at a line's start followed by ':';
 * nothing is read past the input. And a user's home (lb_e2b_user_home),
 * for a name the first byte picks: absolute, printable, NUL-terminated. */
#include "e2b/e2b_entry.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint32_t id = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
    /* a copy of its own size, so a read past it is ASan's to see */
    size_t n = size - 4;
    char *db = malloc(n ? n : 1);
    if (!db)
        return 0;
    memcpy(db, data + 4, n);
    char name[40];
    memset(name, 'z', sizeof name);
    if (lb_e2b_id_lookup(db, n, id, name, sizeof name)) {
        size_t len = strnlen(name, sizeof name);
        if (len == 0 || len > 32 || name[0] == '-')
            __builtin_trap();
        for (size_t i = 0; i < len; i++) {
            char c = name[i];
            int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                     c == '.' || c == '-' || (c == '$' && i == len - 1);
            if (!ok)
                __builtin_trap();
        }
        int found = 0;
        for (size_t i = 0; !found && i + len < n; i++)
            found = (i == 0 || db[i - 1] == '\n') && !memcmp(db + i, name, len) && db[i + len] == ':';
        if (!found)
            __builtin_trap();
    }
    /* a user's home (lb_e2b_user_home): a name the input's bytes pick, and
     * the promise that a home handed back is absolute, printable and
     * NUL-terminated within the buffer */
    static const char *const names[] = {"user", "root", "a", "x$", "-bad", "", "www-data"};
    const char *nm = names[data[0] % (sizeof names / sizeof names[0])];
    char home[24];
    memset(home, 'z', sizeof home);
    if (lb_e2b_user_home(db, n, nm, home, (size_t)(data[1] % sizeof home) + 1)) {
        size_t len = strnlen(home, sizeof home);
        if (!lb_e2b_user_name_ok(nm) || len == 0 || len >= sizeof home || home[0] != '/')
            __builtin_trap();
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)home[i] < 0x20 || home[i] == 0x7f)
                __builtin_trap();
    }
    free(db);
    return 0;
}
