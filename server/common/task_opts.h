/* A task's run options (tasks.options, schema v6): how the agent runs it
 * besides its prompt. The web and the eval runner store them as a JSON
 * object; the agent and `llmbox run` parse them here, once, and refuse
 * what they do not know, so a mistyped option fails the task with a
 * sentence instead of being silently ignored.
 *
 * Fields, all optional:
 *   mode         "sandbox" (default) | "llm" (one request, no tools, no sandbox)
 *   layout       "llmbox" (default: /testbed/input, /testbed/output/answer.txt) |
 *                "official" (/testbed/documents, /testbed/answer.txt)
 *   answer_file  true/"1" (or false/"0"): the answer is read from the layout's
 *                answer file at the end, else the finish tool's
 *   tool_names   "llmbox" | "official" (execute_bash, str_replace_editor, submit);
 *                absent: the model's tool_names setting
 *   max_tokens   1..LB_TASK_OPTS_MAX_TOKENS: the generation cap of each request
 *   capture_tokens  true/"1" (or false/"0"): record each turn's exact token ids and
 *                log-probabilities (agent/tokens.h); absent: the model's
 *                capture_tokens setting
 *   temperature  0..2, top_p (0..1], top_k 0..1000000: the sampling of each request,
 *                in place of the model's settings
 *   system_prompt a string (1..LB_TASK_OPTS_SYSTEM_MAX bytes): the system message, in place
 *                of prompts/system.md, rendered with the same {variables}
 *   tools        a list of 1..LB_TASK_OPTS_TOOLS_MAX tool names: only these of the loaded
 *                tools are offered (the finish tool always is: it ends the episode); a name
 *                no loaded plugin provides fails the task
 *   model_url    an http(s) URL (no user:password@): the task's model is its own endpoint
 *                there, with the settings of the task's model but none of its key; only
 *                where the operator allows it (rollout_allow_model_url)
 *   model_id     the model id sent to model_url (default: the task's model's)
 *   input_dir, output_dir  explicit sandbox directories in place of the layout's (an official
 *                benchmark folder's): the inputs are moved to input_dir before the first turn,
 *                the answer file is output_dir/answer.txt; absolute, clean, under /testbed,
 *                /tmp, /home, /root, /workspace, /data, /mnt, /opt or /srv (lb_sandbox_dir_problem)
 *   working_dir  "/testbed" only (llmbox's tools run there; an official folder names it)
 *   verbatim_prompts true/"1": system_prompt is the system message as given and the task's
 *                prompt the first user message as given (rendered by llmbox eval --benchmark
 *                the official way), neither rendered with llmbox's templates
 *   mcp          a list of 1..LB_TASK_OPTS_MCP_MAX names of [mcp "NAME"] sections of
 *                llmbox.conf (or one string "a,b"): their tools are offered beside the
 *                plugins' (server/mcpclient/), in place of the model's mcp list; a name
 *                the configuration does not have fails the task with a sentence
 *   finish_answer true (default) / false: with answer_file, whether a missing or empty answer
 *                file falls back to the finish tool's answer; false: the answer is then empty,
 *                as the official runner reads it */
#ifndef LB_COMMON_TASK_OPTS_H
#define LB_COMMON_TASK_OPTS_H

#include <stddef.h>

#include "common/status.h"

#define LB_TASK_OPTS_MAX_TOKENS 10000000
#define LB_TASK_OPTS_MAX_JSON 4096 /* the store refuses more */
#define LB_TASK_OPTS_SYSTEM_MAX 3072 /* a system_prompt, within the options' 4 KiB */
#define LB_TASK_OPTS_TOOLS_MAX 16
#define LB_TASK_OPTS_TOOL_NAME 32
#define LB_TASK_OPTS_URL_MAX 512
#define LB_TASK_OPTS_MODEL_ID_MAX 256
#define LB_TASK_OPTS_DIR_MAX 200 /* input_dir, output_dir */
#define LB_TASK_OPTS_MCP_MAX 8    /* MCP servers one task is offered */
#define LB_TASK_OPTS_MCP_NAME 32  /* LB_CFG_MCP_NAME */

typedef enum lb_run_mode {
    LB_RUN_SANDBOX = 0,
    LB_RUN_LLM = 1,
} lb_run_mode;

typedef enum lb_layout {
    LB_LAYOUT_LLMBOX = 0,
    LB_LAYOUT_OFFICIAL = 1,
} lb_layout;

typedef enum lb_tool_names {
    LB_TOOL_NAMES_DEFAULT = -1, /* the model's setting */
    LB_TOOL_NAMES_LLMBOX = 0,
    LB_TOOL_NAMES_OFFICIAL = 1,
} lb_tool_names;

typedef struct lb_task_opts {
    int mode;                   /* lb_run_mode */
    int layout;                 /* lb_layout */
    int answer_file;            /* 1: read the answer file at the end */
    int tool_names;             /* lb_tool_names */
    int max_tokens;             /* 0: the model's */
    int capture_tokens;         /* -1: the model's setting; 0 or 1 */
    double temperature, top_p;  /* NAN: the model's setting */
    int top_k;                  /* -1: the model's setting */
    char system_prompt[LB_TASK_OPTS_SYSTEM_MAX + 1]; /* "": prompts/system.md */
    int n_tools;                /* 0: every enabled tool */
    char tools[LB_TASK_OPTS_TOOLS_MAX][LB_TASK_OPTS_TOOL_NAME];
    char model_url[LB_TASK_OPTS_URL_MAX];    /* "": the model's own endpoint */
    char model_id[LB_TASK_OPTS_MODEL_ID_MAX]; /* "": the model's id */
    char input_dir[LB_TASK_OPTS_DIR_MAX + 1];  /* "": the layout's */
    char output_dir[LB_TASK_OPTS_DIR_MAX + 1]; /* "": the layout's answer file */
    int verbatim_prompts;       /* 1: system_prompt and the prompt are sent as given */
    int finish_answer;          /* 1 (default): a missing answer file falls back to finish's answer */
    int n_mcp;                  /* 0: the model's mcp list */
    char mcp[LB_TASK_OPTS_MCP_MAX][LB_TASK_OPTS_MCP_NAME]; /* names, checked against the configuration
                                 * by the agent (server/mcpclient/mcpc_hub.h) */
} lb_task_opts;

/* The defaults: sandbox, llmbox layout, no answer file, the model's tool
 * names, max_tokens and capture_tokens. */
void lb_task_opts_default(lb_task_opts *o);
/* Parses json (NULL: the defaults) into *o. LB_E_INVAL with a sentence
 * naming the field in err for anything but a JSON object of the fields
 * above with their values; *o holds the defaults then. */
LB_MUST_CHECK int lb_task_opts_parse(const char *json, lb_task_opts *o, char *err, size_t errsz);
/* Parses one option given as text (`llmbox run --mode llm`): name and
 * value as the JSON would hold them, "answer_file" and "capture_tokens"
 * taking 1/0/true/false and "max_tokens" a number. LB_E_INVAL with a sentence in err. */
LB_MUST_CHECK int lb_task_opts_set(lb_task_opts *o, const char *name, const char *value, char *err, size_t errsz);

/* Whether url is one model_url may be: http:// or https://, a host, no
 * user:password@, printable ASCII without blanks, shorter than
 * LB_TASK_OPTS_URL_MAX. A boolean. Pure. */
int lb_task_opts_url_ok(const char *url);

/* Whether a task's options (options_json, NULL or "" for none) are only
 * its choice of MCP servers (the mcp field of POST /api/tasks): such a
 * task is the user's own and takes follow-ups; any other options are an
 * evaluation's run or a rollout's sample, which never have a second round
 * (the web refuses their messages). A boolean. */
int lb_task_opts_only_mcp(const char *options_json);

/* Where the layout puts things in the sandbox. */
const char *lb_layout_input_dir(int layout);
const char *lb_layout_answer_file(int layout);
const char *lb_run_mode_name(int mode);
const char *lb_layout_name(int layout);
/* The task's input folder in the sandbox: input_dir, else the layout's. */
const char *lb_task_opts_input_dir(const lb_task_opts *o);
/* The task's answer file: output_dir/answer.txt, else the layout's (in buf,
 * which holds LB_TASK_OPTS_DIR_MAX + 16 bytes; returned). */
const char *lb_task_opts_answer_file(const lb_task_opts *o, char *buf, size_t bufsz);
/* Whether dir may be a task's sandbox directory: absolute, clean (no "//",
 * ".", "..", no trailing "/"), of [A-Za-z0-9._-/] only, at most
 * LB_TASK_OPTS_DIR_MAX bytes, under /testbed, /tmp, /home, /root,
 * /workspace, /data, /mnt, /opt or /srv (never /proc, /sys, /dev, /etc or
 * the root). NULL when it may, else a static sentence saying why not. Pure. */
const char *lb_sandbox_dir_problem(const char *dir);
/* "llmbox" or "official" (LB_TOOL_NAMES_DEFAULT: "llmbox"). */
const char *lb_tool_names_name(int names);

#endif
