/* S3 requests on libcurl. One easy handle per try: a retry starts clean
 * (the upload file reopened, the download file truncated). What libcurl
 * 7.88's SigV4 leaves to us, found against Ceph's radosgw: S3 wants the
 * x-amz-content-sha256 header (we send UNSIGNED-PAYLOAD: TLS or loopback
 * protects the body, and hashing a large upload first would read it
 * twice), and libcurl signs the query string as written, so every query
 * here is built already sorted and strictly encoded. */
#include "common/s3.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/config.h"

#define ERR_BODY_MAX 4096 /* of an error answer: enough for <Code> and <Message> */

typedef struct s3_req {
    const lb_s3 *s;
    const char *method;  /* GET PUT HEAD DELETE */
    const char *key;     /* NULL: the bucket itself */
    const char *query;   /* canonical query, "" for none */
    const char *in_path; /* PUT: the file to send (NULL: an empty body) */
    FILE *out_f;         /* GET: the body goes here (2xx only) ... */
    lb_buf *out_b;       /* ... or here */
    uint64_t max_out;    /* 0: no cap */
    const char *range;   /* "bytes=A-B" or NULL */
    const char *copy_src; /* PUT: x-amz-copy-source (CopyObject), "/bucket/key" encoded, or NULL */
    /* results */
    CURL *h;
    long http;
    uint64_t got;
    int capped;
    lb_buf err;
    int64_t length; /* Content-Length (HEAD) */
} s3_req;

static void url_encode(lb_buf *b, const char *s, int keep_slash, int *rc)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s && *rc == LB_OK; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~' || (keep_slash && c == '/')) {
            *rc = lb_buf_append(b, &c, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            *rc = lb_buf_append(b, e, 3);
        }
    }
}

static int build_url(const s3_req *q, lb_buf *u)
{
    const lb_s3 *s = q->s;
    int rc = LB_OK;
    if (s->virtual_host) {
        const char *host = strstr(s->endpoint, "://") + 3;
        rc = lb_buf_printf(u, "%.*s%s.%s/", (int)(host - s->endpoint), s->endpoint, s->bucket, host);
    } else {
        rc = lb_buf_printf(u, "%s/%s%s", s->endpoint, s->bucket, q->key ? "/" : "");
    }
    if (rc == LB_OK && q->key)
        url_encode(u, q->key, 1, &rc);
    if (rc == LB_OK && q->query[0])
        rc = lb_buf_printf(u, "?%s", q->query);
    return rc;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    s3_req *q = ud;
    size_t len = sz * n;
    long code = 0;
    curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &code);
    if (code < 200 || code > 299) {
        lb_buf_append_trunc(&q->err, p, len);
        return len;
    }
    if (q->max_out && q->got + len > q->max_out) {
        q->capped = 1;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    q->got += len;
    if (q->out_f)
        return fwrite(p, 1, len, q->out_f);
    if (q->out_b)
        return lb_buf_append(q->out_b, p, len) == LB_OK ? len : 0;
    return len;
}

static size_t no_body(char *p, size_t sz, size_t n, void *ud)
{
    return 0;
}

static int retryable_curl(CURLcode c)
{
    return c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_OPERATION_TIMEDOUT ||
           c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR || c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE;
}

static void name_of(const s3_req *q, char *out, size_t outsz)
{
    snprintf(out, outsz, "%s s3://%s/%s", q->method, q->s->bucket, q->key ? q->key : "");
}

/* One try. Returns the curl code; q->http the status. */
static CURLcode try_once(s3_req *q, const char *url, FILE *in, uint64_t in_size)
{
    CURL *h = curl_easy_init();
    if (!h)
        return CURLE_OUT_OF_MEMORY;
    q->h = h;
    q->http = 0;
    q->got = 0;
    q->capped = 0;
    lb_buf_reset(&q->err);
    char sigv4[96];
    snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", q->s->region);
    struct curl_slist *hd = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    /* no "Expect:" override here: libcurl 7.88 signs the headers it is
     * given, an empty one included, and then does not send it */
    struct curl_slist *h2 = hd;
    char range[96];
    if (h2 && q->range) {
        snprintf(range, sizeof range, "Range: %s", q->range);
        h2 = curl_slist_append(h2, range);
    }
    char copy[LB_S3_KEY_MAX * 3 + 160];
    if (h2 && q->copy_src) {
        snprintf(copy, sizeof copy, "x-amz-copy-source: %s", q->copy_src);
        h2 = curl_slist_append(h2, copy);
    }
    if (!h2) {
        curl_slist_free_all(hd);
        curl_easy_cleanup(h);
        return CURLE_OUT_OF_MEMORY;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4);
    curl_easy_setopt(h, CURLOPT_USERNAME, q->s->access_key);
    curl_easy_setopt(h, CURLOPT_PASSWORD, q->s->secret_key);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)q->s->timeout_s);
    /* a transfer may be long; one that stalls for timeout_s is dead */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)q->s->timeout_s);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, q);
    if (!strcmp(q->method, "PUT")) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)in_size);
        if (in)
            curl_easy_setopt(h, CURLOPT_READDATA, in);
        else
            curl_easy_setopt(h, CURLOPT_READFUNCTION, no_body);
    } else if (!strcmp(q->method, "HEAD")) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (!strcmp(q->method, "DELETE")) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    CURLcode c = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &q->http);
    curl_off_t cl = -1;
    curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    q->length = cl;
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    q->h = NULL;
    return c;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* A request with its retries; ok is the one success status (206 for a
 * range), or 0 for any 2xx. */
static int perform(s3_req *q, long ok, char *why, size_t whysz)
{
    char name[LB_S3_KEY_MAX + 128];
    lb_buf url;
    lb_buf_init(&url, 8192);
    lb_buf_init(&q->err, ERR_BODY_MAX);
    name_of(q, name, sizeof name);
    int rc = build_url(q, &url);
    if (rc != LB_OK) {
        snprintf(why, whysz, "%s: the URL is too long", name);
        goto out;
    }
    for (int attempt = 0;; attempt++) {
        FILE *in = NULL;
        uint64_t in_size = 0;
        if (q->in_path) {
            struct stat st;
            in = fopen(q->in_path, "rb");
            if (!in || fstat(fileno(in), &st) != 0) {
                snprintf(why, whysz, "%s: cannot read %s: %s", name, q->in_path, strerror(errno));
                if (in)
                    fclose(in);
                rc = LB_E_IO;
                goto out;
            }
            in_size = (uint64_t)st.st_size;
        }
        if (q->out_f && (fflush(q->out_f) != 0 || ftruncate(fileno(q->out_f), 0) != 0 ||
                         fseek(q->out_f, 0, SEEK_SET) != 0)) {
            snprintf(why, whysz, "%s: cannot reset the download file: %s", name, strerror(errno));
            if (in)
                fclose(in);
            rc = LB_E_IO;
            goto out;
        }
        if (q->out_b)
            lb_buf_reset(q->out_b);
        CURLcode c = try_once(q, url.data, in, in_size);
        if (in)
            fclose(in);
        int last = attempt >= q->s->retries;
        if (q->capped) {
            snprintf(why, whysz, "%s: the object is larger than %llu bytes", name, (unsigned long long)q->max_out);
            rc = LB_E_TOOBIG;
            goto out;
        }
        if (c != CURLE_OK) {
            if (retryable_curl(c) && !last)
                goto again;
            snprintf(why, whysz, "%s: cannot reach the object store at %s (%s) after %d tries", name,
                     q->s->endpoint, curl_easy_strerror(c), attempt + 1);
            rc = c == CURLE_OPERATION_TIMEDOUT ? LB_E_TIMEOUT : c == CURLE_OUT_OF_MEMORY ? LB_E_NOMEM
                 : retryable_curl(c) ? LB_E_UNAVAILABLE : LB_E_IO;
            goto out;
        }
        if (q->http >= 500 && !last)
            goto again;
        if ((ok && q->http == ok) || (!ok && q->http >= 200 && q->http <= 299)) {
            rc = LB_OK;
            goto out;
        }
        char code[64];
        lb_s3_error_code(q->err.data ? q->err.data : "", q->err.len, code, sizeof code);
        if (q->http >= 500) {
            snprintf(why, whysz, "%s: the object store answered %ld%s%s after %d tries", name, q->http,
                     code[0] ? " " : "", code, attempt + 1);
            rc = LB_E_UNAVAILABLE;
        } else if (q->http == 401 || q->http == 403) {
            snprintf(why, whysz, "%s: the object store refused the credentials of access key %s (%ld %s)", name,
                     q->s->access_key, q->http, code[0] ? code : "Forbidden");
            rc = LB_E_DENIED;
        } else if (q->http == 404) {
            snprintf(why, whysz, "%s: %s", name,
                     !strcmp(code, "NoSuchBucket") ? "the bucket does not exist" : "no such object");
            rc = LB_E_NOTFOUND;
        } else if (q->http == 416) {
            snprintf(why, whysz, "%s: the range %s is outside the object", name, q->range ? q->range : "");
            rc = LB_E_INVAL;
        } else {
            snprintf(why, whysz, "%s: unexpected answer %ld%s%s from the object store", name, q->http,
                     code[0] ? " " : "", code);
            rc = LB_E_PROTO;
        }
        goto out;
    again:
        sleep_ms(attempt < 4 ? 200L << attempt : 3000L);
    }
out:
    lb_buf_free(&url);
    lb_buf_free(&q->err);
    return rc;
}

static int key_ok(const char *key, char *why, size_t whysz)
{
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > LB_S3_KEY_MAX) {
        snprintf(why, whysz, "an object key must be 1 to %d bytes", LB_S3_KEY_MAX);
        return LB_E_INVAL;
    }
    return LB_OK;
}

int lb_s3_put_file(const lb_s3 *s, const char *key, const char *path, uint64_t max_bytes, char *why, size_t whysz)
{
    struct stat st;
    int rc = key_ok(key, why, whysz);
    if (rc != LB_OK)
        return rc;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whysz, "PUT s3://%s/%s: %s is not a readable file", s->bucket, key, path);
        return LB_E_IO;
    }
    if (max_bytes && (uint64_t)st.st_size > max_bytes) {
        snprintf(why, whysz, "PUT s3://%s/%s: %s is %lld bytes, more than the cap of %llu", s->bucket, key, path,
                 (long long)st.st_size, (unsigned long long)max_bytes);
        return LB_E_TOOBIG;
    }
    s3_req q = {.s = s, .method = "PUT", .key = key, .query = "", .in_path = path};
    return perform(&q, 0, why, whysz);
}

int lb_s3_get_file(const lb_s3 *s, const char *key, const char *dest, int64_t off, int64_t len, uint64_t max_bytes,
                   char *why, size_t whysz)
{
    int rc = key_ok(key, why, whysz);
    if (rc != LB_OK)
        return rc;
    char range[64] = "", tmp[4096];
    if (off < 0 || (len >= 0 && off > INT64_MAX - len) || len == 0) {
        snprintf(why, whysz, "GET s3://%s/%s: an empty or negative range", s->bucket, key);
        return LB_E_INVAL;
    }
    if (len > 0)
        snprintf(range, sizeof range, "bytes=%lld-%lld", (long long)off, (long long)(off + len - 1));
    else if (off > 0)
        snprintf(range, sizeof range, "bytes=%lld-", (long long)off);
    int n = snprintf(tmp, sizeof tmp, "%s.s3.XXXXXX", dest);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        snprintf(why, whysz, "GET s3://%s/%s: the destination path is too long", s->bucket, key);
        return LB_E_TOOBIG;
    }
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w+b") : NULL;
    if (!f) {
        snprintf(why, whysz, "GET s3://%s/%s: cannot create a file beside %s: %s", s->bucket, key, dest,
                 strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return LB_E_IO;
    }
    s3_req q = {.s = s, .method = "GET", .key = key, .query = "", .out_f = f, .max_out = max_bytes,
                .range = range[0] ? range : NULL};
    rc = perform(&q, range[0] ? 206 : 200, why, whysz);
    if (rc == LB_OK && (fflush(f) != 0 || fsync(fileno(f)) != 0)) {
        snprintf(why, whysz, "GET s3://%s/%s: cannot write %s: %s", s->bucket, key, tmp, strerror(errno));
        rc = LB_E_IO;
    }
    if (fclose(f) != 0 && rc == LB_OK) {
        snprintf(why, whysz, "GET s3://%s/%s: cannot write %s: %s", s->bucket, key, tmp, strerror(errno));
        rc = LB_E_IO;
    }
    if (rc == LB_OK && rename(tmp, dest) != 0) {
        snprintf(why, whysz, "GET s3://%s/%s: cannot rename to %s: %s", s->bucket, key, dest, strerror(errno));
        rc = LB_E_IO;
    }
    if (rc != LB_OK)
        unlink(tmp);
    return rc;
}

int lb_s3_head(const lb_s3 *s, const char *key, uint64_t *size, char *why, size_t whysz)
{
    int rc = key_ok(key, why, whysz);
    if (rc != LB_OK)
        return rc;
    s3_req q = {.s = s, .method = "HEAD", .key = key, .query = ""};
    rc = perform(&q, 200, why, whysz);
    if (rc == LB_OK) {
        if (q.length < 0) {
            snprintf(why, whysz, "HEAD s3://%s/%s: the answer has no Content-Length", s->bucket, key);
            return LB_E_PROTO;
        }
        *size = (uint64_t)q.length;
    }
    return rc;
}

int lb_s3_delete(const lb_s3 *s, const char *key, char *why, size_t whysz)
{
    int rc = key_ok(key, why, whysz);
    if (rc != LB_OK)
        return rc;
    s3_req q = {.s = s, .method = "DELETE", .key = key, .query = ""};
    return perform(&q, 0, why, whysz);
}

int lb_s3_copy(const lb_s3 *s, const char *src_key, const char *key, char *why, size_t whysz)
{
    int rc = key_ok(key, why, whysz);
    if (rc == LB_OK)
        rc = key_ok(src_key, why, whysz);
    if (rc != LB_OK)
        return rc;
    lb_buf src, body;
    lb_buf_init(&src, LB_S3_KEY_MAX * 3 + 128);
    lb_buf_init(&body, ERR_BODY_MAX);
    rc = lb_buf_printf(&src, "/%s/", s->bucket);
    if (rc == LB_OK)
        url_encode(&src, src_key, 1, &rc);
    if (rc != LB_OK) {
        snprintf(why, whysz, "PUT s3://%s/%s: the copy's source key is too long", s->bucket, key);
        goto out;
    }
    s3_req q = {.s = s, .method = "PUT", .key = key, .query = "", .copy_src = (const char *)src.data,
                .out_b = &body, .max_out = 4 * ERR_BODY_MAX};
    rc = perform(&q, 0, why, whysz);
    /* S3 may answer a copy 200 and report its failure in the body */
    if (rc == LB_OK && body.len && memmem(body.data, body.len, "<Error>", 7)) {
        snprintf(why, whysz, "PUT s3://%s/%s (a copy of %s): the object store answered 200 with an error: %.200s",
                 s->bucket, key, src_key, (const char *)body.data);
        rc = LB_E_UNAVAILABLE;
    }
out:
    lb_buf_free(&src);
    lb_buf_free(&body);
    return rc;
}

int lb_s3_create_bucket(const lb_s3 *s, char *why, size_t whysz)
{
    s3_req q = {.s = s, .method = "PUT", .key = NULL, .query = ""};
    int rc = perform(&q, 0, why, whysz);
    if (rc == LB_E_PROTO && q.http == 409)
        return LB_OK; /* BucketAlreadyOwnedByYou */
    return rc;
}

typedef struct list_ctx {
    lb_s3_list_cb cb;
    void *ctx;
    int left;
} list_ctx;

static int list_one(void *ud, const char *key, uint64_t size)
{
    list_ctx *l = ud;
    if (l->left-- <= 0)
        return LB_E_TOOBIG;
    return l->cb(l->ctx, key, size);
}

int lb_s3_list(const lb_s3 *s, const char *prefix, int max_keys, lb_s3_list_cb cb, void *ctx, char *why,
               size_t whysz)
{
    char token[LB_S3_TOKEN_MAX + 1] = "";
    list_ctx l = {cb, ctx, max_keys};
    lb_buf page, query;
    lb_buf_init(&page, LB_S3_LIST_MAX_DOC);
    lb_buf_init(&query, 16384);
    int rc = LB_OK, truncated = 0;
    do {
        /* canonical: parameters in byte order, values strictly encoded */
        lb_buf_reset(&query);
        if (token[0]) {
            rc = lb_buf_appends(&query, "continuation-token=");
            url_encode(&query, token, 0, &rc);
            if (rc == LB_OK)
                rc = lb_buf_appends(&query, "&");
        }
        if (rc == LB_OK)
            rc = lb_buf_appends(&query, "list-type=2&prefix=");
        url_encode(&query, prefix, 0, &rc);
        if (rc != LB_OK) {
            snprintf(why, whysz, "LIST s3://%s/%s: the query is too long", s->bucket, prefix);
            break;
        }
        s3_req q = {.s = s, .method = "GET", .key = NULL, .query = query.data, .out_b = &page,
                    .max_out = LB_S3_LIST_MAX_DOC};
        rc = perform(&q, 200, why, whysz);
        if (rc != LB_OK)
            break;
        rc = lb_s3_list_parse(page.data ? page.data : "", page.len, list_one, &l, &truncated, token, why, whysz);
        if (rc == LB_E_TOOBIG && l.left < 0)
            snprintf(why, whysz, "LIST s3://%s/%s: more than %d objects", s->bucket, prefix, max_keys);
    } while (rc == LB_OK && truncated);
    lb_buf_free(&page);
    lb_buf_free(&query);
    return rc;
}

static int bucket_ok(const char *b)
{
    size_t n = strlen(b);
    if (n < 3 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !((c == '-' || c == '.') && i > 0 && i + 1 < n))
            return 0;
    }
    return 1;
}

int lb_s3_from_config(const lb_config *cfg, lb_s3 *s, char *why, size_t whysz)
{
    memset(s, 0, sizeof *s);
    const char *e = cfg->s3_endpoint;
    const char *host = !strncmp(e, "http://", 7) ? e + 7 : !strncmp(e, "https://", 8) ? e + 8 : NULL;
    size_t n = strlen(e);
    while (n > 0 && e[n - 1] == '/')
        n--;
    if (!host || (size_t)(host - e) >= n || n >= sizeof s->endpoint || memchr(host, '/', n - (size_t)(host - e)) ||
        strpbrk(e, "?#@ ")) {
        snprintf(why, whysz, "s3_endpoint must be http(s)://host[:port] with no path (it is \"%s\")", e);
        return LB_E_INVAL;
    }
    memcpy(s->endpoint, e, n);
    if (!bucket_ok(cfg->s3_bucket)) {
        snprintf(why, whysz, "s3_bucket must be 3 to 63 of a-z 0-9 . - (it is \"%s\")", cfg->s3_bucket);
        return LB_E_INVAL;
    }
    if (!cfg->s3_access_key[0] || !cfg->s3_secret_key[0]) {
        snprintf(why, whysz, "s3_bucket is set, so s3_access_key and s3_secret_key must be too");
        return LB_E_INVAL;
    }
    if (strcmp(cfg->s3_addressing, "path") && strcmp(cfg->s3_addressing, "virtual")) {
        snprintf(why, whysz, "s3_addressing must be path or virtual (it is \"%s\")", cfg->s3_addressing);
        return LB_E_INVAL;
    }
    /* the region goes into libcurl's "aws:amz:REGION:s3", where ':' separates */
    const char *region_chars = "abcdefghijklmnopqrstuvwxyz0123456789-";
    if (!cfg->s3_region[0] || strspn(cfg->s3_region, region_chars) != strlen(cfg->s3_region)) {
        snprintf(why, whysz, "s3_region must be of a-z 0-9 - (it is \"%s\")", cfg->s3_region);
        return LB_E_INVAL;
    }
    snprintf(s->bucket, sizeof s->bucket, "%s", cfg->s3_bucket);
    snprintf(s->region, sizeof s->region, "%s", cfg->s3_region);
    snprintf(s->access_key, sizeof s->access_key, "%s", cfg->s3_access_key);
    snprintf(s->secret_key, sizeof s->secret_key, "%s", cfg->s3_secret_key);
    s->virtual_host = !strcmp(cfg->s3_addressing, "virtual");
    s->timeout_s = cfg->s3_timeout_s;
    s->retries = cfg->s3_retries;
    return LB_OK;
}
