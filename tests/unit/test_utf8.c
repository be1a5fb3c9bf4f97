/* The one UTF-8 decoder (include/llmbox/utf8.h) and common/utf8.c's
 * checks and repair, against RFC 3629's table of well-formed sequences. */
#include "testlib.h"

#include "common/utf8.h"

#include <stdint.h>
#include <stdlib.h>

/* RFC 3629 section 4 by byte ranges, written independently of the decoder:
 * the length of the well-formed sequence at p (n bytes), or 0. */
static size_t rfc_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || len > n)
        return 0;
    unsigned lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

TEST(decoder_matches_rfc3629_exhaustively)
{
    unsigned char b[4];
    size_t bad = 0;
    /* every 1-, 2- and 3-byte input; 4-byte ones with every lead and second
     * byte and a few third and fourth bytes */
    for (unsigned x = 0; x < 256; x++) {
        b[0] = (unsigned char)x;
        bad += llmbox_utf8_decode(b, 1, NULL) != rfc_len(b, 1);
        for (unsigned y = 0; y < 256; y++) {
            b[1] = (unsigned char)y;
            bad += llmbox_utf8_decode(b, 2, NULL) != rfc_len(b, 2);
            for (unsigned z = 0; z < 256; z++) {
                b[2] = (unsigned char)z;
                bad += llmbox_utf8_decode(b, 3, NULL) != rfc_len(b, 3);
            }
            static const unsigned char some[] = {0x00, 0x41, 0x80, 0x8F, 0x90, 0xBF, 0xC0, 0xFF};
            for (size_t i = 0; i < sizeof some; i++)
                for (size_t j = 0; j < sizeof some; j++) {
                    b[2] = some[i];
                    b[3] = some[j];
                    bad += llmbox_utf8_decode(b, 4, NULL) != rfc_len(b, 4);
                }
        }
    }
    CHECK(bad == 0);
}

TEST(code_points)
{
    uint32_t cp = 0;
    CHECK(llmbox_utf8_decode((const unsigned char *)"A", 1, &cp) == 1 && cp == 'A');
    CHECK(llmbox_utf8_decode((const unsigned char *)"\xC3\xA9", 2, &cp) == 2 && cp == 0xE9);
    CHECK(llmbox_utf8_decode((const unsigned char *)"\xE2\x80\xAE", 3, &cp) == 3 && cp == 0x202E);
    CHECK(llmbox_utf8_decode((const unsigned char *)"\xF0\x9F\x98\x80", 4, &cp) == 4 && cp == 0x1F600);
    CHECK(llmbox_utf8_decode((const unsigned char *)"\xF4\x8F\xBF\xBF", 4, &cp) == 4 && cp == 0x10FFFF);
    /* cut short by n, even when the bytes after are right */
    CHECK(llmbox_utf8_decode((const unsigned char *)"\xF0\x9F\x98\x80", 3, NULL) == 0);
}

TEST(valid_refuses_nul_and_broken)
{
    CHECK(lb_utf8_valid("", 0));
    CHECK(lb_utf8_valid("h\xC3\xA9llo", 6));
    CHECK(!lb_utf8_valid("a\0b", 3));
    CHECK(!lb_utf8_valid("\xC0\x80", 2));       /* overlong NUL */
    CHECK(!lb_utf8_valid("\xED\xA0\x80", 3));   /* a surrogate */
    CHECK(!lb_utf8_valid("\xC3", 1));
    CHECK(llmbox_utf8_is_text("ok", 2) && !llmbox_utf8_is_text("\xFF", 1));
    CHECK(lb_utf8_seq_len("\xC3\xA9", 2) == 2 && lb_utf8_seq_len("x", 0) == 0);
}

TEST(sanitize_replaces_each_bad_byte)
{
    size_t n = 0;
    char *s = lb_utf8_sanitize("a\xFF\0b\xE2\x82", 6, &n);
    CHECK_STR(s, "a" LB_UTF8_REPLACEMENT LB_UTF8_REPLACEMENT "b" LB_UTF8_REPLACEMENT LB_UTF8_REPLACEMENT);
    CHECK(n == 14);
    free(s);
    s = lb_utf8_sanitize("", 0, &n);
    CHECK_STR(s, "");
    CHECK(n == 0);
    free(s);
}

TEST(trim_partial)
{
    char a[] = "ab\xE2\x82";
    lb_utf8_trim_partial(a);
    CHECK_STR(a, "ab");
    char b[] = "ab\xE2\x82\xAC";
    lb_utf8_trim_partial(b);
    CHECK_STR(b, "ab\xE2\x82\xAC");
    char c[] = "x\xF0";
    lb_utf8_trim_partial(c);
    CHECK_STR(c, "x");
}

int main(void)
{
    RUN(decoder_matches_rfc3629_exhaustively);
    RUN(code_points);
    RUN(valid_refuses_nul_and_broken);
    RUN(sanitize_replaces_each_bad_byte);
    RUN(trim_partial);
    return testlib_done();
}
