/* Allowed network targets of caller-chosen URLs; the contract is
 * netcheck.h. The special ranges are those of the IANA special-purpose
 * address registries (RFC 6890 and its updates): none of them is an
 * inference endpoint on the public internet. */
#include "common/netcheck.h"

#include "common/status.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/* One IPv4 range: a, as four bytes, and its prefix length. */
typedef struct v4range {
    unsigned char a[4];
    int prefix;
} v4range;

static const v4range v4_special[] = {
    {{0, 0, 0, 0}, 8},       /* "this network" */
    {{10, 0, 0, 0}, 8},      /* private */
    {{100, 64, 0, 0}, 10},   /* shared address space (carrier-grade NAT) */
    {{127, 0, 0, 0}, 8},     /* loopback */
    {{169, 254, 0, 0}, 16},  /* link-local (cloud metadata services live here) */
    {{172, 16, 0, 0}, 12},   /* private */
    {{192, 0, 0, 0}, 24},    /* IETF protocol assignments */
    {{192, 0, 2, 0}, 24},    /* documentation */
    {{192, 88, 99, 0}, 24},  /* 6to4 relay anycast */
    {{192, 168, 0, 0}, 16},  /* private */
    {{198, 18, 0, 0}, 15},   /* benchmarking */
    {{198, 51, 100, 0}, 24}, /* documentation */
    {{203, 0, 113, 0}, 24},  /* documentation */
    {{224, 0, 0, 0}, 4},     /* multicast */
    {{240, 0, 0, 0}, 4},     /* reserved, and the broadcast address */
};

/* Whether the first prefix bits of x and net agree. */
static int bits_match(const unsigned char *x, const unsigned char *net, int prefix)
{
    int whole = prefix / 8, rest = prefix % 8;
    if (memcmp(x, net, (size_t)whole))
        return 0;
    if (!rest)
        return 1;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (x[whole] & mask) == (net[whole] & mask);
}

static int v4_is_public(const unsigned char *a)
{
    for (size_t i = 0; i < sizeof v4_special / sizeof v4_special[0]; i++)
        if (bits_match(a, v4_special[i].a, v4_special[i].prefix))
            return 0;
    return 1;
}

/* The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4) into v4:
 * 1 when it carries one. */
static int v6_carried_v4(const unsigned char *a, unsigned char *v4)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (!memcmp(a, mapped, 12) || !memcmp(a, nat64, 12)) {
        memcpy(v4, a + 12, 4);
        return 1;
    }
    if (a[0] == 0x20 && a[1] == 0x02) { /* 2002:AABB:CCDD::/48 */
        memcpy(v4, a + 2, 4);
        return 1;
    }
    return 0;
}

static int v6_is_public(const unsigned char *a)
{
    unsigned char v4[4];
    if (v6_carried_v4(a, v4))
        return v4_is_public(v4);
    static const struct {
        unsigned char a[16];
        int prefix;
    } special[] = {
        {{0}, 96},                                   /* unspecified, loopback, IPv4-compatible (deprecated) */
        {{0, 0x64, 0xff, 0x9b, 0, 1}, 48},           /* local-use NAT64 */
        {{0x01, 0x00}, 64},                          /* discard-only */
        {{0x20, 0x01, 0x00, 0x00}, 23},              /* IETF protocol assignments, Teredo among them */
        {{0x20, 0x01, 0x0d, 0xb8}, 32},              /* documentation */
        {{0xfc}, 7},                                 /* unique local (private) */
        {{0xfe, 0x80}, 10},                          /* link-local */
        {{0xfe, 0xc0}, 10},                          /* site-local (deprecated) */
        {{0xff}, 8},                                 /* multicast */
    };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        if (bits_match(a, special[i].a, special[i].prefix))
            return 0;
    return 1;
}

/* The family and bytes of sa into *fam and out (16 bytes); an IPv4-mapped
 * IPv6 address comes out as IPv4. 0 when sa is neither family. */
static int addr_bytes(const struct sockaddr *sa, size_t len, int *fam, unsigned char *out)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!sa)
        return 0;
    if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        *fam = AF_INET;
        return 1;
    }
    if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        const unsigned char *b = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
        if (!memcmp(b, mapped, 12)) {
            memcpy(out, b + 12, 4);
            *fam = AF_INET;
        } else {
            memcpy(out, b, 16);
            *fam = AF_INET6;
        }
        return 1;
    }
    return 0;
}

int lb_netaddr_is_public(const struct sockaddr *sa, size_t len)
{
    int fam = 0;
    unsigned char b[16];
    if (!addr_bytes(sa, len, &fam, b))
        return 0;
    return fam == AF_INET ? v4_is_public(b) : v6_is_public(b);
}

int lb_netallow_addr(const lb_netallow *a, const struct sockaddr *sa, size_t len)
{
    int fam = 0;
    unsigned char b[16];
    if (!a || !addr_bytes(sa, len, &fam, b))
        return 0;
    for (int i = 0; i < a->n; i++) {
        const lb_netrule *r = &a->r[i];
        if (r->kind == LB_NETRULE_PUBLIC && (fam == AF_INET ? v4_is_public(b) : v6_is_public(b)))
            return 1;
        if (r->kind == LB_NETRULE_NET && r->family == fam && bits_match(b, r->addr, r->prefix))
            return 1;
    }
    return 0;
}

/* host lowercased into out without one trailing dot; 0 when it does not
 * fit or is empty. */
static int host_norm(const char *host, char *out, size_t outsz)
{
    size_t n = strlen(host);
    if (n && host[n - 1] == '.')
        n--;
    if (!n || n >= outsz)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = host[i];
        out[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
    }
    out[n] = '\0';
    return 1;
}

int lb_netallow_host(const lb_netallow *a, const char *host)
{
    char h[LB_NETHOST_MAX + 2];
    unsigned char tmp[16];
    if (!a || !host || !host_norm(host, h, sizeof h))
        return 0;
    /* "[::1]" as curl hands it, or a bare address: never a name */
    if (h[0] == '[' || inet_pton(AF_INET, h, tmp) == 1 || inet_pton(AF_INET6, h, tmp) == 1)
        return 0;
    size_t hl = strlen(h);
    for (int i = 0; i < a->n; i++) {
        const lb_netrule *r = &a->r[i];
        size_t rl = strlen(r->host);
        if (r->kind == LB_NETRULE_HOST && !strcmp(h, r->host))
            return 1;
        if (r->kind == LB_NETRULE_SUFFIX && hl > rl + 1 && h[hl - rl - 1] == '.' && !strcmp(h + hl - rl, r->host))
            return 1;
    }
    return 0;
}

int lb_netrule_addr(const lb_netrule *r, const struct sockaddr *sa, size_t len)
{
    int fam = 0;
    unsigned char b[16];
    if (!r || !addr_bytes(sa, len, &fam, b))
        return 0;
    if (r->kind == LB_NETRULE_PUBLIC)
        return fam == AF_INET ? v4_is_public(b) : v6_is_public(b);
    return r->kind == LB_NETRULE_NET && r->family == fam && bits_match(b, r->addr, r->prefix);
}

int lb_netrule_host(const lb_netrule *r, const char *host)
{
    char h[LB_NETHOST_MAX + 2];
    unsigned char tmp[16];
    if (!r || !host || !host_norm(host, h, sizeof h))
        return 0;
    if (h[0] == '[' || inet_pton(AF_INET, h, tmp) == 1 || inet_pton(AF_INET6, h, tmp) == 1)
        return 0;
    size_t hl = strlen(h), rl = strlen(r->host);
    if (r->kind == LB_NETRULE_HOST)
        return !strcmp(h, r->host);
    return r->kind == LB_NETRULE_SUFFIX && hl > rl + 1 && h[hl - rl - 1] == '.' && !strcmp(h + hl - rl, r->host);
}

/* Whether w is a host name: labels of letters, digits and '-' (not at a
 * label's ends), 1 to 63 bytes each, separated by single dots, the last
 * not all digits (no top-level domain is; "1.2.3" or "2130706433" is an
 * address in a spelling libcurl may take, never a name to trust). */
static int name_valid(const char *w)
{
    const char *tld = strrchr(w, '.') ? strrchr(w, '.') + 1 : w;
    if (*tld && strspn(tld, "0123456789") == strlen(tld))
        return 0;
    size_t label = 0;
    char prev = '.';
    for (const char *p = w; *p; p++) {
        char c = *p;
        if (c == '.') {
            if (prev == '.' || prev == '-')
                return 0;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && prev != '.')) {
            if (++label > 63)
                return 0;
        } else {
            return 0;
        }
        prev = c;
    }
    return prev != '.' && prev != '-';
}

/* One word of the list into r. LB_OK or LB_E_INVAL with err set. */
static int parse_word(const char *w, lb_netrule *r, char *err, size_t errsz)
{
    memset(r, 0, sizeof *r);
    if (!strcmp(w, "public")) {
        r->kind = LB_NETRULE_PUBLIC;
        return LB_OK;
    }
    char addr[LB_NETHOST_MAX + 3];
    snprintf(addr, sizeof addr, "%s", w);
    char *slash = strchr(addr, '/');
    long long prefix = -1;
    if (slash) {
        *slash = '\0';
        if (lb_parse_ll(slash + 1, 0, 128, &prefix) != LB_OK) {
            snprintf(err, errsz, "\"%.80s\": the prefix length after '/' must be a whole number (0-32 for IPv4, "
                                 "0-128 for IPv6)", w);
            return LB_E_INVAL;
        }
    }
    if (inet_pton(AF_INET, addr, r->addr) == 1 || inet_pton(AF_INET6, addr, r->addr) == 1) {
        r->family = strchr(addr, ':') ? AF_INET6 : AF_INET;
        int max = r->family == AF_INET ? 32 : 128;
        if (prefix > max) {
            snprintf(err, errsz, "\"%.80s\": an IPv%d prefix is at most %d bits", w, max == 32 ? 4 : 6, max);
            return LB_E_INVAL;
        }
        r->kind = LB_NETRULE_NET;
        r->prefix = prefix < 0 ? max : (int)prefix;
        /* the network itself: host bits cleared, so matching is a compare */
        for (int bit = r->prefix; bit < max; bit++)
            r->addr[bit / 8] &= (unsigned char)~(0x80 >> (bit % 8));
        return LB_OK;
    }
    if (slash) {
        snprintf(err, errsz, "\"%.80s\" is not an address/prefix (a network such as 10.0.0.0/8 or fd00::/8)", w);
        return LB_E_INVAL;
    }
    const char *name = w;
    r->kind = LB_NETRULE_HOST;
    if (!strncmp(w, "*.", 2)) {
        name = w + 2;
        r->kind = LB_NETRULE_SUFFIX;
    }
    if (!host_norm(name, r->host, sizeof r->host) || !name_valid(r->host)) {
        snprintf(err, errsz, "\"%.80s\" is not \"public\", a network (10.0.0.0/8), an address or a host name "
                             "(llm.internal, *.llm.internal)", w);
        return LB_E_INVAL;
    }
    return LB_OK;
}

int lb_netallow_parse(const char *spec, lb_netallow *a, char *err, size_t errsz)
{
    a->n = 0;
    if (!spec)
        return LB_OK;
    if (strlen(spec) > LB_NETALLOW_TEXT_MAX) {
        snprintf(err, errsz, "the list of allowed targets is longer than %d bytes", LB_NETALLOW_TEXT_MAX);
        return LB_E_TOOBIG;
    }
    for (const char *p = spec; *p;) {
        p += strspn(p, ", \t\r\n");
        size_t w = strcspn(p, ", \t\r\n");
        if (!w)
            break;
        if (w > LB_NETHOST_MAX + 2) {
            snprintf(err, errsz, "\"%.40s...\" is longer than a host name may be (%d bytes)", p, LB_NETHOST_MAX);
            return LB_E_INVAL;
        }
        if (a->n == LB_NETALLOW_MAX) {
            snprintf(err, errsz, "the list of allowed targets has more than %d entries", LB_NETALLOW_MAX);
            return LB_E_TOOBIG;
        }
        char word[LB_NETHOST_MAX + 3];
        snprintf(word, sizeof word, "%.*s", (int)w, p);
        int rc = parse_word(word, &a->r[a->n], err, errsz);
        if (rc != LB_OK)
            return rc;
        a->n++;
        p += w;
    }
    return LB_OK;
}
