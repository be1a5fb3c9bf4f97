/* Evaluation routes; the contract is handlers_evals.h.
 *
 * POST /api/evals reads the whole upload to disk under the eval's folder
 * (var/evals/<id>/), loads the dataset with every cap (eval/dataset.h)
 * and answers a whole-dataset problem with a 400 naming file, line and
 * field before a single run is stored, so no model is ever called for a
 * dataset that cannot run. Only then are the eval and all its runs
 * stored, in one transaction, and the runner woken. */
#include "jobs/handlers_evals.h"

#include "common/netpolicy.h"
#include "common/blob_eval.h"
#include "common/buf.h"
#include "common/config.h"
#include "common/log.h"
#include "common/path.h"
#include "common/status.h"
#include "common/task.h"
#include "common/utf8.h"
#include "common/util.h"
#include "eval/dataset.h"
#include "eval/result.h"
#include "eval/summary.h"
#include "store/store.h"
#include "store/store_eval.h"
#include "web/auth.h"
#include "web/handlers_tasks.h" /* the archive caps of uploads */
#include "jobs/eval_runner.h"
#include "web/http.h"
#include "web/multipart.h"
#include "web/spawn.h"
#include "web/task_options.h" /* a row's own image is checked as a task's */
#include "web/unpack.h"
#include "web/work_slots.h"
#include "web/user_limits.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcgiapp.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LB_EVAL_FIELD_MAX 256          /* every small form field */
#define LB_EVAL_NAME_MAX 200           /* an eval's name */
#define LB_EVAL_MAX_RUNS 200000        /* rows x modes x repeats of one eval */
#define LB_EVAL_ANSWER_SHOWN 2048      /* bytes of an answer in GET /api/evals/{id} */
#define LB_EVAL_RUNS_PAGE 200          /* runs per page by default, at most 1000 */
#define LB_EVAL_READ_CHUNK 65536

/* ---- who may see an eval ---- */

/* Loads r->id's eval into *e when the caller may see it; else answers
 * (404 for someone else's, as if it did not exist) and returns nonzero. */
static int eval_visible(lb_req *r, lb_eval_rec *e)
{
    int rc = lb_store_eval_load(r->store, r->id, e);
    if (rc == LB_OK && r->user && (!e->owner || strcmp(e->owner, r->user->name))) {
        lb_eval_rec_free(e);
        rc = LB_E_NOTFOUND;
    }
    if (rc == LB_E_NOTFOUND) {
        lb_http_drain(r);
        lb_http_error(r, 404, "not_found", "There is no evaluation %s.", r->id);
        return rc;
    }
    if (rc != LB_OK) {
        lb_http_drain(r);
        lb_http_store_error(r, rc, "read the evaluation");
    }
    return rc;
}

/* ---- POST /api/evals: the upload ---- */

typedef struct lb_eval_up {
    char dir[LB_CFG_PATH + 64];        /* var/evals/<id> */
    lb_buf mode, model, repeats, concurrency, limit, layout, max_turns, timeout_s, token_budget, judge_model,
        judge_votes, max_tokens, name, network, image;
    lb_buf *field;
    int fd;
    int which;                         /* 1: dataset, 2: resume */
    char dataset_name[LB_PATH_MAX + 1]; /* as uploaded (its last component) */
    char dataset_path[LB_CFG_PATH + LB_PATH_MAX + 100];
    char resume_path[LB_CFG_PATH + 100];
    int have_dataset, have_resume;
    int http_status;
    char msg[600];
} lb_eval_up;

static int up_fail(lb_eval_up *u, int status, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int up_fail(lb_eval_up *u, int status, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->msg, sizeof u->msg, fmt, ap);
    va_end(ap);
    u->http_status = status;
    return rc;
}

static lb_buf *up_field(lb_eval_up *u, const char *name)
{
    static const char *const names[] = {"mode", "model", "repeats", "concurrency", "limit", "layout", "max_turns",
                                        "timeout_s", "token_budget", "judge_model", "judge_votes", "max_tokens",
                                        "name", "network", "image"};
    lb_buf *bufs[] = {&u->mode, &u->model, &u->repeats, &u->concurrency, &u->limit, &u->layout, &u->max_turns,
                      &u->timeout_s, &u->token_budget, &u->judge_model, &u->judge_votes, &u->max_tokens,
                      &u->name, &u->network, &u->image};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i]))
            return bufs[i];
    return NULL;
}

static int up_begin(void *arg, const lb_mp_part *p)
{
    lb_eval_up *u = arg;
    u->field = NULL;
    u->which = 0;
    if (!p->is_file) {
        u->field = up_field(u, p->name);
        if (!u->field)
            return up_fail(u, 400, LB_E_INVAL,
                           "The form field \"%.64s\" is not one of: dataset, resume, mode, model, repeats, "
                           "concurrency, limit, layout, max_turns, timeout_s, token_budget, judge_model, "
                           "judge_votes, max_tokens, name, network, image.", p->name);
        if (u->field->len)
            return up_fail(u, 400, LB_E_INVAL, "The form field \"%s\" appears twice.", p->name);
        return 0;
    }
    if (!p->filename[0])
        return 0; /* an empty file input */
    char path[sizeof u->dataset_path];
    if (!strcmp(p->name, "dataset")) {
        if (u->have_dataset)
            return up_fail(u, 400, LB_E_INVAL, "Send one dataset file.");
        const char *base = strrchr(p->filename, '/');
        snprintf(u->dataset_name, sizeof u->dataset_name, "%s", base ? base + 1 : p->filename);
        snprintf(path, sizeof path, "%s/upload/%s", u->dir, u->dataset_name);
        snprintf(u->dataset_path, sizeof u->dataset_path, "%s", path);
        u->have_dataset = 1;
        u->which = 1;
    } else if (!strcmp(p->name, "resume")) {
        if (u->have_resume)
            return up_fail(u, 400, LB_E_INVAL, "Send one resume file (a previous results.jsonl).");
        snprintf(path, sizeof path, "%s", u->resume_path);
        u->have_resume = 1;
        u->which = 2;
    } else {
        return up_fail(u, 400, LB_E_INVAL, "The file field \"%.64s\" is not dataset or resume.", p->name);
    }
    u->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (u->fd < 0)
        return up_fail(u, errno == ENOSPC ? 507 : 500, LB_E_IO, "Could not store the upload: %s.", strerror(errno));
    return 0;
}

static int up_data(void *arg, const lb_mp_part *p, const char *data, size_t n)
{
    lb_eval_up *u = arg;
    if (u->field) {
        char msg[LB_MP_NAME_MAX + 96];
        int st = lb_mp_field_append(u->field, p->name, data, n, msg, sizeof msg);
        return st ? up_fail(u, st, st == 400 ? LB_E_INVAL : LB_E_TOOBIG, "%s", msg) : 0;
    }
    if (u->fd >= 0 && lb_write_all(u->fd, data, n) != LB_OK)
        return up_fail(u, errno == ENOSPC ? 507 : 500, LB_E_IO, "Could not store the upload: %s.", strerror(errno));
    return 0;
}

static int up_end(void *arg, const lb_mp_part *p)
{
    lb_eval_up *u = arg;
    (void)p;
    if (u->fd < 0)
        return 0;
    /* the dataset is read back at once and by the runner; fsync makes it
     * survive a crash as the eval's row does */
    int rc = fsync(u->fd);
    rc |= close(u->fd);
    u->fd = -1;
    if (rc)
        return up_fail(u, 500, LB_E_IO, "Could not store the upload: %s.", strerror(errno));
    return 0;
}

static int blank(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            return 0;
    return 1;
}

/* The field as one word (no blanks around) into out; "" when absent. */
static int field_word(const lb_buf *f, char *out, size_t outsz)
{
    out[0] = '\0';
    if (!f->data || blank(f->data))
        return LB_OK;
    const char *v = f->data + strspn(f->data, " \t\r\n");
    size_t n = strcspn(v, " \t\r\n");
    if (n >= outsz || !blank(v + n))
        return LB_E_INVAL;
    memcpy(out, v, n);
    out[n] = '\0';
    return LB_OK;
}

/* A whole number in [lo, hi]; absent: def. */
static int field_int(const lb_buf *f, long long lo, long long hi, long long def, long long *out)
{
    *out = def;
    if (!f->data || blank(f->data))
        return LB_OK;
    char *end;
    errno = 0;
    long long v = strtoll(f->data, &end, 10);
    if (end == f->data || errno || !blank(end) || v < lo || v > hi)
        return LB_E_INVAL;
    *out = v;
    return LB_OK;
}

/* The network field ("none", "nat" or a policy of rules as JSON text) as
 * a task holds it (the caller frees it); NULL when answered: 400 for what
 * does not parse, 403 naming the rule beyond network_egress_max or nat
 * where network_allow lacks it. */
static char *network_check(lb_req *r, const char *text)
{
    const lb_config *cfg = r->cfg;
    char err[400];
    lb_netpolicy *p = malloc(sizeof *p);
    char *out = malloc(LB_NETPOL_TEXT_MAX + 1);
    int st = 500;
    snprintf(err, sizeof err, "Out of memory.");
    while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n')
        text++;
    if (p && out) {
        st = 400;
        if (lb_netpolicy_parse(text, p, err, sizeof err) != LB_OK) {
            /* err says what is wrong */
        } else if (p->mode == LB_NETPOL_NAT && !lb_cfg_network_allowed(cfg, "nat")) {
            st = 403;
            snprintf(err, sizeof err, "network \"nat\" is not allowed on this service (network_allow).");
        } else if (lb_netpolicy_admit(p, cfg->network_egress_max, r->user ? r->user->network_egress_max : NULL,
                                      err, sizeof err) != LB_OK ||
                   lb_netpolicy_admit_bytes(p, cfg->network_max_bytes, r->user ? r->user->network_max_bytes : 0,
                                            err, sizeof err) != LB_OK) {
            st = 403;
        } else if (lb_netpolicy_text(p, out, LB_NETPOL_TEXT_MAX + 1) == LB_OK) {
            free(p);
            return out;
        }
    }
    lb_http_error(r, st, NULL, "%s", err);
    free(p);
    free(out);
    return NULL;
}

/* Checks the form's fields into the options object *out. LB_OK; else
 * answered 400. */
static int fields_check(lb_req *r, lb_eval_up *u, cJSON **out)
{
    const lb_config *cfg = r->cfg;
    char mode[16], model[LB_CFG_MODEL_NAME], layout[16], judge[LB_CFG_MODEL_NAME];
    long long repeats, conc, limit, max_turns, timeout_s, budget, votes, max_tokens;
    *out = NULL;
    if (field_word(&u->mode, mode, sizeof mode) || (mode[0] && strcmp(mode, "llm") && strcmp(mode, "sandbox") &&
                                                    strcmp(mode, "both"))) {
        lb_http_error(r, 400, NULL, "mode must be sandbox, llm or both.");
        return LB_E_INVAL;
    }
    if (field_word(&u->layout, layout, sizeof layout) ||
        (layout[0] && strcmp(layout, "official") && strcmp(layout, "llmbox"))) {
        lb_http_error(r, 400, NULL, "layout must be official (/testbed/documents, /testbed/answer.txt) or llmbox "
                                    "(/testbed/input, /testbed/output/answer.txt).");
        return LB_E_INVAL;
    }
    const lb_model_cfg *mc = NULL;
    int bad_model = field_word(&u->model, model, sizeof model) != LB_OK;
    if (!bad_model)
        mc = lb_cfg_model(cfg, model[0] ? model : NULL);
    const lb_model_cfg *jc = NULL;
    int bad_judge = field_word(&u->judge_model, judge, sizeof judge) != LB_OK;
    if (!bad_judge && judge[0])
        bad_judge = !(jc = lb_cfg_model(cfg, judge));
    if (bad_model || !mc || bad_judge) {
        char names[600];
        lb_cfg_model_names(cfg, names, sizeof names);
        lb_http_error(r, 400, NULL, "%s must name a configured model; the configured models are: %s.",
                      bad_model || !mc ? "model" : "judge_model", names[0] ? names : "none");
        return LB_E_INVAL;
    }
    int conc_max = cfg->eval_max_concurrency;
    /* a user's limit on tasks at once bounds an eval's too: an eval is no
     * way around it */
    if (r->user && r->user->max_tasks > 0 && r->user->max_tasks < conc_max)
        conc_max = r->user->max_tasks;
    if (field_int(&u->repeats, 1, 64, 1, &repeats)) {
        lb_http_error(r, 400, NULL, "repeats must be a whole number from 1 to 64.");
        return LB_E_INVAL;
    }
    if (field_int(&u->concurrency, 1, conc_max, conc_max < 4 ? conc_max : 4, &conc)) {
        lb_http_error(r, 400, NULL, "concurrency must be a whole number from 1 to %d%s.", conc_max,
                      conc_max < cfg->eval_max_concurrency ? " (your limit of tasks at once)" : "");
        return LB_E_INVAL;
    }
    if (field_int(&u->limit, 0, cfg->eval_max_rows, 0, &limit)) {
        lb_http_error(r, 400, NULL, "limit must be a whole number of rows from 0 (all) to %d.", cfg->eval_max_rows);
        return LB_E_INVAL;
    }
    if (field_int(&u->max_turns, 1, cfg->max_turns_limit, 0, &max_turns)) {
        lb_http_error(r, 400, NULL, "max_turns must be a whole number from 1 to %d.", cfg->max_turns_limit);
        return LB_E_INVAL;
    }
    if (field_int(&u->timeout_s, 1, cfg->task_timeout_s, 0, &timeout_s)) {
        lb_http_error(r, 400, NULL, "timeout_s must be a whole number of seconds from 1 to %d.", cfg->task_timeout_s);
        return LB_E_INVAL;
    }
    if (field_int(&u->token_budget, 1000, cfg->token_budget_max, -1, &budget)) {
        lb_http_error(r, 400, NULL, "token_budget must be a whole number of tokens from 1000 to %lld.",
                      (long long)cfg->token_budget_max);
        return LB_E_INVAL;
    }
    if (field_int(&u->judge_votes, 1, 9, 1, &votes)) {
        lb_http_error(r, 400, NULL, "judge_votes must be a whole number from 1 to 9.");
        return LB_E_INVAL;
    }
    if (field_int(&u->max_tokens, 1, 10000000, 0, &max_tokens)) {
        lb_http_error(r, 400, NULL, "max_tokens must be a whole number from 1 to 10000000.");
        return LB_E_INVAL;
    }
    if (u->name.data && !lb_utf8_valid(u->name.data, u->name.len)) {
        lb_http_error(r, 400, NULL, "name is not valid UTF-8 text.");
        return LB_E_INVAL;
    }
    char *net = NULL; /* the rows' sandboxes' network, as a task holds it (docs/NETWORK.md) */
    if (u->network.data && !blank(u->network.data) && !(net = network_check(r, u->network.data)))
        return LB_E_INVAL; /* answered */
    cJSON *o = cJSON_CreateObject();
    if (o && net && !cJSON_AddStringToObject(o, "network", net)) {
        cJSON_Delete(o);
        o = NULL;
    }
    free(net);
    /* the evaluation's image: its rows' sandboxes and scorers but for a
     * row's own (row_images_check), checked as a task's is */
    char img[LB_EVAL_FIELD_MAX + 1] = "", why[600];
    if (o && u->image.data && !blank(u->image.data)) {
        if (field_word(&u->image, img, sizeof img) != LB_OK || lb_image_check(cfg, img, why, sizeof why) != LB_OK) {
            lb_http_error(r, 400, NULL, "image: %s", img[0] ? why : "it must be one word.");
            cJSON_Delete(o);
            return LB_E_INVAL;
        }
        if (!cJSON_AddStringToObject(o, "image", img)) {
            cJSON_Delete(o);
            o = NULL;
        }
    }
    if (!o || !cJSON_AddStringToObject(o, "mode", mode[0] ? mode : "both") ||
        !cJSON_AddStringToObject(o, "model", mc->name) || !cJSON_AddNumberToObject(o, "repeats", (double)repeats) ||
        !cJSON_AddNumberToObject(o, "concurrency", (double)conc) || !cJSON_AddNumberToObject(o, "limit", (double)limit) ||
        !cJSON_AddStringToObject(o, "layout", layout[0] ? layout : "official") ||
        (max_turns && !cJSON_AddNumberToObject(o, "max_turns", (double)max_turns)) ||
        (timeout_s && !cJSON_AddNumberToObject(o, "timeout_s", (double)timeout_s)) ||
        (budget >= 0 && !cJSON_AddNumberToObject(o, "token_budget", (double)budget)) ||
        (max_tokens && !cJSON_AddNumberToObject(o, "max_tokens", (double)max_tokens)) ||
        !cJSON_AddStringToObject(o, "judge_model", jc ? jc->name : mc->name) ||
        !cJSON_AddNumberToObject(o, "judge_votes", (double)votes)) {
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return LB_E_NOMEM;
    }
    *out = o;
    return LB_OK;
}

/* An archive's folder form may sit in one top folder ("set/row1/...");
 * the dataset is the first folder that is not just one folder. */
static void dataset_root(char *dir, size_t dirsz)
{
    for (int depth = 0; depth < 4; depth++) {
        DIR *d = opendir(dir);
        if (!d)
            return;
        struct dirent *de;
        char only[256] = "";
        int n = 0, is_dir = 0, has_row = 0;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            n++;
            has_row |= !strcmp(de->d_name, "row.json");
            snprintf(only, sizeof only, "%s", de->d_name);
            is_dir = de->d_type == DT_DIR;
        }
        closedir(d);
        if (n != 1 || !is_dir || has_row)
            return;
        char inner[LB_CFG_PATH + LB_PATH_MAX + 400];
        snprintf(inner, sizeof inner, "%s/%s/row.json", dir, only);
        if (access(inner, F_OK) == 0)
            return; /* the one folder is a row: this is the dataset (of one row) */
        size_t l = strlen(dir);
        if (l + 1 + strlen(only) + 1 > dirsz)
            return;
        snprintf(dir + l, dirsz - l, "/%s", only);
    }
}

/* Unpacks an archive dataset into <dir>/dataset and points
 * u->dataset_path at the folder form's root. LB_OK; else answered. */
static int dataset_unpack(lb_req *r, lb_eval_up *u, lb_archive_kind kind)
{
    char root[sizeof u->dataset_path], err[512];
    snprintf(root, sizeof root, "%s/dataset", u->dir);
    if (lb_mkdirs(root, 0750) != LB_OK) {
        lb_http_error(r, 500, NULL, "Could not create the dataset folder: %s.", strerror(errno));
        return LB_E_IO;
    }
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        lb_http_error(r, 500, NULL, "Could not open the dataset folder.");
        return LB_E_IO;
    }
    lb_unpack_limits lim = {.max_entries = (size_t)r->cfg->eval_max_rows * 8 + 64,
                            .max_bytes = r->cfg->eval_max_upload_bytes, .max_ratio = LB_UNPACK_MAX_RATIO,
                            .ratio_slack = LB_UNPACK_RATIO_SLACK};
    lb_unpack_totals tot = {0};
    /* one of the bounded places for unpacking in a request's thread (unpack.h) */
    char key[LB_SLOT_KEY_MAX];
    lb_unpack_place_key(r, key, sizeof key);
    int rc = lb_unpack_place_take(r->cfg, key);
    if (rc != LB_OK) {
        close(fd);
        const char *code = NULL;
        int st = lb_unpack_place_refusal(r->cfg, rc, key, err, sizeof err, &code);
        lb_http_error_hdr(r, st, code, "Retry-After: 5\r\n", "%s", err);
        return LB_E_BUSY;
    }
    rc = lb_unpack(u->dataset_path, kind, u->dataset_name, fd, "", &lim, &tot, NULL, NULL, err, sizeof err);
    lb_unpack_place_release(key);
    close(fd);
    if (rc != LB_OK) {
        int st = rc == LB_E_TOOBIG ? 413 : (rc == LB_E_INVAL || rc == LB_E_EXISTS) ? 400 : 500;
        lb_http_error(r, st, "bad_dataset", "%s", err);
        return rc;
    }
    dataset_root(root, sizeof root);
    snprintf(u->dataset_path, sizeof u->dataset_path, "%s", root);
    return LB_OK;
}

/* Appends why to b with every mention of our path on the server replaced
 * by what the client knows: the upload's own name, or "NAME:" before a
 * path inside an archive. */
static int shown_paths(lb_buf *b, const lb_eval_up *u, const char *why)
{
    char up[sizeof u->dir + 16], root[sizeof u->dataset_path + 2], inner[LB_PATH_MAX + 8];
    snprintf(up, sizeof up, "%s/upload/", u->dir);
    snprintf(root, sizeof root, "%s", u->dataset_path);
    snprintf(inner, sizeof inner, "%s", u->dataset_name);
    for (const char *p = why; *p;) {
        const char *a = strstr(p, up), *c = strstr(p, root);
        const char *hit = a && (!c || a <= c) ? a : c;
        if (!hit)
            return lb_buf_appends(b, p);
        if (lb_buf_append(b, p, (size_t)(hit - p)) != LB_OK)
            return LB_E_TOOBIG;
        if (hit == a) {
            p = hit + strlen(up);
        } else {
            /* the folder itself: the archive's name; a path in it: "NAME:path" */
            p = hit + strlen(root);
            if (lb_buf_appends(b, inner) != LB_OK || (*p == '/' && lb_buf_appends(b, ":") != LB_OK))
                return LB_E_TOOBIG;
            if (*p == '/')
                p++;
        }
    }
    return LB_OK;
}

/* A 400 (413 for a cap: rc LB_E_TOOBIG) for a dataset that cannot run, from the loader's
 * "FILE:LINE: field `x`: reason": file (as the client named it), line and
 * field as their own members besides the sentence. */
static void dataset_refused(lb_req *r, const lb_eval_up *u, int rc, const char *why)
{
    char file[LB_PATH_MAX + 1] = "", field[128] = "";
    long line = 0;
    lb_buf b;
    lb_buf_init(&b, 4096);
    if (shown_paths(&b, u, why) != LB_OK || !b.data)
        LB_IGNORE(lb_buf_appends(&b, "The dataset cannot run.")); /* a cut sentence: the members still say where */
    const char *msg = b.data ? b.data : "The dataset cannot run.";
    /* FILE:LINE: at the start (an archive's FILE holds one ':' of ours,
     * before a folder name): the first ":<digits>:" ends FILE */
    const char *p = msg, *colon = NULL;
    for (const char *q = p; *q && !colon; q++) {
        if (*q != ':' || q[1] < '0' || q[1] > '9')
            continue;
        const char *d = q + 1;
        while (*d >= '0' && *d <= '9')
            d++;
        if (*d == ':')
            colon = q;
    }
    if (colon) {
        snprintf(file, sizeof file, "%.*s", (int)(colon - p), p);
        line = strtol(colon + 1, NULL, 10);
    }
    const char *f = strstr(msg, "field `");
    if (f) {
        f += 7;
        const char *e = strchr(f, '`');
        if (e && (size_t)(e - f) < sizeof field)
            snprintf(field, sizeof field, "%.*s", (int)(e - f), f);
    }
    char *clean = lb_utf8_sanitize(msg, strlen(msg), NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
    if (e) {
        cJSON_AddStringToObject(e, "code", "bad_dataset");
        cJSON_AddStringToObject(e, "message", clean ? clean : "The dataset cannot run.");
        cJSON_AddStringToObject(o, "file", file[0] ? file : u->dataset_name);
        if (line > 0)
            cJSON_AddNumberToObject(o, "line", (double)line);
        else
            cJSON_AddNullToObject(o, "line");
        if (field[0])
            cJSON_AddStringToObject(o, "field", field);
        else
            cJSON_AddNullToObject(o, "field");
    }
    free(clean);
    lb_buf_free(&b);
    lb_http_json(r, rc == LB_E_TOOBIG ? 413 : 400, o, NULL); /* a cap of the dataset: 413, as uploads */
    cJSON_Delete(o);
}

/* Distinct images the rows of one dataset may name: each may be pulled
 * before the evaluation is stored, so a dataset cannot make the upload
 * pull without end. */
#define LB_EVAL_ROW_IMAGES_MAX 16

/* Checks every row's own image before anything is stored or run: each must
 * be an image of this host or a registry's reference it can pull (pulled
 * now, once, as a task's is). LB_OK; else answered 400 naming the row's
 * number, id and image, and nothing runs. */
static int row_images_check(lb_req *r, const lb_eval_up *u, const lb_eval_dataset *ds)
{
    const char *seen[LB_EVAL_ROW_IMAGES_MAX];
    size_t nseen = 0;
    for (size_t i = 0; i < ds->n; i++) {
        const char *img = ds->rows[i].image;
        size_t k = 0;
        while (img && k < nseen && strcmp(seen[k], img))
            k++;
        if (!img || k < nseen || !strcmp(img, r->cfg->default_image[0] ? r->cfg->default_image : "default"))
            continue; /* the evaluation's image (every task's, checked at start), or checked already */
        char err[600], why[1200];
        int rc = LB_OK;
        if (nseen == LB_EVAL_ROW_IMAGES_MAX) {
            snprintf(err, sizeof err, "the rows name more than %d different images", LB_EVAL_ROW_IMAGES_MAX);
            rc = LB_E_TOOBIG;
        } else if (lb_image_check(r->cfg, img, err, sizeof err) != LB_OK) {
            rc = LB_E_NOTFOUND;
        }
        if (rc != LB_OK) {
            snprintf(why, sizeof why, "row %zu (id \"%.100s\"): field `image`: \"%.255s\": %s Nothing was run.", i + 1,
                     ds->rows[i].id, img, err);
            dataset_refused(r, u, LB_E_INVAL, why);
            return rc;
        }
        seen[nseen++] = img;
    }
    return LB_OK;
}

/* ---- resume: a previous results.jsonl ---- */

typedef struct lb_prev {
    char *id, *line;
    char mode[8];
    int repeat;
} lb_prev;

static int prev_cmp(const void *a, const void *b)
{
    const lb_prev *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    if (!c)
        c = strcmp(x->mode, y->mode);
    return c ? c : (x->repeat > y->repeat) - (x->repeat < y->repeat);
}

static void prevs_free(lb_prev *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].id);
        free(v[i].line);
    }
    free(v);
}

/* Reads the finished lines (status ok or failed) of a resume file, sorted
 * for lookup. A line that does not read is a 400 naming it (answered). */
static int resume_read(lb_req *r, const char *path, lb_prev **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    char *text = NULL;
    size_t len = 0;
    int rc = lb_read_file(path, r->cfg->eval_max_upload_bytes, &text, &len);
    if (rc != LB_OK) {
        lb_http_error(r, 500, NULL, "Could not read the resume file back.");
        return rc;
    }
    lb_prev *v = NULL;
    size_t n = 0, cap = 0;
    long lineno = 0;
    for (char *p = text; p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
        lineno++;
        char *next = nl ? nl + 1 : text + len;
        if (!l || blank((p[l] = '\0', p))) {
            p = next;
            continue;
        }
        lb_eval_result res;
        memset(&res, 0, sizeof res);
        char why[300];
        if (lb_eval_result_from_json(p, l, &res, why, sizeof why) != LB_OK) {
            cJSON *o = cJSON_CreateObject();
            cJSON *e = cJSON_AddObjectToObject(o, "error");
            char msg[400];
            snprintf(msg, sizeof msg, "resume:%ld: %s", lineno, why);
            char *clean = lb_utf8_sanitize(msg, strlen(msg), NULL);
            cJSON_AddStringToObject(e, "code", "bad_resume");
            cJSON_AddStringToObject(e, "message", clean ? clean : "The resume file does not read.");
            cJSON_AddStringToObject(o, "file", "resume");
            cJSON_AddNumberToObject(o, "line", (double)lineno);
            cJSON_AddNullToObject(o, "field");
            lb_http_json(r, 400, o, NULL);
            cJSON_Delete(o);
            free(clean);
            rc = LB_E_INVAL;
            goto out;
        }
        /* finished: scored, or failed on its own (a timeout, a model
         * error); a run stopped by a cancel did not finish and runs again */
        int cancelled = res.error_class && !strcmp(res.error_class, "cancelled");
        if (res.id && res.mode && res.status &&
            (!strcmp(res.status, "ok") || (!strcmp(res.status, "failed") && !cancelled))) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 256;
                lb_prev *nv = realloc(v, nc * sizeof *nv);
                if (!nv) {
                    lb_eval_result_free(&res);
                    lb_http_error(r, 500, NULL, "Out of memory.");
                    rc = LB_E_NOMEM;
                    goto out;
                }
                v = nv;
                cap = nc;
            }
            memset(&v[n], 0, sizeof v[n]);
            v[n].id = strdup(res.id);
            snprintf(v[n].mode, sizeof v[n].mode, "%s", res.mode);
            v[n].repeat = res.repeat;
            v[n].line = lb_eval_result_to_json(&res); /* re-rendered: our own shape, whatever was sent */
            n++;
            if (!v[n - 1].id || !v[n - 1].line) {
                lb_eval_result_free(&res);
                lb_http_error(r, 500, NULL, "Out of memory.");
                rc = LB_E_NOMEM;
                goto out;
            }
        }
        lb_eval_result_free(&res);
        p = next;
    }
    qsort(v, n, sizeof *v, prev_cmp);
    *out = v;
    *nout = n;
    v = NULL;
    n = 0;
out:
    prevs_free(v, n);
    free(text);
    return rc;
}

static const char *prev_find(const lb_prev *v, size_t n, const char *id, const char *mode, int repeat)
{
    lb_prev key = {.id = (char *)id, .repeat = repeat};
    snprintf(key.mode, sizeof key.mode, "%s", mode);
    const lb_prev *hit = v ? bsearch(&key, v, n, sizeof *v, prev_cmp) : NULL;
    return hit ? hit->line : NULL;
}

/* The result line of a run whose row cannot run. */
static char *row_error_line(const lb_eval_row *row, const char *mode, int repeat)
{
    lb_eval_result res;
    memset(&res, 0, sizeof res);
    res.id = row->id;
    res.domain = row->domain;
    res.mode = (char *)mode;
    res.repeat = repeat;
    res.score = -1;
    res.scorer = row->scorer;
    res.ground_truth_json = row->ground_truth_json;
    /* skipped, not error: the dataset is at fault, not the model, so the
     * row is left out of the accuracy and counted apart (summary.h) */
    res.status = "skipped";
    res.error = row->error;
    res.error_class = "bad_row";
    res.image = row->image;
    return lb_eval_result_to_json(&res);
}

/* Stores the eval made of ds and answers 201. */
static int eval_store(lb_req *r, const char *id, const lb_eval_up *u, const cJSON *opts, lb_eval_dataset *ds,
                      const lb_prev *prev, size_t nprev)
{
    const lb_config *cfg = r->cfg;
    lb_eval_opts o;
    char *opts_json = cJSON_PrintUnformatted(opts);
    int rc = opts_json ? lb_eval_opts_parse(opts_json, &o) : LB_E_NOMEM;
    lb_eval_run_new *runs = NULL;
    char **lines = NULL;
    size_t nrun = 0, nlines = 0;
    cJSON *ans = NULL;
    if (rc != LB_OK) {
        lb_http_error(r, 500, NULL, "Could not record the options.");
        goto out;
    }
    size_t rows = o.limit > 0 && (size_t)o.limit < ds->n ? (size_t)o.limit : ds->n;
    int modes = o.llm + o.sandbox;
    if (!rows) {
        lb_http_error(r, 400, "bad_dataset", "The dataset has no rows.");
        rc = LB_E_INVAL;
        goto out;
    }
    if (rows * (size_t)modes * (size_t)o.repeats > LB_EVAL_MAX_RUNS) {
        lb_http_error(r, 413, NULL, "%zu rows x %d modes x %d repeats is more than %d runs in one evaluation.", rows,
                      modes, o.repeats, LB_EVAL_MAX_RUNS);
        rc = LB_E_TOOBIG;
        goto out;
    }
    size_t total = rows * (size_t)modes * (size_t)o.repeats;
    runs = calloc(total, sizeof *runs);
    lines = calloc(total, sizeof *lines);
    ans = cJSON_CreateObject();
    cJSON *row_errors = ans ? cJSON_AddArrayToObject(ans, "row_errors") : NULL;
    if (!runs || !lines || !row_errors) {
        lb_http_error(r, 500, NULL, "Out of memory.");
        rc = LB_E_NOMEM;
        goto out;
    }
    int64_t resumed = 0;
    for (size_t i = 0; i < rows; i++) {
        const lb_eval_row *row = &ds->rows[i];
        if (row->error) {
            cJSON *x = cJSON_CreateObject();
            char *clean = lb_utf8_sanitize(row->error, strlen(row->error), NULL);
            if (x) {
                cJSON_AddStringToObject(x, "id", row->id);
                cJSON_AddNumberToObject(x, "row", (double)i);
                cJSON_AddStringToObject(x, "error", clean ? clean : "this row cannot run");
                cJSON_AddItemToArray(row_errors, x);
            }
            free(clean);
        }
        for (int m = 0; m < 2; m++) {
            const char *mode = m ? "sandbox" : "llm";
            if ((m && !o.sandbox) || (!m && !o.llm))
                continue;
            for (int k = 0; k < o.repeats; k++) {
                lb_eval_run_new *rn = &runs[nrun++];
                rn->row_idx = (int64_t)i;
                rn->row_id = row->id;
                rn->mode = mode;
                rn->repeat = k;
                const char *done = row->error ? NULL : prev_find(prev, nprev, row->id, mode, k);
                if (row->error) {
                    rn->status = "skipped";
                    rn->result_json = lines[nlines++] = row_error_line(row, mode, k);
                } else if (done) {
                    rn->status = "done";
                    rn->result_json = done;
                    resumed++;
                } else {
                    rn->status = "pending";
                }
                if (row->error && !rn->result_json) {
                    lb_http_error(r, 500, NULL, "Out of memory.");
                    rc = LB_E_NOMEM;
                    goto out;
                }
            }
        }
    }
    lb_eval_rec e;
    memset(&e, 0, sizeof e);
    snprintf(e.id, sizeof e.id, "%s", id);
    e.owner = (char *)lb_auth_owner(r);
    char name[LB_EVAL_NAME_MAX + 1];
    snprintf(name, sizeof name, "%s", u->name.data && !blank(u->name.data) ? u->name.data : u->dataset_name);
    e.name = name;
    snprintf(e.status, sizeof e.status, "queued");
    e.options_json = opts_json;
    e.dataset = (char *)u->dataset_path;
    e.created_ms = lb_now_ms();
    rc = lb_store_eval_insert(r->store, &e, runs, nrun);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "save the evaluation");
        goto out;
    }
    lb_info("web: eval %s created by %s: %zu rows, %zu runs (%lld resumed, %d row errors), %s, model %s, "
            "concurrency %d", id, e.owner ? e.owner : "(no users)", rows, nrun, (long long)resumed,
            cJSON_GetArraySize(row_errors), o.llm && o.sandbox ? "both modes" : o.llm ? "llm mode" : "sandbox mode",
            o.model, o.concurrency);
    (void)cfg;
    cJSON_AddStringToObject(ans, "id", id);
    cJSON_AddStringToObject(ans, "status", "queued");
    cJSON_AddNumberToObject(ans, "rows", (double)rows);
    cJSON_AddNumberToObject(ans, "runs", (double)nrun);
    cJSON_AddNumberToObject(ans, "resumed", (double)resumed);
    char extra[128];
    snprintf(extra, sizeof extra, "Location: /api/evals/%s\r\n", id);
    lb_http_json(r, 201, ans, extra);
    lb_eval_runner_wake();
out:
    for (size_t i = 0; i < nlines; i++)
        free(lines[i]);
    free(lines);
    free(runs);
    free(opts_json);
    cJSON_Delete(ans);
    return rc;
}

void lb_h_eval_create(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    lb_eval_up u;
    memset(&u, 0, sizeof u);
    u.fd = -1;
    lb_buf *all[] = {&u.mode, &u.model, &u.repeats, &u.concurrency, &u.limit, &u.layout, &u.max_turns,
                     &u.timeout_s, &u.token_budget, &u.judge_model, &u.judge_votes, &u.max_tokens, &u.name,
                     &u.network, &u.image};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        lb_buf_init(all[i], all[i] == &u.name      ? LB_EVAL_NAME_MAX
                            : all[i] == &u.network ? LB_NETPOL_TEXT_MAX /* a policy of rules, as JSON text */
                                                   : LB_EVAL_FIELD_MAX);
    lb_mp *mp = NULL;
    char *chunk = NULL;
    char id[33];
    int dir_made = 0, committed = 0, stored = 0;
    cJSON *opts = NULL;
    lb_eval_dataset ds;
    memset(&ds, 0, sizeof ds);
    lb_prev *prev = NULL;
    size_t nprev = 0;
    lb_start_ticket ticket = {.user = -1};
    uint64_t max = cfg->eval_max_upload_bytes;
    char boundary[LB_MP_BOUNDARY_MAX + 1];

    if (!lb_mp_is_form_data(r->content_type)) {
        lb_http_drain(r);
        lb_http_error(r, 415, NULL, "Send the evaluation as multipart/form-data (a dataset file and its options).");
        goto out;
    }
    if (r->content_length > 0 && (uint64_t)r->content_length > max + 65536) {
        lb_http_drain(r);
        lb_http_error(r, 413, NULL, "The upload is %lld bytes; the limit is %llu MiB (eval_max_upload_mb).",
                      (long long)r->content_length, (unsigned long long)(max >> 20));
        goto out;
    }
    if (lb_mp_boundary(r->content_type, boundary, sizeof boundary) != LB_OK) {
        lb_http_drain(r);
        lb_http_error(r, 400, NULL, "The Content-Type has no valid multipart boundary.");
        goto out;
    }
    /* the user's limits on starting work hold for an eval as for a task */
    if (lb_limits_start(r, &ticket) != LB_OK)
        goto out; /* answered */
    if (lb_random_hex(id, sizeof id, 16) != LB_OK) {
        lb_http_drain(r);
        lb_http_error(r, 500, NULL, "Could not make an id.");
        goto out;
    }
    lb_eval_dir(cfg, id, u.dir, sizeof u.dir);
    snprintf(u.resume_path, sizeof u.resume_path, "%s/resume.jsonl", u.dir);
    char updir[sizeof u.dir + 16];
    snprintf(updir, sizeof updir, "%s/upload", u.dir);
    dir_made = 1;
    if (lb_mkdirs(updir, 0750) != LB_OK) {
        lb_http_drain(r);
        if (errno == ENOSPC || errno == EDQUOT)
            lb_http_disk_full(r, "create the evaluation's folder");
        else
            lb_http_error(r, 500, NULL, "Could not create the evaluation's folder.");
        goto out;
    }
    chunk = malloc(LB_EVAL_READ_CHUNK);
    lb_mp_limits lim = {.max_parts = 32, .max_header_bytes = 8192, .max_field_bytes = LB_EVAL_FIELD_MAX,
                        .max_file_bytes = max, .max_total_bytes = max + 65536};
    lb_mp_callbacks cb = {up_begin, up_data, up_end};
    if (!chunk || lb_mp_new(boundary, &lim, &cb, &u, &mp) != LB_OK) {
        lb_http_drain(r);
        lb_http_error(r, 500, NULL, "Out of memory.");
        goto out;
    }
    int rc = LB_OK;
    for (;;) {
        int n = FCGX_GetStr(chunk, LB_EVAL_READ_CHUNK, r->fcgi->in);
        if (n <= 0)
            break;
        if ((rc = lb_mp_feed(mp, chunk, (size_t)n)) != LB_OK)
            break;
    }
    if (rc == LB_OK)
        rc = lb_mp_finish(mp);
    if (rc != LB_OK) {
        lb_http_drain(r);
        if (u.http_status)
            lb_http_error(r, u.http_status, NULL, "%s", u.msg);
        else
            lb_http_error(r, rc == LB_E_TOOBIG ? 413 : 400, NULL, "%s",
                          lb_mp_error(mp)[0] ? lb_mp_error(mp) : "The upload is malformed.");
        goto out;
    }
    if (!u.have_dataset) {
        lb_http_error(r, 400, NULL, "The form has no dataset file (field \"dataset\": .jsonl, .json, or a .tar, "
                                    ".tar.gz or .zip of the folder form).");
        goto out;
    }
    if (fields_check(r, &u, &opts) != LB_OK)
        goto out; /* answered */
    lb_archive_kind kind = lb_archive_kind_of(u.dataset_name);
    size_t nl = strlen(u.dataset_name);
    if (kind != LB_ARCHIVE_NONE) {
        if (dataset_unpack(r, &u, kind) != LB_OK)
            goto out;
    } else if (!(nl > 6 && !strcasecmp(u.dataset_name + nl - 6, ".jsonl")) &&
               !(nl > 5 && !strcasecmp(u.dataset_name + nl - 5, ".json"))) {
        lb_http_error(r, 400, "bad_dataset",
                      "The dataset must be a .jsonl or .json file, or a .tar, .tar.gz or .zip of the folder form "
                      "(one folder per row with row.json and files/).");
        goto out;
    }
    lb_eval_limits dl;
    lb_eval_limits_for(cfg, &dl);
    char why[1024];
    int lrc = lb_eval_dataset_load(u.dataset_path, &dl, &ds, why, sizeof why);
    if (lrc != LB_OK) {
        dataset_refused(r, &u, lrc, why);
        goto out;
    }
    if (row_images_check(r, &u, &ds) != LB_OK)
        goto out; /* answered */
    if (u.have_resume && resume_read(r, u.resume_path, &prev, &nprev) != LB_OK)
        goto out; /* answered */
    /* several nodes: the dataset into the object store before the row exists,
     * so a web on another host can drive the eval (a takeover); only what
     * the runner reads: the unpacked folder of an archive, else the file
     * (the archive and resume.jsonl are read by this upload alone) */
    char entry[LB_PATH_MAX + 16], blob_err[700];
    snprintf(entry, sizeof entry, kind != LB_ARCHIVE_NONE ? "dataset" : "upload/%s", u.dataset_name);
    stored = 1;
    if (lb_blob_eval_put(cfg, id, u.dir, entry, blob_err, sizeof blob_err) != LB_OK) {
        lb_error("web: eval %s: its dataset could not be stored in the object store: %s", id, blob_err);
        lb_http_error_hdr(r, 503, NULL, "Retry-After: 5\r\n",
                          "The dataset could not be stored in the object store: %s", blob_err);
        goto out;
    }
    if (eval_store(r, id, &u, opts, &ds, prev, nprev) == LB_OK)
        committed = 1;
out:
    if (stored && !committed) {
        char del_err[700]; /* nothing half made: no row names these objects */
        if (lb_blob_eval_delete(cfg, id, del_err, sizeof del_err) != LB_OK)
            lb_warn("web: eval %s: not stored, but its files in the object store are left: %s", id, del_err);
    }
    if (u.fd >= 0)
        close(u.fd);
    if (!committed) {
        if (dir_made)
            LB_IGNORE(lb_rmtree(u.dir)); /* nothing refers to an eval that was not stored: only disk */
        lb_limits_refund(&ticket);
    }
    lb_eval_dataset_free(&ds);
    prevs_free(prev, nprev);
    cJSON_Delete(opts);
    lb_mp_free(mp);
    free(chunk);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        lb_buf_free(all[i]);
}

/* ---- GET /api/evals ---- */

static cJSON *eval_brief(lb_store *s, const lb_eval_rec *e)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "id", e->id);
    cJSON_AddStringToObject(o, "name", e->name ? e->name : "");
    cJSON_AddStringToObject(o, "status", e->status);
    cJSON *opts = e->options_json ? cJSON_Parse(e->options_json) : NULL;
    cJSON_AddItemToObject(o, "options", opts ? opts : cJSON_CreateObject());
    cJSON_AddNumberToObject(o, "created_ms", (double)e->created_ms);
    if (e->started_ms >= 0)
        cJSON_AddNumberToObject(o, "started_ms", (double)e->started_ms);
    else
        cJSON_AddNullToObject(o, "started_ms");
    if (e->finished_ms >= 0)
        cJSON_AddNumberToObject(o, "finished_ms", (double)e->finished_ms);
    else
        cJSON_AddNullToObject(o, "finished_ms");
    if (e->error)
        cJSON_AddStringToObject(o, "error", e->error);
    else
        cJSON_AddNullToObject(o, "error");
    lb_eval_counts k;
    if (lb_store_eval_counts(s, e->id, &k) == LB_OK) {
        cJSON *p = cJSON_AddObjectToObject(o, "progress");
        cJSON_AddNumberToObject(p, "total", (double)k.total);
        cJSON_AddNumberToObject(p, "done", (double)k.done);
        cJSON_AddNumberToObject(p, "running", (double)k.running);
        cJSON_AddNumberToObject(p, "scoring", (double)k.scoring);
        cJSON_AddNumberToObject(p, "pending", (double)k.pending);
        cJSON_AddNumberToObject(p, "failed", (double)k.failed);
        cJSON_AddNumberToObject(p, "error", (double)k.error);
        cJSON_AddNumberToObject(p, "skipped", (double)k.skipped);
        /* from the pace so far; null until one run has finished */
        int64_t finished = k.done + k.error, left = k.pending + k.running + k.scoring;
        int64_t elapsed = e->started_ms > 0 ? lb_now_ms() - e->started_ms : 0;
        if (!strcmp(e->status, "running") && finished > 0 && elapsed > 0 && left > 0)
            cJSON_AddNumberToObject(o, "eta_s", (double)(left * elapsed / finished / 1000));
        else if (!strcmp(e->status, "running") || !strcmp(e->status, "queued"))
            cJSON_AddNullToObject(o, "eta_s");
        else
            cJSON_AddNumberToObject(o, "eta_s", 0);
    }
    return o;
}

void lb_h_eval_list(lb_req *r)
{
    lb_eval_rec *v = NULL;
    size_t n = 0;
    int rc = lb_store_eval_list(r->store, lb_auth_owner(r), 200, &v, &n);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "list the evaluations");
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "evals") : NULL;
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *x = eval_brief(r->store, &v[i]);
        if (x)
            cJSON_AddItemToArray(arr, x);
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
    lb_eval_recs_free(v, n);
}

/* ---- GET /api/evals/{id} ---- */

/* An answer cut to LB_EVAL_ANSWER_SHOWN bytes at a character's start. */
static void add_answer(cJSON *o, const char *a)
{
    if (!a) {
        cJSON_AddNullToObject(o, "answer");
        return;
    }
    size_t n = strlen(a);
    int cut = n > LB_EVAL_ANSWER_SHOWN;
    if (cut) {
        n = LB_EVAL_ANSWER_SHOWN;
        while (n > 0 && ((unsigned char)a[n] & 0xC0) == 0x80)
            n--;
    }
    char *clean = lb_utf8_sanitize(a, n, NULL);
    cJSON_AddStringToObject(o, "answer", clean ? clean : "");
    cJSON_AddBoolToObject(o, "answer_cut", cut);
    free(clean);
}

static cJSON *run_json(const lb_eval_run *run)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON *res = run->result_json ? cJSON_Parse(run->result_json) : NULL;
    cJSON_AddStringToObject(o, "id", run->row_id);
    const char *dom = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "domain"));
    if (dom)
        cJSON_AddStringToObject(o, "domain", dom);
    else
        cJSON_AddNullToObject(o, "domain");
    cJSON_AddStringToObject(o, "mode", run->mode);
    cJSON_AddNumberToObject(o, "repeat", run->repeat);
    cJSON_AddStringToObject(o, "status", run->status);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(res, "score");
    if (cJSON_IsNumber(sc) && sc->valuedouble >= 0)
        cJSON_AddNumberToObject(o, "score", sc->valuedouble);
    else
        cJSON_AddNullToObject(o, "score");
    static const char *const keys[] = {"scorer", "error", "error_class", "score_detail", "image"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, keys[i]));
        if (v)
            cJSON_AddStringToObject(o, keys[i], v);
        else
            cJSON_AddNullToObject(o, keys[i]);
    }
    const char *rs = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "status"));
    if (rs)
        cJSON_AddStringToObject(o, "result_status", rs);
    else
        cJSON_AddNullToObject(o, "result_status");
    add_answer(o, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "answer")));
    /* a run imported from a resume file ran as the task its line names */
    const char *tid = run->task_id[0] ? run->task_id
                                      : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "task_id"));
    if (tid && lb_id_valid(tid))
        cJSON_AddStringToObject(o, "task_id", tid);
    else
        cJSON_AddNullToObject(o, "task_id");
    cJSON_Delete(res);
    return o;
}

static int query_num(lb_req *r, const char *key, long long lo, long long hi, long long *out)
{
    char v[32];
    int qrc = lb_query_get(r->query, key, v, sizeof v);
    if (qrc == LB_E_NOTFOUND)
        return LB_OK;
    char *end = v;
    errno = 0;
    long long x = qrc == LB_OK ? strtoll(v, &end, 10) : -1;
    if (qrc != LB_OK || end == v || *end || errno || x < lo || x > hi) {
        lb_http_error(r, 400, NULL, "%s must be a whole number from %lld to %lld.", key, lo, hi);
        return LB_E_INVAL;
    }
    *out = x;
    return LB_OK;
}

/* A cancelled eval has no stored summary: once its last run is in, what
 * finished is summed up here, when asked (into e->summary_json). */
static void summary_of_cancelled(lb_store *s, lb_eval_rec *e)
{
    lb_eval_counts k;
    if (e->summary_json || strcmp(e->status, "cancelled") || lb_store_eval_counts(s, e->id, &k) != LB_OK ||
        k.running || k.scoring)
        return;
    int64_t wl = 0, ws = 0;
    if (lb_eval_summarize(s, e->id, &e->summary_json, &wl, &ws) != LB_OK)
        e->summary_json = NULL; /* shown as no summary */
    e->wall_ms_llm = wl;
    e->wall_ms_sandbox = ws;
}

void lb_h_eval_get(lb_req *r)
{
    long long offset = 0, limit = LB_EVAL_RUNS_PAGE;
    if (query_num(r, "offset", 0, 100000000, &offset) || query_num(r, "limit", 1, 1000, &limit))
        return;
    lb_eval_rec e;
    if (eval_visible(r, &e) != LB_OK)
        return;
    cJSON *o = eval_brief(r->store, &e);
    lb_eval_run *runs = NULL;
    size_t n = 0;
    int rc = o ? lb_store_eval_runs(r->store, e.id, LB_RUNS_ALL, offset, (int)limit, &runs, &n) : LB_E_NOMEM;
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the evaluation's runs");
        goto out;
    }
    summary_of_cancelled(r->store, &e);
    cJSON *sum = e.summary_json ? cJSON_Parse(e.summary_json) : NULL;
    cJSON_AddItemToObject(o, "summary", sum ? sum : cJSON_CreateNull());
    cJSON *w = cJSON_AddObjectToObject(o, "wall_ms");
    cJSON_AddNumberToObject(w, "llm", (double)e.wall_ms_llm);
    cJSON_AddNumberToObject(w, "sandbox", (double)e.wall_ms_sandbox);
    cJSON_AddNumberToObject(o, "runs_offset", (double)offset);
    cJSON_AddNumberToObject(o, "runs_limit", (double)limit);
    cJSON *arr = cJSON_AddArrayToObject(o, "runs");
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *x = run_json(&runs[i]);
        if (x)
            cJSON_AddItemToArray(arr, x);
    }
    lb_http_json(r, 200, o, NULL);
out:
    cJSON_Delete(o);
    lb_eval_runs_free(runs, n);
    lb_eval_rec_free(&e);
}

/* ---- GET /api/evals/{id}/results.jsonl and summary.md ---- */

void lb_h_eval_results(lb_req *r)
{
    lb_eval_rec e;
    if (eval_visible(r, &e) != LB_OK)
        return;
    char extra[160];
    snprintf(extra, sizeof extra, "Content-Disposition: attachment; filename=\"results-%.8s.jsonl\"\r\n", e.id);
    lb_http_head(r, 200, "application/x-ndjson; charset=utf-8", extra);
    /* in row order (row, mode, repeat), a page at a time: the table is
     * the truth, and an eval's lines never sit in memory at once */
    for (int64_t off = 0; !r->is_head; off += 1000) {
        lb_eval_run *runs = NULL;
        size_t n = 0;
        if (lb_store_eval_runs(r->store, e.id, LB_RUNS_ALL, off, 1000, &runs, &n) != LB_OK)
            break; /* the head is sent: a short file is all that is left to say */
        for (size_t i = 0; i < n; i++)
            if (runs[i].result_json) {
                FCGX_PutS(runs[i].result_json, r->fcgi->out);
                FCGX_PutChar('\n', r->fcgi->out);
            }
        lb_eval_runs_free(runs, n);
        if (n < 1000)
            break;
    }
    lb_eval_rec_free(&e);
}

void lb_h_eval_summary_md(lb_req *r)
{
    lb_eval_rec e;
    if (eval_visible(r, &e) != LB_OK)
        return;
    summary_of_cancelled(r->store, &e);
    cJSON *sum = e.summary_json ? cJSON_Parse(e.summary_json) : NULL;
    char *md = sum ? lb_eval_summary_markdown(sum) : NULL;
    if (!sum) {
        lb_http_error(r, 409, NULL, "The evaluation has no summary yet (status: %s); it is made when its runs are "
                      "in.", e.status);
    } else if (!md) {
        lb_http_error(r, 500, NULL, "Could not render the summary.");
    } else {
        lb_http_head(r, 200, "text/markdown; charset=utf-8", NULL);
        if (!r->is_head)
            FCGX_PutS(md, r->fcgi->out);
    }
    free(md);
    cJSON_Delete(sum);
    lb_eval_rec_free(&e);
}

/* ---- POST /api/evals/{id}/cancel, DELETE /api/evals/{id} ---- */

/* Stops the tasks of the eval's running runs (their ends are scored and
 * kept by the runner). */
static void stop_runs(lb_store *s, const char *id)
{
    lb_eval_run *runs = NULL;
    size_t n = 0;
    if (lb_store_eval_runs(s, id, LB_RUNS_ACTIVE, 0, 10000, &runs, &n) != LB_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(runs[i].status, "running") || !runs[i].task_id[0])
            continue;
        if (lb_spawn_cancel(runs[i].task_id) != LB_OK) {
            /* no agent of ours runs it (an earlier web's): end it here */
            int rc = lb_store_task_end(s, runs[i].task_id, LB_TASK_CANCELLED, "cancelled with its evaluation", NULL);
            if (rc != LB_OK && rc != LB_E_EXISTS && rc != LB_E_NOTFOUND)
                lb_warn("web: eval %s: cannot cancel task %s: %s", id, runs[i].task_id, lb_strerror(rc));
        }
    }
    lb_eval_runs_free(runs, n);
}

void lb_h_eval_cancel(lb_req *r)
{
    lb_eval_rec e;
    if (eval_visible(r, &e) != LB_OK)
        return;
    int rc = lb_store_eval_cancel(r->store, e.id);
    if (rc == LB_E_EXISTS) {
        lb_http_error(r, 409, NULL, "The evaluation has already ended (%s); there is nothing to cancel.", e.status);
    } else if (rc != LB_OK) {
        lb_http_store_error(r, rc, "cancel the evaluation");
    } else {
        stop_runs(r->store, e.id);
        lb_eval_runner_wake();
        lb_info("web: eval %s cancelled", e.id);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", e.id);
        cJSON_AddStringToObject(o, "status", "cancelled");
        lb_http_json(r, 202, o, NULL);
        cJSON_Delete(o);
    }
    lb_eval_rec_free(&e);
}

void lb_h_eval_delete(lb_req *r)
{
    lb_eval_rec e;
    if (eval_visible(r, &e) != LB_OK)
        return;
    /* a running eval is stopped first: its tasks would run for nothing */
    if (!strcmp(e.status, "queued") || !strcmp(e.status, "running")) {
        int rc = lb_store_eval_cancel(r->store, e.id);
        if (rc != LB_OK && rc != LB_E_EXISTS) {
            lb_http_store_error(r, rc, "stop the evaluation");
            goto out;
        }
    }
    stop_runs(r->store, e.id);
    int rc = lb_store_eval_delete(r->store, e.id);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "delete the evaluation");
        goto out;
    }
    char dir[LB_CFG_PATH + 64];
    lb_eval_dir(r->cfg, e.id, dir, sizeof dir);
    LB_IGNORE(lb_rmtree(dir)); /* the row is gone: what is left on disk is only disk */
    char blob_err[700]; /* several nodes: its dataset in the object store too (no-op without a bucket) */
    if (lb_blob_eval_delete(r->cfg, e.id, blob_err, sizeof blob_err) != LB_OK)
        lb_warn("web: eval %s: its files in the object store are left: %s", e.id, blob_err);
    lb_info("web: eval %s deleted", e.id);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", e.id);
    cJSON_AddBoolToObject(o, "deleted", 1);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
out:
    lb_eval_rec_free(&e);
}
