/* The text scorers on one request; the contract is score_request.h. */
#include "eval/score_request.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

int lb_score_is_text(const char *scorer)
{
    return scorer && (!strcmp(scorer, "exact") || !strcmp(scorer, "numeric") || !strcmp(scorer, "choice"));
}

size_t lb_score_truth_texts(const cJSON *gt, char **v, size_t *lens, size_t max)
{
    size_t n = 0;
    const cJSON *one = cJSON_IsArray(gt) ? gt->child : gt;
    while (one && n < max) {
        char *t = cJSON_IsString(one) ? strdup(one->valuestring) : cJSON_PrintUnformatted(one);
        if (!t)
            break;
        v[n] = t;
        lens[n] = strlen(t);
        n++;
        if (!cJSON_IsArray(gt))
            break;
        one = one->next;
    }
    return n;
}

void lb_score_truths_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
}

/* A tolerance: the request's, else the row's, else def (negative or
 * non-numbers ignored). */
static double num_field(const cJSON *a, const cJSON *b, const char *k, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, k);
    if (!cJSON_IsNumber(v))
        v = cJSON_GetObjectItemCaseSensitive(b, k);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 ? v->valuedouble : def;
}

void lb_score_text_run(const char *scorer, const char *answer, size_t alen, const char *const *truths,
                       const size_t *lens, size_t nt, const cJSON *req, const cJSON *row, lb_score *s)
{
    memset(s, 0, sizeof *s);
    if (!strcmp(scorer, "exact")) {
        lb_score_exact(answer, alen, truths, lens, nt, s);
    } else if (!strcmp(scorer, "choice")) {
        lb_score_choice(answer, alen, truths, lens, nt, s);
    } else {
        double rel = num_field(req, row, "rel_tol", 1e-2), abs_tol = num_field(req, row, "abs_tol", 1e-6);
        s->score = 0;
        /* any accepted value matches */
        for (size_t i = 0; i < (nt ? nt : 1) && s->score < 1; i++)
            lb_score_numeric(answer, alen, nt ? truths[i] : "", nt ? lens[i] : 0, rel, abs_tol, s);
    }
    if (s->bad_truth && !s->error_class)
        s->error_class = "scorer_error";
}
