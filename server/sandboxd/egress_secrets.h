/* What sandboxd does for the gateway's secrets and bandwidth
 * (egress_secrets.c; docs/NETWORK.md "Secrets"): hands the values of the
 * secrets a policy names to that sandbox's gateway alone, puts the
 * gateway's CA certificate (never its key) into the sandbox's trust, and
 * says which environment points programs at it. Root reads no traffic and
 * links no TLS library: the gateway makes the CA, this copies a file. */
#ifndef LB_SANDBOXD_EGRESS_SECRETS_H
#define LB_SANDBOXD_EGRESS_SECRETS_H

#include <stddef.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/status.h"

struct lbsd_sandbox;

#define LBSD_EGSEC_ARGS 8 /* argv words lbsd_egsec_args may add */
#define LBSD_EGSEC_FD 5   /* the gateway's fd of the secrets pipe */

/* At startup: the secrets, network_bandwidth_max and network_upstream_ca. */
void lbsd_egsec_configure(const lb_config *cfg);

/* When the policy (text) names secrets: their values read (value_file or
 * value_env) and written as JSON into a pipe whose read end goes to *fd
 * (close-on-exec; the gateway gets it as LBSD_EGSEC_FD), so that the
 * values are never in a file; *fd is -1 when the policy names none. A
 * transform secret (a name with LB_NETPOL_TRANSFORM_PREFIX: E2B's per-host
 * headers, whose values the client gave) takes its entry from values (the
 * create's JSON [{name, hosts, header, value}], or NULL), not from the
 * operator's sections; one values lacks is left out. LB_OK; a code and a
 * sentence naming the secret. */
LB_MUST_CHECK int lbsd_egsec_pipe(const char *policy, const char *values, int *fd, char *msg, size_t msgsz);

/* Appends the gateway's --bandwidth-max, --upstream-ca and (secrets: 1)
 * --secrets-fd to argv (at most LBSD_EGSEC_ARGS words from argv[at]);
 * returns the new count. */
int lbsd_egsec_args(char **argv, int at, int secrets);

/* Waits for the gateway's dir/ca.crt (owned by uid) and writes it into the
 * sandbox: /etc/llmbox/ca.crt, /etc/llmbox/ca-bundle.crt (the image's
 * /etc/ssl/certs/ca-certificates.crt and the CA) and that system bundle
 * itself with the CA added. LB_OK or a code and a sentence. */
LB_MUST_CHECK int lbsd_egsec_install_ca(struct lbsd_sandbox *sb, const char *dir, uid_t uid, char *msg,
                                        size_t msgsz);

/* Whether sb has /etc/llmbox/ca-bundle.crt (no symlink followed): its
 * processes then get SSL_CERT_FILE and the like (lbsd_egsec_env). */
int lbsd_egsec_has_ca(const struct lbsd_sandbox *sb);

/* The environment that points programs at the bundle, NULL-terminated. */
extern const char *const lbsd_egsec_env[];

#endif
