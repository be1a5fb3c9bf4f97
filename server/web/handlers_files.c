/* File routes: one artifact, the trajectory, the bundles. The web never
 * sends file bytes itself: it checks the request against the store, then
 * hands nginx an internal URI (X-Accel-Redirect), and nginx serves the file
 * with Range support, sendfile, and without following symlinks. */
#include "web/web.h"

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* True when path is a regular file (not a symlink). */
static int lb_is_regular(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* True when base/rel is a regular file reached without crossing any
 * symlink: every folder is opened with O_NOFOLLOW relative to the last one,
 * so a symlinked folder inside the output cannot point us elsewhere.
 * (nginx checks the same with disable_symlinks; this makes the answer a
 * clear JSON 404 instead of nginx's page.) rel is clean (lb_path_clean_rel). */
static int lb_regular_nofollow(const char *base, const char *rel)
{
    int dfd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    int ok = 0;
    char comp[LB_NAME_MAX + 1];
    const char *p = rel;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || n > LB_NAME_MAX)
            break;
        memcpy(comp, p, n);
        comp[n] = '\0';
        if (!slash) {
            struct stat st;
            ok = fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
            break;
        }
        int nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(dfd);
        dfd = nfd;
        if (dfd < 0)
            break;
        p = slash + 1;
    }
    if (dfd >= 0)
        close(dfd);
    return ok;
}

static int lb_task_exists(lb_req *r, char *status, size_t statussz)
{
    int rc = lb_store_task_state(r->store, r->id, status, statussz, NULL);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task");
        return 0;
    }
    return 1;
}

/* Types a browser may show in a tab when asked to (?inline=1). Active
 * types (html, svg) are safe to show only because nginx adds
 * "Content-Security-Policy: sandbox" to everything under /_artifacts/. */
static int lb_inline_ok(const char *mime)
{
    return !strncmp(mime, "image/", 6) || !strncmp(mime, "audio/", 6) || !strncmp(mime, "video/", 6) ||
           !strncmp(mime, "text/", 5) || !strcmp(mime, "application/json") || !strcmp(mime, "application/pdf");
}

/* GET /api/tasks/{id}/artifacts/{path} */
void lb_h_artifact(lb_req *r)
{
    const lb_config *cfg = lb_cfg();
    char decoded[LB_PATH_MAX * 3 + 1], clean[LB_PATH_MAX + 1];
    size_t dlen;
    char status[16];
    if (lb_url_decode(r->rest, strlen(r->rest), decoded, sizeof decoded, &dlen, 0) != LB_OK ||
        lb_path_clean_rel(decoded, dlen, clean, sizeof clean) != LB_OK) {
        lb_http_error(r, 404, "not_found", "There is no artifact with that path.");
        return;
    }
    if (!lb_task_exists(r, status, sizeof status))
        return;
    lb_artifact a;
    int rc = lb_store_artifact_find(r->store, r->id, clean, &a);
    if (rc == LB_E_NOTFOUND) {
        lb_http_error(r, 404, "not_found", "The task has no artifact \"%s\".", clean);
        return;
    }
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the artifact index");
        return;
    }
    char outdir[LB_CFG_PATH + 64];
    snprintf(outdir, sizeof outdir, "%s/%s/output", cfg->artifacts_dir, r->id);
    if (!lb_regular_nofollow(outdir, a.path)) {
        lb_http_error(r, 404, "not_found", "The file of artifact \"%s\" is missing.", a.path);
        return;
    }
    char q[8] = "";
    int want_inline = r->preview || (lb_query_get(r->query, "inline", q, sizeof q) == LB_OK && !strcmp(q, "1"));
    const char *mime = a.mime[0] ? a.mime : "application/octet-stream";
    char ctype[192], disp[1600], enc[LB_PATH_MAX * 3 + 1], uri[sizeof enc + 128];
    /* generated text is UTF-8 almost always; without a charset browsers
     * would show it as windows-1252 */
    if (!strncmp(mime, "text/", 5) && !strchr(mime, ';'))
        snprintf(ctype, sizeof ctype, "%s; charset=utf-8", mime);
    else
        snprintf(ctype, sizeof ctype, "%s", mime);
    if (lb_content_disposition(want_inline && lb_inline_ok(mime) ? "inline" : "attachment", a.path, disp,
                               sizeof disp) != LB_OK ||
        lb_url_encode_path(a.path, enc, sizeof enc) != LB_OK) {
        lb_http_error(r, 500, NULL, "The artifact name is too long to serve.");
        return;
    }
    snprintf(uri, sizeof uri, "/_artifacts/%s/output/%s", r->id, enc);
    lb_http_accel(r, uri, ctype, disp);
}

/* GET /api/tasks/{id}/trajectory */
void lb_h_trajectory(lb_req *r)
{
    const lb_config *cfg = lb_cfg();
    char status[16];
    if (!lb_task_exists(r, status, sizeof status))
        return;
    char file[LB_CFG_PATH + 128];
    snprintf(file, sizeof file, "%s/%s/trajectory.json", cfg->artifacts_dir, r->id);
    if (!lb_is_regular(file)) {
        /* an ended task without one: its agent died first (a crash the agent
         * could not report itself); the task's reason says what happened */
        if (strcmp(status, "queued") && strcmp(status, "running"))
            lb_http_error(r, 404, "not_found",
                          "The task %s without writing a trajectory: its agent stopped before it could "
                          "(the task's reason says why).", status);
        else
            lb_http_error(r, 404, "not_found", "The task has no trajectory yet (status: %s).", status);
        return;
    }
    char name[64], disp[256], uri[128];
    snprintf(name, sizeof name, "trajectory-%.8s.json", r->id);
    lb_content_disposition("inline", name, disp, sizeof disp);
    snprintf(uri, sizeof uri, "/_artifacts/%s/trajectory.json", r->id);
    lb_http_accel(r, uri, "application/json", disp);
}

/* True when some artifact of the task lies under folder/ (clean). */
static int lb_folder_in_index(lb_req *r, const char *folder, int *found)
{
    cJSON *arr = NULL;
    int rc = lb_store_artifacts_get(r->store, r->id, &arr);
    if (rc != LB_OK)
        return rc;
    size_t n = strlen(folder);
    *found = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
        if (p && !strncmp(p, folder, n) && p[n] == '/') {
            *found = 1;
            break;
        }
    }
    cJSON_Delete(arr);
    return LB_OK;
}

/* GET /api/tasks/{id}/bundle.zip and bundle.tar.gz [?path=folder] */
void lb_h_bundle(lb_req *r, const char *format)
{
    char status[16];
    char raw[LB_PATH_MAX + 1], folder[LB_PATH_MAX + 1] = "";
    int qrc = lb_query_get(r->query, "path", raw, sizeof raw);
    if (qrc == LB_OK && raw[0]) {
        if (lb_path_clean_rel(raw, strlen(raw), folder, sizeof folder) != LB_OK) {
            lb_http_error(r, 400, NULL, "path must be a folder of the task's output, like plots/2024.");
            return;
        }
    } else if (qrc != LB_OK && qrc != LB_E_NOTFOUND) {
        lb_http_error(r, 400, NULL, "path must be a folder of the task's output, like plots/2024.");
        return;
    }
    if (!lb_task_exists(r, status, sizeof status))
        return;
    if (strcmp(status, "succeeded") && strcmp(status, "failed") && strcmp(status, "cancelled")) {
        lb_http_error(r, 409, NULL, "The task is still %s; the bundle is made once it has ended.", status);
        return;
    }
    if (folder[0]) {
        int found = 0;
        int rc = lb_folder_in_index(r, folder, &found);
        if (rc != LB_OK) {
            lb_http_store_error(r, rc, "read the artifact index");
            return;
        }
        if (!found) {
            lb_http_error(r, 404, "not_found", "The task has no output folder \"%s\".", folder);
            return;
        }
    }
    char file[96], name[LB_NAME_MAX + 64], disp[1200], uri[160];
    const char *top = strrchr(folder, '/');
    if (folder[0])
        snprintf(name, sizeof name, "llmbox-%.8s-%s.%s", r->id, top ? top + 1 : folder, format);
    else
        snprintf(name, sizeof name, "llmbox-%.8s.%s", r->id, format);
    lb_content_disposition("attachment", name, disp, sizeof disp);
    if (folder[0]) {
        /* streamed, never kept: see bundle.c */
        lb_bundle_stream(r, format, folder, disp);
        return;
    }
    char err[512] = "";
    int rc = lb_bundle_build(r->store, r->id, format, err, sizeof err);
    if (rc == LB_E_TOOBIG) {
        lb_http_error(r, 413, NULL, "%s", err);
        return;
    }
    if (rc == LB_E_NOTFOUND) {
        lb_http_error(r, 404, "not_found", "%s", err[0] ? err : "The task's files are gone.");
        return;
    }
    if (rc == LB_E_NOSPACE) {
        lb_http_disk_full(r, "build the bundle (the files can still be downloaded one by one)");
        return;
    }
    if (rc != LB_OK) {
        lb_error("web: task %s: bundle.%s: %s", r->id, format, err);
        lb_http_error(r, 500, NULL, "Could not build the bundle: %s", err[0] ? err : lb_strerror(rc));
        return;
    }
    lb_bundle_name(format, file, sizeof file);
    snprintf(uri, sizeof uri, "/_artifacts/%s/%s", r->id, file);
    lb_http_accel(r, uri, strcmp(format, "zip") ? "application/gzip" : "application/zip", disp);
}
