/* libFuzzer target for the streaming multipart parser (server/web/multipart.c).
 * Build and run:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE \
 *     -Iserver -Iinclude tests/fuzz/fuzz_multipart.c server/web/multipart.c \
 *     server/common/path.c -o /tmp/fuzz_multipart && /tmp/fuzz_multipart -max_total_time=60
 * The first input byte picks the chunk size, so chunk boundaries are fuzzed
 * too; the boundary is fixed ("b0und"). */
#include "common/status.h"
#include "web/multipart.h"
#include "fuzz_util.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static int on_begin(void *arg, const lb_mp_part *p)
{
    (void)arg;
    /* what the parser promises about every part: a name, and a file name
     * that is empty or a clean relative path (lb_path_clean_rel) */
    if (!p->name[0])
        __builtin_trap();
    if (p->filename[0])
        fz_assert_clean_rel(p->filename);
    return 0;
}

static int on_data(void *arg, const lb_mp_part *p, const char *d, size_t n)
{
    (void)p;
    size_t *total = arg;
    for (size_t i = 0; i < n; i++)
        *total += (unsigned char)d[i] != 0; /* touch every byte */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t chunk = (size_t)data[0] % 64 + 1;
    data++;
    size--;
    lb_mp_limits lim = {.max_parts = 8, .max_header_bytes = 512, .max_field_bytes = 256,
                        .max_file_bytes = 4096, .max_total_bytes = 1 << 20};
    lb_mp_callbacks cb = {on_begin, on_data, NULL};
    size_t total = 0;
    lb_mp *m = NULL;
    if (lb_mp_new("b0und", &lim, &cb, &total, &m) != LB_OK)
        return 0;
    int rc = LB_OK;
    for (size_t off = 0; off < size && rc == LB_OK; off += chunk)
        rc = lb_mp_feed(m, (const char *)data + off, size - off < chunk ? size - off : chunk);
    if (rc == LB_OK)
        LB_IGNORE(lb_mp_finish(m)); /* any answer will do: the promise is no crash */
    (void)lb_mp_error(m);
    lb_mp_free(m);
    char b[LB_MP_BOUNDARY_MAX + 1];
    char ct[300];
    size_t n = size < sizeof ct - 1 ? size : sizeof ct - 1;
    memcpy(ct, data, n);
    ct[n] = '\0';
    LB_IGNORE(lb_mp_boundary(ct, b, sizeof b)); /* any answer will do: the promise is no crash */
    return 0;
}
