/* A sandbox's egress policy (common/netpolicy.c): what users write in
 * "network", the operator's ceiling, and the answers the gateway relies
 * on: deny wins, a name never opens a private address (DNS rebinding), an
 * address literal never passes a name rule, wildcards name what is below. */
#include "testlib.h"

#include "common/netpolicy.h"
#include "common/status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

static lb_netpolicy pol, ceil_; /* large: kept off the stack */
static char why[300];

static int parse(const char *text)
{
    char err[300] = "";
    return lb_netpolicy_parse(text, &pol, err, sizeof err);
}

/* Whether pol lets a connection to addr:port, reached through name. */
static int dest(const char *name, const char *addr, int port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    size_t sl;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        sl = sizeof *v4;
    } else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        sl = sizeof *v6;
    } else {
        return -1;
    }
    struct sockaddr_storage self;
    memset(&self, 0, sizeof self);
    struct sockaddr_in *s4 = (struct sockaddr_in *)&self;
    s4->sin_family = AF_INET;
    inet_pton(AF_INET, "93.184.0.7", &s4->sin_addr); /* the "host's own" public address */
    return lb_netpolicy_dest_ok(&pol, name, (struct sockaddr *)&ss, sl, port, &self, 1, why, sizeof why);
}

static int fails_with(const char *text, const char *word)
{
    char err[300] = "";
    int rc = lb_netpolicy_parse(text, &pol, err, sizeof err);
    if (rc == LB_OK || !strstr(err, word)) {
        printf("  %s -> rc %d, \"%s\"\n", text, rc, err);
        return 0;
    }
    return 1;
}

TEST(modes_and_rules_parse)
{
    CHECK(parse("none") == LB_OK && pol.mode == LB_NETPOL_NONE);
    CHECK(parse(NULL) == LB_OK && pol.mode == LB_NETPOL_NONE);
    CHECK(parse("nat") == LB_OK && pol.mode == LB_NETPOL_NAT);
    CHECK(parse("{\"allow\":[\"Example.COM\",\"*.github.com:443\",\"10.1.0.0/16:22\",\"[fd00::1]:80\",\"*\"],"
                "\"deny\":[\"evil.example.com\"]}") == LB_OK);
    CHECK(pol.mode == LB_NETPOL_RULES && pol.nallow == 5 && pol.ndeny == 1);
    CHECK(pol.allow[1].port == 443 && pol.allow[1].r.kind == LB_NETRULE_SUFFIX);
    CHECK(pol.allow[2].port == 22 && pol.allow[2].r.kind == LB_NETRULE_NET && pol.allow[2].r.prefix == 16);
    CHECK(pol.allow[3].port == 80 && pol.allow[3].r.family == AF_INET6);
    char out[LB_NETPOL_TEXT_MAX];
    CHECK(lb_netpolicy_text(&pol, out, sizeof out) == LB_OK);
    CHECK_STR(out, "{\"allow\":[\"example.com\",\"*.github.com:443\",\"10.1.0.0/16:22\",\"[fd00::1]:80\",\"*\"],"
                   "\"deny\":[\"evil.example.com\"]}");
    /* the canonical text parses back to itself */
    CHECK(parse(out) == LB_OK && pol.nallow == 5);
    char small[10];
    CHECK(lb_netpolicy_text(&pol, small, sizeof small) == LB_E_TOOBIG);
}

TEST(bad_policies_are_refused_with_the_rule)
{
    CHECK(fails_with("\"wide\"", "network must be"));
    CHECK(fails_with("{\"allow\":[\"a..b\"]}", "\"a..b\""));
    CHECK(fails_with("{\"allow\":[\"example.com:0\"]}", "port"));
    CHECK(fails_with("{\"allow\":[\"example.com:65536\"]}", "port"));
    CHECK(fails_with("{\"allow\":[\"10.0.0.0/33\"]}", "10.0.0.0/33"));
    CHECK(fails_with("{\"allow\":[\"public\"]}", "public"));
    CHECK(fails_with("{\"allow\":[\"a b\"]}", "a b"));
    CHECK(fails_with("{\"allow\":[1]}", "strings"));
    CHECK(fails_with("{\"allow\":\"x.com\"}", "array"));
    CHECK(fails_with("{\"allowed\":[]}", "unknown key \"allowed\""));
    CHECK(fails_with("{\"allow\":[\"[fd00::1\"]}", "bracketed"));
    CHECK(fails_with("{\"allow\":[\"\"]}", "1 to"));
    CHECK(fails_with("{\"allow\":", "JSON object"));
    /* more rules than the cap */
    char big[LB_NETPOL_TEXT_MAX];
    size_t n = (size_t)snprintf(big, sizeof big, "{\"allow\":[");
    for (int i = 0; i <= LB_NETPOL_RULES_MAX; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "%s\"h%d.com\"", i ? "," : "", i);
    snprintf(big + n, sizeof big - n, "]}");
    CHECK(fails_with(big, "more than 64"));
    char *huge = malloc(LB_NETPOL_TEXT_MAX + 10);
    memset(huge, ' ', LB_NETPOL_TEXT_MAX + 9);
    huge[LB_NETPOL_TEXT_MAX + 9] = '\0';
    huge[0] = '{';
    CHECK(fails_with(huge, "longer than"));
    free(huge);
}

TEST(names_resolve_only_when_allowed)
{
    CHECK(parse("{\"allow\":[\"example.com\",\"*.github.com\",\"pypi.org:443\"],\"deny\":[\"gist.github.com\"]}") ==
          LB_OK);
    CHECK(lb_netpolicy_name_ok(&pol, "example.com", why, sizeof why) == 1);
    CHECK_STR(why, "allow example.com");
    CHECK(lb_netpolicy_name_ok(&pol, "EXAMPLE.com.", NULL, 0) == 1);
    CHECK(lb_netpolicy_name_ok(&pol, "www.example.com", NULL, 0) == 0);
    CHECK(lb_netpolicy_name_ok(&pol, "api.github.com", NULL, 0) == 1);
    CHECK(lb_netpolicy_name_ok(&pol, "github.com", NULL, 0) == 0); /* "*." is below, not itself */
    CHECK(lb_netpolicy_name_ok(&pol, "evilgithub.com", NULL, 0) == 0);
    CHECK(lb_netpolicy_name_ok(&pol, "gist.github.com", why, sizeof why) == 0); /* deny wins */
    CHECK_STR(why, "deny gist.github.com");
    CHECK(lb_netpolicy_name_ok(&pol, "pypi.org", NULL, 0) == 1);
    CHECK(lb_netpolicy_name_ok(&pol, "1.2.3.4", NULL, 0) == 0);
    CHECK(parse("none") == LB_OK && lb_netpolicy_name_ok(&pol, "example.com", NULL, 0) == 0);
}

TEST(destinations_follow_the_rules)
{
    CHECK(parse("{\"allow\":[\"example.com\",\"*.github.com:443\",\"8.8.8.0/24:53\",\"10.5.0.0/16\"],"
                "\"deny\":[\"bad.github.com\",\"1.1.1.1\"]}") == LB_OK);
    CHECK(dest("example.com", "93.184.216.34", 80) == 1);
    CHECK(dest("example.com", "93.184.216.34", 22) == 1);        /* no port: every port */
    CHECK(dest("api.github.com", "140.82.112.5", 443) == 1);
    CHECK(dest("api.github.com", "140.82.112.5", 80) == 0);      /* the rule's port only */
    CHECK(dest("bad.github.com", "140.82.112.5", 443) == 0);
    CHECK_STR(why, "deny bad.github.com");
    CHECK(dest("example.com", "1.1.1.1", 443) == 0);              /* a denied address under an allowed name */
    CHECK_STR(why, "deny 1.1.1.1");
    /* an address literal does not pass a name rule */
    CHECK(dest(NULL, "93.184.216.34", 80) == 0);
    CHECK(dest("other.org", "93.184.216.34", 80) == 0);
    CHECK(dest(NULL, "8.8.8.8", 53) == 1);
    CHECK(dest(NULL, "8.8.8.8", 54) == 0);
    /* DNS rebinding: an allowed name on a private, loopback, metadata or host address */
    const char *inner[] = {"127.0.0.1", "169.254.169.254", "192.168.1.1", "172.16.0.1", "10.9.0.1", "::1",
                           "fd00::1", "::ffff:127.0.0.1", "0.0.0.0", "93.184.0.7"};
    for (size_t i = 0; i < sizeof inner / sizeof inner[0]; i++) {
        if (dest("example.com", inner[i], 80) != 0)
            printf("  %s was allowed\n", inner[i]);
        CHECK(dest("example.com", inner[i], 80) == 0);
    }
    CHECK(dest("example.com", "127.0.0.1", 80) == 0 && strstr(why, "private or special"));
    CHECK(dest("example.com", "93.184.0.7", 80) == 0 && strstr(why, "host's own"));
    /* a network rule naming a private range reaches it, with or without a name */
    CHECK(dest(NULL, "10.5.3.3", 5432) == 1);
    CHECK(dest("db.internal", "10.5.3.3", 5432) == 1);
    CHECK(dest(NULL, "10.6.3.3", 5432) == 0);
}

TEST(precedence_allow_lets_an_allow_rule_win_but_not_star)
{
    /* E2B's denyOut 1.1.1.0/24 with allowOut 1.1.1.1: the allow wins there */
    CHECK(parse("{\"allow\":[\"*\",\"1.1.1.1\",\"ok.example.com\"],\"deny\":[\"1.1.1.0/24\",\"*.example.com\"],"
                "\"precedence\":\"allow\"}") == LB_OK && pol.allow_wins);
    CHECK(dest(NULL, "1.1.1.1", 443) == 1 && strstr(why, "allow 1.1.1.1"));
    CHECK(dest(NULL, "1.1.1.2", 443) == 0 && strstr(why, "deny 1.1.1.0/24")); /* "*" loses to deny */
    CHECK(dest(NULL, "8.8.8.8", 443) == 1 && strstr(why, "allow *"));
    CHECK(lb_netpolicy_name_ok(&pol, "ok.example.com", NULL, 0) == 1);
    CHECK(lb_netpolicy_name_ok(&pol, "no.example.com", NULL, 0) == 0);
    CHECK(dest("ok.example.com", "93.184.216.34", 443) == 1);
    /* a name rule still never opens a private address, nor the host's own */
    CHECK(dest("ok.example.com", "10.0.0.1", 443) == 0);
    CHECK(dest(NULL, "93.184.0.7", 443) == 0 && strstr(why, "host's own"));
    char out[512];
    CHECK(lb_netpolicy_text(&pol, out, sizeof out) == LB_OK && strstr(out, "\"precedence\":\"allow\""));
    CHECK(parse(out) == LB_OK && pol.allow_wins);
    /* the same rules without it: deny wins, as llmbox's own API has it */
    CHECK(parse("{\"allow\":[\"*\",\"1.1.1.1\"],\"deny\":[\"1.1.1.0/24\"]}") == LB_OK && !pol.allow_wins);
    CHECK(dest(NULL, "1.1.1.1", 443) == 0);
    CHECK(lb_netpolicy_text(&pol, out, sizeof out) == LB_OK && !strstr(out, "precedence"));
    CHECK(fails_with("{\"allow\":[],\"precedence\":\"first\"}", "precedence"));
    CHECK(fails_with("{\"allow\":[],\"precedence\":1}", "precedence"));
}

TEST(star_is_every_name_and_public_address_only)
{
    CHECK(parse("{\"allow\":[\"*\"],\"deny\":[\"*.evil.com\",\"169.254.0.0/16\"]}") == LB_OK);
    CHECK(lb_netpolicy_name_ok(&pol, "anything.org", NULL, 0) == 1);
    CHECK(lb_netpolicy_name_ok(&pol, "x.evil.com", NULL, 0) == 0);
    CHECK(dest(NULL, "93.184.216.34", 443) == 1);
    CHECK(dest("anything.org", "127.0.0.1", 80) == 0);
    CHECK(dest(NULL, "10.0.0.1", 80) == 0);
    CHECK(dest(NULL, "169.254.169.254", 80) == 0);
    CHECK(parse("{\"allow\":[\"*:443\"]}") == LB_OK);
    CHECK(dest("a.org", "93.184.216.34", 443) == 1);
    CHECK(dest("a.org", "93.184.216.34", 80) == 0);
}

TEST(the_ceiling_names_the_rule_beyond_it)
{
    char err[300];
    CHECK(lb_netpolicy_parse("{\"allow\":[\"*.github.com\",\"pypi.org:443\",\"10.0.0.0/8\"]}", &ceil_, err,
                             sizeof err) == LB_OK);
    CHECK(parse("{\"allow\":[\"api.github.com\",\"*.x.github.com\",\"*.github.com:443\",\"pypi.org:443\","
                "\"10.1.0.0/16\"],\"deny\":[\"anything.else\"]}") == LB_OK);
    CHECK(lb_netpolicy_within(&pol, &ceil_, err, sizeof err) == LB_OK);
    const char *beyond[] = {"github.com", "pypi.org", "pypi.org:80", "*", "0.0.0.0/0", "11.0.0.0/8", "*.com",
                            "8.8.8.8"};
    for (size_t i = 0; i < sizeof beyond / sizeof beyond[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "{\"allow\":[\"api.github.com\",\"%s\"]}", beyond[i]);
        CHECK(parse(text) == LB_OK);
        err[0] = '\0';
        CHECK(lb_netpolicy_within(&pol, &ceil_, err, sizeof err) == LB_E_DENIED);
        CHECK(strstr(err, beyond[i]) != NULL && strstr(err, "network_egress_max") != NULL);
    }
    CHECK(lb_netpolicy_parse("{\"allow\":[\"*\"]}", &ceil_, err, sizeof err) == LB_OK);
    CHECK(parse("{\"allow\":[\"a.com\",\"*.b.org:443\"]}") == LB_OK);
    CHECK(lb_netpolicy_within(&pol, &ceil_, err, sizeof err) == LB_OK);
    CHECK(parse("{\"allow\":[\"10.0.0.0/8\"]}") == LB_OK); /* "*" is not a private network */
    CHECK(lb_netpolicy_within(&pol, &ceil_, err, sizeof err) == LB_E_DENIED);
    /* but a public IPv4 address or network of /24 or narrower (E2B's allowOut ['1.1.1.1']) */
    CHECK(parse("{\"allow\":[\"1.1.1.1\",\"8.8.8.0/24\",\"45.1.1.10:443\"]}") == LB_OK);
    CHECK(lb_netpolicy_within(&pol, &ceil_, err, sizeof err) == LB_OK);
    const char *wide[] = {"8.0.0.0/8", "0.0.0.0/0", "192.168.1.1", "169.254.169.254", "100.64.0.1", "192.0.2.0/24",
                          "255.255.255.255", "2001:db8::1"};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "{\"allow\":[\"%s\"]}", wide[i]);
        CHECK(parse(text) == LB_OK && lb_netpolicy_within(&pol, &ceil_, err, sizeof err) == LB_E_DENIED);
    }
    CHECK(parse("none") == LB_OK && lb_netpolicy_within(&pol, NULL, err, sizeof err) == LB_OK);
    CHECK(parse("{\"allow\":[\"a.com\"]}") == LB_OK && lb_netpolicy_within(&pol, NULL, err, sizeof err) != LB_OK);
}

/* A policy's "max_bytes": parsed, kept in its text, and held to the
 * operator's network_max_mb (service and user) with a 403 sentence that
 * names the setting; a policy with none gets the user's allowance. */
TEST(max_bytes_is_capped_by_the_operator)
{
    char err[300], text[512];
    CHECK(parse("{\"allow\":[\"a.com\"],\"max_bytes\":5000}") == LB_OK && pol.max_bytes == 5000);
    CHECK(lb_netpolicy_text(&pol, text, sizeof text) == LB_OK && strstr(text, "\"max_bytes\":5000") != NULL);
    CHECK(lb_netpolicy_admit_bytes(&pol, 0, 0, err, sizeof err) == LB_OK && pol.max_bytes == 5000);
    CHECK(lb_netpolicy_admit_bytes(&pol, 5000, 5000, err, sizeof err) == LB_OK);
    err[0] = '\0';
    CHECK(lb_netpolicy_admit_bytes(&pol, 4999, 0, err, sizeof err) == LB_E_DENIED);
    CHECK(strstr(err, "max_bytes 5000") != NULL && strstr(err, "network_max_mb") != NULL);
    err[0] = '\0';
    CHECK(lb_netpolicy_admit_bytes(&pol, 1 << 20, 4096, err, sizeof err) == LB_E_DENIED);
    CHECK(strstr(err, "network_max_mb") != NULL && strstr(err, "for this user") != NULL);
    CHECK(parse("{\"allow\":[\"a.com\"]}") == LB_OK && pol.max_bytes == 0);
    CHECK(lb_netpolicy_admit_bytes(&pol, 1 << 20, 4096, err, sizeof err) == LB_OK && pol.max_bytes == 4096);
    const char *bad[] = {"0", "-1", "1.5", "\"5\"", "1125899906842625"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "{\"allow\":[\"a.com\"],\"max_bytes\":%s}", bad[i]);
        CHECK(fails_with(text, "max_bytes"));
    }
}

int main(void)
{
    RUN(modes_and_rules_parse);
    RUN(bad_policies_are_refused_with_the_rule);
    RUN(names_resolve_only_when_allowed);
    RUN(destinations_follow_the_rules);
    RUN(precedence_allow_lets_an_allow_rule_win_but_not_star);
    RUN(star_is_every_name_and_public_address_only);
    RUN(the_ceiling_names_the_rule_beyond_it);
    RUN(max_bytes_is_capped_by_the_operator);
    return testlib_done();
}
