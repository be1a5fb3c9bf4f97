/* E2B's network update; the contract is e2b_network.h. The SDK sends the
 * whole egress configuration each time ("fields that are omitted are
 * cleared"), flat: {allowOut?, denyOut?, allow_internet_access?,
 * egressProxy?, rules?}. It becomes an llmbox policy of rules the way
 * E2B's create does (docs/NETWORK.md): E2B lets allowOut win over denyOut
 * and llmbox lets deny win, so a denyOut of everything (0.0.0.0/0) or
 * allow_internet_access false means "only allowOut"; otherwise "*" and
 * allowOut are allowed and denyOut denied. With neither list, E2B's
 * cleared configuration is the internet ("*") or, with
 * allow_internet_access false, nothing. The change itself is the sandbox
 * API's (lb_sbx_network_apply), so the ceiling and its sentence are one. */
#include "e2b/e2b_network.h"

#include "common/log.h"
#include "common/netpolicy.h"
#include "e2b/e2b_connect.h"
#include "sbxapi/handlers_sandbox_network.h"
#include "web/http.h"
#include "web/req_body.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An absent or null field, or an empty list or object: nothing asked. */
static int unset(const cJSON *v)
{
    return !v || cJSON_IsNull(v) || ((cJSON_IsArray(v) || cJSON_IsObject(v)) && !v->child);
}

/* body as an llmbox policy into *out (the caller frees it). LB_OK, or
 * LB_E_INVAL with a sentence. */
static int to_policy(const cJSON *body, cJSON **out, char *err, size_t errsz)
{
    *out = NULL;
    if (!cJSON_IsObject(body)) {
        snprintf(err, errsz, "The network update must be a JSON object {allowOut, denyOut, allow_internet_access}.");
        return LB_E_INVAL;
    }
    const cJSON *inet = cJSON_GetObjectItemCaseSensitive(body, "allow_internet_access");
    const cJSON *allow = cJSON_GetObjectItemCaseSensitive(body, "allowOut");
    const cJSON *deny = cJSON_GetObjectItemCaseSensitive(body, "denyOut");
    if (inet && !cJSON_IsNull(inet) && !cJSON_IsBool(inet)) {
        snprintf(err, errsz, "allow_internet_access must be true or false.");
        return LB_E_INVAL;
    }
    if ((allow && !cJSON_IsNull(allow) && !cJSON_IsArray(allow)) ||
        (deny && !cJSON_IsNull(deny) && !cJSON_IsArray(deny))) {
        snprintf(err, errsz, "allowOut and denyOut must be lists of rules (docs/NETWORK.md).");
        return LB_E_INVAL;
    }
    if (!unset(cJSON_GetObjectItemCaseSensitive(body, "egressProxy")) ||
        !unset(cJSON_GetObjectItemCaseSensitive(body, "rules"))) {
        snprintf(err, errsz, "An egress proxy and per-host rules (transforms) are not supported by llmbox: only "
                             "allowOut, denyOut and allowInternetAccess (docs/E2B.md).");
        return LB_E_INVAL;
    }
    int deny_all = cJSON_IsFalse(inet);
    const cJSON *it;
    cJSON_ArrayForEach(it, deny)
        deny_all |= cJSON_IsString(it) && (!strcmp(it->valuestring, "0.0.0.0/0") || !strcmp(it->valuestring, "*"));
    cJSON *o = cJSON_CreateObject();
    cJSON *a = o ? cJSON_AddArrayToObject(o, "allow") : NULL, *d = a ? cJSON_AddArrayToObject(o, "deny") : NULL;
    int ok = d != NULL;
    if (!deny_all)
        ok = cJSON_AddItemToArray(a, cJSON_CreateString("*"));
    /* a non-string entry is refused by the policy's parser, with its sentence */
    cJSON_ArrayForEach(it, allow)
        ok = ok && cJSON_AddItemToArray(a, cJSON_Duplicate(it, 1));
    if (!deny_all)
        cJSON_ArrayForEach(it, deny)
            ok = ok && cJSON_AddItemToArray(d, cJSON_Duplicate(it, 1));
    if (!ok) {
        cJSON_Delete(o);
        snprintf(err, errsz, "Out of memory.");
        return LB_E_NOMEM;
    }
    *out = o;
    return LB_OK;
}

void lb_e2b_network_put(lb_req *r, lb_sbx *s)
{
    char sid[33], err[600] = "";
    char *text = NULL;
    cJSON *pol = NULL;
    int st = 400;
    cJSON *body = lb_req_json(r, LB_NETPOL_TEXT_MAX * 2, "network update");
    if (!body)
        return;
    pthread_mutex_lock(&s->op_mu);
    snprintf(sid, sizeof sid, "%s", s->sbx_id);
    pthread_mutex_unlock(&s->op_mu);
    int rc = to_policy(body, &pol, err, sizeof err);
    if (rc == LB_E_NOMEM)
        st = 500;
    if (rc == LB_OK && !sid[0]) {
        snprintf(err, sizeof err, "The sandbox is still starting.");
        st = 409;
        rc = LB_E_BUSY;
    }
    if (rc == LB_OK && !(text = malloc(LB_NETPOL_TEXT_MAX + 1))) {
        snprintf(err, sizeof err, "Out of memory.");
        st = 500;
        rc = LB_E_NOMEM;
    }
    if (rc == LB_OK && (rc = lb_sbx_network_apply(r, sid, pol, text, err, sizeof err, &st)) == LB_E_NOTFOUND) {
        /* E2B's SDK reads a 404 as "sandbox not found"; the sandbox is
         * there, only made without rules */
        snprintf(err, sizeof err, "This sandbox's network cannot change: it was created without network rules "
                                  "(create it with network {allowOut, denyOut} or allowInternetAccess false).");
        st = 400;
    }
    if (rc != LB_OK) {
        lb_e2b_error_json(r, st, NULL, err);
    } else {
        lb_info("web: e2b: sandbox %s: network now %s", sid, text);
        lb_http_head(r, 204, NULL, NULL);
    }
    free(text);
    cJSON_Delete(pol);
    cJSON_Delete(body);
}
