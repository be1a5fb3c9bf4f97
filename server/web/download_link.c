/* Signed download links: nginx serves an artifact download on its own,
 * with no request to the backend.
 *
 * The backend decides who may read a task's files when it lists them
 * (GET /api/tasks/{id} and /artifacts answer the owner only); with each
 * file it hands out a link
 *     /dl/{task}/{path}?e={expires}&s={signature}
 * where signature = base64url(MD5("{expires}/dl/{task}/{path} {key}")),
 * which is what nginx's secure_link module checks (secure_link_md5 in
 * nginx.conf) before it sends the file as a static one. A small download
 * then costs what a static file costs (bench/web.py): the FastCGI round
 * trip and the store reads of /api/tasks/{id}/artifacts/{path} were three
 * quarters of its time. That route stays, for previews (it knows each
 * file's type) and for clients that build URLs themselves.
 *
 * The key: 32 random bytes in var/web/download.key, made by
 * scripts/nginx-local.sh (run by prepare-dirs.sh), which also hands it to
 * nginx. Several nodes: the store holds the key every web signs with (the
 * first web's file key; shared_secrets.c), and a web writes it to its
 * file when they differ. MD5 is the only digest stock nginx checks; with the secret at the
 * end of the message a forger would need a preimage or a collision of
 * two valid artifact paths of different tasks, and paths are UTF-8 without
 * controls (docs/ARCHITECTURE.md "Signed download links"), which
 * lb_download_link_sign checks (lb_artifact_path_ok).
 * A link is a capability: whoever holds it may download that one file
 * until it expires (download_link_ttl_s, default an hour); who gets links
 * and what else may read a task's files: artifact_access.c. */
#include "web/download_link.h"

#include "web/http.h"

#include "web/artifact_access.h"
#include "web/shared_secrets.h" /* several nodes */

#include "common/config.h"
#include "common/log.h"
#include "common/path.h"
#include "common/status.h"
#include "common/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h> /* CRYPTO_memcmp: several nodes */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int lb_dl_on;     /* links are handed out */
static int lb_dl_ttl_s;  /* download_link_ttl_s */

void lb_download_links_init(const lb_config *cfg)
{
    lb_dl_ttl_s = cfg->download_link_ttl_s;
    char cur[LB_SECRET_MAX], prev[LB_SECRET_MAX];
    lb_secrets_get(LB_SECRET_DOWNLOAD, cur, prev);
    lb_dl_on = cfg->download_link_ttl_s != 0 && cur[0];
    if (cfg->download_link_ttl_s == 0)
        lb_info("web: download links are off (download_link_ttl_s = 0): downloads go through the backend");
    else if (!cur[0])
        lb_warn("web: download links are off: no download key from the store; downloads go through the backend");
}

int lb_download_link_sign(const char *key, long long expires, const char *task_id, const char *path, char *out,
                          size_t outsz)
{
    char enc[LB_PATH_MAX * 3 + 1];
    /* a clean path only: the signature's strength rests on it (above) */
    if (!lb_id_valid(task_id) || !lb_artifact_path_ok(path, strlen(path)) ||
        lb_url_encode_path(path, enc, sizeof enc) != LB_OK)
        return LB_E_INVAL;
    /* the message: nginx's "$secure_link_expires$uri $llmbox_download_key",
     * where $uri is the decoded path, i.e. the artifact's own name */
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char head[64];
    int hn = snprintf(head, sizeof head, "%lld/dl/%s/", expires, task_id);
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_md5(), NULL) == 1 && EVP_DigestUpdate(ctx, head, (size_t)hn) == 1 &&
             EVP_DigestUpdate(ctx, path, strlen(path)) == 1 && EVP_DigestUpdate(ctx, " ", 1) == 1 &&
             EVP_DigestUpdate(ctx, key, strlen(key)) == 1 && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 &&
             mdlen == 16;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return LB_E_INTERNAL;
    /* base64url without padding, as secure_link reads it: 16 bytes -> 22 */
    unsigned char b64[32];
    int bn = EVP_EncodeBlock(b64, md, 16);
    while (bn > 0 && b64[bn - 1] == '=')
        bn--;
    for (int i = 0; i < bn; i++)
        b64[i] = b64[i] == '+' ? '-' : b64[i] == '/' ? '_' : b64[i];
    b64[bn] = '\0';
    int n = snprintf(out, outsz, "/dl/%s/%s?e=%lld&s=%s", task_id, enc, expires, (const char *)b64);
    return n > 0 && (size_t)n < outsz ? LB_OK : LB_E_TOOBIG;
}

/* When links made now expire: the end of the minute, plus the ttl, so
 * every list fetched within a minute carries the same links. */
static long long lb_download_expires(void)
{
    long long now = (long long)time(NULL);
    return (now / 60 + 1) * 60 + lb_dl_ttl_s;
}

void lb_download_links_add(cJSON *artifacts, const char *task_id)
{
    char key[LB_SECRET_MAX], prev[LB_SECRET_MAX];
    lb_secrets_get(LB_SECRET_DOWNLOAD, key, prev);
    if (!lb_dl_on || !key[0] || !cJSON_IsArray(artifacts))
        return;
    long long expires = lb_download_expires();
    char url[LB_PATH_MAX * 3 + 160];
    cJSON *it;
    cJSON_ArrayForEach(it, artifacts)
    {
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
        if (!path || lb_download_link_sign(key, expires, task_id, path, url, sizeof url) != LB_OK)
            continue; /* the page falls back to /api/tasks/{id}/artifacts/{path} */
        cJSON_AddStringToObject(it, "download_url", url);
        cJSON_AddNumberToObject(it, "download_expires", (double)expires);
    }
}

/* One key's verdict on a link. */
static int lb_dl_check_key(const char *key, long long expires, const char *task_id, const char *path, const char *sig)
{
    char link[LB_PATH_MAX * 3 + 160];
    if (!key[0] || lb_download_link_sign(key, expires, task_id, path, link, sizeof link) != LB_OK)
        return 0;
    const char *s = strstr(link, "&s=");
    return s && strlen(sig) == strlen(s + 3) && CRYPTO_memcmp(sig, s + 3, strlen(sig)) == 0;
}

/* several nodes: the same check nginx's secure_link made, made again by the
 * backend before it serves a link nginx handed over: with the store's
 * key and the one before it (a rotation's overlap), read again once when
 * both fail (another web may have seen a rotation first). */
int lb_download_link_check(lb_store *s, long long expires, const char *task_id, const char *path, const char *sig)
{
    if (!lb_dl_on || expires < (long long)time(NULL))
        return 0;
    for (int pass = 0; pass < 2; pass++) {
        char cur[LB_SECRET_MAX], prev[LB_SECRET_MAX];
        lb_secrets_get(LB_SECRET_DOWNLOAD, cur, prev);
        if (lb_dl_check_key(cur, expires, task_id, path, sig) || lb_dl_check_key(prev, expires, task_id, path, sig))
            return 1;
        if (pass == 0 && !lb_secrets_reload(s))
            return 0;
    }
    return 0;
}
