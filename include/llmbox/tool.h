/*
 * llmbox tool plugin ABI, major version 1.
 *
 * A plugin is a shared object that exports exactly one symbol:
 *
 *     const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *host);
 *
 * The symbol name carries the ABI major version, so a plugin built for
 * another major simply has no symbol the host looks for. The host passes
 * its table of functions; the plugin returns a static descriptor (or NULL
 * to refuse loading, e.g. when host->abi_minor is older than it needs).
 *
 * Compatibility rules (after SQLite extensions and Redis modules):
 *  - Structs start with `size` and only grow at the end. Read a field only
 *    if `size` says it is there (LLMBOX_HAS_FIELD).
 *  - abi_minor grows when fields or functions are appended; a plugin built
 *    against minor N runs on any host with minor >= N.
 *  - Status codes (llmbox_status) only grow; 0 is success.
 *  - Plugins link against nothing of the host; everything goes through the
 *    host table. Build with -fvisibility=hidden and mark only the entry
 *    symbol LLMBOX_PLUGIN_EXPORT.
 *
 * Most plugins need no more than two macros (after SQLite's
 * SQLITE_EXTENSION_INIT1/2), which write the descriptor and the entry:
 *
 *     LLMBOX_PLUGIN_INIT;                 // declares `host`, before the code
 *     ... invoke functions calling host->..., a `tools[]` array ...
 *     LLMBOX_PLUGIN_DEFINE("name", "1.0", tools);   // at the end
 *
 * They produce exactly what a hand-written plugin exports (see the end of
 * this file), so the ABI does not depend on them.
 *
 * Ownership: every pointer the host hands out stays owned by the host and
 * is valid until the tool's invoke() returns, unless said otherwise. The
 * plugin frees nothing it did not allocate, and the host frees nothing the
 * plugin allocated.
 *
 * History of the minor version:
 *   1.0  the first ABI
 *   1.1  host->exec_ex with llmbox_exec_opts (hard and soft timeouts; a
 *        command may still be running when the call returns, see exec_ex),
 *        LLMBOX_EXEC_RUNNING, LLMBOX_ERR_BUSY, llmbox_exec_result.timeout_ms,
 *        the "{soft_timeout_s}" description placeholder.
 */
#ifndef LLMBOX_TOOL_H
#define LLMBOX_TOOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLMBOX_TOOL_ABI_MAJOR 1
#define LLMBOX_TOOL_ABI_MINOR 1
#define LLMBOX_TOOL_ENTRY "llmbox_tool_plugin_v1"

#define LLMBOX_PLUGIN_EXPORT __attribute__((visibility("default")))
#define LLMBOX_HAS_FIELD(ptr, type, field) \
    ((ptr)->size >= offsetof(type, field) + sizeof(((type *)0)->field))

typedef enum llmbox_status {
    LLMBOX_OK = 0,
    LLMBOX_ERR_INVALID = 1,     /* bad arguments (the model's fault) */
    LLMBOX_ERR_SANDBOX = 2,     /* the sandbox failed */
    LLMBOX_ERR_CANCELLED = 3,   /* the task was cancelled */
    LLMBOX_ERR_TOOBIG = 4,      /* a cap was reached */
    LLMBOX_ERR_NOTFOUND = 5,    /* no such file */
    LLMBOX_ERR_EXISTS = 6,      /* file already exists */
    LLMBOX_ERR_INTERNAL = 7,    /* a bug in the plugin or host */
    LLMBOX_ERR_ISDIR = 8,       /* path is a directory */
    LLMBOX_ERR_BUSY = 9,        /* since 1.1: a command still runs in the sandbox's
                                 * shell; wait for it or interrupt it first */
} llmbox_status;

/* Opaque: the task a tool runs for. */
typedef struct llmbox_ctx llmbox_ctx;
/* Opaque: the result of one tool call, filled through host functions. */
typedef struct llmbox_result llmbox_result;

/* How a command in the sandbox ended. */
typedef enum llmbox_exec_state {
    LLMBOX_EXEC_EXITED = 0,     /* exit_code is valid (0 = success) */
    LLMBOX_EXEC_TIMEOUT = 1,    /* killed at the timeout */
    LLMBOX_EXEC_OOM = 2,        /* killed by the memory limit */
    LLMBOX_EXEC_INTERRUPTED = 3,/* interrupted (cancel, C-c) */
    LLMBOX_EXEC_ERROR = 4,      /* the sandbox failed; see stderr */
    LLMBOX_EXEC_RUNNING = 5,    /* since 1.1: still running at the soft timeout;
                                 * out/err hold the output so far (see exec_ex) */
} llmbox_exec_state;

typedef struct llmbox_exec_result {
    size_t size;                /* set by the caller: sizeof(llmbox_exec_result) */
    int state;                  /* llmbox_exec_state */
    int exit_code;              /* valid when state == LLMBOX_EXEC_EXITED */
    const char *out;            /* stdout, host-owned, NUL-terminated */
    size_t out_len;
    const char *err;            /* stderr, host-owned, NUL-terminated */
    size_t err_len;
    int truncated;              /* nonzero if out or err were capped */
    int64_t duration_ms;        /* since the command started (also when it
                                 * was started by an earlier call) */
    int timeout_ms;             /* since 1.1: the hard limit that applies to the
                                 * command, counted from its start */
} llmbox_exec_result;

/* Options of exec_ex (since 1.1). Zero-initialise, set size, then the
 * fields you need. */
#define LLMBOX_SOFT_TIMEOUT_DEFAULT (-1)
typedef struct llmbox_exec_opts {
    size_t size;                /* sizeof(llmbox_exec_opts) */
    int timeout_ms;             /* hard limit from the command's start; <= 0:
                                 * the host default (LLMBOX_CMD_TIMEOUT_S) */
    int soft_timeout_ms;        /* return LLMBOX_EXEC_RUNNING after this long while
                                 * the command keeps running; 0: wait until it ends;
                                 * LLMBOX_SOFT_TIMEOUT_DEFAULT: the host default
                                 * (LLMBOX_BASH_SOFT_TIMEOUT_S) */
} llmbox_exec_opts;

/* Result streams. TEXT is what the model reads; STDOUT/STDERR are shown
 * apart in the UI and also given to the model, labelled. */
enum { LLMBOX_STREAM_TEXT = 0, LLMBOX_STREAM_STDOUT = 1, LLMBOX_STREAM_STDERR = 2 };

/* Flags for write_file. */
#define LLMBOX_WRITE_EXCL 1u    /* fail with LLMBOX_ERR_EXISTS if present */

typedef struct llmbox_dirent {
    const char *path;           /* relative to the listed directory */
    int is_dir;
    uint64_t size;
} llmbox_dirent;

typedef struct llmbox_host {
    size_t size;                /* sizeof(llmbox_host) of the host */
    uint16_t abi_major;
    uint16_t abi_minor;

    /* Runs cmd in the task's persistent bash session (cwd and env persist).
     * timeout_ms <= 0 means the host default. res->size must be set.
     * Returns LLMBOX_OK when the command ran (whatever its exit status).
     * The same as exec_ex without a soft timeout. */
    int (*exec)(llmbox_ctx *ctx, const char *cmd, size_t cmd_len,
                int timeout_ms, llmbox_exec_result *res);
    /* Reads a regular file in the sandbox (absolute path), at most max
     * bytes (LLMBOX_ERR_TOOBIG beyond). *data is host-owned, NUL-terminated,
     * valid until the next read_file call or the end of invoke(). On any
     * error *data is "" (an empty string, never NULL) and *len is 0: no
     * part of the file is handed out, not even on LLMBOX_ERR_TOOBIG. */
    int (*read_file)(llmbox_ctx *ctx, const char *path, size_t max,
                     const char **data, size_t *len);
    /* Writes a file in the sandbox atomically, creating parent dirs. */
    int (*write_file)(llmbox_ctx *ctx, const char *path, const void *data,
                      size_t len, unsigned flags);
    /* Lists a directory down to max_depth levels (1 = its entries), sorted.
     * *ents is host-owned, valid like read_file's data. Hidden entries are
     * included; filter them if needed. LLMBOX_ERR_NOTFOUND if missing,
     * LLMBOX_ERR_INVALID if not a directory. */
    int (*list_dir)(llmbox_ctx *ctx, const char *path, int max_depth,
                    const llmbox_dirent **ents, size_t *n);
    /* Type of a path: 0 missing, 1 regular file, 2 directory, 3 other. */
    int (*path_type)(llmbox_ctx *ctx, const char *path);
    /* Nonzero once the task is cancelled; long tools should check it. */
    int (*is_cancelled)(llmbox_ctx *ctx);
    void (*log)(llmbox_ctx *ctx, int level, const char *msg); /* 0 debug .. 3 error */

    /* Appends to a result stream (capped by the host; extra bytes dropped
     * and the truncation noted for the model). */
    int (*result_append)(llmbox_result *r, int stream, const char *data, size_t len);
    /* Sets the short status shown to the model and the UI:
     * "ok", "exit 2", "still running", "killed (timeout)", "error" ... */
    void (*result_set_status)(llmbox_result *r, const char *status);
    /* Ends the task after this call; answer may be NULL. */
    int (*finish)(llmbox_ctx *ctx, const char *answer, size_t len);

    /* --- since 1.1 (check LLMBOX_HAS_FIELD(host, llmbox_host, exec_ex)) --- */

    /* exec with options: a soft timeout after which the call returns
     * LLMBOX_OK with state LLMBOX_EXEC_RUNNING and the output so far, while
     * the command keeps running in the shell (its output keeps being
     * captured). While it runs, or has ended without its end being
     * returned yet, the next exec / exec_ex on the task must be one of:
     *   cmd ""     keep waiting (up to this call's soft timeout, never past
     *              the command's hard limit); returns the output produced
     *              since the previous return, and the end state when it ended;
     *   cmd "C-c"  interrupt it (SIGINT, then SIGKILL); returns state
     *              LLMBOX_EXEC_INTERRUPTED (or how it ended, if it already had).
     * Any other command returns LLMBOX_ERR_BUSY; "" or "C-c" with no
     * command running returns LLMBOX_ERR_INVALID. read_file, write_file,
     * list_dir and path_type work while a command runs. opts may be NULL
     * (defaults: host hard limit, no soft timeout). */
    int (*exec_ex)(llmbox_ctx *ctx, const char *cmd, size_t cmd_len,
                   const llmbox_exec_opts *opts, llmbox_exec_result *res);
} llmbox_host;

typedef struct llmbox_tool {
    size_t size;                /* sizeof(llmbox_tool) */
    const char *name;           /* [a-z0-9_]{1,64}, unique among loaded tools */
    const char *description;    /* for the model */
    const char *parameters;     /* JSON Schema (object) of the arguments */
    /* args_json: a JSON object already checked against `parameters` for
     * required keys and basic types. Return LLMBOX_OK or an llmbox_status;
     * on error the text appended to r is shown to the model.
     * Limits the host enforces: the time spent in the plugin's own code
     * during one call (host functions that wait on the sandbox are not
     * counted) is capped by the deployment's tool_timeout_s, after which the
     * task ends and invoke never resumes; a crash ends the task (each task
     * has its own agent process); each result stream keeps its first and
     * last 32 KiB; host->log keeps 100 lines per call. */
    int (*invoke)(llmbox_ctx *ctx, const char *args_json, size_t args_len,
                  llmbox_result *r);
} llmbox_tool;

typedef struct llmbox_plugin {
    size_t size;                /* sizeof(llmbox_plugin) */
    uint16_t abi_major;         /* LLMBOX_TOOL_ABI_MAJOR */
    uint16_t abi_minor;         /* LLMBOX_TOOL_ABI_MINOR the plugin was built for */
    const char *name;           /* plugin name, for logs */
    const char *version;        /* plugin version, free form */
    const llmbox_tool *tools;   /* array of n_tools */
    size_t n_tools;
} llmbox_plugin;

typedef const llmbox_plugin *(*llmbox_tool_plugin_fn)(const llmbox_host *host);

/* ---- the plugin-definition macros --------------------------------------
 *
 * LLMBOX_PLUGIN_INIT declares `static const llmbox_host *host;`, the table
 * the plugin's code calls; put it before the first function that uses it.
 *
 * LLMBOX_PLUGIN_DEFINE(NAME, VERSION, TOOLS) defines the descriptor (with
 * n_tools counted from the array TOOLS, which must be an array, not a
 * pointer) and the exported entry llmbox_tool_plugin_v1, which refuses a
 * host of another major or one whose table is shorter than this header's,
 * and keeps the host table in `host`. It declares abi_minor =
 * LLMBOX_TOOL_ABI_MINOR.
 *
 * LLMBOX_PLUGIN_DEFINE_MINOR(NAME, VERSION, TOOLS, MINOR) is the same for a
 * plugin that also loads on older hosts: it declares abi_minor = MINOR and
 * accepts any host of minor >= MINOR (the plugin then reads newer fields
 * only when LLMBOX_HAS_FIELD says they are there).
 *
 * Both expand to the same descriptor and entry a hand-written plugin has
 * (the ABI is the structs and the symbol, not these macros). */
#define LLMBOX_PLUGIN_INIT static const llmbox_host *host

/* The size of the host table of minor `minor`: the end of its last
 * function (1.0: finish, 1.1: exec_ex). */
#define LLMBOX_HOST_SIZE_FOR_MINOR(minor) \
    ((minor) >= 1 ? offsetof(llmbox_host, exec_ex) + sizeof(void (*)(void)) \
                  : offsetof(llmbox_host, finish) + sizeof(void (*)(void)))

#define LLMBOX_PLUGIN_DEFINE(NAME, VERSION, TOOLS) \
    LLMBOX_PLUGIN_DEFINE_MINOR(NAME, VERSION, TOOLS, LLMBOX_TOOL_ABI_MINOR)

#define LLMBOX_PLUGIN_DEFINE_MINOR(NAME, VERSION, TOOLS, MINOR)                          \
    _Static_assert(!__builtin_types_compatible_p(__typeof__(TOOLS), __typeof__(&(TOOLS)[0])), \
                   "LLMBOX_PLUGIN_DEFINE: " #TOOLS " must be an array of llmbox_tool");    \
    static const llmbox_plugin llmbox_plugin_descriptor_ = {                              \
        .size = sizeof(llmbox_plugin),                                                    \
        .abi_major = LLMBOX_TOOL_ABI_MAJOR,                                               \
        .abi_minor = (MINOR),                                                             \
        .name = (NAME),                                                                   \
        .version = (VERSION),                                                             \
        .tools = (TOOLS),                                                                 \
        .n_tools = sizeof(TOOLS) / sizeof((TOOLS)[0]),                                    \
    };                                                                                    \
    LLMBOX_PLUGIN_EXPORT const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *h) \
    {                                                                                     \
        if (!h || h->abi_major != LLMBOX_TOOL_ABI_MAJOR || (int)h->abi_minor < (int)(MINOR) || \
            h->size < LLMBOX_HOST_SIZE_FOR_MINOR(MINOR))                                  \
            return NULL; /* a host too old for what this plugin calls */                  \
        host = h;                                                                         \
        return &llmbox_plugin_descriptor_;                                                \
    }                                                                                     \
    LLMBOX_PLUGIN_EXPORT const llmbox_plugin *llmbox_tool_plugin_v1(const llmbox_host *h)

#ifdef __cplusplus
}
#endif
#endif
