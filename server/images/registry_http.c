/* The registry's HTTP client on libcurl (registry_http.h). */
#include "common/util.h"
#include "images/registry_http.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define TOKEN_MAX 65536 /* a token server's answer: Docker Hub's is ~5 KiB */

/* host without its port, into out */
static void host_name(const char *host, char *out, size_t outsz)
{
    const char *end;
    if (host[0] == '[') {
        const char *close = strchr(host, ']');
        snprintf(out, outsz, "%.*s", close ? (int)(close - host - 1) : 0, host + 1);
        return;
    }
    end = strchr(host, ':');
    snprintf(out, outsz, "%.*s", end ? (int)(end - host) : (int)strlen(host), host);
}

int lb_reg_host_is_loopback(const char *host)
{
    char name[300];
    host_name(host, name, sizeof name);
    if (!strcasecmp(name, "localhost"))
        return 1;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, name, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, name, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return 0;
}

int lb_reg_host_is_insecure(const char *host, const char *insecure)
{
    if (!insecure)
        return 0;
    char name[300];
    host_name(host, name, sizeof name);
    const char *p = insecure;
    while (*p) {
        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        size_t n = strcspn(p, ", \t");
        if (n && ((n == strlen(host) && !strncasecmp(p, host, n)) ||
                  (!memchr(p, ':', n) && n == strlen(name) && !strncasecmp(p, name, n))))
            return 1;
        p += n;
    }
    return 0;
}

void lb_reg_req_init(lb_reg_req *rq, const char *method, const char *url)
{
    memset(rq, 0, sizeof *rq);
    rq->method = method;
    rq->url = url;
    rq->body_fd = -1;
    rq->out_fd = -1;
}

typedef struct xfer {
    const lb_reg_req *rq;
    lb_reg_resp *rs;
    CURL *curl;
    lb_buf err;           /* an error answer's body */
    long long sent;       /* of a body from a file */
    int failed;           /* a status: why the transfer was stopped */
    int started;          /* the first byte of the body was seen */
} xfer;

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (n >= 5 && !strncmp(p, "HTTP/", 5)) {
        /* a new answer (after a redirect or a 100): forget the last one's headers */
        x->rs->content_type[0] = x->rs->location[0] = x->rs->digest[0] = x->rs->www_auth[0] = '\0';
        return n;
    }
    const char *colon = memchr(p, ':', n);
    if (!colon)
        return n;
    size_t kl = (size_t)(colon - p);
    const char *v = colon + 1;
    size_t vl = n - kl - 1;
    while (vl && (*v == ' ' || *v == '\t')) {
        v++;
        vl--;
    }
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
        vl--;
    struct { const char *name; char *dst; size_t sz; } hs[] = {
        {"content-type", x->rs->content_type, sizeof x->rs->content_type},
        {"location", x->rs->location, sizeof x->rs->location},
        {"docker-content-digest", x->rs->digest, sizeof x->rs->digest},
        {"www-authenticate", x->rs->www_auth, sizeof x->rs->www_auth},
    };
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
        if (kl == strlen(hs[i].name) && !strncasecmp(p, hs[i].name, kl)) {
            if (vl >= hs[i].sz) {
                x->failed = LB_E_TOOBIG;
                return 0;
            }
            memcpy(hs[i].dst, v, vl);
            hs[i].dst[vl] = '\0';
        }
    return n;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    long code = 0;
    curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
    if (code < 200 || code > 299) {
        lb_buf_append_trunc(&x->err, p, n);
        return n;
    }
    const lb_reg_req *rq = x->rq;
    if (rq->out) {
        if (lb_buf_append(rq->out, p, n) != LB_OK) {
            x->failed = LB_E_TOOBIG;
            return 0;
        }
        return n;
    }
    if (rq->out_fd < 0)
        return n;
    if (!x->started) {
        x->started = 1;
        if (rq->range_from > 0 && code == 200) {
            /* the registry sent the whole blob, not the rest: start the file again */
            if (ftruncate(rq->out_fd, 0) || lseek(rq->out_fd, 0, SEEK_SET) < 0 ||
                !EVP_DigestInit_ex(rq->out_sha, EVP_sha256(), NULL)) {
                x->failed = LB_E_IO;
                return 0;
            }
            x->rs->restarted = 1;
        }
    }
    long long have = (x->rs->restarted ? 0 : rq->range_from) + x->rs->written;
    if (have + (long long)n > rq->out_max) {
        x->failed = LB_E_TOOBIG;
        return 0;
    }
    for (size_t off = 0; off < n;) {
        ssize_t w = write(rq->out_fd, p + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            x->failed = LB_E_IO;
            return 0;
        }
        off += (size_t)w;
    }
    if (rq->out_sha && !EVP_DigestUpdate(rq->out_sha, p, n)) {
        x->failed = LB_E_INTERNAL;
        return 0;
    }
    x->rs->written += (long long)n;
    return n;
}

static size_t on_read(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    long long left = x->rq->body_fd_len - x->sent;
    size_t want = size * nmemb;
    if (left <= 0)
        return 0;
    if ((long long)want > left)
        want = (size_t)left;
    ssize_t r;
    do
        r = pread(x->rq->body_fd, p, want, (off_t)(x->rq->body_off + x->sent));
    while (r < 0 && errno == EINTR);
    if (r <= 0) {
        x->failed = LB_E_IO;
        return CURL_READFUNC_ABORT;
    }
    x->sent += r;
    return (size_t)r;
}

/* The registry's error message ({"errors":[{"code","message"}]}) or the
 * start of its text, printable ASCII only. */
static void error_text(const lb_buf *b, char *out, size_t outsz)
{
    out[0] = '\0';
    if (!b->len)
        return;
    cJSON *doc = cJSON_ParseWithLength(b->data, b->len);
    cJSON *errs = doc ? cJSON_GetObjectItemCaseSensitive(doc, "errors") : NULL;
    cJSON *e0 = cJSON_IsArray(errs) ? cJSON_GetArrayItem(errs, 0) : NULL;
    cJSON *code = e0 ? cJSON_GetObjectItemCaseSensitive(e0, "code") : NULL;
    cJSON *m = e0 ? cJSON_GetObjectItemCaseSensitive(e0, "message") : NULL;
    if (cJSON_IsString(code) || cJSON_IsString(m))
        snprintf(out, outsz, "%s%s%s", cJSON_IsString(code) ? code->valuestring : "",
                 cJSON_IsString(code) && cJSON_IsString(m) ? ": " : "", cJSON_IsString(m) ? m->valuestring : "");
    else
        snprintf(out, outsz, "%.*s", (int)(b->len < 200 ? b->len : 200), b->data);
    cJSON_Delete(doc);
    for (char *q = out; *q; q++)
        if ((unsigned char)*q < 0x20 || (unsigned char)*q >= 0x7f)
            *q = '?';
}

static int perform(lb_reg_client *c, const lb_reg_req *rq, lb_reg_resp *rs, char *msg, size_t msgsz)
{
    CURL *h = c->curl;
    xfer x;
    memset(&x, 0, sizeof x);
    memset(rs, 0, sizeof *rs);
    x.rq = rq;
    x.rs = rs;
    x.curl = h;
    lb_buf_init(&x.err, LB_REG_ERRBODY_MAX);
    if (rq->out)
        lb_buf_reset(rq->out);
    char url[LB_REG_URL_MAX + 400];
    if (!strncmp(rq->url, "http://", 7) || !strncmp(rq->url, "https://", 8)) {
        /* an upload's Location: only on this registry, never elsewhere with our token */
        size_t bl = strlen(c->base);
        if (strncmp(rq->url, c->base, bl) || (rq->url[bl] != '/' && rq->url[bl] != '\0')) {
            lb_buf_free(&x.err);
            lb_say(msg, msgsz, "The registry at %s sent an upload location on another host.", c->host);
            return LB_E_PROTO;
        }
        snprintf(url, sizeof url, "%s", rq->url);
    } else if ((size_t)snprintf(url, sizeof url, "%s%s", c->base, rq->url) >= sizeof url) {
        lb_buf_free(&x.err);
        lb_say(msg, msgsz, "A registry URL is too long.");
        return LB_E_TOOBIG;
    }
    curl_easy_reset(h);
    struct curl_slist *hdr = NULL;
    char line[LB_REG_URL_MAX];
    if (c->auth[0])
        hdr = curl_slist_append(hdr, c->auth);
    if (rq->accept) {
        snprintf(line, sizeof line, "Accept: %s", rq->accept);
        hdr = curl_slist_append(hdr, line);
    }
    snprintf(line, sizeof line, "Content-Type: %s", rq->content_type ? rq->content_type : "");
    if (rq->content_type)
        hdr = curl_slist_append(hdr, line);
    if (rq->content_range) {
        snprintf(line, sizeof line, "Content-Range: %s", rq->content_range);
        hdr = curl_slist_append(hdr, line);
    }
    hdr = curl_slist_append(hdr, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, strncmp(c->base, "https:", 6) ? "http,https" : "https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, strncmp(c->base, "https:", 6) ? "http,https" : "https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    /* a stalled registry: under 1 byte/s for a minute ends the transfer */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "llmbox-registry-client");
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    if (rq->follow) {
        /* the Authorization header is a custom one: curl does not send it to another host */
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
    }
    char range[64];
    if (rq->range_from > 0) {
        snprintf(range, sizeof range, "%lld-", rq->range_from);
        curl_easy_setopt(h, CURLOPT_RANGE, range);
    }
    if (!strcmp(rq->method, "HEAD")) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (!strcmp(rq->method, "PUT") || !strcmp(rq->method, "POST") || !strcmp(rq->method, "PATCH")) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
        if (rq->body_fd >= 0) {
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(h, CURLOPT_READDATA, &x);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)rq->body_fd_len);
        } else {
            curl_easy_setopt(h, CURLOPT_POST, 1L);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
        }
    }
    CURLcode cc = curl_easy_perform(h);
    curl_slist_free_all(hdr);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &rs->status);
    error_text(&x.err, rs->errbody, sizeof rs->errbody);
    lb_buf_free(&x.err);
    if (x.failed) {
        if (x.failed == LB_E_TOOBIG)
            lb_say(msg, msgsz, "The registry at %s sent more than allowed for %s %s.", c->host, rq->method, rq->url);
        else
            lb_say(msg, msgsz, "Cannot write what the registry at %s sent: %s.", c->host, strerror(errno));
        return x.failed;
    }
    if (cc != CURLE_OK) {
        int ssl = cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_PEER_FAILED_VERIFICATION ||
                  cc == CURLE_SSL_CACERT_BADFILE || cc == CURLE_RECV_ERROR;
        lb_say(msg, msgsz, "Cannot reach the registry at %s (%s): %s%s", c->host, c->base, curl_easy_strerror(cc),
            ssl && !strncmp(c->base, "https:", 6)
                ? ". A registry other than loopback must speak TLS; if this one speaks plain HTTP, "
                  "list it in insecure_registries."
                : ".");
        return cc == CURLE_OPERATION_TIMEDOUT ? LB_E_TIMEOUT : LB_E_UNAVAILABLE;
    }
    return LB_OK;
}

/* Answers a challenge: a token from the realm (Bearer) or the credentials
 * (Basic) into c->auth. */
static int answer_challenge(lb_reg_client *c, const char *www, char *msg, size_t msgsz)
{
    lb_reg_challenge ch;
    int rc = lb_reg_challenge_parse(www, strlen(www), &ch, msg, msgsz);
    if (rc)
        return rc;
    char cred[2 * LB_REG_CRED_MAX + 2], b64[4 * ((2 * LB_REG_CRED_MAX + 4) / 3) + 8];
    if (c->have_creds && ch.bearer && !strncmp(ch.realm, "http://", 7)) {
        /* a password goes in clear only to where plain HTTP is allowed anyway */
        char rh[300];
        size_t hl = strcspn(ch.realm + 7, "/?#");
        snprintf(rh, sizeof rh, "%.*s", (int)(hl < sizeof rh - 1 ? hl : sizeof rh - 1), ch.realm + 7);
        if (!lb_reg_host_is_loopback(rh) && !lb_reg_host_is_insecure(rh, c->insecure)) {
            lb_say(msg, msgsz, "The registry at %s sends us to a token server over plain HTTP (%s); credentials "
                            "are not sent there unless it is listed in insecure_registries.", c->host, ch.realm);
            return LB_E_DENIED;
        }
    }
    if (c->have_creds) {
        int k = snprintf(cred, sizeof cred, "%s:%s", c->user, c->pass);
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)cred, k);
    }
    if (!ch.bearer) {
        if (!c->have_creds) {
            lb_say(msg, msgsz, "The registry at %s needs a user and password (LLMBOX_REGISTRY_USER and "
                            "LLMBOX_REGISTRY_PASSWORD, or registry_auth_file).", c->host);
            return LB_E_DENIED;
        }
        snprintf(c->auth, sizeof c->auth, "Authorization: Basic %s", b64);
        c->authed = 1;
        return LB_OK;
    }
    CURL *h = c->curl;
    char *esc_service = curl_easy_escape(h, ch.service, 0);
    char scope[600];
    snprintf(scope, sizeof scope, "repository:%s:%s", c->repo, c->actions);
    char *esc_scope = curl_easy_escape(h, scope, 0);
    char url[LB_REG_REALM_MAX + 1200];
    snprintf(url, sizeof url, "%s%sservice=%s&scope=%s", ch.realm, strchr(ch.realm, '?') ? "&" : "?",
             esc_service ? esc_service : "", esc_scope ? esc_scope : "");
    curl_free(esc_service);
    curl_free(esc_scope);
    lb_buf body;
    lb_buf_init(&body, TOKEN_MAX);
    curl_easy_reset(h);
    struct curl_slist *hdr = NULL;
    char line[sizeof b64 + 40];
    if (c->have_creds) {
        snprintf(line, sizeof line, "Authorization: Basic %s", b64);
        hdr = curl_slist_append(hdr, line);
    }
    xfer x;
    memset(&x, 0, sizeof x);
    lb_reg_req rq;
    lb_reg_req_init(&rq, "GET", url);
    rq.out = &body;
    lb_reg_resp rs;
    memset(&rs, 0, sizeof rs);
    x.rq = &rq;
    x.rs = &rs;
    x.curl = h;
    lb_buf_init(&x.err, LB_REG_ERRBODY_MAX);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    CURLcode cc = curl_easy_perform(h);
    curl_slist_free_all(hdr);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    lb_buf_free(&x.err);
    rc = LB_OK;
    if (cc != CURLE_OK || x.failed) {
        lb_say(msg, msgsz, "Cannot get a token from the registry's token server %s: %s.", ch.realm,
            x.failed ? "its answer is too long" : curl_easy_strerror(cc));
        rc = LB_E_UNAVAILABLE;
    } else if (code == 401 || code == 403) {
        lb_say(msg, msgsz, "The registry's token server %s refused %s for %s (HTTP %ld)%s.", ch.realm, c->actions,
            c->repo, code, c->have_creds ? "" : "; no credentials were given");
        rc = LB_E_DENIED;
    } else if (code != 200) {
        lb_say(msg, msgsz, "The registry's token server %s answered HTTP %ld.", ch.realm, code);
        rc = LB_E_PROTO;
    }
    if (!rc) {
        cJSON *doc = cJSON_ParseWithLength(body.data ? body.data : "", body.len);
        cJSON *t = doc ? cJSON_GetObjectItemCaseSensitive(doc, "token") : NULL;
        if (!cJSON_IsString(t))
            t = doc ? cJSON_GetObjectItemCaseSensitive(doc, "access_token") : NULL;
        size_t tl = cJSON_IsString(t) ? strlen(t->valuestring) : 0;
        int ok = tl > 0 && tl < sizeof c->auth - 32;
        for (size_t i = 0; ok && i < tl; i++)
            if ((unsigned char)t->valuestring[i] <= 0x20 || (unsigned char)t->valuestring[i] >= 0x7f)
                ok = 0; /* a token goes into a header line */
        if (ok) {
            snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", t->valuestring);
            c->authed = 1;
        } else {
            lb_say(msg, msgsz, "The registry's token server %s did not answer with a usable token.", ch.realm);
            rc = LB_E_PROTO;
        }
        cJSON_Delete(doc);
    }
    lb_buf_free(&body);
    return rc;
}

int lb_reg_do(lb_reg_client *c, const lb_reg_req *rq, lb_reg_resp *rs, char *msg, size_t msgsz)
{
    int rc = perform(c, rq, rs, msg, msgsz);
    if (rc || rs->status != 401)
        return rc;
    if (rq->out_fd >= 0 && rs->written) {
        lb_say(msg, msgsz, "The registry at %s refused a transfer half way.", c->host);
        return LB_E_PROTO;
    }
    char www[LB_REG_CHALLENGE_MAX + 1];
    snprintf(www, sizeof www, "%s", rs->www_auth);
    if ((rc = answer_challenge(c, www, msg, msgsz)))
        return rc;
    return perform(c, rq, rs, msg, msgsz);
}

void lb_reg_say_status(const lb_reg_client *c, const lb_reg_req *rq, const lb_reg_resp *rs, char *msg,
                       size_t msgsz)
{
    lb_say(msg, msgsz, "The registry at %s answered HTTP %ld to %s %s%s%s", c->host, rs->status, rq->method, rq->url,
        rs->errbody[0] ? ": " : ".", rs->errbody);
}

int lb_reg_open(lb_reg_client *c, const char *host, const char *repo, const char *actions, const char *insecure,
                const char *auth_file, char *msg, size_t msgsz)
{
    memset(c, 0, sizeof *c);
    snprintf(c->host, sizeof c->host, "%s", host);
    snprintf(c->repo, sizeof c->repo, "%s", repo);
    snprintf(c->actions, sizeof c->actions, "%s", actions);
    snprintf(c->insecure, sizeof c->insecure, "%s", insecure ? insecure : "");
    /* Docker Hub's API lives on registry-1.docker.io */
    const char *api = !strcmp(host, "docker.io") ? "registry-1.docker.io" : host;
    int plain = lb_reg_host_is_loopback(host) || lb_reg_host_is_insecure(host, insecure);
    snprintf(c->base, sizeof c->base, "%s://%s", plain ? "http" : "https", api);
    c->curl = curl_easy_init();
    if (!c->curl) {
        lb_say(msg, msgsz, "Cannot start an HTTP client (libcurl).");
        return LB_E_NOMEM;
    }
    int rc = lb_reg_credentials(host, auth_file, c->user, c->pass, sizeof c->user, &c->have_creds, msg, msgsz);
    if (rc)
        return rc;
    lb_buf body;
    lb_buf_init(&body, LB_REG_ERRBODY_MAX);
    lb_reg_req rq;
    lb_reg_req_init(&rq, "GET", "/v2/");
    rq.out = &body;
    lb_reg_resp rs;
    rc = lb_reg_do(c, &rq, &rs, msg, msgsz);
    lb_buf_free(&body);
    if (rc)
        return rc;
    if (rs.status == 401 || rs.status == 403) {
        lb_say(msg, msgsz, "The registry at %s refused our credentials (HTTP %ld).", host, rs.status);
        return LB_E_DENIED;
    }
    if (rs.status != 200) {
        lb_reg_say_status(c, &rq, &rs, msg, msgsz);
        return LB_E_PROTO;
    }
    return LB_OK;
}

void lb_reg_close(lb_reg_client *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    c->curl = NULL;
    /* credentials do not outlive the client */
    memset(c->pass, 0, sizeof c->pass);
    memset(c->auth, 0, sizeof c->auth);
}
