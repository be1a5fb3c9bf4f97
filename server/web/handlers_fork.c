/* Forks of a conversation; the contract is handlers_fork.h.
 *
 * A fork runs nothing: it is a new task, owned by whoever forked it, made
 * in one store transaction (lb_store_task_fork: the source's rounds 1..N
 * and their events) and a folder of its own holding what the next round
 * needs: the inputs of rounds 1..N, the conversation at the end of round N
 * (the agent keeps each round's trajectory.json as rounds/<n>.json), and,
 * for a fork of the source's last round, its outputs (hard links: nothing
 * ever writes an artifact in place). Its next message restores the state
 * saved at the end of round N (named in the copied round); when that state
 * is gone (the source deleted, or the age limit), the message says so and
 * offers fresh=1, as for any task.
 *
 * A fork comes in through admission (web/admission.h) like every new
 * task: the user's max_tasks and tasks_per_minute count it, so a burst of
 * forks is refused (429) past the user's start rate, and a refused or
 * failed fork leaves no folder. */
#include "web/handlers_fork.h"

#include "common/blob_task.h" /* several nodes */
#include "common/config.h"
#include "common/log.h"
#include "common/path.h"
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_round.h"
#include "web/admission.h"
#include "web/auth.h"
#include "web/handlers_rerun.h"
#include "web/http.h"
#include "web/task_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Links the files named by the JSON list (of {path} objects) from
 * src/sub to dst/sub; a missing file is skipped (a damaged list, a file
 * never collected). LB_OK or LB_E_IO. */
static int lb_fork_link_list(const char *src, const char *dst, const char *sub, const char *list_json)
{
    char s[LB_CFG_PATH + 96], d[LB_CFG_PATH + 96];
    snprintf(s, sizeof s, "%s/%s", src, sub);
    snprintf(d, sizeof d, "%s/%s", dst, sub);
    if (lb_mkdirs(d, 0750) != LB_OK)
        return LB_E_IO;
    cJSON *list = list_json ? cJSON_Parse(list_json) : NULL;
    int sfd = open(s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int dfd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = dfd < 0 ? LB_E_IO : LB_OK;
    const cJSON *it;
    const cJSON *walk = sfd >= 0 && rc == LB_OK ? list : NULL;
    cJSON_ArrayForEach(it, walk)
    {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "path"));
        char clean[LB_PATH_MAX + 1];
        if (!p || lb_path_clean_rel(p, strlen(p), clean, sizeof clean) != LB_OK || strcmp(clean, p))
            continue;
        int lrc = lb_copy_input(sfd, dfd, clean);
        if (lrc != LB_OK && lrc != LB_E_NOTFOUND) {
            rc = LB_E_IO;
            break;
        }
    }
    if (sfd >= 0)
        close(sfd);
    if (dfd >= 0)
        close(dfd);
    cJSON_Delete(list);
    return rc;
}

/* The conversation at the end of each round 1..n: src's rounds/<k>.json
 * (or, for its last round, its trajectory.json) linked as dst's, the
 * round n's as dst's trajectory.json. */
static int lb_fork_link_history(const lb_config *cfg, const char *src_id, const char *src, const char *dst, int n,
                                int src_last)
{
    /* several nodes: the rounds another node ran, from the object store (none
     * there or no bucket: what is here) */
    char why[600];
    for (int k = 1; k <= n; k++) {
        char rel[40];
        snprintf(rel, sizeof rel, "rounds/%d.json", k);
        int frc = lb_blob_task_fetch_record(cfg, src_id, rel, why, sizeof why);
        if (frc != LB_OK && frc != LB_E_NOTFOUND) {
            lb_warn("web: fork of %s: its round %d could not be fetched: %s", src_id, k, why);
            return LB_E_UNAVAILABLE;
        }
    }
    if (n == src_last && lb_blob_task_fetch_record(cfg, src_id, "trajectory.json", why, sizeof why) == LB_E_UNAVAILABLE)
        return LB_E_UNAVAILABLE;
    char d[LB_CFG_PATH + 96];
    snprintf(d, sizeof d, "%s/rounds", dst);
    if (lb_mkdirs(d, 0750) != LB_OK)
        return LB_E_IO;
    int sfd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int dfd = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = sfd < 0 || dfd < 0 ? LB_E_IO : LB_OK;
    for (int k = 1; rc == LB_OK && k <= n; k++) {
        char rel[40];
        snprintf(rel, sizeof rel, "rounds/%d.json", k);
        int lrc = lb_copy_input(sfd, dfd, rel);
        if (lrc == LB_E_NOTFOUND && k == n && n == src_last)
            lrc = LB_OK; /* an agent of before rounds/ kept only trajectory.json */
        if (lrc != LB_OK && lrc != LB_E_NOTFOUND)
            rc = LB_E_IO;
    }
    char last[40];
    snprintf(last, sizeof last, "rounds/%d.json", n);
    struct stat st;
    int have_round = rc == LB_OK && fstatat(sfd, last, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    /* the trajectory of the fork is the conversation at the end of round n */
    if (rc == LB_OK && (have_round || n == src_last) &&
        linkat(sfd, have_round ? last : "trajectory.json", dfd, "trajectory.json", 0) != 0 && errno != ENOENT)
        rc = LB_E_IO;
    if (sfd >= 0)
        close(sfd);
    if (dfd >= 0)
        close(dfd);
    return rc;
}

static int fork_has_dir(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void lb_h_task_fork(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    lb_http_drain(r); /* no body is needed */
    lb_task src;
    memset(&src, 0, sizeof src);
    lb_round rd;
    memset(&rd, 0, sizeof rd);
    char src_dir[LB_CFG_PATH + 64];
    /* the fork's id and folder; ended (the folder removed) unless stored */
    lb_admission adm;
    memset(&adm, 0, sizeof adm);
    adm.ticket.user = -1;
    const char *id = adm.id, *dst_dir = adm.task_dir;
    int rc = lb_store_task_load(r->store, r->id, &src);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task");
        goto out;
    }
    long n = src.round > 0 ? src.round : 1;
    char q[16];
    int qrc = lb_query_get(r->query, "round", q, sizeof q);
    if (qrc != LB_E_NOTFOUND) {
        char *end = q;
        errno = 0;
        n = qrc == LB_OK ? strtol(q, &end, 10) : -1;
        if (qrc != LB_OK || end == q || *end || errno || n < 1 || n > LB_ROUNDS_MAX) {
            lb_http_error(r, 400, NULL, "round must be a round of the task: a whole number from 1 to %d.",
                          src.round > 0 ? src.round : 1);
            goto out;
        }
    }
    rc = lb_store_round_get(r->store, r->id, (int)n, &rd);
    if (rc == LB_E_NOTFOUND) {
        lb_http_error(r, 404, NULL, "This task has no round %ld (it has %d).", n, src.round > 0 ? src.round : 1);
        goto out;
    }
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the round");
        goto out;
    }
    if (!lb_task_status_is_final(lb_task_status_parse(rd.status))) {
        lb_http_error(r, 409, "round_running", "Round %ld is still %s; fork it once it has ended.", n, rd.status);
        goto out;
    }
    /* a fork is a new task of its user: their limits and start rate hold
     * (answered when refused) */
    if (lb_admit_begin_fork(r, &adm) != LB_OK)
        goto out;
    snprintf(src_dir, sizeof src_dir, "%s/%s", cfg->artifacts_dir, r->id);
    char *art_json = NULL;
    int last = n == src.round;
    if (last) {
        lb_artifact *a = NULL;
        size_t na = 0;
        if (lb_store_artifacts_rows(r->store, r->id, &a, &na) == LB_OK) {
            cJSON *arr = cJSON_CreateArray();
            for (size_t i = 0; arr && i < na; i++) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "path", a[i].path);
                cJSON_AddItemToArray(arr, o);
            }
            art_json = arr ? cJSON_PrintUnformatted(arr) : NULL;
            cJSON_Delete(arr);
        }
        free(a);
    }
    /* the inputs of rounds 1..n: the source's list, whose later rounds'
     * files are simply not linked (they are named by their rounds) */
    lb_round *rv = NULL;
    size_t nr = 0;
    cJSON *inputs = cJSON_CreateArray();
    if (lb_store_rounds(r->store, r->id, &rv, &nr) == LB_OK) {
        for (size_t i = 0; i < nr && inputs; i++) {
            cJSON *l = rv[i].n <= n && rv[i].inputs_json ? cJSON_Parse(rv[i].inputs_json) : NULL;
            const cJSON *it;
            cJSON_ArrayForEach(it, l)
                cJSON_AddItemToArray(inputs, cJSON_Duplicate(it, 1));
            cJSON_Delete(l);
        }
    }
    lb_rounds_free(rv, nr);
    char *inputs_json = inputs ? cJSON_PrintUnformatted(inputs) : NULL;
    cJSON_Delete(inputs);
    /* several nodes: the source's files here (another node may have run it),
     * and the fork's in the object store before it exists, for the node
     * that runs its next round (all no-ops without a bucket) */
    char blob_err[1024] = "";
    int brc = lb_blob_task_fetch_inputs(cfg, r->id, blob_err, sizeof blob_err);
    if (brc == LB_OK && last)
        brc = lb_blob_task_fetch_outputs(cfg, r->id, "", blob_err, sizeof blob_err);
    rc = brc != LB_OK ? brc : !inputs_json ? LB_E_NOMEM : lb_fork_link_list(src_dir, dst_dir, "input", inputs_json);
    if (rc == LB_OK && last)
        rc = lb_fork_link_list(src_dir, dst_dir, "output", art_json);
    if (rc == LB_OK)
        rc = lb_fork_link_history(cfg, r->id, src_dir, dst_dir, (int)n, src.round);
    if (rc == LB_OK) {
        char sub[LB_CFG_PATH + 80];
        snprintf(sub, sizeof sub, "%s/input", dst_dir);
        brc = fork_has_dir(sub) ? lb_blob_task_put_inputs(cfg, id, sub, blob_err, sizeof blob_err) : LB_OK;
        snprintf(sub, sizeof sub, "%s/output", dst_dir);
        if (brc == LB_OK && fork_has_dir(sub))
            brc = lb_blob_task_put_outputs(cfg, id, sub, blob_err, sizeof blob_err);
        if (brc == LB_OK)
            brc = lb_blob_task_put_record(cfg, id, dst_dir, (int)n, blob_err, sizeof blob_err);
        rc = brc;
    }
    free(art_json);
    free(inputs_json);
    if (rc == LB_E_UNAVAILABLE || (rc != LB_OK && blob_err[0])) {
        lb_error("web: fork of %s: the object store: %s", r->id, blob_err[0] ? blob_err : lb_strerror(rc));
        lb_http_error_hdr(r, 503, NULL, "Retry-After: 5\r\n", "The object store cannot be used right now: %s",
                          blob_err[0] ? blob_err : "a round of the task could not be fetched");
        goto out;
    }
    if (rc != LB_OK) {
        int e = errno;
        lb_error("web: fork of %s: %s", r->id, strerror(e));
        if (e == ENOSPC || e == EDQUOT)
            lb_http_disk_full(r, "copy the task's files");
        else
            lb_http_error(r, 500, NULL, "Could not copy the task's files for the fork.");
        goto out;
    }
    lb_fork f = {.src_id = r->id, .round = (int)n, .new_id = id, .owner = lb_auth_owner(r)};
    rc = lb_store_task_fork(r->store, &f);
    if (rc == LB_E_NOTFOUND) {
        lb_http_error(r, 409, "round_running", "Round %ld has not ended; fork it once it has.", n);
        goto out;
    }
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "store the fork");
        goto out;
    }
    lb_admit_commit_fork(&adm);
    lb_info("web: task %s forked from %s at round %ld", id, r->id, n);
    snprintf(r->new_task, sizeof r->new_task, "%s", id);
    cJSON *t = NULL;
    rc = lb_store_task_get(r->store, id, &t);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the new task");
        goto out;
    }
    char extra[128];
    snprintf(extra, sizeof extra, "Location: /api/tasks/%s\r\n", id);
    lb_http_json(r, 201, t, extra);
    cJSON_Delete(t);
out:
    lb_admit_end(&adm); /* a fork not stored: its folder removed, its start given back */
    lb_round_free(&rd);
    lb_task_free(&src);
}
