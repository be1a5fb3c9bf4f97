/* libFuzzer target for image references (server/common/image_ref.c), from
 * a client's `image`, a Dockerfile's FROM, a command line or a file name in
 * the image store (any bytes). Promises: an accepted reference normalizes
 * to at most LB_IMAGE_REF_MAX bytes of the reference alphabet; parsing the
 * normalized text again gives the same text (normalizing is idempotent);
 * its file name has no '/', never starts with '.', and reads back to the
 * same reference; and lb_image_ref_from_file_name accepts a name only when
 * writing that reference's file name gives the name back. */
#include "common/image_ref.h"

#include <stdint.h>
#include <string.h>

static void check_alphabet(const char *s)
{
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("._-/:@[]", c)))
            __builtin_trap();
    }
}

static void check(const char *s, unsigned flags)
{
    lb_image_ref r, again, back;
    char msg[256], text[LB_IMAGE_REF_MAX + 1], text2[LB_IMAGE_REF_MAX + 1], fname[LB_IMAGE_REF_MAX + 1];
    if (lb_image_ref_parse(s, flags, &r, msg, sizeof msg) != LB_OK)
        return;
    if (lb_image_ref_format(&r, text, sizeof text) != LB_OK || strlen(text) > LB_IMAGE_REF_MAX)
        __builtin_trap();
    check_alphabet(text);
    if (!r.repo[0] || (!r.host[0] && r.digest[0]) || (r.host[0] && !r.tag[0] && !r.digest[0]))
        __builtin_trap();
    unsigned again_flags = r.host[0] ? 0 : LB_IMAGE_REF_LOCAL;
    if (lb_image_ref_parse(text, again_flags, &again, msg, sizeof msg) != LB_OK ||
        lb_image_ref_format(&again, text2, sizeof text2) != LB_OK || strcmp(text, text2))
        __builtin_trap();
    if (lb_image_ref_file_name(&r, fname, sizeof fname) != LB_OK || strchr(fname, '/') || fname[0] == '.' ||
        strlen(fname) != strlen(text))
        __builtin_trap();
    if (lb_image_ref_from_file_name(fname, &back, msg, sizeof msg) != LB_OK ||
        lb_image_ref_format(&back, text2, sizeof text2) != LB_OK || strcmp(text, text2))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > LB_IMAGE_REF_INPUT_MAX + 8)
        return 0;
    char s[LB_IMAGE_REF_INPUT_MAX + 9];
    memcpy(s, data, size);
    s[size] = '\0';
    check(s, 0);
    check(s, LB_IMAGE_REF_LOCAL);
    lb_image_ref r;
    char msg[256], fname[LB_IMAGE_REF_MAX + 1];
    if (lb_image_ref_from_file_name(s, &r, msg, sizeof msg) == LB_OK &&
        (lb_image_ref_file_name(&r, fname, sizeof fname) != LB_OK || strcmp(fname, s)))
        __builtin_trap();
    return 0;
}
