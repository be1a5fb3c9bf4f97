/* UTF-8 checks and repair; the contract is utf8.h. */
#include "common/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t lb_utf8_seq_len(const char *p, size_t n)
{
    return n ? llmbox_utf8_decode((const unsigned char *)p, n, NULL) : 0;
}

int lb_utf8_valid(const char *p, size_t n)
{
    return llmbox_utf8_is_text(p, n);
}

char *lb_utf8_sanitize(const char *p, size_t n, size_t *outlen)
{
    /* worst case every byte becomes the 3-byte U+FFFD */
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = malloc(n * 3 + 1);
    if (!out)
        return NULL;
    const unsigned char *u = (const unsigned char *)p;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t l = u[i] ? llmbox_utf8_decode(u + i, n - i, NULL) : 0;
        if (!l) {
            memcpy(out + o, LB_UTF8_REPLACEMENT, 3);
            o += 3;
            i++;
            continue;
        }
        memcpy(out + o, u + i, l);
        o += l;
        i += l;
    }
    out[o] = '\0';
    /* give back the slack of the worst-case allocation */
    char *shrunk = realloc(out, o + 1);
    if (shrunk)
        out = shrunk;
    if (outlen)
        *outlen = o;
    return out;
}

void lb_utf8_trim_partial(char *s)
{
    size_t n = strlen(s), i = n, cont = 0;
    /* walk back over continuation bytes to the lead byte of the last sequence */
    while (i > 0 && cont < 4 && ((unsigned char)s[i - 1] & 0xc0) == 0x80) {
        i--;
        cont++;
    }
    if (i == 0)
        return;
    unsigned char c = (unsigned char)s[i - 1];
    size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (need == 0 || cont + 1 < need)
        s[i - 1] = '\0';
}
