/* Rollout group routes; the contract is handlers_rollouts.h, the API
 * docs/API.md "Rollouts".
 *
 * Waiting: a `?wait=` long-poll and an event stream each hold a worker
 * thread while they wait (FastCGI answers on the thread that took the
 * request). So they are bounded: at most rollout_max_waiters at once (a
 * quarter of web_threads by default), leaving the other threads to every
 * other request. A long-poll over the bound is answered at once with the
 * group as it is (the client polls again: nothing is lost, only the wait);
 * a stream over the bound gets 429. Waiters look at the store every
 * LB_RO_POLL_MS, a small indexed read. */
#include "jobs/handlers_rollouts.h"

#include "common/netpolicy.h"
#include "common/config.h"
#include "common/log.h"
#include "common/path.h"
#include "common/status.h"
#include "common/task.h"
#include "common/task_opts.h"
#include "common/token.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_rollout.h"
#include "web/auth.h"
#include "jobs/eval_runner.h"
#include "web/handlers_files.h"
#include "web/http.h"
#include "web/req_body.h"
#include "jobs/rollout_runner.h"
#include "sbxapi/sandbox_spec.h"
#include "jobs/score_pool.h"
#include "web/spawn.h"

#include <cjson/cJSON.h>
#include <fcgiapp.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LB_RO_POLL_MS 250
#define LB_RO_WAIT_MAX_S 60 /* the longest ?wait= */
#define LB_RO_HEARTBEAT_MS 15000 /* a blank line on a quiet stream */
#define LB_RO_STREAM_MAX_S 3600 /* an event stream ends after this long; the client reconnects */
#define LB_RO_BATCH_MAX 64 /* groups in one batch */
#define LB_RO_FILES_MAX 1000 /* files of one group */
#define LB_RO_PROMPT_MAX (1u << 20) /* bytes of a prompt */
#define LB_RO_GT_MAX (1u << 20) /* bytes of a ground truth as JSON */
#define LB_RO_TOKEN_MAX 512

/* ---- auth ---- */

/* Whether the request's bearer token is the sandbox API token (compared
 * by digest in constant time; never logged). */
static int sandbox_token_given(lb_req *r)
{
    const char *want = r->cfg->sandbox_api_token;
    const char *h = lb_http_param(r, "HTTP_AUTHORIZATION");
    if (!want[0] || !h)
        return 0;
    while (*h == ' ' || *h == '\t')
        h++;
    if (strncasecmp(h, "Bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
        return 0;
    const char *tok = h + 6;
    while (*tok == ' ' || *tok == '\t')
        tok++;
    size_t n = strnlen(tok, LB_RO_TOKEN_MAX + 1);
    while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
        n--;
    if (!n || n > LB_RO_TOKEN_MAX)
        return 0;
    char a[LB_SHA256_HEX], b[LB_SHA256_HEX];
    if (lb_sha256_hex(tok, n, a) != LB_OK || lb_sha256_hex(want, strlen(want), b) != LB_OK)
        return 0;
    return lb_ct_equal(a, b, LB_SHA256_HEX - 1);
}

int lb_rollout_auth_ok(lb_req *r)
{
    r->user = NULL;
    if (sandbox_token_given(r))
        return 1;
    if (r->cfg->n_users)
        return lb_auth_request_ok(r);
    lb_http_drain(r);
    if (!r->cfg->sandbox_api_token[0]) {
        lb_http_error(r, 403, "forbidden",
                      "Rollouts need the sandbox API token, and none is configured: set LLMBOX_SANDBOX_API_TOKEN for "
                      "`llmbox web` (or configure users), restart it, and send `Authorization: Bearer <token>`.");
        return 0;
    }
    lb_http_error_hdr(r, 401, "unauthorized", "WWW-Authenticate: Bearer realm=\"llmbox rollouts\"\r\n",
                      "Rollouts need the sandbox API token: send `Authorization: Bearer <token>` with the value of "
                      "LLMBOX_SANDBOX_API_TOKEN.");
    return 0;
}

static const char *caller(const lb_req *r)
{
    return r->user ? lb_auth_owner(r) : NULL;
}

/* Loads group r->id when the caller made it: else answers 404 (as for an
 * unknown one) and returns the error. */
static int group_visible(lb_req *r, lb_rollout_rec *g, int with_request)
{
    int rc = lb_store_rollout_load(r->store, r->id, with_request, g);
    const char *me = caller(r);
    if (rc == LB_OK && (me ? !g->owner || strcmp(g->owner, me) : g->owner != NULL)) {
        lb_rollout_rec_free(g);
        rc = LB_E_NOTFOUND; /* someone else's: exactly as if it did not exist */
    }
    if (rc == LB_E_NOTFOUND) {
        lb_http_drain(r);
        lb_http_error(r, 404, "not_found", "There is no rollout group with that id.");
    } else if (rc != LB_OK) {
        lb_http_drain(r);
        lb_http_store_error(r, rc, "read the rollout group");
    }
    return rc;
}

/* ---- waiters ---- */

static pthread_mutex_t lb_ro_mu = PTHREAD_MUTEX_INITIALIZER;
static int lb_ro_waiters, lb_ro_waiters_max = 8;

void lb_rollout_waiters_init(int configured, int web_threads)
{
    int m = configured >= 0 ? configured : web_threads / 4;
    pthread_mutex_lock(&lb_ro_mu);
    lb_ro_waiters_max = m;
    pthread_mutex_unlock(&lb_ro_mu);
}

static int waiter_take(void)
{
    pthread_mutex_lock(&lb_ro_mu);
    int ok = lb_ro_waiters < lb_ro_waiters_max;
    if (ok)
        lb_ro_waiters++;
    pthread_mutex_unlock(&lb_ro_mu);
    return ok;
}

static void waiter_give(void)
{
    pthread_mutex_lock(&lb_ro_mu);
    lb_ro_waiters--;
    pthread_mutex_unlock(&lb_ro_mu);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the request ---- */

static int fail(char *msg, size_t msgsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *msg, size_t msgsz, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msgsz, fmt, ap);
    va_end(ap);
    return LB_E_INVAL;
}

/* Member k of in as a whole number in [lo, hi] into out (absent: def). */
static int whole(const cJSON *in, const char *k, long long lo, long long hi, long long def, long long *out, char *msg,
                 size_t msgsz)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(in, k);
    *out = def;
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return fail(msg, msgsz, "%s must be a whole number from %lld to %lld.", k, lo, hi);
    *out = (long long)v->valuedouble;
    return LB_OK;
}

static int files_check(const cJSON *files, cJSON *out, char *msg, size_t msgsz)
{
    if (!cJSON_IsArray(files))
        return fail(msg, msgsz, "files must be a list of {\"path\", \"content\" or \"content_base64\"}.");
    if (cJSON_GetArraySize(files) > LB_RO_FILES_MAX)
        return fail(msg, msgsz, "files: at most %d files.", LB_RO_FILES_MAX);
    int i = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, files)
    {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "path"));
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(f, "content");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(f, "content_base64");
        char name[LB_PATH_MAX + 1];
        if (!cJSON_IsObject(f) || !p)
            return fail(msg, msgsz, "files[%d] must be an object with a string \"path\".", i);
        if (lb_path_clean_rel(p, strlen(p), name, sizeof name) != LB_OK)
            return fail(msg, msgsz, "files[%d].path must be a clean relative path (no \"..\", not absolute).", i);
        if (!!c == !!b || (c && !cJSON_IsString(c)) || (b && !cJSON_IsString(b)))
            return fail(msg, msgsz, "files[%d] must have exactly one of \"content\" (a string) or \"content_base64\".",
                        i);
        if (b) {
            char *dec = NULL;
            size_t len = 0;
            if (lb_base64_decode(b->valuestring, strlen(b->valuestring), (size_t)-1, &dec, &len) != LB_OK)
                return fail(msg, msgsz, "files[%d].content_base64 is not valid base64.", i);
            free(dec);
        }
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "path", name) ||
            !cJSON_AddStringToObject(o, c ? "content" : "content_base64", c ? c->valuestring : b->valuestring) ||
            !cJSON_AddItemToArray(out, o)) {
            cJSON_Delete(o);
            return LB_E_NOMEM;
        }
        i++;
    }
    return LB_OK;
}

static int reward_check(const cJSON *rw, cJSON *out, char *msg, size_t msgsz)
{
    static const char *const scorers[] = {"exact", "numeric", "choice", "boxed", "script", "judge"};
    static const char *const known[] = {"scorer", "ground_truth", "script", "timeout_s"};
    const cJSON *it;
    cJSON_ArrayForEach(it, rw)
    {
        size_t k = 0;
        while (k < 4 && strcmp(it->string, known[k]))
            k++;
        if (k == 4)
            return fail(msg, msgsz,
                        "reward has no field \"%.60s\" (its fields: scorer, ground_truth, script, timeout_s).",
                        it->string);
    }
    const char *sc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rw, "scorer"));
    size_t k = 0;
    while (sc && k < 6 && strcmp(sc, scorers[k]))
        k++;
    if (!sc || k == 6)
        return fail(msg, msgsz, "reward.scorer must be one of exact, numeric, choice, boxed, script, judge.");
    const cJSON *gt = cJSON_GetObjectItemCaseSensitive(rw, "ground_truth");
    const cJSON *script = cJSON_GetObjectItemCaseSensitive(rw, "script");
    if (!gt && strcmp(sc, "script"))
        return fail(msg, msgsz, "reward.ground_truth is missing (the %s scorer compares the answer with it).", sc);
    if (script && !cJSON_IsString(script))
        return fail(msg, msgsz, "reward.script must be a string (the script scorer's program).");
    if (!strcmp(sc, "script") && !script)
        return fail(msg, msgsz, "reward.script is missing: the script scorer needs its program.");
    char *gtext = gt ? cJSON_PrintUnformatted(gt) : NULL;
    size_t glen = gtext ? strlen(gtext) : 0;
    free(gtext);
    if (glen > LB_RO_GT_MAX)
        return fail(msg, msgsz, "reward.ground_truth is larger than %u bytes as JSON.", LB_RO_GT_MAX);
    long long t;
    int rc = whole(rw, "timeout_s", 1, LB_SCORE_TIMEOUT_MAX_S, LB_SCORE_TIMEOUT_DEFAULT_S, &t, msg, msgsz);
    if (rc)
        return fail(msg, msgsz, "reward.timeout_s must be a whole number from 1 to %d.", LB_SCORE_TIMEOUT_MAX_S);
    cJSON *o = cJSON_AddObjectToObject(out, "reward");
    cJSON *g = gt ? cJSON_Duplicate(gt, 1) : cJSON_CreateNull();
    if (!o || !g || !cJSON_AddItemToObject(o, "ground_truth", g) || !cJSON_AddStringToObject(o, "scorer", sc) ||
        (script && !cJSON_AddStringToObject(o, "script", script->valuestring)) ||
        !cJSON_AddNumberToObject(o, "timeout_s", (double)t))
        return LB_E_NOMEM;
    return LB_OK;
}

/* A group's network ("none", "nat" or a policy of rules) into *out as a
 * task's network column holds it (the caller frees it); a policy beyond
 * the operator's network_egress_max, or nat where network_allow lacks it,
 * is refused naming it (LB_E_INVAL: 400, as the rest of the request; a
 * rule beyond the ceiling LB_E_DENIED: 403, as for tasks and evaluations). */
static int network_check(const lb_req *r, const cJSON *v, char **out, char *msg, size_t msgsz)
{
    const lb_config *cfg = r->cfg;
    *out = NULL;
    lb_netpolicy *p = malloc(sizeof *p);
    char *text = malloc(LB_NETPOL_TEXT_MAX + 1);
    int rc = LB_E_NOMEM;
    if (!p || !text)
        goto out;
    if (lb_netpolicy_from_json(v, p, msg, msgsz) != LB_OK) {
        rc = LB_E_INVAL;
        goto out;
    }
    if (p->mode == LB_NETPOL_NAT && !lb_cfg_network_allowed(cfg, "nat")) {
        rc = fail(msg, msgsz, "network \"nat\" is not allowed on this service (network_allow).");
        goto out;
    }
    rc = lb_netpolicy_admit(p, cfg->network_egress_max, r->user ? r->user->network_egress_max : NULL, msg, msgsz);
    if (rc == LB_OK)
        rc = lb_netpolicy_admit_bytes(p, cfg->network_max_bytes, r->user ? r->user->network_max_bytes : 0, msg,
                                      msgsz);
    if (rc != LB_OK)
        goto out; /* LB_E_DENIED naming the rule, or LB_E_NOMEM */
    if (lb_netpolicy_text(p, text, LB_NETPOL_TEXT_MAX + 1) != LB_OK) {
        rc = fail(msg, msgsz, "network is longer than %d bytes as text.", LB_NETPOL_TEXT_MAX);
        goto out;
    }
    *out = text;
    text = NULL;
    rc = LB_OK;
out:
    free(p);
    free(text);
    return rc;
}

/* One group's request checked whole into *out (normalised, as the runner
 * reads it) and its size into *n. LB_E_INVAL with a sentence in msg. */
static int group_check(const lb_req *r, const cJSON *in, cJSON **out, int *n, char *msg, size_t msgsz)
{
    const lb_config *cfg = r->cfg;
    static const char *const known[] = {"prompt",    "files",        "system_prompt",  "tools",     "model",
                                        "sampling",  "max_turns",    "timeout_s",      "token_budget",
                                        "capture_tokens", "n",       "reward",         "metadata",  "model_url",
                                        "model_id",  "network",      "mcp"};
    *out = NULL;
    if (!cJSON_IsObject(in))
        return fail(msg, msgsz, "a rollout request must be a JSON object.");
    const cJSON *it;
    cJSON_ArrayForEach(it, in)
    {
        size_t k = 0;
        while (k < sizeof known / sizeof known[0] && strcmp(it->string, known[k]))
            k++;
        if (k == sizeof known / sizeof known[0])
            return fail(msg, msgsz, "unknown field \"%.60s\" (docs/API.md, Rollouts, lists the fields).", it->string);
    }
    /* a trainer's own endpoint: only where the operator allows it (the
     * agents would make requests to whatever URL a client gives) */
    const cJSON *murl = cJSON_GetObjectItemCaseSensitive(in, "model_url");
    const cJSON *mid = cJSON_GetObjectItemCaseSensitive(in, "model_id");
    if ((murl && !cJSON_IsNull(murl)) || (mid && !cJSON_IsNull(mid))) {
        if (!cfg->rollout_allow_model_url)
            return fail(msg, msgsz, "this service does not take a model_url in the request: name a configured model "
                                    "(GET /api/models), or ask the operator (rollout_allow_model_url).");
        if (!cJSON_IsString(murl) || !lb_task_opts_url_ok(murl->valuestring))
            return fail(msg, msgsz, "model_url must be an http:// or https:// URL without a user or password, "
                                    "shorter than %d bytes.", LB_TASK_OPTS_URL_MAX);
        if (mid && !cJSON_IsNull(mid) &&
            (!cJSON_IsString(mid) || !mid->valuestring[0] || strlen(mid->valuestring) >= LB_TASK_OPTS_MODEL_ID_MAX))
            return fail(msg, msgsz, "model_id must be a string of 1 to %d bytes.", LB_TASK_OPTS_MODEL_ID_MAX - 1);
    }
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(in, "system_prompt");
    if (sys && !cJSON_IsNull(sys) &&
        (!cJSON_IsString(sys) || !sys->valuestring[0] || strlen(sys->valuestring) > LB_TASK_OPTS_SYSTEM_MAX))
        return fail(msg, msgsz, "system_prompt must be a string of 1 to %d bytes.", LB_TASK_OPTS_SYSTEM_MAX);
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(in, "tools");
    if (tools && !cJSON_IsNull(tools)) {
        int nt = cJSON_IsArray(tools) ? cJSON_GetArraySize(tools) : 0;
        if (nt < 1 || nt > LB_TASK_OPTS_TOOLS_MAX)
            return fail(msg, msgsz, "tools must be a list of 1 to %d tool names (GET /api/tools).",
                        LB_TASK_OPTS_TOOLS_MAX);
        cJSON_ArrayForEach(it, tools)
        {
            const char *v = cJSON_GetStringValue(it);
            size_t len = v ? strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") : 0;
            if (!v || !len || v[len] || len >= LB_TASK_OPTS_TOOL_NAME)
                return fail(msg, msgsz, "tools: each name is a tool's name as GET /api/tools lists it (a-z, 0-9, _).");
        }
    }
    /* MCP servers (docs/MCP.md): names of the operator's [mcp] sections, refused up front when unknown */
    const cJSON *mcp = cJSON_GetObjectItemCaseSensitive(in, "mcp");
    if (mcp && !cJSON_IsNull(mcp)) {
        char list[LB_CFG_MAX_MCP * (LB_CFG_MCP_NAME + 1) + 1] = "", names[LB_CFG_MAX_MCP][LB_CFG_MCP_NAME];
        size_t at = 0;
        int nm = 0, ok = cJSON_IsArray(mcp) && cJSON_GetArraySize(mcp) >= 1 &&
                         cJSON_GetArraySize(mcp) <= LB_TASK_OPTS_MCP_MAX;
        const cJSON *each = ok ? mcp : NULL;
        cJSON_ArrayForEach(it, each)
        {
            const char *v = cJSON_GetStringValue(it);
            ok &= v && *v && !strpbrk(v, ", ") && strlen(v) < LB_CFG_MCP_NAME;
            if (ok)
                at += (size_t)snprintf(list + at, sizeof list - at, "%s,", v);
        }
        if (!ok)
            return fail(msg, msgsz, "mcp must be a list of 1 to %d names of MCP servers.", LB_TASK_OPTS_MCP_MAX);
        char why[700];
        if (lb_cfg_mcp_list(cfg, list, names, LB_CFG_MAX_MCP, &nm, why, sizeof why) != LB_OK)
            return fail(msg, msgsz, "mcp: %s", why);
    }
    const char *prompt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "prompt"));
    if (!prompt || !prompt[0])
        return fail(msg, msgsz, "prompt must be a non-empty string (the problem statement).");
    if (strlen(prompt) > LB_RO_PROMPT_MAX)
        return fail(msg, msgsz, "prompt is longer than %u bytes.", LB_RO_PROMPT_MAX);
    const cJSON *mv = cJSON_GetObjectItemCaseSensitive(in, "model");
    if (mv && !cJSON_IsNull(mv) && !cJSON_IsString(mv))
        return fail(msg, msgsz, "model must be the name of a configured model (GET /api/models).");
    const lb_model_cfg *mc = lb_cfg_model(cfg, cJSON_IsString(mv) ? mv->valuestring : NULL);
    if (!mc) {
        char names[600];
        lb_cfg_model_names(cfg, names, sizeof names);
        return fail(msg, msgsz, "model must name a configured model; the configured models are: %s.",
                    names[0] ? names : "none");
    }
    if (cJSON_IsString(murl) && strcmp(mc->provider, "openai"))
        return fail(msg, msgsz, "model_url needs an OpenAI-compatible model to take its settings from; %s is %s.",
                    mc->name, mc->provider);
    long long nn, mt, to, tb, mx = 0, top_k = -1;
    double temp = NAN, top_p = NAN;
    int rc;
    if ((rc = whole(in, "n", 1, LB_ROLLOUT_N_MAX, 1, &nn, msg, msgsz)) ||
        (rc = whole(in, "max_turns", 1, cfg->max_turns_limit, 0, &mt, msg, msgsz)) ||
        (rc = whole(in, "timeout_s", 1, cfg->task_timeout_s, 0, &to, msg, msgsz)) ||
        (rc = whole(in, "token_budget", 0, cfg->token_budget_max, -1, &tb, msg, msgsz)))
        return rc;
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(in, "sampling");
    if (sp && !cJSON_IsNull(sp)) {
        if (!cJSON_IsObject(sp))
            return fail(msg, msgsz, "sampling must be an object.");
        cJSON_ArrayForEach(it, sp)
        {
            if (!strcmp(it->string, "max_tokens") || !strcmp(it->string, "top_k"))
                continue;
            if (!strcmp(it->string, "temperature") || !strcmp(it->string, "top_p")) {
                int t = !strcmp(it->string, "temperature");
                double d = cJSON_IsNumber(it) ? it->valuedouble : NAN;
                if (!isfinite(d) || (t ? d < 0 || d > 2 : d <= 0 || d > 1))
                    return fail(msg, msgsz, "sampling.%s must be a number %s.", it->string,
                                t ? "from 0 to 2" : "above 0 and at most 1");
                if (t)
                    temp = d;
                else
                    top_p = d;
                continue;
            }
            return fail(msg, msgsz, "sampling has no field \"%.60s\".", it->string);
        }
        if ((rc = whole(sp, "max_tokens", 1, 10000000, 0, &mx, msg, msgsz)))
            return fail(msg, msgsz, "sampling.max_tokens must be a whole number from 1 to 10000000.");
        if ((rc = whole(sp, "top_k", 0, 1000000, -1, &top_k, msg, msgsz)))
            return fail(msg, msgsz, "sampling.top_k must be a whole number from 0 to 1000000.");
    }
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(in, "capture_tokens");
    if (ct && !cJSON_IsNull(ct) && !cJSON_IsBool(ct))
        return fail(msg, msgsz, "capture_tokens must be true or false.");
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(in, "metadata");
    if (md && !cJSON_IsNull(md) && !cJSON_IsObject(md))
        return fail(msg, msgsz, "metadata must be an object.");
    const cJSON *rw = cJSON_GetObjectItemCaseSensitive(in, "reward");
    if (rw && !cJSON_IsNull(rw) && !cJSON_IsObject(rw))
        return fail(msg, msgsz,
                    "reward must be an object {\"scorer\", \"ground_truth\", \"script\"?, \"timeout_s\"?}.");
    char *net = NULL; /* the sandboxes' network as a task holds it (docs/NETWORK.md) */
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(in, "network");
    if (nv && !cJSON_IsNull(nv) && (rc = network_check(r, nv, &net, msg, msgsz)) != LB_OK)
        return rc;
    cJSON *o = cJSON_CreateObject();
    cJSON *files = cJSON_AddArrayToObject(o, "files");
    if (o && net && !cJSON_AddStringToObject(o, "network", net)) {
        cJSON_Delete(o);
        o = NULL;
    }
    free(net);
    if (!o || !files || !cJSON_AddStringToObject(o, "prompt", prompt) ||
        !cJSON_AddStringToObject(o, "model", mc->name) ||
        (mt && !cJSON_AddNumberToObject(o, "max_turns", (double)mt)) ||
        (to && !cJSON_AddNumberToObject(o, "timeout_s", (double)to)) ||
        (tb >= 0 && !cJSON_AddNumberToObject(o, "token_budget", (double)tb)) ||
        (mx && !cJSON_AddNumberToObject(o, "max_tokens", (double)mx)) ||
        (!isnan(temp) && !cJSON_AddNumberToObject(o, "temperature", temp)) ||
        (!isnan(top_p) && !cJSON_AddNumberToObject(o, "top_p", top_p)) ||
        (top_k >= 0 && !cJSON_AddNumberToObject(o, "top_k", (double)top_k)) ||
        (cJSON_IsBool(ct) && !cJSON_AddBoolToObject(o, "capture_tokens", cJSON_IsTrue(ct))) ||
        (cJSON_IsString(sys) && !cJSON_AddStringToObject(o, "system_prompt", sys->valuestring)) ||
        (cJSON_IsString(murl) && !cJSON_AddStringToObject(o, "model_url", murl->valuestring)) ||
        (cJSON_IsString(mid) && !cJSON_AddStringToObject(o, "model_id", mid->valuestring)) ||
        (cJSON_IsArray(tools) && !cJSON_AddItemToObject(o, "tools", cJSON_Duplicate(tools, 1))) ||
        (cJSON_IsArray(mcp) && !cJSON_AddItemToObject(o, "mcp", cJSON_Duplicate(mcp, 1))) ||
        (cJSON_IsObject(md) && !cJSON_AddItemToObject(o, "metadata", cJSON_Duplicate(md, 1)))) {
        cJSON_Delete(o);
        return LB_E_NOMEM;
    }
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(in, "files");
    if ((fl && !cJSON_IsNull(fl) && (rc = files_check(fl, files, msg, msgsz)) != LB_OK) ||
        (cJSON_IsObject(rw) && (rc = reward_check(rw, o, msg, msgsz)) != LB_OK)) {
        cJSON_Delete(o);
        return rc;
    }
    /* the samples' task options must fit the store's cap (escaping grows a system prompt) */
    char *opts = lb_rollout_task_options(o);
    size_t olen = opts ? strlen(opts) : 0;
    free(opts);
    if (!olen || olen > LB_TASK_OPTS_MAX_JSON) {
        cJSON_Delete(o);
        return olen ? fail(msg, msgsz,
                           "system_prompt, tools and model_url take more than the %d bytes a task's options may (after JSON "
                           "escaping); shorten the system prompt.",
                           LB_TASK_OPTS_MAX_JSON)
                    : LB_E_NOMEM;
    }
    *out = o;
    *n = (int)nn;
    return LB_OK;
}

/* ---- the group as JSON ---- */

static void add_num_or_null(cJSON *o, const char *k, int has, double v)
{
    if (has)
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static cJSON *sample_json(const char *gid, const lb_rollout_sample *x, int brief)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "index", x->idx);
    if (x->task_id[0])
        cJSON_AddStringToObject(o, "task_id", x->task_id);
    else
        cJSON_AddNullToObject(o, "task_id");
    cJSON_AddStringToObject(o, "status", x->status);
    if (brief)
        return o;
    if (x->outcome[0])
        cJSON_AddStringToObject(o, "outcome", x->outcome);
    else
        cJSON_AddNullToObject(o, "outcome");
    add_num_or_null(o, "reward", x->has_reward, x->reward);
    cJSON *res = x->result_json ? cJSON_Parse(x->result_json) : NULL;
    static const char *const nums[] = {"turns", "prompt_tokens", "completion_tokens", "env_tokens", "wall_ms"};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, nums[i]);
        add_num_or_null(o, nums[i], cJSON_IsNumber(v), cJSON_IsNumber(v) ? v->valuedouble : 0);
    }
    static const char *const strs[] = {"answer", "reward_detail", "scorer", "error", "scorer_error_class"};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, strs[i]));
        if (v)
            cJSON_AddStringToObject(o, strs[i], v);
        else if (i < 2)
            cJSON_AddNullToObject(o, strs[i]);
    }
    cJSON_Delete(res);
    char url[160];
    snprintf(url, sizeof url, "/api/rollouts/%s/samples/%d/trajectory", gid, x->idx);
    cJSON_AddStringToObject(o, "trajectory_url", url);
    if (x->task_id[0]) {
        snprintf(url, sizeof url, "/api/tasks/%s/tokens.jsonl", x->task_id);
        cJSON_AddStringToObject(o, "tokens_url", url);
    } else {
        cJSON_AddNullToObject(o, "tokens_url");
    }
    add_num_or_null(o, "started_ms", x->started_ms > 0, (double)x->started_ms);
    add_num_or_null(o, "finished_ms", x->finished_ms > 0, (double)x->finished_ms);
    return o;
}

/* The group with its samples (brief: index, task_id, status only). */
static cJSON *group_json(lb_store *s, const lb_rollout_rec *g, int brief, int *rc)
{
    lb_rollout_sample *v = NULL;
    size_t n = 0;
    cJSON *o = NULL;
    if ((*rc = lb_store_rollout_samples(s, g->id, &v, &n)) != LB_OK)
        return NULL;
    o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "samples");
    if (!o || !arr || !cJSON_AddStringToObject(o, "id", g->id) || !cJSON_AddStringToObject(o, "status", g->status) ||
        !cJSON_AddNumberToObject(o, "n", g->n) || !cJSON_AddNumberToObject(o, "created_ms", (double)g->created_ms))
        goto nomem;
    add_num_or_null(o, "finished_ms", g->finished_ms > 0, (double)g->finished_ms);
    for (size_t i = 0; i < n; i++) {
        cJSON *x = sample_json(g->id, &v[i], brief);
        if (!x || !cJSON_AddItemToArray(arr, x)) {
            cJSON_Delete(x);
            goto nomem;
        }
    }
    lb_rollout_samples_free(v, n);
    return o;
nomem:
    lb_rollout_samples_free(v, n);
    cJSON_Delete(o);
    *rc = LB_E_NOMEM;
    return NULL;
}

static void add_metadata(cJSON *o, const char *request_json)
{
    cJSON *req = request_json ? cJSON_Parse(request_json) : NULL;
    cJSON *md = cJSON_DetachItemFromObjectCaseSensitive(req, "metadata");
    if (md)
        cJSON_AddItemToObject(o, "metadata", md);
    cJSON_Delete(req);
}

/* ---- create ---- */

void lb_h_rollout_create(lb_req *r)
{
    cJSON *body = lb_req_json(r, r->cfg->rollout_max_body_bytes, "rollout request");
    if (!body)
        return; /* answered */
    char msg[600];
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(body, "groups");
    int batch = groups != NULL;
    int count = batch ? cJSON_GetArraySize(groups) : 1;
    cJSON *norm[LB_RO_BATCH_MAX] = {0};
    int ns[LB_RO_BATCH_MAX] = {0};
    cJSON *answer = NULL, *list = NULL;
    int rc = LB_OK;
    if (batch && (!cJSON_IsArray(groups) || count < 1 || count > LB_RO_BATCH_MAX || cJSON_GetArraySize(body) != 1)) {
        lb_http_error(r, 400, NULL, "A batch is {\"groups\": [<request>, ...]} with 1 to %d requests and nothing else.",
                      LB_RO_BATCH_MAX);
        goto out;
    }
    for (int i = 0; i < count; i++) {
        const cJSON *in = batch ? cJSON_GetArrayItem(groups, i) : body;
        char why[500];
        rc = group_check(r, in, &norm[i], &ns[i], why, sizeof why);
        if (rc == LB_E_INVAL || rc == LB_E_DENIED) {
            if (batch)
                snprintf(msg, sizeof msg, "groups[%d]: %s", i, why);
            else
                snprintf(msg, sizeof msg, "%s", why);
            lb_http_error(r, rc == LB_E_DENIED ? 403 : 400, NULL, "%s", msg);
            goto out;
        }
        if (rc != LB_OK) {
            lb_http_error(r, 500, NULL, "Out of memory reading the rollout request.");
            goto out;
        }
    }
    answer = batch ? cJSON_CreateObject() : NULL;
    list = batch ? cJSON_AddArrayToObject(answer, "groups") : NULL;
    for (int i = 0; i < count; i++) {
        lb_rollout_rec g = {.n = ns[i], .owner = (char *)caller(r), .created_ms = lb_now_ms()};
        if (lb_random_hex(g.id, sizeof g.id, 16) != LB_OK) {
            lb_http_error(r, 500, NULL, "No randomness for a rollout id.");
            goto out;
        }
        snprintf(g.status, sizeof g.status, "running");
        g.request_json = cJSON_PrintUnformatted(norm[i]);
        rc = g.request_json ? lb_store_rollout_insert(r->store, &g) : LB_E_NOMEM;
        cJSON *one = rc == LB_OK ? group_json(r->store, &g, 1, &rc) : NULL;
        free(g.request_json);
        if (!one) {
            /* the groups stored before this one stay and run: say which */
            lb_http_store_error(
                r, rc, i ? "store every group of the batch (the first ones were stored)" : "store the rollout group");
            goto out;
        }
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(norm[i], "metadata");
        if (md)
            cJSON_AddItemToObject(one, "metadata", cJSON_Duplicate(md, 1));
        lb_info("web: rollout %s: %d samples for %s", g.id, g.n, g.owner ? g.owner : "the sandbox token");
        if (!batch) {
            answer = one;
        } else if (!cJSON_AddItemToArray(list, one)) {
            cJSON_Delete(one);
        }
    }
    lb_eval_runner_wake();
    lb_http_json(r, 201, answer, NULL);
out:
    for (int i = 0; i < count && i < LB_RO_BATCH_MAX; i++)
        cJSON_Delete(norm[i]);
    cJSON_Delete(answer);
    cJSON_Delete(body);
}

/* ---- get, events ---- */

static int group_final(const char *status)
{
    return strcmp(status, "running") != 0;
}

void lb_h_rollout_get(lb_req *r)
{
    char raw[16];
    long long wait_s = 0;
    int qrc = lb_query_get(r->query, "wait", raw, sizeof raw);
    if (qrc == LB_OK && lb_parse_ll(raw, 0, LB_RO_WAIT_MAX_S, &wait_s) != LB_OK) {
        lb_http_error(r, 400, NULL, "wait must be a whole number of seconds from 0 to %d.", LB_RO_WAIT_MAX_S);
        return;
    }
    lb_rollout_rec g;
    if (group_visible(r, &g, 1) != LB_OK)
        return;
    if (wait_s > 0 && !group_final(g.status) && waiter_take()) {
        int64_t until = lb_mono_ms() + wait_s * 1000;
        while (!group_final(g.status) && lb_mono_ms() < until) {
            sleep_ms(LB_RO_POLL_MS);
            lb_rollout_rec h;
            if (lb_store_rollout_load(r->store, r->id, 0, &h) != LB_OK)
                break; /* deleted meanwhile: the last state read is answered */
            snprintf(g.status, sizeof g.status, "%s", h.status);
            g.finished_ms = h.finished_ms;
            lb_rollout_rec_free(&h);
        }
        waiter_give();
    }
    int rc;
    cJSON *o = group_json(r->store, &g, 0, &rc);
    if (!o) {
        lb_http_store_error(r, rc, "read the rollout group's samples");
    } else {
        add_metadata(o, g.request_json);
        lb_http_json(r, 200, o, NULL);
    }
    cJSON_Delete(o);
    lb_rollout_rec_free(&g);
}

/* GET /api/rollouts/{id}/events: one NDJSON line per sample as it
 * finishes (those done already first), then {"done": true, "status"}. */
void lb_h_rollout_events(lb_req *r)
{
    lb_rollout_rec g;
    if (group_visible(r, &g, 0) != LB_OK)
        return;
    if (!waiter_take()) {
        lb_http_error(r, 429, "too_many_waiters",
                      "Too many rollout streams and long-polls are open (rollout_max_waiters); poll GET "
                      "/api/rollouts/{id} instead, or try again later.");
        lb_rollout_rec_free(&g);
        return;
    }
    lb_http_head(r, 200, "application/x-ndjson", "Cache-Control: no-store\r\nX-Accel-Buffering: no\r\n");
    char sent[LB_ROLLOUT_N_MAX] = {0};
    int64_t until = lb_mono_ms() + (int64_t)LB_RO_STREAM_MAX_S * 1000;
    int ended = 0;
    int64_t wrote = lb_mono_ms();
    while (!ended && lb_mono_ms() < until) {
        lb_rollout_rec h;
        if (lb_store_rollout_load(r->store, r->id, 0, &h) != LB_OK)
            break; /* deleted: the stream ends */
        lb_rollout_sample *v = NULL;
        size_t n = 0;
        int ok = lb_store_rollout_samples(r->store, r->id, &v, &n) == LB_OK, all = 1, broken = 0;
        for (size_t i = 0; ok && i < n; i++) {
            if (strcmp(v[i].status, "done")) {
                all = 0;
                continue;
            }
            if (v[i].idx < 0 || v[i].idx >= LB_ROLLOUT_N_MAX || sent[v[i].idx])
                continue;
            cJSON *x = sample_json(h.id, &v[i], 0);
            char *line = x ? cJSON_PrintUnformatted(x) : NULL;
            cJSON_Delete(x);
            if (line && (FCGX_PutS(line, r->fcgi->out) < 0 || FCGX_PutS("\n", r->fcgi->out) < 0))
                broken = 1;
            free(line);
            sent[v[i].idx] = 1;
            wrote = lb_mono_ms();
        }
        /* a blank line now and then: proxies and clients see it is alive */
        if (!broken && lb_mono_ms() - wrote >= LB_RO_HEARTBEAT_MS) {
            if (FCGX_PutS("\n", r->fcgi->out) < 0)
                broken = 1;
            wrote = lb_mono_ms();
        }
        lb_rollout_samples_free(v, n);
        if (ok && all && group_final(h.status)) {
            char tail[96];
            snprintf(tail, sizeof tail, "{\"done\":true,\"status\":\"%s\"}\n", h.status);
            if (FCGX_PutS(tail, r->fcgi->out) < 0)
                broken = 1;
            ended = 1;
        }
        lb_rollout_rec_free(&h);
        if (broken || FCGX_FFlush(r->fcgi->out) < 0)
            break; /* the client went away */
        if (!ended)
            sleep_ms(LB_RO_POLL_MS);
    }
    waiter_give();
    lb_rollout_rec_free(&g);
}

/* GET /api/rollouts/{id}/samples/{index}/trajectory: the sample's task's
 * trajectory.json, as GET /api/tasks/{task}/trajectory serves it. */
void lb_h_rollout_sample(lb_req *r)
{
    const char *rest = r->rest ? r->rest : "";
    const char *slash = strchr(rest, '/');
    char num[16];
    long long idx = -1;
    size_t k = slash ? (size_t)(slash - rest) : 0;
    if (!slash || strcmp(slash, "/trajectory") || k == 0 || k >= sizeof num) {
        lb_http_error(r, 404, "not_found", "A sample's route is /api/rollouts/{id}/samples/{index}/trajectory.");
        return;
    }
    memcpy(num, rest, k);
    num[k] = '\0';
    if (lb_parse_ll(num, 0, LB_ROLLOUT_N_MAX - 1, &idx) != LB_OK) {
        lb_http_error(r, 404, "not_found", "There is no sample %s: indexes run from 0 to n - 1.", num);
        return;
    }
    lb_rollout_rec g;
    if (group_visible(r, &g, 0) != LB_OK)
        return;
    lb_rollout_sample *v = NULL;
    size_t n = 0;
    int rc = lb_store_rollout_samples(r->store, g.id, &v, &n);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the rollout group's samples");
    } else if ((size_t)idx >= n) {
        lb_http_error(r, 404, "not_found", "There is no sample %lld: this group has %zu (0 to %zu).", idx, n, n - 1);
    } else if (!v[idx].task_id[0]) {
        lb_http_error(r, 404, "not_found", "Sample %lld has no task yet (status: %s).", idx, v[idx].status);
    } else {
        snprintf(r->id, sizeof r->id, "%s", v[idx].task_id);
        lb_h_trajectory(r);
    }
    lb_rollout_samples_free(v, n);
    lb_rollout_rec_free(&g);
}

/* ---- cancel, delete ---- */

/* Stops the tasks of samples still running. */
static void stop_samples(lb_store *s, const char *id)
{
    lb_rollout_sample *v = NULL;
    size_t n = 0;
    if (lb_store_rollout_samples(s, id, &v, &n) != LB_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i].status, "running") || !v[i].task_id[0])
            continue;
        if (lb_spawn_cancel(v[i].task_id) != LB_OK) {
            /* no agent of ours runs it (an earlier web's): end it here */
            int rc = lb_store_task_end(s, v[i].task_id, LB_TASK_CANCELLED, "cancelled with its rollout group", NULL);
            if (rc != LB_OK && rc != LB_E_EXISTS && rc != LB_E_NOTFOUND)
                lb_warn("web: rollout %s: cannot cancel task %s: %s", id, v[i].task_id, lb_strerror(rc));
        }
    }
    lb_rollout_samples_free(v, n);
}

void lb_h_rollout_cancel(lb_req *r)
{
    lb_rollout_rec g;
    if (group_visible(r, &g, 0) != LB_OK)
        return;
    int rc = lb_store_rollout_cancel(r->store, g.id);
    if (rc == LB_E_EXISTS) {
        lb_http_error(r, 409, NULL, "The rollout group has already ended (%s); there is nothing to cancel.", g.status);
    } else if (rc != LB_OK) {
        lb_http_store_error(r, rc, "cancel the rollout group");
    } else {
        stop_samples(r->store, g.id);
        lb_eval_runner_wake();
        lb_info("web: rollout %s cancelled", g.id);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", g.id);
        cJSON_AddStringToObject(o, "status", "cancelled");
        lb_http_json(r, 202, o, NULL);
        cJSON_Delete(o);
    }
    lb_rollout_rec_free(&g);
}

void lb_h_rollout_delete(lb_req *r)
{
    lb_rollout_rec g;
    if (group_visible(r, &g, 0) != LB_OK)
        return;
    if (!group_final(g.status)) {
        LB_IGNORE(lb_store_rollout_cancel(r->store, g.id)); /* ended meanwhile: nothing to cancel */
        stop_samples(r->store, g.id);
    }
    int rc = lb_store_rollout_delete(r->store, g.id);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "delete the rollout group");
    } else {
        lb_info("web: rollout %s deleted", g.id);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", g.id);
        cJSON_AddBoolToObject(o, "deleted", 1);
        lb_http_json(r, 200, o, NULL);
        cJSON_Delete(o);
    }
    lb_rollout_rec_free(&g);
}
