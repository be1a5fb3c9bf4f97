/* [secret "NAME"] sections of llmbox.conf (common/config_secret.c) and the
 * gateway's two settings: a good section loads, and every mistake is an
 * error naming file:line, without ever repeating a value. */
#include "testlib.h"
#include "conf_file.h"

#include "common/config.h"
#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


TEST(a_secret_loads)
{
    CHECK(load("network_egress_max = *.github.com secret:gh\n"
               "network_bandwidth_max = 1048576\n"
               "network_upstream_ca = /etc/ssl/certs/ca-certificates.crt\n"
               "[secret \"gh\"]\n"
               "hosts = api.github.com, *.githubusercontent.com\n"
               "header = Authorization: Bearer {value}\n"
               "value_file = /etc/llmbox/gh.token\n"
               "[secret.npm]\n"
               "hosts = registry.npmjs.org\n"
               "header = Authorization: Bearer {value}\n"
               "value_env = NPM_TOKEN\n") == LB_OK);
    const lb_config *c = lb_cfg();
    CHECK(c->n_secrets == 2);
    CHECK_STR(c->secrets[0].name, "gh");
    CHECK_STR(c->secrets[0].hosts, "api.github.com, *.githubusercontent.com");
    CHECK_STR(c->secrets[0].value_file, "/etc/llmbox/gh.token");
    CHECK_STR(c->secrets[1].value_env, "NPM_TOKEN");
    CHECK(c->network_bandwidth_max == 1048576);
    CHECK_STR(c->network_upstream_ca, "/etc/ssl/certs/ca-certificates.crt");
}

TEST(mistakes_name_file_and_line)
{
    CHECK(load("[secret \"gh\"]\nvalue = ghp_0123456789\n") == LB_E_INVAL);
    CHECK(error_is(2, "never kept in llmbox.conf"));
    CHECK(strstr(lb_config_error(), "ghp_0123456789") == NULL);
    CHECK(load("[secret \"gh\"]\nhosts = a.test:443\n") == LB_E_INVAL && error_is(2, "is not a name"));
    CHECK(load("[secret \"gh\"]\nhosts = *\n") == LB_E_INVAL && error_is(2, "is not a name"));
    CHECK(load("[secret \"gh\"]\nhosts = 10.0.0.0/8\n") == LB_E_INVAL && error_is(2, "is not a name"));
    CHECK(load("[secret \"gh\"]\nheader = Authorization: Bearer\n") == LB_E_INVAL && error_is(2, "{value}"));
    CHECK(load("[secret \"gh\"]\nheader = Authorization: {value}{value}\n") == LB_E_INVAL);
    CHECK(load("[secret \"gh\"]\nheader = Bad Name: {value}\n") == LB_E_INVAL);
    CHECK(load("[secret \"gh\"]\nvalue_file = relative/path\n") == LB_E_INVAL && error_is(2, "absolute"));
    CHECK(load("[secret \"gh\"]\ncolour = red\n") == LB_E_INVAL && error_is(2, "unknown key 'colour'"));
    CHECK(load("[secret \"a b\"]\nhosts = a.test\n") == LB_E_INVAL && error_is(2, "secret's name"));
    /* the E2B transforms' prefix: such a secret would be looked up in a sandbox's own values only */
    CHECK(load("[secret \"e2b.gh\"]\nhosts = a.test\n") == LB_E_INVAL && error_is(2, "rename it"));
    /* incomplete: no value source, or both */
    CHECK(load("[secret \"gh\"]\nhosts = a.test\nheader = X: {value}\n") == LB_E_INVAL &&
          error_is(2, "needs hosts, header, and one of value_file or value_env"));
    CHECK(load("[secret \"gh\"]\nhosts = a.test\nheader = X: {value}\nvalue_env = A\nvalue_file = /x\n") ==
          LB_E_INVAL);
    CHECK(load("network_egress_max = secret:a/b\n") == LB_E_INVAL);
    CHECK(load("network_bandwidth_max = -1\n") == LB_E_INVAL);
    CHECK(load("[secrets \"gh\"]\nhosts = a.test\n") == LB_E_INVAL && error_is(2, "[secret \"NAME\"]"));
}

int main(void)
{
    snprintf(conf, sizeof conf, "/tmp/lb-conf-secret-%d.conf", (int)getpid());
    unsetenv("LLMBOX_NETWORK_EGRESS_MAX");
    unsetenv("LLMBOX_NETWORK_BANDWIDTH_MAX");
    unsetenv("LLMBOX_NETWORK_UPSTREAM_CA");
    RUN(a_secret_loads);
    RUN(mistakes_name_file_and_line);
    unlink(conf);
    return testlib_done();
}
