/* E2B's template builds (e2b_template.h): the builds this web knows, their
 * uploads, their Dockerfile and their sandboxd image job.
 *
 * A build lives in memory (a restart of the web forgets builds, not
 * images) and moves waiting (files may be uploaded) -> building (a job of
 * sandboxd's) -> ready | error. Its files are unpacked into a stage
 * folder, <var_dir>/image-contexts/.e2b-<build id>, beside the contexts,
 * and the stage is renamed to <name> when the steps come, so sandboxd
 * never sees half a context. Who may build a name is recorded in
 * <var_dir>/template-owners/<name> at the first request for it. */
#include "e2b/e2b_template.h"

#include "e2b/e2b_connect.h"
#include "e2b/e2b_template_steps.h"
#include "llmbox/sandbox.h"
#include "sbxapi/sandbox_owner.h"
#include "web/http.h"
#include "web/req_body.h"
#include "web/unpack.h"

#include "common/buf.h"
#include "common/config.h"
#include "common/image_ref.h"
#include "common/log.h"
#include "common/node_id.h"
#include "common/token.h"
#include "common/utf8.h"
#include "common/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TPL_BUILDS_MAX 64                  /* builds remembered, finished ones evicted oldest first */
#define TPL_USER_RUNNING 2                 /* builds one owner has waiting or building at once */
#define TPL_RUNNING_MAX 8                  /* all owners: each build may hold a sandbox of sandboxd's */
#define TPL_UPLOAD_MAX (64u << 20)         /* one COPY's archive as sent */
#define TPL_UNPACKED_MAX (512ull << 20)    /* every file of one build, unpacked */
#define TPL_ENTRIES_MAX 20000              /* files and folders of one build */
#define TPL_COPIES_MAX 64                  /* distinct COPY uploads of one build */
#define TPL_WAIT_MS (20 * 60 * 1000)       /* a build not started by then is given up: its SDK is gone */
#define TPL_LOG_LINES 20000                /* log entries kept per build; the rest is cut with a line saying so */
#define TPL_LOG_BYTES (4u << 20)
#define TPL_LOG_LINE_MAX 4096              /* one entry: a longer line is cut */
#define TPL_JOB_READ 65536                 /* log bytes asked of sandboxd per poll */
#define TPL_LINES_MAX (3 * LB_E2B_TPL_STEPS_MAX + 4) /* a RUN with a user is three lines */
#define TPL_BODY_MAX (1u << 20)            /* the JSON bodies: the steps of 200 long commands fit */

enum { TPL_WAITING = 1, TPL_BUILDING, TPL_READY, TPL_ERROR };

typedef struct tpl_line {
    int64_t ms;
    char *text;
} tpl_line;

typedef struct tpl_build {
    int used;
    int state;
    char name[65];
    char id[LB_ID_HEX_LEN + 1];            /* the buildID */
    char owner[LB_CFG_USER_NAME];          /* "" for the shared token */
    char token[65];                        /* the upload URL's secret */
    int64_t created_ms, ended_ms;
    char stage[LB_CFG_PATH + 64];
    char job[33];
    int64_t job_off;
    int polling;                           /* a thread is asking sandboxd: others answer from what is here */
    char partial[TPL_LOG_LINE_MAX + 1];    /* a line of the job's log not ended yet */
    size_t partial_len;
    tpl_line *lines;
    int n_lines, cap_lines;
    size_t log_bytes;
    int cut;
    char reason[1024];
    char step[16];
    int line_steps[TPL_LINES_MAX];         /* the E2B step of each Dockerfile line (e2b_template_steps.h) */
    char up[TPL_COPIES_MAX][65];           /* hashes uploaded */
    int n_up;
    int uploading;                         /* uploads unpacking now (one at a time: io) */
    lb_unpack_totals tot;
    pthread_mutex_t io;                    /* one upload of this build unpacks at a time: the caps are the build's */
} tpl_build;

static pthread_mutex_t tpl_mu = PTHREAD_MUTEX_INITIALIZER;
static tpl_build tpl_builds[TPL_BUILDS_MAX];
static pthread_once_t tpl_once = PTHREAD_ONCE_INIT;

static void tpl_init(void)
{
    for (int i = 0; i < TPL_BUILDS_MAX; i++)
        pthread_mutex_init(&tpl_builds[i].io, NULL);
}

/* An answer of {}: the SDK's client parses every 2xx body as JSON. */
static void empty_json(lb_req *r, int status)
{
    cJSON *o = cJSON_CreateObject();
    if (o)
        lb_http_json(r, status, o, NULL);
    else
        lb_http_head(r, status, "application/json", NULL);
    cJSON_Delete(o);
}

/* ---- the builds' log (called with tpl_mu held) ---- */

static void log_add(tpl_build *b, const char *text, size_t n)
{
    if (b->cut)
        return;
    if (n > TPL_LOG_LINE_MAX)
        n = TPL_LOG_LINE_MAX;
    if (b->n_lines >= TPL_LOG_LINES - 1 || b->log_bytes + n > TPL_LOG_BYTES) {
        b->cut = 1;
        text = "llmbox: the build's log is cut here: it is longer than llmbox keeps.";
        n = strlen(text);
    }
    if (b->n_lines == b->cap_lines) {
        int nc = b->cap_lines ? 2 * b->cap_lines : 64;
        tpl_line *nl = realloc(b->lines, (size_t)nc * sizeof *nl);
        if (!nl)
            return; /* the line is lost; the build goes on */
        b->lines = nl;
        b->cap_lines = nc;
    }
    size_t cl = 0;
    char *t = lb_utf8_sanitize(text, n, &cl); /* a RUN's output is the sandbox's bytes */
    if (!t)
        return;
    b->lines[b->n_lines].ms = lb_now_ms();
    b->lines[b->n_lines++].text = t;
    b->log_bytes += cl;
}

static void log_addf(tpl_build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_addf(tpl_build *b, const char *fmt, ...)
{
    char line[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    log_add(b, line, strlen(line));
}

/* The job's log bytes split into lines; a line not ended waits in partial. */
static void log_feed(tpl_build *b, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') {
            log_add(b, b->partial, b->partial_len);
            b->partial_len = 0;
        } else if (b->partial_len < TPL_LOG_LINE_MAX) {
            b->partial[b->partial_len++] = p[i];
        }
    }
    b->partial[b->partial_len] = '\0';
}

static void build_fail(tpl_build *b, const char *step, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void build_fail(tpl_build *b, const char *step, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->reason, sizeof b->reason, fmt, ap);
    va_end(ap);
    snprintf(b->step, sizeof b->step, "%s", step ? step : "");
    if (b->partial_len) {
        log_add(b, b->partial, b->partial_len);
        b->partial_len = 0;
    }
    log_add(b, b->reason, strlen(b->reason));
    b->state = TPL_ERROR;
    b->ended_ms = lb_now_ms();
}

static void build_clear(tpl_build *b)
{
    for (int i = 0; i < b->n_lines; i++)
        free(b->lines[i].text);
    free(b->lines);
    pthread_mutex_t io = b->io;
    memset(b, 0, sizeof *b);
    b->io = io;
}

/* ---- names, owners, folders ---- */

/* A template name: [a-z0-9-]{1,64} (the context folder's and the
 * image's local name), and never a snapshot's id (a template and a
 * snapshot share E2B's /templates/{id} routes). */
static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 64 || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != n || s[0] == '-')
        return 0;
    return !lb_node_id_valid(s);
}

static void ctx_dir(const lb_config *cfg, char *out, size_t outsz)
{
    snprintf(out, outsz, "%s/image-contexts", cfg->var_dir);
}

/* template_owners/<name> beside the database, where the web may write (as
 * snapshot_owners/: sandbox_owner.c); var_dir itself is root's. */
static void owner_path(const lb_config *cfg, const char *name, char *out, size_t outsz)
{
    if (!lb_cfg_beside_db(cfg, "template_owners", name, out, outsz))
        out[0] = '\0'; /* does not fit: no file of that name is ever opened */
}

/* Whether an image of this name is in the store already (a debootstrap
 * folder or a layered record), or the name is the store's own "oci": a
 * user may not take an operator's image. */
static int image_exists(const lb_config *cfg, const char *name)
{
    char p[LB_CFG_PATH + 600], fn[LB_IMAGE_REF_MAX + 1], m[256];
    struct stat st;
    /* the folder (or a link to it) is enough: the web may not look inside */
    snprintf(p, sizeof p, "%s/%s", cfg->image_store, name);
    if (lstat(p, &st) == 0 || errno != ENOENT)
        return 1; /* a store the web cannot look into: refused rather than replaced */
    lb_image_ref ref;
    if (lb_image_ref_parse(name, LB_IMAGE_REF_LOCAL, &ref, m, sizeof m) != LB_OK ||
        lb_image_ref_file_name(&ref, fn, sizeof fn) != LB_OK)
        return 0;
    snprintf(p, sizeof p, "%s/oci/refs/%s.json", cfg->image_store, fn);
    return lstat(p, &st) == 0 || errno != ENOENT;
}

/* Whose name is: LB_OK with owner filled ("" the shared token's),
 * LB_E_NOTFOUND when nobody has built it. */
static LB_MUST_CHECK int owner_of(const lb_config *cfg, const char *name, char *owner, size_t ownersz)
{
    char p[LB_CFG_PATH + 100], *d = NULL;
    size_t n = 0;
    owner_path(cfg, name, p, sizeof p);
    int rc = lb_read_file(p, LB_CFG_USER_NAME, &d, &n);
    if (rc) {
        free(d);
        return LB_E_NOTFOUND;
    }
    snprintf(owner, ownersz, "%.*s", (int)strcspn(d, "\n"), d);
    free(d);
    return LB_OK;
}

/* The build of id that r may see, or NULL (tpl_mu held). */
static tpl_build *find(lb_req *r, const char *name, const char *id)
{
    const char *me = lb_sbx_owner_name(r);
    for (int i = 0; i < TPL_BUILDS_MAX; i++) {
        tpl_build *b = &tpl_builds[i];
        if (b->used && !strcmp(b->id, id) && (!name || !strcmp(b->name, name)) && (!r->user || !strcmp(b->owner, me)))
            return b;
    }
    return NULL;
}

/* Gives up builds that never started (the SDK died between its calls),
 * removing their stage (tpl_mu held; the rmtree is quick: at most one
 * build's uploads). */
static void expire(void)
{
    int64_t now = lb_now_ms();
    for (int i = 0; i < TPL_BUILDS_MAX; i++) {
        tpl_build *b = &tpl_builds[i];
        if (b->used && b->state == TPL_WAITING && !b->uploading && now - b->created_ms > TPL_WAIT_MS) {
            build_fail(b, NULL, "The build was given up: its steps did not come within %d minutes of the request.",
                       TPL_WAIT_MS / 60000);
            LB_IGNORE(lb_rmtree(b->stage)); /* a stage left is removed with the next one of its id: never */
        }
    }
}

/* ---- POST /v3/templates ---- */

static void request_build(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    cJSON *body = lb_req_json(r, TPL_BODY_MAX, "template build request"), *out = NULL;
    if (!body)
        return;
    const cJSON *jn = cJSON_GetObjectItemCaseSensitive(body, "name");
    if (!cJSON_IsString(jn))
        jn = cJSON_GetObjectItemCaseSensitive(body, "alias"); /* older SDKs */
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(body, "tags");
    const char *name = cJSON_IsString(jn) ? jn->valuestring : "";
    const char *me = lb_sbx_owner_name(r);
    char owner[LB_CFG_USER_NAME] = "", ctx[LB_CFG_PATH + 16], op[LB_CFG_PATH + 100];
    tpl_build *b = NULL;
    if (strchr(name, ':') || (cJSON_IsArray(tags) && cJSON_GetArraySize(tags) > 0)) {
        lb_e2b_error(r, 400, "Template tags (\"name:tag\", tags) are not supported by llmbox: a template is one image "
                  "named by its name (docs/E2B.md).");
        goto out;
    }
    if (!name_ok(name)) {
        lb_e2b_error(r, 400, "The template name \"%.80s\" is not one llmbox takes: 1 to 64 of a-z, 0-9 and '-', not "
                  "starting with '-' and not 32 hex digits (a snapshot's id).", name);
        goto out;
    }
    int orc = owner_of(cfg, name, owner, sizeof owner);
    if (orc == LB_OK && r->user && strcmp(owner, me)) {
        lb_e2b_error(r, 403, "The template \"%s\" belongs to another user.", name);
        goto out;
    }
    if (orc != LB_OK && r->user && image_exists(cfg, name)) {
        lb_e2b_error(r, 403, "\"%s\" is an image of this server that no template build made: choose another name.",
                  name);
        goto out;
    }
    /* sandboxd makes the contexts' folder, the web's, at its start */
    ctx_dir(cfg, ctx, sizeof ctx);
    owner_path(cfg, "", op, sizeof op);
    if (access(ctx, W_OK) != 0) {
        lb_e2b_error(r, 503, "The build contexts' folder %s cannot be written (%s): sandboxd makes it for the web at "
                  "its start.", ctx, strerror(errno));
        goto out;
    }
    if (lb_mkdirs(op, 0750) != LB_OK) {
        lb_e2b_error(r, 500, "Could not make %s: %s.", op, strerror(errno));
        goto out;
    }
    pthread_once(&tpl_once, tpl_init);
    pthread_mutex_lock(&tpl_mu);
    expire();
    int mine = 0, all = 0, slot = -1, oldest = -1;
    for (int i = 0; i < TPL_BUILDS_MAX; i++) {
        tpl_build *x = &tpl_builds[i];
        if (!x->used) {
            if (slot < 0)
                slot = i;
            continue;
        }
        if (x->state == TPL_WAITING || x->state == TPL_BUILDING) {
            all++;
            mine += !strcmp(x->owner, me);
            if (!strcmp(x->name, name)) {
                pthread_mutex_unlock(&tpl_mu);
                lb_e2b_error(r, 409, "A build of the template \"%s\" is under way (build %s): wait for it to end.",
                          name, x->id);
                goto out;
            }
        } else if (!x->polling && !x->uploading && (oldest < 0 || x->ended_ms < tpl_builds[oldest].ended_ms)) {
            oldest = i;
        }
    }
    if (mine >= TPL_USER_RUNNING || all >= TPL_RUNNING_MAX || (slot < 0 && oldest < 0)) {
        pthread_mutex_unlock(&tpl_mu);
        if (mine >= TPL_USER_RUNNING)
            lb_e2b_error(r, 429, "%d template builds of yours are under way; llmbox runs at most %d at once per key.",
                      mine, TPL_USER_RUNNING);
        else
            lb_e2b_error(r, 429, "%d template builds are under way; llmbox runs at most %d at once.", all,
                      TPL_RUNNING_MAX);
        goto out;
    }
    if (slot < 0) {
        build_clear(&tpl_builds[oldest]);
        slot = oldest;
    }
    b = &tpl_builds[slot];
    if (lb_random_hex(b->id, sizeof b->id, LB_ID_HEX_LEN / 2) != LB_OK ||
        lb_random_hex(b->token, sizeof b->token, 32) != LB_OK) {
        pthread_mutex_unlock(&tpl_mu);
        lb_e2b_error(r, 500, "Could not draw random bytes for the build's id.");
        goto out;
    }
    b->used = 1;
    b->state = TPL_WAITING;
    snprintf(b->name, sizeof b->name, "%s", name);
    snprintf(b->owner, sizeof b->owner, "%s", me);
    char id[LB_ID_HEX_LEN + 1];
    memcpy(id, b->id, sizeof id);
    snprintf(b->stage, sizeof b->stage, "%s/.e2b-%s", ctx, id);
    b->created_ms = lb_now_ms();
    pthread_mutex_unlock(&tpl_mu);
    /* the name is claimed at its first request, so two users cannot race for it */
    char pth[LB_CFG_PATH + 100];
    owner_path(cfg, name, pth, sizeof pth);
    int mk = mkdir(b->stage, 0750);
    if (mk != 0 || (orc != LB_OK && lb_write_file_atomic(pth, me, strlen(me), 0640) != LB_OK)) {
        pthread_mutex_lock(&tpl_mu);
        build_fail(b, NULL, "Could not make the build's folder or owner record.");
        pthread_mutex_unlock(&tpl_mu);
        lb_e2b_error(r, 500, "Could not make %s or %s: %s.", b->stage, pth, strerror(errno));
        goto out;
    }
    out = cJSON_CreateObject();
    cJSON *al = cJSON_CreateArray();
    if (!out || !al || !cJSON_AddStringToObject(out, "templateID", name) || !cJSON_AddStringToObject(out, "buildID", id) ||
        !cJSON_AddItemToArray(al, cJSON_CreateString(name)) || !cJSON_AddItemToObject(out, "aliases", al) ||
        !cJSON_AddItemToObject(out, "names", cJSON_Duplicate(al, 1)) || !cJSON_AddItemToObject(out, "tags",
                                                                                              cJSON_CreateArray()) ||
        !cJSON_AddBoolToObject(out, "public", 0)) {
        if (!cJSON_GetObjectItemCaseSensitive(out, "aliases"))
            cJSON_Delete(al);
        lb_e2b_error(r, 500, "Out of memory.");
        goto out;
    }
    lb_http_json(r, 202, out, NULL);
out:
    cJSON_Delete(out);
    cJSON_Delete(body);
}

/* ---- files: the link, then the upload ---- */

static int hash_ok(const char *h)
{
    return strlen(h) == 64 && strspn(h, "0123456789abcdef") == 64;
}

static int uploaded(const tpl_build *b, const char *hash)
{
    for (int i = 0; i < b->n_up; i++)
        if (!strcmp(b->up[i], hash))
            return 1;
    return 0;
}

/* Whether the template body has a RUN step (the SDK's runCmd and the
 * installs built on it): what needs the build's network. */
static int tpl_has_run(const cJSON *body)
{
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(body, "steps")) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(s, "type");
        if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "RUN"))
            return 1;
    }
    return 0;
}

/* The origin the client reached us at, for the upload URL: its Host
 * (allowed_hosts' check has passed: auth.c) and TLS as nginx says. */
static void origin(lb_req *r, char *out, size_t outsz)
{
    const char *h = lb_http_param(r, "HTTPS"), *x = lb_http_param(r, "HTTP_X_FORWARDED_PROTO");
    const char *host = lb_http_param(r, "HTTP_HOST");
    int tls = (h && !strcasecmp(h, "on")) || (x && !strncasecmp(x, "https", 5));
    snprintf(out, outsz, "%s://%.255s", tls ? "https" : "http", host && *host ? host : "127.0.0.1");
}

/* GET /templates/{name}/files/{hash}: {present, url}. */
static void files_link(lb_req *r, const char *name, const char *hash)
{
    char url[600], org[300];
    if (!hash_ok(hash)) {
        lb_e2b_error(r, 400, "A files hash is 64 lowercase hex digits (the SDK's sha256).");
        return;
    }
    origin(r, org, sizeof org);
    pthread_once(&tpl_once, tpl_init);
    pthread_mutex_lock(&tpl_mu);
    tpl_build *b = NULL;
    for (int i = 0; i < TPL_BUILDS_MAX && !b; i++) { /* the name's build waiting for files */
        tpl_build *x = &tpl_builds[i];
        if (x->used && x->state == TPL_WAITING && !strcmp(x->name, name) &&
            (!r->user || !strcmp(x->owner, lb_sbx_owner_name(r))))
            b = x;
    }
    if (!b) {
        pthread_mutex_unlock(&tpl_mu);
        lb_e2b_error(r, 404, "No build of the template \"%s\" is waiting for files: request a build first.", name);
        return;
    }
    int present = uploaded(b, hash);
    snprintf(url, sizeof url, "%s/e2b/template-uploads/%s/%s/%s", org, b->id, b->token, hash);
    pthread_mutex_unlock(&tpl_mu);
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddBoolToObject(o, "present", present) || (!present && !cJSON_AddStringToObject(o, "url", url))) {
        cJSON_Delete(o);
        lb_e2b_error(r, 500, "Out of memory.");
        return;
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

int lb_e2b_tpl_is_upload(const char *path)
{
    return !strncmp(path, "/e2b/template-uploads/", 22);
}

typedef struct fix_ctx {
    int root;
    char prefix[80];
} fix_ctx;

/* Each file unpacked: readable by all, as the SDK's tar had it (lb_unpack
 * writes 0640/0750 for a task's input; an image's files are read by the
 * image's users), and so are its folders. */
static int fix_mode(void *arg, const char *rel, uint64_t size)
{
    (void)size;
    fix_ctx *c = arg;
    char p[LB_PATH_MAX + 100];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", c->prefix, rel);
    if (fstatat(c->root, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
        if (fchmodat(c->root, p, (st.st_mode & 0100) ? 0755 : 0644, 0) != 0)
            return 0; /* left 0640: root's COPY still reads it */
    for (char *s = strrchr(p, '/'); s; s = strrchr(p, '/')) { /* the folders up to the prefix */
        *s = '\0';
        if (fchmodat(c->root, p, 0755, 0) != 0)
            break; /* a folder left 0750: root's COPY still reads it */
    }
    return 0;
}

/* PUT /template-uploads/{build}/{token}/{hash}: the tar.gz of one COPY,
 * unpacked into the stage's files/<hash>/ as hostile input (lb_unpack:
 * no links, no devices, clean names, capped). */
static void files_upload(lb_req *r, const char *rest)
{
    char id[40] = "", tok[80] = "", hash[80] = "", msg[600] = "", arch[LB_CFG_PATH + 200], pre[80];
    const char *s1 = strchr(rest, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (strcmp(r->method, "PUT")) {
        lb_e2b_error(r, 405, "Upload the files with PUT.");
        return;
    }
    if (s1 && s2 && s1 - rest < (long)sizeof id && s2 - s1 - 1 < (long)sizeof tok && strlen(s2 + 1) < sizeof hash) {
        memcpy(id, rest, (size_t)(s1 - rest));
        memcpy(tok, s1 + 1, (size_t)(s2 - s1 - 1));
        snprintf(hash, sizeof hash, "%s", s2 + 1);
    }
    pthread_once(&tpl_once, tpl_init);
    pthread_mutex_lock(&tpl_mu);
    tpl_build *b = NULL;
    for (int i = 0; i < TPL_BUILDS_MAX && !b; i++)
        if (tpl_builds[i].used && lb_id_valid(id) && !strcmp(tpl_builds[i].id, id))
            b = &tpl_builds[i];
    /* the token in constant time; a wrong one answers as an unknown build */
    int known = b && strlen(tok) == 64 && lb_ct_equal(tok, b->token, 64) && hash_ok(hash);
    if (!known || b->state != TPL_WAITING) {
        pthread_mutex_unlock(&tpl_mu);
        lb_e2b_error(r, 404, "%s", !known ? "This upload URL is not valid (wrong build, token or hash)."
                                       : "This build takes no more files: its steps came already, or it ended.");
        return;
    }
    if (uploaded(b, hash)) {
        pthread_mutex_unlock(&tpl_mu);
        lb_http_drain(r);
        empty_json(r, 200);
        return;
    }
    if (b->n_up + b->uploading >= TPL_COPIES_MAX) {
        pthread_mutex_unlock(&tpl_mu);
        lb_e2b_error(r, 413, "A build takes at most %d uploads.", TPL_COPIES_MAX);
        return;
    }
    b->uploading++;
    char stage[sizeof b->stage];
    snprintf(stage, sizeof stage, "%s", b->stage);
    pthread_mutex_unlock(&tpl_mu);

    lb_buf body;
    lb_buf_init(&body, TPL_UPLOAD_MAX);
    int rc = lb_req_body(r, TPL_UPLOAD_MAX, &body, "template files");
    int status = 0, root = -1, fd = -1;
    if (rc) { /* answered (413, 500) */
        status = -1;
        goto out;
    }
    /* one archive at a time per build: the build's caps count across its uploads */
    pthread_mutex_lock(&b->io);
    snprintf(arch, sizeof arch, "%s/.upload-%s", stage, hash);
    fd = open(arch, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    size_t off = 0;
    while (fd >= 0 && off < body.len) {
        ssize_t w = write(fd, body.data + off, body.len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (fd < 0 || off != body.len || close(fd) != 0) {
        fd = -1;
        status = 500;
        lb_say(msg, sizeof msg, "Could not write the upload to %s: %s.", arch, strerror(errno));
        goto unlock;
    }
    fd = -1;
    /* gzip is the SDK's default; `gzip: false` sends a plain tar */
    lb_archive_kind kind = body.len >= 2 && (unsigned char)body.data[0] == 0x1f ? LB_ARCHIVE_TAR_GZ : LB_ARCHIVE_TAR;
    lb_buf_free(&body);
    root = open(stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    snprintf(pre, sizeof pre, "%s/%s", LB_E2B_TPL_FILES_DIR, hash);
    fix_ctx fc = {.root = root};
    snprintf(fc.prefix, sizeof fc.prefix, "%s", pre);
    pthread_mutex_lock(&tpl_mu);
    lb_unpack_totals tot = b->tot;
    pthread_mutex_unlock(&tpl_mu);
    lb_unpack_limits lim = {.max_entries = TPL_ENTRIES_MAX, .max_bytes = TPL_UNPACKED_MAX, .max_ratio = 1000,
                            .ratio_slack = 1u << 20};
    if (root < 0 || mkdirat(root, LB_E2B_TPL_FILES_DIR, 0755) != 0) {
        if (root < 0 || errno != EEXIST) {
            status = 500;
            lb_say(msg, sizeof msg, "Could not open the build's folder %s: %s.", stage, strerror(errno));
            goto unlock;
        }
    }
    rc = lb_unpack(arch, kind, "the template's files", root, pre, &lim, &tot, fix_mode, &fc, msg, sizeof msg);
    if (fchmodat(root, pre, 0755, 0) != 0 && errno != ENOENT)
        lb_warn("e2b template: could not open up %s/%s: %s", stage, pre, strerror(errno));
    if (rc) {
        status = rc == LB_E_TOOBIG ? 413 : rc == LB_E_INVAL || rc == LB_E_EXISTS ? 400 : 500;
        /* what was unpacked of a refused archive goes: the COPY must not see half of it */
        char half[sizeof stage + 100];
        snprintf(half, sizeof half, "%s/%s", stage, pre);
        LB_IGNORE(lb_rmtree(half)); /* the stage goes with the build anyway */
        tot = b->tot;
    }
    pthread_mutex_lock(&tpl_mu);
    b->tot = tot;
    /* a refused archive ends the build (the SDK stops there too), so it
     * does not hold one of its owner's builds until it is given up */
    int ended = rc && status != 500 && b->state == TPL_WAITING;
    if (ended)
        build_fail(b, NULL, "%s", msg);
    if (!rc && b->n_up < TPL_COPIES_MAX)
        memcpy(b->up[b->n_up++], hash, 65);
    if (!rc)
        log_addf(b, "Received the files %.12s... (%zu entries, %llu bytes so far).", hash, tot.entries,
                 (unsigned long long)tot.bytes);
    pthread_mutex_unlock(&tpl_mu);
    if (ended)
        LB_IGNORE(lb_rmtree(stage)); /* what is left is in a hidden folder no build reads */
unlock:
    if (unlink(arch) != 0 && errno != ENOENT)
        lb_warn("e2b template: could not remove %s: %s", arch, strerror(errno));
    pthread_mutex_unlock(&b->io);
out:
    lb_buf_free(&body);
    if (root >= 0)
        close(root);
    pthread_mutex_lock(&tpl_mu);
    b->uploading--;
    pthread_mutex_unlock(&tpl_mu);
    if (status > 0)
        lb_e2b_error(r, status, "%s", msg);
    else if (!status)
        empty_json(r, 200);
}

/* ---- POST /v2/templates/{name}/builds/{build}: the steps, the job ---- */

/* Puts the stage in place as image-contexts/<name> (an old context of the
 * name is swapped out and removed): sandboxd sees a whole folder or none. */
static LB_MUST_CHECK int publish(const lb_config *cfg, const tpl_build *b, char *msg, size_t msgsz)
{
    char ctx[LB_CFG_PATH + 100];
    ctx_dir(cfg, ctx, sizeof ctx);
    size_t n = strlen(ctx);
    snprintf(ctx + n, sizeof ctx - n, "/%s", b->name);
    if (rename(b->stage, ctx) == 0)
        return LB_OK;
    if ((errno == EEXIST || errno == ENOTEMPTY) &&
        renameat2(AT_FDCWD, b->stage, AT_FDCWD, ctx, RENAME_EXCHANGE) == 0) {
        LB_IGNORE(lb_rmtree(b->stage)); /* the old context, now at the stage's name; the next build of the id: never */
        return LB_OK;
    }
    lb_say(msg, msgsz, "Could not put the build's folder in place as %s: %s.", ctx, strerror(errno));
    return LB_E_IO;
}

static void trigger(lb_req *r, const char *name, const char *id)
{
    const lb_config *cfg = r->cfg;
    cJSON *body = lb_req_json(r, TPL_BODY_MAX, "template");
    if (!body)
        return;
    char msg[1024] = "", step[16] = "", (*hashes)[65] = calloc(TPL_COPIES_MAX, 65);
    lb_buf df;
    lb_buf_init(&df, 4u << 20);
    int nh = 0;
    pthread_once(&tpl_once, tpl_init);
    pthread_mutex_lock(&tpl_mu);
    tpl_build *b = find(r, name, id);
    if (!b || b->state != TPL_WAITING || b->uploading) {
        int st = b ? b->state : 0, up = b ? b->uploading : 0;
        pthread_mutex_unlock(&tpl_mu);
        if (!b)
            lb_e2b_error(r, 404, "There is no build %.40s of the template \"%.64s\".", id, name);
        else
            lb_e2b_error(r, 409, "%s", up ? "Files of this build are still being uploaded."
                                       : st == TPL_BUILDING ? "This build has started already."
                                                            : "This build has ended.");
        goto out;
    }
    b->state = TPL_BUILDING; /* no more uploads: the context is being made */
    pthread_mutex_unlock(&tpl_mu);
    int rc = hashes ? lb_e2b_tpl_dockerfile(body, &df, hashes, TPL_COPIES_MAX, &nh, b->line_steps, TPL_LINES_MAX,
                                            msg, sizeof msg, step)
                    : LB_E_NOMEM;
    if (!hashes)
        snprintf(msg, sizeof msg, "Out of memory.");
    pthread_mutex_lock(&tpl_mu);
    for (int i = 0; !rc && i < nh; i++)
        if (!uploaded(b, hashes[i])) {
            snprintf(msg, sizeof msg, "The files of a copy step (hash %.12s...) were not uploaded before the build "
                     "started.", hashes[i]);
            rc = LB_E_INVAL;
        }
    pthread_mutex_unlock(&tpl_mu);
    char path[LB_CFG_PATH + 100];
    snprintf(path, sizeof path, "%s/Dockerfile", b->stage);
    if (!rc && lb_write_file_atomic(path, df.data, df.len, 0644) != LB_OK) {
        lb_say(msg, sizeof msg, "Could not write %s: %s.", path, strerror(errno));
        rc = LB_E_IO;
    }
    int published = 0;
    if (!rc && !(rc = publish(cfg, b, msg, sizeof msg)))
        published = 1;
    char job[33] = "";
    if (!rc) {
        lbsb_conn *c = NULL;
        /* E2B's builds reach the internet: aptInstall, pipInstall,
         * npmInstall, gitClone and runCmd all arrive as RUN steps, so a
         * template with one builds with nat where the operator allows it
         * (network_allow; sandboxd checks it again), else loopback only */
        const char *net = tpl_has_run(body) && lb_cfg_network_allowed(cfg, "nat") ? "nat" : NULL;
        lbsb_image_job_spec sp = {.kind = "build", .ref = b->name, .context = b->name, .network = net};
        pthread_mutex_lock(&tpl_mu);
        if (tpl_has_run(body))
            log_addf(b, "%s", net ? "The RUN steps have the network (nat)."
                                  : "The RUN steps have loopback only: this server's network_allow does not "
                                    "include nat (apt-get, pip and npm installs need it).");
        pthread_mutex_unlock(&tpl_mu);
        rc = lbsb_connect(cfg->sandboxd_socket, NULL, &c, msg, sizeof msg);
        if (!rc)
            rc = lbsb_image_job_start(c, &sp, job, msg, sizeof msg);
        lbsb_close(c);
        if (rc && !msg[0])
            snprintf(msg, sizeof msg, "sandboxd did not start the build.");
    }
    char ctx[LB_CFG_PATH + 100];
    ctx_dir(cfg, ctx, sizeof ctx);
    size_t cl = strlen(ctx);
    snprintf(ctx + cl, sizeof ctx - cl, "/%s", b->name);
    pthread_mutex_lock(&tpl_mu);
    if (rc) {
        build_fail(b, step[0] ? step : NULL, "%s", msg);
        /* the uploads go: from the stage, or from the context no job took */
        LB_IGNORE(lb_rmtree(published ? ctx : b->stage)); /* a context left is swapped out by the next build */
    } else {
        snprintf(b->job, sizeof b->job, "%s", job);
        log_addf(b, "Building the image \"%s\" (sandboxd's job %s).", b->name, job);
    }
    pthread_mutex_unlock(&tpl_mu);
    /* a step refused still answers 202: the SDK reads the sentence from the
     * build's status, with the user's line of the step */
    empty_json(r, 202);
out:
    free(hashes);
    lb_buf_free(&df);
    cJSON_Delete(body);
}

/* ---- GET /templates/{name}/builds/{build}/status ---- */

/* Asks sandboxd for the job's news (tpl_mu not held; b->polling is ours,
 * and keeps b from being reused until the caller clears it). */
static void poll_job(const lb_config *cfg, tpl_build *b, const char *job, int64_t off)
{
    lbsb_conn *c = NULL;
    lbsb_image_job_status st;
    memset(&st, 0, sizeof st);
    char err[512] = "";
    int rc = lbsb_connect(cfg->sandboxd_socket, NULL, &c, err, sizeof err);
    if (!rc)
        rc = lbsb_image_job_poll(c, job, off, TPL_JOB_READ, &st, err, sizeof err);
    lbsb_close(c);
    pthread_mutex_lock(&tpl_mu);
    if (rc == LB_E_NOTFOUND) {
        build_fail(b, NULL, "sandboxd no longer knows the build's job (it was restarted): the build is lost.");
    } else if (rc) {
        lb_warn("e2b template %s: polling job %s: %s", b->name, job, err); /* asked again at the next poll */
    } else {
        if (st.log && st.log_len)
            log_feed(b, st.log, st.log_len);
        b->job_off = st.next_offset;
        /* finished once its whole log is read: a read shorter than asked
         * of an ended job is its end (one poll of the SDK's 200 ms sooner) */
        int whole = st.log_len < TPL_JOB_READ;
        if (!strcmp(st.state, "succeeded") && whole) {
            if (b->partial_len)
                log_add(b, b->partial, b->partial_len);
            b->partial_len = 0;
            log_addf(b, "The template \"%s\" is built: Sandbox.create(\"%s\") runs in it.", b->name, b->name);
            b->state = TPL_READY;
            b->ended_ms = lb_now_ms();
        } else if (!strcmp(st.state, "failed") && whole) {
            const char *last = NULL;
            for (int i = b->n_lines - 1; i >= 0 && !last; i--)
                if (strstr(b->lines[i].text, "Dockerfile:"))
                    last = b->lines[i].text;
            /* the builder's "Dockerfile:LINE: step N/M RUN: ..." says the most,
             * and its line names the user's step (the SDK shows its source) */
            long long ln = 0;
            char sn[16] = "", num[16] = "";
            const char *d = last ? strstr(last, "Dockerfile:") : NULL;
            size_t dl = d ? strspn(d + 11, "0123456789") : 0;
            if (dl && dl < sizeof num) {
                memcpy(num, d + 11, dl);
                if (lb_parse_ll(num, 1, TPL_LINES_MAX - 1, &ln) == LB_OK && b->line_steps[ln] > 0)
                    snprintf(sn, sizeof sn, "%d", b->line_steps[ln]);
            }
            if (last)
                build_fail(b, sn[0] ? sn : NULL, "%s", last);
            else if (st.error[0])
                build_fail(b, NULL, "%s", st.error);
            else
                build_fail(b, NULL, "The build failed (exit code %d).", st.exit_code);
        }
    }
    pthread_mutex_unlock(&tpl_mu);
    lbsb_image_job_status_free(&st); /* the context is sandboxd's once its job took it: it removes it */
}

static const char *state_name(int s)
{
    return s == TPL_WAITING ? "waiting" : s == TPL_BUILDING ? "building" : s == TPL_READY ? "ready" : "error";
}

static void iso_ms(int64_t ms, char out[32])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char s[24];
    strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%s.%03dZ", s, (int)(ms % 1000));
}

static void status(lb_req *r, const char *name, const char *id)
{
    char q[32] = "";
    long long off = 0;
    if (lb_query_get(r->query, "logsOffset", q, sizeof q) == LB_OK && (lb_parse_ll(q, 0, INT32_MAX, &off) != LB_OK)) {
        lb_e2b_error(r, 400, "logsOffset must be a whole number from 0.");
        return;
    }
    pthread_once(&tpl_once, tpl_init);
    pthread_mutex_lock(&tpl_mu);
    tpl_build *b = find(r, name, id);
    if (!b) {
        pthread_mutex_unlock(&tpl_mu);
        lb_e2b_error(r, 404, "There is no build %.40s of the template \"%.64s\".", id, name);
        return;
    }
    if (b->state == TPL_BUILDING && b->job[0] && !b->polling) {
        char job[33];
        int64_t joff = b->job_off;
        memcpy(job, b->job, sizeof job);
        b->polling = 1;
        pthread_mutex_unlock(&tpl_mu);
        poll_job(r->cfg, b, job, joff);
        pthread_mutex_lock(&tpl_mu);
        b->polling = 0;
    }
    cJSON *o = cJSON_CreateObject(), *ents = cJSON_CreateArray(), *logs = cJSON_CreateArray();
    int ok = o && ents && logs && cJSON_AddStringToObject(o, "templateID", b->name) &&
             cJSON_AddStringToObject(o, "buildID", b->id) && cJSON_AddStringToObject(o, "status", state_name(b->state));
    /* a build in error keeps its last line (the reason) for the SDK's tail poll */
    for (int i = (int)off; ok && i < b->n_lines; i++) {
        char ts[32];
        iso_ms(b->lines[i].ms, ts);
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddStringToObject(e, "timestamp", ts) &&
             cJSON_AddStringToObject(e, "level", b->state == TPL_ERROR && i == b->n_lines - 1 ? "error" : "info") &&
             cJSON_AddStringToObject(e, "message", b->lines[i].text) && cJSON_AddItemToArray(ents, e) &&
             cJSON_AddItemToArray(logs, cJSON_CreateString(b->lines[i].text));
        if (!ok && e && !cJSON_GetArraySize(ents))
            cJSON_Delete(e);
    }
    if (ok && b->state == TPL_ERROR) {
        cJSON *re = cJSON_AddObjectToObject(o, "reason");
        ok = re && cJSON_AddStringToObject(re, "message", b->reason) &&
             (!b->step[0] || cJSON_AddStringToObject(re, "step", b->step));
    }
    pthread_mutex_unlock(&tpl_mu);
    if (ok) {
        cJSON_AddItemToObject(o, "logEntries", ents);
        cJSON_AddItemToObject(o, "logs", logs);
        ents = logs = NULL;
        lb_http_json(r, 200, o, NULL);
    } else {
        lb_e2b_error(r, 500, "Out of memory.");
    }
    cJSON_Delete(ents);
    cJSON_Delete(logs);
    cJSON_Delete(o);
}

/* ---- GET /templates/aliases/{name}: Template.exists ---- */

static void alias(lb_req *r, const char *name)
{
    char owner[LB_CFG_USER_NAME];
    if (!name_ok(name) || owner_of(r->cfg, name, owner, sizeof owner) != LB_OK || !image_exists(r->cfg, name)) {
        lb_e2b_error(r, 404, "There is no template \"%.64s\".", name);
        return;
    }
    if (r->user && strcmp(owner, lb_sbx_owner_name(r))) { /* E2B's answer for another team's: the SDK reads "exists" */
        lb_e2b_error(r, 403, "The template \"%s\" belongs to another user.", name);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "templateID", name) || !cJSON_AddBoolToObject(o, "public", 0)) {
        cJSON_Delete(o);
        lb_e2b_error(r, 500, "Out of memory.");
        return;
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

/* ---- the routes ---- */

/* "<name>/<b>/<c>..." of p into parts (each at most 79 bytes); the count. */
static int split(const char *p, char parts[5][80])
{
    int n = 0;
    while (*p && n < 5) {
        size_t l = strcspn(p, "/");
        if (!l || l >= 80)
            return -1;
        memcpy(parts[n], p, l);
        parts[n++][l] = '\0';
        p += l;
        if (*p == '/')
            p++;
    }
    return *p ? -1 : n;
}

int lb_e2b_tpl_handle(lb_req *r)
{
    const char *p = r->path, *m = r->method;
    char a[5][80];
    if (lb_e2b_tpl_is_upload(p)) {
        files_upload(r, p + 22);
        return 1;
    }
    if (!strcmp(p, "/e2b/v3/templates") || !strcmp(p, "/e2b/v2/templates")) {
        if (strcmp(m, "POST"))
            lb_e2b_error(r, 405, "Use POST on %s to request a template build.", p);
        else
            request_build(r);
        return 1;
    }
    int n = 0;
    if (!strncmp(p, "/e2b/v2/templates/", 18))
        n = split(p + 18, a);
    else if (!strncmp(p, "/e2b/templates/", 15))
        n = split(p + 15, a);
    else
        return 0;
    int v2 = p[5] == 'v';
    if (!v2 && n == 2 && !strcmp(a[0], "aliases") && !strcmp(m, "GET")) {
        alias(r, a[1]);
        return 1;
    }
    if (n < 2 || !name_ok(a[0]))
        return 0; /* not a template build's route: the caller answers */
    if (!v2 && n == 3 && !strcmp(a[1], "files") && !strcmp(m, "GET"))
        files_link(r, a[0], a[2]);
    else if (v2 && n == 3 && !strcmp(a[1], "builds") && !strcmp(m, "POST"))
        trigger(r, a[0], a[2]);
    else if (!v2 && n == 4 && !strcmp(a[1], "builds") && !strcmp(a[3], "status") && !strcmp(m, "GET"))
        status(r, a[0], a[2]);
    else
        return 0;
    return 1;
}
