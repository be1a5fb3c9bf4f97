/* The ListObjectsV2 answer, read by a scanner rather than an XML library:
 * the document's shape is fixed and small, and every character of text is
 * escaped (a literal '<' never appears inside a value), so an element is
 * found by its tags. What is not understood is refused, never guessed. */
#include "common/s3_list.h"

#include <stdio.h>
#include <string.h>

/* The text between <name> and </name> at or after *from, before end. */
static int elem(const char *from, const char *end, const char *name, const char **vs, const char **ve)
{
    char open[48], close[48];
    snprintf(open, sizeof open, "<%s>", name);
    snprintf(close, sizeof close, "</%s>", name);
    const char *s = memmem(from, (size_t)(end - from), open, strlen(open));
    if (!s)
        return 0;
    s += strlen(open);
    const char *e = memmem(s, (size_t)(end - s), close, strlen(close));
    if (!e)
        return -1;
    *vs = s;
    *ve = e;
    return 1;
}

static size_t put_utf8(unsigned long cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* XML text to bytes: the five named entities and numeric ones; NUL,
 * surrogates and code points past U+10FFFF are refused. */
static int unescape(const char *s, const char *e, char *out, size_t outsz, char *why, size_t whysz)
{
    size_t o = 0;
    while (s < e) {
        char tmp[4];
        size_t k = 1;
        if (*s != '&') {
            tmp[0] = *s++;
        } else {
            const char *semi = memchr(s, ';', (size_t)(e - s) < 12 ? (size_t)(e - s) : 12);
            if (!semi) {
                snprintf(why, whysz, "a stray '&' in the object list");
                return LB_E_PROTO;
            }
            size_t len = (size_t)(semi - s - 1);
            const char *nm = s + 1;
            static const struct { const char *n; char c; } named[] = {
                {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
            int found = 0;
            for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
                if (len == strlen(named[i].n) && !memcmp(nm, named[i].n, len)) {
                    tmp[0] = named[i].c;
                    found = 1;
                }
            if (!found && len >= 2 && nm[0] == '#') {
                int hex = nm[1] == 'x';
                unsigned long cp = 0;
                size_t i = hex ? 2 : 1;
                if (i >= len)
                    goto bad;
                for (; i < len; i++) {
                    char c = nm[i];
                    int d = c >= '0' && c <= '9' ? c - '0'
                            : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                            : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                    if (d < 0 || cp > 0x10FFFF)
                        goto bad;
                    cp = cp * (hex ? 16 : 10) + (unsigned long)d;
                }
                if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                    goto bad;
                k = put_utf8(cp, tmp);
                found = 1;
            }
            if (!found)
                goto bad;
            s = semi + 1;
        }
        if (o + k >= outsz) {
            snprintf(why, whysz, "a value in the object list is longer than %zu bytes", outsz - 1);
            return LB_E_TOOBIG;
        }
        if (k == 1 && tmp[0] == '\0')
            goto bad;
        memcpy(out + o, tmp, k);
        o += k;
    }
    out[o] = '\0';
    return LB_OK;
bad:
    snprintf(why, whysz, "an unknown or invalid entity in the object list");
    return LB_E_PROTO;
}

static int parse_size(const char *s, const char *e, uint64_t *out)
{
    uint64_t v = 0;
    if (s == e || e - s > 19)
        return LB_E_PROTO;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9')
            return LB_E_PROTO;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return LB_OK;
}

int lb_s3_list_parse(const char *doc, size_t n, lb_s3_list_cb cb, void *ctx, int *truncated, char *next, char *why,
                     size_t whysz)
{
    const char *end = doc + n, *vs, *ve;
    *truncated = 0;
    next[0] = '\0';
    if (n > LB_S3_LIST_MAX_DOC) {
        snprintf(why, whysz, "the object list is larger than %u bytes", LB_S3_LIST_MAX_DOC);
        return LB_E_TOOBIG;
    }
    if (!memmem(doc, n, "<ListBucketResult", 17)) {
        snprintf(why, whysz, "the store's answer is not an object list (no ListBucketResult)");
        return LB_E_PROTO;
    }
    const char *p = doc;
    int count = 0, r;
    char key[LB_S3_KEY_MAX + 1];
    while ((r = elem(p, end, "Contents", &vs, &ve)) == 1) {
        const char *ks, *ke, *ss, *se;
        if (++count > LB_S3_LIST_MAX_ENTRIES) {
            snprintf(why, whysz, "the object list has more than %d entries in one page", LB_S3_LIST_MAX_ENTRIES);
            return LB_E_TOOBIG;
        }
        if (elem(vs, ve, "Key", &ks, &ke) != 1 || elem(vs, ve, "Size", &ss, &se) != 1) {
            snprintf(why, whysz, "an entry of the object list has no Key or no Size");
            return LB_E_PROTO;
        }
        uint64_t size;
        int rc = unescape(ks, ke, key, sizeof key, why, whysz);
        if (rc != LB_OK)
            return rc;
        if (key[0] == '\0' || parse_size(ss, se, &size) != LB_OK) {
            snprintf(why, whysz, "an entry of the object list has an empty key or a malformed size");
            return LB_E_PROTO;
        }
        rc = cb(ctx, key, size);
        if (rc != LB_OK)
            return rc;
        p = ve + 11; /* past </Contents> */
    }
    if (r < 0) {
        snprintf(why, whysz, "the object list ends inside an entry");
        return LB_E_PROTO;
    }
    /* the flag and token are looked for outside the entries (after them) */
    if (elem(p, end, "IsTruncated", &vs, &ve) == 1 && ve - vs == 4 && !memcmp(vs, "true", 4)) {
        if (elem(p, end, "NextContinuationToken", &vs, &ve) != 1) {
            snprintf(why, whysz, "the object list is truncated but has no continuation token");
            return LB_E_PROTO;
        }
        int rc = unescape(vs, ve, next, LB_S3_TOKEN_MAX + 1, why, whysz);
        if (rc != LB_OK)
            return rc;
        if (next[0] == '\0') {
            snprintf(why, whysz, "the object list is truncated but its continuation token is empty");
            return LB_E_PROTO;
        }
        *truncated = 1;
    }
    return LB_OK;
}

void lb_s3_error_code(const char *doc, size_t n, char *out, size_t outsz)
{
    const char *vs, *ve;
    size_t o = 0;
    if (outsz == 0)
        return;
    if (elem(doc, doc + n, "Code", &vs, &ve) == 1)
        for (; vs < ve && o + 1 < outsz; vs++) {
            char c = *vs;
            if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.'))
                break;
            out[o++] = c;
        }
    out[o] = '\0';
}
