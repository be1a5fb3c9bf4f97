/* The agent: the paper's Algorithm 1 (model -> tool calls -> observations)
 * made robust. Shared by `llmbox agent` (events go to the task store) and
 * `llmbox run` (events go to the terminal) through the lb_sink interface,
 * so both modes run exactly the same code. */
#ifndef LB_AGENT_H
#define LB_AGENT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/status.h"
#include "llmbox/sandbox.h"
#include "store/store.h"

/* ---- model replies (toolcall_parse.c) ---------------------------------- */

typedef struct lb_toolcall {
    char *id;                   /* NULL when the model gave none (the loop makes one) */
    char *name;                 /* never NULL; "" when missing */
    char *arguments;            /* never NULL; JSON text as the model sent it */
} lb_toolcall;

typedef struct lb_model_reply {
    char *content;              /* NULL when none */
    char *reasoning;            /* reasoning_content / reasoning, NULL when none */
    lb_toolcall *calls;
    size_t n_calls;
    char *finish_reason;        /* NULL when none */
    int64_t prompt_tokens;      /* -1 when the server did not say */
    int64_t completion_tokens;
    cJSON *blocks;              /* Anthropic thinking blocks, verbatim (signatures), or NULL;
                                 * sent back in the assistant message as "thinking_blocks" */
    struct lb_turn_tokens *tokens; /* the exact tokens (agent/tokens.h) when they were asked
                                 * for (capture_tokens), else NULL */
} lb_model_reply;

#define LB_MODEL_MAX_CALLS 64   /* tool calls kept from one reply */

/* Parses an OpenAI chat completion response body. Every string kept is
 * sanitized UTF-8. On failure returns LB_E_PROTO with a sentence in err. */
LB_MUST_CHECK int lb_parse_chat_response(const char *body, size_t len, lb_model_reply *r,
                                         char *err, size_t errsz);
/* The same, and with want_tokens the answer's token fields into r->tokens
 * (lb_tokens_parse: a verdict, never a failure of the reply). */
LB_MUST_CHECK int lb_parse_chat_response_tokens(const char *body, size_t len, lb_model_reply *r, int want_tokens,
                                                char *err, size_t errsz);
/* Parses an Anthropic Messages API response body, the same way. */
LB_MUST_CHECK int lb_parse_anthropic_response(const char *body, size_t len, lb_model_reply *r,
                                              char *err, size_t errsz);
void lb_model_reply_free(lb_model_reply *r);
/* The error message in an error body ({"error":{"message"}}, {"error":"..."},
 * {"detail":"..."}), or the start of the body when it is not JSON; one line,
 * sanitized, at most ~300 bytes. */
void lb_model_error_text(const char *body, size_t len, char *out, size_t outsz);

/* ---- model client (model_http.c; requests in model_openai.c and
 * model_anthropic.c) ------------------------------------------------------ */

#define LB_MODEL_MAX_RESPONSE (16u << 20)

/* The API a model's endpoint speaks (provider in llmbox.conf). */
typedef enum lb_provider {
    LB_PROVIDER_OPENAI = 0,
    LB_PROVIDER_ANTHROPIC = 1,
    LB_PROVIDER_REPLAY = 2,     /* no model: a recorded run played back (model_replay.c) */
} lb_provider;

/* How tools reach the model (tool_mode; openai provider). */
typedef enum lb_tool_mode {
    LB_TOOL_MODE_NATIVE = 0,    /* the API's `tools` and tool_calls */
    LB_TOOL_MODE_TEXT = 1,      /* described in the system prompt, called as
                                 * <function=NAME> text, observations as user messages */
} lb_tool_mode;

#define LB_REPLAY_MAX_FILE (64u << 20)

struct lb_config;
struct lb_model_cfg;

typedef struct lb_model {
    const struct lb_model_cfg *cfg; /* the configured model (process lifetime) */
    int provider;               /* lb_provider */
    char name[64];              /* its configured name */
    char url[1200];             /* {base_url}/chat/completions or .../v1/messages */
    char shown_url[1200];       /* the same without user:password@, for messages */
    char model[256];            /* the id sent to the endpoint */
    char auth[600];             /* "Authorization: Bearer ...", "x-api-key: ..." or ""
                                 * (never logged) */
    char key_env[128];          /* where the key came from, for messages ("" = none) */
    int max_tokens;             /* sent when > 0 (anthropic always, 8192 by default);
                                 * lowered after a context-length error */
    double temperature, top_p;  /* NAN = not sent; the model's, or a task's own */
    int top_k;                  /* -1 = not sent */
    int timeout_s;
    int retries;                /* after the first try */
    volatile int *cancel;
    cJSON *extra_body;          /* merged into requests */
    void *curl;
    int retry_base_ms;          /* first backoff; tests may lower it */
    int tool_mode;              /* lb_tool_mode */
    size_t last_request_bytes;  /* of the last request body (token estimates) */
    int capture_tokens;         /* openai: ask for token ids and log-probabilities
                                 * and read them (tokens.h); set by the caller */
    cJSON *replay;              /* replay: the assistant messages to play, in order */
    int replay_next;            /* replay: index of the next one */
    /* a task's own model_url (LB_MODEL_ENDPOINT_TASK): the targets the
     * operator lets it reach (common/netcheck.h), NULL for the operator's
     * own endpoints (not checked); host_named: a host rule names the URL's
     * host, so any address it resolves to is allowed; refused: the address
     * the last request was refused (model_http.c's socket check) */
    struct lb_netallow *allow;
    int host_named;
    char refused[64];
} lb_model;

/* The model of cfg called name (NULL or "": the default model); m keeps a
 * pointer into cfg, which must outlive it. cancel may be NULL.
 * LB_E_NOTFOUND with the list of models in err when there is no such
 * model. */
LB_MUST_CHECK int lb_model_init(lb_model *m, const struct lb_config *cfg, const char *name, volatile int *cancel,
                  char *err, size_t errsz);
void lb_model_free(lb_model *m);
/* One chat completion. Returns LB_OK, LB_E_CANCELLED, LB_E_UNAVAILABLE
 * (endpoint unreachable), LB_E_DENIED (the key was refused: 401/403),
 * LB_E_TOOBIG (the conversation does not fit the model's context, even
 * after one retry with a lower max_tokens), LB_E_PROTO (another bad HTTP
 * status or body), with a plain sentence in err that can be shown to a
 * user as is. */
LB_MUST_CHECK int lb_model_chat(lb_model *m, const cJSON *messages, const cJSON *tools,
                                lb_model_reply *r, char *err, size_t errsz);
/* The request body lb_model_chat sends (for tests). Caller frees. */
char *lb_model_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools);
/* The bodies of each provider, from the loop's OpenAI-shaped conversation
 * and tools (model_openai.c, model_anthropic.c). Caller frees. */
char *lb_openai_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools);
char *lb_anthropic_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools);
/* The messages of a text-mode request (LB_TOOL_MODE_TEXT): the tools
 * described at the end of the system prompt, assistant tool calls written
 * back as <function=...> text, tool results as user messages
 * "Observation of NAME:" (consecutive ones joined). Caller frees. */
cJSON *lb_text_mode_messages(const cJSON *messages, const cJSON *tools);
/* The system prompt addition describing tools (OpenAI shape) and the call
 * format. Caller frees. */
char *lb_text_mode_tools_prompt(const cJSON *tools);

/* Replay (model_replay.c): loads path, a trajectory.json written by llmbox
 * or a JSON list of assistant messages {content, reasoning_content?,
 * tool_calls:[{name, arguments}] or OpenAI-shaped calls}, into *steps: an
 * array of OpenAI assistant messages. Capped at LB_REPLAY_MAX_FILE. */
LB_MUST_CHECK int lb_replay_load(const char *path, cJSON **steps, char *err, size_t errsz);
/* The next reply of a loaded replay; a finish call once they ran out. */
LB_MUST_CHECK int lb_replay_next(lb_model *m, lb_model_reply *r, char *err, size_t errsz);
struct lb_task_opts;
/* A task's own sampling (temperature, top_p, top_k options) in place of
 * the model's settings, where the options set them. */
void lb_model_apply_opts(lb_model *m, const struct lb_task_opts *o);

/* Adds the model's sampling settings (temperature, top_p, top_k, and for
 * openai min_p, repetition_penalty, max_tokens) to req. */
void lb_model_add_sampling(const lb_model *m, cJSON *req);
/* Adds the model's extra_body members to req (replacing same-named ones,
 * sampling included), except the `keep` names, which the request builder
 * owns. */
void lb_model_merge_extra(const lb_model *m, cJSON *req, const char *const *keep);

/* Context-length errors (model_context.c). Whether an error answer (HTTP
 * status and body) says the request does not fit the model's context; when
 * it names them, *limit gets the context size and *prompt the prompt's
 * tokens (else -1). */
int lb_context_error(long http, const char *body, size_t len, long *limit, long *prompt);
/* The max_tokens to retry with, or 0 when nothing smaller can fit:
 * limit - prompt - a margin when both are known, else half of current (or
 * of context_length / 2 when nothing was sent, else of 8192). */
long lb_context_retry_tokens(long current, long limit, long prompt, long context_length);

/* ---- prompts (prompts.c) ---------------------------------------------- */

typedef struct lb_prompt_var {
    const char *name;           /* without braces */
    const char *value;
} lb_prompt_var;

/* Reads dir/name (capped) into a malloc'd string. */
LB_MUST_CHECK int lb_prompt_load(const char *dir, const char *name, char **out, char *err, size_t errsz);
/* Replaces {name} for the given variables in one pass over tmpl: text
 * that comes from a value is never scanned again, and unknown {words}
 * stay as they are. Caller frees. */
char *lb_prompt_render(const char *tmpl, const lb_prompt_var *vars, size_t n);

/* ---- outputs (collect.c) ---------------------------------------------- */



typedef struct lb_collect_limits {
    size_t max_files;
    uint64_t max_bytes;
} lb_collect_limits;

/* Copies the regular files under sb_dir in the sandbox to host_dir/<path>
 * (paths cleaned with lb_path_clean_rel, symlinks and special files
 * skipped, atomic writes) and describes them (mime, sha256). *arts is
 * malloc'd (caller frees). notes (may be NULL, >= 512 bytes) receives a
 * sentence about files left out, or "". Returns LB_OK even when some files
 * were skipped over the caps or for their names. Errors, with the files
 * copied until then still in *arts: LB_E_NOSPACE when the host's disk
 * filled up (copying stops there), LB_E_UNAVAILABLE when the connection
 * to the sandbox broke during the copy, or the listing's own error. */
LB_MUST_CHECK int lb_collect_outputs(lbsb_conn *c, const char *sb_id, const char *sb_dir,
                                     const char *host_dir, const lb_collect_limits *lim,
                                     lb_artifact **arts, size_t *n, char *notes, size_t notesz);

/* ---- trajectory (trajectory.c) ----------------------------------------- */

/* The record of a run, written as trajectory.json: task, model, tools,
 * the full message list, per-turn reasoning, usage and tool results,
 * timings and the final status. */
typedef struct lb_traj {
    cJSON *root;
    cJSON *turns;
} lb_traj;

/* config: what the run used (model name, provider, sampling, image,
 * limits); referenced into the file, copied. */
LB_MUST_CHECK int lb_traj_init(lb_traj *t, const char *task_id, const char *prompt, int max_turns,
                               const char *model_url, const char *model_name, const cJSON *tools,
                               const cJSON *config);
/* A turn object appended to "turns" (owned by t), to be filled by the caller. */
cJSON *lb_traj_turn(lb_traj *t, int turn);
/* Final fields; messages is referenced at write time, not copied. */
LB_MUST_CHECK int lb_traj_write(lb_traj *t, const char *path, const cJSON *messages, const char *status,
                                const char *reason, const char *answer, const lb_task_usage *usage,
                                const cJSON *timings);
void lb_traj_free(lb_traj *t);

/* ---- event sinks -------------------------------------------------------- */

/* Where a task's steps go. Every callback may be NULL. */
typedef struct lb_sink {
    void *arg;
    /* type and data as documented in store/store.h */
    void (*event)(void *arg, const char *type, const cJSON *data);
    void (*artifacts)(void *arg, const lb_artifact *a, size_t n);
    void (*usage)(void *arg, const lb_task_usage *u);
    /* The final status; called exactly once, last. Returns an lb_status. */
    int (*finish)(void *arg, const char *status, const char *reason, const char *answer);
} lb_sink;

/* sink_store.c: events into the task store. */
void lb_sink_store_init(lb_sink *s, lb_store *st, const char *task_id);
/* issue 13: 1 once the store refused an event of this agent's (its node's
 * claim on the task is gone): the agent then exits 1, having written
 * nothing more. */
int lb_sink_store_fenced_out(void);
/* sink_term.c: readable lines on a terminal (colour when f is a tty). */
void lb_sink_term_init(lb_sink *s, void *file);

/* ---- the loop (loop.c) -------------------------------------------------- */

typedef struct lb_loop_result lb_loop_result;

typedef struct lb_loop_opts {
    const struct lb_config *cfg; /* the configuration (read only): paths, models, sandbox
                                 * defaults, tools, tool timeouts */
    const char *task_id;        /* 32 hex chars */
    const char *prompt;
    /* the task's effective limits, from lb_task_limits_of (common/task.h) */
    int max_turns;
    int64_t token_budget;       /* 0: none */
    int timeout_s;              /* wall clock */
    const char *model_name;     /* a configured model; NULL: the default model */
    const char *tool_marker;    /* file naming the tool running (for the web after a crash), or NULL */
    /* Called when a hung tool ends the task from the watchdog thread,
     * just before the process exits (the loop cannot return then). */
    void (*on_abort)(void *arg, const lb_loop_result *res);
    void *on_abort_arg;
    const char *network;        /* sandbox network mode ("none", "nat"); NULL: sandboxd's default */
    const char *image;          /* sandbox image; NULL: cfg default_image */
    const char *input_dir;      /* host dir copied into /testbed/input, or NULL */
    const char *output_dir;     /* host dir the output tree is copied into */
    const char *trajectory_path;/* host path of trajectory.json */
    volatile int *cancel;       /* set by SIGTERM/SIGINT (and the task timer) */
    volatile int *sb_interrupt; /* handed to the sandbox client; see loop.c */
    volatile int *timed_out;    /* set with *cancel when the task timer fires */
    const struct lb_task_opts *run_opts; /* the task's options (common/task_opts.h);
                                 * NULL: the defaults */
    /* Follow-up rounds (issue 14, agent/followup.h). Round 1 with keep_s 0
     * runs a task as before. */
    int round;                  /* this round's number; 0 is taken as 1 */
    const cJSON *history;       /* round > 1: the conversation so far (the last trajectory.json's
                                 * messages), or NULL (then it starts from the prompt alone) */
    const cJSON *round_inputs;  /* round > 1: the files this round added, [{path}] under input_dir */
    const char *kept_id;        /* round > 1: the last round's sandbox, or NULL */
    const char *kept_key;       /* its lease key */
    int fresh;                  /* round > 1: a fresh sandbox with the files only, not the kept one */
    int keep_s;                 /* > 0: the sandbox is leased, its state saved at the end of the
                                 * round, and it is kept this long after the round, frozen */
    const char *restore_state;  /* round > 1: the state saved at the end of the last round, or NULL */
    const char *moved_note;     /* issue 13: round > 1 runs fresh on another node than the one that held
                                 * the sandbox (gone): this sentence says so in an error event and in the
                                 * round's opening message; NULL otherwise */
    const char *round_trajectory_path; /* where this round's trajectory.json is kept too (a hard
                                 * link: the next round replaces trajectory.json), for a fork from
                                 * it; NULL: not kept */
    /* The task's record of its sandbox (agent_main.c keeps it in the store);
     * each may be NULL. made: the sandbox exists (how: "new", "kept",
     * "fresh", "restored"; key "" when it is not leased); keep: it is to be kept keep_s after this round, LB_OK when
     * it may (else, e.g. LB_E_BUSY over followup_max_kept, it is
     * destroyed); gone: it was destroyed; state_saved: the round's state
     * was saved under that name (lb_followup_state_name). */
    void (*sandbox_made)(void *arg, const char *sb_id, const char *key, const char *how);
    int (*sandbox_keep)(void *arg, int keep_s);
    void (*sandbox_gone)(void *arg);
    void (*state_saved)(void *arg, const char *state, uint64_t bytes);
    void *sandbox_arg;
} lb_loop_opts;

struct lb_loop_result {
    char status[16];            /* succeeded | failed | cancelled */
    char reason[1024];
    char *answer;               /* malloc'd or NULL */
    int turns;
    int64_t prompt_tokens, completion_tokens;
    lb_task_usage usage;        /* the whole accounting (turns and tokens included) */
    size_t n_artifacts;
};

/* Runs one task to a final status, which it reports through sink->finish.
 * Returns the lb_status of sink->finish (LB_OK when the end was recorded). */
LB_MUST_CHECK int lb_agent_run(const lb_loop_opts *o, const lb_sink *sink, lb_loop_result *res);
void lb_loop_result_free(lb_loop_result *r);
/* Sets r's final status (an lb_task_status) and its reason, formatted
 * from fmt (NULL: none); both agents' set_final, which keep the first. */
void lb_loop_result_vset(lb_loop_result *r, int status, const char *fmt, va_list ap);

/* The llm mode (llm_run.c): one request with the prompt as the only
 * message, no system prompt, no tools, no sandbox; the reply's text is the
 * answer. lb_agent_run calls it for a task whose mode is "llm"; the same
 * contract. */
LB_MUST_CHECK int lb_agent_run_llm(const lb_loop_opts *o, const lb_sink *sink, lb_loop_result *res);

/* Signal handling shared by both subcommands: SIGTERM/SIGINT set cancel
 * (and sb_interrupt), SIGALRM (the task timer) sets timed_out and cancel. */
void lb_agent_signals_install(volatile int *cancel, volatile int *sb_interrupt,
                              volatile int *timed_out);

#endif
