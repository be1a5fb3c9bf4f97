/* Unit tests for image references (server/common/image_ref.c): which
 * string names which image, the Docker defaults, the local names, the
 * caps, the sentences, and the file name of a reference. */
#include "testlib.h"

#include "common/image_ref.h"
#include "common/status.h"

#include <stdio.h>
#include <string.h>

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* The normalized text of s parsed with flags, or "ERR" */
static const char *norm(const char *s, unsigned flags)
{
    static char out[LB_IMAGE_REF_MAX + 1];
    lb_image_ref r;
    char msg[256];
    if (lb_image_ref_parse(s, flags, &r, msg, sizeof msg) != LB_OK)
        return "ERR";
    if (lb_image_ref_format(&r, out, sizeof out) != LB_OK)
        return "FMT";
    return out;
}

TEST(docker_hub_defaults)
{
    CHECK_STR(norm("debian", 0), "docker.io/library/debian:latest");
    CHECK_STR(norm("debian:12", 0), "docker.io/library/debian:12");
    CHECK_STR(norm("team/img", 0), "docker.io/team/img:latest");
    CHECK_STR(norm("docker.io/debian", 0), "docker.io/library/debian:latest");
    CHECK_STR(norm("index.docker.io/library/debian:bookworm", 0), "docker.io/library/debian:bookworm");
    CHECK_STR(norm("registry-1.docker.io/x/y:1", 0), "docker.io/x/y:1");
    CHECK_STR(norm("python:3.11-slim", 0), "docker.io/library/python:3.11-slim");
}

TEST(registry_hosts_and_ports)
{
    CHECK_STR(norm("127.0.0.1:5000/team/img:1", 0), "127.0.0.1:5000/team/img:1");
    CHECK_STR(norm("localhost/img", 0), "localhost/img:latest");
    CHECK_STR(norm("localhost:5000/a/b/c", 0), "localhost:5000/a/b/c:latest");
    CHECK_STR(norm("Registry.Example.COM/img:V1", 0), "registry.example.com/img:V1"); /* host lowercased, tag kept */
    CHECK_STR(norm("[::1]:5000/img", 0), "[::1]:5000/img:latest");
    CHECK_STR(norm("ghcr.io/org/repo-name/sub_dir/x.y:tag_1.2-3", 0), "ghcr.io/org/repo-name/sub_dir/x.y:tag_1.2-3");
    lb_image_ref r;
    char msg[256];
    CHECK(lb_image_ref_parse("127.0.0.1:5000/team/img:1", 0, &r, msg, sizeof msg) == LB_OK);
    CHECK_STR(r.host, "127.0.0.1:5000");
    CHECK_STR(r.repo, "team/img");
    CHECK_STR(r.tag, "1");
    CHECK_STR(r.digest, "");
}

TEST(digests)
{
    CHECK_STR(norm("debian@sha256:" HEX64, 0), "docker.io/library/debian@sha256:" HEX64);
    CHECK_STR(norm("r.io/a:t@sha256:" HEX64, 0), "r.io/a:t@sha256:" HEX64);
    CHECK_STR(norm("r.io/a@sha512:" HEX64, 0), "ERR");
    CHECK_STR(norm("r.io/a@sha256:" "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", 0), "ERR");
    CHECK_STR(norm("r.io/a@sha256:abc", 0), "ERR");
    CHECK_STR(norm("r.io/a@sha256:" HEX64 "@sha256:" HEX64, 0), "ERR");
}

TEST(local_names)
{
    CHECK_STR(norm("default", LB_IMAGE_REF_LOCAL), "default");
    CHECK_STR(norm("default:latest", LB_IMAGE_REF_LOCAL), "default"); /* one image */
    CHECK_STR(norm("myimg:v2", LB_IMAGE_REF_LOCAL), "myimg:v2");
    CHECK_STR(norm("team/img", LB_IMAGE_REF_LOCAL), "team/img");
    /* a registry is still a registry */
    CHECK_STR(norm("127.0.0.1:5000/team/img:1", LB_IMAGE_REF_LOCAL), "127.0.0.1:5000/team/img:1");
    CHECK_STR(norm("docker.io/debian", LB_IMAGE_REF_LOCAL), "docker.io/library/debian:latest");
    lb_image_ref r;
    char msg[256] = "";
    CHECK(lb_image_ref_parse("default", LB_IMAGE_REF_LOCAL, &r, msg, sizeof msg) == LB_OK);
    CHECK(lb_image_ref_is_local(&r));
    CHECK(lb_image_ref_parse("default", 0, &r, msg, sizeof msg) == LB_OK);
    CHECK(!lb_image_ref_is_local(&r));
    CHECK(lb_image_ref_parse("img@sha256:" HEX64, LB_IMAGE_REF_LOCAL, &r, msg, sizeof msg) == LB_E_INVAL);
    CHECK(strstr(msg, "local image name cannot carry a digest") != NULL);
}

TEST(refusals_say_why)
{
    struct { const char *in; const char *words; } cases[] = {
        {"", "empty"},
        {"Debian", "lowercase"},
        {"r.io/Team/img", "lowercase"},
        {"r.io//img", "empty path component"},
        {"r.io/img/", "empty path component"},
        {"/img", "empty path component"},
        {"r.io/img:", "tag"},
        {"r.io/img:-x", "tag"},
        {"r.io/img:.x", "tag"},
        {"r.io/img:a/b", "may hold only"},
        {"r.io:0/img", "port"},
        {"r.io:65536/img", "port"},
        {"r.io:05000/img", "port"},
        {"r.io:50a/img", "port"},
        {"r..io/img", "empty label"},
        {"-r.io/img", "starts with '-'"},
        {"r_x.io/img", "host name may hold"},
        {"[::1/img", "not closed"},
        {"r.io/im g", "may hold only"},
        {"r.io/img..x", "parts must start and end"},
        {"r.io/img___x", "parts must start and end"},
        {"r.io/_img", "parts must start and end"},
        {"r.io/img-", "parts must start and end"},
        {":tag", "no name"},
        {"img@", "digest"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lb_image_ref r;
        char msg[256] = "";
        int rc = lb_image_ref_parse(cases[i].in, 0, &r, msg, sizeof msg);
        if (rc == LB_OK || !strstr(msg, cases[i].words))
            printf("  case \"%s\": rc %d msg \"%s\"\n", cases[i].in, rc, msg);
        CHECK(rc != LB_OK);
        CHECK(strstr(msg, cases[i].words) != NULL);
    }
    /* separators the grammar allows */
    CHECK_STR(norm("r.io/a__b--c.d", 0), "r.io/a__b--c.d:latest");
}

TEST(caps)
{
    char big[LB_IMAGE_REF_INPUT_MAX + 10], msg[256];
    lb_image_ref r;
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(lb_image_ref_parse(big, LB_IMAGE_REF_LOCAL, &r, msg, sizeof msg) == LB_E_TOOBIG);
    /* a name of 255 is fine locally; with docker.io/library/ in front it is too long */
    char name[300];
    memset(name, 'a', 255);
    name[255] = '\0';
    CHECK(lb_image_ref_parse(name, LB_IMAGE_REF_LOCAL, &r, msg, sizeof msg) == LB_OK);
    CHECK(lb_image_ref_parse(name, 0, &r, msg, sizeof msg) == LB_E_TOOBIG);
    CHECK(strstr(msg, "longer than 255") != NULL);
    /* a tag of 128 is fine, 129 is not */
    char ref[400];
    char tag[130];
    memset(tag, 't', 129);
    tag[129] = '\0';
    snprintf(ref, sizeof ref, "r.io/a:%.128s", tag);
    CHECK(lb_image_ref_parse(ref, 0, &r, msg, sizeof msg) == LB_OK);
    snprintf(ref, sizeof ref, "r.io/a:%s", tag);
    CHECK(lb_image_ref_parse(ref, 0, &r, msg, sizeof msg) == LB_E_INVAL);
    /* a host label of 64 */
    char host[80];
    memset(host, 'h', 64);
    snprintf(host + 64, sizeof host - 64, ".io/a");
    CHECK(lb_image_ref_parse(host, 0, &r, msg, sizeof msg) == LB_E_INVAL);
    CHECK(strstr(msg, "63") != NULL);
}

TEST(file_names_round_trip)
{
    const char *refs[] = {"127.0.0.1:5000/team/img:1", "default", "myimg:v2", "team/img",
                          "r.io/a:t@sha256:" HEX64, "[::1]:5000/img", "docker.io/library/debian:12"};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        lb_image_ref r, back;
        char fname[LB_IMAGE_REF_MAX + 1], msg[256], a[LB_IMAGE_REF_MAX + 1], b[LB_IMAGE_REF_MAX + 1];
        CHECK(lb_image_ref_parse(refs[i], LB_IMAGE_REF_LOCAL, &r, msg, sizeof msg) == LB_OK);
        CHECK(lb_image_ref_file_name(&r, fname, sizeof fname) == LB_OK);
        CHECK(!strchr(fname, '/') && strcmp(fname, ".") && strcmp(fname, "..") && fname[0] != '.');
        CHECK(lb_image_ref_from_file_name(fname, &back, msg, sizeof msg) == LB_OK);
        CHECK(lb_image_ref_format(&r, a, sizeof a) == LB_OK && lb_image_ref_format(&back, b, sizeof b) == LB_OK);
        CHECK_STR(a, b);
    }
    lb_image_ref r;
    char fname[LB_IMAGE_REF_MAX + 1], msg[256];
    CHECK(lb_image_ref_parse("127.0.0.1:5000/team/img:1", 0, &r, msg, sizeof msg) == LB_OK);
    CHECK(lb_image_ref_file_name(&r, fname, sizeof fname) == LB_OK);
    CHECK_STR(fname, "127.0.0.1=5000+team+img=1");
    /* names we would not have written are refused */
    CHECK(lb_image_ref_from_file_name("..", &r, msg, sizeof msg) != LB_OK);
    CHECK(lb_image_ref_from_file_name("a/b", &r, msg, sizeof msg) != LB_OK);
    CHECK(lb_image_ref_from_file_name("default=latest", &r, msg, sizeof msg) != LB_OK); /* not normalized */
    CHECK(lb_image_ref_from_file_name("R.io+a", &r, msg, sizeof msg) != LB_OK);
    CHECK(lb_image_ref_from_file_name("", &r, msg, sizeof msg) != LB_OK);
    char small[8];
    CHECK(lb_image_ref_file_name(&r, small, sizeof small) == LB_E_TOOBIG);
}

TEST(tail_is_what_a_registry_url_uses)
{
    lb_image_ref r;
    char msg[256], tail[LB_IMAGE_REF_MAX + 1];
    CHECK(lb_image_ref_parse("127.0.0.1:5000/team/img:1", 0, &r, msg, sizeof msg) == LB_OK);
    CHECK(lb_image_ref_tail(&r, tail, sizeof tail) == LB_OK);
    CHECK_STR(tail, "team/img:1");
}

int main(void)
{
    RUN(docker_hub_defaults);
    RUN(registry_hosts_and_ports);
    RUN(digests);
    RUN(local_names);
    RUN(refusals_say_why);
    RUN(caps);
    RUN(file_names_round_trip);
    RUN(tail_is_what_a_registry_url_uses);
    return testlib_done();
}
