/* Task routes: create (multipart upload + agent spawn), list, get, cancel,
 * delete, and the artifact index. */
#include "web/handlers_tasks.h"

#include "web/handlers_messages.h"

#include "web/artifact_access.h"
#include "web/auth.h"
#include "web/download_link.h"
#include "web/http.h"
#include "web/spawn.h"
#include "web/task_json.h"
#include "web/task_options.h"
#include "web/user_limits.h"
#include "common/netpolicy.h"
#include "common/agent_spawn.h" /* lb_agent_alive */
#include "common/path.h"
#include "store/store.h"
#include "common/buf.h"
#include "common/blob_task.h" /* several nodes */
#include "common/config.h"
#include "common/log.h"
#include "common/task_opts.h" /* LB_TASK_OPTS_MCP_MAX */
#include "common/status.h"
#include "common/task.h"
#include "common/utf8.h"
#include "common/util.h"
#include "web/admission.h"
#include "web/multipart.h"
#include "web/task_trash.h"
#include "web/unpack.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcgiapp.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LB_UPLOAD_HEADER_MAX 8192
#define LB_UPLOAD_SMALL_FIELD 256 /* model, max_turns, token_budget, timeout_s, network, image, unpack */

#define LB_READ_CHUNK 65536

/* ---- POST /api/tasks ---- */


static int lb_up_fail(lb_upload *u, int status, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int lb_up_fail(lb_upload *u, int status, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->msg, sizeof u->msg, fmt, ap);
    va_end(ap);
    u->http_status = status;
    return rc;
}

/* A file of the upload could not be written (errno says why): a full disk
 * is the client's 507 (try later), anything else our 500. */
static int lb_up_store_fail(lb_upload *u)
{
    int e = errno;
    if (e == ENOSPC || e == EDQUOT) {
        lb_error("web: task %s: the disk is full: the upload could not be stored", u->id);
        return lb_up_fail(u, 507, LB_E_NOSPACE,
                          "The server's disk is full, so the upload could not be stored. Nothing was kept; "
                          "try again once the operator has freed space.");
    }
    return lb_up_fail(u, 500, LB_E_IO, "Could not store the upload: %s.", strerror(e));
}

static int lb_up_begin(void *arg, const lb_mp_part *p)
{
    lb_upload *u = arg;
    u->field = NULL;
    u->fd = -1;
    if (!strcmp(p->name, "prompt"))
        u->field = &u->prompt;
    else if (!strcmp(p->name, "model"))
        u->field = &u->model;
    else if (!strcmp(p->name, "max_turns"))
        u->field = &u->max_turns;
    else if (!strcmp(p->name, "token_budget"))
        u->field = &u->token_budget;
    else if (!strcmp(p->name, "timeout_s"))
        u->field = &u->timeout_s;
    else if (!strcmp(p->name, "network"))
        u->field = &u->network;
    else if (!strcmp(p->name, "image"))
        u->field = &u->image;
    else if (!strcmp(p->name, "unpack"))
        u->field = &u->unpack;
    else if (!strcmp(p->name, "fresh"))
        u->field = &u->fresh;
    else if (!strcmp(p->name, "mcp")) {
        /* the one field that may repeat: each is one more name (or list) */
        char msg[LB_MP_NAME_MAX + 96];
        int st = u->mcp.len ? lb_mp_field_append(&u->mcp, p->name, ",", 1, msg, sizeof msg) : 0;
        if (st)
            return lb_up_fail(u, st, st == 400 ? LB_E_INVAL : LB_E_TOOBIG, "%s", msg);
        u->field = &u->mcp;
        return 0;
    }
    if (u->field) {
        if (u->field->len)
            return lb_up_fail(u, 400, LB_E_INVAL, "The form field \"%s\" appears twice.", p->name);
        return 0;
    }
    if (!p->is_file || !p->filename[0])
        return 0; /* unknown fields and empty file inputs are ignored */
    if (++u->nfiles > LB_UPLOAD_MAX_FILES)
        return lb_up_fail(u, 413, LB_E_TOOBIG, "A task takes at most %d input files.", LB_UPLOAD_MAX_FILES);
    cJSON *it;
    cJSON_ArrayForEach(it, u->inputs)
    {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(it, "path")), p->filename))
            return lb_up_fail(u, 400, LB_E_INVAL, "Two uploaded files have the same name \"%s\".", p->filename);
    }
    snprintf(u->rel, sizeof u->rel, "%s", p->filename);
    /* Data goes to a numbered temp file outside input/, renamed into place
     * only when complete: a half-written upload is never an input. */
    snprintf(u->tmp, sizeof u->tmp, "%s/%zu", u->stage_dir, u->nfiles);
    u->fd = open(u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (u->fd < 0)
        return lb_up_store_fail(u);
    return 0;
}

static int lb_up_data(void *arg, const lb_mp_part *p, const char *data, size_t n)
{
    lb_upload *u = arg;
    if (u->field) {
        char msg[LB_MP_NAME_MAX + 96];
        int st = lb_mp_field_append(u->field, p->name, data, n, msg, sizeof msg);
        return st ? lb_up_fail(u, st, st == 400 ? LB_E_INVAL : LB_E_TOOBIG, "%s", msg) : 0;
    }
    if (u->fd >= 0 && lb_write_all(u->fd, data, n) != LB_OK)
        return lb_up_store_fail(u);
    return 0;
}

static int lb_up_end(void *arg, const lb_mp_part *p)
{
    lb_upload *u = arg;
    if (u->fd < 0)
        return 0;
    int rc = fsync(u->fd);
    rc |= close(u->fd);
    u->fd = -1;
    if (rc != 0)
        return lb_up_fail(u, 500, LB_E_IO, "Could not store the upload: %s.", strerror(errno));
    char final[LB_CFG_PATH + LB_PATH_MAX + 100], parent[sizeof final];
    if (lb_path_join(final, sizeof final, u->input_dir, u->rel) != LB_OK)
        return lb_up_fail(u, 400, LB_E_INVAL, "The file name \"%s\" is too long.", u->rel);
    snprintf(parent, sizeof parent, "%s", final);
    *strrchr(parent, '/') = '\0';
    /* a follow-up's files land beside the earlier rounds' and never replace one */
    if (lb_mkdirs(parent, 0750) != LB_OK ||
        (u->no_replace ? renameat2(AT_FDCWD, u->tmp, AT_FDCWD, final, RENAME_NOREPLACE) : rename(u->tmp, final)) != 0) {
        if (u->no_replace && errno == EEXIST)
            return lb_up_fail(u, 409, LB_E_EXISTS,
                              "An earlier round of this task already has an input file \"%s\"; send the new one "
                              "under another name.", u->rel);
        if (errno == ENOTDIR || errno == EISDIR || errno == EEXIST)
            return lb_up_fail(u, 400, LB_E_INVAL,
                              "The uploaded file \"%s\" clashes with a folder or file of the same name.", u->rel);
        return lb_up_fail(u, 500, LB_E_IO, "Could not store the upload \"%s\": %s.", u->rel, strerror(errno));
    }
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "path", u->rel) || !cJSON_AddNumberToObject(o, "size", (double)p->size) ||
        !cJSON_AddItemToArray(u->inputs, o)) {
        cJSON_Delete(o);
        return lb_up_fail(u, 500, LB_E_NOMEM, "Out of memory.");
    }
    return 0;
}

static int lb_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            return 0;
    return 1;
}

/* A form field as one word without surrounding blanks. */
static int lb_field_word(const char *v, char *out, size_t outsz)
{
    while (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n')
        v++;
    size_t n = strcspn(v, " \t\r\n");
    const char *rest = v + n;
    if (!n || n >= outsz || !lb_blank(rest))
        return LB_E_INVAL;
    memcpy(out, v, n);
    out[n] = '\0';
    return LB_OK;
}

/* A whole-number form field in [lo, hi]; an absent or blank field keeps *out. */
static int lb_field_int(const lb_buf *f, long long lo, long long hi, long long *out)
{
    if (!f->data || lb_blank(f->data))
        return LB_OK;
    char *end;
    errno = 0;
    long long v = strtoll(f->data, &end, 10);
    if (end == f->data)
        return LB_E_INVAL;
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (errno || *end || v < lo || v > hi)
        return LB_E_INVAL;
    *out = v;
    return LB_OK;
}

/* "1", "true", "on", "yes" -> 1; "0", "false", "off", "no" -> 0; else -1. */
static int lb_form_bool(const char *v)
{
    char w[8];
    size_t n = 0;
    while (*v == ' ')
        v++;
    for (; *v && *v != ' ' && *v != '\r' && *v != '\n' && n + 1 < sizeof w; v++)
        w[n++] = (char)((*v >= 'A' && *v <= 'Z') ? *v + 32 : *v);
    w[n] = '\0';
    if (!strcmp(w, "1") || !strcmp(w, "true") || !strcmp(w, "on") || !strcmp(w, "yes"))
        return 1;
    if (!strcmp(w, "0") || !strcmp(w, "false") || !strcmp(w, "off") || !strcmp(w, "no"))
        return 0;
    return -1;
}

/* ---- unpacking uploaded archives ---- */

typedef struct lb_unpack_ctx {
    cJSON *out;        /* the new inputs list */
    const char *from;  /* the archive being unpacked */
} lb_unpack_ctx;

static int lb_unpacked_file(void *arg, const char *rel, uint64_t size)
{
    lb_unpack_ctx *c = arg;
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "path", rel) || !cJSON_AddNumberToObject(o, "size", (double)size) ||
        !cJSON_AddStringToObject(o, "from", c->from) || !cJSON_AddItemToArray(c->out, o)) {
        cJSON_Delete(o);
        return LB_E_NOMEM;
    }
    return LB_OK;
}

/* lb_task_upload_unpack (handlers_tasks.h): runs after the whole body is
 * stored, so the "unpack" field may come in any order and an entry that
 * clashes with any uploaded file is caught. */
int lb_task_upload_unpack(lb_upload *u, int *status, char *msg, size_t msgsz)
{
    const lb_config *cfg = u->cfg;
    lb_unpack_limits lim = {.max_entries = LB_UNPACK_MAX_ENTRIES, .max_bytes = cfg->max_unpack_bytes,
                            .max_ratio = LB_UNPACK_MAX_RATIO, .ratio_slack = LB_UNPACK_RATIO_SLACK};
    lb_unpack_totals tot = {0};
    lb_unpack_ctx c = {.out = cJSON_CreateArray()};
    int root = open(u->input_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = LB_OK, placed = 0;
    *status = 500;
    if (!c.out || root < 0) {
        snprintf(msg, msgsz, "Could not open the task's input folder.");
        rc = LB_E_IO;
        goto out;
    }
    cJSON *it;
    cJSON_ArrayForEach(it, u->inputs)
    {
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
        lb_archive_kind kind = path ? lb_archive_kind_of(path) : LB_ARCHIVE_NONE;
        if (kind == LB_ARCHIVE_NONE) {
            cJSON *copy = cJSON_Duplicate(it, 1);
            if (!copy || !cJSON_AddItemToArray(c.out, copy)) {
                cJSON_Delete(copy);
                rc = LB_E_NOMEM;
                snprintf(msg, msgsz, "Out of memory.");
                goto out;
            }
            continue;
        }
        /* one place for all the archives of this upload, taken at the first */
        if (!placed) {
            rc = lb_unpack_place_take(cfg, u->place_key);
            if (rc != LB_OK) {
                const char *code = NULL;
                *status = lb_unpack_place_refusal(cfg, rc, u->place_key, msg, msgsz, &code);
                rc = LB_E_BUSY;
                goto out;
            }
            placed = 1;
        }
        char file[LB_CFG_PATH + LB_PATH_MAX + 100], prefix[LB_PATH_MAX + 1];
        if (lb_path_join(file, sizeof file, u->input_dir, path) != LB_OK) {
            rc = LB_E_TOOBIG;
            snprintf(msg, msgsz, "The file name \"%s\" is too long.", path);
            goto out;
        }
        snprintf(prefix, sizeof prefix, "%s", path);
        char *slash = strrchr(prefix, '/');
        if (slash)
            *slash = '\0';
        else
            prefix[0] = '\0';
        /* the archive leaves input/ first, so its own name is free for a
         * folder of the same name inside it */
        char held[LB_CFG_PATH + 128];
        snprintf(held, sizeof held, "%s/archive", u->stage_dir);
        if (lb_mkdirs(u->stage_dir, 0700) != LB_OK || rename(file, held) != 0) {
            rc = LB_E_IO;
            snprintf(msg, msgsz, "Could not unpack %s: %s.", path, strerror(errno));
            goto out;
        }
        c.from = path;
        rc = lb_unpack(held, kind, path, root, prefix, &lim, &tot, lb_unpacked_file, &c, msg, msgsz);
        unlink(held);
        if (rc != LB_OK) {
            *status = rc == LB_E_TOOBIG                          ? 413
                      : (rc == LB_E_INVAL || rc == LB_E_EXISTS) ? 400
                      : rc == LB_E_NOSPACE                       ? 507
                                                                 : 500;
            if (rc == LB_E_NOSPACE)
                snprintf(msg, msgsz, "The server's disk is full, so %s could not be unpacked. Nothing was "
                         "kept; try again once the operator has freed space.", path);
            goto out;
        }
        lb_info("web: task %s: unpacked %s", u->id, path);
    }
    cJSON_Delete(u->inputs);
    u->inputs = c.out;
    c.out = NULL;
out:
    if (placed)
        lb_unpack_place_release(u->place_key);
    if (root >= 0)
        close(root);
    cJSON_Delete(c.out);
    return rc;
}

void lb_task_upload_refuse(lb_req *r, int status, const char *msg)
{
    if (status == 429 || status == 503)
        lb_http_error_hdr(r, status, status == 429 ? "too_many_unpacks" : "unpacks_busy", "Retry-After: 5\r\n",
                          "%s", msg);
    else
        lb_http_error(r, status, NULL, "%s", msg);
}

/* The fields of a create form, checked: what the task asks for. */
typedef struct lb_create_fields {
    const char *model;          /* a configured model's name */
    long long max_turns;        /* 0: nothing asked */
    long long token_budget;     /* -1: nothing asked */
    long long timeout_s;        /* 0: nothing asked */
    const char *network, *image; /* NULL: the defaults */
    char options[LB_TASK_OPTS_MCP_MAX * (LB_CFG_MCP_NAME + 3) + 16]; /* {"mcp":[...]}, or "" */
} lb_create_fields;

/* Checks the fields of u (streamed in whole) into *f and unpacks its
 * archives unless the form says not to. LB_OK; else answered (400, 403,
 * 413, 500, 503) and LB_E_INVAL. */
static int lb_create_fields_check(lb_req *r, lb_upload *u, const lb_config *cfg, lb_create_fields *f)
{
    *f = (lb_create_fields){.token_budget = -1};
    if (!u->prompt.data || lb_blank(u->prompt.data)) {
        lb_http_error(r, 400, NULL, "The form field \"prompt\" is missing or empty: say what the task is.");
        return LB_E_INVAL;
    }
    /* strict (no overlong forms, surrogates or code points past U+10FFFF):
     * the prompt goes into JSON for the model and back to the page */
    if (!lb_utf8_valid(u->prompt.data, u->prompt.len)) {
        lb_http_error(r, 400, NULL, "The prompt is not valid UTF-8 text.");
        return LB_E_INVAL;
    }
    /* a configured model's name; the browser never sees more than names */
    const lb_model_cfg *mc = lb_cfg_model(cfg, NULL);
    if (u->model.data && !lb_blank(u->model.data)) {
        char name[LB_CFG_MODEL_NAME];
        if (lb_field_word(u->model.data, name, sizeof name) != LB_OK || !(mc = lb_cfg_model(cfg, name))) {
            char names[600];
            lb_cfg_model_names(cfg, names, sizeof names);
            /* echoed as printable ASCII only: the field is the client's */
            char shown[65];
            size_t k = 0;
            for (const char *q = u->model.data; *q && k < sizeof shown - 1; q++)
                shown[k++] = (*q > 0x20 && *q < 0x7f) ? *q : '?';
            shown[k] = '\0';
            lb_http_error(r, 400, NULL, "There is no model called \"%s\"; the configured models are: %s.",
                          shown, names[0] ? names : "none");
            return LB_E_INVAL;
        }
    }
    if (!mc) {
        lb_http_error(r, 503, NULL, "No model is configured on this service.");
        return LB_E_INVAL;
    }
    f->model = mc->name;
    /* what the form asks for (0 / -1: nothing), each within its range */
    if (lb_field_int(&u->max_turns, 1, cfg->max_turns_limit, &f->max_turns) != LB_OK) {
        lb_http_error(r, 400, NULL, "max_turns must be a whole number from 1 to %d.", cfg->max_turns_limit);
        return LB_E_INVAL;
    }
    if (lb_field_int(&u->token_budget, 1000, cfg->token_budget_max, &f->token_budget) != LB_OK) {
        lb_http_error(r, 400, NULL, "token_budget must be a whole number of tokens from 1000 to %lld.",
                      (long long)cfg->token_budget_max);
        return LB_E_INVAL;
    }
    if (lb_field_int(&u->timeout_s, 1, cfg->task_timeout_s, &f->timeout_s) != LB_OK) {
        lb_http_error(r, 400, NULL, "timeout_s must be a whole number of seconds from 1 to %d.",
                      cfg->task_timeout_s);
        return LB_E_INVAL;
    }
    char why[300];
    if (u->network.data && !lb_blank(u->network.data)) {
        int rc = lb_network_check_for(cfg, r->user, u->network.data, NULL, 0, why, sizeof why);
        if (rc != LB_OK) {
            lb_http_error(r, rc == LB_E_DENIED ? 403 : 400, NULL, "%s", why);
            return LB_E_INVAL;
        }
        f->network = u->network.data;
    }
    if (u->image.data && !lb_blank(u->image.data)) {
        if (lb_image_check(cfg, u->image.data, why, sizeof why) != LB_OK) {
            lb_http_error(r, 400, NULL, "%s", why);
            return LB_E_INVAL;
        }
        f->image = u->image.data;
    }
    if (u->mcp.data && !lb_blank(u->mcp.data)) {
        /* configured names only; the answer names them, never their urls */
        char names[LB_TASK_OPTS_MCP_MAX][LB_CFG_MCP_NAME];
        int n = 0;
        if (lb_cfg_mcp_list(cfg, u->mcp.data, names, LB_TASK_OPTS_MCP_MAX, &n, why, sizeof why) != LB_OK) {
            lb_http_error(r, 400, NULL, "%s", why);
            return LB_E_INVAL;
        }
        size_t at = (size_t)snprintf(f->options, sizeof f->options, "{\"mcp\":[");
        for (int i = 0; i < n; i++)
            at += (size_t)snprintf(f->options + at, sizeof f->options - at, "%s\"%s\"", i ? "," : "", names[i]);
        snprintf(f->options + at, sizeof f->options - at, "]}");
    }
    int unpack = 1; /* archives are unpacked unless the client says not to */
    if (u->unpack.data && !lb_blank(u->unpack.data)) {
        int v = lb_form_bool(u->unpack.data);
        if (v < 0) {
            lb_http_error(r, 400, NULL, "unpack must be 1 or 0 (true or false).");
            return LB_E_INVAL;
        }
        unpack = v;
    }
    if (unpack) {
        int status = 0;
        int rc = lb_task_upload_unpack(u, &status, why, sizeof why);
        if (rc != LB_OK) {
            if (status == 500)
                lb_error("web: task %s: unpacking: %s", u->id, why);
            lb_task_upload_refuse(r, status, why);
            return LB_E_INVAL;
        }
    }
    return LB_OK;
}

void lb_task_upload_init(lb_upload *u, const lb_config *cfg)
{
    memset(u, 0, sizeof *u);
    u->cfg = cfg;
    u->fd = -1;
    lb_buf_init(&u->prompt, LB_WEB_PROMPT_MAX);
    lb_buf_init(&u->model, LB_UPLOAD_SMALL_FIELD);
    lb_buf_init(&u->max_turns, LB_UPLOAD_SMALL_FIELD);
    lb_buf_init(&u->token_budget, LB_UPLOAD_SMALL_FIELD);
    lb_buf_init(&u->timeout_s, LB_UPLOAD_SMALL_FIELD);
    lb_buf_init(&u->network, LB_NETPOL_TEXT_MAX); /* a policy of rules is longer than the other fields */
    lb_buf_init(&u->image, LB_UPLOAD_SMALL_FIELD);
    lb_buf_init(&u->unpack, LB_UPLOAD_SMALL_FIELD);
    lb_buf_init(&u->fresh, LB_UPLOAD_SMALL_FIELD);
    lb_buf_init(&u->mcp, LB_UPLOAD_SMALL_FIELD);
}

void lb_task_upload_free(lb_upload *u)
{
    if (u->fd >= 0) {
        close(u->fd);
        u->fd = -1;
    }
    cJSON_Delete(u->inputs);
    u->inputs = NULL;
    lb_buf_free(&u->prompt);
    lb_buf_free(&u->model);
    lb_buf_free(&u->max_turns);
    lb_buf_free(&u->token_budget);
    lb_buf_free(&u->timeout_s);
    lb_buf_free(&u->network);
    lb_buf_free(&u->image);
    lb_buf_free(&u->unpack);
    lb_buf_free(&u->fresh);
    lb_buf_free(&u->mcp);
}

int lb_task_upload_stream(lb_req *r, lb_upload *u, uint64_t max_upload)
{
    lb_mp *mp = NULL;
    char boundary[LB_MP_BOUNDARY_MAX + 1];
    char *chunk = NULL;
    int ret = LB_E_INVAL;
    lb_unpack_place_key(r, u->place_key, sizeof u->place_key);
    if (lb_mp_boundary(r->content_type, boundary, sizeof boundary) != LB_OK) {
        lb_http_drain(r);
        lb_http_error(r, 400, NULL, "The Content-Type has no valid multipart boundary.");
        goto out;
    }
    u->inputs = cJSON_CreateArray();
    chunk = malloc(LB_READ_CHUNK);
    lb_mp_limits lim = {.max_parts = LB_UPLOAD_MAX_FILES + 16,
                        .max_header_bytes = LB_UPLOAD_HEADER_MAX,
                        .max_field_bytes = LB_WEB_PROMPT_MAX,
                        .max_file_bytes = max_upload,
                        .max_total_bytes = max_upload};
    lb_mp_callbacks cb = {lb_up_begin, lb_up_data, lb_up_end};
    if (!u->inputs || !chunk || lb_mp_new(boundary, &lim, &cb, u, &mp) != LB_OK) {
        lb_http_drain(r);
        lb_http_error(r, 500, NULL, "Out of memory.");
        goto out;
    }

    /* Stream the body through the parser; caps are enforced as it comes,
     * whatever Content-Length said. */
    int rc = LB_OK;
    for (;;) {
        int n = FCGX_GetStr(chunk, LB_READ_CHUNK, r->fcgi->in);
        if (n <= 0)
            break;
        rc = lb_mp_feed(mp, chunk, (size_t)n);
        if (rc)
            break;
    }
    if (rc == LB_OK)
        rc = lb_mp_finish(mp);
    if (rc != LB_OK) {
        lb_http_drain(r);
        if (u->http_status)
            lb_http_error(r, u->http_status, NULL, "%s", u->msg);
        else if (rc == LB_E_TOOBIG)
            lb_http_error(r, 413, NULL, "%s", lb_mp_error(mp));
        else
            lb_http_error(r, 400, NULL, "%s", lb_mp_error(mp)[0] ? lb_mp_error(mp) : "The upload is malformed.");
        goto out;
    }
    rmdir(u->stage_dir);
    ret = LB_OK;
out:
    if (u->fd >= 0) {
        close(u->fd);
        u->fd = -1;
    }
    lb_mp_free(mp);
    free(chunk);
    return ret;
}

void lb_h_task_create(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    lb_upload u;
    lb_task_upload_init(&u, cfg);
    lb_admission adm = {.ticket = {.user = -1}};
    uint64_t max_upload = lb_limits_upload(r); /* the user's, at most max_upload_mb */
    char boundary[LB_MP_BOUNDARY_MAX + 1];

    if (!lb_mp_is_form_data(r->content_type)) {
        lb_http_drain(r);
        lb_http_error(r, 415, NULL,
                      "Send the task as multipart/form-data (fields: prompt, files, model, max_turns, "
                      "token_budget, timeout_s, network, image, unpack, mcp).");
        goto out;
    }
    if (r->content_length > 0 && (uint64_t)r->content_length > max_upload) {
        lb_http_drain(r);
        lb_http_error(r, 413, NULL, "The upload is %lld bytes; the limit is %llu MiB%s.",
                      (long long)r->content_length, (unsigned long long)(max_upload >> 20),
                      max_upload < cfg->max_upload_bytes ? " per task for you" : "");
        goto out;
    }
    if (lb_mp_boundary(r->content_type, boundary, sizeof boundary) != LB_OK) {
        lb_http_drain(r);
        lb_http_error(r, 400, NULL, "The Content-Type has no valid multipart boundary.");
        goto out;
    }
    if (lb_admit_begin(r, &adm, ".upload") != LB_OK)
        goto out; /* refused: answered */
    snprintf(u.id, sizeof u.id, "%s", adm.id);
    snprintf(r->id, sizeof r->id, "%s", u.id);
    snprintf(u.task_dir, sizeof u.task_dir, "%s", adm.task_dir);
    snprintf(u.input_dir, sizeof u.input_dir, "%s", adm.input_dir);
    snprintf(u.stage_dir, sizeof u.stage_dir, "%s/.upload", u.task_dir);
    if (lb_task_upload_stream(r, &u, max_upload) != LB_OK)
        goto out; /* answered */

    lb_create_fields f;
    if (lb_create_fields_check(r, &u, cfg, &f) != LB_OK)
        goto out; /* answered */

    char *inputs_json = cJSON_PrintUnformatted(u.inputs);
    if (!inputs_json) {
        lb_http_error(r, 500, NULL, "Out of memory.");
        goto out;
    }
    lb_task_request req = {.max_turns = (int)f.max_turns, .token_budget = f.token_budget,
                           .timeout_s = (int)f.timeout_s};
    lb_task_limits tl;
    lb_task_limits_of(&req, r->user, cfg, &tl);
    lb_task_new t = {.id = u.id, .prompt = u.prompt.data, .model = f.model, .max_turns = tl.max_turns,
                     .token_budget = tl.token_budget, .timeout_s = tl.timeout_s, .inputs_json = inputs_json,
                     .network = f.network, .image = f.image, .owner = lb_auth_owner(r),
                     .owner_max_active = r->user ? r->user->max_tasks : 0,
                     .options_json = f.options[0] ? f.options : NULL};
    /* answered either way (201, or why not); lb_admit_end below gives
     * back what a task that was not stored held */
    LB_IGNORE(lb_admit_commit(r, &adm, &t));
    free(inputs_json);
out:
    if (u.fd >= 0) {
        close(u.fd);
        u.fd = -1;
    }
    if (adm.committed)
        LB_IGNORE(lb_rmtree(u.stage_dir)); /* the staging dir of a stored task: only disk */
    lb_admit_end(&adm);
    lb_task_upload_free(&u);
}

/* ---- GET /api/tasks ---- */

void lb_h_task_list(lb_req *r)
{
    char v[32];
    int limit = 50;
    int64_t before = 0;
    /* a parameter that is there but cannot be read (bad %-escape, NUL, too
     * long) is refused like a wrong value, never read as "absent" */
    int qrc = lb_query_get(r->query, "limit", v, sizeof v);
    if (qrc != LB_E_NOTFOUND) {
        char *end = v;
        errno = 0;
        long x = qrc == LB_OK ? strtol(v, &end, 10) : 0;
        if (qrc != LB_OK || end == v || *end || errno || x < 1 || x > 200) {
            lb_http_error(r, 400, NULL, "limit must be a whole number from 1 to 200.");
            return;
        }
        limit = (int)x;
    }
    qrc = lb_query_get(r->query, "before", v, sizeof v);
    if (qrc != LB_E_NOTFOUND) {
        char *end = v;
        errno = 0;
        long long x = qrc == LB_OK ? strtoll(v, &end, 10) : -1;
        if (qrc != LB_OK || end == v || *end || errno || x < 0) {
            lb_http_error(r, 400, NULL, "before must be a time in milliseconds since 1970 (created_ms of a task).");
            return;
        }
        before = x;
    }
    char before_id[40] = "";
    qrc = lb_query_get(r->query, "before_id", before_id, sizeof before_id);
    if ((qrc != LB_OK && qrc != LB_E_NOTFOUND) || (qrc == LB_OK && !lb_id_valid(before_id))) {
        lb_http_error(r, 400, NULL, "before_id must be a task id (next_before_id of the previous page).");
        return;
    }
    cJSON *arr = NULL, *o = NULL;
    /* with users, one's own tasks only */
    int rc = lb_store_task_page_of(r->store, lb_auth_owner(r), limit, before, before_id, &arr);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "list the tasks");
        return;
    }
    o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToObject(o, "tasks", arr)) {
        cJSON_Delete(arr);
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    int n = cJSON_GetArraySize(arr);
    cJSON *last = n == limit ? cJSON_GetArrayItem(arr, n - 1) : NULL;
    cJSON *created = last ? cJSON_GetObjectItem(last, "created_ms") : NULL;
    const char *last_id = last ? cJSON_GetStringValue(cJSON_GetObjectItem(last, "id")) : NULL;
    if (created && cJSON_IsNumber(created) && last_id) {
        cJSON_AddNumberToObject(o, "next_before", created->valuedouble);
        cJSON_AddStringToObject(o, "next_before_id", last_id);
    } else {
        cJSON_AddNullToObject(o, "next_before");
        cJSON_AddNullToObject(o, "next_before_id");
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

/* ---- GET /api/tasks/{id} ---- */

void lb_h_task_get(lb_req *r)
{
    cJSON *t = NULL;
    int rc = lb_store_task_get(r->store, r->id, &t);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task");
        return;
    }
    lb_auth_add_preview(t, r->id);
    lb_download_links_add(cJSON_GetObjectItem(t, "artifacts"), r->id);
    lb_http_json(r, 200, t, NULL);
    cJSON_Delete(t);
}

/* ---- POST /api/tasks/{id}/cancel ---- */

void lb_h_task_cancel(lb_req *r)
{
    char status[16];
    int pid;
    int rc = lb_store_task_state(r->store, r->id, status, sizeof status, &pid);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task");
        return;
    }
    if (lb_task_status_is_final(lb_task_status_parse(status))) {
        lb_http_error(r, 409, NULL, "The task has already ended (%s); there is nothing to cancel.", status);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    if (lb_spawn_cancel(r->id) == LB_OK) {
        /* the agent finishes the task itself; the reaper makes sure of it */
        cJSON_AddStringToObject(o, "status", "cancelling");
    } else {
        /* no agent of ours runs it (it never started, or it belongs to an
         * earlier run of the service): end it here */
        rc = lb_store_task_end(r->store, r->id, LB_TASK_CANCELLED, "cancelled by the user", NULL);
        if (rc == LB_E_EXISTS) {
            cJSON_Delete(o);
            lb_http_error(r, 409, NULL, "The task has just ended; there is nothing to cancel.");
            return;
        }
        if (rc != LB_OK) {
            cJSON_Delete(o);
            lb_http_store_error(r, rc, "cancel the task");
            return;
        }
        if (lb_agent_alive(pid, r->id))
            kill(pid, SIGTERM); /* an agent left by an earlier web process */
        cJSON_AddStringToObject(o, "status", lb_task_status_name(LB_TASK_CANCELLED));
    }
    lb_http_json(r, 202, o, NULL);
    cJSON_Delete(o);
}

/* ---- DELETE /api/tasks/{id} ---- */

void lb_h_task_delete(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    char status[16], path[LB_CFG_PATH + 128];
    int pid;
    int rc = lb_store_task_state(r->store, r->id, status, sizeof status, &pid);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task");
        return;
    }
    if (!lb_task_status_is_final(lb_task_status_parse(status))) {
        /* stop the agent first, so it cannot write into a folder we remove */
        rc = lb_spawn_kill_wait(r->id, 3000);
        if (rc == LB_E_TIMEOUT)
            lb_warn("web: task %s: agent still alive 3 s after SIGKILL", r->id);
        else if (rc == LB_E_NOTFOUND && lb_agent_alive(pid, r->id))
            kill(-pid, SIGKILL); /* an agent left by an earlier web process */
        /* ended first, so that the counters see it end; an error here
         * does not stop the delete, which removes the row anyway */
        rc = lb_store_task_end(r->store, r->id, LB_TASK_CANCELLED, "deleted by the user", NULL);
        if (rc != LB_OK && rc != LB_E_EXISTS && rc != LB_E_NOTFOUND)
            lb_warn("web: task %s: cannot record its end before deleting it: %s", r->id, lb_strerror(rc));
    }
    lb_followup_release(cfg, r->store, r->id); /* follow-ups: the sandbox kept between rounds */
    rc = lb_store_task_delete(r->store, r->id);
    if (rc != LB_OK && rc != LB_E_NOTFOUND) {
        lb_http_store_error(r, rc, "delete the task");
        return;
    }
    snprintf(path, sizeof path, "%s/%s", cfg->artifacts_dir, r->id);
    /* one rename here; the files go in the trash's thread (task_trash.h),
     * so a task with a million files holds no web thread */
    if (lb_task_trash_put(cfg, path, r->id) != LB_OK) {
        lb_warn("web: task %s: cannot move %s into the trash (%s): removing it here", r->id, path, strerror(errno));
        if (lb_rmtree(path) != LB_OK)
            lb_warn("web: task %s: cannot remove %s completely: %s", r->id, path, strerror(errno));
    }
    char blob_err[700]; /* several nodes: its objects in the store too (no-op with local files) */
    if (lb_blob_task_delete(cfg, r->id, blob_err, sizeof blob_err) != LB_OK)
        lb_warn("web: task %s: its files in the object store are left: %s", r->id, blob_err);
    char logdir[LB_CFG_PATH];
    lb_cfg_logdir(cfg, logdir, sizeof logdir);
    snprintf(path, sizeof path, "%s/agent-%s.log", logdir, r->id);
    unlink(path);
    lb_info("web: task %s deleted", r->id);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddBoolToObject(o, "deleted", 1);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

/* ---- GET /api/tasks/{id}/artifacts ---- */

void lb_h_artifacts(lb_req *r)
{
    char status[16];
    int rc = lb_store_task_state(r->store, r->id, status, sizeof status, NULL);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task");
        return;
    }
    cJSON *arr = NULL;
    rc = lb_task_artifacts_json(r->store, r->id, &arr);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the artifacts");
        return;
    }
    lb_download_links_add(arr, r->id);
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToObject(o, "artifacts", arr)) {
        cJSON_Delete(arr);
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}
