/* libFuzzer target for a registry's WWW-Authenticate header
 * (server/images/registry_auth.c), any bytes a registry sends with a 401.
 * Promises: no read past the n bytes given (the input is not
 * NUL-terminated); an accepted Bearer challenge has a realm that is an
 * http(s) URL; the realm, service and scope are NUL-terminated within
 * their arrays and hold no control characters (they go into a URL and a
 * header line). */
#include "images/registry_auth.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_text(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    if (n == cap)
        __builtin_trap();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so ASan sees a read past the end */
    char *s = malloc(size ? size : 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    lb_reg_challenge c;
    char msg[256];
    if (lb_reg_challenge_parse(s, size, &c, msg, sizeof msg) == 0) {
        check_text(c.realm, sizeof c.realm);
        check_text(c.service, sizeof c.service);
        check_text(c.scope, sizeof c.scope);
        if (c.bearer && strncmp(c.realm, "http://", 7) && strncmp(c.realm, "https://", 8))
            __builtin_trap();
    }
    free(s);
    return 0;
}
