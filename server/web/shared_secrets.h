/* The secrets every web behind a balancer signs and checks links with,
 * kept in the store and cached here (shared_secrets.c; several nodes). */
#ifndef LB_WEB_SHARED_SECRETS_H
#define LB_WEB_SHARED_SECRETS_H

#include "common/status.h"
#include "store/store_shared.h"

struct lb_config;

typedef enum { LB_SECRET_DOWNLOAD = 0, LB_SECRET_PREVIEW = 1, LB_SECRET_N } lb_secret_id;

/* Once, before the worker threads, on s (the web's start connection):
 * the shared tables, both secrets (made once, insert-if-absent: the first
 * web on a database makes them, every later one reads them), the download
 * key written to var/web/download.key when the store's differs from it
 * (for nginx, which reads it at its start), and a thread that reads them
 * again every LB_SECRETS_REFRESH_S on its own connection. The download key
 * is absent ("") when download_link_ttl_s is 0. */
LB_MUST_CHECK int lb_secrets_start(const struct lb_config *cfg, struct lb_store *s);
/* The secret's generations now: cur signs, cur and prev verify ("" when
 * none). */
void lb_secrets_get(lb_secret_id id, char cur[LB_SECRET_MAX], char prev[LB_SECRET_MAX]);
/* A check failed: read the secrets again on s now, at most once a second
 * (a link signed by a web that saw a rotation first). 1 when they
 * changed. */
int lb_secrets_reload(struct lb_store *s);
/* `llmbox secrets rotate NAME` (download or preview): a new generation;
 * the last one still verifies until the next rotation. An exit code. */
int lb_secrets_cmd(int argc, char **argv, const struct lb_config *cfg);

#define LB_SECRETS_REFRESH_S 10

#endif
