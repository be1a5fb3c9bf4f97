/* The rounds of a task as API JSON; the contract is round_json.h. */
#include "web/round_json.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store_round.h"

#include <stdlib.h>

/* A JSON text as stored, or fallback when it is missing or damaged. */
static cJSON *parsed_or(const char *json, cJSON *(*fallback)(void))
{
    cJSON *v = json ? cJSON_Parse(json) : NULL;
    return v ? v : fallback();
}

static cJSON *round_json(const lb_round *rd)
{
    cJSON *o = cJSON_CreateObject(), *usage = NULL;
    if (!o || !cJSON_AddNumberToObject(o, "round", rd->n) ||
        !cJSON_AddStringToObject(o, "prompt", rd->prompt ? rd->prompt : "") ||
        !cJSON_AddItemToObject(o, "inputs", parsed_or(rd->inputs_json, cJSON_CreateArray)) ||
        !cJSON_AddStringToObject(o, "status", rd->status) ||
        !cJSON_AddItemToObject(o, "reason", rd->reason ? cJSON_CreateString(rd->reason) : cJSON_CreateNull()) ||
        !cJSON_AddItemToObject(o, "answer", rd->answer ? cJSON_CreateString(rd->answer) : cJSON_CreateNull()) ||
        !cJSON_AddItemToObject(o, "artifacts", parsed_or(rd->artifacts_json, cJSON_CreateNull)) ||
        !(usage = cJSON_AddObjectToObject(o, "usage")) || !cJSON_AddNumberToObject(usage, "turns", rd->turns) ||
        !cJSON_AddNumberToObject(usage, "prompt_tokens", (double)rd->prompt_tokens) ||
        !cJSON_AddNumberToObject(usage, "completion_tokens", (double)rd->completion_tokens) ||
        !cJSON_AddItemToObject(o, "sandbox", rd->sandbox[0] ? cJSON_CreateString(rd->sandbox) : cJSON_CreateNull()) ||
        !cJSON_AddBoolToObject(o, "fresh", rd->fresh) ||
        /* the state saved at its end (its size; the name is sandboxd's business) */
        !cJSON_AddItemToObject(o, "state_bytes", rd->state && rd->state_bytes >= 0
                                                     ? cJSON_CreateNumber((double)rd->state_bytes)
                                                     : cJSON_CreateNull()) ||
        !cJSON_AddItemToObject(o, "created_ms", cJSON_CreateNumber((double)rd->created_ms)) ||
        !cJSON_AddItemToObject(o, "started_ms",
                               rd->started_ms < 0 ? cJSON_CreateNull() : cJSON_CreateNumber((double)rd->started_ms)) ||
        !cJSON_AddItemToObject(o, "finished_ms", rd->finished_ms < 0 ? cJSON_CreateNull()
                                                                     : cJSON_CreateNumber((double)rd->finished_ms))) {
        cJSON_Delete(o);
        return NULL;
    }
    /* the round's detailed accounting, as the task's */
    cJSON *more = rd->usage_json ? cJSON_Parse(rd->usage_json) : NULL;
    const cJSON *it;
    const cJSON *obj = cJSON_IsObject(more) ? more : NULL;
    cJSON_ArrayForEach(it, obj)
    {
        if (it->string && !cJSON_HasObjectItem(usage, it->string))
            cJSON_AddItemToObject(usage, it->string, cJSON_Duplicate(it, 1));
    }
    cJSON_Delete(more);
    return o;
}

int lb_task_rounds_json(lb_store *s, const char *id, cJSON *task)
{
    lb_round *v = NULL;
    size_t n = 0;
    int rc = lb_store_rounds(s, id, &v, &n);
    if (rc != LB_OK)
        return rc;
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *o = round_json(&v[i]);
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            cJSON_Delete(arr);
            arr = NULL;
        }
    }
    int cur = n ? v[n - 1].n : 1;
    lb_rounds_free(v, n);
    if (!arr || !cJSON_AddNumberToObject(task, "round", cur) || !cJSON_AddItemToObject(task, "rounds", arr)) {
        cJSON_Delete(arr);
        return LB_E_NOMEM;
    }
    /* a fork: which task and round it began from */
    char src[33];
    int src_round = 0;
    cJSON *fork = NULL;
    if (lb_store_task_fork_of(s, id, src, sizeof src, &src_round) == LB_OK && src[0]) {
        fork = cJSON_CreateObject();
        if (fork && (!cJSON_AddStringToObject(fork, "id", src) || !cJSON_AddNumberToObject(fork, "round", src_round))) {
            cJSON_Delete(fork);
            fork = NULL;
        }
    }
    if (!fork)
        fork = cJSON_CreateNull();
    if (!fork || !cJSON_AddItemToObject(task, "fork_of", fork)) {
        cJSON_Delete(fork);
        return LB_E_NOMEM;
    }
    lb_kept k;
    cJSON *sb = NULL;
    if (lb_store_kept_get(s, id, &k) == LB_OK && k.kept_until_ms > lb_now_ms()) {
        sb = cJSON_CreateObject();
        if (sb)
            cJSON_AddNumberToObject(sb, "kept_until_ms", (double)k.kept_until_ms);
    }
    if (!sb)
        sb = cJSON_CreateNull();
    return sb && cJSON_AddItemToObject(task, "sandbox", sb) ? LB_OK : LB_E_NOMEM;
}
