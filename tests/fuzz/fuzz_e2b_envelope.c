/* libFuzzer target for the Connect envelope of E2B's streaming requests
 * (lb_e2b_envelope_one, server/e2b/e2b_envelope.c): any bytes a client
 * sends as the body of process.Process/Start. Promise: a body is accepted
 * only when it is exactly one 5-byte header with flags 0 and a length that
 * equals the bytes after it and is at most the cap; the message it hands
 * back is those bytes, in place; every refusal has a sentence; the header
 * written for that message reads back the same. */
#include "common/status.h"
#include "e2b/e2b_envelope.h"

#include <stdint.h>
#include <string.h>

#define FZ_MAX 4096 /* a small cap, so libFuzzer reaches both sides of it */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *msg = NULL;
    size_t mlen = 0;
    char why[400] = "";
    int rc = lb_e2b_envelope_one(data, size, FZ_MAX, &msg, &mlen, why, sizeof why);
    int want_ok = size >= 5 && data[0] == 0 &&
                  ((uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 8 | data[4]) ==
                      size - 5 &&
                  size - 5 <= FZ_MAX;
    if ((rc == LB_OK) != want_ok)
        __builtin_trap();
    if (rc != LB_OK) {
        if (!why[0] || (rc != LB_E_INVAL && rc != LB_E_TOOBIG))
            __builtin_trap();
        return 0;
    }
    if (msg != (const char *)data + 5 || mlen != size - 5)
        __builtin_trap();
    unsigned char hdr[LB_E2B_ENV_HDR];
    lb_e2b_envelope_header(hdr, 0, (uint32_t)mlen);
    if (memcmp(hdr, data, 5))
        __builtin_trap();
    return 0;
}
