/* The table of MCP's tools and the pieces of their results (see
 * mcp_tools.h). Each tool's schema is JSON text here, parsed when a client
 * lists the tools: short, and read by people as much as by clients. */
#include "mcp/mcp_tools.h"

#include "mcp/mcp_tools_sbx.h"
#include "mcp/mcp_tools_task.h"

#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SBX_ID "\"sandbox_id\":{\"type\":\"string\",\"description\":\"The sandbox's id, as sandbox_create or " \
               "sandbox_list gave it.\"}"
#define TASK_ID "\"task_id\":{\"type\":\"string\",\"description\":\"The task's id (32 hexadecimal characters), as " \
                "task_run gave it.\"}"

/* clang-format off */
static const lb_mcp_tool tools[] = {
    {"sandbox_create", "Create a sandbox",
     "Creates an isolated Linux sandbox (a container with its own filesystem, processes and network policy) and "
     "returns its id and status. It lives until sandbox_destroy or until its ttl_s passes. Needs the server's "
     "sandbox API token.",
     "{\"type\":\"object\",\"properties\":{"
     "\"image\":{\"type\":\"string\",\"description\":\"The image to start from (default: the server's default "
     "image).\"},"
     "\"ttl_s\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Seconds until the sandbox is destroyed on its "
     "own (default: the server's).\"},"
     "\"network\":{\"type\":\"string\",\"enum\":[\"none\",\"nat\"],\"description\":\"none: no network; nat: the "
     "internet, where the server allows it.\"}},\"additionalProperties\":false}",
     lb_mcp_tool_sbx_create},
    {"sandbox_exec", "Run a command in a sandbox",
     "Runs a shell command (bash -c) in a sandbox and returns its stdout, stderr and exit code. Sends progress "
     "notifications while it runs when the client asks for them (a progressToken).",
     "{\"type\":\"object\",\"properties\":{" SBX_ID ","
     "\"command\":{\"type\":\"string\",\"description\":\"The shell command line.\"},"
     "\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Seconds before the command is killed "
     "(default: the server's).\"},"
     "\"cwd\":{\"type\":\"string\",\"description\":\"The working directory (default: the sandbox's).\"}},"
     "\"required\":[\"sandbox_id\",\"command\"],\"additionalProperties\":false}",
     lb_mcp_tool_sbx_exec},
    {"sandbox_read_file", "Read a file of a sandbox",
     "Reads a file of a sandbox: text comes back as text, other bytes as a base64 blob.",
     "{\"type\":\"object\",\"properties\":{" SBX_ID ","
     "\"path\":{\"type\":\"string\",\"description\":\"The file's absolute path in the sandbox.\"}},"
     "\"required\":[\"sandbox_id\",\"path\"],\"additionalProperties\":false}",
     lb_mcp_tool_sbx_read},
    {"sandbox_write_file", "Write a file in a sandbox",
     "Writes a file in a sandbox (replacing it whole; its folders are made), from text or base64.",
     "{\"type\":\"object\",\"properties\":{" SBX_ID ","
     "\"path\":{\"type\":\"string\",\"description\":\"The file's absolute path in the sandbox.\"},"
     "\"content\":{\"type\":\"string\",\"description\":\"The file's content.\"},"
     "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],\"description\":\"How content is "
     "written (default utf-8).\"}},"
     "\"required\":[\"sandbox_id\",\"path\",\"content\"],\"additionalProperties\":false}",
     lb_mcp_tool_sbx_write},
    {"sandbox_list", "List sandboxes",
     "Lists the sandboxes of the sandbox API with their status and expiry.",
     "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
     lb_mcp_tool_sbx_list},
    {"sandbox_destroy", "Destroy a sandbox",
     "Destroys a sandbox and everything in it. Destroying one that is already gone is not an error.",
     "{\"type\":\"object\",\"properties\":{" SBX_ID "},\"required\":[\"sandbox_id\"],"
     "\"additionalProperties\":false}",
     lb_mcp_tool_sbx_destroy},
    {"task_run", "Run an agent task",
     "Gives a prompt (and files) to llmbox's agent, which works on it in a fresh sandbox with bash and a file "
     "editor. Streams the agent's steps as progress notifications, and returns its answer, with the files it "
     "wrote as resource links (small text files embedded). With wait false it returns the task's id at once; "
     "follow it with task_status.",
     "{\"type\":\"object\",\"properties\":{"
     "\"prompt\":{\"type\":\"string\",\"description\":\"What the agent should do.\"},"
     "\"files\":{\"type\":\"array\",\"maxItems\":100,\"description\":\"Input files, put in the agent's "
     "/testbed/input.\",\"items\":{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"Relative path, e.g. data/a.csv.\"},"
     "\"content\":{\"type\":\"string\"},"
     "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]}},\"required\":[\"path\",\"content\"],"
     "\"additionalProperties\":false}},"
     "\"model\":{\"type\":\"string\",\"description\":\"A model the server offers (default: its default).\"},"
     "\"max_turns\":{\"type\":\"integer\",\"minimum\":1},"
     "\"timeout_s\":{\"type\":\"integer\",\"minimum\":1},"
     "\"wait\":{\"type\":\"boolean\",\"description\":\"Wait for the answer (default true).\"}},"
     "\"required\":[\"prompt\"],\"additionalProperties\":false}",
     lb_mcp_tool_task_run},
    {"task_status", "A task's status",
     "Returns a task's status, its answer once it has one, and its output files as resource links.",
     "{\"type\":\"object\",\"properties\":{" TASK_ID "},\"required\":[\"task_id\"],\"additionalProperties\":false}",
     lb_mcp_tool_task_status},
    {"task_cancel", "Cancel a task",
     "Stops a queued or running task; what it wrote so far stays.",
     "{\"type\":\"object\",\"properties\":{" TASK_ID "},\"required\":[\"task_id\"],\"additionalProperties\":false}",
     lb_mcp_tool_task_cancel},
};
/* clang-format on */

cJSON *lb_mcp_tools_list(void)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "tools") : NULL;
    if (!arr)
        goto fail;
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON *schema = cJSON_Parse(tools[i].schema);
        if (!t || !schema || !cJSON_AddItemToArray(arr, t)) {
            cJSON_Delete(t);
            cJSON_Delete(schema);
            goto fail;
        }
        if (!cJSON_AddStringToObject(t, "name", tools[i].name) || !cJSON_AddStringToObject(t, "title", tools[i].title) ||
            !cJSON_AddStringToObject(t, "description", tools[i].description) ||
            !cJSON_AddItemToObject(t, "inputSchema", schema)) {
            cJSON_Delete(schema);
            goto fail;
        }
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

const lb_mcp_tool *lb_mcp_tool_find(const char *name)
{
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        if (!strcmp(tools[i].name, name))
            return &tools[i];
    return NULL;
}

int lb_mcp_result_add_text(cJSON *result, const char *text)
{
    cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
    if (!content)
        content = cJSON_AddArrayToObject(result, "content");
    cJSON *t = cJSON_CreateObject();
    if (!content || !t || !cJSON_AddItemToArray(content, t)) {
        cJSON_Delete(t);
        return -1;
    }
    return cJSON_AddStringToObject(t, "type", "text") && cJSON_AddStringToObject(t, "text", text) ? 0 : -1;
}

cJSON *lb_mcp_result_error(const char *fmt, ...)
{
    char msg[1500];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    if (!o || lb_mcp_result_add_text(o, msg) || !cJSON_AddBoolToObject(o, "isError", 1)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *lb_mcp_result_json(cJSON *data)
{
    char *text = data ? cJSON_Print(data) : NULL;
    cJSON *o = text ? cJSON_CreateObject() : NULL;
    if (!o || lb_mcp_result_add_text(o, text)) {
        cJSON_Delete(o);
        cJSON_Delete(data);
        free(text);
        return NULL;
    }
    free(text);
    if (!cJSON_AddItemToObject(o, "structuredContent", data)) {
        cJSON_Delete(data);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

const char *lb_mcp_arg_str(const lb_mcp_call *c, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

long long lb_mcp_arg_int(const lb_mcp_call *c, const char *name, long long def, long long lo, long long hi)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, name);
    if (!v)
        return def;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return -1;
    return (long long)v->valuedouble;
}

cJSON *lb_mcp_result_refused(const lb_mcp_answer *a, const char *what)
{
    char why[1100];
    lb_mcp_answer_why(a, why, sizeof why);
    return lb_mcp_result_error("Could not %s: %s", what, why);
}

typedef struct sub_job {
    lb_req *r;
    const char *method, *path, *ctype;
    const void *body;
    size_t len, max;
    lb_mcp_answer *a;
    int rc;
    int done;                  /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} sub_job;

static void *sub_thread(void *arg)
{
    sub_job *j = arg;
    int rc = lb_mcp_sub(j->r, j->method, j->path, j->ctype, j->body, j->len, j->max, j->a);
    pthread_mutex_lock(&j->mu);
    j->rc = rc;
    j->done = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

int lb_mcp_sub_progress(lb_mcp_call *c, const char *method, const char *path, const char *ctype, const void *body,
                        size_t len, size_t max, lb_mcp_answer *a, const char *what)
{
    return lb_mcp_sub_watch(c, method, path, ctype, body, len, max, a, what, NULL, NULL);
}

int lb_mcp_sub_watch(lb_mcp_call *c, const char *method, const char *path, const char *ctype, const void *body,
                     size_t len, size_t max, lb_mcp_answer *a, const char *what, void (*on_cancel)(void *, int),
                     void *arg)
{
    int notes = c->wants_progress && c->progress, watch = on_cancel && c->cancelled;
    if (!notes && !watch)
        return lb_mcp_sub(c->r, method, path, ctype, body, len, max, a);
    sub_job j = {.r = c->r, .method = method, .path = path, .ctype = ctype, .body = body, .len = len, .max = max,
                 .a = a};
    pthread_mutex_init(&j.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_t th;
    if (pthread_create(&th, NULL, sub_thread, &j)) {
        pthread_cond_destroy(&j.cv);
        pthread_mutex_destroy(&j.mu);
        return lb_mcp_sub(c->r, method, path, ctype, body, len, max, a);
    }
    /* ticks of 200 ms: a cancel is passed on within one; a note every 5th */
    int ticks = 0, secs = 0, gone = 0, fired = 0;
    pthread_mutex_lock(&j.mu);
    while (!j.done) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&j.cv, &j.mu, &ts);
        if (j.done)
            continue;
        pthread_mutex_unlock(&j.mu);
        if (watch && !fired && __atomic_load_n(c->cancelled, __ATOMIC_SEQ_CST)) {
            on_cancel(arg, 1);
            fired = 1;
        }
        if (notes && !gone && !fired && ++ticks % 5 == 0) {
            char msg[200];
            snprintf(msg, sizeof msg, "%s: %d s", what, ++secs);
            /* a client that left stops getting notes; the command still ends
             * (its own timeout) and the thread with it */
            gone = c->progress(c, secs, 0, msg) < 0;
        }
        pthread_mutex_lock(&j.mu);
    }
    pthread_mutex_unlock(&j.mu);
    pthread_join(th, NULL);
    if (fired)
        on_cancel(arg, 0);
    pthread_cond_destroy(&j.cv);
    pthread_mutex_destroy(&j.mu);
    return j.rc;
}
