/* trajectory.json: the faithful record of a run, for people (download,
 * debugging) and for training (messages exactly as the model saw them). */
#include "agent/trajectory.h"

#include "agent/run_state.h"
#include "agent/sink.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int lb_traj_init(lb_traj *t, const char *task_id, const char *prompt, int max_turns,
                 const char *model_url, const char *model_name, const cJSON *tools,
                 const cJSON *config)
{
    memset(t, 0, sizeof *t);
    t->root = cJSON_CreateObject();
    if (!t->root)
        return LB_E_NOMEM;
    cJSON_AddNumberToObject(t->root, "version", 1);
    cJSON *task = cJSON_AddObjectToObject(t->root, "task");
    cJSON_AddStringToObject(task, "id", task_id ? task_id : "");
    cJSON_AddStringToObject(task, "prompt", prompt ? prompt : "");
    cJSON_AddNumberToObject(task, "max_turns", max_turns);
    cJSON *model = cJSON_AddObjectToObject(t->root, "model");
    cJSON_AddStringToObject(model, "url", model_url ? model_url : "");
    cJSON_AddStringToObject(model, "name", model_name ? model_name : "");
    if (config)
        cJSON_AddItemToObject(t->root, "config", cJSON_Duplicate(config, 1));
    cJSON_AddItemToObject(t->root, "tools", tools ? cJSON_Duplicate(tools, 1) : cJSON_CreateArray());
    t->turns = cJSON_AddArrayToObject(t->root, "turns");
    return t->turns ? LB_OK : LB_E_NOMEM;
}

cJSON *lb_traj_turn(lb_traj *t, int turn)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "turn", turn);
    cJSON_AddItemToArray(t->turns, o);
    return o;
}

static void set_item(cJSON *root, const char *key, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(root, key);
    if (v)
        cJSON_AddItemToObject(root, key, v);
}

int lb_traj_write(lb_traj *t, const char *path, const cJSON *messages, const char *status,
                  const char *reason, const char *answer, const lb_task_usage *u,
                  const cJSON *timings)
{
    if (!t->root || !path)
        return LB_E_INVAL;
    set_item(t->root, "status", cJSON_CreateString(status ? status : ""));
    set_item(t->root, "reason", reason && *reason ? cJSON_CreateString(reason) : cJSON_CreateNull());
    set_item(t->root, "answer", answer ? cJSON_CreateString(answer) : cJSON_CreateNull());
    /* the totals of Tables 5 and 6 of the paper: tokens by origin, time by place */
    lb_task_usage zero;
    memset(&zero, 0, sizeof zero);
    if (!u)
        u = &zero;
    cJSON *usage = cJSON_CreateObject();
    cJSON_AddNumberToObject(usage, "turns", u->turns);
    cJSON_AddNumberToObject(usage, "prompt_tokens", (double)u->prompt_tokens);
    cJSON_AddNumberToObject(usage, "completion_tokens", (double)u->completion_tokens);
    cJSON_AddNumberToObject(usage, "total_tokens", (double)(u->prompt_tokens + u->completion_tokens));
    cJSON_AddNumberToObject(usage, "environment_tokens", (double)u->environment_tokens);
    cJSON_AddBoolToObject(usage, "environment_estimated", u->environment_estimated);
    cJSON_AddNumberToObject(usage, "context_tokens", (double)u->context_tokens);
    cJSON_AddNumberToObject(usage, "model_ms", (double)u->model_ms);
    cJSON_AddNumberToObject(usage, "tools_ms", (double)u->tools_ms);
    cJSON_AddNumberToObject(usage, "sandbox_ms", (double)u->sandbox_ms);
    if (u->answer_source[0])
        cJSON_AddStringToObject(usage, "answer_source", u->answer_source);
    if (u->tokens_capture) {
        cJSON *tc = cJSON_AddObjectToObject(usage, "tokens_captured");
        cJSON_AddNumberToObject(tc, "ok", u->tokens_ok);
        cJSON_AddNumberToObject(tc, "turns", u->tokens_turns);
    }
    set_item(t->root, "usage", usage);
    set_item(t->root, "timings", timings ? cJSON_Duplicate(timings, 1) : cJSON_CreateObject());
    /* the conversation can be large: reference it rather than copy */
    cJSON_DeleteItemFromObjectCaseSensitive(t->root, "messages");
    if (messages)
        cJSON_AddItemReferenceToObject(t->root, "messages", (cJSON *)messages);
    char *text = cJSON_Print(t->root);
    cJSON_DeleteItemFromObjectCaseSensitive(t->root, "messages"); /* frees the reference only */
    if (!text)
        return LB_E_NOMEM;
    int rc = lb_write_file_atomic(path, text, strlen(text), 0644);
    int e = errno;
    if (rc == LB_E_IO && (e == ENOSPC || e == EDQUOT))
        rc = LB_E_NOSPACE;
    if (rc != LB_OK)
        lb_error("cannot write %s: %s", path, rc == LB_E_IO ? strerror(e) : lb_strerror(rc));
    free(text);
    return rc;
}

void lb_traj_free(lb_traj *t)
{
    cJSON_Delete(t->root);
    memset(t, 0, sizeof *t);
}
