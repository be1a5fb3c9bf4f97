/* Users of the service and where it listens (the contract is config.h and
 * config_priv.h).
 *
 *     listen = 0.0.0.0:8080          ; refused unless some user exists
 *
 *     [user "alice"]                 ; or [user.alice]
 *     token_sha256 = 9f86d0…         ; SHA-256 of her token, never the token
 *     max_tasks = 2                  ; overrides user_max_tasks
 *     tasks_per_minute = 5           ; overrides user_tasks_per_minute
 *     max_upload_mb = 50             ; overrides user_max_upload_mb
 *     max_sandboxes = 2              ; overrides user_max_sandboxes (sandbox API, E2B)
 *     sandboxes_per_minute = 10      ; overrides user_sandboxes_per_minute
 *
 * `llmbox user add NAME` prints a fresh token and these lines. */
#include "config_priv.h"
#include "netpolicy.h"
#include "node_id.h"
#include "status.h"
#include "token.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef int (*lb_user_setter)(lb_user_cfg *u, const char *v, char *why, size_t whysz);

static int u_intval(int *dst, const char *v, long long lo, long long hi, char *why, size_t whysz)
{
    long long x;
    if (lb_parse_ll(v, lo, hi, &x) != LB_OK) {
        snprintf(why, whysz, "must be a whole number from %lld to %lld (0: no limit of its own)", lo, hi);
        return LB_E_INVAL;
    }
    *dst = (int)x;
    return LB_OK;
}

static int u_max_tasks(lb_user_cfg *u, const char *v, char *why, size_t whysz)
{
    return u_intval(&u->max_tasks, v, 0, 4096, why, whysz);
}

static int u_per_minute(lb_user_cfg *u, const char *v, char *why, size_t whysz)
{
    return u_intval(&u->tasks_per_minute, v, 0, 1000, why, whysz);
}

static int u_max_sandboxes(lb_user_cfg *u, const char *v, char *why, size_t whysz)
{
    return u_intval(&u->max_sandboxes, v, 0, 4096, why, whysz);
}

static int u_sandboxes_per_minute(lb_user_cfg *u, const char *v, char *why, size_t whysz)
{
    return u_intval(&u->sandboxes_per_minute, v, 0, 1000, why, whysz);
}

static int u_upload(lb_user_cfg *u, const char *v, char *why, size_t whysz)
{
    long long x;
    if (lb_parse_ll(v, 1, 1 << 20, &x) != LB_OK) {
        snprintf(why, whysz, "must be a whole number of MiB from 1 to %d", 1 << 20);
        return LB_E_INVAL;
    }
    u->max_upload_bytes = (uint64_t)x << 20;
    return LB_OK;
}

/* network_max_mb in a user's section: the bytes one sandbox's gateway
 * relays, within the service's network_max_mb (netpolicy.h) */
static int u_net_max(lb_user_cfg *u, const char *v, char *why, size_t whysz)
{
    long long x;
    if (lb_parse_ll(v, 1, 1LL << 30, &x) != LB_OK) {
        snprintf(why, whysz, "must be a whole number of MiB from 1 to %lld", 1LL << 30);
        return LB_E_INVAL;
    }
    u->network_max_bytes = (uint64_t)x << 20;
    return LB_OK;
}

/* One or more hashes, separated by commas or blanks (indented lines
 * continue the value: config_file.c). */
static int u_tokens(lb_user_cfg *u, const char *v, char *why, size_t whysz)
{
    u->n_tokens = 0;
    const char *p = v;
    for (;;) {
        p += strspn(p, ", \t");
        if (!*p)
            break;
        size_t n = strcspn(p, ", \t");
        char h[LB_SHA256_HEX];
        if (n != 64) {
            snprintf(why, whysz,
                     "must be the SHA-256 of a token as 64 lowercase hex characters (run `llmbox user add NAME` "
                     "for a token and its line), not the token itself");
            return LB_E_INVAL;
        }
        memcpy(h, p, 64);
        h[64] = '\0';
        if (!lb_sha256_hex_valid(h)) {
            snprintf(why, whysz, "must be 64 lowercase hex characters (0-9, a-f)");
            return LB_E_INVAL;
        }
        if (u->n_tokens == LB_CFG_USER_TOKENS) {
            snprintf(why, whysz, "lists more than %d hashes", LB_CFG_USER_TOKENS);
            return LB_E_TOOBIG;
        }
        memcpy(u->token_sha256[u->n_tokens++], h, sizeof h);
        p += n;
    }
    if (!u->n_tokens) {
        snprintf(why, whysz, "is empty: a user needs the hash of at least one token");
        return LB_E_INVAL;
    }
    return LB_OK;
}

/* network_egress_max in a user's section: rules as netpolicy.h reads them */
static int u_egress(lb_user_cfg *u, const char *v, char *why, size_t whysz)
{
    lb_netpolicy *p = malloc(sizeof *p);
    if (!p) {
        snprintf(why, whysz, "could not be read: out of memory");
        return LB_E_NOMEM;
    }
    int rc = lb_netpolicy_list_parse(v, p, why, whysz);
    free(p);
    if (rc == LB_OK && strlen(v) >= sizeof u->network_egress_max) {
        snprintf(why, whysz, "is longer than %zu bytes", sizeof u->network_egress_max - 1);
        rc = LB_E_TOOBIG;
    }
    if (rc == LB_OK)
        snprintf(u->network_egress_max, sizeof u->network_egress_max, "%s", v);
    return rc;
}

static const struct {
    const char *name;
    lb_user_setter set;
} lb_user_keys[] = {
    {"token_sha256", u_tokens},
    {"max_tasks", u_max_tasks},
    {"tasks_per_minute", u_per_minute},
    {"max_upload_mb", u_upload},
    {"network_egress_max", u_egress},
    {"network_max_mb", u_net_max},
    {"max_sandboxes", u_max_sandboxes},
    {"sandboxes_per_minute", u_sandboxes_per_minute},
};
#define LB_N_USER_KEYS (sizeof lb_user_keys / sizeof lb_user_keys[0])

int lb_cfgi_is_user_key(const char *name) { return !strcmp(name, "token_sha256") || !strcmp(name, "token"); }

static lb_user_cfg *find_user(lb_config *c, const char *name)
{
    for (int i = 0; i < c->n_users; i++)
        if (!strcmp(c->users[i].name, name))
            return &c->users[i];
    return NULL;
}

int lb_cfgi_apply_users(lb_config *c, const lb_conf *cf)
{
    char why[300], name[LB_CFG_SECTION_MAX];
    c->n_users = 0;
    for (size_t i = 0; cf && i < cf->n; i++) {
        const lb_entry *e = &cf->e[i];
        if (!e->section[0] || !lb_conf_user_section(e->section, name, sizeof name))
            continue;
        if (!lb_cfgi_model_name_ok(name))
            return lb_cfgi_fail(LB_E_INVAL, "%s:%d: [%s]: a user name is 1 to %d letters, digits, '.', '-' or '_'",
                                cf->path, e->line, e->section, LB_CFG_USER_NAME - 1);
        lb_user_cfg *u = find_user(c, name);
        if (!u) {
            if (c->n_users == LB_CFG_MAX_USERS)
                return lb_cfgi_fail(LB_E_TOOBIG, "%s:%d: more than %d users", cf->path, e->line, LB_CFG_MAX_USERS);
            u = &c->users[c->n_users++];
            memset(u, 0, sizeof *u);
            memcpy(u->name, name, strlen(name) + 1); /* model_name_ok: at most 63 */
            u->max_tasks = u->tasks_per_minute = -1;
            u->max_sandboxes = u->sandboxes_per_minute = -1;
            u->line = e->line;
        }
        if (!strcmp(e->name, "token"))
            return lb_cfgi_fail(LB_E_INVAL,
                                "%s:%d: token: tokens are never kept in llmbox.conf; put their SHA-256 in "
                                "token_sha256 (`llmbox user add %s` prints a new token and the line)",
                                cf->path, e->line, u->name);
        size_t k = 0;
        while (k < LB_N_USER_KEYS && strcmp(lb_user_keys[k].name, e->name))
            k++;
        if (k == LB_N_USER_KEYS)
            return lb_cfgi_fail(LB_E_INVAL,
                                "%s:%d: unknown key '%s' in [%s] (a user has token_sha256, max_tasks, "
                                "tasks_per_minute, max_upload_mb, max_sandboxes, sandboxes_per_minute, network_egress_max, "
                                "network_max_mb)",
                                cf->path, e->line, e->name, e->section);
        if (lb_user_keys[k].set(u, e->value, why, sizeof why) != LB_OK)
            /* a hash is not secret, but a pasted token would be: never echo it */
            return lb_cfgi_fail(LB_E_INVAL, "%s:%d: %s: %s", cf->path, e->line, e->name, why);
    }
    uint64_t upload = c->user_max_upload_bytes ? c->user_max_upload_bytes : c->max_upload_bytes;
    for (int i = 0; i < c->n_users; i++) {
        lb_user_cfg *u = &c->users[i];
        if (!u->n_tokens)
            return lb_cfgi_fail(LB_E_INVAL,
                                "%s:%d: [user \"%s\"] has no token_sha256 (run `llmbox user add %s` for a token "
                                "and its line)",
                                cf->path, u->line, u->name, u->name);
        for (int j = 0; j < i; j++)
            for (int a = 0; a < u->n_tokens; a++)
                for (int b = 0; b < c->users[j].n_tokens; b++)
                    if (!strcmp(u->token_sha256[a], c->users[j].token_sha256[b]))
                        return lb_cfgi_fail(LB_E_INVAL,
                                            "%s:%d: [user \"%s\"] has a token_sha256 of [user \"%s\"]: a token "
                                            "names one user; make each user their own",
                                            cf->path, u->line, u->name, c->users[j].name);
        if (u->max_tasks < 0)
            u->max_tasks = c->user_max_tasks;
        if (u->tasks_per_minute < 0)
            u->tasks_per_minute = c->user_tasks_per_minute;
        if (u->max_sandboxes < 0)
            u->max_sandboxes = c->user_max_sandboxes;
        if (u->sandboxes_per_minute < 0)
            u->sandboxes_per_minute = c->user_sandboxes_per_minute;
        if (!u->max_upload_bytes)
            u->max_upload_bytes = upload;
        if (u->max_upload_bytes > c->max_upload_bytes) /* nginx and the backend cap every upload */
            u->max_upload_bytes = c->max_upload_bytes;
    }
    return LB_OK;
}

/* ---- listen -------------------------------------------------------------- */

/* Splits "ADDR:PORT" / "[ADDR]:PORT" into the address text and the port. */
static int split_listen(const char *v, char *addr, size_t addrsz, long long *port)
{
    const char *colon;
    size_t alen;
    if (v[0] == '[') {
        const char *close = strchr(v, ']');
        if (!close || close[1] != ':')
            return LB_E_INVAL;
        alen = (size_t)(close - v - 1);
        if (alen >= addrsz)
            return LB_E_INVAL;
        memcpy(addr, v + 1, alen);
        colon = close + 1;
    } else {
        colon = strrchr(v, ':');
        if (!colon)
            return LB_E_INVAL;
        alen = (size_t)(colon - v);
        if (alen >= addrsz || memchr(v, ':', alen))
            return LB_E_INVAL;
        memcpy(addr, v, alen);
    }
    addr[alen] = '\0';
    return lb_parse_ll(colon + 1, 1, 65535, port);
}

int lb_cfgi_listen_check(const char *v, char *why, size_t whysz)
{
    char addr[64];
    long long port;
    unsigned char buf[sizeof(struct in6_addr)];
    int v6 = v[0] == '[';
    if (split_listen(v, addr, sizeof addr, &port) != LB_OK ||
        inet_pton(v6 ? AF_INET6 : AF_INET, addr, buf) != 1) {
        snprintf(why, whysz,
                 "must be ADDRESS:PORT with an IPv4 address or an IPv6 one in brackets, like 127.0.0.1:8080, "
                 "0.0.0.0:8080 or [::]:8080");
        return LB_E_INVAL;
    }
    return LB_OK;
}

int lb_cfg_addr_is_loopback(const char *addr)
{
    char a[64];
    long long port;
    /* "ADDR:PORT" or "[ADDR]:PORT" (a listen value), else an address alone */
    if (split_listen(addr, a, sizeof a, &port) != LB_OK)
        snprintf(a, sizeof a, "%s", addr);
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, a, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, a, &v6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
    return 0;
}

int lb_cfgi_check_access(const lb_config *c)
{
    if (!c->n_users && !lb_cfg_addr_is_loopback(c->listen))
        return lb_cfgi_fail(LB_E_INVAL,
                            "listen = %s: without users llmbox has no login, so it serves the loopback address "
                            "only; add a user first (`llmbox user add NAME` prints a token and the [user] "
                            "lines for llmbox.conf), or listen on 127.0.0.1",
                            c->listen);
    return LB_OK;
}

/* ---- lookups ------------------------------------------------------------- */

const lb_user_cfg *lb_cfg_user(const lb_config *cfg, const char *name)
{
    if (!name || !*name)
        return NULL;
    for (int i = 0; i < cfg->n_users; i++)
        if (!strcmp(cfg->users[i].name, name))
            return &cfg->users[i];
    return NULL;
}

/* ---- allowed_hosts and Host values --------------------------------------- */

#define LB_HOST_NAME_MAX 253 /* a DNS name; an IPv6 literal is shorter */

int lb_cfg_host_split(const char *v, size_t n, char *host, size_t hostsz, int *port)
{
    const char *end = v + n, *hend, *p;
    *port = 0;
    if (!n || hostsz < 2)
        return 0;
    if (v[0] == '[') {
        const char *close = memchr(v, ']', n);
        if (!close || close == v + 1)
            return 0;
        for (p = v + 1; p < close; p++)
            if (!strchr("0123456789abcdefABCDEF:.", *p))
                return 0;
        hend = close + 1;
        v++;
        n = (size_t)(close - v);
    } else {
        const char *colon = memchr(v, ':', n);
        hend = colon ? colon : end;
        for (p = v; p < hend; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                  *p == '.' || *p == '-' || *p == '_'))
                return 0;
        n = (size_t)(hend - v);
    }
    if (!n || n > LB_HOST_NAME_MAX || n >= hostsz)
        return 0;
    for (size_t i = 0; i < n; i++)
        host[i] = (char)((v[i] >= 'A' && v[i] <= 'Z') ? v[i] - 'A' + 'a' : v[i]);
    host[n] = '\0';
    if (hend == end)
        return 1;
    if (*hend != ':' || hend + 1 == end || end - hend > 6)
        return 0;
    long x = 0;
    for (p = hend + 1; p < end; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        x = x * 10 + (*p - '0');
    }
    if (x < 1 || x > 65535)
        return 0;
    *port = (int)x;
    return 1;
}

int lb_cfgi_allowed_hosts_norm(const char *v, char *out, size_t outsz, char *why, size_t whysz)
{
    size_t o = 0;
    int count = 0;
    out[0] = '\0';
    for (const char *p = v; *p;) {
        p += strspn(p, ", \t");
        size_t n = strcspn(p, ", \t");
        if (!n)
            break;
        char host[LB_HOST_NAME_MAX + 1];
        int port;
        if (!lb_cfg_host_split(p, n, host, sizeof host, &port)) {
            snprintf(why, whysz,
                     "has \"%.*s\", which is not a host name or address with an optional :port (like "
                     "llmbox.example.org, llmbox.example.org:8443 or [2001:db8::1]:8080)",
                     (int)(n > 80 ? 80 : n), p);
            return LB_E_INVAL;
        }
        if (++count > LB_CFG_MAX_ALLOWED_HOSTS) {
            snprintf(why, whysz, "lists more than %d names", LB_CFG_MAX_ALLOWED_HOSTS);
            return LB_E_TOOBIG;
        }
        char entry[LB_HOST_NAME_MAX + 16];
        int len = port ? snprintf(entry, sizeof entry, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port)
                       : snprintf(entry, sizeof entry, strchr(host, ':') ? "[%s]" : "%s", host);
        if (o + (o ? 1 : 0) + (size_t)len >= outsz) {
            snprintf(why, whysz, "is longer than %zu characters", outsz - 1);
            return LB_E_TOOBIG;
        }
        if (o)
            out[o++] = ',';
        memcpy(out + o, entry, (size_t)len + 1);
        o += (size_t)len;
        p += n;
    }
    return LB_OK;
}

int lb_cfg_host_allowed(const lb_config *cfg, const char *host, int port)
{
    for (const char *p = cfg->allowed_hosts; *p;) {
        size_t n = strcspn(p, ",");
        char h[LB_HOST_NAME_MAX + 1];
        int eport;
        /* entries were checked and normalized at load */
        if (lb_cfg_host_split(p, n, h, sizeof h, &eport) && !strcmp(h, host) && (!eport || eport == port))
            return 1;
        p += n;
        p += *p == ',';
    }
    return 0;
}

/* ---- e2b_domain (E2B's protocol) ------------------------------------------------ */

int lb_cfgi_e2b_domain_norm(const char *v, char *out, size_t outsz, char *why, size_t whysz)
{
    size_t n = strlen(v), label = 0;
    if (n >= outsz) {
        snprintf(why, whysz, "is longer than %zu characters", outsz - 1);
        return LB_E_TOOBIG;
    }
    for (size_t i = 0; i <= n; i++) {
        char c = (char)tolower((unsigned char)v[i]);
        if (c == '.' || c == '\0') {
            if (n && (!label || label > 63 || v[i - 1] == '-' || v[i - label] == '-')) {
                snprintf(why, whysz, "is not a DNS name (labels of 1-63 letters, digits and inner hyphens, "
                         "between dots), e.g. e2b.example.org");
                return LB_E_INVAL;
            }
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') {
            label++;
        } else {
            snprintf(why, whysz, "is not a DNS name (only letters, digits, hyphens and dots), e.g. e2b.example.org");
            return LB_E_INVAL;
        }
        out[i] = c;
    }
    return LB_OK;
}

int lb_cfg_e2b_host(const lb_config *cfg, const char *host)
{
    /* several nodes: the id may be "<node>.<32 hex>", one label more */
    char id[LB_NODE_ID_MAX + 1];
    int port;
    return cfg->e2b_domain[0] && lb_node_id_host(host, strlen(host), cfg->e2b_domain, id, sizeof id, &port);
}
