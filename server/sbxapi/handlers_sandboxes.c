/* The sandbox API for outside clients, over HTTP (/api/sandboxes):
 * create, list, status, exec, upload, download, destroy: the operations of
 * the sandbox API the original design asked for (after NeMo Gym's
 * nemo_gym.sandbox), served by
 * the web process on top of sandboxd (sandbox_registry.c holds the
 * sandboxes, sandbox_spec.c validates the bodies).
 *
 * Every route needs the bearer token from the configuration; with no token
 * configured the whole API answers 403, so it is off unless an operator
 * turns it on.
 */
#include "sbxapi/handlers_sandboxes.h"

#include "web/http.h"
#include "common/path.h"
#include "common/buf.h"
#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/token.h"
#include "common/util.h"
#include "images/registry_cli.h" /* the first-use pull */
#include "llmbox/sandbox.h"
#include "sbxapi/handlers_sandbox_pause.h"
#include "sbxapi/sandbox_leases.h"
#include "sbxapi/sandbox_node.h"
#include "sbxapi/sandbox_owner.h"
#include "sbxapi/sandbox_registry.h"
#include "sbxapi/sandbox_rows.h" /* several nodes */
#include "sbxapi/sandbox_spec.h"
#include "web/req_body.h"

#include <cjson/cJSON.h>
#include <fcgiapp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LB_SBX_SETUP_TIMEOUT_MS 60000     /* mkdir of the workdir, chmod of spec files */
#define LB_SBX_SETUP_CHUNK (256u << 10)   /* one setup command line */
#define LB_SBX_TTL_GRACE_S 10             /* sandboxd's TTL is a backstop behind ours */
#define LB_SBX_TTL_RPC_MAX (7 * 24 * 3600)
#define LB_SBX_TOKEN_MAX 4096

/* ---- auth ---- */

/* SHA-256 fetched once: EVP_Digest with EVP_sha256() looks the algorithm
 * up in the provider tables (locks, a string match) on every call, which
 * was the largest part of the web's own work for an exec. */
static pthread_once_t lb_sha256_once = PTHREAD_ONCE_INIT;
static EVP_MD *lb_sha256_md;

static void lb_sha256_fetch(void)
{
    lb_sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/* The configured token's digest, per worker thread: the token is the
 * same for every request, so it is hashed once, not once per request.
 * Kept with a copy of the token it was made from and made again if the
 * token differs (a test's second configuration): comparing the copy with
 * the configured token involves nothing a client sent. */
typedef struct lb_want_digest {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len; /* 0: none yet */
    char token[LB_SBX_TOKEN_MAX + 1]; /* last: a thread touches only its first bytes (RSS per web thread) */
} lb_want_digest;

static _Thread_local lb_want_digest lb_want;

/* Compares the digests, so neither the content nor the length of the
 * configured token shows in the time the comparison takes. */
static int lb_token_equal(const char *given, size_t glen, const char *want)
{
    unsigned char a[EVP_MAX_MD_SIZE];
    unsigned alen = 0;
    pthread_once(&lb_sha256_once, lb_sha256_fetch);
    const EVP_MD *md = lb_sha256_md ? lb_sha256_md : EVP_sha256();
    size_t wlen = strlen(want);
    if (!lb_want.len || wlen > LB_SBX_TOKEN_MAX || strcmp(lb_want.token, want) != 0) {
        lb_want.len = 0;
        if (EVP_Digest(want, wlen, lb_want.md, &lb_want.len, md, NULL) != 1)
            lb_want.len = 0;
        else if (wlen <= LB_SBX_TOKEN_MAX)
            memcpy(lb_want.token, want, wlen + 1);
        else
            lb_want.token[0] = '\0'; /* too long to keep: hashed every time */
    }
    if (!lb_want.len || EVP_Digest(given, glen, a, &alen, md, NULL) != 1 || alen != lb_want.len)
        return 0;
    int eq = CRYPTO_memcmp(a, lb_want.md, alen) == 0;
    OPENSSL_cleanse(a, sizeof a);
    return eq;
}

/* Answers 403 (API off) or 401 (no or wrong token) and returns 0, or
 * returns 1 for an authorised request. Never logs the token. The router
 * calls it for every LB_WHO_SANDBOX route, before anything else. */
int lb_sandbox_auth_ok(lb_req *r)
{
    const char *want = r->cfg->sandbox_api_token;
    if (!want[0]) {
        lb_http_drain(r);
        lb_http_error(r, 403, "forbidden",
                      "The sandbox API is turned off because no token is configured. To turn it on, set "
                      "LLMBOX_SANDBOX_API_TOKEN for `llmbox web` to a long random string (for example the output of "
                      "`openssl rand -hex 32`), restart it, and send the token as `Authorization: Bearer <token>`.");
        return 0;
    }
    const char *h = lb_http_param(r, "HTTP_AUTHORIZATION");
    const char *tok = NULL;
    size_t tlen = 0;
    if (h) {
        while (*h == ' ' || *h == '\t')
            h++;
        if (!strncasecmp(h, "Bearer", 6) && (h[6] == ' ' || h[6] == '\t')) {
            tok = h + 6;
            while (*tok == ' ' || *tok == '\t')
                tok++;
            tlen = strnlen(tok, LB_SBX_TOKEN_MAX + 1);
            while (tlen && (tok[tlen - 1] == ' ' || tok[tlen - 1] == '\t'))
                tlen--;
        }
    }
    if (!tok || !tlen) {
        lb_http_drain(r);
        lb_http_error_hdr(r, 401, "unauthorized", "WWW-Authenticate: Bearer realm=\"llmbox sandboxes\"\r\n",
                          "The sandbox API needs its token: send `Authorization: Bearer <token>` with the value of "
                          "LLMBOX_SANDBOX_API_TOKEN.");
        return 0;
    }
    r->user = NULL;
    if (tlen <= LB_SBX_TOKEN_MAX && lb_token_equal(tok, tlen, want))
        return 1;
    /* a user's own API token: that user's sandboxes only (sandbox_owner.h) */
    const lb_user_cfg *u = tlen <= LB_TOKEN_MAX ? lb_cfg_user_by_token(r->cfg, tok, tlen) : NULL;
    if (u) {
        r->user = u;
        return 1;
    }
    {
        lb_http_drain(r);
        lb_http_error_hdr(r, 401, "unauthorized",
                          "WWW-Authenticate: Bearer realm=\"llmbox sandboxes\", error=\"invalid_token\"\r\n",
                          "The bearer token is neither the sandbox API token this server is configured with "
                          "(LLMBOX_SANDBOX_API_TOKEN) nor a user's API token.");
        return 0;
    }
    return 1;
}

/* ---- request bodies ---- */

/* The body of create or exec as a JSON object, or NULL after answering
 * 400/413. Their own cap (sandbox_api_body_mb): file contents of any size
 * have their own route (PUT .../files/{path}), so a JSON body stays small
 * and its parse within the budget of req_body.c. */
static cJSON *lb_sbx_json_body(lb_req *r, const char *what)
{
    return lb_req_json(r, (size_t)r->cfg->sandbox_api_body_bytes, what);
}

/* ---- errors of sandboxd calls ---- */

int lb_sbx_rpc_fail(lb_sbx *s, int rc, const char *what, const char *err, char *msg, size_t msgsz)
{
    switch (rc) {
    case LB_E_CANCELLED:
        snprintf(msg, msgsz, "The sandbox %s was deleted or expired while %s.", s->id, what);
        return 404;
    case LB_E_INVAL:
    case LB_E_ISDIR:
        snprintf(msg, msgsz, "Cannot %s: %s.", what, err);
        return 400;
    case LB_E_NOTFOUND:
        snprintf(msg, msgsz, "Cannot %s: %s.", what, err);
        return 404;
    case LB_E_TOOBIG:
        snprintf(msg, msgsz, "Cannot %s: %s.", what, err);
        return 413;
    case LB_E_DENIED: /* E2B's `user`: a file call that user may not make */
        snprintf(msg, msgsz, "Cannot %s: %s.", what, err);
        return 403;
    case LB_E_EXISTS:
    case LB_E_BUSY: /* follow-ups: a paused sandbox, or one being snapshotted */
        snprintf(msg, msgsz, "Cannot %s: %s.", what, err);
        return 409;
    case LB_E_UNAVAILABLE:
    case LB_E_PROTO:
    case LB_E_SANDBOX: {
        char why[300];
        snprintf(why, sizeof why, "%.290s", err[0] ? err : lb_strerror(rc));
        lb_sbx_set_error(s, why);
        lb_warn("web: sandbox API: %s failed while trying to %s: %s", s->id, what, why);
        snprintf(msg, msgsz, "The sandbox %s failed while trying to %s (%s); delete it and create a new one.", s->id,
                 what, why);
        return 503;
    }
    default:
        snprintf(msg, msgsz, "Cannot %s: %s.", what, err[0] ? err : lb_strerror(rc));
        return 500;
    }
}

static void lb_sbx_rpc_error(lb_req *r, lb_sbx *s, int rc, const char *what, const char *err)
{
    char msg[1400];
    int st = lb_sbx_rpc_fail(s, rc, what, err, msg, sizeof msg);
    lb_http_error(r, st, st == 404 ? "not_found" : NULL, "%s", msg);
}

/* Finds a sandbox that can take an operation: answers 404 (gone) or 409
 * (still starting, or failed) and returns NULL otherwise. */
lb_sbx *lb_sbx_usable(lb_req *r, const char *id)
{
    char msg[400];
    lb_sbx *s = lb_sbx_get(id, msg, sizeof msg);
    if (!s) {
        lb_http_drain(r);
        lb_http_error(r, 404, "not_found", "%s", msg);
        return NULL;
    }
    char why[300];
    lb_sbx_state st = lb_sbx_state_of(s, why, sizeof why);
    if (st == LB_SBX_RUNNING)
        return s;
    lb_http_drain(r);
    if (st == LB_SBX_STARTING)
        lb_http_error(r, 409, NULL, "The sandbox %s is still being created; try again when it is running.", id);
    else
        lb_http_error(r, 409, NULL, "The sandbox %s failed (%s); delete it and create a new one.", id, why);
    lb_sbx_put(s);
    return NULL;
}

/* ---- POST /api/sandboxes ---- */

/* Runs one setup command line; LB_OK only if it exited 0. */
static int lb_sbx_setup_run(lb_sbx *s, lb_buf *line, char *err, size_t errsz)
{
    lbsb_exec_out out;
    int rc = lbsb_exec(s->conn, s->sbx_id, line->data, LB_SBX_SETUP_TIMEOUT_MS, &out, err, errsz);
    if (rc)
        return rc;
    if (out.state != LLMBOX_EXEC_EXITED || out.exit_code != 0) {
        size_t n = out.err_len;
        while (n && (out.err[n - 1] == '\n' || out.err[n - 1] == '\r'))
            n--;
        snprintf(err, errsz, "%.*s", (int)(n > 400 ? 400 : n), n ? out.err : "the setup command failed");
        rc = LB_E_INVAL;
    }
    lbsb_exec_out_free(&out);
    lb_buf_reset(line);
    return rc;
}

/* Appends one setup step, running what is queued first if it would not fit. */
static int lb_sbx_setup_add(lb_sbx *s, lb_buf *line, const char *cmd, const char *path, char *err, size_t errsz)
{
    lb_buf piece;
    lb_buf_init(&piece, LB_SBX_SETUP_CHUNK);
    int rc = lb_buf_appends(&piece, cmd);
    if (!rc)
        rc = lb_sh_quote(&piece, path);
    if (!rc && line->len && line->len + piece.len + 4 > LB_SBX_SETUP_CHUNK)
        rc = lb_sbx_setup_run(s, line, err, errsz);
    if (!rc && line->len)
        rc = lb_buf_appends(line, " && ");
    if (!rc)
        rc = lb_buf_append(line, piece.data, piece.len);
    lb_buf_free(&piece);
    return rc;
}

/* With op_mu held: connect, create, write the files, make the workdir and
 * set the modes. rpc_ttl_s: sandboxd's TTL (0: the spec's plus a grace).
 * On failure returns the HTTP status to answer, with msg; 0 on success. */
static int lb_sbx_build(const lb_config *cfg, lb_sbx *s, const lb_sbx_spec *sp, int rpc_ttl_s, char *msg,
                        size_t msgsz)
{
    char err[512] = "";
    int rc = lbsb_connect(cfg->sandboxd_socket, &s->cancel, &s->conn, err, sizeof err);
    if (rc) {
        snprintf(msg, msgsz, "The sandbox daemon cannot be reached: %s.", err);
        return 503;
    }
    int ttl = (rpc_ttl_s > 0 ? rpc_ttl_s : sp->ttl_s) + LB_SBX_TTL_GRACE_S;
    lbsb_spec spec = {
        .image = sp->image,
        .memory_mib = sp->memory_mib,
        .pids = sp->pids,
        .cpu_milli = sp->cpu_milli,
        .disk_mib = sp->disk_mib,
        .network = sp->network_policy ? sp->network_policy : sp->network[0] ? sp->network : NULL,
        .ttl_s = ttl > LB_SBX_TTL_RPC_MAX ? LB_SBX_TTL_RPC_MAX : ttl,
        /* outlives this web (a restart adopts it: sandbox_leases.h) */
        .lease_s = cfg->sandbox_api_lease_s,
        .net_values = sp->net_values,
    };
    /* follow-ups: started from a snapshot (handlers_sandbox_pause.c names them) */
    char state[LB_SNAPSHOT_STATE_MAX];
    if (sp->snapshot[0]) {
        lb_snapshot_state_name(sp->snapshot, state, sizeof state);
        spec.restore = state;
    }
    char sid[LB_ID_HEX_LEN + 1];
    rc = lbsb_create_leased(s->conn, &spec, sid, sizeof sid, s->lease_key, sizeof s->lease_key, err, sizeof err);
    if (rc == LB_E_UNAVAILABLE && !err[0])
        snprintf(err, sizeof err, "%s", lb_strerror(rc));
    if (sp->snapshot[0] && (rc == LB_E_NOTFOUND || rc == LB_E_INVAL || rc == LB_E_TOOBIG)) {
        return lb_snapshot_restore_error(sp->snapshot, rc, err, msg, msgsz); /* follow-ups: 404, 413, 400 or 422 */
    }
    if (rc == LB_E_INVAL || rc == LB_E_NOTFOUND) { /* notfound: no such image */
        snprintf(msg, msgsz, "The sandbox daemon refused the spec: %s.", err);
        return 400;
    }
    if (rc == LB_E_CANCELLED) {
        snprintf(msg, msgsz, "The sandbox was deleted while it was being created.");
        return 409;
    }
    if (rc) {
        snprintf(msg, msgsz, "The sandbox daemon could not create a sandbox: %s.", err);
        return 503;
    }
    memcpy(s->sbx_id, sid, sizeof sid);
    for (size_t i = 0; i < sp->nfiles; i++) {
        const lb_sbx_file *f = &sp->files[i];
        rc = lbsb_write(s->conn, s->sbx_id, f->path, f->data, f->len, 0, err, sizeof err);
        if (rc) {
            char what[LB_SBX_SPATH_MAX + 32];
            snprintf(what, sizeof what, "write %s", f->path);
            return lb_sbx_rpc_fail(s, rc, what, err, msg, msgsz);
        }
    }
    /* the workdir is every exec's default cwd: make it if missing; modes go
     * through chmod inside the sandbox (the write op creates files 0644) */
    lb_buf line;
    lb_buf_init(&line, LB_SBX_LINE_MAX);
    rc = LB_OK;
    if (sp->workdir_given)
        rc = lb_sbx_setup_add(s, &line, "mkdir -p -- ", sp->workdir, err, sizeof err);
    for (size_t i = 0; !rc && i < sp->nfiles; i++) {
        if (sp->files[i].mode < 0 || sp->files[i].mode == 0644)
            continue;
        char cmd[32];
        snprintf(cmd, sizeof cmd, "chmod %04o -- ", (unsigned)sp->files[i].mode);
        rc = lb_sbx_setup_add(s, &line, cmd, sp->files[i].path, err, sizeof err);
    }
    if (!rc && line.len)
        rc = lb_sbx_setup_run(s, &line, err, sizeof err);
    lb_buf_free(&line);
    if (rc == LB_E_INVAL) {
        snprintf(msg, msgsz, "Could not prepare the sandbox (workdir %s, file modes): %s", sp->workdir, err);
        return 400;
    }
    if (rc) {
        return lb_sbx_rpc_fail(s, rc, "prepare the sandbox", err, msg, msgsz);
    }
    return 0;
}

int lb_sbx_open(const lb_config *cfg, lb_sbx_spec *sp, int rpc_ttl_s, lb_sbx **out, char *msg, size_t msgsz)
{
    lb_sbx *s = NULL;
    cJSON *spec_echo = lb_sbx_spec_echo(sp);
    if (!spec_echo) {
        snprintf(msg, msgsz, "Out of memory.");
        return 500;
    }
    int rc = lb_sbx_reserve_owned(cfg->node_name, sp->owner, sp->owner_max, sp->ttl_s, spec_echo, sp->metadata,
                                  sp->env, sp->workdir, &s);
    if (rc == LB_E_BUSY) {
        cJSON_Delete(spec_echo);
        snprintf(msg, msgsz,
                 "You already hold %d sandbox%s, your limit (max_sandboxes); kill one or wait for one to expire.",
                 sp->owner_max, sp->owner_max == 1 ? "" : "es");
        return 429;
    }
    if (rc == LB_E_TOOBIG) {
        cJSON_Delete(spec_echo);
        snprintf(msg, msgsz,
                 "The sandbox API already holds as many sandboxes as it may (%d, LLMBOX_SANDBOX_API_MAX); "
                 "delete some or wait for them to expire.", cfg->sandbox_api_max);
        return 429;
    }
    if (rc) {
        cJSON_Delete(spec_echo);
        snprintf(msg, msgsz, "Could not register the sandbox: %s.", lb_strerror(rc));
        return 500;
    }
    /* the registry owns them now */
    sp->metadata = NULL;
    sp->env = NULL;
    int st = 0;
    char gone[400];
    if (lb_sbx_lock(s, gone, sizeof gone) != LB_OK) {
        snprintf(msg, msgsz, "The sandbox was deleted while it was being created.");
        st = 409;
        goto fail;
    }
    st = lb_sbx_build(cfg, s, sp, rpc_ttl_s, msg, msgsz);
    lb_sbx_unlock(s);
    if (st) {
        LB_IGNORE(lb_sbx_remove(s->id, LB_SBX_GONE_FAILED)); /* already gone (a delete) is the same end */
        goto fail;
    }
    lb_sbx_set_running(s);
    if (lb_sbx_state_of(s, NULL, 0) != LB_SBX_RUNNING) { /* deleted in the meantime */
        snprintf(msg, msgsz, "The sandbox was deleted while it was being created.");
        st = 409;
        goto fail;
    }
    lb_sbx_lease_save(s);
    lb_info("web: sandbox API: created %s (sandboxd %s, image %s, ttl %d s)", s->id, s->sbx_id, sp->image, sp->ttl_s);
    *out = s;
    return 0;
fail:
    lb_sbx_put(s);
    return st;
}

void lb_h_sbx_create(lb_req *r)
{
    char msg[1400] = "";
    lb_sbx_spec sp;
    memset(&sp, 0, sizeof sp);
    cJSON *out = NULL;
    lb_sbx *s = NULL;
    cJSON *body = lb_sbx_json_body(r, "sandbox spec");
    if (!body)
        return;
    int rc = lb_sbx_spec_parse(body, r->cfg, r->user, &sp, msg, sizeof msg);
    if (rc) {
        lb_http_error(r, rc == LB_E_TOOBIG ? 413 : rc == LB_E_NOMEM ? 500 : rc == LB_E_DENIED ? 403 : 400, NULL, "%s",
                      msg);
        goto out;
    }
    if (sp.snapshot[0] && !lb_snapshot_id_here(r, sp.snapshot))
        goto out; /* several nodes: another node's snapshot: 421 naming it */
    /* a registry image this node lacks: pulled on first use, through sandboxd
     * when the web is not root (images/registry_cli.h) */
    if (lb_image_is_registry_ref(sp.image) && lb_pull_ensure(r->cfg, sp.image, msg, sizeof msg) != LB_OK) {
        lb_http_error(r, 400, NULL, "%s", msg);
        goto out;
    }
    lb_sbx_quota_ticket qt;
    int retry_s = 0, st = lb_sbx_owner_quota(r, &sp, &qt, msg, sizeof msg, &retry_s);
    if (st) {
        char hdr[64] = "";
        if (retry_s)
            snprintf(hdr, sizeof hdr, "Retry-After: %d\r\n", retry_s);
        lb_http_error_hdr(r, st, st == 429 ? "rate_limited" : st == 404 ? "not_found" : NULL, hdr, "%s", msg);
        goto out;
    }
    st = lb_sbx_open(r->cfg, &sp, 0, &s, msg, sizeof msg);
    if (st) {
        lb_sbx_owner_refund(r, &qt);
        lb_http_error(r, st,
                      st == 429   ? "too_many_sandboxes"
                      : st == 404 ? "not_found"
                      : st == 422 ? "snapshot_damaged"
                                  : NULL,
                      "%s", msg);
        goto out;
    }
    out = lb_sbx_json(s);
    if (!out) {
        LB_IGNORE(lb_sbx_remove(s->id, LB_SBX_GONE_FAILED)); /* nobody would know its id; already gone is fine */
        lb_http_error(r, 500, NULL, "Out of memory.");
        goto out;
    }
    char loc[160];
    snprintf(loc, sizeof loc, "Location: /api/sandboxes/%s\r\n", s->id);
    lb_http_json(r, 201, out, loc);
out:
    cJSON_Delete(out);
    lb_sbx_spec_free(&sp);
    cJSON_Delete(body);
    lb_sbx_put(s);
}

/* ---- GET /api/sandboxes, GET and DELETE /api/sandboxes/{id} ---- */

void lb_h_sbx_list(lb_req *r)
{
    cJSON *o = NULL;
    /* several nodes: in a cluster every node's, from the store (sandbox_rows.h) */
    /* a user's token: that user's sandboxes only, of every node (each row
     * records its owner) */
    int rc = r->cfg->node_name[0]
                 ? lb_sbx_rows_list_of(r->store, r->cfg, r->user ? lb_sbx_owner_name(r) : NULL, 0, &o)
             : (o = lb_sbx_list_json_of(lb_sbx_owner_name(r))) ? LB_OK : LB_E_NOMEM;
    if (rc) {
        if (rc == LB_E_NOMEM)
            lb_http_error(r, 500, NULL, "Out of memory.");
        else
            lb_http_error(r, 503, "store_unavailable", "Cannot list the cluster's sandboxes: the store answered: %s.",
                          lb_strerror(rc));
        return;
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

void lb_h_sbx_get(lb_req *r)
{
    const char *id = r->sandbox;
    char msg[400];
    lb_sbx *s = lb_sbx_get(id, msg, sizeof msg);
    if (!s) {
        lb_http_error(r, 404, "not_found", "%s", msg);
        return;
    }
    cJSON *o = lb_sbx_json(s);
    lb_sbx_put(s);
    if (!o) {
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

void lb_h_sbx_delete(lb_req *r)
{
    const char *id = r->sandbox;
    lb_http_drain(r);
    /* idempotent: gone before, or gone now, the answer is the same */
    if (lb_sbx_remove(id, LB_SBX_GONE_DELETED) == LB_OK)
        lb_info("web: sandbox API: deleted %s", id);
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddBoolToObject(o, "deleted", 1);
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

/* ---- POST /api/sandboxes/{id}/exec ---- */

static cJSON *lb_exec_result(const lbsb_exec_out *eo, const char *message)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    const char *etype = NULL;
    int has_rc = 0;
    switch (eo->state) {
    case LLMBOX_EXEC_EXITED: has_rc = 1; break;
    case LLMBOX_EXEC_OOM: has_rc = 1; etype = "oom"; break;
    case LLMBOX_EXEC_TIMEOUT: etype = "timeout"; break;
    case LLMBOX_EXEC_INTERRUPTED: etype = "interrupted"; break;
    default: etype = "sandbox_error"; break;
    }
    int ok = cJSON_AddStringToObject(o, "stdout", eo->out ? eo->out : "") &&
             cJSON_AddStringToObject(o, "stderr", eo->err ? eo->err : "") &&
             (has_rc ? cJSON_AddNumberToObject(o, "return_code", eo->exit_code)
                     : cJSON_AddNullToObject(o, "return_code")) &&
             (etype ? cJSON_AddStringToObject(o, "error_type", etype) : cJSON_AddNullToObject(o, "error_type")) &&
             cJSON_AddNumberToObject(o, "duration_ms", (double)eo->duration_ms) &&
             cJSON_AddBoolToObject(o, "truncated", eo->truncated) &&
             (!message || cJSON_AddStringToObject(o, "message", message));
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void lb_h_sbx_exec(lb_req *r)
{
    const char *id = r->sandbox;
    char msg[600] = "", err[512] = "";
    lb_buf line;
    lb_buf_init(&line, 0);
    lbsb_exec_out eo;
    memset(&eo, 0, sizeof eo);
    cJSON *res = NULL;
    int locked = 0;
    char stdin_path[64] = "";
    lb_sbx *s = lb_sbx_usable(r, id);
    if (!s)
        return;
    cJSON *body = lb_sbx_json_body(r, "exec request");
    if (!body)
        goto out;
    lb_sbx_exec_req er;
    int rc = lb_sbx_exec_parse(body, r->cfg, s->workdir, &er, msg, sizeof msg);
    if (rc) {
        lb_http_error(r, rc == LB_E_TOOBIG ? 413 : 400, NULL, "%s", msg);
        goto out;
    }
    if (er.has_stdin) {
        char rnd[33];
        if (lb_random_hex(rnd, sizeof rnd, 16) != LB_OK) {
            lb_http_error(r, 500, NULL, "No randomness for the stdin file name.");
            goto out;
        }
        snprintf(stdin_path, sizeof stdin_path, "/tmp/.llmbox-stdin-%s", rnd);
    }
    rc = lb_sbx_exec_line(&er, s->env, stdin_path[0] ? stdin_path : NULL, &line);
    if (rc) {
        lb_http_error(r, rc == LB_E_TOOBIG ? 413 : 500, NULL,
                      rc == LB_E_TOOBIG ? "The command with its env and cwd is longer than %u bytes."
                                        : "Out of memory building the command (%u).", LB_SBX_LINE_MAX);
        goto out;
    }
    char gone[400];
    if (lb_sbx_lock(s, gone, sizeof gone) != LB_OK) {
        lb_http_error(r, 404, "not_found", "%s", gone);
        goto out;
    }
    locked = 1;
    if (er.has_stdin) {
        /* stdin travels as data through the write op, never through the
         * command line; excl: a name taken by the sandbox is an error */
        rc = lbsb_write(s->conn, s->sbx_id, stdin_path, er.stdin_data, er.stdin_len, 1, err, sizeof err);
        if (rc) {
            lb_sbx_rpc_error(r, s, rc, "pass stdin to the command", err);
            goto out;
        }
    }
    /* the fast form's helper, once per sandbox: later lines only call it;
     * a shell that lost it (replaced, restored) says so before running
     * anything, and gets it again with the same command */
    int fast = strncmp(line.data, "( ", 2) != 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        int send_helper = fast && !s->exec_helper && line.len + strlen(lb_sbx_exec_helper()) + 2 <= LB_SBX_LINE_MAX;
        lb_buf full;
        lb_buf_init(&full, LB_SBX_LINE_MAX + 4096);
        if (send_helper && (lb_buf_appends(&full, lb_sbx_exec_helper()) || lb_buf_appends(&full, "; ") ||
                            lb_buf_append(&full, line.data, line.len)))
            send_helper = 0; /* out of memory: the call alone, which may be refused below */
        rc = lbsb_exec(s->conn, s->sbx_id, send_helper ? full.data : line.data, er.timeout_ms, &eo, err, sizeof err);
        lb_buf_free(&full);
        if (fast && rc == LB_OK && eo.state == LLMBOX_EXEC_EXITED &&
            lb_sbx_exec_fast_missing(eo.exit_code, eo.out, eo.out_len, eo.err, eo.err_len)) {
            s->exec_helper = 0;
            if (attempt == 0) {
                lbsb_exec_out_free(&eo);
                memset(&eo, 0, sizeof eo);
                continue;
            }
        } else if (send_helper && rc == LB_OK && eo.state == LLMBOX_EXEC_EXITED) {
            s->exec_helper = 1;
        }
        break;
    }
    if (eo.shell_restarted)
        s->exec_helper = 0; /* a fresh shell has no helper */
    lb_sbx_unlock(s);
    locked = 0;
    const char *note = NULL;
    if (rc == LB_E_CANCELLED) {
        /* deleted or expired under the running command */
        memset(&eo, 0, sizeof eo);
        eo.state = LLMBOX_EXEC_INTERRUPTED;
        note = "The sandbox was deleted or expired while the command ran.";
    } else if (rc == LB_E_UNAVAILABLE || rc == LB_E_PROTO || rc == LB_E_NOTFOUND || rc == LB_E_SANDBOX) {
        char why[300];
        snprintf(why, sizeof why, "%.290s", err[0] ? err : lb_strerror(rc));
        lb_sbx_set_error(s, why);
        lb_warn("web: sandbox API: exec in %s failed: %s", s->id, why);
        memset(&eo, 0, sizeof eo);
        eo.state = LLMBOX_EXEC_ERROR;
        snprintf(msg, sizeof msg, "The sandbox failed: %s. Delete it and create a new one.", why);
        note = msg;
    } else if (rc) {
        lb_sbx_rpc_error(r, s, rc, "run the command", err);
        goto out;
    } else if (eo.state == LLMBOX_EXEC_ERROR) {
        lb_sbx_set_error(s, "the sandbox died while running a command");
        note = "The sandbox died while running the command; delete it and create a new one.";
    }
    res = lb_exec_result(&eo, note);
    if (!res) {
        lb_http_error(r, 500, NULL, "Out of memory.");
        goto out;
    }
    lb_http_json(r, 200, res, NULL);
out:
    if (locked)
        lb_sbx_unlock(s);
    cJSON_Delete(res);
    lbsb_exec_out_free(&eo);
    lb_buf_free(&line);
    cJSON_Delete(body);
    lb_sbx_put(s);
}

/* ---- PUT and GET /api/sandboxes/{id}/files/{path} ---- */

/* The file path of the URL (percent-encoded, absolute in the sandbox). On
 * failure answers 400 and returns 0. */
static int lb_sbx_url_path(lb_req *r, const char *raw, char *out, size_t outsz)
{
    char dec[LB_WEB_URI_MAX];
    size_t dlen = 0;
    int rc = lb_url_decode(raw, strlen(raw), dec, sizeof dec, &dlen, 0);
    if (!rc)
        rc = lb_sbx_path(dec, dlen, "/", 0, out, outsz);
    if (rc) {
        lb_http_drain(r);
        lb_http_error(r, 400, NULL,
                      "The file path is not allowed: it must be an absolute path in the sandbox without \"..\", NUL "
                      "or control characters, backslashes or invalid UTF-8, at most 1024 bytes.");
        return 0;
    }
    return 1;
}

void lb_h_sbx_put_file(lb_req *r)
{
    const char *id = r->sandbox, *raw_path = r->rest;
    char path[LB_SBX_SPATH_MAX], err[512] = "", what[LB_SBX_SPATH_MAX + 16];
    if (!lb_sbx_url_path(r, raw_path, path, sizeof path))
        return;
    lb_sbx *s = lb_sbx_usable(r, id);
    if (!s)
        return;
    lb_buf b;
    /* the body first, so a slow upload does not hold the sandbox */
    if (lb_req_body(r, LB_SBX_FILE_MAX, &b, "file") != LB_OK) {
        lb_sbx_put(s);
        return;
    }
    char gone[400];
    if (lb_sbx_lock(s, gone, sizeof gone) != LB_OK) {
        lb_http_error(r, 404, "not_found", "%s", gone);
        goto out;
    }
    int rc = lbsb_write(s->conn, s->sbx_id, path, b.data ? b.data : "", b.len, 0, err, sizeof err);
    lb_sbx_unlock(s);
    snprintf(what, sizeof what, "write %s", path);
    if (rc) {
        lb_sbx_rpc_error(r, s, rc, what, err);
        goto out;
    }
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "path", path);
        cJSON_AddNumberToObject(o, "size", (double)b.len);
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
out:
    lb_buf_free(&b);
    lb_sbx_put(s);
}

void lb_h_sbx_get_file(lb_req *r)
{
    const char *id = r->sandbox, *raw_path = r->rest;
    char path[LB_SBX_SPATH_MAX], err[512] = "", what[LB_SBX_SPATH_MAX + 16];
    if (!lb_sbx_url_path(r, raw_path, path, sizeof path))
        return;
    lb_sbx *s = lb_sbx_usable(r, id);
    if (!s)
        return;
    char *data = NULL;
    size_t len = 0;
    char gone[400];
    if (lb_sbx_lock(s, gone, sizeof gone) != LB_OK) {
        lb_http_error(r, 404, "not_found", "%s", gone);
        goto out;
    }
    int rc = lbsb_read(s->conn, s->sbx_id, path, LB_SBX_FILE_MAX, &data, &len, err, sizeof err);
    lb_sbx_unlock(s);
    snprintf(what, sizeof what, "read %s", path);
    if (rc) {
        lb_sbx_rpc_error(r, s, rc, what, err);
        goto out;
    }
    char disp[3 * LB_NAME_MAX + 128];
    if (lb_content_disposition("attachment", path, disp, sizeof disp) != LB_OK)
        snprintf(disp, sizeof disp, "attachment; filename=\"download\"");
    char extra[sizeof disp + 160];
    /* the bytes are whatever the sandbox holds: never a page of this origin */
    snprintf(extra, sizeof extra,
             "Content-Length: %zu\r\nContent-Disposition: %s\r\nContent-Security-Policy: sandbox\r\n", len, disp);
    lb_http_head(r, 200, "application/octet-stream", extra);
    if (!r->is_head && len)
        FCGX_PutStr(data, (int)len, r->fcgi->out);
out:
    free(data);
    lb_sbx_put(s);
}

/* ---- /api/sandboxes/{id}/... that no route takes (router.c) ---- */

void lb_h_sbx_no_route(lb_req *r)
{
    lb_http_drain(r);
    lb_http_error(r, 404, "not_found",
                  "There is no such sandbox route; the routes are /api/sandboxes/{id}, /api/sandboxes/{id}/exec, "
                  "/api/sandboxes/{id}/files/{path} and POST /api/sandboxes/{id}/tools/{name}.");
}
