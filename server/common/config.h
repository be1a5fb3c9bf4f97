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
    int cmd_timeout_s;               /* LLMBOX_CMD_TIMEOUT_S, default 120: hard limit of one command */
    int bash_soft_timeout_s;         /* LLMBOX_BASH_SOFT_TIMEOUT_S, default 10: a bash call returns
                                        "still running" after this; the command goes on */
    int task_timeout_s;              /* LLMBOX_TASK_TIMEOUT_S, default 3600 */
    int sandbox_memory_mib;          /* LLMBOX_SANDBOX_MEMORY_MIB, default 2048 */
    int sandbox_pids;                /* LLMBOX_SANDBOX_PIDS, default 512 */
    int sandbox_max;                 /* LLMBOX_SANDBOX_MAX, default 1024: sandboxes at once in sandboxd */
    int sandbox_max_per_conn;        /* LLMBOX_SANDBOX_MAX_PER_CONN, default 32: per client connection */
    int sandbox_cpu_milli;           /* LLMBOX_SANDBOX_CPU_MILLI, default 0 (no CPU limit); 1000 = one core */
    int sandbox_disk_mib;            /* LLMBOX_SANDBOX_DISK_MIB, default 1024: writable layer + /tmp */
    uint32_t sandbox_uid_base;       /* LLMBOX_SANDBOX_UID_BASE, default 1879048192 (0x70000000):
                                        sandbox uid/gid 0..65535 are host ids BASE..BASE+65535 */
    char default_image[64];          /* LLMBOX_IMAGE, default "default" */

    /* sandbox life cycle (sandboxd: pool.c, sandbox_net.c, the reaper) */
    int pool_size;                   /* LLMBOX_POOL_SIZE, default 4: ready sandboxes per pooled image; 0 = no pool */
    char pool_images[256];           /* LLMBOX_POOL_IMAGES, default the default image: comma-separated */
    int sandbox_ttl_max_s;           /* LLMBOX_SANDBOX_TTL_MAX_S, default 0 (none): caps every sandbox's ttl_s */
    char network_allow[64];          /* LLMBOX_NETWORK_ALLOW, default "none": modes clients may ask for ("none,nat") */
    /* The sandbox API for outside clients (/api/sandboxes). */
    char sandbox_api_token[256];     /* LLMBOX_SANDBOX_API_TOKEN; "" = the API answers 403.
                                        Never logged; removed from the web's environment
                                        at start so agents never inherit it. */
    int sandbox_api_max;             /* LLMBOX_SANDBOX_API_MAX, default 128 sandboxes at once */
    int sandbox_api_ttl_s;           /* LLMBOX_SANDBOX_API_TTL_S, default 3600: ttl_s when a spec has none */
    int sandbox_api_ttl_max_s;       /* LLMBOX_SANDBOX_API_TTL_MAX_S, default 86400: largest ttl_s accepted */
    int sandbox_api_exec_max_s;      /* LLMBOX_SANDBOX_API_EXEC_MAX_S, default 1800: largest exec timeout_s
                                        (keep it below nginx's fastcgi_read_timeout for /api/sandboxes) */
} lb_config;

/* Fills cfg from the defaults and the environment; creates nothing. */
int lb_config_load(lb_config *cfg);
/* The process-wide config, loaded once by main(). */
const lb_config *lb_cfg(void);
lb_config *lb_cfg_mut(void);

#endif
