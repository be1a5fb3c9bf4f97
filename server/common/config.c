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
 * Reading happens in two steps: config_file.c collects (section, key,
 * value, line) entries, then every entry is checked (global keys here,
 * [model] sections in config_model.c), so each error names its file:line.
 * Global keys go through the same setter whether the value comes from the
 * file, the environment or the built-in default: to add a setting, add a
 * field to lb_config and one line to lb_keys[] below. */
#include "config_priv.h"
#include "netcheck.h"
#include "netpolicy.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int lb_cfgi_printable(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static int set_int(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    long long x;
    if (lb_parse_ll(v, k->lo, k->hi, &x) != LB_OK) {
        snprintf(why, whysz, "must be a whole number from %lld to %lld", k->lo, k->hi);
        return LB_E_INVAL;
    }
    if (k->size == sizeof(int64_t))
        *(int64_t *)field(c, k) = x;
    else
        *(int *)field(c, k) = (int)x;
    return LB_OK;
}

/* 0 (no quota) or lo..hi: the kernel refuses a CPU quota under 1 ms a
 * 100 ms period (cpu.max, cpu.cfs_quota_us), and every sandbox create would
 * fail on it */
static int set_cpu_milli(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    long long x;
    if (lb_parse_ll(v, 0, k->hi, &x) != LB_OK || (x != 0 && x < k->lo)) {
        snprintf(why, whysz, "must be 0 (no CPU limit) or a whole number from %lld to %lld", k->lo, k->hi);
        return LB_E_INVAL;
    }
    *(int *)field(c, k) = (int)x;
    return LB_OK;
}

/* MiB in the file and the environment, bytes in the field */
static int set_mib(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    long long x;
    if (lb_parse_ll(v, k->lo, k->hi, &x) != LB_OK) {
        snprintf(why, whysz, "must be a whole number of MiB from %lld to %lld", k->lo, k->hi);
        return LB_E_INVAL;
    }
    *(uint64_t *)field(c, k) = (uint64_t)x << 20;
    return LB_OK;
}

static int set_str(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    if (!lb_cfgi_printable(v)) {
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

static int set_secret(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    return set_str(c, k, v, why, whysz);
}

/* A path: relative ones are taken from $home (or var_dir for the default
 * of a key whose lo is 1). */
int lb_cfgi_join_path(char *dst, size_t dstsz, const char *base, const char *v)
{
    int n = v[0] == '/' ? snprintf(dst, dstsz, "%s", v) : snprintf(dst, dstsz, "%s/%s", base, v);
    return (n < 0 || (size_t)n >= dstsz) ? LB_E_TOOBIG : LB_OK;
}

static int set_path(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    if (!*v || !lb_cfgi_printable(v)) {
        snprintf(why, whysz, "must be a path");
        return LB_E_INVAL;
    }
    if (lb_cfgi_join_path(field(c, k), k->size, c->home, v) != LB_OK) {
        snprintf(why, whysz, "is longer than %zu characters", k->size - 1);
        return LB_E_TOOBIG;
    }
    return LB_OK;
}

/* The default of a path key: rel under $home or var_dir. */
static int set_path_default(lb_config *c, const lb_cfg_key *k)
{
    return lb_cfgi_join_path(field(c, k), k->size, k->lo ? c->var_dir : c->home, k->def);
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

int lb_cfgi_model_name_ok(const char *s)
{
    return name_ok(s, LB_CFG_MODEL_NAME - 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ.-");
}

static int set_model_ref(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    if (*v && !lb_cfgi_model_name_ok(v)) {
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

static int set_listen(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    int rc = lb_cfgi_listen_check(v, why, whysz);
    return rc != LB_OK ? rc : set_str(c, k, v, why, whysz);
}

static int set_cookie_secure(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    if (strcmp(v, "auto") && strcmp(v, "on")) {
        snprintf(why, whysz, "must be auto (Secure when the request came over TLS) or on (always Secure)");
        return LB_E_INVAL;
    }
    return set_str(c, k, v, why, whysz);
}

/* E2B's protocol: a lowercase DNS name, labels of [a-z0-9-] */
static int set_e2b_domain(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    return lb_cfgi_e2b_domain_norm(v, field(c, k), k->size, why, whysz);
}

/* several nodes: "" or a PostgreSQL URL. The value is never repeated in the
 * sentence: it may hold a password. */
static int set_db_url(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    if (*v && strncmp(v, "postgresql://", 13) != 0 && strncmp(v, "postgres://", 11) != 0) {
        snprintf(why, whysz, "must be a postgresql:// URL (e.g. postgresql://llmbox@/llmbox?host=/run/postgresql)"
                             " or empty for SQLite at db_path");
        return LB_E_INVAL;
    }
    if (!lb_cfgi_printable(v) || strchr(v, ' ')) {
        snprintf(why, whysz, "must be a URL without spaces or control characters");
        return LB_E_INVAL;
    }
    return set_secret(c, k, v, why, whysz);
}

/* several nodes: who runs a task's agent: the web itself, or a node that
 * claims it from the queue in the store */
static int set_task_runner(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    if (strcmp(v, "local") && strcmp(v, "queue")) {
        snprintf(why, whysz, "must be local (the web spawns agents) or queue (llmbox node runs them)");
        return LB_E_INVAL;
    }
    return set_str(c, k, v, why, whysz);
}

/* several nodes: a node's name prefixes its sandbox ids and is its row in the
 * nodes table: [a-z0-9-], at most 63, "" for the host name */
static int set_node_name(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    size_t n = strlen(v);
    int ok = n <= 63 && v[0] != '-';
    for (size_t i = 0; ok && i < n; i++)
        ok = (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= '0' && v[i] <= '9') || v[i] == '-';
    if (!ok) {
        snprintf(why, whysz, "must be 1 to 63 of a-z, 0-9 and '-', not starting with '-' (or empty: the host name)");
        return LB_E_INVAL;
    }
    return set_str(c, k, v, why, whysz);
}

static int set_allowed_hosts(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    return lb_cfgi_allowed_hosts_norm(v, field(c, k), k->size, why, whysz);
}

/* rollout_model_url_allow: a list netcheck.h reads; refused here when it
 * cannot be read, so an agent never meets a list it cannot use */
static int set_netallow(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    lb_netallow *a = malloc(sizeof *a);
    if (!a) {
        snprintf(why, whysz, "could not be read: out of memory");
        return LB_E_NOMEM;
    }
    int rc = lb_netallow_parse(v, a, why, whysz);
    free(a);
    return rc != LB_OK ? rc : set_str(c, k, v, why, whysz);
}

/* network_egress_max: rules netpolicy.h reads; refused here when one
 * cannot be read */
static int set_netceiling(lb_config *c, const lb_cfg_key *k, const char *v, char *why, size_t whysz)
{
    lb_netpolicy *p = malloc(sizeof *p);
    if (!p) {
        snprintf(why, whysz, "could not be read: out of memory");
        return LB_E_NOMEM;
    }
    int rc = lb_netpolicy_list_parse(v, p, why, whysz);
    free(p);
    return rc != LB_OK ? rc : set_str(c, k, v, why, whysz);
}

#define F(f) offsetof(lb_config, f), sizeof(((lb_config *)0)->f)
#define KEY_INT(name, env, f, def, lo, hi) {name, env, NULL, set_int, F(f), lo, hi, #def}
#define KEY_MIB(name, env, f, def, lo, hi) {name, env, NULL, set_mib, F(f), lo, hi, #def}
#define KEY_STR(name, env, f, def) {name, env, NULL, set_str, F(f), 0, 0, def}
/* a secret: its value is never repeated in an error message */
#define KEY_SECRET(name, env, f) {name, env, NULL, set_secret, F(f), 0, 0, ""}
#define KEY_PATH(name, env, f, base, rel) {name, env, NULL, set_path, F(f), base, 0, rel}

/* Applied in this order: paths relative to var_dir come after it. */
static const lb_cfg_key lb_keys[] = {
    KEY_PATH("var_dir", "LLMBOX_VAR", var_dir, 0, "var"),
    KEY_PATH("artifacts_dir", "LLMBOX_ARTIFACTS", artifacts_dir, 0, "artifacts"),
    KEY_PATH("plugin_dir", "LLMBOX_PLUGINS", plugin_dir, 0, "plugins"),
    KEY_PATH("prompts_dir", "LLMBOX_PROMPTS", prompts_dir, 0, "server/agent/prompts"),
    KEY_PATH("images_dir", "LLMBOX_IMAGES", images_dir, 0, "images"),
    KEY_PATH("image_store", "LLMBOX_IMAGE_STORE", image_store, 1, "images"),
    KEY_STR("insecure_registries", "LLMBOX_INSECURE_REGISTRIES", insecure_registries, ""),
    KEY_STR("registry_auth_file", "LLMBOX_REGISTRY_AUTH_FILE", registry_auth_file, ""),
    KEY_PATH("db_path", "LLMBOX_DB", db_path, 1, "web/llmbox.db"),
    {"db_url", "LLMBOX_DB_URL", NULL, set_db_url, F(db_url), 0, 0, ""}, /* several nodes */
    KEY_PATH("web_socket", "LLMBOX_WEB_SOCKET", web_socket, 1, "web/web.sock"),
    KEY_PATH("sandboxd_socket", "LLMBOX_SANDBOXD_SOCKET", sandboxd_socket, 1, "run/sandboxd.sock"),
    KEY_STR("web_user", "LLMBOX_WEB_USER", web_user, ""),
    KEY_INT("web_threads", "LLMBOX_WEB_THREADS", web_threads, 32, 1, 8192),
    KEY_MIB("max_upload_mb", "LLMBOX_MAX_UPLOAD_MB", max_upload_bytes, 100, 1, 1 << 20),
    KEY_MIB("max_output_mb", "LLMBOX_MAX_OUTPUT_MB", max_output_bytes, 1024, 1, 1 << 20),
    KEY_INT("max_turns", "LLMBOX_MAX_TURNS", max_turns_default, 100, 1, 1000),
    KEY_INT("max_tasks", "LLMBOX_MAX_TASKS", max_concurrent_tasks, 16, 1, 4096),
    /* -1: max(2, max_tasks / 4), resolved by lb_eval_reserve_slots (jobs/eval_runner.h) */
    KEY_INT("eval_reserve_slots", "LLMBOX_EVAL_RESERVE_SLOTS", eval_reserve_slots, -1, -1, 4096),
    KEY_INT("eval_max_concurrency", "LLMBOX_EVAL_MAX_CONCURRENCY", eval_max_concurrency, 64, 1, 4096),
    KEY_MIB("eval_max_upload_mb", "LLMBOX_EVAL_MAX_UPLOAD_MB", eval_max_upload_bytes, 64, 1, 1 << 20),
    KEY_INT("eval_max_rows", "LLMBOX_EVAL_MAX_ROWS", eval_max_rows, 10000, 1, 1000000),
    KEY_INT("score_threads", "LLMBOX_SCORE_THREADS", score_threads, 4, 1, 256),
    KEY_INT("score_fast_threads", "LLMBOX_SCORE_FAST_THREADS", score_fast_threads, 2, 1, 64),
    KEY_INT("score_user_share", "LLMBOX_SCORE_USER_SHARE", score_user_share, 0, 0, 256),
    KEY_INT("rollout_max_samples", "LLMBOX_ROLLOUT_MAX_SAMPLES", rollout_max_samples, 1024, 1, 65536),
    KEY_MIB("rollout_max_body_mb", "LLMBOX_ROLLOUT_MAX_BODY_MB", rollout_max_body_bytes, 16, 1, 1024),
    /* -1: a quarter of web_threads, resolved by handlers_rollouts.c */
    KEY_INT("rollout_allow_model_url", "LLMBOX_ROLLOUT_ALLOW_MODEL_URL", rollout_allow_model_url, 0, 0, 1),
    {"rollout_model_url_allow", "LLMBOX_ROLLOUT_MODEL_URL_ALLOW", NULL, set_netallow, F(rollout_model_url_allow), 0, 0,
     "public"},
    KEY_INT("rollout_max_waiters", "LLMBOX_ROLLOUT_MAX_WAITERS", rollout_max_waiters, -1, -1, 8192),
    KEY_INT("cmd_timeout_s", "LLMBOX_CMD_TIMEOUT_S", cmd_timeout_s, 120, 1, 86400),
    KEY_INT("task_timeout_s", "LLMBOX_TASK_TIMEOUT_S", task_timeout_s, 3600, 1, 7 * 86400),
    /* the agent's own alarm ends a task at its timeout; this is how long
     * its way out (saving outputs, recording the end) may take before the
     * web kills it: generous, since outputs of up to max_output_mb are copied */
    KEY_INT("task_deadline_grace_s", "LLMBOX_TASK_DEADLINE_GRACE_S", task_deadline_grace_s, 30, 1, 86400),
    KEY_INT("download_link_ttl_s", "LLMBOX_DOWNLOAD_LINK_TTL_S", download_link_ttl_s, 3600, 0, 7 * 86400),
    KEY_INT("agent_spare", "LLMBOX_AGENT_SPARE", agent_spare, 1, 0, 1),
    KEY_INT("tool_timeout_s", "LLMBOX_TOOL_TIMEOUT_S", tool_timeout_s, 60, 1, 86400),
    KEY_INT("token_budget", "LLMBOX_TOKEN_BUDGET", token_budget, 65536, 0, 100000000),
    KEY_INT("token_budget_max", "LLMBOX_TOKEN_BUDGET_MAX", token_budget_max, 1048576, 1000, 100000000),
    KEY_INT("sandbox_memory_mib", "LLMBOX_SANDBOX_MEMORY_MIB", sandbox_memory_mib, 2048, 64, 1 << 20),
    KEY_INT("sandbox_pids", "LLMBOX_SANDBOX_PIDS", sandbox_pids, 512, 16, 1 << 22),
    KEY_STR("image", "LLMBOX_IMAGE", default_image, "default"),
    KEY_INT("bash_soft_timeout_s", "LLMBOX_BASH_SOFT_TIMEOUT_S", bash_soft_timeout_s, 10, 1, 86400),
    /* follow-ups: a task's sandbox kept between rounds, and how
     * many may be kept across the machine at once (a count: each holds its
     * sandbox_memory_mib at most) */
    KEY_INT("followup_keep_s", "LLMBOX_FOLLOWUP_KEEP_S", followup_keep_s, 600, 0, 86400),
    KEY_INT("followup_max_kept", "LLMBOX_FOLLOWUP_MAX_KEPT", followup_max_kept, 16, 0, 65536),
    /* each sandbox holds ~5 fds in sandboxd: it raises RLIMIT_NOFILE to fit */
    KEY_INT("sandbox_max", "LLMBOX_SANDBOX_MAX", sandbox_max, 1024, 1, 65536),
    KEY_INT("sandbox_max_per_conn", "LLMBOX_SANDBOX_MAX_PER_CONN", sandbox_max_per_conn, 32, 1, 65536),
    {"sandbox_cpu_milli", "LLMBOX_SANDBOX_CPU_MILLI", NULL, set_cpu_milli, F(sandbox_cpu_milli), 10, 1024 * 1000, "0"},
    KEY_INT("sandbox_disk_mib", "LLMBOX_SANDBOX_DISK_MIB", sandbox_disk_mib, 1024, 16, 1 << 22),
    /* host pools one sandbox could drain (sandbox/hostlimits.c): 0 = derived
     * from the host at sandboxd start */
    KEY_INT("sandbox_files", "LLMBOX_SANDBOX_FILES", sandbox_files, 0, 0, 1 << 30),
    KEY_INT("sandbox_ptys", "LLMBOX_SANDBOX_PTYS", sandbox_ptys, 256, 1, 1 << 20),
    /* operator caps on a spec's memory_mib and pids (config_host.c) */
    KEY_INT("sandbox_max_memory_mib", "LLMBOX_SANDBOX_MAX_MEMORY_MIB", sandbox_max_memory_mib, 0, 0, 1 << 20),
    KEY_INT("sandbox_max_pids", "LLMBOX_SANDBOX_MAX_PIDS", sandbox_max_pids, 4096, 16, 1 << 22),
    /* Above every normal user, /etc/subuid allocation (useradd hands out
     * 100000..600100000) and systemd-nspawn's container ranges
     * (524288..1879048191); below 2^31, where tools that keep uids in a
     * signed int break, and below systemd's foreign-uid range (0x7FFE0000).
     * The range must not start inside 0..65535 (those are the ids it maps). */
    KEY_INT("sandbox_uid_base", "LLMBOX_SANDBOX_UID_BASE", sandbox_uid_base, 1879048192, 65536, 2147418111),
    /* one range of 65536 ids per live sandbox above the images' (BASE + k *
     * 65536): per-uid kernel counters stay per sandbox; as many as fit
     * below 2^31 are used (4095 with the default base) */
    KEY_INT("sandbox_uid_slots", "LLMBOX_SANDBOX_UID_SLOTS", sandbox_uid_slots, 4095, 0, 65533),
    KEY_INT("pool_size", "LLMBOX_POOL_SIZE", pool_size, 4, 0, 64),
    /* sandboxd's threads for creates, input copies, teardowns and pool
     * refills (sandboxd/workers.h): mostly waiting on a sandbox's init, so
     * more than the cores */
    KEY_INT("sandboxd_workers", "LLMBOX_SANDBOXD_WORKERS", sandboxd_workers, 4, 1, 64),
    KEY_INT("sandboxd_max_conns", "LLMBOX_SANDBOXD_MAX_CONNS", sandboxd_max_conns, 256, 16, 65536),
    KEY_STR("pool_images", "LLMBOX_POOL_IMAGES", pool_images, ""), /* "": the default image */
    /* image work sandboxd runs for the web (sandboxd/image_jobs.h) */
    KEY_INT("image_jobs_max", "LLMBOX_IMAGE_JOBS_MAX", image_jobs_max, 4, 1, 64),
    KEY_INT("image_pull_wait_s", "LLMBOX_IMAGE_PULL_WAIT_S", image_pull_wait_s, 240, 5, 86400),
    KEY_INT("sandbox_ttl_max_s", "LLMBOX_SANDBOX_TTL_MAX_S", sandbox_ttl_max_s, 0, 0, 7 * 24 * 3600),
    KEY_STR("network_allow", "LLMBOX_NETWORK_ALLOW", network_allow, "none"),
    {"network_egress_max", "LLMBOX_NETWORK_EGRESS_MAX", NULL, set_netceiling, F(network_egress_max), 0, 0, ""},
    KEY_INT("network_bandwidth_max", "LLMBOX_NETWORK_BANDWIDTH_MAX", network_bandwidth_max, 0, 0, 2000000000),
    KEY_MIB("network_max_mb", "LLMBOX_NETWORK_MAX_MB", network_max_bytes, 0, 0, 1 << 30),
    KEY_STR("network_upstream_ca", "LLMBOX_NETWORK_UPSTREAM_CA", network_upstream_ca, ""),
    /* saved sandbox states (follow-ups, sandboxd/sandbox_save.c) */
    KEY_INT("sandbox_state_max_mib", "LLMBOX_SANDBOX_STATE_MAX_MIB", sandbox_state_max_mib, 1024, 1, 1 << 20),
    KEY_INT("sandbox_state_max_age_s", "LLMBOX_SANDBOX_STATE_MAX_AGE_S", sandbox_state_max_age_s, 604800, 60,
            366 * 86400),
    /* caps of one image layer at import (images/import.h): a tar bomb or a
     * sparse file of terabytes stops here */
    KEY_INT("image_layer_max_mib", "LLMBOX_IMAGE_LAYER_MAX_MIB", image_layer_max_mib, 16384, 1, 1 << 24),
    KEY_INT("image_layer_max_entries", "LLMBOX_IMAGE_LAYER_MAX_ENTRIES", image_layer_max_entries, 1000000, 1,
            100000000),
    KEY_SECRET("sandbox_api_token", "LLMBOX_SANDBOX_API_TOKEN", sandbox_api_token),
    KEY_INT("sandbox_api_max", "LLMBOX_SANDBOX_API_MAX", sandbox_api_max, 128, 1, 4096),
    KEY_INT("sandbox_api_ttl_s", "LLMBOX_SANDBOX_API_TTL_S", sandbox_api_ttl_s, 3600, 1, 7 * 86400),
    /* how long API sandboxes outlive a web that is gone (restart, upgrade,
     * crash) before sandboxd destroys them; renewed every third of it */
    KEY_INT("sandbox_api_lease_s", "LLMBOX_SANDBOX_API_LEASE_S", sandbox_api_lease_s, 60, 3, 86400),
    KEY_INT("sandbox_api_ttl_max_s", "LLMBOX_SANDBOX_API_TTL_MAX_S", sandbox_api_ttl_max_s, 86400, 1, 7 * 86400),
    KEY_MIB("sandbox_api_body_mb", "LLMBOX_SANDBOX_API_BODY_MB", sandbox_api_body_bytes, 16, 1, 1024),
    KEY_INT("sandbox_api_exec_max_s", "LLMBOX_SANDBOX_API_EXEC_MAX_S", sandbox_api_exec_max_s, 1800, 1, 86400),
    KEY_MIB("max_unpack_mb", "LLMBOX_MAX_UNPACK_MB", max_unpack_bytes, 1024, 1, 1 << 20),
    KEY_INT("sse_max_per_client", "LLMBOX_SSE_MAX_PER_CLIENT", sse_max_per_client, 8, 1, 65536),
    KEY_INT("sse_reserve_threads", "LLMBOX_SSE_RESERVE_THREADS", sse_reserve_threads, 8, 0, 8192),
    KEY_INT("sse_max_s", "LLMBOX_SSE_MAX_S", sse_max_s, 0, 0, 86400),
    KEY_INT("bundle_max_building", "LLMBOX_BUNDLE_MAX_BUILDING", bundle_max_building, 4, 1, 256),
    KEY_INT("bundle_max_per_user", "LLMBOX_BUNDLE_MAX_PER_USER", bundle_max_per_user, 2, 1, 256),
    KEY_INT("unpack_max_running", "LLMBOX_UNPACK_MAX_RUNNING", unpack_max_running, 4, 1, 256),
    KEY_INT("unpack_max_per_user", "LLMBOX_UNPACK_MAX_PER_USER", unpack_max_per_user, 2, 1, 256),
    KEY_INT("blob_fetch_max", "LLMBOX_BLOB_FETCH_MAX", blob_fetch_max, 8, 1, 256),
    KEY_INT("blob_fetch_max_per_user", "LLMBOX_BLOB_FETCH_MAX_PER_USER", blob_fetch_max_per_user, 4, 1, 256),
    KEY_INT("e2b_port_max", "LLMBOX_E2B_PORT_MAX", e2b_port_max, 0, 0, 256),
    KEY_INT("e2b_port_max_per_sandbox", "LLMBOX_E2B_PORT_MAX_PER_SANDBOX", e2b_port_max_per_sandbox, 8, 1, 256),
    KEY_INT("e2b_port_head_s", "LLMBOX_E2B_PORT_HEAD_S", e2b_port_head_s, 30, 1, 3600),
    KEY_INT("e2b_ports_public", "LLMBOX_E2B_PORTS_PUBLIC", e2b_ports_public, 0, 0, 1),
    KEY_INT("volume_max_per_owner", "LLMBOX_VOLUME_MAX_PER_OWNER", volume_max_per_owner, 8, 1, 1024),
    KEY_MIB("volume_max_mb_per_owner", "LLMBOX_VOLUME_MAX_MB_PER_OWNER", volume_max_bytes_per_owner, 1024, 1, 1 << 20),
    KEY_INT("llm_timeout_s", "LLMBOX_LLM_TIMEOUT_S", llm_timeout_s, 600, 1, 86400),
    {"listen", "LLMBOX_LISTEN", NULL, set_listen, F(listen), 0, 0, "127.0.0.1:8080"},
    KEY_INT("user_max_tasks", "LLMBOX_USER_MAX_TASKS", user_max_tasks, 4, 0, 4096),
    KEY_INT("user_tasks_per_minute", "LLMBOX_USER_TASKS_PER_MINUTE", user_tasks_per_minute, 10, 0, 1000),
    KEY_INT("user_max_sandboxes", "LLMBOX_USER_MAX_SANDBOXES", user_max_sandboxes, 4, 0, 4096),
    KEY_INT("user_sandboxes_per_minute", "LLMBOX_USER_SANDBOXES_PER_MINUTE", user_sandboxes_per_minute, 20, 0, 1000),
    KEY_MIB("user_max_upload_mb", "LLMBOX_USER_MAX_UPLOAD_MB", user_max_upload_bytes, 0, 0, 1 << 20),
    /* object storage (several nodes): checked by lb_s3_from_config when s3_bucket is set */
    KEY_STR("s3_endpoint", "LLMBOX_S3_ENDPOINT", s3_endpoint, ""),
    KEY_STR("s3_bucket", "LLMBOX_S3_BUCKET", s3_bucket, ""),
    KEY_STR("s3_region", "LLMBOX_S3_REGION", s3_region, "us-east-1"),
    KEY_STR("s3_access_key", "LLMBOX_S3_ACCESS_KEY", s3_access_key, ""),
    KEY_SECRET("s3_secret_key", "LLMBOX_S3_SECRET_KEY", s3_secret_key),
    KEY_STR("s3_addressing", "LLMBOX_S3_ADDRESSING", s3_addressing, "path"),
    KEY_INT("s3_timeout_s", "LLMBOX_S3_TIMEOUT_S", s3_timeout_s, 30, 1, 3600),
    KEY_INT("s3_retries", "LLMBOX_S3_RETRIES", s3_retries, 3, 0, 10),
    KEY_INT("artifacts_cache_max_mb", "LLMBOX_ARTIFACTS_CACHE_MAX_MB", artifacts_cache_max_mb, 0, 0, 1 << 30),
    KEY_INT("artifacts_cache_trim_s", "LLMBOX_ARTIFACTS_CACHE_TRIM_S", artifacts_cache_trim_s, 300, 1, 86400),
    KEY_INT("artifacts_cache_min_age_s", "LLMBOX_ARTIFACTS_CACHE_MIN_AGE_S", artifacts_cache_min_age_s, 600, 0,
            30 * 86400),
    /* several nodes: the queue and the nodes (server/node/, store/store_queue.h) */
    {"task_runner", "LLMBOX_TASK_RUNNER", NULL, set_task_runner, F(task_runner), 0, 0, "local"},
    {"node_name", "LLMBOX_NODE_NAME", NULL, set_node_name, F(node_name), 0, 0, ""},
    KEY_INT("node_capacity", "LLMBOX_NODE_CAPACITY", node_capacity, 4, 1, 256),
    KEY_INT("node_lease_s", "LLMBOX_NODE_LEASE_S", node_lease_s, 15, 2, 3600),
    {"node_listen", "LLMBOX_NODE_LISTEN", NULL, set_listen, F(node_listen), 0, 0, "127.0.0.1:8090"},
    KEY_INT("runner_lease_s", "LLMBOX_RUNNER_LEASE_S", runner_lease_s, 15, 2, 3600), /* several nodes: store_claim.h */
    KEY_INT("session_ttl_s", "LLMBOX_SESSION_TTL_S", session_ttl_s, 604800, 60, 366 * 86400),
    {"cookie_secure", "LLMBOX_COOKIE_SECURE", NULL, set_cookie_secure, F(cookie_secure), 0, 0, "auto"},
    {"allowed_hosts", "LLMBOX_ALLOWED_HOSTS", NULL, set_allowed_hosts, F(allowed_hosts), 0, 0, ""},
    {"e2b_domain", "LLMBOX_E2B_DOMAIN", NULL, set_e2b_domain, F(e2b_domain), 0, 0, ""}, /* E2B's protocol */
    {"tools", "LLMBOX_TOOLS", NULL, set_tools, F(tools), 0, 0, LB_CFG_DEFAULT_TOOLS},
    {"default_model", "LLMBOX_DEFAULT_MODEL", NULL, set_model_ref, F(default_model), 0, 0, ""},
};
#define LB_N_KEYS (sizeof lb_keys / sizeof lb_keys[0])

/* ---- loading ------------------------------------------------------------- */

const char *lb_cfgi_env(const char *a, const char *b)
{
    const char *v = a ? getenv(a) : NULL;
    if (v && *v)
        return v;
    v = b ? getenv(b) : NULL;
    return v && *v ? v : NULL;
}

int lb_cfgi_fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lb_cfg_errbuf, sizeof lb_cfg_errbuf, fmt, ap);
    va_end(ap);
    return rc;
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
            if (lb_cfgi_is_model_key(e->name))
                return lb_cfgi_fail(LB_E_INVAL, "%s:%d: '%s' is a model setting: put it in a [model \"NAME\"] section",
                            cf->path, e->line, e->name);
            if (lb_cfgi_is_user_key(e->name))
                return lb_cfgi_fail(LB_E_INVAL, "%s:%d: '%s' is a user setting: put it in a [user \"NAME\"] section",
                            cf->path, e->line, e->name);
            return lb_cfgi_fail(LB_E_INVAL, "%s:%d: unknown key '%s'", cf->path, e->line, e->name);
        }
        from_file[k] = e;
    }
    char why[300];
    for (size_t k = 0; k < LB_N_KEYS; k++) {
        const lb_cfg_key *key = &lb_keys[k];
        const char *ev = lb_cfgi_env(key->env, key->env_alt);
        int rc;
        if (ev) {
            if ((rc = key->set(c, key, ev, why, sizeof why)) != LB_OK)
                return lb_cfgi_fail(rc, "%s=%.200s: %s", getenv(key->env) && *getenv(key->env) ? key->env : key->env_alt,
                            (key->set == set_secret || key->set == set_db_url) ? "(value hidden)" : ev, why);
        } else if (from_file[k]) {
            const lb_entry *e = from_file[k];
            if ((rc = key->set(c, key, e->value, why, sizeof why)) != LB_OK)
                return lb_cfgi_fail(rc, "%s:%d: %s = %.200s: %s", cf->path, e->line, key->name,
                                    (key->set == set_secret || key->set == set_db_url) ? "(value hidden)" : e->value, why);
        } else if (key->set == set_path) {
            if (set_path_default(c, key) != LB_OK)
                return lb_cfgi_fail(LB_E_TOOBIG, "the default %s is longer than %d characters", key->name, LB_CFG_PATH - 1);
        } else if (key->def && (rc = key->set(c, key, key->def, why, sizeof why)) != LB_OK) {
            return lb_cfgi_fail(rc, "the built-in default of %s: %s", key->name, why);
        }
    }
    return LB_OK;
}

int lb_config_load(lb_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    lb_cfg_errbuf[0] = '\0';
    const char *home = lb_cfgi_env("LLMBOX_HOME", NULL);
    char cwd[LB_CFG_PATH];
    if (!home) {
        if (!getcwd(cwd, sizeof cwd))
            return lb_cfgi_fail(LB_E_IO, "cannot find the current directory: %s", strerror(errno));
        home = cwd;
    }
    if (strlen(home) >= sizeof cfg->home - 64)
        return lb_cfgi_fail(LB_E_TOOBIG, "LLMBOX_HOME is longer than %zu characters", sizeof cfg->home - 64);
    snprintf(cfg->home, sizeof cfg->home, "%s", home);
    ssize_t n = readlink("/proc/self/exe", cfg->self_exe, sizeof cfg->self_exe - 1);
    if (n > 0)
        cfg->self_exe[n] = '\0';

    /* the file: LLMBOX_CONF, or $home/llmbox.conf when there is one */
    lb_conf cf;
    memset(&cf, 0, sizeof cf);
    int have_file = 0, rc;
    const char *conf = lb_cfgi_env("LLMBOX_CONF", NULL);
    char deflt[LB_CFG_PATH];
    snprintf(deflt, sizeof deflt, "%.*s/llmbox.conf", LB_CFG_PATH - 16, cfg->home);
    if (conf && strlen(conf) >= sizeof cfg->conf_path)
        return lb_cfgi_fail(LB_E_TOOBIG, "LLMBOX_CONF is longer than %zu characters", sizeof cfg->conf_path - 1);
    if (conf || access(deflt, F_OK) == 0) {
        snprintf(cfg->conf_path, sizeof cfg->conf_path, "%s", conf ? conf : deflt);
        rc = lb_conf_parse(&cf, cfg->conf_path);
        if (rc != LB_OK) {
            rc = lb_cfgi_fail(rc, "%s", cf.err);
            lb_conf_free(&cf);
            return rc;
        }
        have_file = 1;
    }
    rc = apply_globals(cfg, have_file ? &cf : NULL);
    if (rc == LB_OK)
        rc = lb_cfgi_apply_models(cfg, have_file ? &cf : NULL);
    if (rc == LB_OK)
        rc = lb_cfgi_apply_users(cfg, have_file ? &cf : NULL);
    if (rc == LB_OK)
        rc = lb_cfgi_apply_secrets(cfg, have_file ? &cf : NULL);
    if (rc == LB_OK)
        rc = lb_cfgi_apply_mcp(cfg, have_file ? &cf : NULL);
    if (rc == LB_OK)
        rc = lb_cfgi_check_access(cfg);
    lb_conf_free(&cf);
    if (rc != LB_OK)
        return rc;

    lb_cfgi_resolve_host(cfg);
    cfg->max_output_files = 10000;
    cfg->max_turns_limit = 1000;
    if (!cfg->pool_images[0])
        snprintf(cfg->pool_images, sizeof cfg->pool_images, "%s", cfg->default_image);
    if (cfg->sandbox_api_ttl_s > cfg->sandbox_api_ttl_max_s)
        cfg->sandbox_api_ttl_s = cfg->sandbox_api_ttl_max_s;
    if (cfg->token_budget_max < cfg->token_budget)
        cfg->token_budget_max = cfg->token_budget;
    if (cfg->default_model[0]) {
        if (!lb_cfgi_find_model(cfg, cfg->default_model)) {
            char names[600];
            lb_cfg_model_names(cfg, names, sizeof names);
            return lb_cfgi_fail(LB_E_INVAL, "default_model = %s: there is no model of that name (configured: %s)",
                        cfg->default_model, names[0] ? names : "none");
        }
    } else if (cfg->n_models) {
        /* "default" when there is one, else the first model of the file */
        const lb_model_cfg *d = lb_cfgi_find_model(cfg, "default");
        snprintf(cfg->default_model, sizeof cfg->default_model, "%s", d ? d->name : cfg->models[0].name);
    }
    return LB_OK;
}

/* ---- lookups ------------------------------------------------------------- */

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

int lb_cfg_network_allowed(const lb_config *cfg, const char *mode)
{
    if (!mode || !*mode || !strcmp(mode, "none"))
        return 1;
    size_t n = strlen(mode);
    for (const char *p = cfg->network_allow; *p;) {
        p += strspn(p, ", \t");
        size_t w = strcspn(p, ", \t");
        if (w == n && !strncmp(p, mode, n))
            return 1;
        p += w;
    }
    return 0;
}

const char *lb_cfg_store_where(const lb_config *cfg)
{
    return cfg->db_url[0] ? cfg->db_url : cfg->db_path;
}

int lb_cfg_beside_db(const lb_config *cfg, const char *folder, const char *leaf, char *out, size_t outsz)
{
    const char *db = cfg->db_path;
    const char *slash = strrchr(db, '/');
    int n = snprintf(out, outsz, "%.*s%s%s%s%s", slash ? (int)(slash - db) : 1, slash ? db : ".", folder ? "/" : "",
                     folder ? folder : "", folder && leaf ? "/" : "", folder && leaf ? leaf : "");
    return n > 0 && (size_t)n < outsz;
}

void lb_cfg_logdir(const lb_config *cfg, char *out, size_t outsz)
{
    const char *db = cfg->db_path;
    const char *slash = strrchr(db, '/');
    int n = slash ? (int)(slash - db) : 0;
    snprintf(out, outsz, "%.*s/log", n, slash ? db : ".");
}
