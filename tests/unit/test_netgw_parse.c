/* What the network gateway reads from a sandbox (netgw/netgw_peek.c,
 * netgw/netgw_dns.c): the HTTP Host and TLS SNI a connection names, and a
 * DNS question; hostile bytes are refused, partial ones wait for more. */
#include "testlib.h"

#include "netgw/netgw_dns.h"
#include "netgw/netgw_peek.h"
#include "common/status.h"

#include <stdint.h>
#include <string.h>

static int host(const char *req, char *name)
{
    return lb_peek_http_host((const unsigned char *)req, strlen(req), name, 254);
}

TEST(http_host_is_found_cut_and_lowercased)
{
    char n[254];
    CHECK(host("GET / HTTP/1.1\r\nHost: Example.COM:8080\r\n\r\n", n) == 1);
    CHECK_STR(n, "example.com");
    CHECK(host("POST /x HTTP/1.1\r\nUser-Agent: a\r\nhost:  api.test. \r\n\r\n", n) == 1);
    CHECK_STR(n, "api.test");
    CHECK(host("GET / HTTP/1.1\r\nUser-Ag", n) == 0);          /* more may come */
    CHECK(host("GET", n) == 0);
    CHECK(host("GET / HTTP/1.1\r\n\r\n", n) == -1);            /* no Host in the head */
    CHECK(host("\x16\x03\x01", n) == -1);                      /* not HTTP */
    CHECK(host("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", n) == -1);
    CHECK(host("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", n) == -1);
    CHECK(host("GET / HTTP/1.1\r\nHost: \r\n\r\n", n) == -1);
}

/* A ClientHello with server_name sni (NULL: no extension), into buf. */
static size_t hello(unsigned char *b, const char *sni)
{
    size_t sl = sni ? strlen(sni) : 0;
    unsigned char ext[300];
    size_t el = 0;
    if (sni) {
        ext[el++] = 0, ext[el++] = 0; /* type server_name */
        ext[el++] = (unsigned char)((sl + 5) >> 8), ext[el++] = (unsigned char)(sl + 5);
        ext[el++] = (unsigned char)((sl + 3) >> 8), ext[el++] = (unsigned char)(sl + 3);
        ext[el++] = 0;
        ext[el++] = (unsigned char)(sl >> 8), ext[el++] = (unsigned char)sl;
        memcpy(ext + el, sni, sl);
        el += sl;
    }
    unsigned char body[400];
    size_t n = 0;
    body[n++] = 3, body[n++] = 3;
    memset(body + n, 7, 32), n += 32;
    body[n++] = 0;                                  /* session id */
    body[n++] = 0, body[n++] = 2, body[n++] = 0x13, body[n++] = 1; /* one suite */
    body[n++] = 1, body[n++] = 0;                   /* compression: null */
    body[n++] = (unsigned char)(el >> 8), body[n++] = (unsigned char)el;
    memcpy(body + n, ext, el), n += el;
    size_t o = 0;
    b[o++] = 22, b[o++] = 3, b[o++] = 1;
    b[o++] = (unsigned char)((n + 4) >> 8), b[o++] = (unsigned char)(n + 4);
    b[o++] = 1, b[o++] = 0, b[o++] = (unsigned char)(n >> 8), b[o++] = (unsigned char)n;
    memcpy(b + o, body, n);
    return o + n;
}

TEST(tls_sni_is_found_and_short_or_odd_hellos_are_not)
{
    unsigned char b[600];
    char n[254];
    size_t len = hello(b, "API.github.com");
    CHECK(lb_peek_tls_sni(b, len, n, sizeof n) == 1);
    CHECK_STR(n, "api.github.com");
    for (size_t cut = 0; cut < len; cut++)
        CHECK(lb_peek_tls_sni(b, cut, n, sizeof n) == 0); /* a hello in pieces waits */
    len = hello(b, NULL);
    CHECK(lb_peek_tls_sni(b, len, n, sizeof n) == -1);
    len = hello(b, "bad name");
    CHECK(lb_peek_tls_sni(b, len, n, sizeof n) == -1);
    len = hello(b, "x.test");
    b[5] = 2; /* a ServerHello */
    CHECK(lb_peek_tls_sni(b, len, n, sizeof n) == -1);
    len = hello(b, "x.test");
    b[len - 7] = 0xff; /* the name's length past the extension */
    CHECK(lb_peek_tls_sni(b, len, n, sizeof n) == -1);
}

TEST(dns_question_is_read_and_answered)
{
    static const unsigned char q[] = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'A', 'p', 'i', 4, 't',
                                      'e', 's', 't', 0, 0, 1, 0, 1};
    lb_dns_q dq;
    CHECK(lb_dns_parse(q, sizeof q, &dq) == LB_OK);
    CHECK(dq.id == 0x1234 && dq.qtype == LB_DNS_A && dq.qlen == sizeof q);
    CHECK_STR(dq.name, "api.test");
    unsigned char out[LB_DNS_MSG_MAX];
    const unsigned char v4[2][4] = {{45, 1, 1, 10}, {45, 1, 1, 11}};
    size_t n = lb_dns_answer(q, &dq, LB_DNS_NOERROR, v4, 2, 30, out, sizeof out);
    CHECK(n == sizeof q + 32);
    CHECK(out[0] == 0x12 && out[1] == 0x34 && (out[2] & 0x80) && (out[3] & 0xf) == 0 && out[7] == 2);
    CHECK(!memcmp(out + sizeof q + 12, v4[0], 4) && !memcmp(out + sizeof q + 28, v4[1], 4));
    n = lb_dns_answer(q, &dq, LB_DNS_NXDOMAIN, v4, 2, 30, out, sizeof out);
    CHECK(n == sizeof q && (out[3] & 0xf) == LB_DNS_NXDOMAIN && out[7] == 0);
    CHECK(lb_dns_answer(q, &dq, LB_DNS_NOERROR, v4, 2, 30, out, 20) == 0);
    /* refused: a compression pointer, a response, two questions, class CH, short */
    unsigned char bad[sizeof q];
    memcpy(bad, q, sizeof q);
    bad[12] = 0xc0;
    CHECK(lb_dns_parse(bad, sizeof bad, &dq) != LB_OK);
    memcpy(bad, q, sizeof q);
    bad[2] |= 0x80;
    CHECK(lb_dns_parse(bad, sizeof bad, &dq) != LB_OK);
    memcpy(bad, q, sizeof q);
    bad[5] = 2;
    CHECK(lb_dns_parse(bad, sizeof bad, &dq) != LB_OK);
    memcpy(bad, q, sizeof q);
    bad[sizeof q - 1] = 3;
    CHECK(lb_dns_parse(bad, sizeof bad, &dq) != LB_OK);
    CHECK(lb_dns_parse(q, sizeof q - 3, &dq) != LB_OK);
    CHECK(lb_dns_parse(q, 11, &dq) != LB_OK);
}

int main(void)
{
    RUN(http_host_is_found_cut_and_lowercased);
    RUN(tls_sni_is_found_and_short_or_odd_hellos_are_not);
    RUN(dns_question_is_read_and_answered);
    return testlib_done();
}
