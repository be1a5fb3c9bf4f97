/* libFuzzer target for the answer head a server inside a sandbox sends
 * through E2B's port forwarding (lb_e2b_port_head, server/e2b/e2b_port.c):
 * any bytes. Promise: an accepted head becomes "Status: <its code>" with a
 * code of 100..599, then lines that each end in CRLF and hold no other
 * control character than a tab, none of them a Status, X-Accel-*,
 * Connection or Transfer-Encoding header, and one blank line at the end
 * only; a refused one leaves the status 0. The body's length of an
 * accepted head (lb_e2b_port_body_len) is -1 (until the server closes)
 * or 0..2^62, always 0 for HEAD, and -1 when the length is refused. */
#include "common/buf.h"
#include "common/status.h"
#include "e2b/e2b_port.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lb_buf out;
    lb_buf_init(&out, 1 << 16);
    int status = -1;
    int rc = lb_e2b_port_head((const char *)data, size, &out, &status);
    if (rc != LB_OK) {
        if (rc != LB_E_PROTO || status != 0)
            __builtin_trap();
        lb_buf_free(&out);
        return 0;
    }
    long long len = -7, head_len = -7;
    int lrc = lb_e2b_port_body_len((const char *)data, size, status, 0, &len);
    if ((lrc != LB_OK && (lrc != LB_E_PROTO || len != -1)) || len < -1 || len > (1ll << 62))
        __builtin_trap();
    if (lb_e2b_port_body_len((const char *)data, size, status, 1, &head_len) != LB_OK || head_len != 0)
        __builtin_trap();
    char want[16];
    snprintf(want, sizeof want, "Status: %d", status);
    if (status < 100 || status > 599 || out.len < 4 || strncmp(out.data, want, strlen(want)) ||
        memcmp(out.data + out.len - 4, "\r\n\r\n", 4))
        __builtin_trap();
    const char *p = out.data, *end = out.data + out.len - 2;
    int first = 1;
    while (p < end) {
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (!eol || eol == p) /* a blank line before the end */
            __builtin_trap();
        for (const char *q = p; q < eol; q++)
            if (((unsigned char)*q < 0x20 && *q != '\t') || *q == 0x7f)
                __builtin_trap();
        if (!first && (!strncasecmp(p, "status:", 7) || !strncasecmp(p, "x-accel-", 8) ||
                       !strncasecmp(p, "connection:", 11) || !strncasecmp(p, "transfer-encoding:", 18)))
            __builtin_trap();
        first = 0;
        p = eol + 2;
    }
    lb_buf_free(&out);
    return 0;
}
