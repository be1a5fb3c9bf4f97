/* The model client over libcurl, shared by every provider: endpoint and
 * key set-up, the POST with its retries (connection failures, 429/5xx with
 * Retry-After), cancellation and the sentences shown when it fails. The
 * request bodies and the response parsers are per provider: OpenAI-
 * compatible chat completions (model_openai.c, toolcall_parse.c) and the
 * Anthropic Messages API (model_anthropic.c). */
#include "agent/model_http.h"

#include "agent/loop.h"
#include "agent/model_anthropic.h"
#include "agent/model_context.h"
#include "agent/model_openai.h"
#include "agent/model_replay.h"
#include "agent/prompts.h"
#include "agent/run_state.h"
#include "agent/sink.h"
#include "agent/toolcall_parse.h"
#include "common/task_opts.h"
#include "common/buf.h"
#include "common/config.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/netcheck.h"
#include "common/status.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LB_RETRY_AFTER_MAX_S 20
#define LB_BACKOFF_MAX_MS 16000

/* Copies url without "user:password@" (never shown in messages). */
static void strip_userinfo(const char *url, char *out, size_t outsz)
{
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : url;
    const char *slash = strchr(host, '/');
    const char *at = strchr(host, '@');
    if (at && (!slash || at < slash))
        snprintf(out, outsz, "%.*s%s", (int)(host - url), url, at + 1);
    else
        snprintf(out, outsz, "%s", url);
}

/* A task's own model_url (rollout_allow_model_url): the operator's list of
 * targets it may reach into m->allow, and whether a host rule names its
 * host. LB_OK, or LB_E_INVAL / LB_E_NOMEM with a sentence in err. */
static int caller_url_setup(lb_model *m, const lb_config *cfg, char *err, size_t errsz)
{
    m->allow = calloc(1, sizeof *m->allow);
    if (!m->allow) {
        snprintf(err, errsz, "Out of memory while setting up the task's model_url.");
        return LB_E_NOMEM;
    }
    char why[300];
    if (lb_netallow_parse(cfg->rollout_model_url_allow, m->allow, why, sizeof why) != LB_OK) {
        snprintf(err, errsz, "The operator's rollout_model_url_allow cannot be read: %s.", why);
        return LB_E_INVAL;
    }
    CURLU *u = curl_url();
    char *host = NULL;
    if (!u || curl_url_set(u, CURLUPART_URL, m->url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        curl_url_cleanup(u);
        snprintf(err, errsz, "The task's model_url %s is not a URL this service can read.", m->shown_url);
        return LB_E_INVAL;
    }
    m->host_named = lb_netallow_host(m->allow, host);
    curl_free(host);
    curl_url_cleanup(u);
    return LB_OK;
}

/* CURLOPT_OPENSOCKETFUNCTION of a task's own model_url: every connection
 * (each address tried, each retry) is checked after resolving, so a name
 * that resolves to loopback or a private address, now or on a later
 * lookup, reaches nothing the operator did not list. */
static curl_socket_t open_checked(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    lb_model *m = arg;
    (void)purpose;
    if (!m->host_named && !lb_netallow_addr(m->allow, &a->addr, a->addrlen)) {
        const void *bytes = a->family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)(void *)&a->addr)->sin6_addr
                                                  : (const void *)&((struct sockaddr_in *)(void *)&a->addr)->sin_addr;
        if (!inet_ntop(a->family, bytes, m->refused, sizeof m->refused))
            snprintf(m->refused, sizeof m->refused, "an address of another family");
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* Whether body is JSON as a whole: what a caller's URL answered is quoted
 * only then (a non-JSON answer may be any service's page). */
static int body_is_json(const char *body, size_t len)
{
    cJSON *j = body && len ? cJSON_ParseWithLength(body, len) : NULL;
    int ok = j != NULL;
    cJSON_Delete(j);
    return ok;
}

/* The error text of an HTTP error answer (lb_model_error_text), except
 * that of a caller's URL whose answer is not JSON: its bytes are a read
 * back of whatever that URL reached, so only their size is told. */
static void answer_error_text(const lb_model *m, const char *body, size_t len, char *out, size_t outsz)
{
    if (m->allow && len && !body_is_json(body, len)) {
        snprintf(out, outsz, "an answer of %zu bytes that is not JSON, not shown since the task chose the URL", len);
        return;
    }
    lb_model_error_text(body, len, out, outsz);
}

int lb_model_init(lb_model *m, const lb_config *cfg, const char *name, volatile int *cancel,
                  char *err, size_t errsz)
{
    memset(m, 0, sizeof *m);
    const lb_model_cfg *mc = lb_cfg_model(cfg, name);
    if (!mc) {
        char names[600];
        lb_cfg_model_names(cfg, names, sizeof names);
        if (name && *name)
            snprintf(err, errsz, "The model \"%.64s\" is not configured (configured: %s).", name,
                     names[0] ? names : "none");
        else
            snprintf(err, errsz, "No model is configured: add a [model \"NAME\"] section to llmbox.conf "
                                 "or set LLMBOX_LLM_URL.");
        return LB_E_NOTFOUND;
    }
    m->cfg = mc;
    m->cancel = cancel;
    m->temperature = mc->temperature;
    m->top_p = mc->top_p;
    m->top_k = mc->top_k;
    snprintf(m->name, sizeof m->name, "%s", mc->name);
    snprintf(m->model, sizeof m->model, "%s", mc->model);
    if (!strcmp(mc->provider, "replay")) {
        /* no endpoint: a recorded run played back (model_replay.c) */
        const char *file = mc->replay_file[0] ? mc->replay_file : NULL;
        int rc = lb_replay_load(file, &m->replay, err, errsz);
        if (rc != LB_OK)
            return rc;
        m->provider = LB_PROVIDER_REPLAY;
        const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
        snprintf(m->url, sizeof m->url, "replay:%s", file);
        snprintf(m->shown_url, sizeof m->shown_url, "replay:%s", base);
        return LB_OK;
    }
    /* provider, URL scheme and tool mode were checked when the
     * configuration was loaded */
    m->provider = !strcmp(mc->provider, "anthropic") ? LB_PROVIDER_ANTHROPIC : LB_PROVIDER_OPENAI;
    m->tool_mode = mc->tool_mode == LB_CFG_TOOLS_TEXT ? LB_TOOL_MODE_TEXT : LB_TOOL_MODE_NATIVE;
    char base[LB_CFG_PATH];
    snprintf(base, sizeof base, "%s", mc->base_url);
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        base[--bl] = '\0';
    if (!bl || (strncmp(base, "http://", 7) && strncmp(base, "https://", 8))) {
        snprintf(err, errsz, "The model URL '%s' is not an http:// or https:// URL.", base);
        return LB_E_INVAL;
    }
    /* the URL may name the endpoint itself or its base (.../v1) */
    const char *suffix = m->provider == LB_PROVIDER_ANTHROPIC ? "/messages" : "/chat/completions";
    size_t sl = strlen(suffix);
    if (bl >= sl && !strcmp(base + bl - sl, suffix))
        snprintf(m->url, sizeof m->url, "%s", base);
    else if (m->provider == LB_PROVIDER_ANTHROPIC && !(bl >= 3 && !strcmp(base + bl - 3, "/v1")))
        snprintf(m->url, sizeof m->url, "%s/v1%s", base, suffix); /* https://api.anthropic.com */
    else
        snprintf(m->url, sizeof m->url, "%s%s", base, suffix);
    strip_userinfo(m->url, m->shown_url, sizeof m->shown_url);
    if (!strcmp(mc->name, LB_MODEL_ENDPOINT_TASK)) {
        int urc = caller_url_setup(m, cfg, err, errsz);
        if (urc != LB_OK) {
            free(m->allow);
            m->allow = NULL;
            return urc;
        }
    }
    /* the key is read from its variable now and lives only in auth */
    const char *key = lb_model_cfg_key(mc);
    if (key) {
        snprintf(m->key_env, sizeof m->key_env, "%s", mc->api_key_env);
        if (m->provider == LB_PROVIDER_ANTHROPIC)
            snprintf(m->auth, sizeof m->auth, "x-api-key: %s", key);
        else
            snprintf(m->auth, sizeof m->auth, "Authorization: Bearer %s", key);
    }
    m->max_tokens = mc->max_tokens > 0 ? mc->max_tokens : m->provider == LB_PROVIDER_ANTHROPIC ? 8192 : 0;
    m->timeout_s = mc->timeout_s > 0 ? mc->timeout_s : cfg->llm_timeout_s > 0 ? cfg->llm_timeout_s : 600;
    m->retries = mc->retries;
    m->retry_base_ms = 250;
    if (mc->extra_body[0]) {
        m->extra_body = cJSON_Parse(mc->extra_body);
        if (!cJSON_IsObject(m->extra_body)) {
            cJSON_Delete(m->extra_body);
            m->extra_body = NULL;
            snprintf(err, errsz, "The extra_body of model \"%s\" is not a JSON object.", mc->name);
            return LB_E_INVAL;
        }
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    m->curl = curl_easy_init();
    if (!m->curl) {
        cJSON_Delete(m->extra_body);
        m->extra_body = NULL;
        free(m->allow);
        m->allow = NULL;
        snprintf(err, errsz, "Cannot start the HTTP client (libcurl).");
        return LB_E_NOMEM;
    }
    return LB_OK;
}

void lb_model_free(lb_model *m)
{
    if (m->curl)
        curl_easy_cleanup(m->curl);
    cJSON_Delete(m->extra_body);
    cJSON_Delete(m->replay);
    free(m->allow);
    /* the key lived in auth; do not leave it in freed memory */
    explicit_bzero(m->auth, sizeof m->auth);
    memset(m, 0, sizeof *m);
}

char *lb_model_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools)
{
    return m->provider == LB_PROVIDER_ANTHROPIC ? lb_anthropic_request_body(m, messages, tools)
                                                : lb_openai_request_body(m, messages, tools);
}

void lb_model_apply_opts(lb_model *m, const lb_task_opts *o)
{
    if (!isnan(o->temperature))
        m->temperature = o->temperature;
    if (!isnan(o->top_p))
        m->top_p = o->top_p;
    if (o->top_k >= 0)
        m->top_k = o->top_k;
}

void lb_model_add_sampling(const lb_model *m, cJSON *req)
{
    const lb_model_cfg *c = m->cfg;
    if (!c)
        return;
    int anthropic = m->provider == LB_PROVIDER_ANTHROPIC;
    if (!isnan(m->temperature))
        cJSON_AddNumberToObject(req, "temperature", m->temperature);
    if (!isnan(m->top_p))
        cJSON_AddNumberToObject(req, "top_p", m->top_p);
    if (m->top_k >= 0)
        cJSON_AddNumberToObject(req, "top_k", m->top_k);
    if (anthropic)
        return; /* max_tokens is the builder's; min_p and the penalty were refused at load */
    if (!isnan(c->min_p))
        cJSON_AddNumberToObject(req, "min_p", c->min_p);
    if (!isnan(c->repetition_penalty))
        cJSON_AddNumberToObject(req, "repetition_penalty", c->repetition_penalty);
    if (m->max_tokens > 0)
        cJSON_AddNumberToObject(req, "max_tokens", m->max_tokens);
}

void lb_model_merge_extra(const lb_model *m, cJSON *req, const char *const *keep)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, m->extra_body)
    {
        int kept = !e->string;
        for (size_t i = 0; !kept && keep[i]; i++)
            kept = !strcmp(e->string, keep[i]);
        if (kept)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(req, e->string);
        cJSON_AddItemToObject(req, e->string, cJSON_Duplicate(e, 1));
    }
}

typedef struct resp_buf {
    lb_buf b;
    int toobig;
} resp_buf;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    resp_buf *rb = arg;
    size_t len = size * n;
    if (lb_buf_append(&rb->b, p, len) != LB_OK) {
        rb->toobig = 1;
        return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
    }
    return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    volatile int *cancel = arg;
    return cancel && *cancel;
}

/* Sleeps ms in small steps; returns nonzero when cancelled meanwhile. */
static int nap(lb_model *m, long ms)
{
    while (ms > 0) {
        if (m->cancel && *m->cancel)
            return 1;
        long step = ms < 50 ? ms : 50;
        struct timespec ts = {0, step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
    return m->cancel && *m->cancel;
}

static int connect_error(CURLcode c)
{
    /* CURLE_PARTIAL_FILE: the connection closed in the middle of the
     * answer (a restarted server, a proxy that gave up): worth another try */
    return c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST ||
           c == CURLE_COULDNT_RESOLVE_PROXY || c == CURLE_GOT_NOTHING ||
           c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR || c == CURLE_PARTIAL_FILE;
}

/* " (3 attempts)" once a request was retried, else "". */
static const char *attempts(int tries, char *buf, size_t bufsz)
{
    if (tries <= 0)
        return "";
    snprintf(buf, bufsz, " (%d attempts)", tries + 1);
    return buf;
}

/* The parsers' sentences start with "The model endpoint "; a failed task
 * should say which one. */
static void name_endpoint(const lb_model *m, char *err, size_t errsz)
{
    static const char pfx[] = "The model endpoint ";
    size_t pl = sizeof pfx - 1;
    if (strncmp(err, pfx, pl) != 0)
        return;
    char *rest = strdup(err + pl);
    if (rest) {
        snprintf(err, errsz, "%s%s %s", pfx, m->shown_url, rest);
        free(rest);
    }
}

static int http_retryable(long code)
{
    /* 529: Anthropic's "overloaded" */
    return code == 429 || code == 500 || code == 502 || code == 503 || code == 504 || code == 529;
}

/* The wait before retry number n (1-based): exponential from base, with
 * jitter (50-100 %) so that many agents do not come back at once. */
static long backoff_ms(const lb_model *m, int n)
{
    long ms = (long)m->retry_base_ms << (n - 1 < 6 ? n - 1 : 6);
    if (ms > LB_BACKOFF_MAX_MS)
        ms = LB_BACKOFF_MAX_MS;
    static unsigned seed;
    if (!seed)
        seed = (unsigned)lb_mono_ms() ^ (unsigned)getpid();
    return ms / 2 + (long)(rand_r(&seed) % (unsigned)(ms / 2 + 1));
}

/* Retry-After in seconds (the HTTP-date form is not used by model APIs),
 * capped; -1 when absent. */
static long retry_after_ms(CURL *c)
{
    struct curl_header *h = NULL;
    if (curl_easy_header(c, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK || !h || !h->value)
        return -1;
    long s = strtol(h->value, NULL, 10);
    if (s <= 0)
        return -1;
    return (s > LB_RETRY_AFTER_MAX_S ? LB_RETRY_AFTER_MAX_S : s) * 1000L;
}

/* Counts one failed attempt (retried or not) in llmbox_model_errors_total
 * {model, kind}; the agent moves it into the store (sink_store.c). */
static void count_error(const lb_model *m, const char *kind)
{
    char labels[LB_METRIC_LABELS_MAX] = "";
    LB_IGNORE(lb_metrics_label(labels, sizeof labels, "model", m->name)); /* bounded names fit; one that does not is left out */
    LB_IGNORE(lb_metrics_label(labels, sizeof labels, "kind", kind)); /* bounded names fit; one that does not is left out */
    lb_metrics_add(lb_metrics_proc(), "llmbox_model_errors_total", labels, "", 1);
}

/* The kind of an HTTP error answer that is not a context-length error. */
static const char *http_error_kind(long code)
{
    if (code == 429)
        return "http_429";
    if (code == 401 || code == 403)
        return "auth";
    if (code >= 500 && code <= 599)
        return "http_5xx";
    if (code >= 400 && code <= 499)
        return "http_4xx";
    return "http_other";
}

int lb_model_chat(lb_model *m, const cJSON *messages, const cJSON *tools, lb_model_reply *r,
                  char *err, size_t errsz)
{
    if (m->provider == LB_PROVIDER_REPLAY)
        return lb_replay_next(m, r, err, errsz);
    memset(r, 0, sizeof *r);
    CURL *c = m->curl;
    struct curl_slist *hdrs = NULL;
    resp_buf rb = {.toobig = 0};
    lb_buf_init(&rb.b, LB_MODEL_MAX_RESPONSE);
    lb_buf *resp_b = &rb.b;
    int rc = LB_E_PROTO;
    int ctx_retried = 0;
    char *body = lb_model_request_body(m, messages, tools);
    if (!body) {
        snprintf(err, errsz, "Out of memory while building the model request.");
        rc = LB_E_NOMEM;
        goto out;
    }
    hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
    if (m->auth[0])
        hdrs = curl_slist_append(hdrs, m->auth);
    if (m->provider == LB_PROVIDER_ANTHROPIC)
        hdrs = curl_slist_append(hdrs, "anthropic-version: 2023-06-01");
    if (!hdrs) {
        rc = LB_E_NOMEM;
        snprintf(err, errsz, "Out of memory while building the model request.");
        goto out;
    }

    int tries = 0;
    for (;;) {
        char cerr[CURL_ERROR_SIZE] = "";
        m->last_request_bytes = strlen(body);
        lb_buf_reset(resp_b);
        rb.toobig = 0;
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, m->url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        /* a Content-Length over the cap is refused before a byte of the
         * body is read; without one, on_body stops at the cap */
        curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)LB_MODEL_MAX_RESPONSE);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &rb);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)m->cancel);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)m->timeout_s);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
        curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(c, CURLOPT_USERAGENT, "llmbox/0.1");
        m->refused[0] = '\0';
        if (m->allow) {
            /* a task's own URL: each connection's address is checked, no
             * proxy stands between (it would be what is checked), and a
             * redirect is not followed (curl's default, said again) */
            curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_checked);
            curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, m);
            curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
            curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        }
        int64_t t0 = lb_mono_ms();
        CURLcode cc = curl_easy_perform(c);
        lb_debug("model request to %s: curl %d in %lld ms", m->shown_url, (int)cc,
                 (long long)(lb_mono_ms() - t0));
        if (m->cancel && *m->cancel) {
            rc = LB_E_CANCELLED;
            snprintf(err, errsz, "The task was cancelled.");
            goto out;
        }
        if ((cc == CURLE_WRITE_ERROR && rb.toobig) || cc == CURLE_FILESIZE_EXCEEDED) {
            count_error(m, "bad_reply");
            snprintf(err, errsz, "The model endpoint %s sent a response over %u MiB; it was not read further.",
                     m->shown_url, LB_MODEL_MAX_RESPONSE >> 20);
            rc = LB_E_PROTO;
            goto out;
        }
        long wait_ms = -1; /* >= 0: retry after that long */
        long code = 0;
        if (cc != CURLE_OK && m->refused[0]) {
            count_error(m, "connection");
            snprintf(err, errsz, "The model endpoint %s is not one this service lets a task reach: it resolves to "
                     "%s, which the operator's rollout_model_url_allow does not list (loopback, link-local and "
                     "private addresses are refused unless listed).", m->shown_url, m->refused);
            rc = LB_E_DENIED;
            goto out;
        }
        if (cc != CURLE_OK) {
            const char *why = cerr[0] ? cerr : curl_easy_strerror(cc);
            count_error(m, cc == CURLE_OPERATION_TIMEDOUT ? "timeout" : "connection");
            if ((connect_error(cc) || cc == CURLE_OPERATION_TIMEDOUT) && tries < m->retries) {
                wait_ms = backoff_ms(m, tries + 1);
                lb_info("model endpoint %s: %s; retrying in %ld ms", m->shown_url, why, wait_ms);
            } else {
                char att[32];
                curl_off_t got = -1, want = -1;
                curl_easy_getinfo(c, CURLINFO_SIZE_DOWNLOAD_T, &got);
                curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &want);
                if (cc == CURLE_OPERATION_TIMEDOUT)
                    snprintf(err, errsz, "The model endpoint %s did not answer within %d s%s.", m->shown_url,
                             m->timeout_s, attempts(tries, att, sizeof att));
                else if (cc == CURLE_PARTIAL_FILE && want > 0)
                    snprintf(err, errsz, "The model endpoint %s closed the connection before the whole answer "
                             "arrived (%lld of %lld bytes)%s.", m->shown_url, (long long)got, (long long)want,
                             attempts(tries, att, sizeof att));
                else if (cc == CURLE_PARTIAL_FILE)
                    snprintf(err, errsz, "The model endpoint %s closed the connection before the whole answer "
                             "arrived%s.", m->shown_url, attempts(tries, att, sizeof att));
                else
                    snprintf(err, errsz, "The model endpoint %s is not reachable: %s%s", m->shown_url,
                             curl_easy_strerror(cc), attempts(tries, att, sizeof att));
                rc = LB_E_UNAVAILABLE;
                goto out;
            }
        } else {
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
            if (code >= 200 && code < 300) {
                rc = m->provider == LB_PROVIDER_ANTHROPIC
                         ? lb_parse_anthropic_response(resp_b->data, resp_b->len, r, err, errsz)
                         : lb_parse_chat_response_tokens(resp_b->data, resp_b->len, r, m->capture_tokens, err,
                                                         errsz);
                if (rc != LB_OK) {
                    count_error(m, "bad_reply");
                    name_endpoint(m, err, errsz);
                    if (m->allow && !body_is_json(resp_b->data, resp_b->len))
                        snprintf(err, errsz, "The model endpoint %s sent a response that is not JSON (%zu bytes, "
                                 "not shown since the task chose the URL).", m->shown_url, resp_b->len);
                }
                goto out;
            }
            if (http_retryable(code) && tries < m->retries) {
                count_error(m, http_error_kind(code));
                long ra = retry_after_ms(c);
                wait_ms = ra >= 0 ? ra : backoff_ms(m, tries + 1) * 4;
                lb_info("model endpoint %s answered HTTP %ld; retrying in %ld ms", m->shown_url, code, wait_ms);
            }
        }
        if (wait_ms >= 0) {
            tries++;
            if (nap(m, wait_ms)) {
                rc = LB_E_CANCELLED;
                snprintf(err, errsz, "The task was cancelled.");
                goto out;
            }
            continue;
        }

        char emsg[400];
        answer_error_text(m, resp_b->data, resp_b->len, emsg, sizeof emsg);
        long limit = -1, prompt = -1;
        /* numbers read from a caller's non-JSON answer would be a read back too */
        int ctx_err = (!m->allow || body_is_json(resp_b->data, resp_b->len)) &&
                      lb_context_error(code, resp_b->data, resp_b->len, &limit, &prompt);
        count_error(m, ctx_err ? "context_length" : http_error_kind(code));
        if (ctx_err) {
            /* a smaller completion may still fit: once */
            long next = ctx_retried ? 0
                                    : lb_context_retry_tokens(m->max_tokens, limit, prompt,
                                                              m->cfg ? m->cfg->context_length : 0);
            if (next > 0) {
                lb_info("model endpoint %s: the request does not fit the context (%s); retrying with "
                        "max_tokens %ld", m->shown_url, emsg, next);
                m->max_tokens = (int)next; /* kept for the next turns too */
                free(body);
                body = lb_model_request_body(m, messages, tools);
                if (!body) {
                    snprintf(err, errsz, "Out of memory while building the model request.");
                    rc = LB_E_NOMEM;
                    goto out;
                }
                ctx_retried = 1;
                continue;
            }
            if (ctx_retried)
                snprintf(err, errsz, "The conversation no longer fits the model's context, even with "
                                     "max_tokens lowered to %d (%s answered HTTP %ld: %s)",
                         m->max_tokens, m->shown_url, code, emsg);
            else if (limit > 0 && prompt > 0)
                snprintf(err, errsz, "The conversation no longer fits the model's context: the prompt "
                                     "has %ld tokens and the context %ld (%s answered HTTP %ld: %s)",
                         prompt, limit, m->shown_url, code, emsg);
            else
                snprintf(err, errsz, "The conversation no longer fits the model's context (%s answered "
                                     "HTTP %ld: %s)", m->shown_url, code, emsg);
            rc = LB_E_TOOBIG;
            goto out;
        }
        if (code == 401 || code == 403) {
            /* no retry: a refused key stays refused */
            if (m->key_env[0])
                snprintf(err, errsz, "The model endpoint %s refused the API key from $%s (HTTP %ld%s%s).",
                         m->shown_url, m->key_env, code, emsg[0] ? ": " : "", emsg);
            else
                snprintf(err, errsz, "The model endpoint %s refused the request without an API key "
                                     "(HTTP %ld%s%s); set api_key_env for model \"%s\".",
                         m->shown_url, code, emsg[0] ? ": " : "", emsg, m->name);
            rc = LB_E_DENIED;
            goto out;
        }
        char att[32];
        snprintf(err, errsz, "The model endpoint %s answered HTTP %ld%s%s%s", m->shown_url, code,
                 emsg[0] ? ": " : "", emsg, attempts(tries, att, sizeof att));
        rc = LB_E_PROTO;
        goto out;
    }
out:
    if (c)
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(hdrs);
    lb_buf_free(resp_b);
    free(body);
    return rc;
}
