/* Follow-up rounds in the agent (follow-ups): the conversation so far, made
 * to fit, the message that opens a round, and files copied into a
 * sandbox that already runs (a round's new inputs; the last outputs into
 * a fresh sandbox). The loop (loop.c) calls these; the store side is
 * store/store_round.h. */
#ifndef LB_AGENT_FOLLOWUP_H
#define LB_AGENT_FOLLOWUP_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/status.h"
#include "llmbox/sandbox.h"

#define LB_FOLLOWUP_HISTORY_MAX (64u << 20)  /* trajectory.json read back: as a replay's */
#define LB_FOLLOWUP_BYTES_DEFAULT (512u << 10) /* the conversation's bytes without a token budget */
#define LB_FOLLOWUP_CUT_HEAD 1024            /* kept of a cut tool output: its start ... */
#define LB_FOLLOWUP_CUT_TAIL 512             /* ... and its end */

/* How a round got its sandbox (the rounds row's `sandbox`). */
typedef enum lb_followup_sandbox {
    LB_FOLLOWUP_NEW = 0,     /* round 1: a new sandbox */
    LB_FOLLOWUP_KEPT = 1,    /* the last round's sandbox, adopted: everything as it was */
    LB_FOLLOWUP_FRESH = 2,   /* a fresh sandbox with the inputs and the last outputs only */
    LB_FOLLOWUP_RESTORED = 3, /* a new sandbox from the state saved at the end of the last round:
                              * files, packages, cwd and exported variables, no processes */
} lb_followup_sandbox;

/* The name of the state saved at the end of round n of task id in
 * sandboxd's store ("t<id>-r<n>": [a-z0-9_-], one name space per uid). */
void lb_followup_state_name(const char *task_id, int n, char *out, size_t outsz);

/* "new", "kept", "fresh", "restored". */
const char *lb_followup_sandbox_name(lb_followup_sandbox how);

/* The messages of the trajectory.json at path (the conversation until the
 * end of the last round): *messages gets a JSON array of objects that
 * each have a string "role" (caller frees). LB_E_NOTFOUND (no file),
 * LB_E_TOOBIG (over LB_FOLLOWUP_HISTORY_MAX), LB_E_PROTO (not a
 * trajectory), with a sentence in err. */
LB_MUST_CHECK int lb_followup_history_load(const char *path, cJSON **messages, char *err, size_t errsz);

/* Makes messages fit max_bytes (token_budget * 2 when there is a budget:
 * half of it at ~4 bytes a token, so the new round has room; else
 * LB_FOLLOWUP_BYTES_DEFAULT): the tool outputs longer than head + tail,
 * oldest first, are cut to their start and end with a note in the middle
 * saying how much was cut and why, never silently, until the whole fits or
 * none is left to cut. Returns how many were cut. */
int lb_followup_fit(cJSON *messages, int64_t token_budget);

/* The user message that opens round `round`: the person's prompt, the
 * new input files, what survived in the sandbox (how), how many earlier
 * tool outputs were cut, and the turns of the round. Caller frees; NULL
 * when out of memory. */
char *lb_followup_opening(int round, const char *prompt, const cJSON *new_inputs, lb_followup_sandbox how,
                          int n_cut, int max_turns, const char *finish_tool);

/* Copies the files named by inputs ([{path}], paths relative to
 * host_root, as the task's input list has them) into the sandbox under
 * sb_root, replacing files of the same name. Each host file is opened
 * beneath host_root without following any symlink; a path that is not
 * clean, missing or not a regular file is skipped. LB_OK, or the
 * sandbox's error (err says which file). *copied gets the count. */
LB_MUST_CHECK int lb_followup_copy_inputs(lbsb_conn *c, const char *sb_id, const char *host_root,
                                          const cJSON *inputs, const char *sb_root, size_t *copied,
                                          char *err, size_t errsz);

/* Copies the regular files under host_dir into sb_dir (symlinks and
 * special files skipped, at most max_files files and max_bytes bytes,
 * depth 32). LB_OK (some may have been left out: *skipped counts them),
 * or the sandbox's error. */
LB_MUST_CHECK int lb_followup_copy_tree(lbsb_conn *c, const char *sb_id, const char *host_dir, const char *sb_dir,
                                        size_t max_files, uint64_t max_bytes, size_t *copied, size_t *skipped,
                                        char *err, size_t errsz);

/* Keeps the outputs of round n (the files named by artifacts_json,
 * [{path}], under task_dir/output) as hard links under
 * task_dir/rounds/<n>/output, so that a later round's outputs (written
 * by rename, never in place) leave them as they were: the per-round
 * downloads. Sources are opened beneath output/ without following a
 * symlink. Returns how many could not be kept. */
size_t lb_followup_keep_outputs(const char *task_dir, int n, const char *artifacts_json);

#endif
