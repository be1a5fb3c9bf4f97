/* Who we are to a registry: the WWW-Authenticate challenge a registry
 * answers 401 with (Basic, or Bearer with the token server's realm,
 * service and scope, as the distribution spec's token auth says), and the
 * operator's credentials for a registry host (LLMBOX_REGISTRY_USER and
 * LLMBOX_REGISTRY_PASSWORD, or a Docker-style auth file: {"auths":
 * {"host[:port]": {"auth": base64("user:pass")}}} as `docker login`,
 * `podman login` and skopeo write it). The challenge is a registry's
 * bytes: the parser has caps and refuses what it does not understand. */
#ifndef LB_IMAGES_REGISTRY_AUTH_H
#define LB_IMAGES_REGISTRY_AUTH_H

#include <stddef.h>

#include "common/status.h"

#define LB_REG_CHALLENGE_MAX 4096 /* a WWW-Authenticate value: Docker Hub's is ~150 bytes */
#define LB_REG_REALM_MAX 1024
#define LB_REG_CRED_MAX 512       /* user and password each */

typedef struct lb_reg_challenge {
    int bearer;                        /* 1: Bearer, 0: Basic */
    char realm[LB_REG_REALM_MAX + 1];  /* Bearer: the token server's URL (http or https) */
    char service[256];
    char scope[512];
} lb_reg_challenge;

/* Parses one WWW-Authenticate value (n bytes, not NUL-terminated) into
 * *out: scheme Basic or Bearer (any case), then comma-separated
 * name=value or name="quoted \"value\"" parameters; unknown parameters are
 * skipped. Bearer needs a realm that is an http:// or https:// URL.
 * LB_E_INVAL / LB_E_TOOBIG with a sentence in msg. Pure. */
LB_MUST_CHECK int lb_reg_challenge_parse(const char *s, size_t n, lb_reg_challenge *out, char *msg,
                                         size_t msgsz);

/* The credentials for registry host (as in a reference: "host[:port]"),
 * from the environment first, then from auth_file ("" for none; a missing
 * file is no credentials, an unreadable or malformed one an error).
 * *found is 1 when user and pass were filled. Docker Hub's entry may be
 * named "https://index.docker.io/v1/" as docker login writes it. */
LB_MUST_CHECK int lb_reg_credentials(const char *host, const char *auth_file, char *user, char *pass,
                                     size_t credsz, int *found, char *msg, size_t msgsz);

#endif
