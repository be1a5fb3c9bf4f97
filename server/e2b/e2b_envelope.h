/* Connect's enveloped messages (the streaming framing of the Connect
 * protocol, connectrpc.com/docs/protocol): 1 byte of flags, 4 bytes of
 * big-endian length, then the message (JSON here: E2B's SDK sends
 * application/connect+json). What E2B's envd speaks for its streaming RPCs
 * (e2b_process.c). Pure functions, fuzzed by tests/fuzz/fuzz_e2b_envelope.c. */
#ifndef LB_E2B_ENVELOPE_H
#define LB_E2B_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define LB_E2B_ENV_HDR 5
#define LB_E2B_FLAG_COMPRESSED 0x01u /* we offer no compression: refused */
#define LB_E2B_FLAG_END 0x02u        /* the end-of-stream message */
/* one request message: a Start carries a command line and its env, far
 * below this; the SDK's file bytes travel over /files, not RPCs */
#define LB_E2B_MSG_MAX (1u << 20)

/* The one message of a server-streaming request body p[0..n): exactly one
 * envelope with flags 0 and nothing after it. *msg points into p, *mlen its
 * length. LB_E_INVAL (a sentence in why) for a short or trailing body,
 * compressed or end flags, LB_E_TOOBIG for a length over max. */
LB_MUST_CHECK int lb_e2b_envelope_one(const unsigned char *p, size_t n, size_t max, const char **msg, size_t *mlen,
                                      char *why, size_t whysz);
/* The 5 header bytes of a message of len bytes with flags. */
void lb_e2b_envelope_header(unsigned char hdr[LB_E2B_ENV_HDR], unsigned flags, uint32_t len);
/* The HTTP status of a Connect error code ("not_found" -> 404 ...): 500
 * for a code it does not know. */
int lb_e2b_code_http(const char *code);

#endif
