/* The replay provider (LLMBOX_LLM_PROVIDER=replay, LLMBOX_REPLAY_FILE):
 * no model and no HTTP; the assistant messages of a recorded run are
 * played back in order, one per turn, and their tool calls run for real
 * in the sandbox. The file is a trajectory.json written by llmbox (its
 * "messages", with each turn's reasoning from "turns") or a plain JSON
 * list of assistant messages written by hand:
 *   [{"content": "...", "reasoning_content": "...",
 *     "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]}, ...]
 * Each one goes through the OpenAI response parser, so it is sanitized
 * and calls written as text (<function=...>) are found as in a live run.
 * When the recording runs out the reply is a call of finish. */
#include "agent/model_replay.h"

#include "agent/model_http.h"
#include "agent/prompts.h"
#include "agent/run_state.h"
#include "agent/toolcall_parse.h"
#include "agent/trajectory.h"
#include "common/status.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One recorded message as an OpenAI assistant message, or NULL with a
 * sentence in err. reasoning (may be NULL) is the turn's, from a trajectory. */
static cJSON *normalize(const char *shown, int idx, const cJSON *m, const cJSON *reasoning,
                        char *err, size_t errsz)
{
    cJSON *s = cJSON_CreateObject();
    if (!s) {
        snprintf(err, errsz, "Out of memory while reading the replay file.");
        return NULL;
    }
    cJSON_AddStringToObject(s, "role", "assistant");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    cJSON_AddItemToObject(s, "content", c ? cJSON_Duplicate(c, 1) : cJSON_CreateNull());
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(m, "reasoning_content");
    if (!cJSON_IsString(rc))
        rc = cJSON_GetObjectItemCaseSensitive(m, "reasoning");
    if (!cJSON_IsString(rc))
        rc = reasoning;
    if (cJSON_IsString(rc))
        cJSON_AddStringToObject(s, "reasoning_content", rc->valuestring);
    const cJSON *tcs = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    if (tcs && !cJSON_IsArray(tcs) && !cJSON_IsNull(tcs)) {
        snprintf(err, errsz, "The replay file %s: message %d has tool_calls that are not a list.", shown, idx);
        cJSON_Delete(s);
        return NULL;
    }
    cJSON *calls = cJSON_AddArrayToObject(s, "tool_calls");
    const cJSON *tc;
    int k = 0;
    cJSON_ArrayForEach(tc, tcs)
    {
        k++;
        /* OpenAI's {id, type, function:{name, arguments}} or plain {name, arguments} */
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        if (!cJSON_IsObject(fn))
            fn = tc;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(name)) {
            snprintf(err, errsz, "The replay file %s: tool call %d of message %d has no name.", shown, k, idx);
            cJSON_Delete(s);
            return NULL;
        }
        cJSON *o = cJSON_CreateObject();
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(tc, "id");
        if (cJSON_IsString(id))
            cJSON_AddStringToObject(o, "id", id->valuestring);
        cJSON_AddStringToObject(o, "type", "function");
        cJSON *f = cJSON_AddObjectToObject(o, "function");
        cJSON_AddStringToObject(f, "name", name->valuestring);
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        if (args)
            cJSON_AddItemToObject(f, "arguments", cJSON_Duplicate(args, 1));
        cJSON_AddItemToArray(calls, o);
    }
    return s;
}

/* Removes the finish calls ("finish", or "submit" under the official
 * names) of every step but the last, and a step left with no call and
 * no text. */
static void drop_early_finishes(cJSON *steps)
{
    int n = cJSON_GetArraySize(steps);
    for (int i = n - 2; i >= 0; i--) {
        cJSON *st = cJSON_GetArrayItem(steps, i);
        cJSON *calls = cJSON_GetObjectItemCaseSensitive(st, "tool_calls");
        for (int k = cJSON_GetArraySize(calls) - 1; k >= 0; k--) {
            const char *name = cJSON_GetStringValue(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(calls, k),
                                                                                  "function"), "name"));
            if (name && (!strcmp(name, "finish") || !strcmp(name, "submit")))
                cJSON_DeleteItemFromArray(calls, k);
        }
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "content"));
        if (!cJSON_GetArraySize(calls) && (!text || !*text))
            cJSON_DeleteItemFromArray(steps, i);
    }
}

int lb_replay_load(const char *path, cJSON **steps, char *err, size_t errsz)
{
    *steps = NULL;
    if (!path || !*path) {
        snprintf(err, errsz, "LLMBOX_REPLAY_FILE is not set (replay_file in llmbox.conf): the replay provider needs a trajectory.json "
                             "or a JSON list of assistant messages to play.");
        return LB_E_INVAL;
    }
    const char *shown = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char *data = NULL;
    size_t len = 0;
    int rc = lb_read_file(path, LB_REPLAY_MAX_FILE, &data, &len);
    if (rc == LB_E_TOOBIG) {
        snprintf(err, errsz, "The replay file %s is over %u MiB.", path, LB_REPLAY_MAX_FILE >> 20);
        return LB_E_INVAL;
    }
    if (rc == LB_E_NOTFOUND) {
        snprintf(err, errsz, "The replay file %s does not exist.", path);
        return LB_E_INVAL;
    }
    if (rc != LB_OK) {
        snprintf(err, errsz, "Cannot read the replay file %s (%s); it must be a regular file, not a symlink.",
                 path, lb_strerror(rc));
        return LB_E_INVAL;
    }
    cJSON *root = cJSON_ParseWithLength(data, len);
    if (!root) {
        const char *ep = cJSON_GetErrorPtr();
        long at = ep && ep >= data && ep <= data + len ? (long)(ep - data) : -1;
        snprintf(err, errsz, "The replay file %s is not valid JSON (error near byte %ld).", path, at);
        free(data);
        return LB_E_INVAL;
    }
    free(data);
    const cJSON *list = root, *turns = NULL;
    if (cJSON_IsObject(root)) {
        list = cJSON_GetObjectItemCaseSensitive(root, "messages");
        turns = cJSON_GetObjectItemCaseSensitive(root, "turns");
    }
    if (!cJSON_IsArray(list)) {
        snprintf(err, errsz, "The replay file %s is neither a trajectory.json (an object with a "
                             "\"messages\" list) nor a JSON list of assistant messages.", path);
        cJSON_Delete(root);
        return LB_E_INVAL;
    }
    cJSON *out = cJSON_CreateArray();
    const cJSON *m;
    int idx = 0, n = 0;
    rc = out ? LB_OK : LB_E_NOMEM;
    cJSON_ArrayForEach(m, list)
    {
        idx++;
        if (!cJSON_IsObject(m)) {
            snprintf(err, errsz, "The replay file %s: message %d is not a JSON object.", path, idx);
            rc = LB_E_INVAL;
            break;
        }
        /* a whole conversation may be given: only the assistant's messages play */
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (role && !(cJSON_IsString(role) && !strcmp(role->valuestring, "assistant")))
            continue;
        const cJSON *turn = cJSON_GetArrayItem(turns, n);
        cJSON *s = normalize(shown, idx, m, cJSON_GetObjectItemCaseSensitive(turn, "reasoning"), err, errsz);
        if (!s) {
            rc = LB_E_INVAL;
            break;
        }
        cJSON_AddItemToArray(out, s);
        n++;
    }
    /* a conversation of several rounds (follow-ups) plays back as one run:
     * the finish calls that ended its earlier rounds would end it early */
    const cJSON *rounds = cJSON_GetObjectItemCaseSensitive(root, "round");
    if (rc == LB_OK && cJSON_IsNumber(rounds) && rounds->valueint > 1)
        drop_early_finishes(out);
    cJSON_Delete(root);
    if (rc == LB_OK && n == 0) {
        snprintf(err, errsz, "The replay file %s holds no assistant messages.", path);
        rc = LB_E_INVAL;
    }
    if (rc != LB_OK) {
        cJSON_Delete(out);
        return rc;
    }
    *steps = out;
    return LB_OK;
}

int lb_replay_next(lb_model *m, lb_model_reply *r, char *err, size_t errsz)
{
    memset(r, 0, sizeof *r);
    if (m->cancel && *m->cancel) {
        snprintf(err, errsz, "The task was cancelled.");
        return LB_E_CANCELLED;
    }
    const cJSON *step = cJSON_GetArrayItem(m->replay, m->replay_next);
    if (!step) {
        /* the recording ran out: end the run */
        r->prompt_tokens = r->completion_tokens = -1;
        r->content = strdup("The recording has no more messages.");
        r->calls = calloc(1, sizeof *r->calls);
        if (r->calls) {
            r->n_calls = 1;
            r->calls[0].name = strdup("finish");
            r->calls[0].arguments = strdup("{}");
        }
        if (!r->content || !r->calls || !r->calls[0].name || !r->calls[0].arguments) {
            lb_model_reply_free(r);
            snprintf(err, errsz, "Out of memory while replaying.");
            return LB_E_NOMEM;
        }
        return LB_OK;
    }
    m->replay_next++;
    cJSON *resp = cJSON_CreateObject();
    cJSON *choices = cJSON_AddArrayToObject(resp, "choices");
    cJSON *choice = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, choice);
    cJSON_AddItemReferenceToObject(choice, "message", (cJSON *)step);
    char *body = cJSON_PrintUnformatted(resp);
    cJSON_Delete(resp);
    if (!body) {
        snprintf(err, errsz, "Out of memory while replaying.");
        return LB_E_NOMEM;
    }
    int rc = lb_parse_chat_response(body, strlen(body), r, err, errsz);
    free(body);
    return rc;
}
