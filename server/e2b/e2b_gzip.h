/*
 * gzip for envd's /files route: an upload sent with `Content-Encoding:
 * gzip` (the SDK's files.write(..., {gzip: true})) is unpacked before it is
 * written, and a download asked with `Accept-Encoding: gzip` is sent packed
 * (as envd 0.5.7 does). Both through libarchive's gzip filter, the
 * unpacked size capped so that a small body cannot become a huge file.
 */
#ifndef LB_WEB_E2B_GZIP_H
#define LB_WEB_E2B_GZIP_H

#include "common/buf.h"
#include "common/status.h"

#include <stddef.h>

/* Unpacks the gzip data in[0..len) into out (whose max caps the result:
 * LB_E_TOOBIG past it). LB_E_INVAL when it is not gzip or is damaged. */
LB_MUST_CHECK int lb_e2b_gunzip(const char *in, size_t len, lb_buf *out);
/* Packs in[0..len) as one gzip member into out (max at least len + 1 KiB
 * plus a thousandth: what incompressible data grows to). */
LB_MUST_CHECK int lb_e2b_gzip(const char *in, size_t len, lb_buf *out);
/* Whether an Accept-Encoding header value accepts gzip (a "gzip" or "*"
 * entry whose q is not 0; case-blind). */
int lb_e2b_accepts_gzip(const char *accept);

#endif
