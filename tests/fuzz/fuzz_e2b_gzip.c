/* libFuzzer target for envd's /files encodings (server/e2b/e2b_gzip.c):
 * any bytes as a body sent with Content-Encoding: gzip (lb_e2b_gunzip) and,
 * NUL-terminated, as an Accept-Encoding header (lb_e2b_accepts_gzip).
 * Promise: unpacking never goes past its cap (LB_E_TOOBIG instead), fails
 * only with LB_E_INVAL or LB_E_TOOBIG, and what it unpacks packs and
 * unpacks back to the same bytes; the header check answers 0 or 1. */
#include "common/buf.h"
#include "e2b/e2b_gzip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FZ_CAP 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lb_buf out, again, back;
    lb_buf_init(&out, FZ_CAP);
    int rc = lb_e2b_gunzip((const char *)data, size, &out);
    if (rc != LB_OK && rc != LB_E_INVAL && rc != LB_E_TOOBIG && rc != LB_E_NOMEM)
        __builtin_trap();
    if (out.len > FZ_CAP)
        __builtin_trap();
    if (rc == LB_OK) {
        lb_buf_init(&again, out.len + out.len / 1000 + 4096);
        lb_buf_init(&back, FZ_CAP);
        if (lb_e2b_gzip(out.data ? out.data : "", out.len, &again) != LB_OK ||
            lb_e2b_gunzip(again.data, again.len, &back) != LB_OK || back.len != out.len ||
            (out.len && memcmp(back.data, out.data, out.len)))
            __builtin_trap();
        lb_buf_free(&again);
        lb_buf_free(&back);
    }
    lb_buf_free(&out);
    char *h = malloc(size + 1);
    if (h) {
        memcpy(h, data, size);
        h[size] = '\0';
        int a = lb_e2b_accepts_gzip(h);
        if (a != 0 && a != 1)
            __builtin_trap();
        free(h);
    }
    return 0;
}
