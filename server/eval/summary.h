/* summary.json and summary.md of an evaluation: the paper's Tables 1, 5
 * and 6 and Appendix D from the results.
 *
 * summary.json (numbers rounded to 4 decimals; null where a figure has no
 * data, e.g. delta when one mode is missing):
 * {
 *   "modes": ["llm", "sandbox"],            the modes present, llm first
 *   "repeats": K,                           the largest repeat + 1
 *   "domains": {NAME: GROUP, ...},          the paper's order (math, physics, chem, biomed,
 *                                           long_context, instruct_follow), then by name
 *   "overall": GROUP,
 *   "tokens": {"llm_per_query", "sandbox_per_query", "ratio"},   overall, Table 5
 *   "env_token_share": x, "exec_time_share": x,                   overall sandbox, Table 6
 *   "qpm": {"llm", "sandbox", "ratio"},     runs / (wall_s of the mode / 60); ratio = sandbox / llm
 *   "capabilities": CAPS                    overall, Appendix D
 * }
 * GROUP = {"llm": MODE, "sandbox": MODE (the modes present), "delta": sandbox - llm accuracy in points,
 *          "token_ratio": Σ sandbox trajectory tokens / Σ llm trajectory tokens, "capabilities": CAPS}
 * MODE = {"accuracy": percent, "n": rows, "runs": results counted, "errors": runs with status error,
 *         "failed": runs with status failed, "skipped": runs with status skipped,
 *         "tokens_per_query": trajectory tokens / runs (context_tokens: the last request's prompt +
 *                             completion, i.e. prompt, generated and environment tokens once each;
 *                             prompt + completion when a line has none), "prompt_tokens_per_query",
 *         "completion_tokens_per_query", "env_tokens_per_query",
 *         "env_token_share": Σ env_tokens / Σ trajectory tokens (context_tokens, or prompt +
 *                            completion when a run has none),
 *         "exec_time_share": Σ tool_ms / Σ wall_ms (T_exe / T_total; model_ms + tool_ms for a
 *                            line without wall_ms)}
 * CAPS = {"external", "file", "compute": turns with a match / all turns, "turns": all turns,
 *         "rows": sandbox runs counted} (sandbox runs with capabilities only)
 *        and, when some of those runs had network rules (a gateway record), external access both ways
 *        over those runs: "traffic_rows": such runs, "external_runs_by_pattern": share of them with a
 *        turn the external patterns match, "external_runs_by_traffic": share with an allowed
 *        connection to a name in their record, "external_connections": those connections in all
 * Accuracy: each row's score is the mean over its repeats, then the mean
 * over rows. A run with status error or failed, or without a score, counts
 * as 0 (and is counted in errors / failed); a skipped run (the row could
 * not run) is left out of every figure but `skipped`. */
#ifndef LB_EVAL_SUMMARY_H
#define LB_EVAL_SUMMARY_H
#include <cjson/cJSON.h>
#include <stddef.h>
#include "eval/result.h"

/* The summary of n results; wall_s_llm and wall_s_sandbox: the seconds
 * each mode's runs took from the first submission to the last answer (0:
 * unknown, qpm null). Caller frees with cJSON_Delete; NULL on no memory. */
cJSON *lb_eval_summary(const lb_eval_result *v, size_t n, double wall_s_llm, double wall_s_sandbox);

/* summary.md: the same as tables a person reads, laid out like the
 * paper's (domain rows; LLM / Sandbox / Δ columns; then tokens, time and
 * capability tables). Caller frees; NULL on no memory. */
char *lb_eval_summary_markdown(const cJSON *summary);

#endif
