/* POST /api/tasks/{id}/rerun: "Run again". A new task with the same
 * prompt, model, turn limit, sandbox options, run options (mode, layout
 * ..., schema v6) and input files as task {id},
 * which may be in any state (its inputs never change once it exists).
 *
 * With ?replay=1 ("Replay"), the new task asks no model: it plays the
 * ended task's trajectory.json back through the tools in a fresh sandbox
 * (the replay provider), so a run is reproduced without an endpoint. The
 * trajectory is linked into the new task's folder as replay.json and the
 * task's model is LB_MODEL_REPLAY_TASK. A replay of a replay replays again.
 *
 * The input files are hard-linked into the new task's folder when they can
 * be (nothing ever writes to an input after the upload: sandboxd copies
 * them into the sandbox), and copied when they cannot. Each file is named
 * by the source task's input list and reached without following any
 * symlink, on both sides.
 */
#include "web/handlers_rerun.h"

#include "web/auth.h"
#include "web/http.h"
#include "web/task_options.h"
#include "web/user_limits.h"
#include "common/path.h"
#include "store/store.h"

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"
#include "web/admission.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens the folder holding rel under root (creating folders when create),
 * never through a symlink; *base gets the last component. -1 on failure. */
static int lb_open_parent(int root, const char *rel, int create, const char **base)
{
    int dfd = dup(root);
    const char *p = rel;
    char comp[LB_NAME_MAX + 1];
    for (;;) {
        const char *slash = strchr(p, '/');
        if (!slash)
            break;
        size_t n = (size_t)(slash - p);
        if (dfd < 0 || n == 0 || n > LB_NAME_MAX) {
            if (dfd >= 0)
                close(dfd);
            return -1;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        if (create && mkdirat(dfd, comp, 0750) != 0 && errno != EEXIST) {
            close(dfd);
            return -1;
        }
        int nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(dfd);
        dfd = nfd;
        p = slash + 1;
    }
    *base = p;
    return dfd;
}

static int lb_copy_fd(int in, int out)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return LB_E_IO;
        if (n == 0)
            return LB_OK;
        if (lb_write_all(out, buf, (size_t)n) != LB_OK)
            return LB_E_IO;
    }
}

/* Hard-links (or copies) the regular file sbase in folder sdir to dbase in
 * ddir, never through a symlink. */
static int lb_link_or_copy(int sdir, const char *sbase, int ddir, const char *dbase)
{
    int rc = LB_OK;
    struct stat st;
    if (fstatat(sdir, sbase, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
        rc = LB_E_NOTFOUND;
    } else if (linkat(sdir, sbase, ddir, dbase, 0) != 0) {
        /* another file system, or a kernel that refuses the link: copy */
        int in = openat(sdir, sbase, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        int out = in < 0 ? -1 : openat(ddir, dbase, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
        rc = in < 0 ? LB_E_NOTFOUND : out < 0 ? LB_E_IO : lb_copy_fd(in, out);
        if (out >= 0 && close(out) != 0 && rc == LB_OK)
            rc = LB_E_IO;
        if (in >= 0)
            close(in);
    }
    return rc;
}

/* Links (or copies) input rel from src_root to dst_root (handlers_rerun.h). */
int lb_copy_input(int src_root, int dst_root, const char *rel)
{
    const char *sbase, *dbase;
    int sdir = lb_open_parent(src_root, rel, 0, &sbase);
    if (sdir < 0)
        return LB_E_NOTFOUND;
    int ddir = lb_open_parent(dst_root, rel, 1, &dbase);
    if (ddir < 0) {
        close(sdir);
        return LB_E_IO;
    }
    int rc = lb_link_or_copy(sdir, sbase, ddir, dbase);
    close(sdir);
    close(ddir);
    return rc;
}

/* The trajectory of ended task src_id (under artifacts_dir) becomes
 * task_dir/replay.json. */
static int lb_copy_trajectory(const char *artifacts_dir, const char *src_id, const char *task_dir)
{
    char src_dir[LB_CFG_PATH + 64];
    snprintf(src_dir, sizeof src_dir, "%s/%s", artifacts_dir, src_id);
    int sdir = open(src_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int ddir = open(task_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = sdir < 0 ? LB_E_NOTFOUND : ddir < 0 ? LB_E_IO : lb_link_or_copy(sdir, "trajectory.json", ddir, "replay.json");
    if (sdir >= 0)
        close(sdir);
    if (ddir >= 0)
        close(ddir);
    return rc;
}

static const char *lb_jstr(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

void lb_h_task_rerun(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    lb_task src;
    memset(&src, 0, sizeof src);
    cJSON *inputs = NULL;
    lb_admission adm = {.ticket = {.user = -1}};
    int src_root = -1, dst_root = -1;
    char src_id[33], src_input[LB_CFG_PATH + 80];
    lb_http_drain(r); /* no body is needed; whatever came is ignored */
    snprintf(src_id, sizeof src_id, "%s", r->id);
    char q[8];
    int replay = 0;
    if (lb_query_get(r->query, "replay", q, sizeof q) == LB_OK) {
        if (strcmp(q, "0") && strcmp(q, "1")) {
            lb_http_error(r, 400, NULL, "replay must be 1 or 0.");
            return;
        }
        replay = q[0] == '1';
    }

    int rc = lb_store_task_load(r->store, r->id, &src);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task");
        goto out;
    }
    const char *model = src.model, *network = src.network, *image = src.image;
    /* the task's own limits, within what the service allows today */
    lb_task_request req;
    lb_task_limits lim;
    lb_task_request_of(&src, &req);
    lb_task_limits_of(&req, r->user, cfg, &lim);
    /* a damaged list copies nothing, as the task view shows it empty */
    inputs = src.inputs_json ? cJSON_Parse(src.inputs_json) : NULL;
    char why[300];
    if (model && !strcmp(model, LB_MODEL_REPLAY_TASK))
        replay = 1;
    if (replay && !lb_task_status_is_final(src.status)) {
        lb_http_error(r, 409, NULL, "Only a task that has ended can be replayed; this one is %s.",
                      src.status == LB_TASK_UNKNOWN ? "in an unknown state" : lb_task_status_name(src.status));
        goto out;
    }
    if (replay)
        model = LB_MODEL_REPLAY_TASK;
    else if (model && *model && !lb_cfg_model(cfg, model)) {
        lb_http_error(r, 409, NULL, "The task cannot run again as it was: the model \"%s\" is no longer configured.",
                      model);
        goto out;
    }
    if (network && lb_network_check(r->cfg, network, why, sizeof why) != LB_OK) {
        lb_http_error(r, 409, NULL, "The task cannot run again as it was: %s", why);
        goto out;
    }
    if (image && lb_image_check(r->cfg, image, why, sizeof why) != LB_OK) {
        lb_http_error(r, 409, NULL, "The task cannot run again as it was: %s", why);
        goto out;
    }
    if (lb_admit_begin(r, &adm, NULL) != LB_OK) /* refused: answered */
        goto out; /* answered */
    snprintf(src_input, sizeof src_input, "%s/%s/input", cfg->artifacts_dir, r->id);
    dst_root = open(adm.input_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    src_root = open(src_input, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const cJSON *it;
    cJSON_ArrayForEach(it, inputs)
    {
        const char *path = lb_jstr(it, "path");
        char clean[LB_PATH_MAX + 1];
        if (!path || lb_path_clean_rel(path, strlen(path), clean, sizeof clean) != LB_OK || strcmp(clean, path))
            continue; /* never written by this service: nothing to copy */
        rc = src_root < 0 ? LB_E_NOTFOUND : lb_copy_input(src_root, dst_root, clean);
        if (rc == LB_E_NOTFOUND) {
            lb_http_error(r, 409, NULL, "The input file \"%s\" of that task is gone, so it cannot run again.", clean);
            goto out;
        }
        if (rc != LB_OK) {
            int e = errno;
            lb_error("web: rerun of %s: copying input %s: %s", r->id, clean, strerror(e));
            if (e == ENOSPC || e == EDQUOT)
                lb_http_disk_full(r, "copy the task's input files");
            else
                lb_http_error(r, 500, NULL, "Could not copy the input file \"%s\".", clean);
            goto out;
        }
    }
    if (replay) {
        rc = lb_copy_trajectory(r->cfg->artifacts_dir, src_id, adm.task_dir);
        if (rc == LB_E_NOTFOUND) {
            lb_http_error(r, 409, NULL, "That task left no trajectory.json, so it cannot be replayed.");
            goto out;
        }
        if (rc != LB_OK) {
            lb_error("web: replay of %s: copying trajectory.json: %s", src_id, strerror(errno));
            lb_http_error(r, 500, NULL, "Could not copy the task's trajectory.");
            goto out;
        }
    }
    lb_task_new t = {.id = adm.id,
                     .prompt = src.prompt,
                     .model = model,
                     .max_turns = lim.max_turns,
                     .token_budget = lim.token_budget,
                     .timeout_s = lim.timeout_s,
                     .inputs_json = inputs ? src.inputs_json : NULL, /* damaged: none, as shown */
                     .network = network,
                     .image = image,
                     .rerun_of = src_id,
                     .options_json = src.options_json,
                     .owner = lb_auth_owner(r),
                     .owner_max_active = r->user ? r->user->max_tasks : 0};
    snprintf(r->id, sizeof r->id, "%s", adm.id); /* the access log names the new task */
    /* answered either way (201, or why not); lb_admit_end below gives
     * back what a task that was not stored held */
    LB_IGNORE(lb_admit_commit(r, &adm, &t));
out:
    if (src_root >= 0)
        close(src_root);
    if (dst_root >= 0)
        close(dst_root);
    lb_admit_end(&adm);
    cJSON_Delete(inputs);
    lb_task_free(&src);
}
