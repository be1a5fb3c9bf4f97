/*
 * llmbox's one UTF-8 decoder, header-only so that plugins (built from
 * their own folder, linking nothing of llmbox) and the service share it.
 * Not part of the plugin ABI: nothing crosses the host table here.
 *
 * Valid means RFC 3629: no overlong forms, no surrogates (U+D800..DFFF),
 * nothing above U+10FFFF, no sequence cut short. A NUL byte is valid
 * UTF-8; callers that refuse it say so.
 */
#ifndef LLMBOX_UTF8_H
#define LLMBOX_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the valid UTF-8 sequence at p, which has n >= 1 bytes,
 * or 0 when the bytes there are not one. *cp (may be NULL) receives the
 * code point of a valid sequence. */
static inline size_t llmbox_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
    unsigned char c = p[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        if (cp)
            *cp = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0)
        len = 2, min = 0x80, v = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
        len = 3, min = 0x800, v = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
        len = 4, min = 0x10000, v = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    if (cp)
        *cp = v;
    return len;
}

/* 1 when p[0..n) is valid UTF-8 without NUL bytes (text, as opposed to
 * binary data), else 0. */
static inline int llmbox_utf8_is_text(const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    for (size_t i = 0; i < n;) {
        size_t l = u[i] ? llmbox_utf8_decode(u + i, n - i, NULL) : 0;
        if (!l)
            return 0;
        i += l;
    }
    return 1;
}

#endif
