/* Rounds of a task, its kept sandbox and its share links in the task
 * store (schema v9, store_round.c).
 *
 * A task is a conversation: round 1 is the task as created, each message
 * (POST /api/tasks/{id}/messages) adds the next round. The tasks row
 * always describes the current round (status, reason, answer, times,
 * usage of that round: triggers copy them into its rounds row), its
 * `round` column says which one it is, and every event is tagged with
 * the round it belongs to (events.round, and "round" in its data). A
 * round can begin only when the task is final; it makes the task queued
 * again (the one way a final task changes: lb_store_round_begin).
 *
 * The kept sandbox (task_sandboxes) is the sandbox of the task's last
 * round, leased so that it outlives its agent (include/llmbox/sandbox.h,
 * "Leases"): its id and lease key, recorded as soon as it exists (so a
 * delete can destroy it while a round runs), and until when it is kept
 * after the round (NULL while a round uses it).
 *
 * A share is a random id naming a task for read-only viewing without an
 * account (web/handlers_share.c); revoked by deleting it or the task. */
#ifndef LB_STORE_ROUND_H
#define LB_STORE_ROUND_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/store.h"

#define LB_ROUNDS_MAX 200 /* rounds of one task: a long conversation; the web refuses more */

/* One round as stored. Strings malloc'd, NULL where the column is; times
 * -1 when not yet. Free with lb_rounds_free. */
typedef struct lb_round {
    int n;                      /* 1, 2, ... */
    char *prompt;
    char *inputs_json;          /* the files this round added: [{path,size,from?}] */
    char status[16];
    char *reason, *answer;
    char *artifacts_json;       /* the outputs at the end of the round: [{path,size,sha256}], or NULL */
    char *usage_json;
    char sandbox[12];           /* how the round got its sandbox: "new", "kept", "fresh", or "" (not yet) */
    char *state;                /* the saved state's name, when one was saved at its end */
    int64_t state_bytes;        /* its compressed size; -1 when none */
    int fresh;                  /* the message asked for a fresh sandbox (fresh=1) */
    int turns;
    int64_t prompt_tokens, completion_tokens;
    int64_t created_ms, started_ms, finished_ms;
} lb_round;

/* Frees n rounds and the array (lb_store_rounds). */
void lb_rounds_free(lb_round *v, size_t n);
/* Frees the strings of one round (lb_store_round_get); NULL is fine. */
void lb_round_free(lb_round *r);

/* What a message asks for. */
typedef struct lb_round_new {
    const char *task_id;
    const char *prompt;
    const char *inputs_json;    /* the files it adds (already in the task's input folder); NULL: none */
    int fresh;                  /* continue in a fresh sandbox with the files only */
    const char *owner;          /* the task's owner, for owner_max_active (NULL: none) */
    int owner_max_active;       /* > 0: LB_E_BUSY when the owner has this many tasks queued or running */
} lb_round_new;

/* Begins the next round of a final task in one transaction: the round's
 * row, the task queued again (reason, answer, times, pid and usage of the
 * round cleared; the new inputs appended to the task's list), and a
 * "round" event {round, prompt, inputs, fresh}. *round_out gets its
 * number. LB_E_NOTFOUND; LB_E_EXISTS when the task is not final (a round
 * runs); LB_E_BUSY when the owner's limit is reached; LB_E_TOOBIG at
 * LB_ROUNDS_MAX rounds. */
LB_MUST_CHECK int lb_store_round_begin(lb_store *s, const lb_round_new *m, int *round_out);
/* The task's rounds, oldest first: *v malloc'd (caller frees with
 * lb_rounds_free). */
LB_MUST_CHECK int lb_store_rounds(lb_store *s, const char *task_id, lb_round **v, size_t *n);
/* One round (n >= 1): LB_E_NOTFOUND when the task has no such round. */
LB_MUST_CHECK int lb_store_round_get(lb_store *s, const char *task_id, int n, lb_round *out);
/* Records how the current round got its sandbox ("new", "kept", "fresh"). */
LB_MUST_CHECK int lb_store_round_set_sandbox(lb_store *s, const char *task_id, const char *how);

/* Records the state saved at the end of the current round (its name in
 * sandboxd's store, and its compressed size). */
LB_MUST_CHECK int lb_store_round_set_state(lb_store *s, const char *task_id, const char *state, int64_t bytes);

/* A fork: a new task that begins with the conversation of src_id as at
 * the end of its round `round` (POST /api/tasks/{id}/fork). */
typedef struct lb_fork {
    const char *src_id;
    int round;
    const char *new_id;
    const char *owner;          /* the forker (NULL: no users) */
} lb_fork;

/* Makes the fork in one transaction: the task (at round `round`, ended as
 * that round ended, fork_of and fork_round set; inputs those of rounds
 * 1..round), its rounds and events copied from the source up to that
 * round, and the artifact index when the round is the source's last (the
 * files on disk are the last round's). The states named in the copied
 * rounds stay the source's. LB_E_NOTFOUND: no such task or round, or the
 * round has not ended. */
LB_MUST_CHECK int lb_store_task_fork(lb_store *s, const lb_fork *f);
/* Which task and round id was forked from: src "" and *round 0 when it
 * was not. LB_E_NOTFOUND. */
LB_MUST_CHECK int lb_store_task_fork_of(lb_store *s, const char *id, char *src, size_t srcsz, int *round);

/* ---- the kept sandbox ---- */

typedef struct lb_kept {
    char sandbox_id[64];
    char lease_key[40];
    int64_t kept_until_ms;      /* -1: a round uses it now */
} lb_kept;

/* Records the task's sandbox (replacing any earlier record): in use by a
 * round (kept_until_ms -1). */
LB_MUST_CHECK int lb_store_kept_set(lb_store *s, const char *task_id, const char *sandbox_id, const char *lease_key);
/* Marks it kept until until_ms, if fewer than max_kept other tasks have a
 * sandbox kept now (max_kept 0: no cap); checked and written in one
 * statement. LB_E_BUSY when the cap is reached (nothing changed),
 * LB_E_NOTFOUND when the task has no sandbox recorded. */
LB_MUST_CHECK int lb_store_kept_keep(lb_store *s, const char *task_id, int64_t now_ms, int64_t until_ms,
                                     int max_kept);
/* The task's record: LB_E_NOTFOUND when it has none. */
LB_MUST_CHECK int lb_store_kept_get(lb_store *s, const char *task_id, lb_kept *out);
/* Forgets it (the sandbox is gone or destroyed). LB_OK when there was none. */
LB_MUST_CHECK int lb_store_kept_clear(lb_store *s, const char *task_id);

/* ---- share links ---- */

typedef struct lb_share {
    char id[33];
    char task_id[33];
    int64_t created_ms, expires_ms;
} lb_share;

/* Stores a share of the task (id: 32 hex chars, random). */
LB_MUST_CHECK int lb_store_share_add(lb_store *s, const lb_share *sh);
/* The share id, if it exists and has not expired by now_ms: LB_E_NOTFOUND otherwise. */
LB_MUST_CHECK int lb_store_share_get(lb_store *s, const char *id, int64_t now_ms, lb_share *out);
/* Revokes one share of the task: LB_E_NOTFOUND when the task has no such share. */
LB_MUST_CHECK int lb_store_share_delete(lb_store *s, const char *task_id, const char *id);
/* The task's shares that have not expired, newest first: *v malloc'd, caller frees. */
LB_MUST_CHECK int lb_store_shares_of(lb_store *s, const char *task_id, int64_t now_ms, lb_share **v, size_t *n);

#endif
