/* A sandbox's egress policy; the contract is netpolicy.h. Network rules
 * and the public/special address ranges are netcheck.c's, so there is one
 * list of special ranges in the program. */
#include "common/netpolicy.h"

#include "common/netcheck.h"
#include "common/status.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lb_netpolicy_rule_parse(const char *word, lb_netpol_rule *r, char *err, size_t errsz)
{
    memset(r, 0, sizeof *r);
    size_t n = word ? strlen(word) : 0;
    if (!n || n >= LB_NETPOL_WORD_MAX) {
        snprintf(err, errsz, "a network rule must be 1 to %d bytes (a name, a network or RULE:PORT)",
                 LB_NETPOL_WORD_MAX - 1);
        return LB_E_INVAL;
    }
    char w[LB_NETPOL_WORD_MAX];
    for (size_t i = 0; i <= n; i++) {
        char c = word[i];
        w[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
    }
    memcpy(r->text, w, n + 1);
    /* the port: after "]" for a bracketed IPv6 rule, else after the only ':' */
    char *host = w, *port = NULL;
    if (w[0] == '[') {
        char *close = strchr(w, ']');
        if (!close || (close[1] && close[1] != ':')) {
            snprintf(err, errsz, "network rule \"%.80s\": a bracketed IPv6 address is [ADDRESS]:PORT", word);
            return LB_E_INVAL;
        }
        *close = '\0';
        host = w + 1;
        port = close[1] ? close + 2 : NULL;
    } else if (strchr(w, ':') && strchr(w, ':') == strrchr(w, ':')) {
        port = strchr(w, ':');
        *port++ = '\0';
    }
    if (port) {
        long long pn;
        if (lb_parse_ll(port, 1, 65535, &pn) != LB_OK) {
            snprintf(err, errsz, "network rule \"%.80s\": the port after ':' must be a number from 1 to 65535",
                     word);
            return LB_E_INVAL;
        }
        r->port = (int)pn;
    }
    if (!strcmp(host, "*")) {
        r->r.kind = LB_NETRULE_PUBLIC;
        return LB_OK;
    }
    /* netcheck's word "public" is spelt "*" here: one spelling for users */
    if (!strcmp(host, "public") || strpbrk(host, ", \t\r\n")) {
        snprintf(err, errsz, "network rule \"%.80s\" is not a name (example.com, *.example.com), \"*\", or a "
                             "network (10.0.0.0/8, fd00::/64), optionally with :PORT", word);
        return LB_E_INVAL;
    }
    /* netcheck parses lists; a rule alone is a list of one, on the heap
     * (a list is 17 KiB) */
    lb_netallow *tmp = calloc(1, sizeof *tmp);
    if (!tmp) {
        snprintf(err, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    char e2[300] = "";
    int rc = lb_netallow_parse(host, tmp, e2, sizeof e2);
    if (rc == LB_OK && tmp->n != 1)
        rc = LB_E_INVAL;
    if (rc != LB_OK) {
        snprintf(err, errsz, "network rule \"%.80s\" is not a name (example.com, *.example.com), \"*\", or a "
                             "network (10.0.0.0/8, fd00::/64), optionally with :PORT", word);
    } else {
        r->r = tmp->r[0];
    }
    free(tmp);
    return rc;
}

int lb_netpolicy_secret_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!n || n >= LB_NETPOL_SECRET_NAME)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
              *s == '_' || *s == '-'))
            return 0;
    return 1;
}

/* "secrets" of a policy: an array of distinct secret names. */
static int secrets_from_json(const cJSON *arr, lb_netpolicy *p, char *err, size_t errsz)
{
    if (!arr || cJSON_IsNull(arr))
        return LB_OK;
    if (!cJSON_IsArray(arr)) {
        snprintf(err, errsz, "network.secrets must be an array of secret names (strings)");
        return LB_E_INVAL;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it) || !lb_netpolicy_secret_name_ok(it->valuestring)) {
            snprintf(err, errsz, "network.secrets must hold secret names (1 to %d letters, digits, '.', '_' or "
                                 "'-')", LB_NETPOL_SECRET_NAME - 1);
            return LB_E_INVAL;
        }
        if (p->nsecrets == LB_NETPOL_SECRETS_MAX) {
            snprintf(err, errsz, "network.secrets names more than %d secrets", LB_NETPOL_SECRETS_MAX);
            return LB_E_TOOBIG;
        }
        int dup = 0;
        for (int i = 0; i < p->nsecrets; i++)
            dup |= !strcmp(p->secrets[i], it->valuestring);
        if (!dup)
            snprintf(p->secrets[p->nsecrets++], LB_NETPOL_SECRET_NAME, "%s", it->valuestring);
    }
    return LB_OK;
}

/* The rules of array arr ("allow" or "deny" of v) into out, *n of them. */
static int rules_from_json(const cJSON *arr, const char *key, lb_netpol_rule *out, int *n, char *err,
                           size_t errsz)
{
    *n = 0;
    if (!arr || cJSON_IsNull(arr))
        return LB_OK;
    if (!cJSON_IsArray(arr)) {
        snprintf(err, errsz, "network.%s must be an array of rules (strings)", key);
        return LB_E_INVAL;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it)) {
            snprintf(err, errsz, "network.%s must hold strings (a name, a network or RULE:PORT)", key);
            return LB_E_INVAL;
        }
        if (*n == LB_NETPOL_RULES_MAX) {
            snprintf(err, errsz, "network.%s has more than %d rules", key, LB_NETPOL_RULES_MAX);
            return LB_E_TOOBIG;
        }
        int rc = lb_netpolicy_rule_parse(it->valuestring, &out[*n], err, errsz);
        if (rc != LB_OK)
            return rc;
        (*n)++;
    }
    return LB_OK;
}

int lb_netpolicy_from_json(const cJSON *v, lb_netpolicy *p, char *err, size_t errsz)
{
    memset(p, 0, sizeof *p);
    p->mode = LB_NETPOL_NONE;
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    if (cJSON_IsString(v)) {
        if (!strcmp(v->valuestring, "none"))
            return LB_OK;
        if (!strcmp(v->valuestring, "nat")) {
            p->mode = LB_NETPOL_NAT;
            return LB_OK;
        }
    }
    if (!cJSON_IsObject(v)) {
        snprintf(err, errsz, "network must be \"none\", \"nat\" or {\"allow\": [rules], \"deny\": [rules]}");
        return LB_E_INVAL;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        if (strcmp(it->string, "allow") && strcmp(it->string, "deny") && strcmp(it->string, "secrets") &&
            strcmp(it->string, "bandwidth") && strcmp(it->string, "max_bytes") && strcmp(it->string, "precedence")) {
            snprintf(err, errsz,
                     "network has an unknown key \"%.40s\" (known: allow, deny, secrets, bandwidth, max_bytes, "
                     "precedence)", it->string);
            return LB_E_INVAL;
        }
    }
    p->mode = LB_NETPOL_RULES;
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(v, "precedence");
    if (pr && !cJSON_IsNull(pr)) {
        if (!cJSON_IsString(pr) || (strcmp(pr->valuestring, "allow") && strcmp(pr->valuestring, "deny"))) {
            snprintf(err, errsz, "network.precedence must be \"deny\" (a deny rule wins, the default) or \"allow\" "
                                 "(an allow rule other than \"*\" wins over deny rules)");
            return LB_E_INVAL;
        }
        p->allow_wins = !strcmp(pr->valuestring, "allow");
    }
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(v, "bandwidth");
    if (bw && !cJSON_IsNull(bw)) {
        double d = cJSON_IsNumber(bw) ? bw->valuedouble : -1;
        if (d < 1024 || d > (double)LB_NETPOL_BANDWIDTH_MAX || d != (double)(long long)d) {
            snprintf(err, errsz, "network.bandwidth must be a whole number of bytes per second from 1024 to %lld",
                     LB_NETPOL_BANDWIDTH_MAX);
            return LB_E_INVAL;
        }
        p->bandwidth = (long long)d;
    }
    const cJSON *mb = cJSON_GetObjectItemCaseSensitive(v, "max_bytes");
    if (mb && !cJSON_IsNull(mb)) {
        double d = cJSON_IsNumber(mb) ? mb->valuedouble : -1;
        if (d < 1 || d > (double)LB_NETPOL_MAX_BYTES_MAX || d != (double)(long long)d) {
            snprintf(err, errsz, "network.max_bytes must be a whole number of bytes from 1 to %lld",
                     LB_NETPOL_MAX_BYTES_MAX);
            return LB_E_INVAL;
        }
        p->max_bytes = (long long)d;
    }
    int src = secrets_from_json(cJSON_GetObjectItemCaseSensitive(v, "secrets"), p, err, errsz);
    if (src != LB_OK)
        return src;
    int rc = rules_from_json(cJSON_GetObjectItemCaseSensitive(v, "allow"), "allow", p->allow, &p->nallow, err,
                             errsz);
    if (rc == LB_OK)
        rc = rules_from_json(cJSON_GetObjectItemCaseSensitive(v, "deny"), "deny", p->deny, &p->ndeny, err,
                             errsz);
    return rc;
}

int lb_netpolicy_parse(const char *text, lb_netpolicy *p, char *err, size_t errsz)
{
    if (!text || !*text || !strcmp(text, "none") || !strcmp(text, "nat")) {
        memset(p, 0, sizeof *p);
        p->mode = text && !strcmp(text, "nat") ? LB_NETPOL_NAT : LB_NETPOL_NONE;
        return LB_OK;
    }
    if (strlen(text) > LB_NETPOL_TEXT_MAX) {
        snprintf(err, errsz, "network is longer than %d bytes", LB_NETPOL_TEXT_MAX);
        return LB_E_TOOBIG;
    }
    cJSON *v = cJSON_Parse(text);
    if (!v) {
        snprintf(err, errsz, "network must be \"none\", \"nat\" or a JSON object {\"allow\": [...], \"deny\": [...]}");
        return LB_E_INVAL;
    }
    int rc = lb_netpolicy_from_json(v, p, err, errsz);
    if (rc == LB_OK && p->mode != LB_NETPOL_RULES) {
        snprintf(err, errsz, "network as text is \"none\", \"nat\" or a JSON object, not a JSON string");
        rc = LB_E_INVAL;
    }
    cJSON_Delete(v);
    return rc;
}

int lb_netpolicy_list_parse(const char *text, lb_netpolicy *p, char *err, size_t errsz)
{
    memset(p, 0, sizeof *p);
    p->mode = LB_NETPOL_RULES;
    if (!text)
        return LB_OK;
    if (strlen(text) > LB_NETPOL_TEXT_MAX) {
        snprintf(err, errsz, "the list of network rules is longer than %d bytes", LB_NETPOL_TEXT_MAX);
        return LB_E_TOOBIG;
    }
    for (const char *q = text; *q;) {
        q += strspn(q, ", \t\r\n");
        size_t w = strcspn(q, ", \t\r\n");
        if (!w)
            break;
        if (p->nallow == LB_NETPOL_RULES_MAX) {
            snprintf(err, errsz, "the list of network rules has more than %d rules", LB_NETPOL_RULES_MAX);
            return LB_E_TOOBIG;
        }
        if (w > 7 && !strncmp(q, "secret:", 7)) {
            char name[LB_NETPOL_SECRET_NAME];
            if (w - 7 >= sizeof name || (snprintf(name, sizeof name, "%.*s", (int)(w - 7), q + 7),
                                         !lb_netpolicy_secret_name_ok(name))) {
                snprintf(err, errsz, "\"%.*s\" is not secret:NAME (a name of 1 to %d letters, digits, '.', '_' or "
                                     "'-')", (int)(w > 80 ? 80 : w), q, LB_NETPOL_SECRET_NAME - 1);
                return LB_E_INVAL;
            }
            if (p->nsecrets == LB_NETPOL_SECRETS_MAX) {
                snprintf(err, errsz, "the list of network rules names more than %d secrets", LB_NETPOL_SECRETS_MAX);
                return LB_E_TOOBIG;
            }
            memcpy(p->secrets[p->nsecrets++], name, strlen(name) + 1);
            q += w;
            continue;
        }
        char word[LB_NETPOL_WORD_MAX + 1];
        if (w >= sizeof word) {
            snprintf(err, errsz, "network rule \"%.40s...\" is longer than %d bytes", q, LB_NETPOL_WORD_MAX - 1);
            return LB_E_INVAL;
        }
        snprintf(word, sizeof word, "%.*s", (int)w, q);
        int rc = lb_netpolicy_rule_parse(word, &p->allow[p->nallow], err, errsz);
        if (rc != LB_OK)
            return rc;
        p->nallow++;
        q += w;
    }
    return LB_OK;
}

int lb_netpolicy_text(const lb_netpolicy *p, char *out, size_t outsz)
{
    if (p->mode != LB_NETPOL_RULES) {
        int k = snprintf(out, outsz, "%s", p->mode == LB_NETPOL_NAT ? "nat" : "none");
        return k < 0 || (size_t)k >= outsz ? LB_E_TOOBIG : LB_OK;
    }
    size_t len = 0;
    for (int pass = 0; pass < 2; pass++) {
        const lb_netpol_rule *rs = pass ? p->deny : p->allow;
        int n = pass ? p->ndeny : p->nallow;
        int k = snprintf(out + len, outsz - len, "%s", pass ? "],\"deny\":[" : "{\"allow\":[");
        if (k < 0 || (size_t)k >= outsz - len)
            return LB_E_TOOBIG;
        len += (size_t)k;
        for (int i = 0; i < n; i++) {
            /* a rule is [a-z0-9.*:/[\]-]: nothing to escape in JSON */
            k = snprintf(out + len, outsz - len, "%s\"%s\"", i ? "," : "", rs[i].text);
            if (k < 0 || (size_t)k >= outsz - len)
                return LB_E_TOOBIG;
            len += (size_t)k;
        }
    }
    int k = snprintf(out + len, outsz - len, "]");
    if (k < 0 || (size_t)k >= outsz - len)
        return LB_E_TOOBIG;
    len += (size_t)k;
    for (int i = 0; i < p->nsecrets; i++) {
        /* a secret's name is [A-Za-z0-9._-]: nothing to escape */
        k = snprintf(out + len, outsz - len, "%s\"%s\"", i ? "," : ",\"secrets\":[", p->secrets[i]);
        if (k < 0 || (size_t)k >= outsz - len)
            return LB_E_TOOBIG;
        len += (size_t)k;
    }
    if (p->nsecrets) {
        if ((k = snprintf(out + len, outsz - len, "]")) < 0 || (size_t)k >= outsz - len)
            return LB_E_TOOBIG;
        len += (size_t)k;
    }
    if (p->bandwidth) {
        if ((k = snprintf(out + len, outsz - len, ",\"bandwidth\":%lld", p->bandwidth)) < 0 ||
            (size_t)k >= outsz - len)
            return LB_E_TOOBIG;
        len += (size_t)k;
    }
    if (p->max_bytes) {
        if ((k = snprintf(out + len, outsz - len, ",\"max_bytes\":%lld", p->max_bytes)) < 0 ||
            (size_t)k >= outsz - len)
            return LB_E_TOOBIG;
        len += (size_t)k;
    }
    if (p->allow_wins) {
        if ((k = snprintf(out + len, outsz - len, ",\"precedence\":\"allow\"")) < 0 || (size_t)k >= outsz - len)
            return LB_E_TOOBIG;
        len += (size_t)k;
    }
    k = snprintf(out + len, outsz - len, "}");
    return k < 0 || (size_t)k >= outsz - len ? LB_E_TOOBIG : LB_OK;
}

/* Whether rule r lies within ceiling rule c (netpolicy.h). */
static int rule_within(const lb_netpol_rule *r, const lb_netpol_rule *c)
{
    if (c->port && c->port != r->port)
        return 0;
    const lb_netrule *a = &r->r, *b = &c->r;
    if (b->kind == LB_NETRULE_PUBLIC && a->kind == LB_NETRULE_NET) {
        /* "*" is names and public addresses: an IPv4 network of /24 or
         * narrower that is public throughout (every special range of
         * netcheck.c is a /24 or wider, so its first address tells); a
         * wider or private network must be named in the ceiling */
        if (a->family != AF_INET || a->prefix < 24)
            return 0;
        struct sockaddr_in s4;
        memset(&s4, 0, sizeof s4);
        s4.sin_family = AF_INET;
        memcpy(&s4.sin_addr, a->addr, 4);
        return lb_netaddr_is_public((struct sockaddr *)&s4, sizeof s4);
    }
    if (b->kind == LB_NETRULE_PUBLIC)
        return 1;
    if (a->kind == LB_NETRULE_PUBLIC)
        return 0;
    if (b->kind == LB_NETRULE_NET) {
        if (a->kind != LB_NETRULE_NET || a->family != b->family || a->prefix < b->prefix)
            return 0;
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        size_t sl;
        if (a->family == AF_INET) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            s4->sin_family = AF_INET;
            memcpy(&s4->sin_addr, a->addr, 4);
            sl = sizeof *s4;
        } else {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            s6->sin6_family = AF_INET6;
            memcpy(&s6->sin6_addr, a->addr, 16);
            sl = sizeof *s6;
        }
        return lb_netrule_addr(b, (struct sockaddr *)&ss, sl);
    }
    if (a->kind == LB_NETRULE_NET)
        return 0;
    if (a->kind == LB_NETRULE_HOST)
        return lb_netrule_host(b, a->host);
    /* a SUFFIX: within an equal SUFFIX, or a SUFFIX above its name */
    if (b->kind == LB_NETRULE_SUFFIX && !strcmp(a->host, b->host))
        return 1;
    return b->kind == LB_NETRULE_SUFFIX && lb_netrule_host(b, a->host);
}

int lb_netpolicy_within(const lb_netpolicy *p, const lb_netpolicy *ceiling, char *err, size_t errsz)
{
    if (p->mode != LB_NETPOL_RULES)
        return LB_OK;
    for (int i = 0; i < p->nallow; i++) {
        int ok = 0;
        for (int j = 0; ceiling && ceiling->mode == LB_NETPOL_RULES && j < ceiling->nallow && !ok; j++)
            ok = rule_within(&p->allow[i], &ceiling->allow[j]);
        if (!ok) {
            snprintf(err, errsz, "network rule \"%s\" is beyond what this service allows sandboxes to reach "
                                 "(network_egress_max)", p->allow[i].text);
            return LB_E_DENIED;
        }
    }
    for (int i = 0; i < p->nsecrets; i++) {
        /* a transform's host is held to the ceiling where it is made (e2b_network.c) */
        int ok = !strncmp(p->secrets[i], LB_NETPOL_TRANSFORM_PREFIX, strlen(LB_NETPOL_TRANSFORM_PREFIX));
        for (int j = 0; ceiling && j < ceiling->nsecrets && !ok; j++)
            ok = !strcmp(p->secrets[i], ceiling->secrets[j]);
        if (!ok) {
            snprintf(err, errsz, "network secret \"%s\" is beyond what this service allows sandboxes to use "
                                 "(network_egress_max lists the secrets they may name as secret:NAME)", p->secrets[i]);
            return LB_E_DENIED;
        }
    }
    return LB_OK;
}

int lb_netpolicy_admit(const lb_netpolicy *p, const char *service, const char *user, char *err, size_t errsz)
{
    if (p->mode != LB_NETPOL_RULES)
        return LB_OK;
    if (!service || !*service) {
        snprintf(err, errsz, "This service allows no network rules for sandboxes; the operator can list the "
                             "rules sandboxes may use in network_egress_max (LLMBOX_NETWORK_EGRESS_MAX).");
        return LB_E_DENIED;
    }
    lb_netpolicy *c = malloc(sizeof *c);
    if (!c) {
        snprintf(err, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    char e2[300];
    int rc = lb_netpolicy_list_parse(service, c, e2, sizeof e2);
    if (rc == LB_OK)
        rc = lb_netpolicy_within(p, c, err, errsz);
    else
        snprintf(err, errsz, "network_egress_max cannot be read: %s", e2);
    if (rc == LB_OK && user && *user) {
        rc = lb_netpolicy_list_parse(user, c, e2, sizeof e2);
        if (rc == LB_OK && (rc = lb_netpolicy_within(p, c, err, errsz)) != LB_OK)
            snprintf(err + strlen(err), errsz - strlen(err), " for this user");
        else if (rc != LB_OK)
            snprintf(err, errsz, "this user's network_egress_max cannot be read: %s", e2);
    }
    free(c);
    return rc == LB_OK || rc == LB_E_NOMEM ? rc : LB_E_DENIED;
}

int lb_netpolicy_admit_bytes(lb_netpolicy *p, unsigned long long service, unsigned long long user, char *err,
                             size_t errsz)
{
    if (p->mode != LB_NETPOL_RULES)
        return LB_OK;
    unsigned long long want = (unsigned long long)p->max_bytes;
    if (service && want > service) {
        snprintf(err, errsz, "network max_bytes %llu is beyond what this service allows a sandbox to move "
                             "(network_max_mb: %llu bytes)", want, service);
        return LB_E_DENIED;
    }
    if (user && want > user) {
        snprintf(err, errsz, "network max_bytes %llu is beyond what this service allows a sandbox to move "
                             "(network_max_mb: %llu bytes) for this user", want, user);
        return LB_E_DENIED;
    }
    if (!want && user)
        p->max_bytes = (long long)user;
    return LB_OK;
}

/* Whether rule r (a name rule or "*") names name on port (0: any). */
static int rule_names(const lb_netpol_rule *r, const char *name, int port)
{
    if (!name || (r->port && port && r->port != port))
        return 0;
    if (r->r.kind == LB_NETRULE_PUBLIC)
        return 1;
    return lb_netrule_host(&r->r, name);
}

/* why = lead + what (either may be "") */
static void why_set(char *why, size_t whysz, const char *lead, const char *what)
{
    if (why && whysz)
        snprintf(why, whysz, "%s%s", lead, what);
}

int lb_netpolicy_name_ok(const lb_netpolicy *p, const char *name, char *why, size_t whysz)
{
    if (!p || p->mode != LB_NETPOL_RULES) {
        why_set(why, whysz, "", "no rules");
        return 0;
    }
    unsigned char tmp[16];
    if (!name || inet_pton(AF_INET, name, tmp) == 1 || inet_pton(AF_INET6, name, tmp) == 1) {
        why_set(why, whysz, "", "not a name");
        return 0;
    }
    /* allow first: an allow rule that names it (not "*") wins over deny */
    for (int i = 0; p->allow_wins && i < p->nallow; i++)
        if (p->allow[i].r.kind != LB_NETRULE_NET && p->allow[i].r.kind != LB_NETRULE_PUBLIC &&
            rule_names(&p->allow[i], name, 0)) {
            why_set(why, whysz, "allow ", p->allow[i].text);
            return 1;
        }
    for (int i = 0; i < p->ndeny; i++)
        if (!p->deny[i].port && rule_names(&p->deny[i], name, 0)) {
            why_set(why, whysz, "deny ", p->deny[i].text);
            return 0;
        }
    for (int i = 0; i < p->nallow; i++)
        if (p->allow[i].r.kind != LB_NETRULE_NET && rule_names(&p->allow[i], name, 0)) {
            why_set(why, whysz, "allow ", p->allow[i].text);
            return 1;
        }
    why_set(why, whysz, "", "no allow rule names it");
    return 0;
}

/* Whether the address of sa is one of self's. */
static int is_self(const struct sockaddr *sa, const struct sockaddr_storage *self, int nself)
{
    for (int i = 0; self && i < nself; i++) {
        const struct sockaddr *s = (const struct sockaddr *)&self[i];
        if (s->sa_family != sa->sa_family)
            continue;
        if (s->sa_family == AF_INET &&
            !memcmp(&((const struct sockaddr_in *)(const void *)s)->sin_addr,
                    &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4))
            return 1;
        if (s->sa_family == AF_INET6 &&
            !memcmp(&((const struct sockaddr_in6 *)(const void *)s)->sin6_addr,
                    &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16))
            return 1;
    }
    return 0;
}

static int rule_has_addr(const lb_netpol_rule *r, const struct sockaddr *sa, size_t salen, int port)
{
    if (r->port && r->port != port)
        return 0;
    return lb_netrule_addr(&r->r, sa, salen);
}

int lb_netpolicy_dest_ok(const lb_netpolicy *p, const char *name, const struct sockaddr *sa, size_t salen,
                         int port, const struct sockaddr_storage *self, int nself, char *why, size_t whysz)
{
    if (!p || p->mode != LB_NETPOL_RULES || !sa) {
        why_set(why, whysz, "", "no rules");
        return 0;
    }
    if (p->allow_wins) {
        if (is_self(sa, self, nself)) {
            why_set(why, whysz, "", "the host's own address");
            return 0;
        }
        /* an allow rule other than "*" wins over deny: a network containing
         * the address (public or not), or a name for a public one */
        int pub = lb_netaddr_is_public(sa, salen);
        for (int i = 0; i < p->nallow; i++) {
            const lb_netpol_rule *r = &p->allow[i];
            if ((r->r.kind == LB_NETRULE_NET && rule_has_addr(r, sa, salen, port)) ||
                (pub && r->r.kind != LB_NETRULE_NET && r->r.kind != LB_NETRULE_PUBLIC && rule_names(r, name, port))) {
                why_set(why, whysz, "allow ", r->text);
                return 1;
            }
        }
    }
    for (int i = 0; i < p->ndeny; i++)
        if ((p->deny[i].r.kind != LB_NETRULE_NET && rule_names(&p->deny[i], name, port)) ||
            rule_has_addr(&p->deny[i], sa, salen, port)) {
            why_set(why, whysz, "deny ", p->deny[i].text);
            return 0;
        }
    if (is_self(sa, self, nself)) {
        why_set(why, whysz, "", "the host's own address");
        return 0;
    }
    /* a network rule that contains the address: the only way to a private one */
    for (int i = 0; i < p->nallow; i++)
        if (p->allow[i].r.kind == LB_NETRULE_NET && rule_has_addr(&p->allow[i], sa, salen, port)) {
            why_set(why, whysz, "allow ", p->allow[i].text);
            return 1;
        }
    if (!lb_netaddr_is_public(sa, salen)) {
        why_set(why, whysz, "", "a private or special address (allowed only by a network rule naming it)");
        return 0;
    }
    for (int i = 0; i < p->nallow; i++) {
        const lb_netpol_rule *r = &p->allow[i];
        if (r->r.kind == LB_NETRULE_NET)
            continue;
        /* "*" allows any public address, even one reached by no name */
        if ((r->r.kind == LB_NETRULE_PUBLIC && (!r->port || r->port == port)) || rule_names(r, name, port)) {
            why_set(why, whysz, "allow ", r->text);
            return 1;
        }
    }
    why_set(why, whysz, "", name ? "no allow rule names it on this port" : "an address no allow rule names");
    return 0;
}
