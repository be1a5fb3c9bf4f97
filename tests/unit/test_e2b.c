/* E2B's Connect framing (server/web/e2b_envelope.c): the one envelope of a
 * streaming request, the header of an answer, the HTTP status of a code. */
#include "testlib.h"

#include "common/status.h"
#include "web/e2b_envelope.h"
#include "web/e2b_port.h"

#include <stdio.h>
#include <string.h>

TEST(envelope_one_takes_exactly_one_message)
{
    const unsigned char ok[] = {0, 0, 0, 0, 2, '{', '}'};
    const char *msg = NULL;
    size_t n = 0;
    char why[200];
    CHECK(lb_e2b_envelope_one(ok, sizeof ok, 100, &msg, &n, why, sizeof why) == LB_OK);
    CHECK(n == 2 && msg == (const char *)ok + 5);
    const unsigned char empty[] = {0, 0, 0, 0, 0};
    CHECK(lb_e2b_envelope_one(empty, sizeof empty, 100, &msg, &n, why, sizeof why) == LB_OK && n == 0);
}

TEST(envelope_one_refuses_every_other_shape_with_a_sentence)
{
    const unsigned char shortb[] = {0, 0, 0};
    const unsigned char past[] = {0, 0, 0, 0, 9, '{', '}'};
    const unsigned char trail[] = {0, 0, 0, 0, 1, '{', '}'};
    const unsigned char gz[] = {1, 0, 0, 0, 2, '{', '}'};
    const unsigned char end[] = {2, 0, 0, 0, 2, '{', '}'};
    const unsigned char *cases[] = {shortb, past, trail, gz, end};
    size_t lens[] = {sizeof shortb, sizeof past, sizeof trail, sizeof gz, sizeof end};
    for (size_t i = 0; i < 5; i++) {
        const char *msg = NULL;
        size_t n = 0;
        char why[200] = "";
        CHECK(lb_e2b_envelope_one(cases[i], lens[i], 100, &msg, &n, why, sizeof why) == LB_E_INVAL);
        CHECK(why[0] && !msg);
    }
    const unsigned char big[] = {0, 0xff, 0xff, 0xff, 0xff};
    const char *msg = NULL;
    size_t n = 0;
    char why[200] = "";
    CHECK(lb_e2b_envelope_one(big, sizeof big, 100, &msg, &n, why, sizeof why) == LB_E_TOOBIG && strstr(why, "limit"));
}

TEST(envelope_header_is_flags_then_big_endian_length)
{
    unsigned char h[LB_E2B_ENV_HDR];
    lb_e2b_envelope_header(h, LB_E2B_FLAG_END, 0x01020304u);
    CHECK(h[0] == 2 && h[1] == 1 && h[2] == 2 && h[3] == 3 && h[4] == 4);
}

TEST(code_http_follows_the_connect_table)
{
    CHECK(lb_e2b_code_http("not_found") == 404);
    CHECK(lb_e2b_code_http("unauthenticated") == 401);
    CHECK(lb_e2b_code_http("invalid_argument") == 400);
    CHECK(lb_e2b_code_http("resource_exhausted") == 429);
    CHECK(lb_e2b_code_http("unimplemented") == 501);
    CHECK(lb_e2b_code_http("unavailable") == 503);
    CHECK(lb_e2b_code_http("no_such_code") == 500);
}

/* issue 17: a server's answer head, from inside a sandbox, into FastCGI's */
static int port_head(const char *in, char *out, size_t outsz, int *status)
{
    lb_buf b;
    lb_buf_init(&b, 4096);
    int rc = lb_e2b_port_head(in, strlen(in), &b, status);
    snprintf(out, outsz, "%s", b.data ? b.data : "");
    lb_buf_free(&b);
    return rc;
}

TEST(port_head_passes_the_answer_and_drops_what_nginx_would_obey)
{
    char out[4096];
    int st;
    CHECK(port_head("HTTP/1.0 201 Made\r\nX-Echo: yes\r\nConnection: keep-alive\r\nX-Accel-Redirect: /_artifacts/x\r\n"
                    "x-accel-buffering: no\r\nStatus: 200\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                    out, sizeof out, &st) == LB_OK);
    CHECK(st == 201);
    CHECK_STR(out, "Status: 201 Made\r\nX-Echo: yes\r\nContent-Length: 3\r\n\r\n");
    CHECK(port_head("HTTP/1.1 404\r\n\r\n", out, sizeof out, &st) == LB_OK && st == 404);
    CHECK_STR(out, "Status: 404 Not Found\r\n\r\n");
    /* not a header line: left out */
    CHECK(port_head("HTTP/1.1 200 OK\r\nno colon\r\n folded: x\r\nA: b\r\n\r\n", out, sizeof out, &st) == LB_OK);
    CHECK_STR(out, "Status: 200 OK\r\nA: b\r\n\r\n");
}

TEST(port_head_refuses_what_is_not_an_http_head)
{
    static const char *const bad[] = {
        "garbage\r\n\r\n", "HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 99 Odd\r\n\r\n", "HTTP/1.1 600 X\r\n\r\n",
        "HTTP/1.1 2000 X\r\n\r\n", "HTTP/1.1 20 X\r\n\r\n", "HTTP/1.1 200 OK\r\n", "HTTP/1.1 200 OK\n\n",
        "HTTP/1.1 200 OK\r\nX: a\rInjected: b\r\n\r\n", "HTTP/1.1 200 OK\r\nX: a\nY: b\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX: \x01\r\n\r\n", "HTTP/1.1 +20 OK\r\n\r\n", "HTTP/1.1200 OK\r\n\r\n", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[256];
        int st = 7;
        CHECK(port_head(bad[i], out, sizeof out, &st) == LB_E_PROTO && st == 0);
    }
}

int main(void)
{
    RUN(envelope_one_takes_exactly_one_message);
    RUN(envelope_one_refuses_every_other_shape_with_a_sentence);
    RUN(envelope_header_is_flags_then_big_endian_length);
    RUN(code_http_follows_the_connect_table);
    RUN(port_head_passes_the_answer_and_drops_what_nginx_would_obey);
    RUN(port_head_refuses_what_is_not_an_http_head);
    return testlib_done();
}
