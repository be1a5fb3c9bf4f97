/* Named models: the keys of a [model "NAME"] section, the model "default"
 * of the LLMBOX_LLM_* variables, and the lookups (the contract is
 * config.h and config_priv.h). */
#include "config_priv.h"
#include "status.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_CFG_DEFAULT_URL "http://127.0.0.1:8000/v1"

typedef int (*lb_model_setter)(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz);

typedef struct lb_model_key {
    const char *name;
    lb_model_setter set;
} lb_model_key;

static int m_dbl(double *dst, const char *v, double lo, double hi, char *why, size_t whysz)
{
    char *end;
    errno = 0;
    double x = *v ? strtod(v, &end) : NAN;
    if (!*v || errno || *end || !isfinite(x) || x < lo || x > hi) {
        snprintf(why, whysz, "must be a number from %g to %g", lo, hi);
        return LB_E_INVAL;
    }
    *dst = x;
    return LB_OK;
}

static int m_int(int *dst, const char *v, long long lo, long long hi, char *why, size_t whysz)
{
    long long x;
    if (lb_parse_ll(v, lo, hi, &x) != LB_OK) {
        snprintf(why, whysz, "must be a whole number from %lld to %lld", lo, hi);
        return LB_E_INVAL;
    }
    *dst = (int)x;
    return LB_OK;
}

static int m_str(char *dst, size_t dstsz, const char *v, char *why, size_t whysz)
{
    if (!lb_cfgi_printable(v)) {
        snprintf(why, whysz, "contains control characters");
        return LB_E_INVAL;
    }
    if (strlen(v) >= dstsz) {
        snprintf(why, whysz, "is longer than %zu characters", dstsz - 1);
        return LB_E_TOOBIG;
    }
    memcpy(dst, v, strlen(v) + 1);
    return LB_OK;
}

static int m_provider(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz)
{
    (void)home;
    if (strcmp(v, "openai") && strcmp(v, "anthropic") && strcmp(v, "replay")) {
        snprintf(why, whysz, "must be openai, anthropic or replay");
        return LB_E_INVAL;
    }
    return m_str(m->provider, sizeof m->provider, v, why, whysz);
}

static int m_url(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz)
{
    (void)home;
    /* the scheme is checked once the provider is known: replay needs no URL */
    return m_str(m->base_url, 1001, v, why, whysz);
}

static int m_model(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz)
{
    (void)home;
    if (!*v) {
        snprintf(why, whysz, "must not be empty");
        return LB_E_INVAL;
    }
    return m_str(m->model, sizeof m->model, v, why, whysz);
}

static int m_key_env(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz)
{
    (void)home;
    int ok = (v[0] >= 'A' && v[0] <= 'Z') || (v[0] >= 'a' && v[0] <= 'z') || v[0] == '_';
    for (const char *p = v; ok && *p; p++)
        ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
    if (!ok || strlen(v) >= sizeof m->api_key_env) {
        snprintf(why, whysz, "must be the NAME of an environment variable (like QWEN_API_KEY), "
                             "not the key itself");
        return LB_E_INVAL;
    }
    return m_str(m->api_key_env, sizeof m->api_key_env, v, why, whysz);
}

static int m_replay(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz)
{
    if (!*v || !lb_cfgi_printable(v) || lb_cfgi_join_path(m->replay_file, sizeof m->replay_file, home, v) != LB_OK) {
        snprintf(why, whysz, "must be a path of at most %zu characters", sizeof m->replay_file - 1);
        return LB_E_INVAL;
    }
    return LB_OK;
}

static int m_extra(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz)
{
    (void)home;
    if (strlen(v) >= sizeof m->extra_body) {
        snprintf(why, whysz, "is longer than %zu bytes", sizeof m->extra_body - 1);
        return LB_E_TOOBIG;
    }
    cJSON *j = cJSON_Parse(v);
    int ok = cJSON_IsObject(j);
    cJSON_Delete(j);
    if (!ok) {
        snprintf(why, whysz, "must be a JSON object, like {\"chat_template_kwargs\":{\"enable_thinking\":true}}");
        return LB_E_INVAL;
    }
    memcpy(m->extra_body, v, strlen(v) + 1);
    return LB_OK;
}

static int m_tool_mode(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz)
{
    (void)home;
    if (!strcmp(v, "native"))
        m->tool_mode = LB_CFG_TOOLS_NATIVE;
    else if (!strcmp(v, "text"))
        m->tool_mode = LB_CFG_TOOLS_TEXT;
    else {
        snprintf(why, whysz, "must be native or text");
        return LB_E_INVAL;
    }
    return LB_OK;
}

/* The names the tools are offered under: checkpoints trained with the
 * official LLM-in-Sandbox runner know its names (agent/tool_names.c). */
static int m_tool_names(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz)
{
    (void)home;
    if (!strcmp(v, "llmbox"))
        m->tool_names = 0;
    else if (!strcmp(v, "official"))
        m->tool_names = 1;
    else {
        snprintf(why, whysz, "must be llmbox or official");
        return LB_E_INVAL;
    }
    return LB_OK;
}

/* Whether to ask the server for the exact token ids and log-probabilities
 * of every turn (agent/tokens.h); a task may say otherwise (task option
 * capture_tokens). */
static int m_capture_tokens(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz)
{
    (void)home;
    if (!strcmp(v, "true") || !strcmp(v, "1"))
        m->capture_tokens = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "0"))
        m->capture_tokens = 0;
    else {
        snprintf(why, whysz, "must be true or false");
        return LB_E_INVAL;
    }
    return LB_OK;
}

#define M_DBL(fname, lo, hi)                                                                      \
    static int m_##fname(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz) \
    {                                                                                             \
        (void)home;                                                                               \
        return m_dbl(&m->fname, v, lo, hi, why, whysz);                                           \
    }
#define M_INT(fname, lo, hi)                                                                      \
    static int m_##fname(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz) \
    {                                                                                             \
        (void)home;                                                                               \
        return m_int(&m->fname, v, lo, hi, why, whysz);                                           \
    }
M_DBL(temperature, 0, 2)
M_DBL(top_p, 0, 1)
M_DBL(min_p, 0, 1)
M_DBL(repetition_penalty, 0.01, 10)
M_INT(top_k, -1, 100000)
M_INT(max_tokens, 1, 10000000)
M_INT(timeout_s, 1, 86400)
M_INT(retries, 0, 10)
M_INT(context_length, 0, 100000000)

/* mcp = a, b: names of [mcp] sections, checked against them once every
 * section is read (config_mcp.c) */
static int m_mcp(lb_model_cfg *m, const char *home, const char *v, char *why, size_t whysz)
{
    (void)home;
    if (strlen(v) >= sizeof m->mcp || strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-, ")
                                           != strlen(v)) {
        snprintf(why, whysz, "must be names of [mcp \"NAME\"] sections separated by commas, at most %d bytes",
                 LB_CFG_MCP_LIST - 1);
        return LB_E_INVAL;
    }
    snprintf(m->mcp, sizeof m->mcp, "%s", v);
    return LB_OK;
}

static const lb_model_key lb_model_keys[] = {
    {"mcp", m_mcp},
    {"provider", m_provider},
    {"base_url", m_url},
    {"model", m_model},
    {"api_key_env", m_key_env},
    {"replay_file", m_replay},
    {"temperature", m_temperature},
    {"top_p", m_top_p},
    {"top_k", m_top_k},
    {"min_p", m_min_p},
    {"repetition_penalty", m_repetition_penalty},
    {"max_tokens", m_max_tokens},
    {"extra_body", m_extra},
    {"tool_mode", m_tool_mode},
    {"tool_names", m_tool_names},
    {"timeout_s", m_timeout_s},
    {"retries", m_retries},
    {"context_length", m_context_length},
    {"capture_tokens", m_capture_tokens},
};
#define LB_N_MODEL_KEYS (sizeof lb_model_keys / sizeof lb_model_keys[0])

static const lb_model_key *model_key(const char *name)
{
    for (size_t i = 0; i < LB_N_MODEL_KEYS; i++)
        if (!strcmp(lb_model_keys[i].name, name))
            return &lb_model_keys[i];
    return NULL;
}

lb_model_cfg *lb_cfgi_find_model(lb_config *c, const char *name)
{
    for (int i = 0; i < c->n_models; i++)
        if (!strcmp(c->models[i].name, name))
            return &c->models[i];
    return NULL;
}

static lb_model_cfg *add_model(lb_config *c, const char *name, const char *origin)
{
    if (c->n_models == LB_CFG_MAX_MODELS)
        return NULL;
    lb_model_cfg *m = &c->models[c->n_models++];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->origin, sizeof m->origin, "%s", origin);
    m->temperature = m->top_p = m->min_p = m->repetition_penalty = NAN;
    m->top_k = -1;
    m->retries = 2;
    return m;
}

int lb_cfgi_is_model_key(const char *name) { return model_key(name) != NULL; }

int lb_cfg_add_endpoint_model(lb_config *cfg, const char *base, const char *url, const char *id)
{
    const lb_model_cfg *b = lb_cfg_model(cfg, base);
    if (!b)
        return LB_E_NOTFOUND;
    if (strcmp(b->provider, "openai"))
        return LB_E_INVAL;
    if (strlen(url) >= sizeof b->base_url || (id && strlen(id) >= sizeof b->model))
        return LB_E_TOOBIG;
    lb_model_cfg copy = *b;
    lb_model_cfg *m = lb_cfgi_find_model(cfg, LB_MODEL_ENDPOINT_TASK);
    if (!m && !(m = add_model(cfg, LB_MODEL_ENDPOINT_TASK, "")))
        return LB_E_TOOBIG;
    *m = copy; /* its sampling settings, tool mode, limits */
    snprintf(m->name, sizeof m->name, "%s", LB_MODEL_ENDPOINT_TASK);
    snprintf(m->origin, sizeof m->origin, "the task's model_url");
    snprintf(m->base_url, sizeof m->base_url, "%s", url);
    if (id && id[0])
        snprintf(m->model, sizeof m->model, "%s", id);
    m->api_key_env[0] = '\0'; /* the operator's key never goes to a client's URL */
    m->extra_body[0] = '\0';  /* nor what the operator adds for their own endpoint */
    return LB_OK;
}

int lb_cfg_add_replay_model(lb_config *cfg, const char *file)
{
    if (strlen(file) >= sizeof cfg->models[0].replay_file)
        return LB_E_TOOBIG;
    lb_model_cfg *m = lb_cfgi_find_model(cfg, LB_MODEL_REPLAY_TASK);
    if (!m && !(m = add_model(cfg, LB_MODEL_REPLAY_TASK, "a replay of an earlier task")))
        return LB_E_TOOBIG;
    snprintf(m->provider, sizeof m->provider, "replay");
    snprintf(m->model, sizeof m->model, "replay");
    snprintf(m->replay_file, sizeof m->replay_file, "%s", file);
    return LB_OK;
}

/* The LLMBOX_LLM_* variables describe the model named "default" (the
 * configuration of llmbox before llmbox.conf); they override a
 * [model "default"] of the file like any variable overrides the file. */
static const struct {
    const char *env, *env_alt, *key;
} lb_default_model_env[] = {
    {"LLMBOX_LLM_PROVIDER", NULL, "provider"},
    {"LLMBOX_LLM_URL", "OPENAI_BASE_URL", "base_url"},
    {"LLMBOX_LLM_MODEL", NULL, "model"},
    {"LLMBOX_LLM_TOOL_MODE", NULL, "tool_mode"},
    {"LLMBOX_LLM_MAX_TOKENS", NULL, "max_tokens"},
    {"LLMBOX_LLM_EXTRA_BODY", NULL, "extra_body"},
    {"LLMBOX_REPLAY_FILE", NULL, "replay_file"},
};

int lb_cfgi_apply_models(lb_config *c, const lb_conf *cf)
{
    char why[300], name[LB_CFG_SECTION_MAX];
    for (size_t i = 0; cf && i < cf->n; i++) {
        const lb_entry *e = &cf->e[i];
        if (!e->section[0] || lb_conf_user_section(e->section, name, sizeof name) ||
            lb_conf_secret_section(e->section, name, sizeof name) ||
            lb_conf_mcp_section(e->section, name, sizeof name))
            continue;
        if (!lb_conf_model_section(e->section, name, sizeof name))
            return lb_cfgi_fail(LB_E_INVAL,
                                "%s:%d: unknown section [%s]; sections are [model \"NAME\"], [user \"NAME\"], "
                                "[secret \"NAME\"] and [mcp \"NAME\"]",
                                cf->path, e->line, e->section);
        if (!lb_cfgi_model_name_ok(name))
            return lb_cfgi_fail(LB_E_INVAL,
                        "%s:%d: [%s]: a model name is 1 to %d letters, digits, '.', '-' or '_'", cf->path,
                        e->line, e->section, LB_CFG_MODEL_NAME - 1);
        lb_model_cfg *m = lb_cfgi_find_model(c, name);
        if (!m) {
            char origin[LB_CFG_PATH + 32];
            snprintf(origin, sizeof origin, "%s:%d", cf->path, e->line);
            if (!(m = add_model(c, name, origin)))
                return lb_cfgi_fail(LB_E_TOOBIG, "%s:%d: more than %d models", cf->path, e->line, LB_CFG_MAX_MODELS);
        }
        if (!strcmp(e->name, "api_key"))
            return lb_cfgi_fail(LB_E_INVAL,
                        "%s:%d: api_key: keys are never kept in llmbox.conf; put the key in an environment "
                        "variable and name that variable with api_key_env",
                        cf->path, e->line);
        const lb_model_key *k = model_key(e->name);
        if (!k)
            return lb_cfgi_fail(LB_E_INVAL, "%s:%d: unknown key '%s' in [%s]", cf->path, e->line, e->name, e->section);
        if (k->set(m, c->home, e->value, why, sizeof why) != LB_OK)
            return lb_cfgi_fail(LB_E_INVAL, "%s:%d: %s = %.200s: %s", cf->path, e->line, e->name, e->value, why);
    }

    /* the environment's model "default" */
    int from_env = 0;
    for (size_t i = 0; i < sizeof lb_default_model_env / sizeof lb_default_model_env[0]; i++)
        from_env |= lb_cfgi_env(lb_default_model_env[i].env, lb_default_model_env[i].env_alt) != NULL;
    lb_model_cfg *d = lb_cfgi_find_model(c, "default");
    int implicit = !d;
    if (!d && (from_env || c->n_models == 0)) {
        if (!(d = add_model(c, "default", "the environment (LLMBOX_LLM_*)")))
            return lb_cfgi_fail(LB_E_TOOBIG, "more than %d models", LB_CFG_MAX_MODELS);
        snprintf(d->base_url, sizeof d->base_url, "%s", LB_CFG_DEFAULT_URL);
    }
    if (d) {
        for (size_t i = 0; i < sizeof lb_default_model_env / sizeof lb_default_model_env[0]; i++) {
            const char *envn = lb_default_model_env[i].env, *alt = lb_default_model_env[i].env_alt;
            const char *v = lb_cfgi_env(envn, alt);
            if (!v)
                continue;
            const char *shown = getenv(envn) && *getenv(envn) ? envn : alt;
            if (model_key(lb_default_model_env[i].key)->set(d, c->home, v, why, sizeof why) != LB_OK)
                return lb_cfgi_fail(LB_E_INVAL, "%s=%.200s: %s", shown, v, why);
        }
        /* the key: LLMBOX_LLM_KEY, or the provider's usual variable for the
         * model that only the environment describes */
        if (lb_cfgi_env("LLMBOX_LLM_KEY", NULL))
            snprintf(d->api_key_env, sizeof d->api_key_env, "LLMBOX_LLM_KEY");
        else if (implicit && strcmp(d->provider, "replay"))
            snprintf(d->api_key_env, sizeof d->api_key_env, "%s",
                     !strcmp(d->provider, "anthropic") ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
    }

    for (int i = 0; i < c->n_models; i++) {
        lb_model_cfg *m = &c->models[i];
        if (!m->provider[0])
            snprintf(m->provider, sizeof m->provider, "openai");
        if (!m->model[0])
            snprintf(m->model, sizeof m->model, "%s", m->name);
        if (!strcmp(m->provider, "replay"))
            continue;
        if (!m->base_url[0])
            return lb_cfgi_fail(LB_E_INVAL, "[model \"%s\"] (%s) has no base_url", m->name, m->origin);
        if ((strncmp(m->base_url, "http://", 7) && strncmp(m->base_url, "https://", 8)) ||
            strpbrk(m->base_url, " \t"))
            return lb_cfgi_fail(LB_E_INVAL, "[model \"%s\"] (%s): the model URL '%s' is not an http:// or https:// URL",
                        m->name, m->origin, m->base_url);
        if (!strcmp(m->provider, "anthropic")) {
            if (m->tool_mode == LB_CFG_TOOLS_TEXT)
                return lb_cfgi_fail(LB_E_INVAL, "[model \"%s\"] (%s): tool_mode = text works with the openai provider only",
                            m->name, m->origin);
            if (!isnan(m->min_p) || !isnan(m->repetition_penalty))
                return lb_cfgi_fail(LB_E_INVAL,
                            "[model \"%s\"] (%s): the anthropic provider has no min_p or repetition_penalty",
                            m->name, m->origin);
        }
    }
    return LB_OK;
}

/* ---- lookups ------------------------------------------------------------- */

const lb_model_cfg *lb_cfg_model(const lb_config *cfg, const char *name)
{
    if (!name || !*name)
        name = cfg->default_model;
    for (int i = 0; i < cfg->n_models; i++)
        if (!strcmp(cfg->models[i].name, name))
            return &cfg->models[i];
    return NULL;
}

void lb_cfg_model_names(const lb_config *cfg, char *out, size_t outsz)
{
    size_t o = 0;
    if (outsz)
        out[0] = '\0';
    for (int i = 0; i < cfg->n_models && o < outsz; i++) {
        int w = snprintf(out + o, outsz - o, "%s%s", i ? ", " : "", cfg->models[i].name);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

const char *lb_model_cfg_key(const lb_model_cfg *m)
{
    if (!m || !m->api_key_env[0])
        return NULL;
    const char *v = getenv(m->api_key_env);
    return v && *v ? v : NULL;
}
