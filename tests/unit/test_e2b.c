/* E2B's Connect framing (server/e2b/e2b_envelope.c): the one envelope of a
 * streaming request, the header of an answer, the HTTP status of a code. */
#include "testlib.h"

#include "common/status.h"
#include "e2b/e2b_entry.h"
#include "e2b/e2b_envelope.h"
#include "e2b/e2b_gzip.h"
#include "e2b/e2b_network.h"
#include "e2b/e2b_sign.h"
#include "e2b/e2b_port.h"
#include "e2b/e2b_pty.h"
#include "e2b/e2b_watch.h"

#include <stdio.h>
#include <stdlib.h>
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

/* E2B's protocol: a server's answer head, from inside a sandbox, into FastCGI's */
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

static long long body_len(const char *head, int status, int is_head, int *rc)
{
    long long n = -7;
    *rc = lb_e2b_port_body_len(head, strlen(head), status, is_head, &n);
    return n;
}

/* the relay ends with the answer: a server keeping its connection open
 * after it (despite "Connection: close") held a relay's place for a minute */
TEST(port_body_ends_at_its_length)
{
    int rc;
    CHECK(body_len("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", 200, 0, &rc) == 4 && rc == LB_OK);
    CHECK(body_len("HTTP/1.1 200 OK\r\ncontent-length:  12 \r\nX: y\r\n\r\n", 200, 0, &rc) == 12 && rc == LB_OK);
    CHECK(body_len("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 200, 0, &rc) == 0 && rc == LB_OK);
    /* the same value twice is one length (RFC 9112 6.3) */
    CHECK(body_len("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 200, 0, &rc) == 5 &&
          rc == LB_OK);
    /* no length, or a transfer coding: until the server closes */
    CHECK(body_len("HTTP/1.0 200 OK\r\nX: y\r\n\r\n", 200, 0, &rc) == -1 && rc == LB_OK);
    CHECK(body_len("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n", 200, 0, &rc) ==
              -1 &&
          rc == LB_OK);
    /* no body: HEAD, 1xx, 204, 304, whatever the length says */
    CHECK(body_len("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", 200, 1, &rc) == 0 && rc == LB_OK);
    CHECK(body_len("HTTP/1.1 204 No Content\r\nContent-Length: 4\r\n\r\n", 204, 0, &rc) == 0 && rc == LB_OK);
    CHECK(body_len("HTTP/1.1 304 Not Modified\r\nContent-Length: 4\r\n\r\n", 304, 0, &rc) == 0 && rc == LB_OK);
    /* a length that is not one number: refused (a 502), never guessed */
    static const char *const bad[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387905\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(body_len(bad[i], 200, 0, &rc) == -1 && rc == LB_E_PROTO);
}

/* E2B's protocol: EntryInfo as envd answers it (Go's FileMode.String, protobuf's Timestamp) */
TEST(entry_permissions_follow_go_file_mode_string)
{
    static const struct { int kind; uint32_t mode; const char *want; } cases[] = {
        {LBSB_KIND_DIR, 0755, "drwxr-xr-x"},     {LBSB_KIND_FILE, 0644, "-rw-r--r--"},
        {LBSB_KIND_SYMLINK, 0777, "Lrwxrwxrwx"}, {LBSB_KIND_DIR, 01777, "dtrwxrwxrwx"},
        {LBSB_KIND_FILE, 04755, "urwxr-xr-x"},   {LBSB_KIND_CHARDEV, 0666, "Dcrw-rw-rw-"},
        {LBSB_KIND_FIFO, 0600, "prw-------"},    {LBSB_KIND_FILE, 02640, "grw-r-----"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char p[32];
        lb_e2b_perm_string(cases[i].kind, cases[i].mode, p, sizeof p);
        CHECK_STR(p, cases[i].want);
    }
}

TEST(entry_time_is_rfc3339_utc_within_protobuf_range)
{
    char t[48];
    CHECK(lb_e2b_rfc3339(1700000000, 0, t, sizeof t) == 0);
    CHECK_STR(t, "2023-11-14T22:13:20Z");
    CHECK(lb_e2b_rfc3339(0, 5, t, sizeof t) == 0);
    CHECK_STR(t, "1970-01-01T00:00:00.000000005Z");
    CHECK(lb_e2b_rfc3339(253402300800LL, 0, t, sizeof t) == -1);   /* year 10000 */
    CHECK(lb_e2b_rfc3339(0, 1000000000u, t, sizeof t) == -1);
}

TEST(entry_carries_metadata_and_symlink_target)
{
    lbsb_entry e = {.type = 3, .size = 0, .has_meta = 1, .kind = LBSB_KIND_SYMLINK, .mode = 0777, .uid = 0,
                    .gid = 1000, .mtime_s = 1700000000, .target = (char *)"/etc/hosts"};
    cJSON *o = lb_e2b_entry("/testbed/l", &e);
    CHECK(o != NULL);
    char *js = o ? cJSON_PrintUnformatted(o) : NULL;
    CHECK(js && strstr(js, "\"name\":\"l\"") && strstr(js, "\"type\":\"FILE_TYPE_SYMLINK\"") &&
          strstr(js, "\"mode\":511") && strstr(js, "\"permissions\":\"Lrwxrwxrwx\"") &&
          strstr(js, "\"owner\":\"root\"") && strstr(js, "\"group\":\"1000\"") &&
          strstr(js, "\"modifiedTime\":\"2023-11-14T22:13:20Z\"") &&
          strstr(js, "\"symlinkTarget\":\"/etc/hosts\""));
    free(js);
    cJSON_Delete(o);
    /* an older sandboxd's answer: no mode, time or target, never made up */
    lbsb_entry old = {.type = 1, .size = 7};
    o = lb_e2b_entry("/a", &old);
    js = o ? cJSON_PrintUnformatted(o) : NULL;
    CHECK(js && strstr(js, "FILE_TYPE_FILE") && strstr(js, "\"size\":\"7\"") && !strstr(js, "modifiedTime") &&
          !strstr(js, "permissions"));
    free(js);
    cJSON_Delete(o);
}

/* E2B's protocol: the watcher's lines are hostile (the sandbox's code can replace it) */
TEST(watch_line_parses_events_and_refuses_the_rest)
{
    char k, name[64];
    CHECK(lb_e2b_watch_line("R", 1, &k, name, sizeof name) == 0 && k == 'R' && !name[0]);
    CHECK(lb_e2b_watch_line("C a/b", 5, &k, name, sizeof name) == 0 && k == 'C');
    CHECK_STR(name, "a/b");
    CHECK(lb_e2b_watch_line("N q\\nr\\\\", 8, &k, name, sizeof name) == 0 && k == 'N');
    CHECK_STR(name, "q\nr\\");
    CHECK_STR(lb_e2b_watch_type('M'), "EVENT_TYPE_CHMOD");
    CHECK(lb_e2b_watch_type('Z') == NULL);
    static const char *const bad[] = {"", "Z", "Z x", "C", "C ", "Cx", "C a\\", "C a\\t", "R x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(lb_e2b_watch_line(bad[i], strlen(bad[i]), &k, name, sizeof name) == -1);
    CHECK(lb_e2b_watch_line("", 1, &k, name, sizeof name) == -1); /* a NUL alone is no letter */
    const char nul[] = {'C', ' ', 'a', '\0', 'b'};
    CHECK(lb_e2b_watch_line(nul, sizeof nul, &k, name, sizeof name) == -1);
    char longl[100];
    memset(longl, 'x', sizeof longl);
    longl[0] = 'C';
    longl[1] = ' ';
    CHECK(lb_e2b_watch_line(longl, sizeof longl, &k, name, sizeof name) == -1); /* over namesz */
}

/* E2B's protocol: the pty's size and the frames its relay reads */
TEST(pty_size_and_frames)
{
    int cols = 0, rows = 0;
    cJSON *ok = cJSON_Parse("{\"size\":{\"cols\":132,\"rows\":50}}");
    CHECK(lb_e2b_pty_size(ok, &cols, &rows) == 0 && cols == 132 && rows == 50);
    static const char *const bad[] = {"{}", "{\"size\":{\"cols\":0,\"rows\":5}}",
                                      "{\"size\":{\"cols\":5,\"rows\":10001}}", "{\"size\":{\"cols\":\"5\",\"rows\":5}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *b = cJSON_Parse(bad[i]);
        CHECK(lb_e2b_pty_size(b, &cols, &rows) == -1);
        cJSON_Delete(b);
    }
    cJSON_Delete(ok);
    char *f = NULL;
    size_t n = 0;
    CHECK(lb_e2b_pty_frame('d', "hi\n", 3, 0, 0, &f, &n) == 0 && n == 8 && !memcmp(f, "d\0\0\0\3hi\n", 8));
    free(f);
    CHECK(lb_e2b_pty_frame('r', NULL, 0, 0x102, 50, &f, &n) == 0 && n == 9 && !memcmp(f, "r\0\0\0\4\1\2\0\62", 9));
    free(f);
    CHECK(lb_e2b_pty_frame('d', "x", LBSB_PTY_FRAME_MAX + 1, 0, 0, &f, &n) == -1 && !f);
    CHECK(lb_e2b_pty_frame('q', "x", 1, 0, 0, &f, &n) == -1);
}

/* envd gives a symlink's target as the absolute path it resolves to */
TEST(link_target_is_absolute_and_clean)
{
    char out[256];
    lb_e2b_link_abs("/tmp/d/link", "test_file.txt", out, sizeof out);
    CHECK_STR(out, "/tmp/d/test_file.txt");
    lb_e2b_link_abs("/tmp/d/link", "../d/./x//y", out, sizeof out);
    CHECK_STR(out, "/tmp/d/x/y");
    lb_e2b_link_abs("/tmp/d/link", "/etc/../etc/hosts/", out, sizeof out);
    CHECK_STR(out, "/etc/hosts");
    lb_e2b_link_abs("/l", "../../..", out, sizeof out);
    CHECK_STR(out, "/");
    lb_e2b_link_abs("/a/l", "b", out, 4); /* cut short: never past out */
    CHECK(strlen(out) < 4);
}

/* sandboxd's write renames ".<leaf>.lbsd-<16 hex>" onto <leaf> */
TEST(watch_temporary_names_map_to_the_file)
{
    char out[128];
    CHECK(lb_e2b_watch_tmp_final(".f.txt.lbsd-0123456789abcdef", out, sizeof out) == 1);
    CHECK_STR(out, "f.txt");
    CHECK(lb_e2b_watch_tmp_final("sub/.x.lbsd-0123456789abcdef", out, sizeof out) == 1);
    CHECK_STR(out, "sub/x");
    CHECK(lb_e2b_watch_tmp_final("f.txt", out, sizeof out) == 0);
    CHECK(lb_e2b_watch_tmp_final(".f.lbsd-0123456789abcdeg", out, sizeof out) == 0);
    CHECK(lb_e2b_watch_tmp_final("..lbsd-0123456789abcdef", out, sizeof out) == 0);
    CHECK(lb_e2b_watch_tmp_final("f.lbsd-0123456789abcdef", out, sizeof out) == 0);
    CHECK(lb_e2b_watch_tmp_final(".f.txt.lbsd-0123456789abcdef", out, 3) == 0);
}

TEST(gzip_round_trip_caps_and_refusals)
{
    char data[5000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)("abcabd"[i % 6]);
    lb_buf gz, back;
    lb_buf_init(&gz, sizeof data + 4096);
    lb_buf_init(&back, sizeof data);
    CHECK(lb_e2b_gzip(data, sizeof data, &gz) == LB_OK);
    CHECK(gz.len > 18 && (unsigned char)gz.data[0] == 0x1f && (unsigned char)gz.data[1] == 0x8b && gz.len < 1000);
    CHECK(lb_e2b_gunzip(gz.data, gz.len, &back) == LB_OK && back.len == sizeof data &&
          !memcmp(back.data, data, sizeof data));
    lb_buf small;
    lb_buf_init(&small, 100); /* a bomb: more than the cap once unpacked */
    CHECK(lb_e2b_gunzip(gz.data, gz.len, &small) == LB_E_TOOBIG);
    lb_buf_reset(&back);
    CHECK(lb_e2b_gunzip(data, sizeof data, &back) == LB_E_INVAL);                 /* not gzip */
    CHECK(lb_e2b_gunzip(gz.data, gz.len / 2, &back) == LB_E_INVAL);               /* cut short */
    lb_buf empty;
    lb_buf_init(&empty, 4096);
    CHECK(lb_e2b_gzip("", 0, &empty) == LB_OK && empty.len > 0);
    lb_buf_reset(&back);
    CHECK(lb_e2b_gunzip(empty.data, empty.len, &back) == LB_OK && back.len == 0);
    lb_buf_free(&gz);
    lb_buf_free(&back);
    lb_buf_free(&small);
    lb_buf_free(&empty);
    CHECK(lb_e2b_accepts_gzip("gzip"));
    CHECK(lb_e2b_accepts_gzip("br, GZip;q=0.5"));
    CHECK(lb_e2b_accepts_gzip("*"));
    CHECK(!lb_e2b_accepts_gzip("gzip;q=0"));
    CHECK(!lb_e2b_accepts_gzip("br, deflate"));
    CHECK(!lb_e2b_accepts_gzip("gzipx"));
    CHECK(!lb_e2b_accepts_gzip(NULL));
}

/* the values Python's hashlib and base64 give for envd's formula */
TEST(signature_is_envds)
{
    char sig[LB_E2B_SIG_MAX];
    CHECK(lb_e2b_signature("/tmp/a b.txt", "read", "", "tok123", NULL, sig, sizeof sig) == LB_OK);
    CHECK_STR(sig, "v1_Uk64tWsrf0RqcyDI8e0S1bgSVKw3FZFa1TQcGNTr2M4");
    CHECK(lb_e2b_signature("p", "write", "user", "tok", "1700000000", sig, sizeof sig) == LB_OK);
    CHECK_STR(sig, "v1_LZ1x6+K9ZaHGVVPn3v8W6jQvwH648jT2yMGw3c4Fuzw");
}

/* the sandbox's /etc/passwd and /etc/group are its code's to write */
TEST(owner_names_from_the_sandbox_files)
{
    const char *pw = "root:x:0:0:root:/root:/bin/bash\nbad;name:x:7:7\n-dash:x:8:8\nuser:x:1000:1000::/home/user:/bin/bash\n"
                     "machine$:x:9:9\nlong" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:x:10:10\nnocolon 11\ntwo:x:1000:1\nlast:x:12";
    char out[40];
    CHECK(lb_e2b_id_lookup(pw, strlen(pw), 1000, out, sizeof out) == 1);
    CHECK_STR(out, "user"); /* the first line of the id */
    CHECK(lb_e2b_id_lookup(pw, strlen(pw), 0, out, sizeof out) == 1);
    CHECK_STR(out, "root");
    CHECK(lb_e2b_id_lookup(pw, strlen(pw), 9, out, sizeof out) == 1);
    CHECK_STR(out, "machine$");
    CHECK(lb_e2b_id_lookup(pw, strlen(pw), 7, out, sizeof out) == 0);  /* not a name */
    CHECK(lb_e2b_id_lookup(pw, strlen(pw), 8, out, sizeof out) == 0);  /* starts with '-' */
    CHECK(lb_e2b_id_lookup(pw, strlen(pw), 10, out, sizeof out) == 0); /* over 32 bytes */
    CHECK(lb_e2b_id_lookup(pw, strlen(pw), 11, out, sizeof out) == 0);
    CHECK(lb_e2b_id_lookup(pw, strlen(pw), 12, out, sizeof out) == 0); /* no ':' after the id */
    CHECK(lb_e2b_id_lookup(pw, strlen(pw), 1000, out, 4) == 0);        /* does not fit */
    CHECK(lb_e2b_id_lookup(NULL, 0, 1000, out, sizeof out) == 0);
    CHECK(lb_e2b_id_lookup("a:x:10000000000:", 16, 1410065408, out, sizeof out) == 0); /* no wrap */
}

/* E2B's network options as a policy: E2B's SDK bodies, and what each
 * becomes (docs/NETWORK.md's table), with E2B's precedence. */
static char *mapped(const char *inet, const char *net, int *has_fb)
{
    cJSON *i = inet ? cJSON_Parse(inet) : NULL, *n = net ? cJSON_Parse(net) : NULL, *out = NULL, *fb = NULL;
    char err[300] = "";
    char *text = NULL;
    char *vals = NULL;
    if (lb_e2b_network_map(i, n, &out, &fb, &vals, err, sizeof err) == LB_OK)
        text = cJSON_PrintUnformatted(out);
    else
        text = strdup(err);
    *has_fb = fb != NULL;
    free(vals);
    cJSON_Delete(i);
    cJSON_Delete(n);
    cJSON_Delete(out);
    cJSON_Delete(fb);
    return text;
}

TEST(network_map_follows_e2b)
{
    static const struct {
        const char *inet, *net, *want;
        int fb;
    } cases[] = {
        {"true", NULL, "{\"allow\":[\"*\"],\"deny\":[],\"precedence\":\"allow\"}", 1},
        {NULL, "{}", "{\"allow\":[\"*\"],\"deny\":[],\"precedence\":\"allow\"}", 1},
        {"false", NULL, "{\"allow\":[],\"deny\":[],\"precedence\":\"allow\"}", 1},
        {"true", "{\"denyOut\":[\"8.8.8.8\"]}",
         "{\"allow\":[\"*\"],\"deny\":[\"8.8.8.8\"],\"precedence\":\"allow\"}", 0},
        {"true", "{\"denyOut\":[\"0.0.0.0/0\"],\"allowOut\":[\"1.1.1.1\",\"8.8.8.8\"]}",
         "{\"allow\":[\"1.1.1.1\",\"8.8.8.8\"],\"deny\":[],\"precedence\":\"allow\"}", 0},
        {"true", "{\"denyOut\":[\"1.1.1.0/24\"],\"allowOut\":[\"1.1.1.1\"]}",
         "{\"allow\":[\"*\",\"1.1.1.1\"],\"deny\":[\"1.1.1.0/24\"],\"precedence\":\"allow\"}", 0},
        {"false", "{\"allowOut\":[\"a.com\"]}", "{\"allow\":[\"a.com\"],\"deny\":[],\"precedence\":\"allow\"}", 0},
        {"\"yes\"", NULL, "allow_internet_access must be true or false.", 0},
        {NULL, "[1]", "network must be an object {allowOut, denyOut, ...}.", 0},
        {NULL, "{\"allowOut\":\"a.com\"}", "allowOut and denyOut must be lists of rules (docs/NETWORK.md).", 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int fb = -1;
        char *got = mapped(cases[k].inet, cases[k].net, &fb);
        CHECK(got && !strcmp(got, cases[k].want));
        CHECK(fb == cases[k].fb);
        if (got && strcmp(got, cases[k].want))
            fprintf(stderr, "case %zu: %s\n", k, got);
        free(got);
    }
    int fb;
    char *e = mapped(NULL, "{\"egressProxy\":{\"address\":\"p:1080\"}}", &fb);
    CHECK(e && strstr(e, "egressProxy"));
    free(e);
}

/* E2B's network.rules: the policy names transform secrets, their values
 * go apart (for sandboxd's pipe only); every shape llmbox does not have is
 * refused with a sentence. */
TEST(network_rules_become_transform_secrets)
{
    cJSON *n = cJSON_Parse("{\"allowOut\":[\"api.test\"],\"denyOut\":[\"0.0.0.0/0\"],\"rules\":{\"api.test\":"
                           "[{\"transform\":{\"headers\":{\"X-Test-Token\":\"v1\",\"Authorization\":\"Bearer t\"}}}]}}");
    cJSON *out = NULL, *fb = NULL;
    char *vals = NULL, err[300] = "";
    CHECK(lb_e2b_network_map(NULL, n, &out, &fb, &vals, err, sizeof err) == LB_OK);
    char *pol = cJSON_PrintUnformatted(out);
    CHECK(pol && strstr(pol, "\"secrets\":[\"e2b.t0\",\"e2b.t1\"]") && !strstr(pol, "v1"));
    CHECK(vals && strstr(vals, "\"name\":\"e2b.t0\"") && strstr(vals, "\"hosts\":\"api.test\"") &&
          strstr(vals, "\"header\":\"X-Test-Token: {value}\"") && strstr(vals, "\"value\":\"v1\""));
    CHECK(lb_e2b_transforms_admit(vals, "api.test", NULL, err, sizeof err) == LB_OK);
    CHECK(lb_e2b_transforms_admit(vals, "other.test", NULL, err, sizeof err) == LB_E_DENIED &&
          strstr(err, "api.test"));
    free(pol);
    free(vals);
    cJSON_Delete(out);
    cJSON_Delete(fb);
    /* an update cannot set them */
    CHECK(lb_e2b_network_map(NULL, n, &out, &fb, NULL, err, sizeof err) == LB_E_INVAL && strstr(err, "created"));
    cJSON_Delete(n);
    static const char *const bad[] = {
        "{\"rules\":[1]}", "{\"rules\":{\"1.2.3.4\":[]}}", "{\"rules\":{\"a.test:443\":[]}}",
        "{\"rules\":{\"a.test\":{}}}", "{\"rules\":{\"a.test\":[{\"transform\":{\"body\":\"x\"}}]}}",
        "{\"rules\":{\"a.test\":[{\"match\":1}]}}",
        "{\"rules\":{\"a.test\":[{\"transform\":{\"headers\":{\"Host\":\"x\"}}}]}}",
        "{\"rules\":{\"a.test\":[{\"transform\":{\"headers\":{\"A B\":\"x\"}}}]}}",
        "{\"rules\":{\"a.test\":[{\"transform\":{\"headers\":{\"X\":\"a\\r\\nEvil: 1\"}}}]}}",
        "{\"rules\":{\"a.test\":[{\"transform\":{\"headers\":{\"X\":7}}}]}}",
        "{\"rules\":{\"a.test\":[{\"transform\":{\"headers\":{\"X\":\"${e2b.identity.tokens.aws}\"}}}]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = cJSON_Parse(bad[i]);
        err[0] = '\0';
        vals = NULL;
        int rc = n ? lb_e2b_network_map(NULL, n, &out, &fb, &vals, err, sizeof err) : -1;
        CHECK(rc == LB_E_INVAL && err[0] && !vals && !out);
        if (rc != LB_E_INVAL)
            fprintf(stderr, "bad %zu accepted\n", i);
        cJSON_Delete(n);
    }
    /* at most 16 headers in all */
    char many[4096];
    size_t k = (size_t)snprintf(many, sizeof many, "{\"rules\":{\"a.test\":[{\"transform\":{\"headers\":{");
    for (int i = 0; i < 17; i++)
        k += (size_t)snprintf(many + k, sizeof many - k, "%s\"X-%d\":\"v\"", i ? "," : "", i);
    snprintf(many + k, sizeof many - k, "}}}]}}");
    n = cJSON_Parse(many);
    CHECK(n && lb_e2b_network_map(NULL, n, &out, &fb, &vals, err, sizeof err) == LB_E_INVAL && strstr(err, "16"));
    cJSON_Delete(n);
}

TEST(mask_request_host_is_checked_and_applied)
{
    static const char *const good[] = {"custom-host.example.com:${PORT}", "${PORT}-sandboxid.e2b.app", "h:8080",
                                       "h", "a_b.c-d"};
    static const char *const bad[] = {"", "a b", "a\r\nX-Evil: 1", "h:", ":80", "h:0", "h:65536", "h:${PORT}x",
                                      "h:${PORT}${PORT}", "h:1:2", "[::1]:80", "h/x", "h\t"};
    char out[LB_SBX_MASK_HOST_MAX], err[300], host[LB_SBX_MASK_HOST_MAX];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cJSON *v = cJSON_CreateString(good[i]);
        CHECK(lb_e2b_mask_host_check(v, out, sizeof out, err, sizeof err) == LB_OK && !strcmp(out, good[i]));
        cJSON_Delete(v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *v = cJSON_CreateString(bad[i]);
        err[0] = '\0';
        CHECK(lb_e2b_mask_host_check(v, out, sizeof out, err, sizeof err) == LB_E_INVAL && strstr(err, "maskRequestHost"));
        cJSON_Delete(v);
    }
    char longm[300];
    memset(longm, 'a', sizeof longm - 1);
    longm[sizeof longm - 1] = '\0';
    cJSON *v = cJSON_CreateString(longm);
    CHECK(lb_e2b_mask_host_check(v, out, sizeof out, err, sizeof err) == LB_E_INVAL);
    cJSON_Delete(v);
    v = cJSON_CreateNumber(1);
    CHECK(lb_e2b_mask_host_check(v, out, sizeof out, err, sizeof err) == LB_E_INVAL);
    cJSON_Delete(v);
    CHECK(lb_e2b_mask_host_check(NULL, out, sizeof out, err, sizeof err) == LB_OK && out[0] == '\0');
    lb_e2b_mask_host_apply("custom-host.example.com:${PORT}", 8080, host, sizeof host);
    CHECK(!strcmp(host, "custom-host.example.com:8080"));
    lb_e2b_mask_host_apply("${PORT}-x.${PORT}", 3, host, sizeof host);
    CHECK(!strcmp(host, "3-x.3"));
}

int main(void)
{
    RUN(envelope_one_takes_exactly_one_message);
    RUN(envelope_one_refuses_every_other_shape_with_a_sentence);
    RUN(envelope_header_is_flags_then_big_endian_length);
    RUN(code_http_follows_the_connect_table);
    RUN(port_head_passes_the_answer_and_drops_what_nginx_would_obey);
    RUN(port_head_refuses_what_is_not_an_http_head);
    RUN(port_body_ends_at_its_length);
    RUN(entry_permissions_follow_go_file_mode_string);
    RUN(entry_time_is_rfc3339_utc_within_protobuf_range);
    RUN(entry_carries_metadata_and_symlink_target);
    RUN(watch_line_parses_events_and_refuses_the_rest);
    RUN(pty_size_and_frames);
    RUN(link_target_is_absolute_and_clean);
    RUN(watch_temporary_names_map_to_the_file);
    RUN(gzip_round_trip_caps_and_refusals);
    RUN(signature_is_envds);
    RUN(owner_names_from_the_sandbox_files);
    RUN(network_map_follows_e2b);
    RUN(network_rules_become_transform_secrets);
    RUN(mask_request_host_is_checked_and_applied);
    return testlib_done();
}
