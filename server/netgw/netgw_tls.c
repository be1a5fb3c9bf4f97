/* TLS termination for a secret; the contract is netgw_tls.h. The CA and
 * leaf keys are EC P-256 (cheap to make at every gateway start); the CA is
 * valid 30 days, a leaf one day and is made again when less than an hour
 * of it is left. The relay reads one request (netgw_http.h), sends it on
 * with the secret's header instead of any the sandbox sent under that
 * name and "Connection: close", then copies the answer back until the
 * upstream closes: one request a connection, so that no second request,
 * pipelined or kept alive, ever leaves without passing the checks. */
#include "netgw/netgw_tls.h"

#include "common/status.h"
#include "common/util.h"
#include "netgw/netgw_http.h"
#include "netgw/netgw_rate.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#define TLS_LEAVES 64          /* leaves cached, by server name */
#define TLS_LEAF_S (24 * 3600) /* a leaf's validity */
#define TLS_CA_S (30 * 86400)
#define TLS_IO_S 300           /* a connection idle this long either way ends */
#define TLS_RELAY_BUF 16384

typedef struct leaf {
    char name[254];
    X509 *cert;
    time_t until;
} leaf;

static struct {
    pthread_mutex_t mu;
    EVP_PKEY *ca_key, *leaf_key;
    X509 *ca;
    SSL_CTX *srv, *cli;
    leaf leaves[TLS_LEAVES];
    int next;
} t = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    int ok = ex && X509_add_ext(cert, ex, -1);
    X509_EXTENSION_free(ex);
    return ok;
}

/* A certificate for subject cn with key pub, signed by the CA (or itself
 * when issuer is NULL), valid secs; SAN DNS:cn for a leaf. */
static X509 *make_cert(const char *cn, EVP_PKEY *pub, X509 *issuer, EVP_PKEY *sign, long secs)
{
    X509 *c = X509_new();
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    ASN1_INTEGER *sn = NULL;
    int ok = c && RAND_bytes(serial, sizeof serial) == 1;
    if (ok) {
        serial[0] &= 0x7f; /* positive */
        ok = (bn = BN_bin2bn(serial, sizeof serial, NULL)) && (sn = BN_to_ASN1_INTEGER(bn, NULL)) &&
             X509_set_version(c, 2) && X509_set_serialNumber(c, sn) &&
             X509_gmtime_adj(X509_getm_notBefore(c), -3600) && X509_gmtime_adj(X509_getm_notAfter(c), secs) &&
             X509_set_pubkey(c, pub);
    }
    X509_NAME *nm = ok ? X509_get_subject_name(c) : NULL;
    ok = ok && X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) &&
         X509_NAME_add_entry_by_txt(nm, "O", MBSTRING_ASC, (const unsigned char *)"llmbox network gateway", -1, -1,
                                    0) &&
         X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : nm);
    if (ok && !issuer) {
        ok = add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
             add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign") &&
             add_ext(c, c, NID_subject_key_identifier, "hash");
    } else if (ok) {
        char san[270];
        snprintf(san, sizeof san, "DNS:%s", cn);
        ok = add_ext(c, issuer, NID_basic_constraints, "critical,CA:FALSE") &&
             add_ext(c, issuer, NID_key_usage, "critical,digitalSignature") &&
             add_ext(c, issuer, NID_ext_key_usage, "serverAuth") && add_ext(c, issuer, NID_subject_alt_name, san) &&
             add_ext(c, issuer, NID_subject_key_identifier, "hash") &&
             add_ext(c, issuer, NID_authority_key_identifier, "keyid:always");
    }
    ok = ok && X509_sign(c, sign, EVP_sha256()) > 0;
    ASN1_INTEGER_free(sn);
    BN_free(bn);
    if (!ok) {
        X509_free(c);
        return NULL;
    }
    return c;
}

int lb_tls_init(const char *dir, const char *upstream_ca, char *why, size_t whysz)
{
    t.ca_key = EVP_EC_gen("P-256");
    t.leaf_key = EVP_EC_gen("P-256");
    if (!t.ca_key || !t.leaf_key || !(t.ca = make_cert("llmbox sandbox CA", t.ca_key, NULL, t.ca_key, TLS_CA_S))) {
        snprintf(why, whysz, "cannot make the sandbox's CA (OpenSSL)");
        return LB_E_IO;
    }
    /* the certificate alone leaves: sandboxd copies it into the sandbox */
    BIO *b = BIO_new(BIO_s_mem());
    char *pem = NULL;
    long n = b && PEM_write_bio_X509(b, t.ca) ? BIO_get_mem_data(b, &pem) : 0;
    char path[600];
    snprintf(path, sizeof path, "%s/ca.crt", dir);
    int rc = n > 0 ? lb_write_file_atomic(path, pem, (size_t)n, 0644) : LB_E_IO;
    BIO_free(b);
    if (rc != LB_OK) {
        snprintf(why, whysz, "cannot write %s", path);
        return LB_E_IO;
    }
    t.srv = SSL_CTX_new(TLS_server_method());
    t.cli = SSL_CTX_new(TLS_client_method());
    if (!t.srv || !t.cli || !SSL_CTX_set_min_proto_version(t.srv, TLS1_2_VERSION) ||
        !SSL_CTX_set_min_proto_version(t.cli, TLS1_2_VERSION)) {
        snprintf(why, whysz, "cannot set up TLS (OpenSSL)");
        return LB_E_IO;
    }
    /* a read that meets only a handshake record (a TLS 1.3 session ticket)
     * returns instead of waiting for data: the relay polls both sides */
    SSL_CTX_clear_mode(t.cli, SSL_MODE_AUTO_RETRY);
    SSL_CTX_clear_mode(t.srv, SSL_MODE_AUTO_RETRY);
    SSL_CTX_set_verify(t.cli, SSL_VERIFY_PEER, NULL);
    if (upstream_ca && *upstream_ca ? SSL_CTX_load_verify_locations(t.cli, upstream_ca, NULL) != 1
                                    : SSL_CTX_set_default_verify_paths(t.cli) != 1) {
        snprintf(why, whysz, "cannot load the upstream trust %s", upstream_ca && *upstream_ca ? upstream_ca
                                                                                              : "(the system's)");
        return LB_E_IO;
    }
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(t.cli, alpn, sizeof alpn - 1);
    SSL_CTX_set_session_cache_mode(t.srv, SSL_SESS_CACHE_OFF);
    return LB_OK;
}

/* The leaf for name, made or taken from the cache; a reference the caller
 * frees. */
static X509 *leaf_for(const char *name)
{
    time_t now = time(NULL);
    X509 *c = NULL;
    pthread_mutex_lock(&t.mu);
    for (int i = 0; i < TLS_LEAVES && !c; i++)
        if (t.leaves[i].cert && !strcmp(t.leaves[i].name, name) && t.leaves[i].until - 3600 > now &&
            X509_up_ref(t.leaves[i].cert))
            c = t.leaves[i].cert;
    if (!c && (c = make_cert(name, t.leaf_key, t.ca, t.ca_key, TLS_LEAF_S))) {
        leaf *l = &t.leaves[t.next];
        t.next = (t.next + 1) % TLS_LEAVES;
        X509_free(l->cert);
        snprintf(l->name, sizeof l->name, "%s", name);
        l->cert = c;
        l->until = now + TLS_LEAF_S;
        X509_up_ref(c);
    }
    pthread_mutex_unlock(&t.mu);
    return c;
}

static void io_timeouts(int fd)
{
    struct timeval tv = {.tv_sec = TLS_IO_S};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static int write_all(SSL *s, const char *p, size_t n)
{
    while (n) {
        int w = SSL_write(s, p, n > (1 << 30) ? 1 << 30 : (int)n);
        if (w <= 0)
            return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

/* An answer of the gateway's own to the sandbox, and the connection ends. */
static void answer(SSL *cs, int code, const char *reason, const char *why)
{
    char msg[512];
    int bl = snprintf(msg, sizeof msg, "llmbox network gateway: %s\n", why);
    char head[256];
    int hl = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                                         "Connection: close\r\n\r\n", code, reason, bl);
    if (!write_all(cs, head, (size_t)hl) || !write_all(cs, msg, (size_t)bl))
        return;
    /* what the sandbox is still sending is read and dropped for a moment:
     * closing on unread bytes would reset the connection, and the answer
     * with it */
    SSL_shutdown(cs);
    int fd = SSL_get_fd(cs);
    shutdown(fd, SHUT_WR);
    char sink[4096];
    size_t drained = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    time_t until = time(NULL) + 2;
    while (drained < (1 << 20) && time(NULL) < until && poll(&p, 1, 500) == 1) {
        ssize_t n = recv(fd, sink, sizeof sink, 0);
        if (n <= 0)
            break;
        drained += (size_t)n;
    }
}

/* The head sent upstream: the sandbox's, less hop-by-hop lines and any of
 * the names add replaces, with add's lines and Connection: close. */
static size_t rewrite(const char *h, const lb_http_req *r, const lb_tls_add *add, char *out, size_t outsz)
{
    size_t len = 0;
#define PUT(p, n)                                                                                                   \
    do {                                                                                                            \
        if (len + (n) > outsz)                                                                                      \
            return 0;                                                                                               \
        memcpy(out + len, (p), (n));                                                                                \
        len += (n);                                                                                                 \
    } while (0)
    PUT(h, r->line_len + 2);
    for (int i = 0; i < r->nh; i++) {
        int drop = lb_http_hdr_is(h, r, i, "connection") || lb_http_hdr_is(h, r, i, "keep-alive") ||
                   lb_http_hdr_is(h, r, i, "proxy-connection");
        for (int k = 0; k < add->n && !drop; k++)
            drop = lb_http_hdr_is(h, r, i, add->name[k]);
        if (!drop) {
            PUT(h + r->h[i].off, r->h[i].len);
            PUT("\r\n", 2);
        }
    }
    for (int k = 0; k < add->n; k++) {
        PUT(add->line[k], strlen(add->line[k]));
        PUT("\r\n", 2);
    }
    PUT("Connection: close\r\n\r\n", 21);
#undef PUT
    return len;
}

static void append(char *why, size_t whysz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *why, size_t whysz, const char *fmt, ...)
{
    size_t l = strlen(why);
    if (l + 3 < whysz) {
        if (l) { /* "; " between phrases */
            snprintf(why + l, whysz - l, "; ");
            l += 2;
        }
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why + l, whysz - l, fmt, ap);
        va_end(ap);
    }
}

enum { P_HEAD, P_BODY, P_DONE };

/* Whether a read that returned n met only a handshake record: poll again. */
static int retry(SSL *s, int n)
{
    int e = SSL_get_error(s, n);
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

/* n bytes of the request's body at p: the part that belongs to it goes
 * upstream; when it ends, *phase is P_DONE (and bytes after it, a second
 * request, are dropped and said). 0 when the connection must end. */
static int body(const char *p, size_t n, SSL *us, const lb_http_req *r, lb_http_chunked *ch, int64_t *left,
                int *phase, char *why, size_t whysz)
{
    size_t take;
    int done;
    if (r->chunked) {
        long k = lb_http_chunked_feed(ch, (const unsigned char *)p, n, &done);
        if (k < 0) {
            append(why, whysz, "%s", "a malformed chunked body: the connection was cut");
            return 0;
        }
        take = (size_t)k;
    } else {
        take = (int64_t)n < *left ? n : (size_t)*left;
        *left -= (int64_t)take;
        done = *left == 0;
    }
    if (take && (!lb_rate_count(LB_RATE_OUT, take) || !write_all(us, p, take))) {
        append(why, whysz, "%s", "the body could not be sent upstream");
        return 0;
    }
    if (done) {
        *phase = P_DONE;
        if (take < n)
            append(why, whysz, "%s", "a second request on one connection was not forwarded");
    }
    return 1;
}

/* The relay after both handshakes. */
static void relay(SSL *cs, SSL *us, int c, int u, const char *name, const lb_tls_add *add, uint64_t *out,
                  uint64_t *in, char *why, size_t whysz)
{
    char *hb = malloc(LB_HTTP_HEAD_MAX), *ob = malloc(LB_HTTP_HEAD_MAX + 64 * 1024), *buf = malloc(TLS_RELAY_BUF);
    lb_http_req *r = malloc(sizeof *r);
    size_t hl = 0;
    int phase = P_HEAD;
    int64_t left = 0;
    lb_http_chunked ch;
    memset(&ch, 0, sizeof ch);
    if (!hb || !ob || !buf || !r) {
        append(why, whysz, "%s", "out of memory");
        goto out;
    }
    for (;;) {
        struct pollfd p[2] = {{.fd = c, .events = phase == P_DONE ? 0 : POLLIN}, {.fd = u, .events = POLLIN}};
        int cready = phase != P_DONE && SSL_pending(cs) > 0, uready = SSL_pending(us) > 0;
        if (!cready && !uready) {
            if (poll(p, 2, TLS_IO_S * 1000) <= 0)
                break;
            cready = phase != P_DONE && (p[0].revents & (POLLIN | POLLHUP | POLLERR));
            uready = !!(p[1].revents & (POLLIN | POLLHUP | POLLERR));
        }
        if (uready) {
            int n = SSL_read(us, buf, TLS_RELAY_BUF);
            if (n <= 0 && retry(us, n))
                continue;
            if (n <= 0)
                break; /* the upstream closed: the answer is complete */
            if (!lb_rate_count(LB_RATE_IN, (size_t)n)) {
                append(why, whysz, "%s", "the sandbox's byte limit was reached");
                break;
            }
            if (!write_all(cs, buf, (size_t)n))
                break;
            *in += (uint64_t)n;
        }
        if (!cready)
            continue;
        size_t rest;
        if (phase == P_HEAD) {
            int n = SSL_read(cs, hb + hl, (int)(LB_HTTP_HEAD_MAX - hl));
            if (n <= 0 && retry(cs, n))
                continue;
            if (n <= 0)
                break;
            hl += (size_t)n;
            *out += (uint64_t)n;
            char e[160];
            int pr = lb_http_req_parse(hb, hl, r, e, sizeof e);
            if (pr == 0 && hl == LB_HTTP_HEAD_MAX)
                pr = -1, snprintf(e, sizeof e, "the request head is too long");
            if (pr == 0)
                continue;
            if (pr < 0) {
                answer(cs, 400, "Bad Request", e);
                append(why, whysz, "refused a request: %s", e);
                break;
            }
            if (strcmp(r->host, name)) {
                answer(cs, 421, "Misdirected Request", "the Host is not the TLS server name");
                append(why, whysz, "refused a request: its Host %s is not the TLS server name", r->host);
                break;
            }
            size_t ol = rewrite(hb, r, add, ob, LB_HTTP_HEAD_MAX + 64 * 1024);
            if (!ol || !lb_rate_count(LB_RATE_OUT, ol) || !write_all(us, ob, ol)) {
                append(why, whysz, "%s", "the request could not be sent upstream");
                break;
            }
            if (add->n)
                append(why, whysz, "%s", "secret header added");
            phase = r->chunked || r->content_length > 0 ? P_BODY : P_DONE;
            left = r->content_length;
            /* what came after the head: the body's first bytes */
            rest = hl - r->head_len;
            memmove(buf, hb + r->head_len, rest < TLS_RELAY_BUF ? rest : TLS_RELAY_BUF);
            if (phase == P_DONE || !rest) {
                if (phase == P_DONE && rest)
                    append(why, whysz, "%s", "a second request on one connection was not forwarded");
                continue;
            }
            if (rest > TLS_RELAY_BUF) {
                /* a body start longer than the relay buffer: fed in two steps */
                memmove(hb, hb + r->head_len, rest);
                if (!body(hb, rest - TLS_RELAY_BUF, us, r, &ch, &left, &phase, why, whysz))
                    break;
                memmove(buf, hb + rest - TLS_RELAY_BUF, TLS_RELAY_BUF);
                rest = TLS_RELAY_BUF;
                if (phase == P_DONE) {
                    append(why, whysz, "%s", "a second request on one connection was not forwarded");
                    continue;
                }
            }
        } else {
            int n = SSL_read(cs, buf, TLS_RELAY_BUF);
            if (n <= 0 && retry(cs, n))
                continue;
            if (n <= 0)
                break;
            *out += (uint64_t)n;
            rest = (size_t)n;
        }
        if (!body(buf, rest, us, r, &ch, &left, &phase, why, whysz))
            break;
    }
out:
    free(hb);
    free(ob);
    free(buf);
    free(r);
}

int lb_tls_serve(int c, int u, const char *name, const lb_tls_add *add, uint64_t *out, uint64_t *in, char *why,
                 size_t whysz)
{
    io_timeouts(c);
    io_timeouts(u);
    SSL *us = SSL_new(t.cli), *cs = NULL;
    X509 *lf = NULL;
    int served = 0;
    if (!us || !SSL_set_tlsext_host_name(us, name) || !SSL_set1_host(us, name) || !SSL_set_fd(us, u)) {
        snprintf(why, whysz, "cannot set up TLS upstream");
        goto out;
    }
    if (SSL_connect(us) != 1 || SSL_get_verify_result(us) != X509_V_OK) {
        long v = SSL_get_verify_result(us);
        snprintf(why, whysz, "the upstream's TLS for %s did not verify: %s", name,
                 v != X509_V_OK ? X509_verify_cert_error_string(v) : "the handshake failed");
        goto out;
    }
    if (!(lf = leaf_for(name)) || !(cs = SSL_new(t.srv)) || SSL_use_certificate(cs, lf) != 1 ||
        SSL_use_PrivateKey(cs, t.leaf_key) != 1 || !SSL_set_fd(cs, c)) {
        snprintf(why, whysz, "cannot set up TLS for the sandbox");
        goto out;
    }
    served = 1;
    if (SSL_accept(cs) != 1) {
        append(why, whysz, "%s", "the sandbox's TLS handshake failed (does it trust /etc/llmbox/ca.crt?)");
        goto out;
    }
    relay(cs, us, c, u, name, add, out, in, why, whysz);
    SSL_shutdown(cs);
out:
    ERR_clear_error();
    SSL_free(cs);
    SSL_free(us);
    X509_free(lf);
    return served;
}
