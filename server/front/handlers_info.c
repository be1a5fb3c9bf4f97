/* Service information routes: health, models, tools. Each dependency check
 * is cached and time-boxed, so a health probe every second costs nothing
 * and a hung dependency cannot hang the web. */
#include "front/handlers_info.h"

#include "web/auth.h"
#include "web/handlers_tasks.h"
#include "web/http.h"
#include "web/spawn.h"
#include "web/task_options.h"
#include "web/user_limits.h"

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"
#include "entry.h"
#include "llmbox/sandbox.h"
#include "sbxapi/sandbox_registry.h"
#include "web/unpack.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define LB_SANDBOXD_CACHE_MS 3000
#define LB_SANDBOXD_WAIT_MS 2000
#define LB_MODEL_CACHE_MS 10000
#define LB_MODEL_TIMEOUT_MS 2000
#define LB_TOOLS_CACHE_MS 60000
/* the agent loads every plugin to answer; under valgrind on a loaded host
 * that took over 5 s (a hang still ends here, and only /api/tools waits) */
#define LB_TOOLS_TIMEOUT_MS 20000
#define LB_TOOLS_MAX (1u << 20)

/* The model URL as shown to clients: any user:password@ part and any
 * query string (where some gateways take a key) removed. */
static void lb_url_redact(const char *url, char *out, size_t outsz)
{
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : url;
    const char *slash = strchr(host, '/');
    const char *at = memchr(host, '@', slash ? (size_t)(slash - host) : strlen(host));
    const char *from = at ? at + 1 : host;
    size_t rest = strcspn(from, "?#");
    snprintf(out, outsz, "%.*s%.*s", (int)(host - url), url, (int)rest, from);
}

/* ---- sandboxd: probed in a detached thread, since the RPC client has no
 * read timeout and a stuck daemon must not hold a web worker ---- */

static pthread_mutex_t lb_sb_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lb_sb_cv = PTHREAD_COND_INITIALIZER;
static int lb_sb_inflight;
static int64_t lb_sb_at = -LB_SANDBOXD_CACHE_MS;
static cJSON *lb_sb_result;

/* arg: the configuration (for its sandboxd_socket) */
static void *lb_sb_probe(void *arg)
{
    const lb_config *cfg = arg;
    char err[512] = "";
    char *info = NULL;
    lbsb_conn *c = NULL;
    cJSON *o = NULL;
    int rc = lbsb_connect(cfg->sandboxd_socket, NULL, &c, err, sizeof err);
    if (rc == LB_OK)
        rc = lbsb_ping(c, &info, err, sizeof err);
    if (c)
        lbsb_close(c);
    if (rc == LB_OK && info)
        o = cJSON_Parse(info);
    if (o && cJSON_IsObject(o)) {
        cJSON_DeleteItemFromObject(o, "ok");
        cJSON_AddBoolToObject(o, "ok", 1);
    } else {
        cJSON_Delete(o);
        o = cJSON_CreateObject();
        cJSON_AddBoolToObject(o, "ok", 0);
        char msg[700];
        if (err[0])
            snprintf(msg, sizeof msg, "The sandbox daemon cannot be reached: %.600s", err);
        else
            snprintf(msg, sizeof msg, "The sandbox daemon at %.300s cannot be reached (%s); start it with"
                     " `llmbox sandboxd` as root.", cfg->sandboxd_socket, lb_strerror(rc));
        cJSON_AddStringToObject(o, "message", msg);
    }
    free(info);
    pthread_mutex_lock(&lb_sb_mu);
    cJSON_Delete(lb_sb_result);
    lb_sb_result = o;
    lb_sb_at = lb_mono_ms();
    lb_sb_inflight = 0;
    pthread_cond_broadcast(&lb_sb_cv);
    pthread_mutex_unlock(&lb_sb_mu);
    return NULL;
}

cJSON *lb_sandboxd_info(const lb_config *cfg)
{
    cJSON *out = NULL;
    pthread_mutex_lock(&lb_sb_mu);
    if (!lb_sb_inflight && lb_mono_ms() - lb_sb_at >= LB_SANDBOXD_CACHE_MS) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, lb_sb_probe, (void *)cfg) == 0)
            lb_sb_inflight = 1;
        pthread_attr_destroy(&at);
    }
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += LB_SANDBOXD_WAIT_MS / 1000;
    while (lb_sb_inflight)
        if (pthread_cond_timedwait(&lb_sb_cv, &lb_sb_mu, &dl) == ETIMEDOUT)
            break;
    if (lb_sb_inflight) {
        out = cJSON_CreateObject();
        cJSON_AddBoolToObject(out, "ok", 0);
        cJSON_AddStringToObject(out, "message", "The sandbox daemon did not answer within 2 seconds.");
    } else if (lb_sb_result) {
        out = cJSON_Duplicate(lb_sb_result, 1);
    }
    pthread_mutex_unlock(&lb_sb_mu);
    return out;
}

/* ---- the model endpoint ---- */

static pthread_mutex_t lb_model_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t lb_model_at = -LB_MODEL_CACHE_MS;
static int lb_model_reachable;
static char lb_model_msg[512];

static size_t lb_discard(char *p, size_t sz, size_t n, void *arg)
{
    (void)p;
    size_t *seen = arg;
    *seen += sz * n;
    return *seen > (1u << 20) ? 0 : sz * n; /* stop reading a huge answer */
}

static void lb_model_check(const lb_model_cfg *mc, const char *shown_url)
{
    if (!strcmp(mc->provider, "replay")) {
        /* no endpoint to reach: a recorded run is played back */
        const char *f = mc->replay_file;
        const char *base = strrchr(f, '/') ? strrchr(f, '/') + 1 : f;
        lb_model_reachable = 1;
        snprintf(lb_model_msg, sizeof lb_model_msg, "replaying %.400s", *base ? base : "(LLMBOX_REPLAY_FILE not set)");
        return;
    }
    char url[LB_CFG_PATH + 16];
    size_t ul = strlen(mc->base_url);
    while (ul && mc->base_url[ul - 1] == '/')
        ul--;
    int anthropic = !strcmp(mc->provider, "anthropic");
    /* the base URL may name the endpoint itself: ask its /models sibling */
    const char *sfx = anthropic ? "/messages" : "/chat/completions";
    size_t sl = strlen(sfx);
    if (ul >= sl && !strncmp(mc->base_url + ul - sl, sfx, sl))
        ul -= sl;
    /* Anthropic's base may be given without /v1 (https://api.anthropic.com) */
    int has_v1 = ul >= 3 && !strncmp(mc->base_url + ul - 3, "/v1", 3);
    snprintf(url, sizeof url, "%.*s%s/models", (int)ul, mc->base_url, anthropic && !has_v1 ? "/v1" : "");
    CURL *c = curl_easy_init();
    struct curl_slist *hdr = NULL;
    if (!c) {
        lb_model_reachable = 0;
        snprintf(lb_model_msg, sizeof lb_model_msg, "Cannot check the model endpoint: libcurl failed to start.");
        return;
    }
    const char *key = lb_model_cfg_key(mc);
    if (key) {
        /* the key goes only into the request, never into a log or a reply */
        char auth[600];
        snprintf(auth, sizeof auth, anthropic ? "x-api-key: %s" : "Authorization: Bearer %s", key);
        hdr = curl_slist_append(hdr, auth);
        explicit_bzero(auth, sizeof auth);
    }
    if (anthropic)
        hdr = curl_slist_append(hdr, "anthropic-version: 2023-06-01");
    size_t seen = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)LB_MODEL_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)LB_MODEL_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, lb_discard);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &seen);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode cr = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (cr != CURLE_OK && !(cr == CURLE_WRITE_ERROR && code)) {
        const char *why;
        switch (cr) {
        case CURLE_COULDNT_CONNECT: why = "connection refused"; break;
        case CURLE_OPERATION_TIMEDOUT: why = "no answer within 2 seconds"; break;
        case CURLE_COULDNT_RESOLVE_HOST: why = "the host name does not resolve"; break;
        case CURLE_UNSUPPORTED_PROTOCOL:
        case CURLE_URL_MALFORMAT: why = "the URL is not a valid http(s) URL"; break;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION: why = "the TLS handshake failed"; break;
        default: why = curl_easy_strerror(cr); break;
        }
        lb_model_reachable = 0;
        snprintf(lb_model_msg, sizeof lb_model_msg, "The model endpoint %.400s is not reachable (%s).", shown_url, why);
    } else if (code >= 200 && code < 300) {
        lb_model_reachable = 1;
        snprintf(lb_model_msg, sizeof lb_model_msg, "The model endpoint %.400s answers.", shown_url);
    } else if (code == 401 || code == 403) {
        lb_model_reachable = 1;
        snprintf(lb_model_msg, sizeof lb_model_msg,
                 "The model endpoint %.300s answers but refused the API key (HTTP %ld); check $%.60s.", shown_url,
                 code, mc->api_key_env[0] ? mc->api_key_env : "(no api_key_env set)");
    } else {
        /* some servers (llama.cpp, proxies) have no /models: still reachable */
        lb_model_reachable = 1;
        snprintf(lb_model_msg, sizeof lb_model_msg, "The model endpoint %.400s answers (HTTP %ld to GET /models).",
                 shown_url, code);
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
}

/* The default model's endpoint, checked at most every 10 s. */
static cJSON *lb_model_status(const lb_config *cfg)
{
    const lb_model_cfg *mc = lb_cfg_model(cfg, NULL);
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (!mc) {
        cJSON_AddBoolToObject(o, "reachable", 0);
        cJSON_AddStringToObject(o, "message", "No model is configured.");
        return o;
    }
    char shown[LB_CFG_PATH];
    lb_url_redact(mc->base_url, shown, sizeof shown);
    cJSON_AddStringToObject(o, "name", mc->name);
    cJSON_AddStringToObject(o, "url", shown);
    cJSON_AddStringToObject(o, "model", mc->model);
    /* one check at a time; waiting callers then read the fresh cache */
    pthread_mutex_lock(&lb_model_mu);
    if (lb_mono_ms() - lb_model_at >= LB_MODEL_CACHE_MS) {
        lb_model_check(mc, shown);
        lb_model_at = lb_mono_ms();
    }
    cJSON_AddBoolToObject(o, "reachable", lb_model_reachable);
    cJSON_AddStringToObject(o, "message", lb_model_msg);
    pthread_mutex_unlock(&lb_model_mu);
    return o;
}

/* /api/health for a caller without a login on a service with users:
 * whether it works, and nothing an outsider could use (no model URL or
 * name, no socket path, no counts). The page's indicator needs only
 * sandboxd.ok and model.reachable; the messages are generic. */
static void lb_health_public(lb_req *r)
{
    cJSON *sb = lb_sandboxd_info(r->cfg);
    cJSON *model = lb_model_status(r->cfg);
    cJSON *o = cJSON_CreateObject();
    cJSON *psb = o ? cJSON_AddObjectToObject(o, "sandboxd") : NULL;
    cJSON *pm = o ? cJSON_AddObjectToObject(o, "model") : NULL;
    if (!sb || !model || !psb || !pm) {
        cJSON_Delete(sb);
        cJSON_Delete(model);
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    int sb_ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sb, "ok"));
    int m_ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "reachable"));
    cJSON_AddBoolToObject(o, "ok", 1);
    cJSON_AddStringToObject(o, "version", LLMBOX_VERSION);
    cJSON_AddBoolToObject(psb, "ok", sb_ok);
    if (!sb_ok)
        cJSON_AddStringToObject(psb, "message", "The sandbox daemon is not available.");
    cJSON_AddBoolToObject(pm, "reachable", m_ok);
    if (!m_ok)
        cJSON_AddStringToObject(pm, "message", "The model endpoint is not reachable.");
    cJSON_AddStringToObject(o, "detail", "public");
    cJSON_Delete(sb);
    cJSON_Delete(model);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

void lb_h_health(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    /* Without users everyone who gets here (loopback, our Host) can read
     * every task and /api/models anyway: the full answer. With users, the
     * details are for who is logged in (session or API token); the route
     * needs no login, so the credentials are only looked at, and wrong
     * ones are no error. */
    if (cfg->n_users)
        r->user = lb_auth_peek(r);
    if (cfg->n_users && !r->user) {
        lb_health_public(r);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *sb = lb_sandboxd_info(r->cfg);
    cJSON *model = lb_model_status(r->cfg);
    cJSON *tasks = NULL;
    if (!o || !sb || !model) {
        cJSON_Delete(sb);
        cJSON_Delete(model);
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    cJSON_AddBoolToObject(o, "ok", 1); /* this process answers; dependencies below */
    cJSON_AddStringToObject(o, "version", LLMBOX_VERSION);
    cJSON_AddStringToObject(o, "detail", "full");
    /* the warm pool, at the top as well: {size, ready, hits, misses, ...}
     * from sandboxd's ping, null while sandboxd cannot be asked */
    const cJSON *pool = cJSON_GetObjectItemCaseSensitive(sb, "pool");
    cJSON_AddItemToObject(o, "pool", pool ? cJSON_Duplicate(pool, 1) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "sandboxd", sb);
    cJSON_AddItemToObject(o, "model", model);
    if ((tasks = cJSON_AddObjectToObject(o, "tasks")) != NULL) {
        cJSON_AddNumberToObject(tasks, "running", lb_spawn_running());
        cJSON_AddNumberToObject(tasks, "max", cfg->max_concurrent_tasks);
    }
    cJSON *api = cJSON_AddObjectToObject(o, "sandbox_api");
    if (api) {
        cJSON_AddBoolToObject(api, "enabled", cfg->sandbox_api_token[0] != '\0');
        cJSON_AddNumberToObject(api, "sandboxes", lb_sbx_count());
        cJSON_AddNumberToObject(api, "max", cfg->sandbox_api_max);
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

static cJSON *lb_models_json(const lb_config *cfg)
{
    const lb_model_cfg *def = lb_cfg_model(cfg, NULL);
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < cfg->n_models; i++) {
        const lb_model_cfg *mc = &cfg->models[i];
        cJSON *m = cJSON_CreateObject();
        if (!m || !cJSON_AddItemToArray(arr, m)) {
            cJSON_Delete(m);
            cJSON_Delete(arr);
            return NULL;
        }
        /* what a person picks from; never the key, nor where it lives */
        char shown[LB_CFG_PATH];
        lb_url_redact(mc->base_url, shown, sizeof shown);
        cJSON_AddStringToObject(m, "name", mc->name);
        cJSON_AddStringToObject(m, "provider", mc->provider);
        cJSON_AddStringToObject(m, "model", mc->model);
        cJSON_AddStringToObject(m, "tool_mode", mc->tool_mode == LB_CFG_TOOLS_TEXT ? "text" : "native");
        if (strcmp(mc->provider, "replay"))
            cJSON_AddStringToObject(m, "url", shown);
        cJSON_AddBoolToObject(m, "default", mc == def);
    }
    return arr;
}

void lb_h_models(lb_req *r)
{
    cJSON *arr = lb_models_json(r->cfg);
    if (!arr) {
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    lb_http_json(r, 200, arr, NULL);
    cJSON_Delete(arr);
}

/* ---- tools: asked of the agent binary, which loads the plugins ---- */

static pthread_mutex_t lb_tools_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t lb_tools_at;
static cJSON *lb_tools_cache;

void lb_h_tools(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    cJSON *copy = NULL;
    char msg[512] = "";
    pthread_mutex_lock(&lb_tools_mu);
    if (!lb_tools_cache || lb_mono_ms() - lb_tools_at >= LB_TOOLS_CACHE_MS) {
        char *argv[] = {(char *)cfg->self_exe, "agent", "--list-tools", NULL};
        char *out = NULL;
        size_t len = 0;
        int st = 0;
        int rc = lb_spawn_capture(argv, LB_TOOLS_MAX, LB_TOOLS_TIMEOUT_MS, &out, &len, &st);
        cJSON *j = rc == LB_OK ? cJSON_Parse(out) : NULL;
        if (j && cJSON_IsArray(cJSON_GetObjectItem(j, "tools"))) {
            cJSON_Delete(lb_tools_cache);
            lb_tools_cache = j;
            lb_tools_at = lb_mono_ms();
        } else {
            cJSON_Delete(j);
            if (rc == LB_E_TIMEOUT)
                snprintf(msg, sizeof msg, "Listing the tools took longer than %d seconds.", LB_TOOLS_TIMEOUT_MS / 1000);
            else if (rc != LB_OK)
                snprintf(msg, sizeof msg, "Could not run the agent to list the tools: %s.", lb_strerror(rc));
            else
                snprintf(msg, sizeof msg, "The agent did not print a tool list (exit status %d); see the web log.",
                         WIFEXITED(st) ? WEXITSTATUS(st) : -1);
            lb_warn("web: /api/tools: %s", msg);
        }
        free(out);
    }
    if (lb_tools_cache)
        copy = cJSON_Duplicate(lb_tools_cache, 1);
    pthread_mutex_unlock(&lb_tools_mu);
    if (!copy) {
        lb_http_error(r, 503, NULL, "%s", msg[0] ? msg : "The tool list is not available.");
        return;
    }
    lb_http_json(r, 200, copy, NULL);
    cJSON_Delete(copy);
}

/* ---- GET /api/info: what a client may ask of this service ---- */

void lb_h_info(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    cJSON *o = cJSON_CreateObject();
    cJSON *lim = o ? cJSON_AddObjectToObject(o, "limits") : NULL;
    cJSON *net = o ? cJSON_AddObjectToObject(o, "network") : NULL;
    cJSON *modes = net ? cJSON_AddArrayToObject(net, "modes") : NULL;
    cJSON *images = lb_images_list(r->cfg);
    cJSON *arch = o ? cJSON_AddArrayToObject(o, "archives") : NULL;
    if (!o || !lim || !modes || !images || !arch || !cJSON_AddItemToObject(o, "images", images)) {
        cJSON_Delete(images);
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    cJSON_AddStringToObject(o, "version", LLMBOX_VERSION);
    cJSON_AddNumberToObject(lim, "upload_bytes", (double)lb_limits_upload(r)); /* the user's own, if lower */
    cJSON_AddNumberToObject(lim, "upload_files", LB_UPLOAD_MAX_FILES);
    cJSON_AddNumberToObject(lim, "prompt_bytes", LB_WEB_PROMPT_MAX);
    cJSON_AddNumberToObject(lim, "max_turns_default", cfg->max_turns_default);
    cJSON_AddNumberToObject(lim, "max_turns_limit", cfg->max_turns_limit);
    cJSON_AddNumberToObject(lim, "unpack_bytes", (double)cfg->max_unpack_bytes);
    cJSON_AddNumberToObject(lim, "unpack_entries", LB_UNPACK_MAX_ENTRIES);
    cJSON_AddNumberToObject(lim, "unpack_ratio", LB_UNPACK_MAX_RATIO);
    cJSON_AddNumberToObject(lim, "output_bytes", (double)cfg->max_output_bytes);
    cJSON_AddNumberToObject(lim, "output_files", cfg->max_output_files);
    cJSON_AddItemToArray(modes, cJSON_CreateString("none"));
    if (lb_cfg_network_allowed(cfg, "nat"))
        cJSON_AddItemToArray(modes, cJSON_CreateString("nat"));
    cJSON_AddStringToObject(net, "default", "none");
    cJSON_AddStringToObject(o, "default_image", cfg->default_image);
    /* the MCP servers a task may choose (POST /api/tasks mcp): names only,
     * never their urls, headers or commands */
    cJSON *mcp = cJSON_AddArrayToObject(o, "mcp");
    for (int i = 0; mcp && i < cfg->n_mcp; i++)
        cJSON_AddItemToArray(mcp, cJSON_CreateString(cfg->mcp[i].name));
    static const char *const kinds[] = {"zip", "tar.gz", "tgz", "tar"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        cJSON_AddItemToArray(arch, cJSON_CreateString(kinds[i]));
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}
