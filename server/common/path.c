#include "path.h"
#include "status.h"

#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (max n bytes), 0 if invalid;
 * *cp_out gets its code point. */
static size_t lb_utf8_len(const unsigned char *p, size_t n, unsigned *cp_out)
{
    unsigned char c = p[0];
    size_t len;
    unsigned min;
    unsigned cp;
    *cp_out = c;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        len = 2, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    *cp_out = cp;
    return len;
}

/* Code points a name may not hold although they are valid UTF-8: C0 and
 * C1 controls and DEL; the bidirectional embeddings, overrides, isolates
 * and marks, which make "evil\u202Etxt.exe" show as "evilexe.txt" in a
 * file list (the "Trojan Source" trick, CVE-2021-42574); and the line and
 * paragraph separators, which break a name across lines. Combining marks
 * and every script stay allowed: macOS sends names decomposed (NFD). */
static int lb_cp_refused(unsigned cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

int lb_path_clean_rel(const char *in, size_t n, char *out, size_t outsz)
{
    if (!in || !out || outsz < 2)
        return LB_E_INVAL;
    out[0] = '\0';
    if (n == 0 || in[0] == '/')
        return LB_E_INVAL;
    size_t o = 0, i = 0;
    while (i < n) {
        /* one component: in[i..j) */
        size_t j = i;
        while (j < n && in[j] != '/')
            j++;
        size_t clen = j - i;
        if (clen == 0 || (clen == 1 && in[i] == '.')) {
            i = j + 1;
            continue;
        }
        if (clen == 2 && in[i] == '.' && in[i + 1] == '.')
            return LB_E_INVAL;
        if (clen > LB_NAME_MAX)
            return LB_E_INVAL;
        for (size_t k = i; k < j;) {
            unsigned cp = 0;
            size_t ul = lb_utf8_len((const unsigned char *)in + k, j - k, &cp);
            if (ul == 0 || cp == '\\' || lb_cp_refused(cp))
                return LB_E_INVAL;
            k += ul;
        }
        size_t need = o + (o ? 1 : 0) + clen;
        if (need > LB_PATH_MAX || need + 1 > outsz)
            return LB_E_INVAL;
        if (o)
            out[o++] = '/';
        memcpy(out + o, in + i, clen);
        o += clen;
        i = j + 1;
    }
    out[o] = '\0';
    return o ? LB_OK : LB_E_INVAL;
}

int lb_path_join(char *out, size_t outsz, const char *base, const char *rel)
{
    int n = snprintf(out, outsz, "%s/%s", base, rel);
    return (n < 0 || (size_t)n >= outsz) ? LB_E_TOOBIG : LB_OK;
}
