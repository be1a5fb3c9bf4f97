/* The secrets links are signed with, shared by every web on one store
 * (the contract is shared_secrets.h; several nodes, stateless webs).
 *
 *   download  the key of signed download links (download_link.c), which
 *             nginx checks too: each host's nginx reads it from
 *             var/web/download.key at its start (scripts/nginx-local.sh).
 *             The first web on a database offers its file's key; every
 *             later web adopts the store's and writes it to its file
 *             (atomically, 0600), so the next start of its nginx agrees.
 *             Until then nginx hands a link it cannot verify to the
 *             backend (@dl_fetch), which checks it against the store's.
 *   preview   the secret preview keys are HMACs under (artifact_access.c);
 *             before several nodes made at each start, so a restart or another
 *             web broke every preview link handed out.
 *
 * Rotation (`llmbox secrets rotate NAME`): a new generation signs; the one
 * before still verifies, until the next rotation; older ones are deleted.
 * So the overlap is the time between two rotations: rotate the download
 * key no more often than download_link_ttl_s plus a minute (a link lives
 * that long), preview keys as often as a page may stay open. Webs read the
 * secrets again every LB_SECRETS_REFRESH_S, and at once (at most once a
 * second) when a link fails to verify, so a link a web signed right after
 * a rotation verifies on one that has not read it yet.
 *
 * Never logged: messages name a secret, never its value. */
#include "web/shared_secrets.h"

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const lb_secret_names[LB_SECRET_N] = {"download", "preview"};

static pthread_mutex_t lb_sec_mu = PTHREAD_MUTEX_INITIALIZER;
static char lb_sec_cur[LB_SECRET_N][LB_SECRET_MAX], lb_sec_prev[LB_SECRET_N][LB_SECRET_MAX];
static int lb_sec_on[LB_SECRET_N];
static int64_t lb_sec_loaded_ms; /* monotonic: the last read */
static const lb_config *lb_sec_cfg;

void lb_secrets_get(lb_secret_id id, char cur[LB_SECRET_MAX], char prev[LB_SECRET_MAX])
{
    pthread_mutex_lock(&lb_sec_mu);
    memcpy(cur, lb_sec_cur[id], LB_SECRET_MAX);
    memcpy(prev, lb_sec_prev[id], LB_SECRET_MAX);
    pthread_mutex_unlock(&lb_sec_mu);
}

/* Reads every secret in use from s (candidate: what to offer when the
 * store has none). 1 when one changed, 0 when none, an lb_status < 0 as
 * -rc when the store failed. */
static int lb_secrets_read(lb_store *s, const char *const cand[LB_SECRET_N])
{
    char cur[LB_SECRET_N][LB_SECRET_MAX], prev[LB_SECRET_N][LB_SECRET_MAX];
    memset(cur, 0, sizeof cur);
    memset(prev, 0, sizeof prev);
    for (int i = 0; i < LB_SECRET_N; i++) {
        if (!lb_sec_on[i])
            continue;
        int gen = 0;
        int rc = lb_store_secret_get(s, lb_secret_names[i], cand ? cand[i] : NULL, cur[i], prev[i], &gen);
        if (rc == LB_E_INVAL) {
            lb_error("web: the store's %s secret is not 32 to 127 lowercase hex digits (changed by hand?): "
                     "delete it (DELETE FROM web_secrets WHERE name = '%s') and every web makes a new one",
                     lb_secret_names[i], lb_secret_names[i]);
            return -rc;
        }
        if (rc != LB_OK) {
            lb_warn("web: cannot read the shared %s secret from the store: %s", lb_secret_names[i],
                    lb_strerror(rc));
            return -rc;
        }
    }
    pthread_mutex_lock(&lb_sec_mu);
    int changed = memcmp(cur, lb_sec_cur, sizeof cur) || memcmp(prev, lb_sec_prev, sizeof prev);
    memcpy(lb_sec_cur, cur, sizeof cur);
    memcpy(lb_sec_prev, prev, sizeof prev);
    lb_sec_loaded_ms = lb_mono_ms();
    pthread_mutex_unlock(&lb_sec_mu);
    return changed;
}

int lb_secrets_reload(lb_store *s)
{
    pthread_mutex_lock(&lb_sec_mu);
    int fresh = lb_mono_ms() - lb_sec_loaded_ms < 1000;
    pthread_mutex_unlock(&lb_sec_mu);
    if (fresh || !s)
        return 0;
    return lb_secrets_read(s, NULL) > 0;
}

/* The key file nginx reads: one line of 64 lowercase hex digits. 1 when
 * file holds one (copied to out), else 0. */
static int lb_key_file_read(const char *file, char out[LB_SECRET_MAX])
{
    int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[80];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0)
        return 0;
    buf[n] = '\0';
    size_t len = strspn(buf, "0123456789abcdef");
    if (len != 64 || (buf[len] && strcmp(buf + len, "\n")))
        return 0;
    memcpy(out, buf, 64);
    out[64] = '\0';
    return 1;
}

/* Writes the store's download key to var/web/download.key when it holds
 * another (local: what it holds, "" for nothing usable). */
static void lb_key_file_sync(const char *local)
{
    char cur[LB_SECRET_MAX], prev[LB_SECRET_MAX], file[LB_CFG_PATH + 32];
    lb_secrets_get(LB_SECRET_DOWNLOAD, cur, prev);
    if (!lb_sec_on[LB_SECRET_DOWNLOAD] || !cur[0] || !strcmp(cur, local))
        return;
    /* nginx reads this file at its start: the next one agrees with the
     * store; the one running now hands the links it cannot check to the
     * backend (@dl_fetch), which checks them with the store's keys */
    snprintf(file, sizeof file, "%s/web/download.key", lb_sec_cfg->var_dir);
    char line[LB_SECRET_MAX + 2];
    int n = snprintf(line, sizeof line, "%s\n", cur);
    if (lb_write_file_atomic(file, line, (size_t)n, 0600) != LB_OK)
        lb_warn("web: cannot write the store's download key to %s: %s; nginx checks links with another key "
                "(the backend still serves them, slower)", file, strerror(errno));
    else
        lb_info("web: %s now holds the download key shared through the store (%s); nginx uses it from its "
                "next start (scripts/nginx-local.sh, then reload); until then links go through the backend",
                file, local[0] ? "it held another" : "it held none");
}

static void *lb_secrets_refresher(void *arg)
{
    (void)arg;
    lb_store *s = NULL;
    for (;;) {
        sleep(LB_SECRETS_REFRESH_S);
        if (!s && lb_store_open(lb_cfg_store_where(lb_sec_cfg), &s) != LB_OK) {
            s = NULL;
            continue; /* the store is down: keep what we have, try again */
        }
        int rc = lb_secrets_read(s, NULL);
        if (rc > 0) {
            lb_info("web: the shared secrets changed in the store (a rotation): signing with the new ones");
            char file[LB_CFG_PATH + 32], local[LB_SECRET_MAX] = "";
            snprintf(file, sizeof file, "%s/web/download.key", lb_sec_cfg->var_dir);
            if (!lb_key_file_read(file, local))
                local[0] = '\0';
            lb_key_file_sync(local);
        }
        if (rc < 0) {
            lb_store_close(s); /* a new connection next time */
            s = NULL;
        }
    }
    return NULL;
}

int lb_secrets_start(const lb_config *cfg, lb_store *s)
{
    lb_sec_cfg = cfg;
    char file[LB_CFG_PATH + 32], local[LB_SECRET_MAX] = "", fresh_dl[LB_SECRET_MAX], fresh_pv[LB_SECRET_MAX];
    snprintf(file, sizeof file, "%s/web/download.key", cfg->var_dir);
    int have_local = lb_key_file_read(file, local);
    if (lb_random_hex(fresh_dl, sizeof fresh_dl, 32) != LB_OK || lb_random_hex(fresh_pv, sizeof fresh_pv, 32) != LB_OK)
        return LB_E_INTERNAL;
    lb_sec_on[LB_SECRET_DOWNLOAD] = cfg->download_link_ttl_s != 0;
    lb_sec_on[LB_SECRET_PREVIEW] = 1;
    const char *cand[LB_SECRET_N] = {have_local ? local : fresh_dl, fresh_pv};
    int r = lb_secrets_read(s, cand);
    if (r < 0)
        return -r;
    lb_key_file_sync(have_local ? local : "");
    pthread_t t;
    if (pthread_create(&t, NULL, lb_secrets_refresher, NULL) != 0)
        return LB_E_NOMEM;
    pthread_detach(t);
    return LB_OK;
}

static void lb_secrets_usage(FILE *f)
{
    fprintf(f, "usage: llmbox secrets rotate download|preview\n"
               "  a new generation of the secret every web on this store signs with; links signed\n"
               "  with the one before still verify until the next rotation (docs/OPERATIONS.md)\n");
}

int lb_secrets_cmd(int argc, char **argv, const lb_config *cfg)
{
    if (argc != 3 || strcmp(argv[1], "rotate") ||
        (strcmp(argv[2], "download") && strcmp(argv[2], "preview"))) {
        lb_secrets_usage(stderr);
        return 2;
    }
    lb_store *s = NULL;
    int rc = lb_store_open(lb_cfg_store_where(cfg), &s);
    char fresh[LB_SECRET_MAX];
    int gen = 0;
    if (rc == LB_OK)
        rc = lb_random_hex(fresh, sizeof fresh, 32);
    if (rc == LB_OK)
        rc = lb_store_secret_rotate(s, argv[2], fresh, &gen);
    lb_store_close(s);
    if (rc == LB_E_EXISTS) {
        fprintf(stderr, "llmbox secrets: another rotation of %s came at the same moment; nothing done\n", argv[2]);
        return 1;
    }
    if (rc != LB_OK) {
        fprintf(stderr, "llmbox secrets: cannot rotate %s: %s\n", argv[2], lb_strerror(rc));
        return 1;
    }
    printf("%s secret: generation %d signs from now on (within %d s on every web); generation %d still "
           "verifies until the next rotation\n",
           argv[2], gen, LB_SECRETS_REFRESH_S, gen - 1);
    if (!strcmp(argv[2], "download"))
        printf("each web writes the new key to var/web/download.key at its next start; meanwhile nginx hands "
               "new links to the backend\n");
    return 0;
}
