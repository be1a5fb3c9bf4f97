/* finish: ends the task, with an optional final answer. */
#include "llmbox/tool.h"

#include <cjson/cJSON.h>
#include <string.h>

LLMBOX_PLUGIN_INIT;

static const char description[] =
    "Call this when the task is complete, or when you cannot make further progress. "
    "Before calling it, make sure every requested file is in /testbed/output and, if the "
    "task asks for an answer, that it is written to /testbed/output/answer.txt. "
    "The optional 'answer' is saved as answer.txt when you have not written one.";

static const char parameters[] =
    "{\"type\":\"object\","
    "\"properties\":{\"answer\":{\"type\":\"string\","
    "\"description\":\"The final answer, if the task asks for one.\"}},"
    "\"required\":[]}";

static int finish_invoke(llmbox_ctx *ctx, const char *args_json, size_t args_len,
                         llmbox_result *r)
{
    cJSON *args = cJSON_ParseWithLength(args_json, args_len);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(args, "answer");
    const char *ans = cJSON_IsString(a) ? a->valuestring : NULL;
    int rc = host->finish(ctx, ans, ans ? strlen(ans) : 0);
    static const char done[] = "The task is finished.";
    host->result_append(r, LLMBOX_STREAM_TEXT, done, sizeof done - 1);
    host->result_set_status(r, rc == LLMBOX_OK ? "ok" : "error");
    cJSON_Delete(args);
    return rc;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "finish",
    .description = description,
    .parameters = parameters,
    .invoke = finish_invoke,
}};

LLMBOX_PLUGIN_DEFINE("finish", "1.0", tools);
