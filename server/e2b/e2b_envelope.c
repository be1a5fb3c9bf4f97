/* Connect envelopes: parse one, write a header, map codes to statuses. */
#include "e2b/e2b_envelope.h"

#include <stdio.h>
#include <string.h>

int lb_e2b_envelope_one(const unsigned char *p, size_t n, size_t max, const char **msg, size_t *mlen, char *why,
                        size_t whysz)
{
    if (n < LB_E2B_ENV_HDR) {
        snprintf(why, whysz, "the request body is %zu bytes, shorter than a Connect envelope's 5-byte header", n);
        return LB_E_INVAL;
    }
    unsigned flags = p[0];
    uint32_t len = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | (uint32_t)p[4];
    if (flags & LB_E2B_FLAG_COMPRESSED) {
        snprintf(why, whysz, "the envelope is compressed; this server accepts only uncompressed messages");
        return LB_E_INVAL;
    }
    if (flags != 0) {
        snprintf(why, whysz, "the envelope has flags 0x%02x; a request message has none", flags);
        return LB_E_INVAL;
    }
    if (len > max) {
        snprintf(why, whysz, "the envelope says %u bytes, over the limit of %zu", len, max);
        return LB_E_TOOBIG;
    }
    if ((size_t)len != n - LB_E2B_ENV_HDR) {
        snprintf(why, whysz, "the envelope says %u bytes but the body holds %zu after its header", len,
                 n - LB_E2B_ENV_HDR);
        return LB_E_INVAL;
    }
    *msg = (const char *)p + LB_E2B_ENV_HDR;
    *mlen = len;
    return LB_OK;
}

void lb_e2b_envelope_header(unsigned char hdr[LB_E2B_ENV_HDR], unsigned flags, uint32_t len)
{
    hdr[0] = (unsigned char)flags;
    hdr[1] = (unsigned char)(len >> 24);
    hdr[2] = (unsigned char)(len >> 16);
    hdr[3] = (unsigned char)(len >> 8);
    hdr[4] = (unsigned char)len;
}

int lb_e2b_code_http(const char *code)
{
    /* the table of the Connect protocol's "Error Codes" section */
    static const struct {
        const char *code;
        int status;
    } map[] = {
        {"canceled", 499},          {"unknown", 500},           {"invalid_argument", 400},
        {"deadline_exceeded", 504}, {"not_found", 404},         {"already_exists", 409},
        {"permission_denied", 403}, {"resource_exhausted", 429}, {"failed_precondition", 400},
        {"aborted", 409},           {"out_of_range", 400},      {"unimplemented", 501},
        {"internal", 500},          {"unavailable", 503},       {"data_loss", 500},
        {"unauthenticated", 401},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i].code, code))
            return map[i].status;
    return 500;
}
