/* File routes: one artifact, the trajectory, the bundles. The web never
 * sends file bytes itself (but for folder bundles, bundle.c): it checks the
 * request against the rules of artifact_access.c, then hands nginx an
 * internal URI (X-Accel-Redirect), and nginx serves the file with Range
 * support, sendfile, and without following symlinks. */
#include "web/handlers_files.h"

#include "web/blob_ready.h" /* several nodes */
#include "web/bundle.h"
#include "web/http.h"
#include "common/path.h"
#include "store/store.h"

#include "web/artifact_access.h"

#include "common/config.h"
#include "common/status.h"
#include "common/task.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* True when path is a regular file (not a symlink). */
static int lb_is_regular(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
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

/* GET /api/tasks/{id}/artifacts/{path} */
void lb_h_artifact(lb_req *r)
{
    lb_artifact a;
    if (lb_artifact_find(r, &a) != LB_OK) /* answered */
        return;
    const char *mime = a.mime[0] ? a.mime : "application/octet-stream";
    char ctype[192], disp[1600], enc[LB_PATH_MAX * 3 + 1], uri[sizeof enc + 128];
    /* generated text is UTF-8 almost always; without a charset browsers
     * would show it as windows-1252 */
    if (!strncmp(mime, "text/", 5) && !strchr(mime, ';'))
        snprintf(ctype, sizeof ctype, "%s; charset=utf-8", mime);
    else
        snprintf(ctype, sizeof ctype, "%s", mime);
    if (lb_content_disposition(lb_artifact_disposition(r, mime), a.path, disp, sizeof disp) != LB_OK ||
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
    const lb_config *cfg = r->cfg;
    char status[16];
    if (!lb_task_exists(r, status, sizeof status))
        return;
    if (!lb_blob_record_ready(r, "trajectory.json")) /* several nodes: another node's round; answered */
        return;
    char file[LB_CFG_PATH + 128];
    snprintf(file, sizeof file, "%s/%s/trajectory.json", cfg->artifacts_dir, r->id);
    if (!lb_is_regular(file)) {
        /* an ended task without one: its agent died first (a crash the agent
         * could not report itself); the task's reason says what happened */
        if (lb_task_status_is_final(lb_task_status_parse(status)))
            lb_http_error(r, 404, "not_found",
                          "The task %s without writing a trajectory: its agent stopped before it could "
                          "(the task's reason says why).", status);
        else
            lb_http_error(r, 404, "not_found", "The task has no trajectory yet (status: %s).", status);
        return;
    }
    char name[64], disp[256], uri[128];
    snprintf(name, sizeof name, "trajectory-%.8s.json", r->id);
    if (lb_content_disposition("inline", name, disp, sizeof disp) != LB_OK) {
        lb_http_error(r, 500, NULL, "Could not name the trajectory's file.");
        return;
    }
    snprintf(uri, sizeof uri, "/_artifacts/%s/trajectory.json", r->id);
    lb_http_accel(r, uri, "application/json", disp);
}

/* GET /api/tasks/{id}/bundle.zip and bundle.tar.gz [?path=folder] */
static void lb_h_bundle(lb_req *r, const char *format)
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
    if (!lb_task_status_is_final(lb_task_status_parse(status))) {
        lb_http_error(r, 409, NULL, "The task is still %s; the bundle is made once it has ended.", status);
        return;
    }
    if (folder[0]) {
        int found = 0;
        int rc = lb_artifact_folder_listed(r->store, r->id, folder, &found);
        if (rc != LB_OK) {
            lb_http_store_error(r, rc, "read the artifact index");
            return;
        }
        if (!found) {
            lb_http_error(r, 404, "not_found", "The task has no output folder \"%s\".", folder);
            return;
        }
    }
    char name[LB_NAME_MAX + 64], disp[1200];
    const char *top = strrchr(folder, '/');
    if (folder[0])
        snprintf(name, sizeof name, "llmbox-%.8s-%s.%s", r->id, top ? top + 1 : folder, format);
    else
        snprintf(name, sizeof name, "llmbox-%.8s.%s", r->id, format);
    if (lb_content_disposition("attachment", name, disp, sizeof disp) != LB_OK) {
        lb_http_error(r, 500, NULL, "Could not name the bundle's file.");
        return;
    }
    if (!lb_blob_ready(r, folder, 1)) /* several nodes: built from the store's files; answered */
        return;
    if (!folder[0] && !lb_blob_record_ready(r, "trajectory.json")) /* the whole task's has it; answered */
        return;
    lb_bundle_serve(r, format, folder, disp); /* built once, in bounds: bundle.c */
}

void lb_h_bundle_zip(lb_req *r)
{
    lb_h_bundle(r, "zip");
}

void lb_h_bundle_tgz(lb_req *r)
{
    lb_h_bundle(r, "tar.gz");
}
