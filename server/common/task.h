/* A task as the rest of the code sees it: its status, its record as the
 * store keeps it, and the limits it runs under.
 *
 * The statuses are listed once (LB_TASK_STATUSES); the enum, the names the
 * store and the API use, and the counts of /metrics all come from that
 * list. The record (lb_task) is what lb_store_task_load fills: the web
 * renders it as API JSON (web/task_json.h), the agent runs it, "Run
 * again" copies it. Its limits are never read raw: lb_task_limits_of
 * computes the ones a task actually gets, in one place, for the web, the
 * agent and `llmbox run` alike. */
#ifndef LB_COMMON_TASK_H
#define LB_COMMON_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

/* X(ENUM_SUFFIX, "name"), in the order of the metrics' state label. */
#define LB_TASK_STATUSES(X)                                                                             \
    X(QUEUED, "queued")                                                                                 \
    X(RUNNING, "running")                                                                               \
    X(SUCCEEDED, "succeeded")                                                                           \
    X(FAILED, "failed")                                                                                 \
    X(CANCELLED, "cancelled")

typedef enum lb_task_status {
    LB_TASK_UNKNOWN = -1, /* a name that is none of the above */
#define LB_TASK_ENUM_(e, s) LB_TASK_##e,
    LB_TASK_STATUSES(LB_TASK_ENUM_)
#undef LB_TASK_ENUM_
    LB_TASK_N_STATUS
} lb_task_status;

/* The status's name ("queued" ...); "unknown" for LB_TASK_UNKNOWN or a
 * value out of range. */
const char *lb_task_status_name(lb_task_status s);
/* The status named s (NULL or another word: LB_TASK_UNKNOWN). */
lb_task_status lb_task_status_parse(const char *s);
/* succeeded, failed, cancelled: once there, a task never changes again. */
int lb_task_status_is_final(lb_task_status s);

/* The limits a task runs under. */
typedef struct lb_task_limits {
    int max_turns;        /* >= 1 */
    int64_t token_budget; /* tokens of context; 0: none */
    int timeout_s;        /* wall clock, >= 1 */
} lb_task_limits;

/* What a task asked for: 0 (max_turns, timeout_s) or -1 (token_budget)
 * where it asked nothing, as for a task stored before these existed. */
typedef struct lb_task_request {
    int max_turns;
    int64_t token_budget;
    int timeout_s;
} lb_task_request;

/* The limits a task gets: what it asked for, within what the service
 * allows today (max_turns_limit, token_budget_max, task_timeout_s), and
 * the service's defaults where it asked nothing. Rules in task.c. user may
 * be NULL; no user setting bounds these today (users bound uploads and
 * starts, web/user_limits.c), so a later one lands here. */
void lb_task_limits_of(const lb_task_request *req, const lb_user_cfg *user, const lb_config *cfg,
                       lb_task_limits *out);

/* One task as stored (lb_store_task_load). Strings are malloc'd and NULL
 * where the column is NULL; numbers are -1 where it is NULL. */
typedef struct lb_task {
    char id[33];
    lb_task_status status;
    char *reason;
    char *prompt;               /* never NULL once loaded */
    char *model;
    char *inputs_json;          /* JSON array [{path,size,from?}] as stored */
    char *usage_json;           /* the detailed usage object as stored, or NULL */
    char *answer;
    char *network;
    char *image;
    char *rerun_of;
    char *owner;
    char *options_json;         /* how it runs: a JSON object as stored, or NULL */
    int max_turns;              /* as asked (0: none stored) */
    int64_t token_budget;       /* as asked; -1: none stored */
    int64_t timeout_s;          /* as asked; -1: none stored */
    int64_t created_ms, started_ms, finished_ms; /* -1: not yet */
    int pid;                    /* 0: none */
    int turns;
    int64_t prompt_tokens, completion_tokens;
    int round;                  /* the current round of the conversation, 1 first (store_round.h) */
} lb_task;

/* What the stored task asked for, as lb_task_limits_of takes it. */
void lb_task_request_of(const lb_task *t, lb_task_request *req);
/* Frees the strings; the struct may be loaded again. NULL is fine. */
void lb_task_free(lb_task *t);
/* Frees n loaded tasks and the array (lb_store_task_rows). */
void lb_tasks_free(lb_task *v, size_t n);

#endif
