/*
 * The agent: the paper's Algorithm 1 (model -> tool calls -> observations)
 * made robust (loop.c). Shared by `llmbox agent` (events go to the task
 * store) and `llmbox run` (events go to the terminal) through the lb_sink
 * interface (sink.h), so both modes run exactly the same code.
 */
#ifndef LB_LOOP_H
#define LB_LOOP_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent/sink.h"
#include "common/status.h"
#include "store/store.h"

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
    const char *tool_marker_on; /* the agent's log: its attribute is the marker where it can be (watchdog.h) */
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
    /* Follow-up rounds (follow-ups, agent/followup.h). Round 1 with keep_s 0
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
    const char *moved_note;     /* several nodes: round > 1 runs fresh on another node than the one that held
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
/* lb_loop_result_free (run_state.h) frees what it holds. */

/* Signal handling shared by both subcommands: SIGTERM/SIGINT set cancel
 * (and sb_interrupt), SIGALRM (the task timer) sets timed_out and cancel. */
void lb_agent_signals_install(volatile int *cancel, volatile int *sb_interrupt,
                              volatile int *timed_out);

#endif
