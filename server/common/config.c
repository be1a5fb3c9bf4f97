#include "config.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static lb_config lb_global_cfg;

const lb_config *lb_cfg(void) { return &lb_global_cfg; }
lb_config *lb_cfg_mut(void) { return &lb_global_cfg; }

static const char *lb_env(const char *a, const char *b)
{
    const char *v = getenv(a);
    if (v && *v)
        return v;
    if (b) {
        v = getenv(b);
        if (v && *v)
            return v;
    }
    return NULL;
}

static int lb_setstr(char *dst, size_t dstsz, const char *v)
{
    if ((size_t)snprintf(dst, dstsz, "%s", v) >= dstsz)
        return LB_E_TOOBIG;
    return LB_OK;
}

static int lb_setpath(char *dst, const char *envname, const char *base, const char *rel)
{
    const char *v = lb_env(envname, NULL);
    int n = v ? snprintf(dst, LB_CFG_PATH, "%s", v) : snprintf(dst, LB_CFG_PATH, "%s/%s", base, rel);
    return (n < 0 || n >= LB_CFG_PATH) ? LB_E_TOOBIG : LB_OK;
}

static long lb_envint(const char *name, long def, long lo, long hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi)
        return def;
    return x;
}

int lb_config_load(lb_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    const char *home = lb_env("LLMBOX_HOME", NULL);
    char cwd[LB_CFG_PATH];
    if (!home) {
        if (!getcwd(cwd, sizeof cwd))
            return LB_E_IO;
        home = cwd;
    }
    int rc = lb_setstr(cfg->home, sizeof cfg->home, home);
    rc |= lb_setpath(cfg->var_dir, "LLMBOX_VAR", cfg->home, "var");
    rc |= lb_setpath(cfg->artifacts_dir, "LLMBOX_ARTIFACTS", cfg->home, "artifacts");
    rc |= lb_setpath(cfg->plugin_dir, "LLMBOX_PLUGINS", cfg->home, "plugins");
    rc |= lb_setpath(cfg->prompts_dir, "LLMBOX_PROMPTS", cfg->home, "server/agent/prompts");
    rc |= lb_setpath(cfg->images_dir, "LLMBOX_IMAGES", cfg->home, "images");
    rc |= lb_setpath(cfg->image_store, "LLMBOX_IMAGE_STORE", cfg->var_dir, "images");
    rc |= lb_setpath(cfg->db_path, "LLMBOX_DB", cfg->var_dir, "web/llmbox.db");
    rc |= lb_setpath(cfg->web_socket, "LLMBOX_WEB_SOCKET", cfg->var_dir, "web/web.sock");
    rc |= lb_setpath(cfg->sandboxd_socket, "LLMBOX_SANDBOXD_SOCKET", cfg->var_dir, "run/sandboxd.sock");
    if (rc)
        return LB_E_TOOBIG;
    ssize_t n = readlink("/proc/self/exe", cfg->self_exe, sizeof cfg->self_exe - 1);
    if (n > 0)
        cfg->self_exe[n] = '\0';

    const char *url = lb_env("LLMBOX_LLM_URL", "OPENAI_BASE_URL");
    rc |= lb_setstr(cfg->llm_url, sizeof cfg->llm_url, url ? url : "http://127.0.0.1:8000/v1");
    const char *model = lb_env("LLMBOX_LLM_MODEL", NULL);
    rc |= lb_setstr(cfg->llm_model, sizeof cfg->llm_model, model ? model : "default");
    const char *prov = lb_env("LLMBOX_LLM_PROVIDER", NULL);
    rc |= lb_setstr(cfg->llm_provider, sizeof cfg->llm_provider, prov ? prov : "openai");
    /* each provider's usual key variable; OPENAI_API_KEY is not for Anthropic */
    int anthropic = prov && !strcmp(prov, "anthropic");
    const char *key = lb_env("LLMBOX_LLM_KEY", anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
    rc |= lb_setstr(cfg->llm_key, sizeof cfg->llm_key, key ? key : "");
    const char *user = lb_env("LLMBOX_WEB_USER", NULL);
    rc |= lb_setstr(cfg->web_user, sizeof cfg->web_user, user ? user : "");
    const char *img = lb_env("LLMBOX_IMAGE", NULL);
    rc |= lb_setstr(cfg->default_image, sizeof cfg->default_image, img ? img : "default");
    if (rc)
        return LB_E_TOOBIG;

    cfg->llm_timeout_s = (int)lb_envint("LLMBOX_LLM_TIMEOUT_S", 600, 1, 86400);
    cfg->web_threads = (int)lb_envint("LLMBOX_WEB_THREADS", 32, 1, 1024);
    cfg->max_upload_bytes = (uint64_t)lb_envint("LLMBOX_MAX_UPLOAD_MB", 100, 1, 1 << 20) << 20;
    cfg->max_output_bytes = (uint64_t)lb_envint("LLMBOX_MAX_OUTPUT_MB", 1024, 1, 1 << 20) << 20;
    cfg->max_output_files = 10000;
    cfg->max_turns_default = (int)lb_envint("LLMBOX_MAX_TURNS", 100, 1, 1000);
    cfg->max_turns_limit = 1000;
    cfg->max_concurrent_tasks = (int)lb_envint("LLMBOX_MAX_TASKS", 16, 1, 4096);
    cfg->cmd_timeout_s = (int)lb_envint("LLMBOX_CMD_TIMEOUT_S", 120, 1, 86400);
    cfg->task_timeout_s = (int)lb_envint("LLMBOX_TASK_TIMEOUT_S", 3600, 1, 7 * 86400);
    cfg->sandbox_memory_mib = (int)lb_envint("LLMBOX_SANDBOX_MEMORY_MIB", 2048, 64, 1 << 20);
    cfg->sandbox_pids = (int)lb_envint("LLMBOX_SANDBOX_PIDS", 512, 16, 1 << 22);
    cfg->allow_nat = (int)lb_envint("LLMBOX_ALLOW_NAT", 0, 0, 1);
    cfg->max_unpack_bytes = (uint64_t)lb_envint("LLMBOX_MAX_UNPACK_MB", 1024, 1, 1 << 20) << 20;
    cfg->sse_max_s = (int)lb_envint("LLMBOX_SSE_MAX_S", 0, 0, 86400);
    return LB_OK;
}
