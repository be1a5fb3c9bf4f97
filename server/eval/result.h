/* One line of results.jsonl: a row × mode × repeat, its score and its
 * cost. The web's runner writes them, summary.c reads them. */
#ifndef LB_EVAL_RESULT_H
#define LB_EVAL_RESULT_H
#include <stddef.h>
#include "common/status.h"
#include "eval/capability.h"

/* Strings are owned (malloc'd) and may be NULL (JSON null). */
typedef struct lb_eval_result {
    char *id;
    char *domain;
    char *mode;              /* "llm" | "sandbox" */
    int repeat;              /* 0-based */
    double score;            /* [0, 1]; -1 = none (not scored) */
    char *scorer;
    char *answer;
    char *ground_truth_json; /* the row's ground_truth as JSON text (NULL: JSON null) */
    char *status;            /* "ok" | "failed" (the task failed) | "error" (scoring or setup failed) | "skipped" */
    char *error;             /* why, for failed / error / skipped */
    char *error_class;       /* scorer_error, scorer_timeout, judge_unavailable, bad_request, ... */
    long long turns;
    long long prompt_tokens;
    long long completion_tokens;
    long long env_tokens;    /* tokens the environment sent back (the agent's environment_tokens) */
    long long context_tokens; /* the last request's prompt + completion: the trajectory's length (0: unknown) */
    long long model_ms;
    long long tool_ms;
    long long wall_ms;       /* submission to answer */
    int has_capabilities;    /* capabilities below are set (sandbox mode, trajectory read); also taken as
                                set when capabilities.turns > 0 (lb_eval_result_has_capabilities) */
    lb_capability_counts capabilities;
    char *task_id;
    char *score_detail;      /* the scorer's why */
    char *image;             /* the row's own sandbox image (its task's and its scorer's); NULL: the evaluation's */
} lb_eval_result;

/* The result as one JSON line (no newline): every field, null where a
 * string is NULL, score null when -1, capabilities
 * {"external","file","compute","turns"} or null; ground_truth is embedded
 * as JSON (as text when ground_truth_json does not parse). Caller frees;
 * NULL when out of memory. */
char *lb_eval_result_to_json(const lb_eval_result *r);

/* Parses one results.jsonl line (len bytes, at most 64 MiB) into *r
 * (zeroed first; free with lb_eval_result_free). Unknown fields are
 * ignored; id, mode and status are required, numbers must be numbers.
 * On error err says which field and *r is empty. */
LB_MUST_CHECK int lb_eval_result_from_json(const char *text, size_t len, lb_eval_result *r, char *err,
                                           size_t errsz);

/* True when r carries capability counts: has_capabilities, or counted
 * turns. */
int lb_eval_result_has_capabilities(const lb_eval_result *r);

/* Frees the strings of r (not r itself) and zeroes it; r may be NULL. */
void lb_eval_result_free(lb_eval_result *r);

#endif
