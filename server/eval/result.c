/* results.jsonl lines (result.h). */
#include "eval/result.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES ((size_t)64 << 20) /* a line holds an answer (64 KiB cap) and a ground truth */

void lb_eval_result_free(lb_eval_result *r)
{
    if (!r)
        return;
    free(r->id);
    free(r->domain);
    free(r->mode);
    free(r->scorer);
    free(r->answer);
    free(r->ground_truth_json);
    free(r->status);
    free(r->error);
    free(r->error_class);
    free(r->task_id);
    free(r->score_detail);
    free(r->image);
    memset(r, 0, sizeof *r);
}

int lb_eval_result_has_capabilities(const lb_eval_result *r)
{
    return r->has_capabilities || r->capabilities.turns > 0;
}

static int add_str(cJSON *o, const char *k, const char *v)
{
    return (v ? cJSON_AddStringToObject(o, k, v) : cJSON_AddNullToObject(o, k)) != NULL;
}

static int add_num(cJSON *o, const char *k, double v)
{
    return cJSON_AddNumberToObject(o, k, v) != NULL;
}

char *lb_eval_result_to_json(const lb_eval_result *r)
{
    cJSON *o = cJSON_CreateObject();
    char *out = NULL;
    if (!o)
        return NULL;
    int ok = add_str(o, "id", r->id) && add_str(o, "domain", r->domain) && add_str(o, "mode", r->mode) &&
             add_num(o, "repeat", r->repeat);
    if (ok)
        ok = (r->score < 0 || isnan(r->score)) ? cJSON_AddNullToObject(o, "score") != NULL
                                               : add_num(o, "score", r->score);
    ok = ok && add_str(o, "scorer", r->scorer) && add_str(o, "answer", r->answer);
    if (ok) {
        cJSON *gt = r->ground_truth_json ? cJSON_Parse(r->ground_truth_json) : cJSON_CreateNull();
        if (!gt && r->ground_truth_json)
            gt = cJSON_CreateString(r->ground_truth_json);
        ok = gt && cJSON_AddItemToObject(o, "ground_truth", gt);
    }
    ok = ok && add_str(o, "status", r->status) && add_str(o, "error", r->error) &&
         add_str(o, "error_class", r->error_class) && add_num(o, "turns", (double)r->turns) &&
         add_num(o, "prompt_tokens", (double)r->prompt_tokens) &&
         add_num(o, "completion_tokens", (double)r->completion_tokens) &&
         add_num(o, "env_tokens", (double)r->env_tokens) &&
         add_num(o, "context_tokens", (double)r->context_tokens) && add_num(o, "model_ms", (double)r->model_ms) &&
         add_num(o, "tool_ms", (double)r->tool_ms) && add_num(o, "wall_ms", (double)r->wall_ms);
    if (ok && lb_eval_result_has_capabilities(r)) {
        cJSON *c = cJSON_AddObjectToObject(o, "capabilities");
        ok = c && add_num(c, "external", (double)r->capabilities.external) &&
             add_num(c, "file", (double)r->capabilities.file) &&
             add_num(c, "compute", (double)r->capabilities.compute) &&
             add_num(c, "turns", (double)r->capabilities.turns);
        /* by traffic, only for a task that ran with network rules */
        if (ok && r->capabilities.traffic)
            ok = add_num(c, "external_connections", (double)r->capabilities.external_conns);
    } else if (ok) {
        ok = cJSON_AddNullToObject(o, "capabilities") != NULL;
    }
    ok = ok && add_str(o, "task_id", r->task_id) && add_str(o, "score_detail", r->score_detail) &&
         add_str(o, "image", r->image);
    if (ok)
        out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return out;
}

/* A string or null field into *out; LB_E_INVAL (with err) for another type. */
static int get_str(const cJSON *o, const char *k, int required, char **out, char *err, size_t errsz)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v || cJSON_IsNull(v)) {
        if (required) {
            snprintf(err, errsz, "field `%s`: missing", k);
            return LB_E_INVAL;
        }
        return LB_OK;
    }
    if (!cJSON_IsString(v)) {
        snprintf(err, errsz, "field `%s`: not a string", k);
        return LB_E_INVAL;
    }
    *out = strdup(v->valuestring);
    return *out ? LB_OK : LB_E_NOMEM;
}

static int get_num(const cJSON *o, const char *k, long long *out, char *err, size_t errsz)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble > 9e18 ||
        v->valuedouble < -9e18) {
        snprintf(err, errsz, "field `%s`: not a number", k);
        return LB_E_INVAL;
    }
    *out = (long long)v->valuedouble;
    return LB_OK;
}

int lb_eval_result_from_json(const char *text, size_t len, lb_eval_result *r, char *err, size_t errsz)
{
    memset(r, 0, sizeof *r);
    r->score = -1;
    if (len > LINE_MAX_BYTES) {
        snprintf(err, errsz, "the line is over %zu bytes", LINE_MAX_BYTES);
        return LB_E_TOOBIG;
    }
    cJSON *o = cJSON_ParseWithLength(text, len);
    if (!cJSON_IsObject(o)) {
        snprintf(err, errsz, "not a JSON object");
        cJSON_Delete(o);
        return LB_E_INVAL;
    }
    long long rep = 0;
    int rc = get_str(o, "id", 1, &r->id, err, errsz);
    if (rc == LB_OK)
        rc = get_str(o, "domain", 0, &r->domain, err, errsz);
    if (rc == LB_OK)
        rc = get_str(o, "mode", 1, &r->mode, err, errsz);
    if (rc == LB_OK)
        rc = get_num(o, "repeat", &rep, err, errsz);
    if (rc == LB_OK && (rep < 0 || rep > 1000000)) {
        snprintf(err, errsz, "field `repeat`: out of range");
        rc = LB_E_INVAL;
    }
    r->repeat = (int)rep;
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "score");
    if (rc == LB_OK && sc && !cJSON_IsNull(sc)) {
        if (!cJSON_IsNumber(sc) || !(sc->valuedouble >= 0 && sc->valuedouble <= 1)) {
            snprintf(err, errsz, "field `score`: not a number in [0, 1]");
            rc = LB_E_INVAL;
        } else {
            r->score = sc->valuedouble;
        }
    }
    static const char *const strs[] = {"scorer", "answer", "error", "error_class", "task_id", "score_detail",
                                       "image"};
    char **dst[] = {&r->scorer, &r->answer, &r->error, &r->error_class, &r->task_id, &r->score_detail, &r->image};
    for (size_t i = 0; rc == LB_OK && i < sizeof strs / sizeof strs[0]; i++)
        rc = get_str(o, strs[i], 0, dst[i], err, errsz);
    if (rc == LB_OK)
        rc = get_str(o, "status", 1, &r->status, err, errsz);
    static const char *const nums[] = {"turns", "prompt_tokens", "completion_tokens", "env_tokens",
                                       "context_tokens", "model_ms", "tool_ms", "wall_ms"};
    long long *ndst[] = {&r->turns, &r->prompt_tokens, &r->completion_tokens, &r->env_tokens,
                         &r->context_tokens, &r->model_ms, &r->tool_ms, &r->wall_ms};
    for (size_t i = 0; rc == LB_OK && i < sizeof nums / sizeof nums[0]; i++)
        rc = get_num(o, nums[i], ndst[i], err, errsz);
    const cJSON *gt = cJSON_GetObjectItemCaseSensitive(o, "ground_truth");
    if (rc == LB_OK && gt && !cJSON_IsNull(gt)) {
        r->ground_truth_json = cJSON_PrintUnformatted(gt);
        if (!r->ground_truth_json)
            rc = LB_E_NOMEM;
    }
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(o, "capabilities");
    if (rc == LB_OK && cJSON_IsObject(caps)) {
        r->has_capabilities = 1;
        const cJSON *xc = cJSON_GetObjectItemCaseSensitive(caps, "external_connections");
        r->capabilities.traffic = xc && !cJSON_IsNull(xc);
        rc = get_num(caps, "external_connections", &r->capabilities.external_conns, err, errsz);
        if (rc == LB_OK)
            rc = get_num(caps, "external", &r->capabilities.external, err, errsz);
        if (rc == LB_OK)
            rc = get_num(caps, "file", &r->capabilities.file, err, errsz);
        if (rc == LB_OK)
            rc = get_num(caps, "compute", &r->capabilities.compute, err, errsz);
        if (rc == LB_OK)
            rc = get_num(caps, "turns", &r->capabilities.turns, err, errsz);
    } else if (rc == LB_OK && caps && !cJSON_IsNull(caps)) {
        snprintf(err, errsz, "field `capabilities`: not an object");
        rc = LB_E_INVAL;
    }
    cJSON_Delete(o);
    if (rc != LB_OK)
        lb_eval_result_free(r);
    if (rc == LB_E_NOMEM)
        snprintf(err, errsz, "out of memory");
    return rc;
}
