/* Runtime configuration: built-in defaults, then llmbox.conf (parsed with
 * libinih), then the environment, which wins. Every global key of the file
 * has an environment variable, and both go through the same setter, so a
 * value means the same wherever it comes from (see the key table in
 * config.c; adding a setting is one line there). Every path is absolute
 * after lb_config_load.
 *
 * Named models come from [model "NAME"] sections; the LLMBOX_LLM_* variables
 * describe (or override) the model named "default". API keys are never
 * stored here: a model names the environment variable that holds its key
 * (api_key_env), read only when a request is made. */
#ifndef LB_CONFIG_H
#define LB_CONFIG_H
#include <stddef.h>
#include <stdint.h>
#include "status.h"

#define LB_CFG_PATH 1024
#define LB_CFG_MAX_MODELS 32
#define LB_CFG_MODEL_NAME 64          /* [A-Za-z0-9._-]{1,63} */
#define LB_CFG_EXTRA_MAX 8192         /* extra_body JSON text */
#define LB_CFG_MAX_TOOLS 64
#define LB_CFG_TOOL_NAME 65           /* [a-z0-9_]{1,64} */
#define LB_CFG_FILE_MAX (1u << 20)    /* llmbox.conf */
#define LB_CFG_MAX_USERS 256
#define LB_CFG_USER_NAME 64           /* [A-Za-z0-9._-]{1,63}, like model names */
#define LB_CFG_USER_TOKENS 4          /* token hashes per user (rotation: old and new) */
#define LB_CFG_LISTEN 80              /* "ADDR:PORT" */
#define LB_CFG_ALLOWED_HOSTS 512      /* allowed_hosts, normalized */
#define LB_CFG_MAX_ALLOWED_HOSTS 16   /* names in allowed_hosts */
#define LB_CFG_E2B_DOMAIN 254         /* e2b_domain (E2B's protocol): a DNS name */
#define LB_CFG_MAX_MCP 16             /* [mcp "NAME"] sections */
#define LB_CFG_MCP_NAME 32            /* [A-Za-z0-9_-]{1,31} without "__": NAME__tool fits in 64 */
#define LB_CFG_MCP_HEADERS 4          /* header, header2, header3, header4 */
#define LB_CFG_MCP_LIST 256           /* a model's mcp = a, b (names, comma-separated) */

typedef enum lb_cfg_tool_mode {
    LB_CFG_TOOLS_NATIVE = 0,
    LB_CFG_TOOLS_TEXT = 1,
} lb_cfg_tool_mode;

/* One named model. Sampling values that are not set are not sent. */
typedef struct lb_model_cfg {
    char name[LB_CFG_MODEL_NAME];
    char provider[16];               /* openai | anthropic | replay */
    char base_url[LB_CFG_PATH];      /* http(s)://host[:port]/v1 or the endpoint itself */
    char model[256];                 /* the id sent to the endpoint (default: the name) */
    char api_key_env[128];           /* NAME of the variable holding the key; "" = no key */
    char replay_file[LB_CFG_PATH];   /* replay: the recording to play */
    char extra_body[LB_CFG_EXTRA_MAX]; /* a JSON object merged into each request; "" = none */
    double temperature, top_p, min_p, repetition_penalty; /* NAN = not set */
    int top_k;                       /* -1 = not set */
    int max_tokens;                  /* 0 = not set (anthropic sends 8192) */
    int tool_mode;                   /* lb_cfg_tool_mode */
    int tool_names;                  /* 0: llmbox's (bash, file_editor, finish); 1: the official
                                      * runner's (execute_bash, str_replace_editor, submit) */
    int timeout_s;                   /* one request; 0 = llm_timeout_s */
    int retries;                     /* after the first try, on 429/5xx/connection errors */
    int context_length;              /* 0 = unknown; used to size a retry after a context error */
    int capture_tokens;              /* 1: ask for exact token ids and log-probabilities
                                      * (openai provider; the task option may override) */
    char origin[LB_CFG_PATH + 32];   /* where it was defined: "llmbox.conf:12" or "the environment" */
    char mcp[LB_CFG_MCP_LIST];       /* MCP servers its tasks are offered: names of [mcp] sections,
                                      * comma-separated; "" = none (a task's mcp option wins) */
} lb_model_cfg;

/* A secret the network gateway adds to sandboxes' HTTPS requests
 * ([secret "NAME"] in llmbox.conf, config_secret.c; docs/NETWORK.md). The
 * value itself is never kept here: only where sandboxd reads it when a
 * sandbox names the secret (a file, or sandboxd's environment). */
#define LB_CFG_MAX_SECRETS 16
typedef struct lb_secret_cfg {
    char name[64];                   /* [A-Za-z0-9._-], as a policy's "secrets" names it */
    char hosts[1024];                /* names (a.com, *.a.com) the header goes to; commas or blanks */
    char header[512];                /* "Name: text{value}text", {value} once */
    char value_file[LB_CFG_PATH];    /* the value: this file's content (one trailing newline cut) */
    char value_env[128];             /* or this variable of sandboxd's environment */
    int line;
} lb_secret_cfg;

/* One user of the service ([user "NAME"] in llmbox.conf). Only SHA-256
 * hashes of the user's API tokens are kept: tokens are 256 random bits
 * (`llmbox user add` makes them), so a plain hash cannot be reversed. */
typedef struct lb_user_cfg {
    char name[LB_CFG_USER_NAME];
    char token_sha256[LB_CFG_USER_TOKENS][65]; /* lowercase hex */
    int n_tokens;
    int max_tasks;                   /* tasks queued or running at once; 0 = no per-user limit */
    int tasks_per_minute;            /* task starts in any 60 s; 0 = no per-user limit */
    int max_sandboxes;               /* sandbox API (and E2B) sandboxes at once with its token; 0 = no own limit */
    int sandboxes_per_minute;        /* sandbox creates in any 60 s; 0 = no per-user limit */
    uint64_t max_upload_bytes;       /* one task's upload; never above max_upload_bytes */
    char network_egress_max[2048];   /* network rules this user's sandboxes may ask for, within the service's
                                        network_egress_max; "" = the service's (common/netpolicy.h) */
    uint64_t network_max_bytes;      /* network_max_mb: bytes a sandbox's gateway relays; 0 = the service's */
    int line;                        /* the line of its first key in the file */
} lb_user_cfg;

/* One MCP server whose tools the agent may offer ([mcp "NAME"] in
 * llmbox.conf; config_mcp.c). Exactly one of command (a stdio server: run
 * inside the task's sandbox, with its isolation and network) and url (a
 * Streamable HTTP server, reached from the host). The headers are secrets:
 * sent only to url, never echoed, logged, shown to the model or put into
 * a sandbox. */
typedef struct lb_mcp_cfg {
    char name[LB_CFG_MCP_NAME];
    char command[512];               /* sh -c command inside the sandbox; "" for url */
    char url[LB_CFG_PATH];           /* http(s)://...; "" for command */
    char headers[LB_CFG_MCP_HEADERS][512]; /* "Name: value" */
    int n_headers;
    int timeout_s;                   /* one request (initialize, tools/list, tools/call); default 60 */
    int line;                        /* of its first key in the file */
} lb_mcp_cfg;

typedef struct lb_config {
    char home[LB_CFG_PATH];          /* LLMBOX_HOME, default: the cwd (environment only) */
    char conf_path[LB_CFG_PATH];     /* the file read (LLMBOX_CONF or $home/llmbox.conf), "" if none */
    char var_dir[LB_CFG_PATH];       /* var_dir | LLMBOX_VAR, default $home/var */
    char artifacts_dir[LB_CFG_PATH]; /* artifacts_dir | LLMBOX_ARTIFACTS, default $home/artifacts */
    char plugin_dir[LB_CFG_PATH];    /* plugin_dir | LLMBOX_PLUGINS, default $home/plugins */
    char prompts_dir[LB_CFG_PATH];   /* prompts_dir | LLMBOX_PROMPTS, default $home/server/agent/prompts */
    char images_dir[LB_CFG_PATH];    /* images_dir | LLMBOX_IMAGES: recipes, default $home/images */
    char image_store[LB_CFG_PATH];   /* image_store | LLMBOX_IMAGE_STORE: built roots, default $var/images */
    char insecure_registries[1024];  /* insecure_registries | LLMBOX_INSECURE_REGISTRIES, default "": registries
                                        (host[:port], comma-separated) pulled from over plain HTTP; loopback
                                        always may be */
    char registry_auth_file[LB_CFG_PATH]; /* registry_auth_file | LLMBOX_REGISTRY_AUTH_FILE, default "": a Docker-style
                                        auth.json with registry credentials */
    char db_path[LB_CFG_PATH];       /* db_path | LLMBOX_DB, default $var/web/llmbox.db */
    /* several nodes: db_url | LLMBOX_DB_URL, default "": the store in SQLite at
     * db_path. A postgresql:// URL: the store in that PostgreSQL database
     * (a secret: it may hold a password, never echoed nor logged). db_path's
     * folder still holds the logs, evaluations and leases. */
    char db_url[1024];
    char web_socket[LB_CFG_PATH];    /* web_socket | LLMBOX_WEB_SOCKET, default $var/web/web.sock */
    char sandboxd_socket[LB_CFG_PATH]; /* sandboxd_socket | LLMBOX_SANDBOXD_SOCKET, default $var/run/sandboxd.sock */
    char self_exe[LB_CFG_PATH];      /* /proc/self/exe, for spawning agents */

    int llm_timeout_s;               /* llm_timeout_s | LLMBOX_LLM_TIMEOUT_S, default 600: one model request */
    lb_model_cfg models[LB_CFG_MAX_MODELS];
    int n_models;
    char default_model[LB_CFG_MODEL_NAME]; /* default_model | LLMBOX_DEFAULT_MODEL */

    char web_user[64];               /* web_user | LLMBOX_WEB_USER: user that web and agents run as when started as root ("" = stay) */
    int web_threads;                 /* web_threads | LLMBOX_WEB_THREADS, default 32 */

    uint64_t max_upload_bytes;       /* max_upload_mb | LLMBOX_MAX_UPLOAD_MB, default 100 MiB per task (body) */
    uint64_t max_output_bytes;       /* max_output_mb | LLMBOX_MAX_OUTPUT_MB, default 1024 MiB of artifacts per task */
    int max_output_files;            /* 10000 */
    int max_turns_default;           /* max_turns | LLMBOX_MAX_TURNS, default 100 */
    int max_turns_limit;             /* 1000 */
    int max_concurrent_tasks;        /* max_tasks | LLMBOX_MAX_TASKS, default 16 */
    /* Evaluations (jobs/eval_runner.c). */
    int eval_reserve_slots;          /* eval_reserve_slots | LLMBOX_EVAL_RESERVE_SLOTS, default -1 = max(2, max_tasks / 4),
                                        never more than max_tasks - 1: task slots no eval may take, so people's
                                        tasks always find one */
    int eval_max_concurrency;        /* eval_max_concurrency | LLMBOX_EVAL_MAX_CONCURRENCY, default 64: tasks one eval
                                        runs at once, at most */
    uint64_t eval_max_upload_bytes;  /* eval_max_upload_mb | LLMBOX_EVAL_MAX_UPLOAD_MB, default 64 MiB: one eval's
                                        upload (dataset + resume file), and its dataset unpacked */
    int eval_max_rows;               /* eval_max_rows | LLMBOX_EVAL_MAX_ROWS, default 10000: rows of one dataset */
    int score_threads;               /* score_threads | LLMBOX_SCORE_THREADS, default 4: `llmbox score` processes at once
                                        (evals' and rollouts' scoring, jobs/score_pool.c) */
    /* Rollout groups (jobs/rollout_runner.c, handlers_rollouts.c). */
    int rollout_max_samples;         /* rollout_max_samples | LLMBOX_ROLLOUT_MAX_SAMPLES, default 1024: samples running
                                        at once in all groups (each also needs a task slot of max_tasks) */
    uint64_t rollout_max_body_bytes; /* rollout_max_body_mb | LLMBOX_ROLLOUT_MAX_BODY_MB, default 16 MiB: one POST
                                        /api/rollouts body (its files included) */
    int rollout_allow_model_url;     /* rollout_allow_model_url | LLMBOX_ROLLOUT_ALLOW_MODEL_URL, default 0: 1 lets a
                                        rollout request name its own inference endpoint (model_url): the agents then
                                        make requests to any URL a client gives, from this host's network */
    char rollout_model_url_allow[1024]; /* rollout_model_url_allow | LLMBOX_ROLLOUT_MODEL_URL_ALLOW, default "public":
                                        the targets a task's model_url may reach (common/netcheck.h: public, CIDRs,
                                        host names); loopback, link-local and private addresses only when listed */
    int score_fast_threads;          /* score_fast_threads | LLMBOX_SCORE_FAST_THREADS, default 2: the score pool's
                                        lane for the built-in scorers that need no sandbox (exact, numeric, choice),
                                        so they never wait behind script and judge scorers */
    int score_user_share;            /* score_user_share | LLMBOX_SCORE_USER_SHARE, default 0 = half of score_threads
                                        (at least 1): score_threads one user's scorers may hold at once */
    int rollout_max_waiters;         /* rollout_max_waiters | LLMBOX_ROLLOUT_MAX_WAITERS, default -1 = web_threads / 4:
                                        `?wait=` long-polls and event streams held at once */
    int cmd_timeout_s;               /* cmd_timeout_s | LLMBOX_CMD_TIMEOUT_S, default 120: one bash call */
    int task_timeout_s;              /* task_timeout_s | LLMBOX_TASK_TIMEOUT_S, default 3600: default and
                                      * maximum wall-clock time of one task */
    int task_deadline_grace_s;       /* task_deadline_grace_s | LLMBOX_TASK_DEADLINE_GRACE_S, default 30:
                                      * after timeout_s + this the web kills an agent that has not ended
                                      * its task itself (web/spawn.c) */
    int download_link_ttl_s;         /* download_link_ttl_s | LLMBOX_DOWNLOAD_LINK_TTL_S, default 3600:
                                      * how long a signed download link works; 0: no links */
    int agent_spare;                 /* agent_spare | LLMBOX_AGENT_SPARE, default 1: keep one agent
                                        started ahead, waiting for the next task */
    int tool_timeout_s;              /* tool_timeout_s | LLMBOX_TOOL_TIMEOUT_S, default 60: time a plugin
                                      * may spend in its own code in one call (sandbox waits not counted) */
    int64_t token_budget;            /* token_budget | LLMBOX_TOKEN_BUDGET, default 65536 (0 = none) */
    int64_t token_budget_max;        /* token_budget_max | LLMBOX_TOKEN_BUDGET_MAX: the most a task may ask for */
    int sandbox_memory_mib;          /* sandbox_memory_mib | LLMBOX_SANDBOX_MEMORY_MIB, default 2048 */
    int sandbox_pids;                /* sandbox_pids | LLMBOX_SANDBOX_PIDS, default 512 */
    char default_image[64];          /* image | LLMBOX_IMAGE, default "default" */
    int bash_soft_timeout_s;         /* bash_soft_timeout_s | LLMBOX_BASH_SOFT_TIMEOUT_S, default 10: a bash
                                        call returns "still running" after this; the command goes on */
    /* follow-ups */
    int followup_keep_s;             /* followup_keep_s | LLMBOX_FOLLOWUP_KEEP_S, default 600: a task's sandbox
                                        is kept this long after a round for the next message (0: never) */
    int followup_max_kept;           /* followup_max_kept | LLMBOX_FOLLOWUP_MAX_KEPT, default 16: sandboxes kept
                                        between rounds at once, machine-wide (a count; 0: no cap) */
    int sandbox_max;                 /* sandbox_max | LLMBOX_SANDBOX_MAX, default 1024: sandboxes at once in sandboxd */
    int sandbox_max_per_conn;        /* sandbox_max_per_conn | LLMBOX_SANDBOX_MAX_PER_CONN, default 32: per client connection */
    int sandbox_cpu_milli;           /* sandbox_cpu_milli | LLMBOX_SANDBOX_CPU_MILLI, default 0 (no CPU limit); 1000 = one core */
    int sandbox_disk_mib;            /* sandbox_disk_mib | LLMBOX_SANDBOX_DISK_MIB, default 1024: writable layer + /tmp */
    int sandbox_files;               /* sandbox_files | LLMBOX_SANDBOX_FILES, default 0 (derived from fs.file-max):
                                        open files one sandbox may hold in all; each process gets files / pids */
    int sandbox_ptys;                /* sandbox_ptys | LLMBOX_SANDBOX_PTYS, default 256: ptys per sandbox (devpts max=) */
    int sandbox_max_memory_mib;      /* sandbox_max_memory_mib | LLMBOX_SANDBOX_MAX_MEMORY_MIB, default 0 = half of
                                        the host's RAM: the largest memory_mib a spec may ask for */
    int sandbox_max_pids;            /* sandbox_max_pids | LLMBOX_SANDBOX_MAX_PIDS, default 4096, never above half of
                                        kernel.pid_max: the largest pids a spec may ask for */
    uint32_t sandbox_uid_base;       /* sandbox_uid_base | LLMBOX_SANDBOX_UID_BASE, default 1879048192 (0x70000000):
                                        the images' ids on disk are host ids BASE..BASE+65535 */
    int sandbox_uid_slots;           /* sandbox_uid_slots | LLMBOX_SANDBOX_UID_SLOTS, default 4095: host id
                                        ranges above BASE, one per live sandbox (at most 65533, capped
                                        below 2^32 - 65536; above 4095 with the default base they
                                        reach ids >= 2^31: uidslot.h);
                                        0: all sandboxes share BASE.. (sandbox/uidslot.h) */

    /* sandbox life cycle (sandboxd: pool.c, sandbox_net.c, the reaper) */
    int pool_size;                   /* pool_size | LLMBOX_POOL_SIZE, default 4: ready sandboxes per pooled image; 0 = no pool */
    int sandboxd_workers;            /* sandboxd_workers | LLMBOX_SANDBOXD_WORKERS, default 4: sandboxd's
                                      * threads for the blocking work (sandboxd/workers.h) */
    int sandboxd_max_conns;          /* sandboxd_max_conns | LLMBOX_SANDBOXD_MAX_CONNS, default 256: client
                                        connections sandboxd serves at once (the web holds one per API
                                        sandbox: at least sandbox_api_max + a few) */
    int image_jobs_max;              /* image_jobs_max | LLMBOX_IMAGE_JOBS_MAX, default 4: image pulls and builds
                                        sandboxd runs at once for the web (sandboxd/image_jobs.h) */
    int image_pull_wait_s;           /* image_pull_wait_s | LLMBOX_IMAGE_PULL_WAIT_S, default 240 (below nginx's
                                        300 s for /api/): how long a create waits for the first-use pull
                                        sandboxd runs for the web */
    char pool_images[256];           /* pool_images | LLMBOX_POOL_IMAGES, default the default image: comma-separated */
    int sandbox_ttl_max_s;           /* sandbox_ttl_max_s | LLMBOX_SANDBOX_TTL_MAX_S, default 0 (none): caps every sandbox's ttl_s */
    char network_egress_max[2048];   /* network_egress_max | LLMBOX_NETWORK_EGRESS_MAX, default "": the rules a
                                        sandbox's network {"allow": [...]} may use, through the gateway (netgw/;
                                        common/netpolicy.h); "" allows no rules */
    char network_allow[64];          /* network_allow | LLMBOX_NETWORK_ALLOW, default "none": modes clients may ask for ("none,nat") */
    int network_bandwidth_max;       /* network_bandwidth_max | LLMBOX_NETWORK_BANDWIDTH_MAX, default 0 (none): bytes
                                        per second each way a sandbox's gateway relays; caps a policy's "bandwidth" */
    uint64_t network_max_bytes;      /* network_max_mb | LLMBOX_NETWORK_MAX_MB, default 0 (none): bytes, both ways
                                        together, a sandbox's gateway relays in its life; caps a policy's "max_bytes" */
    char network_upstream_ca[LB_CFG_PATH]; /* network_upstream_ca | LLMBOX_NETWORK_UPSTREAM_CA, default "": the
                                        gateway trusts these CA certificates upstream instead of the system's
                                        (tests; a private CA) */
    lb_secret_cfg secrets[LB_CFG_MAX_SECRETS]; /* [secret "NAME"] sections (config_secret.c) */
    int n_secrets;
    /* saved sandbox states (follow-ups): var/sandboxd/states/ */
    int sandbox_state_max_mib;       /* sandbox_state_max_mib | LLMBOX_SANDBOX_STATE_MAX_MIB, default 1024: cap of one
                                        saved state, compressed */
    int sandbox_state_max_age_s;     /* sandbox_state_max_age_s | LLMBOX_SANDBOX_STATE_MAX_AGE_S, default 7 days:
                                        older saved states are removed */
    int image_layer_max_mib;         /* image_layer_max_mib | LLMBOX_IMAGE_LAYER_MAX_MIB, default 16384: one layer's
                                        files together, at import */
    int image_layer_max_entries;     /* image_layer_max_entries | LLMBOX_IMAGE_LAYER_MAX_ENTRIES, default 1000000 */
    /* The sandbox API for outside clients (/api/sandboxes). */
    char sandbox_api_token[256];     /* sandbox_api_token | LLMBOX_SANDBOX_API_TOKEN; "" = the API answers 403.
                                        Never logged; removed from the web's environment
                                        at start so agents never inherit it. */
    int sandbox_api_max;             /* sandbox_api_max | LLMBOX_SANDBOX_API_MAX, default 128 sandboxes at once */
    int sandbox_api_ttl_s;           /* sandbox_api_ttl_s | LLMBOX_SANDBOX_API_TTL_S, default 3600: ttl_s when a spec has none */
    int sandbox_api_lease_s;         /* sandbox_api_lease_s | LLMBOX_SANDBOX_API_LEASE_S, default 60: API sandboxes
                                      * outlive a web that is gone this long (sbxapi/sandbox_leases.h) */
    int sandbox_api_ttl_max_s;       /* sandbox_api_ttl_max_s | LLMBOX_SANDBOX_API_TTL_MAX_S, default 86400: largest ttl_s accepted */
    uint64_t sandbox_api_body_bytes; /* sandbox_api_body_mb | LLMBOX_SANDBOX_API_BODY_MB, default 16 MiB: one JSON
                                        body of the sandbox API (create, exec); files have their own route */
    int sandbox_api_exec_max_s;      /* sandbox_api_exec_max_s | LLMBOX_SANDBOX_API_EXEC_MAX_S, default 1800: largest exec
                                        timeout_s (keep it below nginx's fastcgi_read_timeout for /api/sandboxes) */

    /* tools | LLMBOX_TOOLS: the tools offered to the model, default
     * "bash, file_editor, finish"; "all" offers every loaded tool. finish
     * is always on. */
    char tools[LB_CFG_MAX_TOOLS][LB_CFG_TOOL_NAME];
    int n_tools;
    int tools_all;
    uint64_t max_unpack_bytes;       /* max_unpack_mb | LLMBOX_MAX_UNPACK_MB, default 1024 MiB unpacked from a task's archives */
    int sse_max_per_client;          /* sse_max_per_client | LLMBOX_SSE_MAX_PER_CLIENT, default 8: open event streams
                                        per user (per client address without users) */
    int sse_reserve_threads;         /* sse_reserve_threads | LLMBOX_SSE_RESERVE_THREADS, default 8: web threads no
                                        event stream may take (at most a quarter of web_threads) */
    int sse_max_s;                   /* sse_max_s | LLMBOX_SSE_MAX_S, default 0 (none): an event stream ends after this long
                                        and the browser resumes it with Last-Event-ID */
    int bundle_max_building;         /* bundle_max_building | LLMBOX_BUNDLE_MAX_BUILDING, default 4: bundles being built
                                        (or waited for) at once, each in a web thread; more are refused (503) */
    int bundle_max_per_user;         /* bundle_max_per_user | LLMBOX_BUNDLE_MAX_PER_USER, default 2: of those, per user
                                        (per client address without users); more are refused (429) */
    int unpack_max_running;          /* unpack_max_running | LLMBOX_UNPACK_MAX_RUNNING, default 4: uploaded archives (task
                                        inputs, eval datasets) unpacked at once, each in a web thread; more: 503 */
    int unpack_max_per_user;         /* unpack_max_per_user | LLMBOX_UNPACK_MAX_PER_USER, default 2: of those, per user
                                        (per client address without users); more: 429 */
    int blob_fetch_max;              /* blob_fetch_max | LLMBOX_BLOB_FETCH_MAX, default 8: files fetched from the object
                                        store at once before nginx serves them, each in a web thread; more: 503 */
    int blob_fetch_max_per_user;     /* blob_fetch_max_per_user | LLMBOX_BLOB_FETCH_MAX_PER_USER, default 4: of those, per
                                        user (per client address without users); more: 429 */
    int e2b_port_max;                /* e2b_port_max | LLMBOX_E2B_PORT_MAX, default 0 (a quarter of web_threads): requests
                                        relayed to sandboxes' ports at once, each in a web thread (503 past it) */
    int e2b_port_max_per_sandbox;    /* e2b_port_max_per_sandbox | LLMBOX_E2B_PORT_MAX_PER_SANDBOX, default 8: of those,
                                        per sandbox (429 past it) */
    int e2b_port_head_s;             /* e2b_port_head_s | LLMBOX_E2B_PORT_HEAD_S, default 30: a relayed request's whole
                                        sending and its answer's head, at most (then 504) */
    int e2b_ports_public;            /* e2b_ports_public | LLMBOX_E2B_PORTS_PUBLIC, default 0: 1 serves E2B sandboxes'
                                        ports without the traffic token unless created with allowPublicTraffic false */
    int volume_max_per_owner;        /* volume_max_per_owner | LLMBOX_VOLUME_MAX_PER_OWNER, default 8: E2B volumes one
                                        key (a user's, or the shared token) holds on a node (sandboxd checks) */
    uint64_t volume_max_bytes_per_owner; /* volume_max_mb_per_owner | LLMBOX_VOLUME_MAX_MB_PER_OWNER, default 1024: the
                                        bytes of files in one key's volumes (sandboxd checks, volumes/volume_store.h) */

    /* Access (config_user.c). With no user, the service has no login and
     * serves loopback only; listen beyond loopback is refused then. */
    lb_user_cfg users[LB_CFG_MAX_USERS];
    int n_users;
    char listen[LB_CFG_LISTEN];      /* listen | LLMBOX_LISTEN, default "127.0.0.1:8080": nginx's address
                                        (scripts/run.sh writes it into the nginx config it starts) */
    int user_max_tasks;              /* user_max_tasks | LLMBOX_USER_MAX_TASKS, default 4: per user, queued or running */
    int user_tasks_per_minute;       /* user_tasks_per_minute | LLMBOX_USER_TASKS_PER_MINUTE, default 10 */
    int user_max_sandboxes;          /* user_max_sandboxes | LLMBOX_USER_MAX_SANDBOXES, default 4 */
    int user_sandboxes_per_minute;   /* user_sandboxes_per_minute | LLMBOX_USER_SANDBOXES_PER_MINUTE, default 20 */
    uint64_t user_max_upload_bytes;  /* user_max_upload_mb | LLMBOX_USER_MAX_UPLOAD_MB, default 0 = max_upload_mb */
    int session_ttl_s;               /* session_ttl_s | LLMBOX_SESSION_TTL_S, default 604800 (7 days) from login */
    char cookie_secure[8];           /* cookie_secure | LLMBOX_COOKIE_SECURE: "auto" (Secure when the request came
                                        over TLS) or "on" (always) */
    /* E2B's protocol: E2B_DOMAIN host names <port>-<sandbox id>.<e2b_domain> are
     * this service's, and each names that sandbox's envd (docs/E2B.md) */
    char e2b_domain[LB_CFG_E2B_DOMAIN]; /* e2b_domain | LLMBOX_E2B_DOMAIN, default "": none */
    char allowed_hosts[LB_CFG_ALLOWED_HOSTS]; /* allowed_hosts | LLMBOX_ALLOWED_HOSTS, default "": the names (with an
                                        optional :port) this service is reached by beyond loopback and its listen
                                        address, e.g. "llmbox.example.org"; stored lowercase, comma-separated.
                                        Any other Host header is refused (DNS rebinding), and an Origin naming
                                        one of them counts as this service's own (a proxy that rewrites Host) */
    /* Object storage (several nodes, common/s3.c, common/blobstore.c): task inputs
     * and outputs in an S3-compatible bucket when s3_bucket is set; local
     * files under artifacts_dir otherwise (the default). */
    char s3_endpoint[256];           /* s3_endpoint | LLMBOX_S3_ENDPOINT: http(s)://host[:port] */
    char s3_bucket[64];              /* s3_bucket | LLMBOX_S3_BUCKET, default "": no object store */
    char s3_region[64];              /* s3_region | LLMBOX_S3_REGION, default us-east-1 (signed into requests) */
    char s3_access_key[128];         /* s3_access_key | LLMBOX_S3_ACCESS_KEY */
    char s3_secret_key[256];         /* s3_secret_key | LLMBOX_S3_SECRET_KEY (a secret: never echoed) */
    char s3_addressing[16];          /* s3_addressing | LLMBOX_S3_ADDRESSING: path (default) or virtual */
    int s3_timeout_s;                /* s3_timeout_s | LLMBOX_S3_TIMEOUT_S, default 30: connect, and longest stall */
    int s3_retries;                  /* s3_retries | LLMBOX_S3_RETRIES, default 3: extra tries on 5xx and
                                        connection errors, with backoff */
    int artifacts_cache_max_mb;      /* artifacts_cache_max_mb | LLMBOX_ARTIFACTS_CACHE_MAX_MB, default 0 (off):
                                        with s3_bucket, the web trims artifacts/ (the bucket's cache here) to
                                        this, oldest first, only what the bucket holds (web/cache_trim.h) */
    int artifacts_cache_trim_s;      /* artifacts_cache_trim_s | LLMBOX_ARTIFACTS_CACHE_TRIM_S, default 300 */
    int artifacts_cache_min_age_s;   /* artifacts_cache_min_age_s | LLMBOX_ARTIFACTS_CACHE_MIN_AGE_S, default
                                        600: a task folder written to less than this ago is kept */
    /* The queue and the nodes (several nodes, server/node/, store/store_queue.h) */
    char task_runner[8];             /* task_runner | LLMBOX_TASK_RUNNER: local (default: the web spawns agents)
                                        or queue (the web only queues; `llmbox node` runs them) */
    char node_name[64];              /* node_name | LLMBOX_NODE_NAME, default "": the host name's first label */
    int node_capacity;               /* node_capacity | LLMBOX_NODE_CAPACITY, default 4: tasks a node runs at once */
    int node_lease_s;                /* node_lease_s | LLMBOX_NODE_LEASE_S, default 15: a node's lease, renewed
                                        every third of it */
    char node_listen[LB_CFG_LISTEN]; /* node_listen | LLMBOX_NODE_LISTEN, default 127.0.0.1:8090: GET /healthz */
    int runner_lease_s;              /* runner_lease_s | LLMBOX_RUNNER_LEASE_S, default 15: a web's claim on an
                                        evaluation or rollout group (store/store_claim.h), renewed every third */
    lb_mcp_cfg mcp[LB_CFG_MAX_MCP];  /* [mcp "NAME"] sections (config_mcp.c) */
    int n_mcp;
} lb_config;

/* Fills cfg from the defaults, the config file and the environment;
 * creates nothing. On failure returns an lb_status and keeps a sentence
 * (naming file:line, or the variable) for lb_config_error(). */
LB_MUST_CHECK int lb_config_load(lb_config *cfg);
/* Why the last lb_config_load failed ("" after a success). */
const char *lb_config_error(void);

/* Whether network mode `mode` ("none", "nat") is in network_allow;
 * "none" (and NULL or "") always is. */
int lb_cfg_network_allowed(const lb_config *cfg, const char *mode);

/* The caps sandbox_max_memory_mib and sandbox_max_pids resolve to on a
 * host with ram_mib of memory and kernel.pid_max pid_max (0: unknown):
 * memory as configured, or half the RAM when 0; pids as configured, never
 * above pid_max / 2. */
int lb_cfg_cap_memory_mib(int configured, uint64_t ram_mib);
int lb_cfg_cap_pids(int configured, uint64_t pid_max);

/* The process-wide config, loaded once by main(). Only the entry points
 * take it (main.c, the subcommands' *_main.c files, cmd_user.c,
 * plugin_check.c, image_build.c: CONFIG_ENTRY in scripts/checksrc, which
 * refuses a call anywhere else); they hand a const lb_config * (or the
 * values needed) to what they call, so every signature says what it
 * depends on.
 *
 * Threads: it is written only by the entry points, before any thread
 * starts and before it is handed out (lb_config_load; sandboxd's --socket;
 * `llmbox run` finding its home; an agent's reload when a spare takes a
 * task, and the replay model of a "Replay" task). After that it is never
 * written, so the web's worker threads, the sse watcher, the reaper and an
 * agent's watchdog read it concurrently without a lock. Keep it that way:
 * a setting that must change at run time does not belong here. */
const lb_config *lb_cfg(void);
lb_config *lb_cfg_mut(void);

/* The model called name, or the default model when name is NULL or "";
 * NULL when there is no such model. */
const lb_model_cfg *lb_cfg_model(const lb_config *cfg, const char *name);
/* The model of a task that replays another task's trajectory ("Replay" on
 * the page): not a configurable name ('@' is refused in llmbox.conf), so it
 * never clashes with an operator's model. */
#define LB_MODEL_REPLAY_TASK "@replay"
/* Adds the model LB_MODEL_REPLAY_TASK (provider replay, playing file) to
 * cfg; for the agent of such a task. LB_E_TOOBIG when cfg is full or the
 * path too long. */
LB_MUST_CHECK int lb_cfg_add_replay_model(lb_config *cfg, const char *file);
/* The model of a task that names its own endpoint (task option model_url,
 * rollout groups): not a configurable name either. */
#define LB_MODEL_ENDPOINT_TASK "@endpoint"
/* Adds the model LB_MODEL_ENDPOINT_TASK to cfg: the settings of model base
 * (an openai one) with base_url url and, when id is not empty, the model
 * id id; no API key and no extra_body (they are the operator's, for the
 * operator's endpoint). For the agent of such a task. LB_E_NOTFOUND (no
 * base), LB_E_INVAL (base is not openai), LB_E_TOOBIG. */
LB_MUST_CHECK int lb_cfg_add_endpoint_model(lb_config *cfg, const char *base, const char *url, const char *id);
/* The configured model names, "a, b, c" (truncated to outsz). */
void lb_cfg_model_names(const lb_config *cfg, char *out, size_t outsz);
/* The API key of a model (the value of its api_key_env variable), or NULL.
 * Never log it, store it or send it anywhere but to that model's endpoint. */
const char *lb_model_cfg_key(const lb_model_cfg *m);
/* Whether the tool name is offered to the model (tools / LLMBOX_TOOLS). */
int lb_cfg_tool_enabled(const lb_config *cfg, const char *name);
/* The user called name, or NULL. */
const lb_user_cfg *lb_cfg_user(const lb_config *cfg, const char *name);
/* The user one of whose token hashes is SHA-256(token), or NULL (this and
 * lb_cfg_user_has_token are in config_token.c: they need OpenSSL). Looks at
 * every hash of every user in constant time per hash, whatever matches. */
const lb_user_cfg *lb_cfg_user_by_token(const lb_config *cfg, const char *token, size_t len);
/* Whether hash (64 hex) is one of u's token hashes. */
int lb_cfg_user_has_token(const lb_user_cfg *u, const char *hash);
/* Whether the address part of listen ("127.0.0.1:8080", "[::1]:80") or an
 * address alone ("127.0.0.5", "::1", "::ffff:127.0.0.1") is loopback. */
int lb_cfg_addr_is_loopback(const char *addr);
/* Splits a Host value ("name", "name:port", "[v6]", "[v6]:port") into the
 * lowercase host (brackets removed) and the port (0 when none). 0 when it
 * is not of that shape (empty, bad characters, bad port, too long). */
int lb_cfg_host_split(const char *v, size_t n, char *host, size_t hostsz, int *port);
/* Whether host (lowercase, no brackets) and port (0: none) are named by
 * allowed_hosts: an entry without a port names the host on any port. */
int lb_cfg_host_allowed(const lb_config *cfg, const char *host, int port);
/* E2B's protocol: whether host (no port) is "<digits>-<id>.<e2b_domain>" (id:
 * common/node_id.h, "[<node>.]<32 hex>"),
 * an E2B sandbox host name; never when e2b_domain is "". */
int lb_cfg_e2b_host(const lb_config *cfg, const char *host);

/* The MCP server called name, or NULL (config_mcp.c). */
const lb_mcp_cfg *lb_cfg_mcp(const lb_config *cfg, const char *name);
/* The configured MCP server names, "a, b" ("none" when there is none;
 * truncated to outsz). */
void lb_cfg_mcp_names(const lb_config *cfg, char *out, size_t outsz);
/* Whether name may name an MCP server: [A-Za-z0-9_-]{1,31}, no "__", not
 * ending in '_' (so NAME__tool splits one way). A boolean. Pure. */
int lb_cfg_mcp_name_ok(const char *name);
/* Checks a list of MCP server names (commas and blanks between them) and
 * copies each into names (at most max): LB_OK, or LB_E_NOTFOUND / LB_E_INVAL
 * with a sentence in err naming the server that is not configured or the
 * list that is too long. *n gets the count. */
LB_MUST_CHECK int lb_cfg_mcp_list(const lb_config *cfg, const char *list, char (*names)[LB_CFG_MCP_NAME], int max,
                                  int *n, char *err, size_t errsz);

/* Where the store is: db_url when set (a PostgreSQL URL), else db_path
 * (several nodes). What lb_store_open takes. */
const char *lb_cfg_store_where(const lb_config *cfg);

/* "<the database's folder>[/folder[/leaf]]" into out (folder and leaf may
 * be NULL): where the web keeps its small records beside the database
 * (var_dir itself is root's). 1 when it fits, else 0. */
int lb_cfg_beside_db(const lb_config *cfg, const char *folder, const char *leaf, char *out, size_t outsz);

/* "log/" next to the database: where agent logs and crash notes go. */
void lb_cfg_logdir(const lb_config *cfg, char *out, size_t outsz);

#endif
