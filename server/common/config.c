/* Configuration: defaults < llmbox.conf < environment.
 *
 * The file is INI, read with libinih:
 *
 *     max_turns = 50                 ; global keys, before any section
 *     tools = bash, file_editor, finish
 *     default_model = qwen
 *
 *     [model "qwen"]                 ; or [model.qwen]
 *     provider = openai
 *     base_url = http://127.0.0.1:8000/v1
 *     api_key_env = QWEN_KEY         ; the variable's NAME; keys never go in files
 *
 * Reading happens in two steps: libinih's callback only collects
 * (section, key, value, line) entries (joining the indented continuation
 * lines of a long extra_body), then every entry is checked against the
 * tables below, so each error names its file:line. Global keys go through
 * the same setter whether the value comes from the file, the environment or
 * the built-in default: to add a setting, add one line to lb_keys[] (and a
 * field to lb_config). */
#include "config.h"
#include "status.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LB_CFG_MAX_ENTRIES 2000
#define LB_CFG_SECTION_MAX 96
#define LB_CFG_KEY_MAX 64
#define LB_CFG_DEFAULT_URL "http://127.0.0.1:8000/v1"
#define LB_CFG_DEFAULT_TOOLS "bash, file_editor, finish"

static lb_config lb_global_cfg;
static char lb_cfg_errbuf[1600];

const lb_config *lb_cfg(void) { return &lb_global_cfg; }
lb_config *lb_cfg_mut(void) { return &lb_global_cfg; }
const char *lb_config_error(void) { return lb_cfg_errbuf; }

/* ---- values -------------------------------------------------------------- */

typedef struct lb_cfg_key lb_cfg_key;
/* Sets the field of k from text v; on failure writes why (a phrase such as
 * "must be a whole number from 1 to 1000") and returns an lb_status. */
typedef int (*lb_cfg_setter)(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz);

struct lb_cfg_key {
    const char *name;       /* key in llmbox.conf */
    const char *env;        /* its environment variable */
    const char *env_alt;    /* read when env is unset (NULL: none) */
    lb_cfg_setter set;
    size_t off, size;       /* the field in lb_config */
    long long lo, hi;       /* integers: the range; paths: 0 relative to home, 1 to var_dir */
    const char *def;        /* the default as text, through the same setter (NULL: none) */
};

static void *field(lb_config *c, const lb_cfg_key *k) { return (char *)c + k->off; }

static int parse_ll(const char *v, long long lo, long long hi, long long *out)
{
    if (!*v)
        return LB_E_INVAL;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return LB_E_INVAL;
    *out = x;
    return LB_OK;
}

static int printable(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static int set_int(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    long long x;
    if (parse_ll(v, k->lo, k->hi, &x) != LB_OK) {
        snprintf(why, whysz, "must be a whole number from %lld to %lld", k->lo, k->hi);
        return LB_E_INVAL;
    }
    if (k->size == sizeof(int64_t))
        *(int64_t *)field(c, k) = x;
    else
        *(int *)field(c, k) = (int)x;
    return LB_OK;
}

/* MiB in the file and the environment, bytes in the field */
static int set_mib(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    long long x;
    if (parse_ll(v, k->lo, k->hi, &x) != LB_OK) {
        snprintf(why, whysz, "must be a whole number of MiB from %lld to %lld", k->lo, k->hi);
        return LB_E_INVAL;
    }
    *(uint64_t *)field(c, k) = (uint64_t)x << 20;
    return LB_OK;
}

static int set_str(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    if (!printable(v)) {
        snprintf(why, whysz, "contains control characters");
        return LB_E_INVAL;
    }
    if (strlen(v) >= k->size) {
        snprintf(why, whysz, "is longer than %zu characters", k->size - 1);
        return LB_E_TOOBIG;
    }
    memcpy(field(c, k), v, strlen(v) + 1);
    return LB_OK;
}

/* A path: relative ones are taken from $home (or var_dir for the default
 * of a key whose lo is 1). */
static int join_path(char *dst, size_t dstsz, const char *base, const char *v)
{
    int n = v[0] == '/' ? snprintf(dst, dstsz, "%s", v) : snprintf(dst, dstsz, "%s/%s", base, v);
    return (n < 0 || (size_t)n >= dstsz) ? LB_E_TOOBIG : LB_OK;
}

static int set_path(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    if (!*v || !printable(v)) {
        snprintf(why, whysz, "must be a path");
        return LB_E_INVAL;
    }
    if (join_path(field(c, k), k->size, c->home, v) != LB_OK) {
        snprintf(why, whysz, "is longer than %zu characters", k->size - 1);
        return LB_E_TOOBIG;
    }
    return LB_OK;
}

/* The default of a path key: rel under $home or var_dir. */
static int set_path_default(lb_config *c, const lb_cfg_key *k)
{
    return join_path(field(c, k), k->size, k->lo ? c->var_dir : c->home, k->def);
}

static int name_ok(const char *s, size_t max, const char *extra)
{
    size_t n = strlen(s);
    if (!n || n > max)
        return 0;
    for (const char *p = s; *p; p++) {
        char ch = *p;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              (extra && strchr(extra, ch))))
            return 0;
    }
    return 1;
}

static int model_name_ok(const char *s)
{
    return name_ok(s, LB_CFG_MODEL_NAME - 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ.-");
}

static int set_model_ref(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    if (*v && !model_name_ok(v)) {
        snprintf(why, whysz, "is not a model name (letters, digits, '.', '-', '_'; at most %d)",
                 LB_CFG_MODEL_NAME - 1);
        return LB_E_INVAL;
    }
    return set_str(c, k, v, why, whysz);
}

/* "bash, file_editor finish" or "all" */
static int set_tools(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    (void)k;
    c->n_tools = 0;
    c->tools_all = 0;
    char word[LB_CFG_KEY_MAX * 2];
    const char *p = v;
    int any = 0;
    while (*p) {
        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, ", \t");
        if (n >= sizeof word) {
            snprintf(why, whysz, "names a tool longer than %d characters", LB_CFG_TOOL_NAME - 1);
            return LB_E_INVAL;
        }
        memcpy(word, p, n);
        word[n] = '\0';
        p += n;
        any = 1;
        if (!strcmp(word, "all") || !strcmp(word, "*")) {
            c->tools_all = 1;
            continue;
        }
        if (!name_ok(word, LB_CFG_TOOL_NAME - 1, NULL)) {
            snprintf(why, whysz, "'%.64s' is not a tool name ([a-z0-9_], at most 64)", word);
            return LB_E_INVAL;
        }
        int dup = 0;
        for (int i = 0; i < c->n_tools; i++)
            dup |= !strcmp(c->tools[i], word);
        if (dup)
            continue;
        if (c->n_tools == LB_CFG_MAX_TOOLS) {
            snprintf(why, whysz, "lists more than %d tools", LB_CFG_MAX_TOOLS);
            return LB_E_TOOBIG;
        }
        memcpy(c->tools[c->n_tools++], word, strlen(word) + 1); /* name_ok: at most 64 */
    }
    if (!any) {
        snprintf(why, whysz, "lists no tool (say which to offer, e.g. \"%s\"; finish is always on)",
                 LB_CFG_DEFAULT_TOOLS);
        return LB_E_INVAL;
    }
    return LB_OK;
}

#define F(f) offsetof(lb_config, f), sizeof(((lb_config *)0)->f)
#define KEY_INT(name, env, f, def, lo, hi) {name, env, NULL, set_int, F(f), lo, hi, #def}
#define KEY_MIB(name, env, f, def, lo, hi) {name, env, NULL, set_mib, F(f), lo, hi, #def}
#define KEY_STR(name, env, f, def) {name, env, NULL, set_str, F(f), 0, 0, def}
#define KEY_PATH(name, env, f, base, rel) {name, env, NULL, set_path, F(f), base, 0, rel}

/* Applied in this order: paths relative to var_dir come after it. */
static const lb_cfg_key lb_keys[] = {
    KEY_PATH("var_dir", "LLMBOX_VAR", var_dir, 0, "var"),
    KEY_PATH("artifacts_dir", "LLMBOX_ARTIFACTS", artifacts_dir, 0, "artifacts"),
    KEY_PATH("plugin_dir", "LLMBOX_PLUGINS", plugin_dir, 0, "plugins"),
    KEY_PATH("prompts_dir", "LLMBOX_PROMPTS", prompts_dir, 0, "server/agent/prompts"),
    KEY_PATH("images_dir", "LLMBOX_IMAGES", images_dir, 0, "images"),
    KEY_PATH("image_store", "LLMBOX_IMAGE_STORE", image_store, 1, "images"),
    KEY_PATH("db_path", "LLMBOX_DB", db_path, 1, "web/llmbox.db"),
    KEY_PATH("web_socket", "LLMBOX_WEB_SOCKET", web_socket, 1, "web/web.sock"),
    KEY_PATH("sandboxd_socket", "LLMBOX_SANDBOXD_SOCKET", sandboxd_socket, 1, "run/sandboxd.sock"),
    KEY_STR("web_user", "LLMBOX_WEB_USER", web_user, ""),
    KEY_INT("web_threads", "LLMBOX_WEB_THREADS", web_threads, 32, 1, 1024),
    KEY_MIB("max_upload_mb", "LLMBOX_MAX_UPLOAD_MB", max_upload_bytes, 100, 1, 1 << 20),
    KEY_MIB("max_output_mb", "LLMBOX_MAX_OUTPUT_MB", max_output_bytes, 1024, 1, 1 << 20),
    KEY_INT("max_turns", "LLMBOX_MAX_TURNS", max_turns_default, 100, 1, 1000),
    KEY_INT("max_tasks", "LLMBOX_MAX_TASKS", max_concurrent_tasks, 16, 1, 4096),
    KEY_INT("cmd_timeout_s", "LLMBOX_CMD_TIMEOUT_S", cmd_timeout_s, 120, 1, 86400),
    KEY_INT("task_timeout_s", "LLMBOX_TASK_TIMEOUT_S", task_timeout_s, 3600, 1, 7 * 86400),
    KEY_INT("tool_timeout_s", "LLMBOX_TOOL_TIMEOUT_S", tool_timeout_s, 60, 1, 86400),
    KEY_INT("token_budget", "LLMBOX_TOKEN_BUDGET", token_budget, 65536, 0, 100000000),
    KEY_INT("token_budget_max", "LLMBOX_TOKEN_BUDGET_MAX", token_budget_max, 1048576, 1000, 100000000),
    KEY_INT("sandbox_memory_mib", "LLMBOX_SANDBOX_MEMORY_MIB", sandbox_memory_mib, 2048, 64, 1 << 20),
    KEY_INT("sandbox_pids", "LLMBOX_SANDBOX_PIDS", sandbox_pids, 512, 16, 1 << 22),
    KEY_STR("image", "LLMBOX_IMAGE", default_image, "default"),
    KEY_INT("llm_timeout_s", "LLMBOX_LLM_TIMEOUT_S", llm_timeout_s, 600, 1, 86400),
    {"tools", "LLMBOX_TOOLS", NULL, set_tools, F(tools), 0, 0, LB_CFG_DEFAULT_TOOLS},
    {"default_model", "LLMBOX_DEFAULT_MODEL", NULL, set_model_ref, F(default_model), 0, 0, ""},
};
#define LB_N_KEYS (sizeof lb_keys / sizeof lb_keys[0])

/* ---- models -------------------------------------------------------------- */

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
    if (parse_ll(v, lo, hi, &x) != LB_OK) {
        snprintf(why, whysz, "must be a whole number from %lld to %lld", lo, hi);
        return LB_E_INVAL;
    }
    *dst = (int)x;
    return LB_OK;
}

static int m_str(char *dst, size_t dstsz, const char *v, char *why, size_t whysz)
{
    if (!printable(v)) {
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
    if (!*v || !printable(v) || join_path(m->replay_file, sizeof m->replay_file, home, v) != LB_OK) {
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

static const lb_model_key lb_model_keys[] = {
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
    {"timeout_s", m_timeout_s},
    {"retries", m_retries},
    {"context_length", m_context_length},
};
#define LB_N_MODEL_KEYS (sizeof lb_model_keys / sizeof lb_model_keys[0])

static const lb_model_key *model_key(const char *name)
{
    for (size_t i = 0; i < LB_N_MODEL_KEYS; i++)
        if (!strcmp(lb_model_keys[i].name, name))
            return &lb_model_keys[i];
    return NULL;
}

static lb_model_cfg *find_model(lb_config *c, const char *name)
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

/* ---- the file ------------------------------------------------------------ */

typedef struct lb_entry {
    char section[LB_CFG_SECTION_MAX];
    char name[LB_CFG_KEY_MAX];
    char *value;
    int line;
} lb_entry;

typedef struct lb_conf {
    const char *path;
    const char *p, *end;        /* the reader's position in the file text */
    int lineno;                 /* of the line last handed to inih */
    int indented;               /* it started with a blank */
    lb_entry *e;
    size_t n, cap;
    char err[1200];
} lb_conf;

static int conf_fail(lb_conf *cf, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int conf_fail(lb_conf *cf, int line, const char *fmt, ...)
{
    if (cf->err[0])
        return 0;
    char msg[1000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(cf->err, sizeof cf->err, "%s:%d: %s", cf->path, line, msg);
    return 0;
}

/* inih's line reader (fgets-like), over the file text in memory: counts
 * lines, notes indentation (inih reads an indented line as the
 * continuation of the previous value), and refuses a line longer than
 * inih's buffer instead of letting it be cut in two. */
static char *conf_read(char *str, int num, void *stream)
{
    lb_conf *cf = stream;
    if (cf->err[0] || cf->p >= cf->end)
        return NULL;
    const char *nl = memchr(cf->p, '\n', (size_t)(cf->end - cf->p));
    size_t len = nl ? (size_t)(nl - cf->p) + 1 : (size_t)(cf->end - cf->p);
    cf->lineno++;
    if (len > (size_t)num - 1) {
        conf_fail(cf, cf->lineno,
                  "the line is longer than %d characters; put a long extra_body on indented "
                  "continuation lines",
                  num - 2);
        return NULL;
    }
    if (memchr(cf->p, '\0', len)) {
        conf_fail(cf, cf->lineno, "the line contains a NUL byte");
        return NULL;
    }
    memcpy(str, cf->p, len);
    str[len] = '\0';
    cf->indented = str[0] == ' ' || str[0] == '\t';
    cf->p += len;
    return str;
}

static int conf_entry(void *user, const char *section, const char *name, const char *value)
{
    lb_conf *cf = user;
    int line = cf->lineno;
    if (cf->err[0])
        return 0;
    lb_entry *last = cf->n ? &cf->e[cf->n - 1] : NULL;
    if (cf->indented && last && !strcmp(last->name, name) && !strcmp(last->section, section)) {
        if (strcmp(name, "extra_body"))
            return conf_fail(cf, line,
                             "this indented line would continue the value of '%s' (only extra_body may "
                             "span lines); do not indent keys",
                             name);
        size_t a = strlen(last->value), b = strlen(value);
        if (a + b + 2 > 2 * LB_CFG_EXTRA_MAX)
            return conf_fail(cf, last->line, "extra_body is longer than %d bytes", LB_CFG_EXTRA_MAX - 1);
        char *nv = realloc(last->value, a + b + 2);
        if (!nv)
            return conf_fail(cf, line, "out of memory");
        nv[a] = ' ';
        memcpy(nv + a + 1, value, b + 1);
        last->value = nv;
        return 1;
    }
    if (strlen(section) >= LB_CFG_SECTION_MAX)
        return conf_fail(cf, line, "the section name [%.40s...] is too long", section);
    if (strlen(name) >= LB_CFG_KEY_MAX)
        return conf_fail(cf, line, "the key '%.40s...' is too long", name);
    for (size_t i = 0; i < cf->n; i++)
        if (!strcmp(cf->e[i].name, name) && !strcmp(cf->e[i].section, section))
            return conf_fail(cf, line, "'%s' is set a second time%s%s%s (first on line %d)", name,
                             *section ? " in [" : "", section, *section ? "]" : "", cf->e[i].line);
    if (cf->n == LB_CFG_MAX_ENTRIES)
        return conf_fail(cf, line, "more than %d settings", LB_CFG_MAX_ENTRIES);
    if (cf->n == cf->cap) {
        size_t ncap = cf->cap ? cf->cap * 2 : 32;
        lb_entry *ne = realloc(cf->e, ncap * sizeof *ne);
        if (!ne)
            return conf_fail(cf, line, "out of memory");
        cf->e = ne;
        cf->cap = ncap;
    }
    lb_entry *e = &cf->e[cf->n];
    snprintf(e->section, sizeof e->section, "%s", section);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->line = line;
    if (!(e->value = strdup(value)))
        return conf_fail(cf, line, "out of memory");
    cf->n++;
    return 1;
}

static void conf_free(lb_conf *cf)
{
    for (size_t i = 0; i < cf->n; i++)
        free(cf->e[i].value);
    free(cf->e);
    cf->e = NULL;
    cf->n = cf->cap = 0;
}

/* Reads path (capped) and collects its entries. */
static int conf_parse(lb_conf *cf, const char *path)
{
    memset(cf, 0, sizeof *cf);
    cf->path = path;
    char *text = NULL;
    int rc = LB_E_IO;
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(cf->err, sizeof cf->err, "%s: cannot read the configuration file: %s", path, strerror(errno));
        return errno == ENOENT ? LB_E_NOTFOUND : LB_E_IO;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        /* /dev/null is accepted: "no file" on purpose */
        if (!(S_ISCHR(st.st_mode) && !strcmp(path, "/dev/null"))) {
            snprintf(cf->err, sizeof cf->err, "%s: not a regular file", path);
            goto out;
        }
    }
    text = malloc(LB_CFG_FILE_MAX + 1);
    if (!text) {
        rc = LB_E_NOMEM;
        goto out;
    }
    size_t len = fread(text, 1, LB_CFG_FILE_MAX + 1, f);
    if (ferror(f)) {
        snprintf(cf->err, sizeof cf->err, "%s: cannot read the configuration file: %s", path, strerror(errno));
        goto out;
    }
    if (len > LB_CFG_FILE_MAX) {
        snprintf(cf->err, sizeof cf->err, "%s: the configuration file is larger than %u KiB", path,
                 LB_CFG_FILE_MAX >> 10);
        rc = LB_E_TOOBIG;
        goto out;
    }
    cf->p = text;
    cf->end = text + len;
    int line = ini_parse_stream(conf_read, cf, conf_entry, cf);
    if (cf->err[0]) {
        rc = LB_E_INVAL;
        goto out;
    }
    if (line > 0) {
        snprintf(cf->err, sizeof cf->err, "%s:%d: not a 'key = value' line or a [section] header", path, line);
        rc = LB_E_INVAL;
        goto out;
    }
    if (line < 0) {
        snprintf(cf->err, sizeof cf->err, "%s: cannot parse the configuration file (out of memory)", path);
        rc = LB_E_NOMEM;
        goto out;
    }
    rc = LB_OK;
out:
    free(text);
    fclose(f);
    return rc;
}

/* [model "qwen"] or [model.qwen] -> qwen; NULL when not a model section. */
static int model_section(const char *section, char *name, size_t namesz)
{
    size_t n = strlen(section);
    if (!strncmp(section, "model.", 6)) {
        snprintf(name, namesz, "%s", section + 6);
        return 1;
    }
    if (!strncmp(section, "model ", 6) && n >= 8) {
        const char *q = section + 6;
        while (*q == ' ')
            q++;
        size_t qn = strlen(q);
        if (qn >= 2 && q[0] == '"' && q[qn - 1] == '"') {
            snprintf(name, namesz, "%.*s", (int)(qn - 2), q + 1);
            return 1;
        }
    }
    return 0;
}

/* ---- loading ------------------------------------------------------------- */

static const char *env_of(const char *a, const char *b)
{
    const char *v = a ? getenv(a) : NULL;
    if (v && *v)
        return v;
    v = b ? getenv(b) : NULL;
    return v && *v ? v : NULL;
}

static int fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lb_cfg_errbuf, sizeof lb_cfg_errbuf, fmt, ap);
    va_end(ap);
    return rc;
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

static int apply_models(lb_config *c, const lb_conf *cf)
{
    char why[300], name[LB_CFG_SECTION_MAX];
    for (size_t i = 0; cf && i < cf->n; i++) {
        const lb_entry *e = &cf->e[i];
        if (!e->section[0])
            continue;
        if (!model_section(e->section, name, sizeof name))
            return fail(LB_E_INVAL, "%s:%d: unknown section [%s]; models are [model \"NAME\"]", cf->path, e->line,
                        e->section);
        if (!model_name_ok(name))
            return fail(LB_E_INVAL,
                        "%s:%d: [%s]: a model name is 1 to %d letters, digits, '.', '-' or '_'", cf->path,
                        e->line, e->section, LB_CFG_MODEL_NAME - 1);
        lb_model_cfg *m = find_model(c, name);
        if (!m) {
            char origin[LB_CFG_PATH + 32];
            snprintf(origin, sizeof origin, "%s:%d", cf->path, e->line);
            if (!(m = add_model(c, name, origin)))
                return fail(LB_E_TOOBIG, "%s:%d: more than %d models", cf->path, e->line, LB_CFG_MAX_MODELS);
        }
        if (!strcmp(e->name, "api_key"))
            return fail(LB_E_INVAL,
                        "%s:%d: api_key: keys are never kept in llmbox.conf; put the key in an environment "
                        "variable and name that variable with api_key_env",
                        cf->path, e->line);
        const lb_model_key *k = model_key(e->name);
        if (!k)
            return fail(LB_E_INVAL, "%s:%d: unknown key '%s' in [%s]", cf->path, e->line, e->name, e->section);
        if (k->set(m, c->home, e->value, why, sizeof why) != LB_OK)
            return fail(LB_E_INVAL, "%s:%d: %s = %.200s: %s", cf->path, e->line, e->name, e->value, why);
    }

    /* the environment's model "default" */
    int from_env = 0;
    for (size_t i = 0; i < sizeof lb_default_model_env / sizeof lb_default_model_env[0]; i++)
        from_env |= env_of(lb_default_model_env[i].env, lb_default_model_env[i].env_alt) != NULL;
    lb_model_cfg *d = find_model(c, "default");
    int implicit = !d;
    if (!d && (from_env || c->n_models == 0)) {
        if (!(d = add_model(c, "default", "the environment (LLMBOX_LLM_*)")))
            return fail(LB_E_TOOBIG, "more than %d models", LB_CFG_MAX_MODELS);
        snprintf(d->base_url, sizeof d->base_url, "%s", LB_CFG_DEFAULT_URL);
    }
    if (d) {
        for (size_t i = 0; i < sizeof lb_default_model_env / sizeof lb_default_model_env[0]; i++) {
            const char *envn = lb_default_model_env[i].env, *alt = lb_default_model_env[i].env_alt;
            const char *v = env_of(envn, alt);
            if (!v)
                continue;
            const char *shown = getenv(envn) && *getenv(envn) ? envn : alt;
            if (model_key(lb_default_model_env[i].key)->set(d, c->home, v, why, sizeof why) != LB_OK)
                return fail(LB_E_INVAL, "%s=%.200s: %s", shown, v, why);
        }
        /* the key: LLMBOX_LLM_KEY, or the provider's usual variable for the
         * model that only the environment describes */
        if (env_of("LLMBOX_LLM_KEY", NULL))
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
            return fail(LB_E_INVAL, "[model \"%s\"] (%s) has no base_url", m->name, m->origin);
        if ((strncmp(m->base_url, "http://", 7) && strncmp(m->base_url, "https://", 8)) ||
            strpbrk(m->base_url, " \t"))
            return fail(LB_E_INVAL, "[model \"%s\"] (%s): the model URL '%s' is not an http:// or https:// URL",
                        m->name, m->origin, m->base_url);
        if (!strcmp(m->provider, "anthropic")) {
            if (m->tool_mode == LB_CFG_TOOLS_TEXT)
                return fail(LB_E_INVAL, "[model \"%s\"] (%s): tool_mode = text works with the openai provider only",
                            m->name, m->origin);
            if (!isnan(m->min_p) || !isnan(m->repetition_penalty))
                return fail(LB_E_INVAL,
                            "[model \"%s\"] (%s): the anthropic provider has no min_p or repetition_penalty",
                            m->name, m->origin);
        }
    }
    return LB_OK;
}

static int apply_globals(lb_config *c, const lb_conf *cf)
{
    const lb_entry *from_file[LB_N_KEYS];
    memset(from_file, 0, sizeof from_file);
    for (size_t i = 0; cf && i < cf->n; i++) {
        const lb_entry *e = &cf->e[i];
        if (e->section[0])
            continue;
        size_t k = 0;
        while (k < LB_N_KEYS && strcmp(lb_keys[k].name, e->name))
            k++;
        if (k == LB_N_KEYS) {
            if (model_key(e->name))
                return fail(LB_E_INVAL, "%s:%d: '%s' is a model setting: put it in a [model \"NAME\"] section",
                            cf->path, e->line, e->name);
            return fail(LB_E_INVAL, "%s:%d: unknown key '%s'", cf->path, e->line, e->name);
        }
        from_file[k] = e;
    }
    char why[300];
    for (size_t k = 0; k < LB_N_KEYS; k++) {
        const lb_cfg_key *key = &lb_keys[k];
        const char *ev = env_of(key->env, key->env_alt);
        int rc;
        if (ev) {
            if ((rc = key->set(c, key, ev, why, sizeof why)) != LB_OK)
                return fail(rc, "%s=%.200s: %s", getenv(key->env) && *getenv(key->env) ? key->env : key->env_alt,
                            ev, why);
        } else if (from_file[k]) {
            const lb_entry *e = from_file[k];
            if ((rc = key->set(c, key, e->value, why, sizeof why)) != LB_OK)
                return fail(rc, "%s:%d: %s = %.200s: %s", cf->path, e->line, key->name, e->value, why);
        } else if (key->set == set_path) {
            if (set_path_default(c, key) != LB_OK)
                return fail(LB_E_TOOBIG, "the default %s is longer than %d characters", key->name, LB_CFG_PATH - 1);
        } else if (key->def && (rc = key->set(c, key, key->def, why, sizeof why)) != LB_OK) {
            return fail(rc, "the built-in default of %s: %s", key->name, why);
        }
    }
    return LB_OK;
}

int lb_config_load(lb_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    lb_cfg_errbuf[0] = '\0';
    const char *home = env_of("LLMBOX_HOME", NULL);
    char cwd[LB_CFG_PATH];
    if (!home) {
        if (!getcwd(cwd, sizeof cwd))
            return fail(LB_E_IO, "cannot find the current directory: %s", strerror(errno));
        home = cwd;
    }
    if (strlen(home) >= sizeof cfg->home - 64)
        return fail(LB_E_TOOBIG, "LLMBOX_HOME is longer than %zu characters", sizeof cfg->home - 64);
    snprintf(cfg->home, sizeof cfg->home, "%s", home);
    ssize_t n = readlink("/proc/self/exe", cfg->self_exe, sizeof cfg->self_exe - 1);
    if (n > 0)
        cfg->self_exe[n] = '\0';

    /* the file: LLMBOX_CONF, or $home/llmbox.conf when there is one */
    lb_conf cf;
    memset(&cf, 0, sizeof cf);
    int have_file = 0, rc;
    const char *conf = env_of("LLMBOX_CONF", NULL);
    char deflt[LB_CFG_PATH];
    snprintf(deflt, sizeof deflt, "%.*s/llmbox.conf", LB_CFG_PATH - 16, cfg->home);
    if (conf && strlen(conf) >= sizeof cfg->conf_path)
        return fail(LB_E_TOOBIG, "LLMBOX_CONF is longer than %zu characters", sizeof cfg->conf_path - 1);
    if (conf || access(deflt, F_OK) == 0) {
        snprintf(cfg->conf_path, sizeof cfg->conf_path, "%s", conf ? conf : deflt);
        rc = conf_parse(&cf, cfg->conf_path);
        if (rc != LB_OK) {
            fail(rc, "%s", cf.err);
            conf_free(&cf);
            return rc;
        }
        have_file = 1;
    }
    rc = apply_globals(cfg, have_file ? &cf : NULL);
    if (rc == LB_OK)
        rc = apply_models(cfg, have_file ? &cf : NULL);
    conf_free(&cf);
    if (rc != LB_OK)
        return rc;

    cfg->max_output_files = 10000;
    cfg->max_turns_limit = 1000;
    if (cfg->token_budget_max < cfg->token_budget)
        cfg->token_budget_max = cfg->token_budget;
    if (cfg->default_model[0]) {
        if (!find_model(cfg, cfg->default_model)) {
            char names[600];
            lb_cfg_model_names(cfg, names, sizeof names);
            return fail(LB_E_INVAL, "default_model = %s: there is no model of that name (configured: %s)",
                        cfg->default_model, names[0] ? names : "none");
        }
    } else if (cfg->n_models) {
        /* "default" when there is one, else the first model of the file */
        const lb_model_cfg *d = find_model(cfg, "default");
        snprintf(cfg->default_model, sizeof cfg->default_model, "%s", d ? d->name : cfg->models[0].name);
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

int lb_cfg_tool_enabled(const lb_config *cfg, const char *name)
{
    if (!name)
        return 0;
    if (cfg->tools_all || !strcmp(name, "finish"))
        return 1;
    for (int i = 0; i < cfg->n_tools; i++)
        if (!strcmp(cfg->tools[i], name))
            return 1;
    return 0;
}

void lb_cfg_logdir(const lb_config *cfg, char *out, size_t outsz)
{
    const char *db = cfg->db_path;
    const char *slash = strrchr(db, '/');
    int n = slash ? (int)(slash - db) : 0;
    snprintf(out, outsz, "%.*s/log", n, slash ? db : ".");
}
