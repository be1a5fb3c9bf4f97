/* envd's signed /files URLs (e2b_sign.h). */
#include "e2b/e2b_sign.h"

#include "e2b/e2b_envd.h"
#include "sbxapi/sandbox_registry.h"
#include "web/http.h"

#include "common/token.h"
#include "common/util.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_E2B_SIGN_SCAN 4096   /* sandboxes a signed URL without an id is tried against */

int lb_e2b_signature(const char *path, const char *op, const char *user, const char *token, const char *expiration,
                     char *out, size_t outsz)
{
    size_t n = strlen(path) + strlen(op) + strlen(user) + strlen(token) + (expiration ? strlen(expiration) : 0) + 8;
    char *raw = malloc(n);
    if (!raw)
        return LB_E_NOMEM;
    int w = snprintf(raw, n, "%s:%s:%s:%s%s%s", path, op, user, token, expiration ? ":" : "",
                     expiration ? expiration : "");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    int ok = w > 0 && (size_t)w < n && EVP_Digest(raw, (size_t)w, md, &len, EVP_sha256(), NULL) == 1 && len == 32;
    free(raw);
    unsigned char b64[48];
    if (!ok || outsz < LB_E2B_SIG_MAX)
        return LB_E_INVAL;
    int bn = EVP_EncodeBlock(b64, md, 32);
    while (bn > 0 && b64[bn - 1] == '=') /* the SDK strips the padding */
        bn--;
    snprintf(out, outsz, "v1_%.*s", bn, (const char *)b64);
    return LB_OK;
}

int lb_e2b_signed(lb_req *r)
{
    char sig[LB_E2B_SIG_MAX];
    return r->query && lb_query_get(r->query, "signature", sig, sizeof sig) != LB_E_NOTFOUND;
}

/* The signed URL's fields; 0, or -1 with why. Its expiration is checked
 * after the signature (lb_sig_expired), as envd does: a forger never
 * learns whether the time was the trouble. */
static int lb_sig_fields(lb_req *r, char *path, size_t pathsz, char *user, size_t usersz, char *sig, char *exp,
                         size_t expsz, int *has_exp, char *why, size_t whysz)
{
    path[0] = user[0] = sig[0] = exp[0] = '\0';
    int rp = lb_query_get(r->query, "path", path, pathsz), ru = lb_query_get(r->query, "username", user, usersz);
    int rs = lb_query_get(r->query, "signature", sig, LB_E2B_SIG_MAX), re = lb_query_get(r->query, "signature_expiration", exp, expsz);
    long long e = 0;
    if ((rp && rp != LB_E_NOTFOUND) || (ru && ru != LB_E_NOTFOUND) || rs || (re && re != LB_E_NOTFOUND) ||
        (re == LB_OK && lb_parse_ll(exp, 0, 1LL << 40, &e))) {
        snprintf(why, whysz, "The signed URL is malformed: signature, path, username and signature_expiration (Unix "
                             "seconds) as the SDK's downloadUrl/uploadUrl made them.");
        return -1;
    }
    *has_exp = re == LB_OK;
    return 0;
}

/* Whether a signed URL's expiration (checked by lb_sig_fields) has passed;
 * envd's own words in why, which clients compare. */
static int lb_sig_expired(const char *exp, int has_exp, char *why, size_t whysz)
{
    long long e = 0;
    if (!has_exp || lb_parse_ll(exp, 0, 1LL << 40, &e) || e >= (long long)(lb_now_ms() / 1000))
        return 0;
    snprintf(why, whysz, "signature is already expired");
    return 1;
}

/* Whether sig is the signature of the fields under id's token. */
static int lb_sig_match(lb_req *r, const char *id, const char *op, const char *path, const char *user, const char *sig,
                        const char *exp)
{
    char tok[LB_SHA256_HEX], want[LB_E2B_SIG_MAX];
    if (lb_e2b_access_token(r->cfg, id, tok, sizeof tok) != LB_OK ||
        lb_e2b_signature(path, op, user, tok, exp, want, sizeof want) != LB_OK)
        return 0;
    size_t n = strlen(want);
    return strlen(sig) == n && lb_ct_equal(sig, want, n);
}

int lb_e2b_signed_ok(lb_req *r, const char *id, const char *op, char *why, size_t whysz)
{
    char path[4096], user[256], sig[LB_E2B_SIG_MAX], exp[32];
    int has_exp;
    if (lb_sig_fields(r, path, sizeof path, user, sizeof user, sig, exp, sizeof exp, &has_exp, why, whysz))
        return 0;
    /* envd's words (clients compare them): the signature is not this
     * sandbox's for that operation, path and user */
    if (!lb_sig_match(r, id, op, path, user, sig, has_exp ? exp : NULL)) {
        snprintf(why, whysz, "invalid signature");
        return 0;
    }
    return !lb_sig_expired(exp, has_exp, why, whysz);
}

int lb_e2b_signed_find(lb_req *r, const char *op, char id[LB_NODE_ID_MAX + 1])
{
    char path[4096], user[256], sig[LB_E2B_SIG_MAX], exp[32], why[256];
    int has_exp;
    if (lb_sig_fields(r, path, sizeof path, user, sizeof user, sig, exp, sizeof exp, &has_exp, why, sizeof why))
        return 0;
    char(*ids)[LB_NODE_ID_MAX + 1] = calloc(LB_E2B_SIGN_SCAN, sizeof *ids);
    if (!ids)
        return 0;
    int n = lb_sbx_running_api_ids(ids, LB_E2B_SIGN_SCAN), found = 0;
    for (int i = 0; i < n && !found; i++) {
        if (lb_sig_match(r, ids[i], op, path, user, sig, has_exp ? exp : NULL)) {
            memcpy(id, ids[i], LB_NODE_ID_MAX + 1);
            found = 1;
        }
    }
    free(ids);
    return found;
}
