#include "path.h"
#include "status.h"
#include "llmbox/utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Code points a name may not hold although they are valid UTF-8: C0 and
 * C1 controls and DEL; the bidirectional embeddings, overrides, isolates
 * and marks, which make "evil\u202Etxt.exe" show as "evilexe.txt" in a
 * file list (the "Trojan Source" trick, CVE-2021-42574); and the line and
 * paragraph separators, which break a name across lines. Combining marks
 * and every script stay allowed: macOS sends names decomposed (NFD). */
static int lb_cp_refused(uint32_t cp)
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
            uint32_t cp = 0;
            size_t ul = llmbox_utf8_decode((const unsigned char *)in + k, j - k, &cp);
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
