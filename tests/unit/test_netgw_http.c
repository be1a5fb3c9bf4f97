/* What the gateway's secret relay reads from a sandbox (netgw/netgw_http.c)
 * and the policy words behind it (common/netpolicy.c): a request head is
 * taken only in its plain form, anything a server could read another way
 * is refused, a chunked body's end is found wherever the bytes split; a
 * policy's secrets and bandwidth parse, print and stay within the
 * operator's secret:NAME words. */
#include "testlib.h"

#include "common/netpolicy.h"
#include "common/status.h"
#include "netgw/netgw_http.h"
#include "netgw/netgw_rate.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static lb_http_req r;

static int req(const char *s)
{
    char why[160];
    return lb_http_req_parse(s, strlen(s), &r, why, sizeof why);
}

TEST(request_heads_plain_or_refused)
{
    CHECK(req("GET /x HTTP/1.1\r\nHost: API.test:443\r\nAccept: */*\r\n\r\nrest") == 1);
    CHECK_STR(r.host, "api.test");
    CHECK(r.nh == 2 && r.content_length == -1 && !r.chunked);
    CHECK(r.head_len == strlen("GET /x HTTP/1.1\r\nHost: API.test:443\r\nAccept: */*\r\n\r\n"));
    CHECK(lb_http_hdr_is("GET /x HTTP/1.1\r\nHost: API.test:443\r\nAccept: */*\r\n\r\n", &r, 1, "accept"));
    CHECK(req("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 12\r\n\r\n") == 1 && r.content_length == 12);
    CHECK(req("POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: Chunked\r\n\r\n") == 1 && r.chunked);
    CHECK(req("GET / HTTP/1.1\r\nHost: a.te") == 0); /* more may come */
    CHECK(req("GET / HT") == 0);
    /* refused: what two readers could read two ways */
    CHECK(req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n") == -1);
    CHECK(req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n") == -1);
    CHECK(req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n") == -1);
    CHECK(req("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n") == -1);
    CHECK(req("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == -1);
    CHECK(req("GET / HTTP/1.1\r\nX: y\r\n\r\n") == -1);          /* no Host */
    CHECK(req("GET / HTTP/1.1\r\nHost: 1.2.3.4\r\n\r\n") == 1);  /* a name-shaped address: the caller compares */
    CHECK(req("GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n") == -1);
    CHECK(req("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n") == -1);
    CHECK(req("GET / HTTP/1.1\r\nHost : a\r\n\r\n") == -1);
    CHECK(req("GET / HTTP/1.1\nHost: a\n\n") == -1);
    CHECK(req("GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n") == -1);
    CHECK(req("GET / HTTP/1.1\r\nHost: a\r\nX: b\x01\r\n\r\n") == -1);
    CHECK(req("CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n") == -1);
    CHECK(req("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n") == -1);
    CHECK(req("GET / HTTP/2.0\r\nHost: a\r\n\r\n") == -1);
    CHECK(req("GET  / HTTP/1.1\r\nHost: a\r\n\r\n") == -1);
    /* caps: the line, the head, the number of headers */
    char *big = malloc(LB_HTTP_HEAD_MAX + 100);
    memset(big, 'a', LB_HTTP_HEAD_MAX + 99);
    big[LB_HTTP_HEAD_MAX + 99] = '\0';
    memcpy(big, "GET /", 5);
    CHECK(req(big) == -1);
    strcpy(big, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i <= LB_HTTP_HEADERS_MAX; i++)
        strcat(big, "X: y\r\n");
    strcat(big, "\r\n");
    CHECK(req(big) == -1);
    free(big);
}

/* Feeds s in pieces of step bytes; the bytes that belonged to the body. */
static long feed(const char *s, size_t step, int *done)
{
    lb_http_chunked c;
    memset(&c, 0, sizeof c);
    size_t n = strlen(s), at = 0;
    long total = 0;
    *done = 0;
    while (at < n && !*done) {
        size_t k = n - at < step ? n - at : step;
        long got = lb_http_chunked_feed(&c, (const unsigned char *)s + at, k, done);
        if (got < 0)
            return -1;
        total += got;
        at += k;
    }
    return total;
}

TEST(chunked_end_found_wherever_it_splits)
{
    const char *body = "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
    for (size_t step = 1; step <= strlen(body) + 3; step++) {
        int done;
        char *withmore = malloc(strlen(body) + 20);
        strcpy(withmore, body);
        strcat(withmore, "GET / HTTP/1.1"); /* a pipelined request after it */
        CHECK(feed(withmore, step, &done) == (long)strlen(body) && done);
        free(withmore);
    }
    int done;
    CHECK(feed("0\r\n\r\n", 64, &done) == 5 && done);
    CHECK(feed("5\r\nhel", 64, &done) == 6 && !done);
    CHECK(feed("x\r\n", 64, &done) == -1);
    CHECK(feed("5\r\nhelloXX", 64, &done) == -1);             /* no CRLF after the data */
    CHECK(feed("1000000000000000\r\n", 64, &done) == -1);     /* 16 hex digits */
    CHECK(feed("\r\n", 64, &done) == -1);                     /* no size */
    CHECK(feed("5\nhello\r\n", 64, &done) == -1);             /* bare LF */
}

TEST(policy_secrets_and_bandwidth)
{
    lb_netpolicy *p = malloc(sizeof *p), *c = malloc(sizeof *c);
    char err[300], text[LB_NETPOL_TEXT_MAX + 1];
    CHECK(lb_netpolicy_parse("{\"allow\":[\"a.test\"],\"secrets\":[\"gh\",\"gh\",\"npm.1\"],\"bandwidth\":65536}", p,
                             err, sizeof err) == LB_OK);
    CHECK(p->nsecrets == 2 && !strcmp(p->secrets[1], "npm.1") && p->bandwidth == 65536);
    CHECK(lb_netpolicy_text(p, text, sizeof text) == LB_OK);
    CHECK_STR(text, "{\"allow\":[\"a.test\"],\"deny\":[],\"secrets\":[\"gh\",\"npm.1\"],\"bandwidth\":65536}");
    CHECK(lb_netpolicy_parse("{\"allow\":[\"a.test\"]}", p, err, sizeof err) == LB_OK);
    CHECK(lb_netpolicy_text(p, text, sizeof text) == LB_OK);
    CHECK_STR(text, "{\"allow\":[\"a.test\"],\"deny\":[]}"); /* unchanged without them */
    CHECK(lb_netpolicy_parse("{\"secrets\":[\"a b\"]}", p, err, sizeof err) == LB_E_INVAL);
    CHECK(lb_netpolicy_parse("{\"secrets\":\"gh\"}", p, err, sizeof err) == LB_E_INVAL);
    CHECK(lb_netpolicy_parse("{\"bandwidth\":100}", p, err, sizeof err) == LB_E_INVAL);
    CHECK(lb_netpolicy_parse("{\"bandwidth\":1e12}", p, err, sizeof err) == LB_E_INVAL);
    CHECK(lb_netpolicy_parse("{\"bandwidth\":2048.5}", p, err, sizeof err) == LB_E_INVAL);
    /* the ceiling names the secrets sandboxes may use */
    CHECK(lb_netpolicy_parse("{\"allow\":[\"a.test\"],\"secrets\":[\"gh\"]}", p, err, sizeof err) == LB_OK);
    CHECK(lb_netpolicy_admit(p, "*.test secret:gh", NULL, err, sizeof err) == LB_OK);
    CHECK(lb_netpolicy_admit(p, "*.test secret:npm", NULL, err, sizeof err) == LB_E_DENIED);
    CHECK(strstr(err, "\"gh\"") != NULL);
    CHECK(lb_netpolicy_admit(p, "*.test secret:gh", "a.test", err, sizeof err) == LB_E_DENIED);
    CHECK(strstr(err, "for this user") != NULL);
    CHECK(lb_netpolicy_list_parse("secret:", c, err, sizeof err) != LB_OK);
    CHECK(lb_netpolicy_list_parse("secret:a/b", c, err, sizeof err) != LB_OK);
    free(p);
    free(c);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

TEST(rate_bucket_holds_the_rate)
{
    lb_rate_set(1 << 20); /* 1 MiB/s: burst 128 KiB */
    double t = now_s();
    for (int i = 0; i < 24; i++)
        lb_rate_take(LB_RATE_IN, 16384); /* 384 KiB */
    double s = now_s() - t;
    CHECK(s >= 0.2);                     /* (384 - 128) KiB at 1 MiB/s: 0.25 s */
    CHECK(s < 5);
    t = now_s();
    lb_rate_take(LB_RATE_OUT, 65536); /* the other way has its own bucket */
    CHECK(now_s() - t < 0.05);
    lb_rate_set(0);
    t = now_s();
    lb_rate_take(LB_RATE_IN, 100 << 20);
    CHECK(now_s() - t < 0.05);
    lb_rate_allowance_set(1000);
    CHECK(lb_rate_count(LB_RATE_IN, 600) == 1);
    CHECK(lb_rate_count(LB_RATE_IN, 600) == 0);
    lb_rate_allowance_set(0);
}

int main(void)
{
    RUN(request_heads_plain_or_refused);
    RUN(chunked_end_found_wherever_it_splits);
    RUN(policy_secrets_and_bandwidth);
    RUN(rate_bucket_holds_the_rate);
    return testlib_done();
}
