/* The model client over libcurl, shared by every provider: endpoint and
 * key set-up, the POST with its retries (connection failures, 429/5xx with
 * Retry-After), cancellation and the sentences shown when it fails. The
 * request bodies and the response parsers are per provider: OpenAI-
 * compatible chat completions (model_openai.c, toolcall_parse.c) and the
 * Anthropic Messages API (model_anthropic.c). */
#include "agent/agent.h"
#include "agent/text.h"
#include "common/buf.h"
#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LB_MODEL_CONNECT_RETRIES 2     /* after the first try */
#define LB_MODEL_HTTP_RETRIES 2
#define LB_RETRY_AFTER_MAX_S 20

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

int lb_model_init(lb_model *m, const char *model_name, volatile int *cancel, char *err,
                  size_t errsz)
{
    memset(m, 0, sizeof *m);
    const lb_config *cfg = lb_cfg();
    if (!strcmp(cfg->llm_provider, "replay")) {
        /* no endpoint: a recorded run played back (model_replay.c) */
        const char *file = getenv("LLMBOX_REPLAY_FILE");
        int rc = lb_replay_load(file, &m->replay, err, errsz);
        if (rc != LB_OK)
            return rc;
        m->provider = LB_PROVIDER_REPLAY;
        const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
        snprintf(m->url, sizeof m->url, "replay:%s", file);
        snprintf(m->shown_url, sizeof m->shown_url, "replay:%s", base);
        snprintf(m->model, sizeof m->model, "%s", model_name && *model_name ? model_name : cfg->llm_model);
        m->cancel = cancel;
        return LB_OK;
    }
    const char *mode = getenv("LLMBOX_LLM_TOOL_MODE");
    if (mode && *mode && strcmp(mode, "native")) {
        if (strcmp(mode, "text")) {
            snprintf(err, errsz, "LLMBOX_LLM_TOOL_MODE is '%.40s'; use native or text.", mode);
            return LB_E_INVAL;
        }
        if (!strcmp(cfg->llm_provider, "anthropic")) {
            snprintf(err, errsz, "LLMBOX_LLM_TOOL_MODE=text works with the openai provider only.");
            return LB_E_INVAL;
        }
        m->tool_mode = LB_TOOL_MODE_TEXT;
    }
    char base[LB_CFG_PATH];
    snprintf(base, sizeof base, "%s", cfg->llm_url);
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        base[--bl] = '\0';
    if (!bl || (strncmp(base, "http://", 7) && strncmp(base, "https://", 8))) {
        snprintf(err, errsz, "The model URL '%s' is not an http:// or https:// URL.", base);
        return LB_E_INVAL;
    }
    const char *prov = cfg->llm_provider;
    if (!*prov || !strcmp(prov, "openai")) {
        m->provider = LB_PROVIDER_OPENAI;
    } else if (!strcmp(prov, "anthropic")) {
        m->provider = LB_PROVIDER_ANTHROPIC;
    } else {
        snprintf(err, errsz, "LLMBOX_LLM_PROVIDER is '%.40s'; use openai, anthropic or replay.", prov);
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
    snprintf(m->model, sizeof m->model, "%s",
             model_name && *model_name ? model_name : cfg->llm_model);
    if (m->provider == LB_PROVIDER_ANTHROPIC) {
        /* cfg's key is LLMBOX_LLM_KEY or ANTHROPIC_API_KEY for this provider */
        if (cfg->llm_key[0])
            snprintf(m->auth, sizeof m->auth, "x-api-key: %s", cfg->llm_key);
        const char *mt = getenv("LLMBOX_LLM_MAX_TOKENS");
        long v = mt && *mt ? strtol(mt, NULL, 10) : 0;
        m->max_tokens = v > 0 && v <= 1000000 ? (int)v : 8192;
    } else if (cfg->llm_key[0]) {
        snprintf(m->auth, sizeof m->auth, "Authorization: Bearer %s", cfg->llm_key);
    }
    m->timeout_s = cfg->llm_timeout_s > 0 ? cfg->llm_timeout_s : 600;
    m->cancel = cancel;
    m->retry_base_ms = 250;

    /* Sampling parameters and anything else a server wants (temperature,
     * top_p, max_tokens, chat_template_kwargs ...) as a JSON object. */
    const char *extra = getenv("LLMBOX_LLM_EXTRA_BODY");
    if (extra && *extra) {
        m->extra_body = cJSON_Parse(extra);
        if (!cJSON_IsObject(m->extra_body)) {
            cJSON_Delete(m->extra_body);
            m->extra_body = NULL;
            snprintf(err, errsz, "LLMBOX_LLM_EXTRA_BODY is not a JSON object.");
            return LB_E_INVAL;
        }
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    m->curl = curl_easy_init();
    if (!m->curl) {
        cJSON_Delete(m->extra_body);
        m->extra_body = NULL;
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
    /* the key lived in auth; do not leave it in freed memory */
    explicit_bzero(m->auth, sizeof m->auth);
    memset(m, 0, sizeof *m);
}

char *lb_model_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools)
{
    return m->provider == LB_PROVIDER_ANTHROPIC ? lb_anthropic_request_body(m, messages, tools)
                                                : lb_openai_request_body(m, messages, tools);
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
    return c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST ||
           c == CURLE_COULDNT_RESOLVE_PROXY || c == CURLE_GOT_NOTHING ||
           c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR;
}

static int http_retryable(long code)
{
    /* 529: Anthropic's "overloaded" */
    return code == 429 || code == 500 || code == 502 || code == 503 || code == 504 || code == 529;
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

    int conn_tries = 0, http_tries = 0;
    long backoff = m->retry_base_ms;
    for (;;) {
        char cerr[CURL_ERROR_SIZE] = "";
        lb_buf_reset(resp_b);
        rb.toobig = 0;
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, m->url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
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
        int64_t t0 = lb_mono_ms();
        CURLcode cc = curl_easy_perform(c);
        lb_debug("model request to %s: curl %d in %lld ms", m->shown_url, (int)cc,
                 (long long)(lb_mono_ms() - t0));
        if (m->cancel && *m->cancel) {
            rc = LB_E_CANCELLED;
            snprintf(err, errsz, "The task was cancelled.");
            goto out;
        }
        if (cc == CURLE_WRITE_ERROR && rb.toobig) {
            snprintf(err, errsz, "The model endpoint %s sent a response over %u MiB.", m->shown_url,
                     LB_MODEL_MAX_RESPONSE >> 20);
            rc = LB_E_PROTO;
            goto out;
        }
        if (cc != CURLE_OK) {
            const char *why = cerr[0] ? cerr : curl_easy_strerror(cc);
            if (connect_error(cc) && conn_tries < LB_MODEL_CONNECT_RETRIES) {
                conn_tries++;
                lb_info("model endpoint %s: %s; retrying in %ld ms", m->shown_url, why, backoff);
                if (nap(m, backoff)) {
                    rc = LB_E_CANCELLED;
                    snprintf(err, errsz, "The task was cancelled.");
                    goto out;
                }
                backoff *= 2;
                continue;
            }
            if (cc == CURLE_OPERATION_TIMEDOUT)
                snprintf(err, errsz, "The model endpoint %s did not answer within %d s.", m->shown_url,
                         m->timeout_s);
            else
                snprintf(err, errsz, "The model endpoint %s is not reachable: %s", m->shown_url,
                         curl_easy_strerror(cc));
            rc = LB_E_UNAVAILABLE;
            goto out;
        }
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200 && code < 300) {
            rc = m->provider == LB_PROVIDER_ANTHROPIC
                     ? lb_parse_anthropic_response(resp_b->data, resp_b->len, r, err, errsz)
                     : lb_parse_chat_response(resp_b->data, resp_b->len, r, err, errsz);
            goto out;
        }
        if (http_retryable(code) && http_tries < LB_MODEL_HTTP_RETRIES) {
            http_tries++;
            long wait_ms = 1000L << (http_tries - 1);
            struct curl_header *h = NULL;
            if (curl_easy_header(c, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK && h &&
                h->value) {
                long s = strtol(h->value, NULL, 10);
                if (s > 0)
                    wait_ms = (s > LB_RETRY_AFTER_MAX_S ? LB_RETRY_AFTER_MAX_S : s) * 1000L;
            }
            lb_info("model endpoint %s answered HTTP %ld; retrying in %ld ms", m->shown_url, code, wait_ms);
            if (nap(m, wait_ms)) {
                rc = LB_E_CANCELLED;
                snprintf(err, errsz, "The task was cancelled.");
                goto out;
            }
            continue;
        }
        char emsg[400];
        lb_model_error_text(resp_b->data, resp_b->len, emsg, sizeof emsg);
        snprintf(err, errsz, "The model endpoint %s answered HTTP %ld%s%s", m->shown_url, code,
                 emsg[0] ? ": " : "", emsg);
        rc = (code == 401 || code == 403) ? LB_E_DENIED : LB_E_PROTO;
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
