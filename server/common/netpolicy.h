/* A sandbox's egress policy (netpolicy.c): what a task, sandbox spec,
 * rollout or evaluation asks for in "network", parsed once, checked
 * against the operator's ceiling, and the questions the network gateway
 * (server/netgw/) asks of it for each name and each connection.
 *
 * "network" is one of
 *   "none"                          loopback only
 *   "nat"                           the whole internet through slirp4netns
 *   {"allow": [...], "deny": [...]} only through the gateway, by rules
 * A rule is a string:
 *   example.com        that name (any case, one trailing dot allowed)
 *   *.example.com      every name below it, not itself
 *   *                  every name, and every public address
 *   1.2.3.0/24, fd00::/64, 1.2.3.4   a network (a bare address: of one)
 *   RULE:PORT          any of the above, on that TCP port only
 *                      ([fd00::1]:443 for an IPv6 address with a port)
 * Deny wins over allow, unless the policy says "precedence": "allow"
 * (E2B's rules: allowOut wins over denyOut), where every allow rule but
 * "*" wins over every deny rule and "*" loses to them. An address that is not public (loopback, private,
 * link-local such as 169.254.169.254, the host's own) is reached only
 * through an allow rule that is a network containing it, never through a
 * name or "*": so a name that resolves to 127.0.0.1 (DNS rebinding) is
 * refused. The network rules reuse netcheck.c's parser and ranges. */
#ifndef LB_COMMON_NETPOLICY_H
#define LB_COMMON_NETPOLICY_H

#include <stddef.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>

#include "common/netcheck.h"
#include "common/status.h"

#define LB_NETPOL_RULES_MAX 64     /* allow rules, and deny rules, each */
#define LB_NETPOL_TEXT_MAX 8192    /* a policy as JSON text, in bytes */
#define LB_NETPOL_WORD_MAX 272     /* one rule as written: a name, '*.', ':' and a port */
#define LB_NETPOL_SECRETS_MAX 16   /* secrets a policy names, or a ceiling lists (secret:NAME) */
#define LB_NETPOL_SECRET_NAME 64   /* a secret's name: 1 to 63 of [A-Za-z0-9._-] */
/* A secret whose name starts so is a transform (E2B's network.rules): its
 * value is the client's, handed with the create (lbsb_spec.net_values),
 * not an operator's section; the ceiling holds its host, not its name. */
#define LB_NETPOL_TRANSFORM_PREFIX "e2b."
#define LB_NETPOL_BANDWIDTH_MAX 2000000000LL /* bytes per second a policy may ask for */
#define LB_NETPOL_MAX_BYTES_MAX (1LL << 50) /* bytes a policy's "max_bytes" may ask for */

enum { LB_NETPOL_NONE = 1, LB_NETPOL_NAT, LB_NETPOL_RULES };

typedef struct lb_netpol_rule {
    lb_netrule r;                  /* netcheck's: NET, HOST, SUFFIX, or PUBLIC for "*" */
    int port;                      /* 1-65535, or 0: every port */
    char text[LB_NETPOL_WORD_MAX]; /* as written, lowercased: what a refusal names */
} lb_netpol_rule;

typedef struct lb_netpolicy {
    int mode; /* LB_NETPOL_* */
    lb_netpol_rule allow[LB_NETPOL_RULES_MAX];
    lb_netpol_rule deny[LB_NETPOL_RULES_MAX];
    int nallow, ndeny;
    /* "secrets": names of the operator's [secret "NAME"] sections whose
     * header the gateway adds to HTTPS requests to the secret's hosts; in
     * a ceiling, the secret:NAME words (which secrets sandboxes may name) */
    char secrets[LB_NETPOL_SECRETS_MAX][LB_NETPOL_SECRET_NAME];
    int nsecrets;
    long long bandwidth; /* "bandwidth": bytes per second each way, 0: the operator's network_bandwidth_max */
    long long max_bytes; /* "max_bytes": bytes both ways the gateway relays in the sandbox's life, 0: the
                            operator's network_max_mb */
    int allow_wins; /* "precedence": "allow": allow rules other than "*" win over deny rules (E2B's
                       allowOut over denyOut); 0, llmbox's own: deny wins */
} lb_netpolicy;

/* Whether s is a well-formed secret name (1 to 63 of [A-Za-z0-9._-]). */
int lb_netpolicy_secret_name_ok(const char *s);

/* Parses v (a cJSON string "none"/"nat" or an object {allow, deny,
 * secrets, bandwidth}) into
 * *p. LB_OK; LB_E_INVAL or LB_E_TOOBIG with a sentence in err naming the
 * rule or key that is wrong. */
LB_MUST_CHECK int lb_netpolicy_from_json(const cJSON *v, lb_netpolicy *p, char *err, size_t errsz);
/* The same from text: "none", "nat", or the object as JSON text (as a
 * task's network column holds it). NULL or "" is "none". */
LB_MUST_CHECK int lb_netpolicy_parse(const char *text, lb_netpolicy *p, char *err, size_t errsz);
/* Parses one rule (the grammar above) into *r. LB_OK or LB_E_INVAL. */
LB_MUST_CHECK int lb_netpolicy_rule_parse(const char *word, lb_netpol_rule *r, char *err, size_t errsz);
/* An operator's list of rules (network_egress_max: rules separated by
 * commas or blanks) into p's allow rules, mode LB_NETPOL_RULES; a word
 * secret:NAME goes to p's secrets (the secrets sandboxes may name). LB_OK;
 * LB_E_INVAL or LB_E_TOOBIG with err naming the rule. */
LB_MUST_CHECK int lb_netpolicy_list_parse(const char *text, lb_netpolicy *p, char *err, size_t errsz);
/* The policy as canonical text into out: "none", "nat" or compact JSON
 * {"allow":[...],"deny":[...]}. LB_OK, or LB_E_TOOBIG when outsz is short. */
LB_MUST_CHECK int lb_netpolicy_text(const lb_netpolicy *p, char *out, size_t outsz);

/* Whether every allow rule of p lies within a rule of the ceiling (an
 * operator's list of rules, as allow rules of a policy): LB_OK, or
 * LB_E_DENIED with a sentence in err that names the first rule beyond it.
 * A name is within an equal name, a wider "*." rule or "*"; a network
 * within a network containing it; a rule with a port within a ceiling rule
 * of no port or the same port; a secret within a ceiling that lists it
 * (secret:NAME). "none" is within every ceiling; "nat" is
 * the operator's network_allow, not this function's. */
LB_MUST_CHECK int lb_netpolicy_within(const lb_netpolicy *p, const lb_netpolicy *ceiling, char *err,
                                      size_t errsz);

/* The operator's ceilings applied to p: within the service's list (text
 * of network_egress_max) and, when user is not NULL or "", within the
 * user's own. LB_OK; LB_E_DENIED with a sentence naming the rule and the
 * setting; LB_E_NOMEM. */
LB_MUST_CHECK int lb_netpolicy_admit(const lb_netpolicy *p, const char *service, const char *user, char *err,
                                     size_t errsz);

/* The operator's byte allowances applied to p (service and user: bytes,
 * 0 for none): a "max_bytes" above either is LB_E_DENIED with a sentence
 * naming the setting; a policy of rules with none gets the user's, so it
 * travels to the gateway (the service's reaches it as --max-bytes). */
LB_MUST_CHECK int lb_netpolicy_admit_bytes(lb_netpolicy *p, unsigned long long service, unsigned long long user,
                                           char *err, size_t errsz);

/* Whether the gateway answers a DNS question for name: 1 when an allow
 * rule names it (or is "*") and no deny rule of every port names it. The
 * rule that decided goes to why (may be NULL). */
int lb_netpolicy_name_ok(const lb_netpolicy *p, const char *name, char *why, size_t whysz);

/* Whether a connection to sa (after resolving; AF_INET or AF_INET6) on
 * port may be made, name being the name the sandbox used (the DNS name it
 * resolved, or the HTTP Host / TLS SNI it sent; NULL when it used an
 * address). self lists the host's own addresses (nself of them, NULL
 * allowed): never reached. 1 allowed, 0 refused; why gets the rule that
 * decided, or the reason none did, as a short phrase. */
int lb_netpolicy_dest_ok(const lb_netpolicy *p, const char *name, const struct sockaddr *sa, size_t salen,
                         int port, const struct sockaddr_storage *self, int nself, char *why, size_t whysz);

#endif
