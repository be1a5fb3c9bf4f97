/*
 * envd's signed file URLs: the SDK's downloadUrl() and uploadUrl() of a
 * sandbox (secure, as every llmbox sandbox is) put ?signature= and maybe
 * ?signature_expiration= on /files, so that a browser or curl without the
 * access token can read or write that one path. The signature is envd's:
 * "v1_" + base64(SHA-256("<path>:<read|write>:<user>:<envdAccessToken>
 * [:<expiration>]")) without padding, the path and user as the query has
 * them (user "" when none); an expiration is Unix seconds and must not have
 * passed.
 */
#ifndef LB_WEB_E2B_SIGN_H
#define LB_WEB_E2B_SIGN_H

#include "common/node_id.h"
#include "common/status.h"
#include "web/request.h"

#include <stddef.h>

#define LB_E2B_SIG_MAX 64   /* "v1_" and 43 base64 characters; longer is refused */

/* The signature of (path, op, user, token, expiration or NULL) into out
 * (>= LB_E2B_SIG_MAX bytes). */
LB_MUST_CHECK int lb_e2b_signature(const char *path, const char *op, const char *user, const char *token,
                                   const char *expiration, char *out, size_t outsz);
/* Whether the request carries a signature query parameter (a signed URL). */
int lb_e2b_signed(lb_req *r);
/* Checks the signed URL of sandbox id for op ("read" or "write"): 1 when
 * its signature is that sandbox's and not expired; 0 with why in why:
 * envd's own words for a wrong signature ("invalid signature") and an
 * expired one ("signature is already expired"), which clients compare. */
int lb_e2b_signed_ok(lb_req *r, const char *id, const char *op, char *why, size_t whysz);
/* The sandbox a signed URL without a sandbox id is for (the SDK builds
 * /files from E2B_SANDBOX_URL's origin, which names none): the running
 * sandbox whose access token makes its signature, into id. 1 when found,
 * expired or not (lb_e2b_signed_ok then says which). */
int lb_e2b_signed_find(lb_req *r, const char *op, char id[LB_NODE_ID_MAX + 1]);

#endif
