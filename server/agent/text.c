#include "agent/text.h"

#include "common/status.h"
#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lb_htbuf_init(lb_htbuf *b, size_t head_max, size_t tail_max)
{
    memset(b, 0, sizeof *b);
    b->head_max = head_max;
    b->tail_max = tail_max;
}

void lb_htbuf_free(lb_htbuf *b)
{
    free(b->head);
    free(b->tail);
    b->head = b->tail = NULL;
    b->head_len = b->tail_len = b->tail_pos = 0;
    b->total = 0;
}

int lb_htbuf_append(lb_htbuf *b, const char *p, size_t n)
{
    if (!n)
        return LB_OK;
    b->total += n;
    if (b->head_len < b->head_max) {
        if (!b->head && !(b->head = malloc(b->head_max)))
            return LB_E_NOMEM;
        size_t take = b->head_max - b->head_len;
        if (take > n)
            take = n;
        memcpy(b->head + b->head_len, p, take);
        b->head_len += take;
        p += take;
        n -= take;
    }
    if (!n || !b->tail_max)
        return LB_OK;
    if (!b->tail && !(b->tail = malloc(b->tail_max)))
        return LB_E_NOMEM;
    /* only the last tail_max bytes of this chunk can survive */
    if (n > b->tail_max) {
        p += n - b->tail_max;
        n = b->tail_max;
    }
    while (n) {
        size_t room = b->tail_max - b->tail_pos;
        size_t take = n < room ? n : room;
        memcpy(b->tail + b->tail_pos, p, take);
        b->tail_pos = (b->tail_pos + take) % b->tail_max;
        b->tail_len += take;
        if (b->tail_len > b->tail_max)
            b->tail_len = b->tail_max;
        p += take;
        n -= take;
    }
    return LB_OK;
}

uint64_t lb_htbuf_omitted(const lb_htbuf *b)
{
    return b->total - b->head_len - b->tail_len;
}

char *lb_htbuf_render(const lb_htbuf *b, size_t *outlen)
{
    char marker[96];
    uint64_t omitted = lb_htbuf_omitted(b);
    int mlen = 0;
    if (omitted)
        mlen = snprintf(marker, sizeof marker, "\n[... %llu bytes omitted ...]\n",
                        (unsigned long long)omitted);
    size_t raw_len = b->head_len + (size_t)mlen + b->tail_len;
    char *raw = malloc(raw_len + 1);
    if (!raw)
        return NULL;
    size_t o = 0;
    if (b->head_len)
        memcpy(raw, b->head, b->head_len);
    o = b->head_len;
    /* cut points can split a UTF-8 sequence; the sanitizer below turns the
     * halves into U+FFFD, so the marker stays readable */
    memcpy(raw + o, marker, (size_t)mlen);
    o += (size_t)mlen;
    if (b->tail_len) {
        size_t start = (b->tail_pos + b->tail_max - b->tail_len) % b->tail_max;
        size_t first = b->tail_max - start;
        if (first > b->tail_len)
            first = b->tail_len;
        memcpy(raw + o, b->tail + start, first);
        memcpy(raw + o + first, b->tail, b->tail_len - first);
        o += b->tail_len;
    }
    char *out = lb_utf8_sanitize(raw, o, outlen);
    free(raw);
    return out;
}

char *lb_strdup_trunc(const char *s, size_t max)
{
    if (!s)
        s = "";
    size_t n = strlen(s);
    if (n <= max)
        return strdup(s);
    size_t cut = max;
    /* back up to the start of a UTF-8 sequence */
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    char *out = malloc(cut + 4);
    if (!out)
        return NULL;
    memcpy(out, s, cut);
    memcpy(out + cut, "...", 4);
    return out;
}
