/* See clip.h. */
#include "clip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t count_lines(const char *s, size_t n)
{
    size_t k = 0;
    for (const char *p = s; (p = memchr(p, '\n', n - (size_t)(p - s))) != NULL; p++)
        k++;
    /* a last line without its newline is a line too */
    return k + (n && s[n - 1] != '\n');
}

/* Moves i back (or forward) to the start of a UTF-8 sequence. */
static size_t utf8_back(const char *s, size_t i)
{
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

static size_t utf8_fwd(const char *s, size_t n, size_t i)
{
    while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
        i++;
    return i;
}

/* End of the head: whole lines while they fit in hb bytes and hl lines;
 * if not even the first line fits, hb bytes of it. */
static size_t head_end(const char *s, size_t n, size_t hb, size_t hl)
{
    size_t h = 0, lines = 0;
    while (h < n && lines < hl) {
        const char *nl = memchr(s + h, '\n', n - h);
        size_t end = nl ? (size_t)(nl - s) + 1 : n;
        if (end > hb) {
            if (lines == 0)
                h = utf8_back(s, hb < n ? hb : n);
            break;
        }
        h = end;
        lines++;
    }
    return h;
}

/* Start of the tail (never before h): whole lines from the end while they
 * fit in tb bytes and tl lines; if not even the last line fits, its last
 * tb bytes. */
static size_t tail_start(const char *s, size_t n, size_t h, size_t tb, size_t tl)
{
    size_t t = n, lines = 0;
    while (t > h && lines < tl) {
        size_t k = t;
        if (k > h && s[k - 1] == '\n')
            k--; /* this line's own newline */
        size_t start = h;
        for (size_t i = k; i > h; i--) {
            if (s[i - 1] == '\n') {
                start = i;
                break;
            }
        }
        if (n - start > tb) {
            if (lines == 0) {
                size_t cut = n - tb;
                t = utf8_fwd(s, n, cut > h ? cut : h);
            }
            break;
        }
        t = start;
        lines++;
    }
    return t;
}

char *bash_clip(const char *s, size_t n, size_t max_bytes, size_t max_lines, size_t *outlen,
                int *clipped)
{
    if (clipped)
        *clipped = 0;
    if (!s)
        n = 0;
    if (max_bytes < 2)
        max_bytes = 2;
    if (max_lines < 2)
        max_lines = 2;
    if (n <= max_bytes && count_lines(s, n) <= max_lines) {
        char *o = malloc(n + 1);
        if (!o)
            return NULL;
        if (n)
            memcpy(o, s, n);
        o[n] = '\0';
        *outlen = n;
        return o;
    }
    size_t hb = max_bytes / 2, hl = max_lines / 2;
    size_t h = head_end(s, n, hb, hl);
    size_t t = tail_start(s, n, h, max_bytes - hb, max_lines - hl);
    size_t gap = t - h, gap_lines = 0;
    for (size_t i = h; i < t; i++)
        gap_lines += s[i] == '\n';
    char marker[96];
    int m;
    if (gap_lines)
        m = snprintf(marker, sizeof marker, "%s[... %zu line%s (%zu bytes) omitted ...]\n",
                     h && s[h - 1] != '\n' ? "\n" : "", gap_lines, gap_lines == 1 ? "" : "s",
                     gap);
    else
        m = snprintf(marker, sizeof marker, "%s[... %zu bytes omitted ...]\n",
                     h && s[h - 1] != '\n' ? "\n" : "", gap);
    if (m < 0)
        m = 0;
    size_t len = h + (size_t)m + (n - t);
    char *o = malloc(len + 1);
    if (!o)
        return NULL;
    memcpy(o, s, h);
    memcpy(o + h, marker, (size_t)m);
    memcpy(o + h + (size_t)m, s + t, n - t);
    o[len] = '\0';
    *outlen = len;
    if (clipped)
        *clipped = 1;
    return o;
}
