/* E2B's network options as llmbox's policy of rules; the contract is
 * e2b_network.h. E2B lets an allowOut entry win over denyOut ("allowed
 * entries always take precedence"), so E2B's rules become a policy with
 * "precedence": "allow" (common/netpolicy.h): allowOut as allow rules, "*"
 * unless denyOut holds all traffic (0.0.0.0/0) or allow_internet_access
 * is false, denyOut (but all traffic) as deny rules. "*" loses to a deny
 * rule and an allowOut entry wins over one, as in E2B. The update sends
 * the whole egress configuration each time ("omitting a field clears
 * it"), flat: {allowOut?, denyOut?, allow_internet_access?, egressProxy?,
 * rules?}, mapped the same way, so {} is E2B's default again (the
 * internet) within the operator's ceiling. The change itself is the
 * sandbox API's (lb_sbx_network_apply), so the ceiling and its sentence
 * are one. */
#include "e2b/e2b_network.h"

#include "common/log.h"
#include "common/netpolicy.h"
#include "common/util.h"
#include "e2b/e2b_connect.h"
#include "sbxapi/handlers_sandbox_network.h"
#include "web/http.h"
#include "web/req_body.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* An absent or null field, or an empty list or object: nothing asked. */
static int unset(const cJSON *v)
{
    return !v || cJSON_IsNull(v) || ((cJSON_IsArray(v) || cJSON_IsObject(v)) && !v->child);
}

/* Whether s is E2B's "all traffic" (the SDK's allTraffic, 0.0.0.0/0), or
 * llmbox's "*" written as a deny rule: both deny everything. */
static int all_traffic(const cJSON *s)
{
    return cJSON_IsString(s) && (!strcmp(s->valuestring, "0.0.0.0/0") || !strcmp(s->valuestring, "*"));
}

/* Whether name is an HTTP header name (a token) of at most
 * LB_E2B_TRANSFORM_NAME_MAX bytes that the gateway does not itself set. */
static int header_name_ok(const char *name)
{
    static const char *const own[] = {"host", "connection", "content-length", "transfer-encoding", "keep-alive",
                                      "upgrade", "te", "trailer", "proxy-connection", "proxy-authorization"};
    size_t n = strlen(name);
    if (!n || n > LB_E2B_TRANSFORM_NAME_MAX ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+.^_`|~-") != n)
        return 0;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcasecmp(name, own[i]))
            return 0;
    return 1;
}

/* E2B's network.rules ({HOST: [{transform: {headers: {NAME: VALUE}}}]})
 * as transform secrets: their names into the policy o's "secrets" (and
 * fb's), their values into *values (JSON text [{name, hosts, header,
 * value}], the caller wipes and frees it). LB_OK, LB_E_INVAL with a
 * sentence, LB_E_NOMEM. */
static int transforms(const cJSON *rules, cJSON *o, cJSON *fb, char **values, char *err, size_t errsz)
{
    *values = NULL;
    if (!cJSON_IsObject(rules)) {
        snprintf(err, errsz, "network.rules must be an object {HOST: [{transform: {headers: {NAME: VALUE}}}]}.");
        return LB_E_INVAL;
    }
    cJSON *vals = cJSON_CreateArray(), *names = cJSON_CreateArray();
    int rc = vals && names ? LB_OK : LB_E_NOMEM, n = 0;
    const cJSON *host;
    cJSON_ArrayForEach(host, rules) {
        lb_netpol_rule hr;
        char e2[300];
        if (rc != LB_OK)
            break;
        if (lb_netpolicy_rule_parse(host->string, &hr, e2, sizeof e2) != LB_OK || hr.port ||
            (hr.r.kind != LB_NETRULE_HOST && hr.r.kind != LB_NETRULE_SUFFIX)) {
            snprintf(err, errsz, "network.rules: \"%.80s\" is not a host name (example.com, *.example.com): a "
                                 "transform applies to HTTPS requests by the name they are sent to.", host->string);
            rc = LB_E_INVAL;
            break;
        }
        if (!cJSON_IsArray(host)) {
            snprintf(err, errsz, "network.rules[\"%.80s\"] must be a list of rules [{transform: {headers}}].",
                     host->string);
            rc = LB_E_INVAL;
            break;
        }
        const cJSON *rule;
        cJSON_ArrayForEach(rule, host) {
            const cJSON *tf = cJSON_GetObjectItemCaseSensitive(rule, "transform");
            const cJSON *hd = cJSON_GetObjectItemCaseSensitive(tf, "headers");
            if (!cJSON_IsObject(rule) || cJSON_GetArraySize(rule) != (tf ? 1 : 0) ||
                (tf && (!cJSON_IsObject(tf) || cJSON_GetArraySize(tf) != (hd ? 1 : 0))) ||
                (hd && !cJSON_IsObject(hd))) {
                snprintf(err, errsz, "network.rules[\"%.80s\"]: a rule is {transform: {headers: {NAME: VALUE}}}; "
                                     "llmbox has no other field of a rule or a transform.", host->string);
                rc = LB_E_INVAL;
                break;
            }
            const cJSON *h;
            cJSON_ArrayForEach(h, hd) {
                const char *v = cJSON_GetStringValue(h);
                if (!header_name_ok(h->string)) {
                    snprintf(err, errsz, "network.rules[\"%.80s\"]: \"%.80s\" is not a header name a transform "
                                         "may set (a token of 1 to %d bytes; not Host, Connection, Content-Length, "
                                         "Transfer-Encoding or another the gateway sets).", host->string, h->string,
                             LB_E2B_TRANSFORM_NAME_MAX);
                    rc = LB_E_INVAL;
                    break;
                }
                size_t vl = v ? strlen(v) : 0;
                int ctl = 0;
                for (size_t i = 0; i < vl; i++)
                    ctl |= (unsigned char)v[i] < 0x20 || v[i] == 0x7f;
                if (!v || vl > LB_E2B_TRANSFORM_VALUE_MAX || ctl) {
                    snprintf(err, errsz, "network.rules[\"%.80s\"]: the value of header %.80s must be a string of "
                                         "at most %d bytes with no line break or other control character.",
                             host->string, h->string, LB_E2B_TRANSFORM_VALUE_MAX);
                    rc = LB_E_INVAL;
                    break;
                }
                if (strstr(v, "${e2b.identity.")) {
                    snprintf(err, errsz, "network.rules[\"%.80s\"]: header %.80s names a workload identity token "
                                         "(iam): llmbox mints none.", host->string, h->string);
                    rc = LB_E_INVAL;
                    break;
                }
                if (n == LB_E2B_TRANSFORMS_MAX) {
                    snprintf(err, errsz, "network.rules sets more than %d headers in all.", LB_E2B_TRANSFORMS_MAX);
                    rc = LB_E_INVAL;
                    break;
                }
                char name[LB_NETPOL_SECRET_NAME], line[LB_E2B_TRANSFORM_NAME_MAX + 16];
                snprintf(name, sizeof name, "%st%d", LB_NETPOL_TRANSFORM_PREFIX, n++);
                snprintf(line, sizeof line, "%s: {value}", h->string);
                cJSON *e = cJSON_CreateObject();
                if (!e || !cJSON_AddItemToArray(vals, e) || !cJSON_AddStringToObject(e, "name", name) ||
                    !cJSON_AddStringToObject(e, "hosts", hr.text) || !cJSON_AddStringToObject(e, "header", line) ||
                    !cJSON_AddStringToObject(e, "value", v) || !cJSON_AddItemToArray(names, cJSON_CreateString(name))) {
                    rc = LB_E_NOMEM;
                    break;
                }
            }
            if (rc != LB_OK)
                break;
        }
    }
    if (rc == LB_OK && n) {
        *values = cJSON_PrintUnformatted(vals);
        if (!*values || !cJSON_AddItemToObject(o, "secrets", cJSON_Duplicate(names, 1)) ||
            (fb && !cJSON_AddItemToObject(fb, "secrets", cJSON_Duplicate(names, 1))))
            rc = LB_E_NOMEM;
    }
    if (rc == LB_E_NOMEM)
        snprintf(err, errsz, "Out of memory.");
    if (rc != LB_OK && *values) {
        lb_free_wiped(*values);
        *values = NULL;
    }
    cJSON_Delete(vals); /* held the values: freed as cJSON frees */
    cJSON_Delete(names);
    return rc;
}

int lb_e2b_network_map(const cJSON *inet, const cJSON *net, cJSON **out, cJSON **fallback, char **values,
                       char *err, size_t errsz)
{
    *out = NULL;
    if (fallback)
        *fallback = NULL;
    if (values)
        *values = NULL;
    if (inet && !cJSON_IsNull(inet) && !cJSON_IsBool(inet)) {
        snprintf(err, errsz, "allow_internet_access must be true or false.");
        return LB_E_INVAL;
    }
    if (net && !cJSON_IsNull(net) && !cJSON_IsObject(net)) {
        snprintf(err, errsz, "network must be an object {allowOut, denyOut, ...}.");
        return LB_E_INVAL;
    }
    const cJSON *allow = cJSON_GetObjectItemCaseSensitive(net, "allowOut");
    const cJSON *deny = cJSON_GetObjectItemCaseSensitive(net, "denyOut");
    if ((allow && !cJSON_IsNull(allow) && !cJSON_IsArray(allow)) ||
        (deny && !cJSON_IsNull(deny) && !cJSON_IsArray(deny))) {
        snprintf(err, errsz, "allowOut and denyOut must be lists of rules (docs/NETWORK.md).");
        return LB_E_INVAL;
    }
    if (!unset(cJSON_GetObjectItemCaseSensitive(net, "egressProxy"))) {
        snprintf(err, errsz, "An egress proxy (egressProxy) is not supported by llmbox: its gateway sends the "
                             "sandbox's traffic out directly (docs/E2B.md).");
        return LB_E_INVAL;
    }
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(net, "rules");
    if (!unset(rules) && !values) {
        snprintf(err, errsz, "Per-host rules (transforms) are set when the sandbox is created: an update can "
                             "clear them (omit rules) but not set new ones (docs/E2B.md).");
        return LB_E_INVAL;
    }
    int deny_all = cJSON_IsFalse(inet);
    const cJSON *it;
    cJSON_ArrayForEach(it, deny)
        deny_all |= all_traffic(it);
    cJSON *o = cJSON_CreateObject();
    cJSON *a = o ? cJSON_AddArrayToObject(o, "allow") : NULL, *d = a ? cJSON_AddArrayToObject(o, "deny") : NULL;
    int ok = d && cJSON_AddStringToObject(o, "precedence", "allow");
    if (!deny_all)
        ok = ok && cJSON_AddItemToArray(a, cJSON_CreateString("*"));
    /* a non-string entry is refused by the policy's parser, with its sentence */
    cJSON_ArrayForEach(it, allow)
        ok = ok && cJSON_AddItemToArray(a, cJSON_Duplicate(it, 1));
    cJSON_ArrayForEach(it, deny)
        if (!all_traffic(it))
            ok = ok && cJSON_AddItemToArray(d, cJSON_Duplicate(it, 1));
    /* neither list: E2B's default (the internet, or nothing), which the
     * operator's ceiling may not reach: then a gateway that allows nothing
     * yet, so updateNetwork can give the sandbox rules later (the caller
     * falls back to no network where the ceiling allows no rules) */
    cJSON *fb = NULL;
    if (ok && fallback && unset(allow) && unset(deny)) {
        fb = cJSON_CreateObject();
        ok = fb && cJSON_AddArrayToObject(fb, "allow") && cJSON_AddStringToObject(fb, "precedence", "allow");
    }
    if (!ok) {
        cJSON_Delete(o);
        cJSON_Delete(fb);
        snprintf(err, errsz, "Out of memory.");
        return LB_E_NOMEM;
    }
    if (!unset(rules)) {
        int rc = transforms(rules, o, fb, values, err, errsz);
        if (rc != LB_OK) {
            cJSON_Delete(o);
            cJSON_Delete(fb);
            return rc;
        }
    }
    *out = o;
    if (fallback)
        *fallback = fb;
    return LB_OK;
}

int lb_e2b_transforms_admit(const char *values, const char *service, const char *user, char *err, size_t errsz)
{
    cJSON *vals = values ? cJSON_Parse(values) : NULL;
    lb_netpolicy *p = malloc(sizeof *p);
    /* values is ours (lb_e2b_network_map's): a parse fails only for want of memory, never admitted */
    int rc = p && (!values || vals) ? LB_OK : LB_E_NOMEM;
    const cJSON *it;
    cJSON_ArrayForEach(it, vals) {
        const char *hosts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "hosts"));
        char e2[300];
        if (rc != LB_OK)
            break;
        if (lb_netpolicy_list_parse(hosts, p, e2, sizeof e2) != LB_OK) {
            snprintf(err, errsz, "network.rules: %s", e2);
            rc = LB_E_INVAL;
            break;
        }
        rc = lb_netpolicy_admit(p, service, user, err, errsz);
    }
    if (rc == LB_E_NOMEM)
        snprintf(err, errsz, "Out of memory.");
    free(p);
    cJSON_Delete(vals); /* held the values: freed as cJSON frees */
    return rc;
}

int lb_e2b_mask_host_check(const cJSON *v, char *out, size_t outsz, char *err, size_t errsz)
{
    out[0] = '\0';
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    const char *m = cJSON_IsString(v) ? v->valuestring : NULL;
    size_t n = m ? strlen(m) : 0;
    if (!n || n >= outsz || n >= LB_SBX_MASK_HOST_MAX) {
        snprintf(err, errsz, "network.maskRequestHost must be a host name of 1 to %d bytes, with an optional "
                             ":PORT, where ${PORT} stands for the port.", LB_SBX_MASK_HOST_MAX - 1);
        return LB_E_INVAL;
    }
    /* HOST[:PORT], ${PORT} anywhere a digit or a name's letter may be;
     * checked with ${PORT} read as one such character */
    int colon = 0, hostlen = 0, portlen = 0;
    for (const char *q = m; *q; q++) {
        if (!strncmp(q, "${PORT}", 7)) {
            q += 6;
            colon ? portlen++ : hostlen++;
            continue;
        }
        char c = *q;
        if (c == ':' && !colon && hostlen) {
            colon = 1;
        } else if (colon ? (c >= '0' && c <= '9')
                         : ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                            c == '-' || c == '_')) {
            colon ? portlen++ : hostlen++;
        } else {
            snprintf(err, errsz, "network.maskRequestHost \"%.80s\" is not HOST or HOST:PORT (letters, digits, "
                                 "'.', '-', '_' and ${PORT}; no spaces or control characters).",
                     strpbrk(m, "\r\n") ? "(a line break)" : m);
            return LB_E_INVAL;
        }
    }
    const char *pt = colon ? strchr(m, ':') + 1 : NULL;
    long long pn = 0;
    if ((pt && strcmp(pt, "${PORT}") && (portlen > 5 || strstr(pt, "${PORT}") || lb_parse_ll(pt, 1, 65535, &pn)))
        || !hostlen) {
        snprintf(err, errsz, "network.maskRequestHost \"%.80s\": the port after ':' must be a number from 1 to "
                             "65535 or ${PORT}.", m);
        return LB_E_INVAL;
    }
    memcpy(out, m, n + 1);
    return LB_OK;
}

void lb_e2b_mask_host_apply(const char *mask, int port, char *out, size_t outsz)
{
    size_t o = 0;
    for (const char *q = mask; *q && o + 1 < outsz;) {
        if (!strncmp(q, "${PORT}", 7)) {
            int k = snprintf(out + o, outsz - o, "%d", port);
            o = k < 0 || (size_t)k >= outsz - o ? outsz - 1 : o + (size_t)k;
            q += 7;
        } else {
            out[o++] = *q++;
        }
    }
    out[o] = '\0';
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
    cJSON *fb = NULL;
    int rc = LB_OK;
    if (!cJSON_IsObject(body)) {
        snprintf(err, sizeof err, "The network update must be a JSON object {allowOut, denyOut, "
                                  "allow_internet_access}.");
        rc = LB_E_INVAL;
    }
    /* the update is flat: its own fields are the network object's */
    if (rc == LB_OK)
        rc = lb_e2b_network_map(cJSON_GetObjectItemCaseSensitive(body, "allow_internet_access"), body, &pol, &fb,
                                NULL, err, sizeof err);
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
    if (rc == LB_OK && (rc = lb_sbx_network_apply(r, sid, pol, text, err, sizeof err, &st)) == LB_E_DENIED && fb) {
        /* {} (or allowInternetAccess alone): the default the ceiling allows,
         * as a create gets it */
        char e2[600];
        rc = lb_sbx_network_apply(r, sid, fb, text, e2, sizeof e2, &st);
        if (rc != LB_E_DENIED)
            snprintf(err, sizeof err, "%s", e2);
    }
    if (rc == LB_E_NOTFOUND) {
        /* E2B's SDK reads a 404 as "sandbox not found"; the sandbox is
         * there, only made without rules */
        snprintf(err, sizeof err, "This sandbox's network cannot change: it was created without network rules, "
                                  "where this service allowed none (network_egress_max), so it has no gateway.");
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
    cJSON_Delete(fb);
    cJSON_Delete(body);
}
