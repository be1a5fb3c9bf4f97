/* Unit tests for the registry client's pure parts: the WWW-Authenticate
 * challenge (server/images/registry_auth.c), the operator's credentials
 * from the environment or a Docker-style auth file, and which registries
 * may be spoken to over plain HTTP (server/images/registry_http.c). The
 * wire side is tests/integration/test_registry.py. */
#include "testlib.h"

#include "common/status.h"
#include "images/registry_auth.h"
#include "images/registry_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse(const char *s, lb_reg_challenge *c, char *msg, size_t msgsz)
{
    return lb_reg_challenge_parse(s, strlen(s), c, msg, msgsz);
}

TEST(bearer_challenge_of_docker_hub)
{
    lb_reg_challenge c;
    char msg[256];
    CHECK(parse("Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
                "scope=\"repository:library/debian:pull\"", &c, msg, sizeof msg) == LB_OK);
    CHECK(c.bearer);
    CHECK_STR(c.realm, "https://auth.docker.io/token");
    CHECK_STR(c.service, "registry.docker.io");
    CHECK_STR(c.scope, "repository:library/debian:pull");
}

TEST(challenge_spellings)
{
    lb_reg_challenge c;
    char msg[256];
    CHECK(parse("bearer  realm = \"http://127.0.0.1:1/t?x=1\" , service=svc,,", &c, msg, sizeof msg) == LB_OK);
    CHECK(c.bearer && !strcmp(c.realm, "http://127.0.0.1:1/t?x=1") && !strcmp(c.service, "svc"));
    CHECK(parse("Bearer realm=\"http://a/\\\"q\\\"\",error=\"invalid_token\"", &c, msg, sizeof msg) == LB_OK);
    CHECK_STR(c.realm, "http://a/\"q\"");
    CHECK(parse("Basic realm=\"basic-realm\"", &c, msg, sizeof msg) == LB_OK && !c.bearer);
    CHECK(parse("Basic", &c, msg, sizeof msg) == LB_OK && !c.bearer);
}

TEST(challenge_refusals_say_why)
{
    lb_reg_challenge c;
    char msg[256] = "";
    CHECK(parse("", &c, msg, sizeof msg) == LB_E_PROTO && strstr(msg, "without saying how"));
    CHECK(parse("Negotiate abc", &c, msg, sizeof msg) == LB_E_PROTO && strstr(msg, "Basic or Bearer"));
    CHECK(parse("Bearer realm=\"http://a", &c, msg, sizeof msg) == LB_E_PROTO && strstr(msg, "unclosed quote"));
    CHECK(parse("Bearer realm=\"file:///etc/passwd\"", &c, msg, sizeof msg) == LB_E_PROTO &&
          strstr(msg, "not an http(s) URL"));
    CHECK(parse("Bearer service=x", &c, msg, sizeof msg) == LB_E_PROTO); /* no realm */
    CHECK(parse("Bearer realm", &c, msg, sizeof msg) == LB_E_PROTO && strstr(msg, "without a value"));
    CHECK(parse("Bearer realm=\"http://a/\r\nX: y\"", &c, msg, sizeof msg) == LB_E_PROTO &&
          strstr(msg, "control character"));
    char big[LB_REG_CHALLENGE_MAX + 2];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(parse(big, &c, msg, sizeof msg) == LB_E_TOOBIG);
    char longrealm[LB_REG_REALM_MAX + 64];
    int k = snprintf(longrealm, sizeof longrealm, "Bearer realm=\"http://");
    memset(longrealm + k, 'r', sizeof longrealm - (size_t)k - 2);
    longrealm[sizeof longrealm - 2] = '"';
    longrealm[sizeof longrealm - 1] = '\0';
    CHECK(parse(longrealm, &c, msg, sizeof msg) == LB_E_TOOBIG);
    /* the parser reads only the n bytes it is given */
    CHECK(lb_reg_challenge_parse("Basic realm=\"x\"", 5, &c, msg, sizeof msg) == LB_OK);
}

TEST(credentials_from_env_and_auth_file)
{
    char user[LB_REG_CRED_MAX], pass[LB_REG_CRED_MAX], msg[256];
    int found = 1;
    unsetenv("LLMBOX_REGISTRY_USER");
    unsetenv("LLMBOX_REGISTRY_PASSWORD");
    CHECK(lb_reg_credentials("r.io", "", user, pass, sizeof user, &found, msg, sizeof msg) == LB_OK && !found);
    CHECK(lb_reg_credentials("r.io", "/nonexistent/auth.json", user, pass, sizeof user, &found, msg,
                             sizeof msg) == LB_OK && !found);
    char path[] = "/tmp/llmbox-auth-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    /* "alice:s3:cret" and docker login's Docker Hub entry */
    const char *doc = "{\"auths\":{\"r.io:5000\":{\"auth\":\"YWxpY2U6czM6Y3JldA==\"},"
                      "\"https://index.docker.io/v1/\":{\"username\":\"bob\",\"password\":\"pw\"},"
                      "\"bad.io\":{\"auth\":\"!!!!\"}}}";
    CHECK(write(fd, doc, strlen(doc)) == (ssize_t)strlen(doc));
    close(fd);
    CHECK(lb_reg_credentials("r.io:5000", path, user, pass, sizeof user, &found, msg, sizeof msg) == LB_OK);
    CHECK(found && !strcmp(user, "alice") && !strcmp(pass, "s3:cret"));
    CHECK(lb_reg_credentials("docker.io", path, user, pass, sizeof user, &found, msg, sizeof msg) == LB_OK);
    CHECK(found && !strcmp(user, "bob") && !strcmp(pass, "pw"));
    CHECK(lb_reg_credentials("other.io", path, user, pass, sizeof user, &found, msg, sizeof msg) == LB_OK && !found);
    CHECK(lb_reg_credentials("bad.io", path, user, pass, sizeof user, &found, msg, sizeof msg) == LB_E_INVAL);
    CHECK(strstr(msg, "bad.io") != NULL);
    setenv("LLMBOX_REGISTRY_USER", "env-user", 1);
    setenv("LLMBOX_REGISTRY_PASSWORD", "env-pass", 1);
    CHECK(lb_reg_credentials("r.io:5000", path, user, pass, sizeof user, &found, msg, sizeof msg) == LB_OK);
    CHECK(found && !strcmp(user, "env-user") && !strcmp(pass, "env-pass"));
    unsetenv("LLMBOX_REGISTRY_USER");
    unsetenv("LLMBOX_REGISTRY_PASSWORD");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("[1,2]", f);
        fclose(f);
    }
    CHECK(lb_reg_credentials("r.io", path, user, pass, sizeof user, &found, msg, sizeof msg) == LB_E_INVAL);
    unlink(path);
}

TEST(plain_http_only_to_loopback_or_listed)
{
    CHECK(lb_reg_host_is_loopback("localhost:5000") && lb_reg_host_is_loopback("127.0.0.1:5000"));
    CHECK(lb_reg_host_is_loopback("127.8.9.10") && lb_reg_host_is_loopback("[::1]:5000"));
    CHECK(!lb_reg_host_is_loopback("10.0.0.1:5000") && !lb_reg_host_is_loopback("registry.example.com"));
    CHECK(!lb_reg_host_is_loopback("127.0.0.1.example.com") && !lb_reg_host_is_loopback("localhost.example"));
    CHECK(lb_reg_host_is_insecure("10.0.0.1:5000", "a.io, 10.0.0.1:5000"));
    CHECK(lb_reg_host_is_insecure("10.0.0.1:5000", "10.0.0.1"));     /* no port: any port */
    CHECK(!lb_reg_host_is_insecure("10.0.0.1:5000", "10.0.0.1:5001"));
    CHECK(!lb_reg_host_is_insecure("10.0.0.10:5000", "10.0.0.1"));
    CHECK(!lb_reg_host_is_insecure("r.io", "") && !lb_reg_host_is_insecure("r.io", NULL));
}

int main(void)
{
    RUN(bearer_challenge_of_docker_hub);
    RUN(challenge_spellings);
    RUN(challenge_refusals_say_why);
    RUN(credentials_from_env_and_auth_file);
    RUN(plain_http_only_to_loopback_or_listed);
    return testlib_done();
}
