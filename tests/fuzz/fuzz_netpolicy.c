/* libFuzzer target for a sandbox's network policy (server/common/
 * netpolicy.c): the "network" a task, sandbox spec, rollout or evaluation
 * brings, as JSON text. Promises: the parser never reads or writes past its
 * input and caps (at most LB_NETPOL_RULES_MAX rules of each kind), refuses
 * with a sentence, a policy it takes prints as canonical text that parses
 * back to the same rules, and whatever the rules, an allowed name never
 * opens loopback or cloud metadata (DNS rebinding): those are reached only
 * by a network rule that contains them. */
#include "common/netpolicy.h"
#include "common/status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

static lb_netpolicy fz_p, fz_q;
static char fz_text[LB_NETPOL_TEXT_MAX * 2];

static int has_net_rule(void)
{
    for (int i = 0; i < fz_p.nallow; i++)
        if (fz_p.allow[i].r.kind == LB_NETRULE_NET)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > LB_NETPOL_TEXT_MAX + 16)
        return 0;
    char s[LB_NETPOL_TEXT_MAX + 17];
    memcpy(s, data, size);
    s[size] = '\0';
    char err[300] = "";
    int rc = lb_netpolicy_parse(s, &fz_p, err, sizeof err);
    if (rc != LB_OK) {
        if (!err[0] || !memchr(err, '\0', sizeof err))
            __builtin_trap();
        return 0;
    }
    if (fz_p.nallow < 0 || fz_p.nallow > LB_NETPOL_RULES_MAX || fz_p.ndeny < 0 || fz_p.ndeny > LB_NETPOL_RULES_MAX)
        __builtin_trap();
    if (lb_netpolicy_text(&fz_p, fz_text, sizeof fz_text) != LB_OK)
        __builtin_trap();
    if (fz_p.mode == LB_NETPOL_RULES) {
        if (lb_netpolicy_parse(fz_text, &fz_q, err, sizeof err) != LB_OK || fz_q.nallow != fz_p.nallow ||
            fz_q.ndeny != fz_p.ndeny || fz_q.allow_wins != fz_p.allow_wins)
            __builtin_trap();
        for (int i = 0; i < fz_p.nallow; i++)
            if (strcmp(fz_p.allow[i].text, fz_q.allow[i].text) || fz_p.allow[i].port != fz_q.allow[i].port)
                __builtin_trap();
    }
    static const char *const inner[] = {"127.0.0.1", "169.254.169.254"};
    for (size_t i = 0; i < sizeof inner / sizeof inner[0]; i++) {
        struct sockaddr_in v4 = {.sin_family = AF_INET};
        if (inet_pton(AF_INET, inner[i], &v4.sin_addr) != 1)
            __builtin_trap();
        if (lb_netpolicy_dest_ok(&fz_p, "example.com", (struct sockaddr *)&v4, sizeof v4, 80, NULL, 0, NULL, 0) &&
            !has_net_rule())
            __builtin_trap();
    }
    /* the input as a name: never an address literal */
    unsigned char tmp[16];
    if (lb_netpolicy_name_ok(&fz_p, s, NULL, 0) &&
        (inet_pton(AF_INET, s, tmp) == 1 || inet_pton(AF_INET6, s, tmp) == 1))
        __builtin_trap();
    return 0;
}
