/* Who may read a task's files, and which files may be served at all.
 *
 * A task's files are its output (artifacts/<id>/output/..., written by
 * code that ran in a sandbox, so trusted in nothing), its trajectory, and
 * the bundles made of them. There are three ways to read them:
 *
 *   1. The backend routes GET /api/tasks/{id}/artifacts/{path},
 *      /trajectory, /bundle.zip and /bundle.tar.gz: the task's owner, the
 *      user whose token or login session made it (without users, any
 *      loopback client). router.c declares them LB_WHO_OWNER, and
 *      auth.c's lb_auth_task_visible makes anyone else's task a 404. The
 *      backend only decides: nginx sends the bytes from its internal
 *      location /_artifacts/ (X-Accel-Redirect), which no client can name.
 *   2. Signed links /dl/{id}/{path}?e={expires}&s={signature}
 *      (download_link.c): whoever holds one, for that one file, until it
 *      expires (download_link_ttl_s). They are handed out only inside
 *      answers the owner alone gets (the task, its artifact list); nginx
 *      checks the signature and serves the file without the backend.
 *   3. Preview links /api/tasks/{id}/preview/{key}/{path}: whoever holds
 *      the task's preview key, for that task's artifacts only, inline and
 *      without a login. Generated html runs in a sandboxed iframe (an
 *      opaque origin) whose requests carry no SameSite cookie, so a page's
 *      own images and scripts would all be 401 otherwise. The key is an
 *      HMAC of the task id under a secret (128 bits, as hard to guess as a
 *      task id), shown only to the owner in the task object
 *      ("preview_base"), and kept out of every log (access.c). Several nodes:
 *      the secret is the store's, made once and shared by every web, so
 *      a preview link works on any web and survives restarts; rotated
 *      with `llmbox secrets rotate preview` (shared_secrets.c). Relative links inside a previewed page keep the key.
 *
 * Whichever way, what is served is the same:
 *   - a file the artifact index lists, named by a clean relative path
 *     (lb_path_clean_rel: no "..", no backslash, no control or bidi
 *     characters, valid UTF-8), which is also what makes the MD5 of a
 *     signed link safe (docs/ARCHITECTURE.md "Signed download links");
 *   - a regular file reached without crossing a symlink: O_NOFOLLOW at
 *     every level here, nginx's disable_symlinks for its own opens;
 *   - inline only a type a tab may show (image, audio, video, text, JSON,
 *     PDF), and only when asked (?inline=1) or previewed; anything else is
 *     an attachment. Every answer carries "Content-Security-Policy:
 *     sandbox" (nginx.conf), so html and svg never run as the page's own
 *     origin;
 *   - a bundle only of a finished task: of its whole output, or of a
 *     folder the index lists; its walk (bundle.c) skips symlinks, special
 *     files and names that are not clean, within the output caps.
 */
#include "web/artifact_access.h"
#include "web/blob_ready.h" /* several nodes */
#include "web/shared_secrets.h" /* several nodes */

#include "web/http.h"

#include "common/config.h"
#include "common/path.h"
#include "common/status.h"
#include "common/token.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- preview links ---- */

/* The preview key of id under secret into out[33] ("" on failure). */
static void lb_preview_key_with(const char *secret, const char *id, char out[33])
{
    char mac[LB_SHA256_HEX], msg[64];
    int n = snprintf(msg, sizeof msg, "preview:%s", id);
    if (!secret[0] || lb_hmac_sha256_hex(secret, strlen(secret), msg, (size_t)n, mac) != LB_OK) {
        out[0] = '\0';
        return;
    }
    memcpy(out, mac, 32);
    out[32] = '\0';
}

void lb_artifact_preview_key(const char *id, char out[33])
{
    char cur[LB_SECRET_MAX], prev[LB_SECRET_MAX];
    lb_secrets_get(LB_SECRET_PREVIEW, cur, prev);
    lb_preview_key_with(cur, id, out);
}

/* 1 when key (32 characters) is id's under the store's preview secret or
 * the one before it; read again once when neither matches (several nodes). */
static int lb_preview_key_valid(lb_store *s, const char *id, const char *key)
{
    for (int pass = 0; pass < 2; pass++) {
        char cur[LB_SECRET_MAX], prev[LB_SECRET_MAX], want[33];
        lb_secrets_get(LB_SECRET_PREVIEW, cur, prev);
        lb_preview_key_with(cur, id, want);
        if (want[0] && lb_ct_equal(want, key, 32))
            return 1;
        lb_preview_key_with(prev, id, want);
        if (want[0] && lb_ct_equal(want, key, 32))
            return 1;
        if (pass == 0 && !lb_secrets_reload(s))
            return 0;
    }
    return 0;
}

int lb_artifact_preview_ok(lb_req *r)
{
    const char *key = r->rest, *kend = strchr(key, '/');
    if (!kend || !kend[1] || kend - key != 32 || !lb_preview_key_valid(r->store, r->id, key)) {
        lb_http_error(r, 404, "not_found", "There is no task with id \"%s\".", r->id);
        return 0;
    }
    r->rest = kend + 1;
    r->preview = 1;
    return 1;
}

void lb_auth_add_preview(cJSON *task, const char *id)
{
    char key[33], base[128];
    lb_artifact_preview_key(id, key);
    if (!key[0] || !task)
        return;
    snprintf(base, sizeof base, "/api/tasks/%s/preview/%s/", id, key);
    cJSON_AddStringToObject(task, "preview_base", base);
}

/* ---- which files ---- */

int lb_artifact_path_ok(const char *path, size_t n)
{
    char clean[LB_PATH_MAX + 1];
    return lb_path_clean_rel(path, n, clean, sizeof clean) == LB_OK && strlen(clean) == n &&
           !memcmp(clean, path, n);
}

int lb_artifact_open_dir(int dfd, const char *rel)
{
    int fd = dup(dfd);
    char comp[LB_NAME_MAX + 1];
    const char *p = rel;
    while (fd >= 0 && *p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || n > LB_NAME_MAX) {
            close(fd);
            return -1;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = nfd;
        p = slash ? slash + 1 : p + n;
    }
    return fd;
}

/* lb_artifact_is_file (artifact_access.h): nginx checks the same with
 * disable_symlinks; this makes the answer a clear JSON 404 instead of
 * nginx's page. */
int lb_artifact_is_file(const char *base, const char *rel)
{
    char dir[LB_PATH_MAX + 1];
    const char *name = strrchr(rel, '/');
    size_t dn = name ? (size_t)(name - rel) : 0;
    if (dn >= sizeof dir)
        return 0;
    memcpy(dir, rel, dn);
    dir[dn] = '\0';
    name = name ? name + 1 : rel;
    int bfd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (bfd < 0)
        return 0;
    int dfd = lb_artifact_open_dir(bfd, dir);
    close(bfd);
    if (dfd < 0)
        return 0;
    struct stat st;
    int ok = *name && strlen(name) <= LB_NAME_MAX && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
             S_ISREG(st.st_mode);
    close(dfd);
    return ok;
}

int lb_artifact_find(lb_req *r, lb_artifact *a)
{
    char decoded[LB_PATH_MAX * 3 + 1], clean[LB_PATH_MAX + 1], status[16];
    size_t dlen;
    if (lb_url_decode(r->rest, strlen(r->rest), decoded, sizeof decoded, &dlen, 0) != LB_OK ||
        lb_path_clean_rel(decoded, dlen, clean, sizeof clean) != LB_OK) {
        lb_http_error(r, 404, "not_found", "There is no artifact with that path.");
        return LB_E_NOTFOUND;
    }
    int rc = lb_store_task_state(r->store, r->id, status, sizeof status, NULL);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task");
        return rc;
    }
    rc = lb_store_artifact_find(r->store, r->id, clean, a);
    if (rc == LB_E_NOTFOUND) {
        lb_http_error(r, 404, "not_found", "The task has no artifact \"%s\".", clean);
        return rc;
    }
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the artifact index");
        return rc;
    }
    char outdir[LB_CFG_PATH + 64];
    snprintf(outdir, sizeof outdir, "%s/%s/output", r->cfg->artifacts_dir, r->id);
    if (!lb_blob_ready(r, a->path, 0)) /* several nodes: from the object store when not here; answered */
        return LB_E_UNAVAILABLE;
    if (!lb_artifact_is_file(outdir, a->path)) {
        lb_http_error(r, 404, "not_found", "The file of artifact \"%s\" is missing.", a->path);
        return LB_E_NOTFOUND;
    }
    return LB_OK;
}

/* Types a browser may show in a tab. Active types (html, svg) are safe to
 * show only because nginx adds "Content-Security-Policy: sandbox" to
 * everything under /_artifacts/. */
static int lb_inline_ok(const char *mime)
{
    return !strncmp(mime, "image/", 6) || !strncmp(mime, "audio/", 6) || !strncmp(mime, "video/", 6) ||
           !strncmp(mime, "text/", 5) || !strcmp(mime, "application/json") || !strcmp(mime, "application/pdf");
}

const char *lb_artifact_disposition(const lb_req *r, const char *mime)
{
    char q[8] = "";
    int asked = r->preview || (lb_query_get(r->query, "inline", q, sizeof q) == LB_OK && !strcmp(q, "1"));
    return asked && lb_inline_ok(mime) ? "inline" : "attachment";
}

int lb_artifact_folder_listed(lb_store *s, const char *id, const char *folder, int *found)
{
    lb_artifact *rows = NULL;
    size_t nrows = 0;
    *found = 0;
    int rc = lb_store_artifacts_rows(s, id, &rows, &nrows);
    if (rc != LB_OK)
        return rc;
    size_t n = strlen(folder);
    for (size_t i = 0; i < nrows; i++) {
        if (!strncmp(rows[i].path, folder, n) && rows[i].path[n] == '/') {
            *found = 1;
            break;
        }
    }
    free(rows);
    return LB_OK;
}
