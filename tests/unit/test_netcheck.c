/* The allowed targets of a caller-chosen URL (common/netcheck.c): the list
 * an operator writes, and the answers a task's model_url relies on:
 * loopback, link-local and private addresses are refused unless listed,
 * in every spelling an address can take. */
#include "testlib.h"

#include "common/netcheck.h"
#include "common/status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* Whether the list spec allows the address text (IPv4 or IPv6). */
static int allows(const char *spec, const char *addr)
{
    static lb_netallow a; /* large: kept off the stack */
    char err[300];
    if (lb_netallow_parse(spec, &a, err, sizeof err) != LB_OK)
        return -1;
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
    if (inet_pton(AF_INET, addr, &v4.sin_addr) == 1)
        return lb_netallow_addr(&a, (struct sockaddr *)&v4, sizeof v4);
    if (inet_pton(AF_INET6, addr, &v6.sin6_addr) == 1)
        return lb_netallow_addr(&a, (struct sockaddr *)&v6, sizeof v6);
    return -2;
}

static int parse_fails(const char *spec, const char *word_in_err)
{
    static lb_netallow a;
    char err[300] = "";
    return lb_netallow_parse(spec, &a, err, sizeof err) != LB_OK && strstr(err, word_in_err) != NULL;
}

TEST(public_refuses_every_internal_range)
{
    const char *internal[] = {"127.0.0.1", "127.255.255.254", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255",
                              "192.168.1.1", "169.254.169.254", "100.64.0.1", "224.0.0.1", "255.255.255.255",
                              "198.18.0.1", "192.0.2.1", "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1",
                              "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::7f00:1",
                              "2002:7f00:1::1", "2002:a9fe:a9fe::1", "2001:db8::1", "2001::1", "::127.0.0.1"};
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
        if (allows("public", internal[i]) != 0)
            printf("  %s was allowed\n", internal[i]);
        CHECK(allows("public", internal[i]) == 0);
    }
}

TEST(public_allows_the_internet)
{
    const char *pub[] = {"1.1.1.1", "8.8.8.8", "172.32.0.1", "192.169.0.1", "100.128.0.1", "2606:4700::1111",
                         "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"};
    for (size_t i = 0; i < sizeof pub / sizeof pub[0]; i++)
        CHECK(allows("public", pub[i]) == 1);
}

TEST(networks_allow_what_they_contain_only)
{
    CHECK(allows("127.0.0.0/8", "127.0.0.1") == 1);
    CHECK(allows("127.0.0.0/8", "8.8.8.8") == 0); /* no "public": only what is listed */
    CHECK(allows("10.1.2.0/24", "10.1.2.200") == 1);
    CHECK(allows("10.1.2.0/24", "10.1.3.1") == 0);
    CHECK(allows("10.1.2.77/24", "10.1.2.1") == 1); /* host bits of the rule are ignored */
    CHECK(allows("10.0.0.5", "10.0.0.5") == 1);
    CHECK(allows("10.0.0.5", "10.0.0.6") == 0);
    CHECK(allows("172.16.0.0/13", "172.23.255.255") == 1);
    CHECK(allows("172.16.0.0/13", "172.24.0.0") == 0);
    CHECK(allows("fd00::/8", "fd12::1") == 1);
    CHECK(allows("fd00::/8", "fc00::1") == 0);
    CHECK(allows("::1", "::1") == 1);
    /* a mapped address is its IPv4 address, for rules as for "public" */
    CHECK(allows("127.0.0.1", "::ffff:127.0.0.1") == 1);
    CHECK(allows("0.0.0.0/0", "10.9.9.9") == 1);
    CHECK(allows("0.0.0.0/0", "fd00::1") == 0);
    CHECK(allows("public, 10.0.0.0/8", "10.2.3.4") == 1);
    CHECK(allows("public 10.0.0.0/8", "8.8.4.4") == 1);
    CHECK(allows("", "8.8.8.8") == 0); /* the empty list allows nothing */
}

TEST(host_rules_name_hosts_not_addresses)
{
    static lb_netallow a;
    char err[300];
    CHECK(lb_netallow_parse("llm.internal, *.gpu.example.com", &a, err, sizeof err) == LB_OK);
    CHECK(a.n == 2);
    CHECK(lb_netallow_host(&a, "llm.internal") == 1);
    CHECK(lb_netallow_host(&a, "LLM.Internal.") == 1);
    CHECK(lb_netallow_host(&a, "xllm.internal") == 0);
    CHECK(lb_netallow_host(&a, "llm.internal.evil.com") == 0);
    CHECK(lb_netallow_host(&a, "a.gpu.example.com") == 1);
    CHECK(lb_netallow_host(&a, "a.b.gpu.example.com") == 1);
    CHECK(lb_netallow_host(&a, "gpu.example.com") == 0); /* "*." is below it, not itself */
    CHECK(lb_netallow_host(&a, "agpu.example.com") == 0);
    CHECK(lb_netallow_host(&a, "") == 0);
    CHECK(lb_netallow_host(&a, NULL) == 0);
    /* a name rule never makes an address literal pass */
    CHECK(lb_netallow_parse("localhost", &a, err, sizeof err) == LB_OK);
    CHECK(lb_netallow_host(&a, "localhost") == 1);
    CHECK(lb_netallow_host(&a, "127.0.0.1") == 0);
    CHECK(lb_netallow_host(&a, "[::1]") == 0);
    CHECK(allows("localhost", "127.0.0.1") == 0);
}

TEST(bad_lists_are_refused_with_the_word)
{
    CHECK(parse_fails("10.0.0.0/33", "at most 32"));
    CHECK(parse_fails("fd00::/129", "prefix length"));
    CHECK(parse_fails("10.0.0.0/", "prefix length"));
    CHECK(parse_fails("10.0.0.0/8x", "prefix length"));
    CHECK(parse_fails("10.0.0.0/-1", "prefix length"));
    CHECK(parse_fails("host/8", "not an address/prefix"));
    CHECK(parse_fails("public, exa_mple.com", "exa_mple.com"));
    CHECK(parse_fails("-bad.com", "-bad.com"));
    CHECK(parse_fails("bad-.com", "bad-.com"));
    CHECK(parse_fails("a..b", "a..b"));
    CHECK(parse_fails("*.", "\"*.\""));
    CHECK(parse_fails("**.a.com", "**.a.com"));
    CHECK(parse_fails("http://a.com", "http://a.com"));
    CHECK(parse_fails("1.2.3", "1.2.3"));           /* an address in a short spelling, not a name */
    CHECK(parse_fails("2130706433", "2130706433")); /* 127.0.0.1 as one number */
    CHECK(parse_fails("public, a.b.123", "a.b.123"));
    char label[80];
    memset(label, 'a', 70);
    label[70] = '\0';
    CHECK(parse_fails(label, "aaaa"));
    /* caps: entries and text */
    char many[70 * 12 + 1];
    size_t off = 0;
    for (int i = 0; i < 70; i++)
        off += (size_t)snprintf(many + off, sizeof many - off, "10.0.0.1, ");
    CHECK(parse_fails(many, "more than 64"));
    char *huge = malloc(LB_NETALLOW_TEXT_MAX + 10);
    memset(huge, ' ', LB_NETALLOW_TEXT_MAX + 5);
    huge[LB_NETALLOW_TEXT_MAX + 5] = '\0';
    CHECK(parse_fails(huge, "longer than"));
    free(huge);
    char word[400];
    memset(word, 'b', 300);
    word[300] = '\0';
    CHECK(parse_fails(word, "longer than a host name"));
}

TEST(odd_socket_addresses_are_refused)
{
    static lb_netallow a;
    char err[300];
    CHECK(lb_netallow_parse("public, 0.0.0.0/0, ::/0", &a, err, sizeof err) == LB_OK);
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr un = {.sa_family = AF_UNIX};
    CHECK(lb_netallow_addr(&a, &un, sizeof un) == 0);
    CHECK(lb_netallow_addr(&a, (struct sockaddr *)&v4, sizeof v4 - 1) == 0); /* short */
    CHECK(lb_netallow_addr(&a, NULL, 0) == 0);
    CHECK(lb_netallow_addr(NULL, (struct sockaddr *)&v4, sizeof v4) == 0);
    CHECK(lb_netaddr_is_public(NULL, 0) == 0);
}

int main(void)
{
    RUN(public_refuses_every_internal_range);
    RUN(public_allows_the_internet);
    RUN(networks_allow_what_they_contain_only);
    RUN(host_rules_name_hosts_not_addresses);
    RUN(bad_lists_are_refused_with_the_word);
    RUN(odd_socket_addresses_are_refused);
    return testlib_done();
}
