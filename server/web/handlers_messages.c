/* POST /api/tasks/{id}/messages: the next round of a task (follow-ups).
 *
 * The body is multipart like POST /api/tasks: `prompt`, files, `unpack`,
 * and `fresh=1` (continue in a fresh sandbox with the files only). The
 * files are streamed into a folder of the message's own
 * (artifacts/<id>/.message-<random>/input), checked against the task's
 * earlier inputs (a name already taken is refused: inputs never change
 * once they exist, "Run again" links them), and moved beside them only
 * once the round is stored, so a refused message leaves nothing behind.
 * The round comes in like a new task (web/admission.h): the user's start
 * and limits, a task slot. A message while a round runs is refused (409):
 * rounds are not queued, since a message is written against the answer
 * it follows. */
#include "web/handlers_messages.h"

#include "common/blob_task.h" /* several nodes */
#include "common/config.h"
#include "common/log.h"
#include "common/path.h"
#include "common/status.h"
#include "common/task.h"
#include "common/task_opts.h"
#include "common/utf8.h"
#include "common/util.h"
#include "llmbox/sandbox.h"
#include "store/store.h"
#include "store/store_round.h"
#include "web/admission.h"
#include "web/artifact_access.h"
#include "web/handlers_tasks.h"
#include "web/http.h"
#include "web/multipart.h"
#include "web/spawn.h"
#include "web/user_limits.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void lb_followup_release(const lb_config *cfg, lb_store *s, const char *task_id)
{
    lb_kept k;
    int kept = lb_store_kept_get(s, task_id, &k) == LB_OK;
    /* the states saved at the end of its rounds: only those named for this
     * task (a fork's copied rounds name its source's, which stay) */
    lb_round *v = NULL;
    size_t n = 0, own_states = 0;
    char own[40];
    snprintf(own, sizeof own, "t%s-r", task_id);
    if (lb_store_rounds(s, task_id, &v, &n) != LB_OK)
        n = 0;
    for (size_t i = 0; i < n; i++)
        own_states += v[i].state && !strncmp(v[i].state, own, strlen(own));
    char err[512] = "";
    lbsb_conn *c = NULL;
    int rc = kept || own_states ? lbsb_connect(cfg->sandboxd_socket, NULL, &c, err, sizeof err) : LB_E_NOTFOUND;
    for (size_t i = 0; rc == LB_OK && i < n; i++) {
        char serr[256];
        if (v[i].state && !strncmp(v[i].state, own, strlen(own)) &&
            lbsb_state_delete(c, v[i].state, serr, sizeof serr) != LB_OK)
            lb_warn("web: task %s: its saved state %s was not deleted (the age limit removes it): %s", task_id,
                    v[i].state, serr);
    }
    if (rc == LB_OK && kept)
        rc = lbsb_adopt(c, k.sandbox_id, k.lease_key, 0, err, sizeof err);
    if (rc == LB_OK && kept)
        rc = lbsb_destroy(c, k.sandbox_id, err, sizeof err);
    /* gone already (its keep time passed) is the same outcome */
    if (kept && rc != LB_OK && rc != LB_E_NOTFOUND)
        lb_warn("web: task %s: its kept sandbox %s could not be destroyed (its lease ends it): %s", task_id,
                k.sandbox_id, err);
    else if (own_states && rc != LB_OK && rc != LB_E_NOTFOUND)
        lb_warn("web: task %s: its saved states were not deleted (the age limit removes them): %s", task_id, err);
    lbsb_close(c);
    lb_rounds_free(v, n);
    if (kept)
        LB_IGNORE(lb_store_kept_clear(s, task_id)); /* the row goes with the task anyway */
}

void lb_h_round_artifact(lb_req *r)
{
    /* {path} is "<round>/<file path>", percent-encoded */
    char decoded[LB_PATH_MAX * 3 + 1], clean[LB_PATH_MAX + 1], enc[LB_PATH_MAX * 3 + 1];
    size_t dlen;
    char *slash = NULL;
    long n = 0;
    if (lb_url_decode(r->rest, strlen(r->rest), decoded, sizeof decoded, &dlen, 0) == LB_OK &&
        (slash = strchr(decoded, '/'))) {
        *slash = '\0';
        char *end;
        errno = 0;
        n = strtol(decoded, &end, 10);
        if (end == decoded || *end || errno || n < 1 || n > LB_ROUNDS_MAX)
            n = 0;
    }
    if (!n || lb_path_clean_rel(slash + 1, strlen(slash + 1), clean, sizeof clean) != LB_OK) {
        lb_http_error(r, 404, "not_found", "There is no such file of a round: the path is /rounds/<n>/<file>.");
        return;
    }
    lb_round rd;
    int rc = lb_store_round_get(r->store, r->id, (int)n, &rd);
    if (rc != LB_OK) {
        if (rc == LB_E_NOTFOUND)
            lb_http_error(r, 404, "not_found", "This task has no round %ld.", n);
        else
            lb_http_store_error(r, rc, "read the round");
        return;
    }
    /* the round's artifact list is the allow-list, as the task's index is */
    int listed = 0;
    double size = -1;
    cJSON *list = rd.artifacts_json ? cJSON_Parse(rd.artifacts_json) : NULL;
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "path")) ?: "", clean)) {
            listed = 1;
            const cJSON *sz = cJSON_GetObjectItemCaseSensitive(it, "size");
            size = cJSON_IsNumber(sz) ? sz->valuedouble : -1;
        }
    }
    cJSON_Delete(list);
    lb_round_free(&rd);
    char dir[LB_CFG_PATH + 96], disp[1600], uri[sizeof enc + 160];
    snprintf(dir, sizeof dir, "%s/%s/rounds/%ld/output", r->cfg->artifacts_dir, r->id, n);
    const char *from = "rounds"; /* where the file is served from, under the task's folder */
    if (listed && !lb_artifact_is_file(dir, clean)) {
        /* a task that takes no follow-ups (an evaluation's run, a rollout's
         * sample) has one round, whose files are its outputs: its agent
         * keeps no rounds/1/ copy (agent_main.c) */
        lb_task t;
        memset(&t, 0, sizeof t);
        char out[sizeof dir];
        snprintf(out, sizeof out, "%s/%s/output", r->cfg->artifacts_dir, r->id);
        if (n == 1 && lb_store_task_load(r->store, r->id, &t) == LB_OK && t.round <= 1 && t.options_json &&
            *t.options_json && !lb_task_opts_only_mcp(t.options_json) && lb_artifact_is_file(out, clean)) {
            snprintf(dir, sizeof dir, "%s", out);
            from = "output";
        }
        lb_task_free(&t);
    }
    if (listed && !lb_artifact_is_file(dir, clean)) {
        /* several nodes: a round another host ran: its copy is in the bucket */
        char why[1024] = "";
        lb_task t;
        memset(&t, 0, sizeof t);
        int last_round = lb_store_task_load(r->store, r->id, &t) == LB_OK ? t.round : 0;
        lb_task_free(&t);
        int frc = lb_blob_task_fetch_round_file(r->cfg, r->id, (int)n, n == last_round, clean,
                                                size >= 0 ? (uint64_t)size : UINT64_MAX, why, sizeof why);
        if (frc != LB_OK && frc != LB_E_NOTFOUND) {
            lb_error("web: task %s: round %ld's %s from the object store: %s", r->id, n, clean, why);
            lb_http_error_hdr(r, 503, NULL, "Retry-After: 5\r\n", "The object store cannot be read right now: %s",
                              why);
            return;
        }
    }
    if (!listed || !lb_artifact_is_file(dir, clean)) {
        lb_http_error(r, 404, "not_found", "Round %ld has no file \"%s\" (or it was not kept).", n, clean);
        return;
    }
    /* the type of a file no longer in the index is not known: a download */
    if (lb_content_disposition("attachment", clean, disp, sizeof disp) != LB_OK ||
        lb_url_encode_path(clean, enc, sizeof enc) != LB_OK) {
        lb_http_error(r, 500, NULL, "The file name is too long to serve.");
        return;
    }
    if (!strcmp(from, "output"))
        snprintf(uri, sizeof uri, "/_artifacts/%s/output/%s", r->id, enc);
    else
        snprintf(uri, sizeof uri, "/_artifacts/%s/rounds/%ld/output/%s", r->id, n, enc);
    lb_http_accel(r, uri, "application/octet-stream", disp);
}

/* Whether task t may take a follow-up at all: answered (409) when not. */
static int lb_message_allowed(lb_req *r, const lb_task *t)
{
    if (!lb_task_status_is_final(t->status)) {
        lb_http_error(r, 409, "round_running",
                      "A round of this task is still %s: wait until it has ended (or stop it), then send the "
                      "message. Messages are not queued.",
                      t->status == LB_TASK_UNKNOWN ? "in an unknown state" : lb_task_status_name(t->status));
        return 0;
    }
    if (t->model && !strcmp(t->model, LB_MODEL_REPLAY_TASK)) {
        lb_http_error(r, 409, NULL, "A replay plays a recorded run back and cannot be continued; continue the "
                                    "task it replays instead.");
        return 0;
    }
    lb_task_opts o;
    char why[300];
    if (lb_task_opts_parse(t->options_json, &o, why, sizeof why) == LB_OK && o.mode == LB_RUN_LLM) {
        lb_http_error(r, 409, NULL, "This task ran in llm mode (one request, no sandbox), so it has no "
                                    "conversation to continue; start a new task.");
        return 0;
    }
    /* run options are an evaluation's run or a rollout's sample: their
     * runner reads the task's end as the sample's outcome, which a later
     * round must not change */
    if (t->options_json && *t->options_json && !lb_task_opts_only_mcp(t->options_json)) {
        lb_http_error(r, 409, NULL, "This task is a run of an evaluation or a sample of a rollout group; its "
                                    "outcome is scored and cannot be continued. Start a new task instead.");
        return 0;
    }
    return 1;
}

/* Every file of the message's inputs must be new to the task: LB_OK, or
 * answered (409). */
static int lb_message_names_free(lb_req *r, const char *input_dir, const cJSON *inputs)
{
    int root = open(input_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0)
        return LB_OK; /* the task had no inputs: every name is free */
    int rc = LB_OK;
    const cJSON *it;
    cJSON_ArrayForEach(it, inputs)
    {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "path"));
        struct stat st;
        if (p && fstatat(root, p, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            lb_http_error(r, 409, "input_exists",
                          "An earlier round of this task already has an input \"%s\"; send the new file under "
                          "another name.", p);
            rc = LB_E_EXISTS;
            break;
        }
    }
    close(root);
    return rc;
}

/* Moves the message's files (stored under from) beside the task's inputs
 * (to), never replacing one. A file that cannot be moved is logged and
 * left out: the round's agent copies only what is there. */
static void lb_message_move_inputs(const char *task_id, const char *from, const char *to, const cJSON *inputs)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, inputs)
    {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "path"));
        char src[LB_CFG_PATH + LB_PATH_MAX + 100], dst[LB_CFG_PATH + LB_PATH_MAX + 100], parent[sizeof dst];
        if (!p || lb_path_join(src, sizeof src, from, p) != LB_OK || lb_path_join(dst, sizeof dst, to, p) != LB_OK)
            continue;
        snprintf(parent, sizeof parent, "%s", dst);
        *strrchr(parent, '/') = '\0';
        if (lb_mkdirs(parent, 0750) != LB_OK ||
            renameat2(AT_FDCWD, src, AT_FDCWD, dst, RENAME_NOREPLACE) != 0)
            lb_error("web: task %s: the message's input %s could not be moved beside the others: %s", task_id, p,
                     strerror(errno));
    }
}

void lb_h_task_message(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    lb_task task;
    memset(&task, 0, sizeof task);
    lb_upload u;
    lb_task_upload_init(&u, cfg);
    lb_admission adm = {.ticket = {.user = -1}};
    uint64_t max_upload = lb_limits_upload(r);
    char msg_dir[LB_CFG_PATH + 128] = "", real_input[LB_CFG_PATH + 80];
    char *inputs_json = NULL;

    if (!lb_mp_is_form_data(r->content_type)) {
        lb_http_drain(r);
        lb_http_error(r, 415, NULL, "Send the message as multipart/form-data (fields: prompt, files, unpack, fresh).");
        goto out;
    }
    if (r->content_length > 0 && (uint64_t)r->content_length > max_upload) {
        lb_http_drain(r);
        lb_http_error(r, 413, NULL, "The upload is %lld bytes; the limit is %llu MiB.",
                      (long long)r->content_length, (unsigned long long)(max_upload >> 20));
        goto out;
    }
    int rc = lb_store_task_load(r->store, r->id, &task);
    if (rc != LB_OK) {
        lb_http_drain(r);
        lb_http_store_error(r, rc, "read the task");
        goto out;
    }
    if (!lb_message_allowed(r, &task)) {
        lb_http_drain(r);
        goto out;
    }
    /* the last round's agent records its end, then exits: wait for that */
    if (lb_spawn_wait_gone(r->id, 10000) != LB_OK) {
        lb_http_drain(r);
        lb_http_error(r, 409, "round_running", "The last round of this task is still finishing (saving its "
                                               "sandbox); send the message again in a moment.");
        goto out;
    }
    if (lb_admit_begin_round(r, &adm, r->id) != LB_OK)
        goto out; /* refused: answered */
    char rnd[17];
    if (lb_random_hex(rnd, sizeof rnd, 8) != LB_OK) {
        lb_http_drain(r);
        lb_http_error(r, 500, NULL, "Could not make a folder name.");
        goto out;
    }
    snprintf(msg_dir, sizeof msg_dir, "%s/.message-%s", adm.task_dir, rnd);
    snprintf(real_input, sizeof real_input, "%s", adm.input_dir);
    snprintf(u.id, sizeof u.id, "%s", r->id);
    snprintf(u.task_dir, sizeof u.task_dir, "%s", msg_dir);
    snprintf(u.input_dir, sizeof u.input_dir, "%s/input", msg_dir);
    snprintf(u.stage_dir, sizeof u.stage_dir, "%s/.upload", msg_dir);
    if (lb_mkdirs(u.input_dir, 0750) != LB_OK || lb_mkdirs(u.stage_dir, 0700) != LB_OK) {
        int e = errno;
        lb_http_drain(r);
        if (e == ENOSPC || e == EDQUOT)
            lb_http_disk_full(r, "store the message");
        else
            lb_http_error(r, 500, NULL, "Could not create the message's folder.");
        goto out;
    }
    if (lb_task_upload_stream(r, &u, max_upload) != LB_OK)
        goto out; /* answered */
    if (!u.prompt.data || !u.prompt.len || !lb_utf8_valid(u.prompt.data, u.prompt.len)) {
        lb_http_error(r, 400, NULL, "The form field \"prompt\" is missing, empty or not UTF-8 text: say what to "
                                    "do next.");
        goto out;
    }
    int fresh = 0;
    if (u.fresh.data && u.fresh.len) {
        const char *v = u.fresh.data;
        if (strcmp(v, "1") && strcmp(v, "0") && strcmp(v, "true") && strcmp(v, "false")) {
            lb_http_error(r, 400, NULL, "fresh must be 1 or 0 (true or false).");
            goto out;
        }
        fresh = v[0] == '1' || v[0] == 't';
    }
    int unpack = !u.unpack.data || !u.unpack.len || strcmp(u.unpack.data, "0");
    char why[300];
    int status = 0;
    if (unpack && lb_task_upload_unpack(&u, &status, why, sizeof why) != LB_OK) {
        lb_task_upload_refuse(r, status, why); /* a refused unpacking place: 429/503 with Retry-After */
        goto out;
    }
    if (lb_message_names_free(r, real_input, u.inputs) != LB_OK)
        goto out; /* answered */
    inputs_json = cJSON_PrintUnformatted(u.inputs);
    if (!inputs_json) {
        lb_http_error(r, 500, NULL, "Out of memory.");
        goto out;
    }
    /* several nodes: the last round's files as they are now, kept in the bucket
     * under its round before the next round changes them (the page links
     * to them from any web) */
    if (r->cfg->s3_bucket[0] && task.round > 0) {
        lb_round last;
        memset(&last, 0, sizeof last);
        char kerr[1024] = "";
        int krc = lb_store_round_get(r->store, r->id, task.round, &last);
        if (krc == LB_OK)
            krc = lb_blob_task_keep_round(cfg, r->id, task.round, last.artifacts_json, kerr, sizeof kerr);
        lb_round_free(&last);
        if (krc != LB_OK && krc != LB_E_NOTFOUND) {
            lb_error("web: task %s: round %d's files could not be kept in the object store: %s", r->id, task.round,
                     kerr[0] ? kerr : lb_strerror(krc));
            lb_http_error_hdr(r, 503, NULL, "Retry-After: 5\r\n",
                              "The last round's files could not be kept in the object store: %s",
                              kerr[0] ? kerr : lb_strerror(krc));
            goto out;
        }
    }
    /* several nodes: in the object store before the round is queued, so the
     * node that claims it (maybe on another host) finds them; the same
     * answer as a new task's when the store is away */
    char blob_err[1024];
    if (lb_blob_task_put_new_inputs(cfg, r->id, u.input_dir, blob_err, sizeof blob_err) != LB_OK) {
        lb_error("web: task %s: the message's inputs could not be stored: %s", r->id, blob_err);
        lb_http_error_hdr(r, 503, NULL, "Retry-After: 5\r\n",
                          "The message's files could not be stored in the object store: %s", blob_err);
        goto out;
    }
    lb_round_new m = {.task_id = r->id, .prompt = u.prompt.data, .inputs_json = inputs_json, .fresh = fresh,
                      .owner = task.owner, .owner_max_active = r->user ? r->user->max_tasks : 0};
    int n = 0;
    rc = lb_store_round_begin(r->store, &m, &n);
    if (rc == LB_E_EXISTS) {
        lb_http_error(r, 409, "round_running", "A round of this task has just started: wait until it has ended, "
                                               "then send the message. Messages are not queued.");
        goto out;
    }
    if (rc == LB_E_BUSY) {
        lb_http_error(r, 429, "too_many_tasks", "You already have %d tasks queued or running, your limit; send "
                      "the message when one of them has finished (or stop one).", m.owner_max_active);
        goto out;
    }
    if (rc == LB_E_TOOBIG) {
        lb_http_error(r, 409, NULL, "This task has %d rounds, the most one conversation may have; fork it to go "
                      "on.", LB_ROUNDS_MAX);
        goto out;
    }
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "store the message");
        goto out;
    }
    lb_message_move_inputs(r->id, u.input_dir, real_input, u.inputs);
    /* the whole-task bundles kept by web/bundle.c are of the last round */
    const char *kept_bundles[] = {"bundle.zip", "bundle.tar.gz"};
    for (size_t i = 0; i < sizeof kept_bundles / sizeof kept_bundles[0]; i++) {
        char b[LB_CFG_PATH + 96];
        snprintf(b, sizeof b, "%s/%s", adm.task_dir, kept_bundles[i]);
        if (unlink(b) != 0 && errno != ENOENT)
            lb_warn("web: task %s: cannot remove the last round's %s: %s", r->id, kept_bundles[i], strerror(errno));
    }
    lb_admit_spawn_round(r->store, &adm);
    lb_info("web: task %s: round %d%s, %d new input%s", r->id, n, fresh ? " (fresh sandbox)" : "",
            cJSON_GetArraySize(u.inputs), cJSON_GetArraySize(u.inputs) == 1 ? "" : "s");
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "id", r->id);
        cJSON_AddNumberToObject(o, "round", n);
        cJSON_AddStringToObject(o, "status", lb_task_status_name(LB_TASK_QUEUED));
        cJSON_AddBoolToObject(o, "fresh", fresh);
        cJSON_AddItemToObject(o, "inputs", cJSON_Duplicate(u.inputs, 1));
    }
    char extra[128];
    snprintf(extra, sizeof extra, "Location: /api/tasks/%s\r\n", r->id);
    if (o)
        lb_http_json(r, 201, o, extra);
    else
        lb_http_error(r, 500, NULL, "Out of memory (the round was started).");
    cJSON_Delete(o);
out:
    if (msg_dir[0])
        LB_IGNORE(lb_rmtree(msg_dir)); /* the message's own folder: what was kept was moved out */
    lb_admit_end(&adm);
    lb_task_upload_free(&u);
    lb_task_free(&task);
    free(inputs_json);
}
