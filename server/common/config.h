/* Runtime configuration: defaults, overridden by the environment.
 * Every path is absolute after lb_config_load. */
#ifndef LB_CONFIG_H
#define LB_CONFIG_H
#include <stddef.h>
#include <stdint.h>

#define LB_CFG_PATH 1024

typedef struct lb_config {
    char home[LB_CFG_PATH];          /* LLMBOX_HOME, default: the cwd */
    char var_dir[LB_CFG_PATH];       /* $home/var */
    char artifacts_dir[LB_CFG_PATH]; /* LLMBOX_ARTIFACTS, default $home/artifacts */
    char plugin_dir[LB_CFG_PATH];    /* LLMBOX_PLUGINS, default $home/plugins */
    char prompts_dir[LB_CFG_PATH];   /* LLMBOX_PROMPTS, default $home/server/agent/prompts */
    char images_dir[LB_CFG_PATH];    /* recipes: $home/images */
    char image_store[LB_CFG_PATH];   /* built roots: $var/images */
    char db_path[LB_CFG_PATH];       /* LLMBOX_DB, default $var/web/llmbox.db */
    char web_socket[LB_CFG_PATH];    /* LLMBOX_WEB_SOCKET, default $var/web/web.sock */
    char sandboxd_socket[LB_CFG_PATH]; /* LLMBOX_SANDBOXD_SOCKET, default $var/run/sandboxd.sock */
    char self_exe[LB_CFG_PATH];      /* /proc/self/exe, for spawning agents */

    char llm_url[LB_CFG_PATH];       /* LLMBOX_LLM_URL | OPENAI_BASE_URL | http://127.0.0.1:8000/v1 */
    char llm_model[256];             /* LLMBOX_LLM_MODEL | "default" */
    char llm_provider[16];           /* LLMBOX_LLM_PROVIDER: "openai" (default) or "anthropic" */
    char llm_key[512];               /* LLMBOX_LLM_KEY | (anthropic: ANTHROPIC_API_KEY, else OPENAI_API_KEY) | "";
                                        never logged or sent to a browser */
    int llm_timeout_s;               /* LLMBOX_LLM_TIMEOUT_S, default 600: one model request */

    char web_user[64];               /* LLMBOX_WEB_USER: user that web and agents run as when started as root ("" = stay) */
    int web_threads;                 /* LLMBOX_WEB_THREADS, default 32 */

    uint64_t max_upload_bytes;       /* LLMBOX_MAX_UPLOAD_MB, default 100 MiB per task (body) */
    uint64_t max_output_bytes;       /* LLMBOX_MAX_OUTPUT_MB, default 1024 MiB of artifacts per task */
    int max_output_files;            /* 10000 */
    int max_turns_default;           /* LLMBOX_MAX_TURNS, default 100 */
    int max_turns_limit;             /* 1000 */
    int max_concurrent_tasks;        /* LLMBOX_MAX_TASKS, default 16 */
    int cmd_timeout_s;               /* LLMBOX_CMD_TIMEOUT_S, default 120: one bash call */
    int task_timeout_s;              /* LLMBOX_TASK_TIMEOUT_S, default 3600 */
    int sandbox_memory_mib;          /* LLMBOX_SANDBOX_MEMORY_MIB, default 2048 */
    int sandbox_pids;                /* LLMBOX_SANDBOX_PIDS, default 512 */
    char default_image[64];          /* LLMBOX_IMAGE, default "default" */
    int allow_nat;                   /* LLMBOX_ALLOW_NAT=1: tasks may ask for network "nat" (default 0: none only) */
    uint64_t max_unpack_bytes;       /* LLMBOX_MAX_UNPACK_MB, default 1024 MiB unpacked from a task's archives */
    int sse_max_s;                   /* LLMBOX_SSE_MAX_S, default 0 (none): an event stream ends after this long
                                        and the browser resumes it with Last-Event-ID */
} lb_config;

/* Fills cfg from the defaults and the environment; creates nothing. */
int lb_config_load(lb_config *cfg);
/* The process-wide config, loaded once by main(). */
const lb_config *lb_cfg(void);
lb_config *lb_cfg_mut(void);

#endif
