/* Unit tests for the streaming multipart/form-data parser (server/web/multipart.h). */
#include "testlib.h"

#include "common/status.h"
#include "web/multipart.h"

#include <stdio.h>
#include <stdlib.h>

struct got {
    int nparts;
    char names[8][LB_MP_NAME_MAX + 1];
    char files[8][LB_PATH_MAX + 1];
    int is_file[8];
    char data[8][256];
    size_t len[8];
    int ended[8];
};

static int on_begin(void *arg, const lb_mp_part *p)
{
    struct got *g = arg;
    if (g->nparts >= 8)
        return 99;
    int i = g->nparts++;
    snprintf(g->names[i], sizeof g->names[i], "%s", p->name);
    snprintf(g->files[i], sizeof g->files[i], "%s", p->filename);
    g->is_file[i] = p->is_file;
    return 0;
}

static int on_data(void *arg, const lb_mp_part *p, const char *d, size_t n)
{
    (void)p;
    struct got *g = arg;
    int i = g->nparts - 1;
    if (g->len[i] + n < sizeof g->data[i]) {
        memcpy(g->data[i] + g->len[i], d, n);
        g->len[i] += n;
    }
    return 0;
}

static int on_end(void *arg, const lb_mp_part *p)
{
    (void)p;
    struct got *g = arg;
    g->ended[g->nparts - 1] = 1;
    return 0;
}

static const lb_mp_callbacks cbs = {on_begin, on_data, on_end};
static const lb_mp_limits lims = {.max_parts = 16, .max_header_bytes = 1024, .max_field_bytes = 1000,
                                  .max_file_bytes = 1 << 20, .max_total_bytes = 4 << 20};

/* Feeds body in chunks of `chunk` bytes (0 = all at once). */
static int parse(const char *boundary, const char *body, size_t n, size_t chunk, struct got *g,
                 const lb_mp_limits *l, char *err, size_t errsz)
{
    memset(g, 0, sizeof *g);
    lb_mp *m = NULL;
    int rc = lb_mp_new(boundary, l ? l : &lims, &cbs, g, &m);
    if (rc)
        return rc;
    if (!chunk)
        chunk = n ? n : 1;
    for (size_t off = 0; off < n && rc == LB_OK; off += chunk)
        rc = lb_mp_feed(m, body + off, n - off < chunk ? n - off : chunk);
    if (rc == LB_OK)
        rc = lb_mp_finish(m);
    if (err)
        snprintf(err, errsz, "%s", lb_mp_error(m));
    lb_mp_free(m);
    return rc;
}

#define GOOD_BODY                                                        \
    "preamble to ignore\r\n"                                             \
    "--XyZ\r\n"                                                          \
    "Content-Disposition: form-data; name=\"prompt\"\r\n"                \
    "\r\n"                                                               \
    "plot the\r\ntrend\r\n"                                              \
    "--XyZ\r\n"                                                          \
    "Content-Disposition: form-data; name=\"files\"; filename=\"data/a.csv\"\r\n" \
    "Content-Type: text/csv\r\n"                                         \
    "\r\n"                                                               \
    "x,y\r\n1,2\r--XyZ-not-yet\r\n"                                    \
    "--XyZ\r\n"                                                          \
    "Content-Disposition: form-data; name=\"files\"; filename=\"data/sub/b.bin\"\r\n" \
    "\r\n"                                                               \
    "\x00\x01\xff\r\n"                                                   \
    "--XyZ--\r\nepilogue"

TEST(good_body_all_chunk_sizes)
{
    static const char body[] = GOOD_BODY;
    size_t n = sizeof body - 1;
    for (size_t chunk = 0; chunk <= 40; chunk++) {
        struct got g;
        char err[320];
        int rc = parse("XyZ", body, n, chunk, &g, NULL, err, sizeof err);
        CHECK(rc == LB_OK);
        if (rc) {
            printf("  chunk %zu: %s\n", chunk, err);
            return;
        }
        CHECK(g.nparts == 3);
        CHECK_STR(g.names[0], "prompt");
        CHECK(!g.is_file[0]);
        CHECK(g.len[0] == 15 && !memcmp(g.data[0], "plot the\r\ntrend", 15));
        CHECK_STR(g.names[1], "files");
        CHECK_STR(g.files[1], "data/a.csv");
        CHECK(g.len[1] == 22 && !memcmp(g.data[1], "x,y\r\n1,2\r--XyZ-not-yet", 22));
        CHECK_STR(g.files[2], "data/sub/b.bin");
        CHECK(g.len[2] == 3 && !memcmp(g.data[2], "\x00\x01\xff", 3));
        CHECK(g.ended[0] && g.ended[1] && g.ended[2]);
    }
}

TEST(boundary_from_content_type)
{
    char b[LB_MP_BOUNDARY_MAX + 1];
    CHECK(lb_mp_boundary("multipart/form-data; boundary=----WebKitFormBoundaryA1b2", b, sizeof b) == LB_OK);
    CHECK_STR(b, "----WebKitFormBoundaryA1b2");
    CHECK(lb_mp_boundary("Multipart/Form-Data;charset=utf-8; boundary=\"a b:c\"", b, sizeof b) == LB_OK);
    CHECK_STR(b, "a b:c");
    CHECK(lb_mp_boundary("multipart/form-data", b, sizeof b) == LB_E_INVAL);
    CHECK(lb_mp_boundary("multipart/form-data; boundary=", b, sizeof b) == LB_E_INVAL);
    CHECK(lb_mp_boundary("multipart/form-data; boundary=\"unterminated", b, sizeof b) == LB_E_INVAL);
    CHECK(lb_mp_boundary("application/json; boundary=x", b, sizeof b) == LB_E_INVAL);
    CHECK(lb_mp_boundary("multipart/form-dataX; boundary=x", b, sizeof b) == LB_E_INVAL);
    char longb[200];
    memset(longb, 0, sizeof longb);
    strcpy(longb, "multipart/form-data; boundary=");
    memset(longb + strlen(longb), 'a', 71);
    CHECK(lb_mp_boundary(longb, b, sizeof b) == LB_E_INVAL);
    CHECK(lb_mp_is_form_data("multipart/form-data; boundary=x"));
    CHECK(!lb_mp_is_form_data("text/plain"));
    CHECK(!lb_mp_is_form_data(NULL));
}

TEST(missing_boundary_in_body)
{
    static const char body[] = "--Other\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--Other--\r\n";
    struct got g;
    CHECK(parse("XyZ", body, sizeof body - 1, 0, &g, NULL, NULL, 0) == LB_E_INVAL);
    CHECK(parse("XyZ", "", 0, 0, &g, NULL, NULL, 0) == LB_E_INVAL);
}

TEST(truncated_body)
{
    static const char body[] = GOOD_BODY;
    size_t full = sizeof body - 1;
    /* every prefix that stops before the closing boundary is refused */
    size_t close_at = (size_t)((const char *)memmem(body, full, "--XyZ--", 7) - body);
    for (size_t n = 0; n < close_at + 7; n += 3) {
        struct got g;
        char err[320];
        int rc = parse("XyZ", body, n, 7, &g, NULL, err, sizeof err);
        CHECK(rc == LB_E_INVAL);
        if (rc != LB_E_INVAL) {
            printf("  prefix %zu accepted\n", n);
            return;
        }
    }
    struct got g;
    CHECK(parse("XyZ", body, full, 5, &g, NULL, NULL, 0) == LB_OK);
}

static int one_file(const char *filename_header, char *out, size_t outsz)
{
    char body[1024];
    int n = snprintf(body, sizeof body,
                     "--b\r\nContent-Disposition: form-data; name=\"files\"; filename=%s\r\n\r\nhi\r\n--b--\r\n",
                     filename_header);
    struct got g;
    int rc = parse("b", body, (size_t)n, 0, &g, NULL, NULL, 0);
    if (rc == LB_OK)
        snprintf(out, outsz, "%s", g.files[0]);
    return rc;
}

TEST(filenames_refused_or_cleaned)
{
    char f[LB_PATH_MAX + 1];
    CHECK(one_file("\"../etc/passwd\"", f, sizeof f) == LB_E_INVAL);
    CHECK(one_file("\"a/../../x\"", f, sizeof f) == LB_E_INVAL);
    CHECK(one_file("\"/etc/passwd\"", f, sizeof f) == LB_E_INVAL);
    CHECK(one_file("\"C:\\\\x\\\\y.txt\"", f, sizeof f) == LB_E_INVAL); /* a backslash survives unquoting */
    CHECK(one_file("\"a%0Ab\"", f, sizeof f) == LB_E_INVAL);           /* a newline, HTML-escaped */
    CHECK(one_file("\"./dir//x.txt\"", f, sizeof f) == LB_OK);
    CHECK_STR(f, "dir/x.txt");
    CHECK(one_file("\"say %22hi%22.txt\"", f, sizeof f) == LB_OK);
    CHECK_STR(f, "say \"hi\".txt");
    CHECK(one_file("\"caf\xc3\xa9 100%.txt\"", f, sizeof f) == LB_OK);
    CHECK_STR(f, "caf\xc3\xa9 100%.txt");
    CHECK(one_file("plain.txt", f, sizeof f) == LB_OK);
    CHECK_STR(f, "plain.txt");
    CHECK(one_file("\"\"", f, sizeof f) == LB_OK); /* an empty file input */
    CHECK_STR(f, "");

    /* a NUL byte inside the header block */
    static const char nul[] = "--b\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a\0b\"\r\n\r\nhi\r\n--b--\r\n";
    struct got g;
    CHECK(parse("b", nul, sizeof nul - 1, 0, &g, NULL, NULL, 0) == LB_E_INVAL);
}

TEST(malformed_parts)
{
    struct got g;
    static const char nocd[] = "--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b--\r\n";
    CHECK(parse("b", nocd, sizeof nocd - 1, 0, &g, NULL, NULL, 0) == LB_E_INVAL);
    static const char noname[] = "--b\r\nContent-Disposition: form-data; filename=\"x\"\r\n\r\nhi\r\n--b--\r\n";
    CHECK(parse("b", noname, sizeof noname - 1, 0, &g, NULL, NULL, 0) == LB_E_INVAL);
    static const char attach[] = "--b\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nhi\r\n--b--\r\n";
    CHECK(parse("b", attach, sizeof attach - 1, 0, &g, NULL, NULL, 0) == LB_E_INVAL);
    static const char badline[] = "--bX\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nhi\r\n--b--\r\n";
    CHECK(parse("b", badline, sizeof badline - 1, 0, &g, NULL, NULL, 0) == LB_E_INVAL);
    static const char hugeh[] = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: ";
    char big[3000];
    size_t n = (size_t)snprintf(big, sizeof big, "%s", hugeh);
    memset(big + n, 'p', 2000);
    n += 2000;
    CHECK(parse("b", big, n, 100, &g, NULL, NULL, 0) == LB_E_INVAL);
}

TEST(oversize_is_toobig)
{
    struct got g;
    char err[320];
    lb_mp_limits l = lims;
    l.max_file_bytes = 10;
    static const char body[] = "--b\r\nContent-Disposition: form-data; name=\"files\"; filename=\"x\"\r\n\r\n"
                               "0123456789A\r\n--b--\r\n";
    CHECK(parse("b", body, sizeof body - 1, 3, &g, &l, err, sizeof err) == LB_E_TOOBIG);
    CHECK(strstr(err, "larger than") != NULL);
    l = lims;
    l.max_field_bytes = 4;
    static const char field[] = "--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nhello\r\n--b--\r\n";
    CHECK(parse("b", field, sizeof field - 1, 0, &g, &l, NULL, 0) == LB_E_TOOBIG);
    l = lims;
    l.max_total_bytes = 20;
    CHECK(parse("b", field, sizeof field - 1, 4, &g, &l, NULL, 0) == LB_E_TOOBIG);
    l = lims;
    l.max_parts = 1;
    static const char two[] = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n"
                              "--b\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\n2\r\n--b--\r\n";
    CHECK(parse("b", two, sizeof two - 1, 0, &g, &l, NULL, 0) == LB_E_TOOBIG);
    CHECK(parse("b", two, sizeof two - 1, 0, &g, NULL, NULL, 0) == LB_OK);
    CHECK(g.nparts == 2);
}

static int count_data(void *arg, const lb_mp_part *p, const char *d, size_t n)
{
    (void)p;
    (void)d;
    *(uint64_t *)arg += n;
    return 0;
}

TEST(large_file_streams)
{
    /* 3 MiB of data that repeatedly almost matches the delimiter */
    size_t fsz = 3u << 20;
    const char *head = "--bnd\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.bin\"\r\n\r\n";
    const char *tail = "\r\n--bnd--\r\n";
    size_t n = strlen(head) + fsz + strlen(tail);
    char *body = malloc(n);
    CHECK(body != NULL);
    if (!body)
        return;
    memcpy(body, head, strlen(head));
    for (size_t i = 0; i < fsz; i++)
        body[strlen(head) + i] = "\r\n--bn"[i % 6];
    memcpy(body + strlen(head) + fsz, tail, strlen(tail));
    lb_mp *m = NULL;
    uint64_t seen = 0;
    lb_mp_limits l = lims;
    l.max_file_bytes = 4u << 20;
    l.max_total_bytes = 8u << 20;
    lb_mp_callbacks count = {.part_data = count_data};
    CHECK(lb_mp_new("bnd", &l, &count, &seen, &m) == LB_OK);
    int rc = LB_OK;
    for (size_t off = 0; off < n && rc == LB_OK; off += 65536)
        rc = lb_mp_feed(m, body + off, n - off < 65536 ? n - off : 65536);
    CHECK(rc == LB_OK);
    CHECK(lb_mp_finish(m) == LB_OK);
    CHECK(seen == fsz);
    lb_mp_free(m);
    free(body);
}

int main(void)
{
    RUN(good_body_all_chunk_sizes);
    RUN(boundary_from_content_type);
    RUN(missing_boundary_in_body);
    RUN(truncated_body);
    RUN(filenames_refused_or_cleaned);
    RUN(malformed_parts);
    RUN(oversize_is_toobig);
    RUN(large_file_streams);
    return testlib_done();
}
