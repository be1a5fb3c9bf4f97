/* `llmbox netgw`: one sandbox's network gateway, the only way out of a
 * sandbox whose network is a policy of rules (docs/NETWORK.md). sandboxd
 * starts it as an unprivileged user, in the host's network namespace, with
 * two sockets it made in the sandbox's gateway namespace: fd 3, TCP,
 * where nftables redirects every TCP connection the sandbox opens, and fd
 * 4, UDP, where every DNS question goes. It
 *   - answers DNS itself: an allowed name resolves (through the host's
 *     resolver) to its public addresses, anything else is NXDOMAIN;
 *   - takes a connection's original destination (SO_ORIGINAL_DST), finds
 *     the name the sandbox meant (HTTP Host or TLS SNI on ports 80 and
 *     443, else the name it resolved to that address), checks the policy
 *     after resolving, and relays or resets at once;
 *   - writes a line per attempt to DIR/record.jsonl.
 * DIR/policy holds the policy as text; SIGHUP reads it again (a change at
 * run time). Nothing here runs as root, and the root daemon parses none of
 * DNS, TLS or HTTP. */
#include "entry.h"

#include "common/netpolicy.h"
#include "common/status.h"
#include "common/util.h"
#include "netgw/netgw_dns.h"
#include "netgw/netgw_peek.h"
#include "netgw/netgw_rate.h"
#include "netgw/netgw_tls.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/netfilter_ipv4.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define GW_TCP_FD 3
#define GW_DNS_FD 4
#define GW_NAMES 512             /* name -> address pairs remembered from DNS answers */
#define GW_SELF_MAX 64           /* the host's own addresses */
#define GW_PEEK_WAIT_MS 5000     /* for a Host or SNI on 80/443 */
#define GW_CONNECT_WAIT_MS 10000 /* upstream connect */
#define GW_DNS_TTL 30
#define GW_DNS_THREADS 16        /* questions resolved at once; more are SERVFAIL */
#define GW_RECORD_MAX (64 << 20) /* bytes of record; past it attempts are counted, not written */
#define GW_SECRETS_FILE_MAX (256 << 10)
/* why a connection was refused or cut once the allowance is spent */
#define GW_SPENT "the sandbox's byte allowance (max_bytes) is spent"

/* A secret handed over by sandboxd (DIR/secrets, read once and removed):
 * the header line it adds, for the names its hosts list. */
typedef struct gw_secret {
    char name[LB_NETPOL_SECRET_NAME];
    char hname[64];
    char *line;        /* "Name: value", never logged or recorded */
    lb_netpolicy *hosts;
} gw_secret;

typedef struct gw_name {
    char name[254];
    unsigned char a[4];
} gw_name;

static struct {
    pthread_mutex_t mu;
    lb_netpolicy *pol;
    char dir[512];
    int recfd;
    off_t recbytes;
    long unrecorded;
    struct sockaddr_storage self[GW_SELF_MAX];
    int nself;
    gw_name names[GW_NAMES];
    int nnames, next;
    int active, max_conns, dns_active;
    uint64_t bw_max, max_bytes; /* the operator's caps: --bandwidth-max, --max-bytes */
    gw_secret secrets[LB_NETPOL_SECRETS_MAX];
    int nsecrets;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .recfd = -1};

static void gw_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void gw_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "netgw: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* DIR/policy into a new policy, swapped in under the lock. */
static int load_policy(void)
{
    char path[600], err[300];
    snprintf(path, sizeof path, "%s/policy", g.dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        gw_log("cannot open %s: %s", path, strerror(errno));
        return LB_E_IO;
    }
    char *text = malloc(LB_NETPOL_TEXT_MAX + 2);
    lb_netpolicy *p = malloc(sizeof *p);
    ssize_t n = text ? read(fd, text, LB_NETPOL_TEXT_MAX + 1) : -1;
    close(fd);
    int rc = LB_E_INVAL;
    if (!text || !p || n < 0 || n > LB_NETPOL_TEXT_MAX) {
        gw_log("cannot read %s (at most %d bytes)", path, LB_NETPOL_TEXT_MAX);
        goto out;
    }
    text[n] = '\0';
    while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
        text[--n] = '\0';
    if ((rc = lb_netpolicy_parse(text, p, err, sizeof err)) != LB_OK) {
        gw_log("%s: %s; the policy before stays", path, err);
        goto out;
    }
    pthread_mutex_lock(&g.mu);
    lb_netpolicy *old = g.pol;
    g.pol = p;
    pthread_mutex_unlock(&g.mu);
    /* the policy's bandwidth, within the operator's */
    uint64_t bw = (uint64_t)p->bandwidth;
    if (g.bw_max && (!bw || bw > g.bw_max))
        bw = g.bw_max;
    lb_rate_set(bw);
    /* the policy's byte allowance, within the operator's */
    uint64_t mb = (uint64_t)p->max_bytes;
    if (g.max_bytes && (!mb || mb > g.max_bytes))
        mb = g.max_bytes;
    lb_rate_allowance_set(mb);
    p = old;
    rc = LB_OK;
    /* "applied", newer than the policy: what the web waits for after it
     * replaced the policy (common/netrecord.c) */
    snprintf(path, sizeof path, "%s/applied", g.dir);
    if (lb_write_file_atomic(path, "1\n", 2, 0600) != LB_OK)
        gw_log("cannot write %s: a policy change is not confirmed", path);
out:
    free(text);
    free(p);
    return rc;
}

/* One line of the record: an attempt and its outcome. */
static void record(const char *kind, const char *name, const struct sockaddr_in *a, int port, int allowed,
                   const char *rule, uint64_t out, uint64_t in)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    char addr[INET_ADDRSTRLEN] = "";
    if (a)
        inet_ntop(AF_INET, &a->sin_addr, addr, sizeof addr);
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return;
    cJSON_AddNumberToObject(o, "time_ms", (double)tv.tv_sec * 1000 + tv.tv_usec / 1000);
    cJSON_AddStringToObject(o, "kind", kind);
    if (name && *name)
        cJSON_AddStringToObject(o, "name", name);
    else
        cJSON_AddNullToObject(o, "name");
    if (a)
        cJSON_AddStringToObject(o, "addr", addr);
    if (port)
        cJSON_AddNumberToObject(o, "port", port);
    cJSON_AddBoolToObject(o, "allowed", allowed);
    cJSON_AddStringToObject(o, "rule", rule ? rule : "");
    if (!strcmp(kind, "tcp")) {
        cJSON_AddNumberToObject(o, "bytes_out", (double)out);
        cJSON_AddNumberToObject(o, "bytes_in", (double)in);
    }
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!line)
        return;
    size_t len = strlen(line);
    line[len] = '\n'; /* over the NUL: written as one append, read by length */
    pthread_mutex_lock(&g.mu);
    if (g.recbytes + (off_t)len + 1 <= GW_RECORD_MAX && write(g.recfd, line, len + 1) == (ssize_t)len + 1)
        g.recbytes += (off_t)len + 1;
    else
        g.unrecorded++;
    pthread_mutex_unlock(&g.mu);
    free(line);
}

/* The host's own addresses: never a destination, whatever a rule says. */
static void load_self(void)
{
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa) != 0)
        return;
    for (struct ifaddrs *i = ifa; i && g.nself < GW_SELF_MAX; i = i->ifa_next) {
        if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
            continue;
        size_t sl = i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        memcpy(&g.self[g.nself++], i->ifa_addr, sl);
    }
    freeifaddrs(ifa);
}

static void names_add(const char *name, const unsigned char *a)
{
    for (int i = 0; i < g.nnames; i++)
        if (!memcmp(g.names[i].a, a, 4) && !strcmp(g.names[i].name, name))
            return;
    gw_name *n = &g.names[g.next];
    snprintf(n->name, sizeof n->name, "%s", name);
    memcpy(n->a, a, 4);
    g.next = (g.next + 1) % GW_NAMES;
    if (g.nnames < GW_NAMES)
        g.nnames++;
}

/* Whether the gateway answered name with address a (under the lock). */
static int names_has(const char *name, const unsigned char *a)
{
    for (int i = 0; i < g.nnames; i++)
        if (!memcmp(g.names[i].a, a, 4) && !strcmp(g.names[i].name, name))
            return 1;
    return 0;
}

/* The name last answered with address a into out (under the lock). */
static int names_for(const unsigned char *a, char *out, size_t outsz)
{
    for (int k = 1; k <= g.nnames; k++) {
        int i = (g.next - k + GW_NAMES) % GW_NAMES;
        if (!memcmp(g.names[i].a, a, 4)) {
            snprintf(out, outsz, "%s", g.names[i].name);
            return 1;
        }
    }
    return 0;
}

/* Whether address a of an allowed name may be given out: a connection to
 * it on some port the rules naming the name allow (under the lock). */
static int dns_addr_ok(const char *name, const unsigned char *a, char *why, size_t whysz)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    memcpy(&sin.sin_addr, a, 4);
    int ports[LB_NETPOL_RULES_MAX + 1], np = 0;
    for (int i = 0; i < g.pol->nallow && np < LB_NETPOL_RULES_MAX; i++)
        ports[np++] = g.pol->allow[i].port ? g.pol->allow[i].port : 443;
    if (!np)
        ports[np++] = 443;
    for (int i = 0; i < np; i++)
        if (lb_netpolicy_dest_ok(g.pol, name, (struct sockaddr *)&sin, sizeof sin, ports[i], g.self, g.nself, why,
                                 whysz))
            return 1;
    return 0;
}

typedef struct dns_job {
    unsigned char q[LB_DNS_MSG_MAX];
    size_t len;
    struct sockaddr_storage from;
    socklen_t fromlen;
} dns_job;

static void *dns_thread(void *arg)
{
    dns_job *j = arg;
    lb_dns_q q;
    unsigned char out[LB_DNS_MSG_MAX];
    unsigned char v4[LB_DNS_ANSWERS_MAX][4];
    int n = 0, rcode = LB_DNS_NOERROR;
    char why[300] = "";
    if (lb_dns_parse(j->q, j->len, &q) != LB_OK) {
        rcode = LB_DNS_FORMERR;
        goto answer;
    }
    pthread_mutex_lock(&g.mu);
    int ok = lb_netpolicy_name_ok(g.pol, q.name, why, sizeof why);
    pthread_mutex_unlock(&g.mu);
    if (!ok) {
        rcode = LB_DNS_NXDOMAIN;
        record("dns", q.name, NULL, 0, 0, why, 0, 0);
        goto answer;
    }
    if (q.qtype != LB_DNS_A)
        goto answer; /* the name exists, with IPv4 addresses only (the sandbox has no IPv6 route): the A
                      * question beside it is the one recorded */
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int e = getaddrinfo(q.name, NULL, &hints, &res);
    if (e == EAI_NONAME || e == EAI_NODATA) {
        rcode = LB_DNS_NXDOMAIN;
        record("dns", q.name, NULL, 0, 0, "no such name upstream", 0, 0);
        goto answer;
    }
    if (e) {
        rcode = LB_DNS_SERVFAIL;
        record("dns", q.name, NULL, 0, 0, "the upstream resolver failed", 0, 0);
        goto answer;
    }
    int refused = 0;
    pthread_mutex_lock(&g.mu);
    for (struct addrinfo *r = res; r && n < LB_DNS_ANSWERS_MAX; r = r->ai_next) {
        const unsigned char *a = (const unsigned char *)&((struct sockaddr_in *)(void *)r->ai_addr)->sin_addr;
        int dup = 0;
        for (int k = 0; k < n; k++)
            dup |= !memcmp(v4[k], a, 4);
        if (dup)
            continue;
        if (!dns_addr_ok(q.name, a, why, sizeof why)) {
            refused++;
            continue;
        }
        memcpy(v4[n++], a, 4);
        names_add(q.name, a);
    }
    pthread_mutex_unlock(&g.mu);
    freeaddrinfo(res);
    if (!n) {
        /* every address is one the sandbox may not reach (a name bound to
         * 127.0.0.1: DNS rebinding): the name does not exist for it */
        rcode = LB_DNS_NXDOMAIN;
        record("dns", q.name, NULL, 0, 0, refused ? why : "no address", 0, 0);
    } else {
        for (int k = 0; k < n; k++) {
            struct sockaddr_in sin = {.sin_family = AF_INET};
            memcpy(&sin.sin_addr, v4[k], 4);
            record("dns", q.name, &sin, 0, 1, "resolved", 0, 0);
        }
    }
answer:;
    size_t olen = q.qlen ? lb_dns_answer(j->q, &q, rcode, (const unsigned char(*)[4])v4, n, GW_DNS_TTL, out,
                                         sizeof out) : 0;
    if (!olen && j->len >= 12) { /* a header alone: FORMERR or SERVFAIL echoing the id */
        memset(out, 0, 12);
        out[0] = j->q[0];
        out[1] = j->q[1];
        out[2] = 0x80;
        out[3] = (unsigned char)(0x80 | (rcode == LB_DNS_NOERROR ? LB_DNS_SERVFAIL : rcode));
        olen = 12;
    }
    if (olen)
        (void)!sendto(GW_DNS_FD, out, olen, 0, (struct sockaddr *)&j->from, j->fromlen); /* lost: it asks again */
    pthread_mutex_lock(&g.mu);
    g.dns_active--;
    pthread_mutex_unlock(&g.mu);
    free(j);
    return NULL;
}

static void reset_close(int fd)
{
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l); /* a reset: the sandbox sees a refusal at once */
    close(fd);
}

/* Connects to dst within GW_CONNECT_WAIT_MS; the socket or -1. */
static int connect_upstream(const struct sockaddr_in *dst, char *why, size_t whysz)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, whysz, "upstream: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (const struct sockaddr *)dst, sizeof *dst) != 0 && errno != EINPROGRESS) {
        snprintf(why, whysz, "upstream: %s", strerror(errno));
        close(fd);
        return -1;
    }
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int err = 0;
    socklen_t el = sizeof err;
    if (poll(&p, 1, GW_CONNECT_WAIT_MS) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
        snprintf(why, whysz, "upstream: %s", err ? strerror(err) : "no answer in time");
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    (void)!fcntl(fd, F_SETFL, fl & ~O_NONBLOCK); /* blocking writes below; a failure only shows there */
    return fd;
}

/* Copies between the sandbox's c and the world's u until either ends or
 * the sandbox's byte allowance is spent; the bytes each way into out/in. */
static void relay(int c, int u, uint64_t *out, uint64_t *in, char *why, size_t whysz)
{
    char buf[65536];
    struct pollfd p[2] = {{.fd = c, .events = POLLIN}, {.fd = u, .events = POLLIN}};
    for (;;) {
        /* wakes each second: a connection idle while others spent the
         * allowance is cut too, not left open */
        int pr = poll(p, 2, 1000);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return;
        if (lb_rate_spent()) {
            snprintf(why, whysz, "%s", GW_SPENT);
            return;
        }
        for (int k = 0; k < 2; k++) {
            if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(p[k].fd, buf, sizeof buf);
            if (n <= 0)
                return;
            if (!lb_rate_count(k ? LB_RATE_IN : LB_RATE_OUT, (size_t)n)) {
                snprintf(why, whysz, "%s", GW_SPENT);
                return;
            }
            int to = k ? c : u;
            for (ssize_t off = 0; off < n;) {
                ssize_t w = write(to, buf + off, (size_t)(n - off));
                if (w <= 0)
                    return;
                off += w;
            }
            *(k ? in : out) += (uint64_t)n;
        }
    }
}

/* The header lines of the secrets the policy names whose hosts list name. */
static void secrets_for(const char *name, lb_tls_add *add)
{
    pthread_mutex_lock(&g.mu);
    for (int i = 0; i < g.nsecrets && add->n < LB_TLS_ADD_MAX; i++) {
        int named = 0, listed = 0;
        for (int k = 0; k < g.pol->nsecrets && !named; k++)
            named = !strcmp(g.pol->secrets[k], g.secrets[i].name);
        for (int k = 0; named && k < g.secrets[i].hosts->nallow && !listed; k++)
            listed = lb_netrule_host(&g.secrets[i].hosts->allow[k].r, name);
        if (listed) {
            add->line[add->n] = g.secrets[i].line;
            add->name[add->n++] = g.secrets[i].hname;
        }
    }
    pthread_mutex_unlock(&g.mu);
}

/* The secrets from sandboxd, on the pipe fd: {"secrets": [{"name",
 * "hosts", "header", "value"}]}, read to its end and closed, so the values
 * live only in this process. LB_OK, or LB_E_INVAL. */
static int load_secrets(int fd)
{
    char *text = malloc(GW_SECRETS_FILE_MAX + 1);
    ssize_t n = 0;
    while (text && n <= GW_SECRETS_FILE_MAX) {
        ssize_t r = read(fd, text + n, (size_t)(GW_SECRETS_FILE_MAX + 1 - n));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0)
                n = -1;
            break;
        }
        n += r;
    }
    close(fd);
    cJSON *j = text && n >= 0 && n <= GW_SECRETS_FILE_MAX ? (text[n] = '\0', cJSON_Parse(text)) : NULL;
    if (text) {
        memset(text, 0, GW_SECRETS_FILE_MAX + 1);
        free(text);
    }
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "secrets"), *it;
    int rc = cJSON_IsArray(arr) ? LB_OK : LB_E_INVAL;
    cJSON_ArrayForEach(it, arr) {
        const char *nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
        const char *hosts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "hosts"));
        const char *hdr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "header"));
        const char *val = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "value"));
        const char *at = hdr ? strstr(hdr, "{value}") : NULL;
        size_t hn = hdr ? strcspn(hdr, ":") : 0;
        if (g.nsecrets == LB_NETPOL_SECRETS_MAX || !nm || !lb_netpolicy_secret_name_ok(nm) || !hosts || !at ||
            !val || !hn || hn >= sizeof g.secrets[0].hname || hdr[hn] != ':' || strpbrk(val, "\r\n")) {
            rc = LB_E_INVAL;
            break;
        }
        gw_secret *s = &g.secrets[g.nsecrets];
        char err[300];
        s->hosts = malloc(sizeof *s->hosts);
        size_t ll = strlen(hdr) - 7 + strlen(val) + 1;
        s->line = malloc(ll);
        if (!s->hosts || !s->line || lb_netpolicy_list_parse(hosts, s->hosts, err, sizeof err) != LB_OK) {
            free(s->hosts);
            free(s->line);
            rc = LB_E_INVAL;
            break;
        }
        snprintf(s->line, ll, "%.*s%s%s", (int)(at - hdr), hdr, val, at + 7);
        snprintf(s->name, sizeof s->name, "%s", nm);
        snprintf(s->hname, sizeof s->hname, "%.*s", (int)hn, hdr);
        g.nsecrets++;
    }
    cJSON_Delete(j); /* the values were in it: cJSON frees, the copies above stay */
    if (rc != LB_OK)
        gw_log("the secrets from sandboxd (--secrets-fd) are not a list of secrets; the gateway stops");
    return rc;
}

static void *conn_thread(void *arg)
{
    int c = (int)(intptr_t)arg, u = -1, allowed = 0;
    struct sockaddr_in dst;
    socklen_t dl = sizeof dst;
    char name[254] = "", why[300] = "";
    uint64_t out = 0, in = 0;
    if (getsockopt(c, SOL_IP, SO_ORIGINAL_DST, &dst, &dl) != 0 || dst.sin_family != AF_INET) {
        snprintf(why, sizeof why, "no original destination");
        reset_close(c);
        record("tcp", NULL, NULL, 0, 0, why, 0, 0);
        goto done;
    }
    int port = ntohs(dst.sin_port);
    int peeked = 0;
    if (port == 80 || port == 443) {
        /* the name the client says: wait for enough of its first bytes */
        unsigned char buf[LB_PEEK_MAX];
        int64_t waited = 0;
        for (;;) {
            struct pollfd p = {.fd = c, .events = POLLIN};
            if (poll(&p, 1, 100) < 0 && errno != EINTR)
                break;
            ssize_t n = recv(c, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
            int r = n <= 0 ? (n == 0 ? -1 : 0) : port == 80 ? lb_peek_http_host(buf, (size_t)n, name, sizeof name)
                                                            : lb_peek_tls_sni(buf, (size_t)n, name, sizeof name);
            if (r > 0)
                peeked = 1;
            if (r != 0 || (size_t)n == sizeof buf || (waited += 100) >= GW_PEEK_WAIT_MS)
                break;
        }
        if (!peeked)
            name[0] = '\0';
    }
    if (lb_rate_spent()) {
        /* nothing more moves: refused before any upstream is opened */
        reset_close(c);
        record("tcp", name, &dst, port, 0, GW_SPENT, 0, 0);
        goto done;
    }
    /* a Host or SNI that is the destination's own address names nothing:
     * the connection is judged as one to that address with no name (only
     * a network rule or "*" opens it; curl http://1.1.1.1/ sends one) */
    struct in_addr lit;
    int literal = peeked && inet_pton(AF_INET, name, &lit) == 1 && lit.s_addr == dst.sin_addr.s_addr;
    if (literal)
        name[0] = '\0';
    pthread_mutex_lock(&g.mu);
    if (literal) {
        allowed = lb_netpolicy_dest_ok(g.pol, NULL, (struct sockaddr *)&dst, sizeof dst, port, g.self, g.nself, why,
                                       sizeof why);
    } else if (peeked && !names_has(name, (const unsigned char *)&dst.sin_addr)) {
        /* the Host or SNI must agree with where the connection goes: a name
         * the gateway resolved to this very address */
        unsigned char tmp[16];
        const char *what = port == 80 ? "HTTP Host" : "TLS server name";
        if (inet_pton(AF_INET, name, tmp) == 1)
            snprintf(why, sizeof why, "the %s is an address, not a name", what);
        else if (lb_netpolicy_name_ok(g.pol, name, why, sizeof why)) /* a refused name says its rule */
            snprintf(why, sizeof why, "the %s %s is not a name the gateway resolved to this address", what, name);
    } else {
        if (!peeked)
            names_for((const unsigned char *)&dst.sin_addr, name, sizeof name);
        allowed = lb_netpolicy_dest_ok(g.pol, name[0] ? name : NULL, (struct sockaddr *)&dst, sizeof dst, port,
                                       g.self, g.nself, why, sizeof why);
    }
    pthread_mutex_unlock(&g.mu);
    if (allowed && (u = connect_upstream(&dst, why, sizeof why)) < 0)
        allowed = 0;
    if (!allowed) {
        reset_close(c);
        record("tcp", name, &dst, port, 0, why, 0, 0);
        goto done;
    }
    char endwhy[300] = "";
    lb_tls_add add = {0};
    if (port == 443 && peeked)
        secrets_for(name, &add);
    if (add.n) {
        /* a secret goes to this name: TLS ends here and starts again */
        if (!lb_tls_serve(c, u, name, &add, &out, &in, endwhy, sizeof endwhy)) {
            close(u);
            reset_close(c);
            record("tcp", name, &dst, port, 0, endwhy, 0, 0);
            goto done;
        }
    } else {
        relay(c, u, &out, &in, endwhy, sizeof endwhy);
    }
    close(u);
    close(c);
    if (endwhy[0])
        snprintf(why + strlen(why), sizeof why - strlen(why), "; %s", endwhy);
    record("tcp", name, &dst, port, 1, why, out, in);
done:
    pthread_mutex_lock(&g.mu);
    g.active--;
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: llmbox netgw --dir DIR [--max-conns N] [--max-bytes N] [--bandwidth-max BYTES_PER_S]\n"
                    "                    [--upstream-ca FILE] [--secrets-fd FD]\n"
                    "  fd 3: the TCP socket nftables redirects to; fd 4: the DNS socket (sandboxd passes both)\n");
}

static int start_thread(void *(*fn)(void *), void *arg)
{
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256 << 10);
    int e = pthread_create(&t, &at, fn, arg);
    pthread_attr_destroy(&at);
    return e;
}

int lb_netgw_main(int argc, char **argv)
{
    g.max_conns = 64;
    const char *upstream_ca = NULL;
    int secfd = -1;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
            snprintf(g.dir, sizeof g.dir, "%s", argv[++i]);
        } else if (!strcmp(argv[i], "--max-conns") && i + 1 < argc) {
            g.max_conns = (int)strtol(argv[++i], &end, 10);
            if (*end || g.max_conns < 1 || g.max_conns > 4096) {
                gw_log("--max-conns must be a number from 1 to 4096");
                return 2;
            }
        } else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
            uint64_t mb = strtoull(argv[++i], &end, 10);
            if (*end) {
                gw_log("--max-bytes must be a number of bytes (0: no limit)");
                return 2;
            }
            g.max_bytes = mb;
            lb_rate_allowance_set(mb);
        } else if (!strcmp(argv[i], "--bandwidth-max") && i + 1 < argc) {
            g.bw_max = strtoull(argv[++i], &end, 10);
            if (*end) {
                gw_log("--bandwidth-max must be a number of bytes per second (0: no limit)");
                return 2;
            }
        } else if (!strcmp(argv[i], "--upstream-ca") && i + 1 < argc) {
            upstream_ca = argv[++i];
        } else if (!strcmp(argv[i], "--secrets-fd") && i + 1 < argc) {
            secfd = (int)strtol(argv[++i], &end, 10);
            if (*end || secfd < 5 || secfd > 1023) {
                gw_log("--secrets-fd must be a descriptor from 5 to 1023");
                return 2;
            }
        } else {
            usage();
            return 2;
        }
    }
    if (!g.dir[0]) {
        usage();
        return 2;
    }
    int type = 0;
    socklen_t tl = sizeof type;
    if (getsockopt(GW_TCP_FD, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM ||
        getsockopt(GW_DNS_FD, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_DGRAM) {
        gw_log("fd 3 must be a listening TCP socket and fd 4 a UDP socket (sandboxd starts this)");
        return 2;
    }
    if (geteuid() == 0)
        gw_log("running as root: sandboxd should start the gateway as an unprivileged user");
    if (load_policy() != LB_OK)
        return 1;
    /* the values are in this process from here on: no core file, and no
     * ptrace or /proc/PID/mem for other processes of the same user */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (secfd >= 0 && load_secrets(secfd) != LB_OK)
        return 1;
    if (g.nsecrets) {
        char why[300];
        if (lb_tls_init(g.dir, upstream_ca, why, sizeof why) != LB_OK) {
            gw_log("%s", why);
            return 1;
        }
    }
    char rec[600];
    snprintf(rec, sizeof rec, "%s/record.jsonl", g.dir);
    g.recfd = open(rec, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (g.recfd < 0) {
        gw_log("cannot open %s: %s", rec, strerror(errno));
        return 1;
    }
    load_self();
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGHUP);
    sigaddset(&ss, SIGTERM);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &ss, NULL); /* before any thread: they inherit it */
    sigdelset(&ss, SIGPIPE);
    int sfd = signalfd(-1, &ss, SFD_CLOEXEC);
    if (sfd < 0) {
        gw_log("signalfd: %s", strerror(errno));
        return 1;
    }
    fcntl(GW_TCP_FD, F_SETFD, FD_CLOEXEC);
    fcntl(GW_DNS_FD, F_SETFD, FD_CLOEXEC);
    gw_log("serving %s (pid %d)", g.dir, (int)getpid());
    for (;;) {
        struct pollfd p[3] = {{.fd = GW_TCP_FD, .events = POLLIN}, {.fd = GW_DNS_FD, .events = POLLIN},
                              {.fd = sfd, .events = POLLIN}};
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            gw_log("poll: %s", strerror(errno));
            return 1;
        }
        if (p[2].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) == sizeof si) {
                if (si.ssi_signo == SIGHUP) {
                    if (load_policy() == LB_OK)
                        gw_log("policy read again");
                } else {
                    return 0;
                }
            }
        }
        if (p[0].revents & POLLIN) {
            int c = accept4(GW_TCP_FD, NULL, NULL, SOCK_CLOEXEC);
            if (c >= 0) {
                pthread_mutex_lock(&g.mu);
                int full = g.active >= g.max_conns;
                if (!full)
                    g.active++;
                pthread_mutex_unlock(&g.mu);
                if (full) {
                    reset_close(c);
                    record("tcp", NULL, NULL, 0, 0, "too many connections at once (--max-conns)", 0, 0);
                } else if (start_thread(conn_thread, (void *)(intptr_t)c) != 0) {
                    reset_close(c);
                    pthread_mutex_lock(&g.mu);
                    g.active--;
                    pthread_mutex_unlock(&g.mu);
                }
            }
        }
        if (p[1].revents & POLLIN) {
            dns_job *j = malloc(sizeof *j);
            if (!j)
                continue;
            j->fromlen = sizeof j->from;
            ssize_t n = recvfrom(GW_DNS_FD, j->q, sizeof j->q, MSG_TRUNC, (struct sockaddr *)&j->from, &j->fromlen);
            pthread_mutex_lock(&g.mu);
            int full = g.dns_active >= GW_DNS_THREADS;
            if (!full && n >= 12 && (size_t)n <= sizeof j->q)
                g.dns_active++;
            else
                full = 1;
            pthread_mutex_unlock(&g.mu);
            if (full) {
                free(j); /* too long, too short or too many at once: the resolver asks again */
                continue;
            }
            j->len = (size_t)n;
            if (start_thread(dns_thread, j) != 0) {
                pthread_mutex_lock(&g.mu);
                g.dns_active--;
                pthread_mutex_unlock(&g.mu);
                free(j);
            }
        }
    }
}
