/* The text scorers (exact, numeric, choice) applied to one scorer request,
 * shared by `llmbox score` (score_main.c) and the web's score pool, which
 * runs these three in its own process: they are pure string work on
 * capped input (score_text.h, each fuzzed), so a process per answer only
 * cost its start (~15 ms of loader, bench/RESULTS.md). */
#ifndef LB_EVAL_SCORE_REQUEST_H
#define LB_EVAL_SCORE_REQUEST_H

#include <stddef.h>

#include "eval/score_text.h"

struct cJSON; /* cjson/cJSON.h */

#define LB_SCORE_TRUTHS_MAX 64 /* accepted answers of one ground-truth list */

/* Whether scorer is one of the three text scorers. */
int lb_score_is_text(const char *scorer);

/* The ground truth as candidate texts: a string; a number's text; each
 * element of a list; anything else as its JSON. Returns how many (at most
 * max; the texts are malloc'd: lb_score_truths_free). */
size_t lb_score_truth_texts(const struct cJSON *gt, char **v, size_t *lens, size_t max);
void lb_score_truths_free(char **v, size_t n);

/* Scores answer with the text scorer named scorer (lb_score_is_text)
 * against the nt truths; numeric reads rel_tol / abs_tol from req, else
 * from row (either may be NULL), else 1e-2 and 1e-6. s is zeroed first.
 * Sets s->error_class to "scorer_error" when the ground truth itself
 * could not be used. */
void lb_score_text_run(const char *scorer, const char *answer, size_t alen, const char *const *truths,
                       const size_t *lens, size_t nt, const struct cJSON *req, const struct cJSON *row, lb_score *s);

#endif
