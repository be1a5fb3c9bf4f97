/* A task as API JSON; the contract is task_json.h. The owner and the
 * agent's pid stay out: they are for access checks and the reaper. */
#include "web/task_json.h"

#include "common/status.h"
#include "store/store.h"
#include "web/round_json.h"

#include <stdlib.h>

static int lb_add_text_or_null(cJSON *o, const char *k, const char *v)
{
    cJSON *j = v ? cJSON_CreateString(v) : cJSON_CreateNull();
    return j && cJSON_AddItemToObject(o, k, j) ? LB_OK : LB_E_NOMEM;
}

/* -1 (the column was NULL) is null */
static int lb_add_int_or_null(cJSON *o, const char *k, int64_t v)
{
    cJSON *j = v < 0 ? cJSON_CreateNull() : cJSON_CreateNumber((double)v);
    return j && cJSON_AddItemToObject(o, k, j) ? LB_OK : LB_E_NOMEM;
}

/* The detailed accounting (stored as one object since schema v2): its
 * numbers join "usage", the counted columns winning a clash. */
static int lb_add_usage_details(cJSON *usage, const char *json)
{
    cJSON *more = json ? cJSON_Parse(json) : NULL;
    const cJSON *it;
    cJSON *obj = cJSON_IsObject(more) ? more : NULL;
    int rc = LB_OK;
    cJSON_ArrayForEach(it, obj)
    {
        if (it->string && !cJSON_HasObjectItem(usage, it->string) &&
            !cJSON_AddItemToObject(usage, it->string, cJSON_Duplicate(it, 1))) {
            rc = LB_E_NOMEM;
            break;
        }
    }
    cJSON_Delete(more);
    return rc;
}

int lb_task_json(const lb_task *t, cJSON *artifacts, cJSON **out)
{
    *out = NULL;
    cJSON *o = cJSON_CreateObject(), *usage = NULL;
    if (!o || !cJSON_AddStringToObject(o, "id", t->id) ||
        !cJSON_AddStringToObject(o, "status", lb_task_status_name(t->status)) ||
        lb_add_text_or_null(o, "reason", t->reason) ||
        !cJSON_AddStringToObject(o, "prompt", t->prompt ? t->prompt : "") ||
        lb_add_text_or_null(o, "model", t->model) || !cJSON_AddNumberToObject(o, "max_turns", t->max_turns) ||
        lb_add_int_or_null(o, "created_ms", t->created_ms) || lb_add_int_or_null(o, "started_ms", t->started_ms) ||
        lb_add_int_or_null(o, "finished_ms", t->finished_ms) || !cJSON_AddNumberToObject(o, "turns", t->turns) ||
        !(usage = cJSON_AddObjectToObject(o, "usage")) ||
        !cJSON_AddNumberToObject(usage, "prompt_tokens", (double)t->prompt_tokens) ||
        !cJSON_AddNumberToObject(usage, "completion_tokens", (double)t->completion_tokens) ||
        !cJSON_AddNumberToObject(usage, "total_tokens", (double)(t->prompt_tokens + t->completion_tokens)) ||
        lb_add_text_or_null(o, "answer", t->answer) || lb_add_int_or_null(o, "token_budget", t->token_budget) ||
        lb_add_int_or_null(o, "timeout_s", t->timeout_s) || lb_add_usage_details(usage, t->usage_json))
        goto fail;
    /* a damaged inputs list becomes [] rather than failing the whole view */
    cJSON *inputs = t->inputs_json ? cJSON_Parse(t->inputs_json) : NULL;
    if (!inputs)
        inputs = cJSON_CreateArray();
    if (!inputs || !cJSON_AddItemToObject(o, "inputs", inputs)) {
        cJSON_Delete(inputs);
        goto fail;
    }
    if (lb_add_text_or_null(o, "network", t->network) || lb_add_text_or_null(o, "image", t->image) ||
        lb_add_text_or_null(o, "rerun_of", t->rerun_of))
        goto fail;
    /* how it runs (schema v6): the object as stored; none, or a value that
     * is not an object (never written by this service), is null */
    cJSON *opts = t->options_json ? cJSON_Parse(t->options_json) : NULL;
    if (!cJSON_IsObject(opts)) {
        cJSON_Delete(opts);
        opts = cJSON_CreateNull();
    }
    if (!opts || !cJSON_AddItemToObject(o, "options", opts)) {
        cJSON_Delete(opts);
        goto fail;
    }
    if (!artifacts)
        artifacts = cJSON_CreateArray();
    if (!artifacts || !cJSON_AddItemToObject(o, "artifacts", artifacts))
        goto fail;
    *out = o;
    return LB_OK;
fail:
    cJSON_Delete(artifacts);
    cJSON_Delete(o);
    return LB_E_NOMEM;
}

int lb_store_task_get(lb_store *s, const char *id, cJSON **out)
{
    *out = NULL;
    lb_task t;
    int rc = lb_store_task_load(s, id, &t);
    if (rc != LB_OK)
        return rc;
    cJSON *arts = NULL;
    rc = lb_task_artifacts_json(s, id, &arts);
    if (rc == LB_OK)
        rc = lb_task_json(&t, arts, out);
    /* follow-ups: the conversation's rounds */
    if (rc == LB_OK && (rc = lb_task_rounds_json(s, id, *out)) != LB_OK) {
        cJSON_Delete(*out);
        *out = NULL;
    }
    lb_task_free(&t);
    return rc;
}

cJSON *lb_task_summary_json(const lb_task *t)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "id", t->id) ||
        !cJSON_AddStringToObject(o, "status", lb_task_status_name(t->status)) ||
        !cJSON_AddStringToObject(o, "prompt", t->prompt ? t->prompt : "") ||
        lb_add_text_or_null(o, "model", t->model) || lb_add_int_or_null(o, "created_ms", t->created_ms) ||
        lb_add_int_or_null(o, "finished_ms", t->finished_ms)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int lb_store_task_page_of(lb_store *s, const char *owner, int limit, int64_t before_ms, const char *before_id,
                          cJSON **out)
{
    *out = NULL;
    lb_task *rows = NULL;
    size_t n = 0;
    int rc = lb_store_task_rows(s, owner, limit, before_ms, before_id, &rows, &n);
    if (rc != LB_OK)
        return rc;
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *o = lb_task_summary_json(&rows[i]);
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            cJSON_Delete(arr);
            arr = NULL;
        }
    }
    lb_tasks_free(rows, n);
    if (!arr)
        return LB_E_NOMEM;
    *out = arr;
    return LB_OK;
}

int lb_store_task_page(lb_store *s, int limit, int64_t before_ms, const char *before_id, cJSON **out)
{
    return lb_store_task_page_of(s, NULL, limit, before_ms, before_id, out);
}

int lb_store_task_list(lb_store *s, int limit, int64_t before_ms, cJSON **out)
{
    return lb_store_task_page(s, limit, before_ms, NULL, out);
}

int lb_artifacts_json(const lb_artifact *a, size_t n, cJSON **out)
{
    *out = NULL;
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return LB_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            cJSON_Delete(arr);
            return LB_E_NOMEM;
        }
        if (!cJSON_AddStringToObject(o, "path", a[i].path) ||
            !cJSON_AddNumberToObject(o, "size", (double)a[i].size) ||
            !cJSON_AddStringToObject(o, "mime", a[i].mime) || !cJSON_AddStringToObject(o, "sha256", a[i].sha256)) {
            cJSON_Delete(arr);
            return LB_E_NOMEM;
        }
    }
    *out = arr;
    return LB_OK;
}

int lb_task_artifacts_json(lb_store *s, const char *id, cJSON **out)
{
    *out = NULL;
    lb_artifact *rows = NULL;
    size_t n = 0;
    int rc = lb_store_artifacts_rows(s, id, &rows, &n);
    if (rc == LB_OK)
        rc = lb_artifacts_json(rows, n, out);
    free(rows);
    return rc;
}
