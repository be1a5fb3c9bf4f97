/* The Python of an official benchmark folder, run where it may run: in a
 * fresh sandbox, never in the CLI, the web or the agent (llmbox eval
 * --benchmark).
 *
 * Two programs are generated here. The check runs before any model is
 * called: it imports reward.py and calls compute_score("test", "test") as
 * the official runner does to find a module the image lacks (math_verify),
 * and in LLM mode calls create_prompt(row) of vanilla_llm_prompt.py on
 * every row. The scorer (a folder dataset's scorer.py, run by the `script`
 * scorer in its own fresh sandbox per run) calls compute_score(answer,
 * ground_truth, **the row's other fields) and prints the score, or exits
 * non-zero when the function raised or returned something that is not a
 * number in [0, 1], so that is a classified scorer error, never a zero. */
#ifndef LB_EVAL_BENCH_PY_H
#define LB_EVAL_BENCH_PY_H

#include <stddef.h>

#include "common/status.h"

#define LB_BENCH_PY_MAX (1u << 20)          /* reward.py, vanilla_llm_prompt.py */
#define LB_BENCH_PROMPTS_MAX (60u << 20)    /* all rows' create_prompt results together */

/* Where the check runs. */
typedef struct lb_bench_box {
    const char *socket;  /* sandboxd's */
    const char *image;   /* the evaluation's image (named in errors) */
    int memory_mib, pids, timeout_s;
} lb_bench_box;

/* The scorer program for a folder dataset: reward.py's text (rlen bytes)
 * embedded. A new string; NULL when out of memory. */
char *lb_bench_scorer_program(const char *reward, size_t rlen);

/* Runs the check in a fresh sandbox. rows_jsonl (one official row per line,
 * nrows lines) NULL: only reward.py is checked; else *prompts gets nrows
 * strings (the caller frees each and the array). vanilla NULL: the folder
 * has no vanilla_llm_prompt.py (the row's problem_statement is the
 * prompt, as the runner's default). LB_E_NOTFOUND when reward.py imports
 * a module the image lacks (err names both), another error with a
 * sentence otherwise. */
LB_MUST_CHECK int lb_bench_py_check(const lb_bench_box *b, const char *reward, size_t rlen, const char *vanilla,
                                    size_t vlen, const char *rows_jsonl, size_t rows_len, size_t nrows,
                                    char ***prompts, char *err, size_t errsz);

#endif
