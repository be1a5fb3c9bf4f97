/* The task tools of MCP (see mcp_tools_task.h). task_run sends the task
 * as the web page does (a multipart POST /api/tasks), then follows its
 * events in the store, as the event stream does, turning each into a
 * progress notification, and answers with the task as GET /api/tasks/{id}
 * shows it: the answer as text, the output files as resource links, the
 * small text ones embedded. */
#include "mcp/mcp_tools_task.h"

#include "common/buf.h"
#include "common/path.h"
#include "common/util.h"
#include "mcp/mcp_resources.h"
#include "mcp/mcp_sub.h"
#include "store/store.h"
#include "web/auth.h"
#include "web/http.h"
#include "web/sse_admit.h"

#include <fcgiapp.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TASK_FILES_MAX 100              /* files of one task_run */
#define TASK_BODY_MAX (12u << 20)       /* the multipart body: the message's 8 MiB, decoded, and the form */
#define TASK_EMBED_MAX (16u << 10)      /* output files up to this size are embedded, when text */
#define TASK_EMBED_COUNT 8              /* and at most this many */
#define TASK_POLL_MS 250                /* how often task_run looks for new steps */
#define TASK_WAIT_SLACK_S 120           /* past the task's own timeout: the agent's start and end */

static int ended(const char *status)
{
    return !strcmp(status, "succeeded") || !strcmp(status, "failed") || !strcmp(status, "cancelled");
}

/* The task_id argument: NULL after setting *err. */
static const char *task_id(lb_mcp_call *c, cJSON **err)
{
    const char *id = lb_mcp_arg_str(c, "task_id");
    if (!id || !lb_id_valid(id)) {
        *err = lb_mcp_result_error("\"task_id\" must be a task's id: 32 lowercase hexadecimal characters.");
        return NULL;
    }
    return id;
}

static int part(lb_buf *b, const char *bnd, const char *name, const char *filename, const void *data, size_t len)
{
    if (lb_buf_printf(b, "--%s\r\nContent-Disposition: form-data; name=\"%s\"", bnd, name) != LB_OK)
        return -1;
    if (filename && lb_buf_printf(b, "; filename=\"%s\"\r\nContent-Type: application/octet-stream", filename) != LB_OK)
        return -1;
    return lb_buf_appends(b, "\r\n\r\n") == LB_OK && lb_buf_append(b, data, len) == LB_OK &&
                   lb_buf_appends(b, "\r\n") == LB_OK
               ? 0
               : -1;
}

/* The multipart body of the task: 0, or -1 with *err set (NULL: OOM). */
static int task_form(lb_mcp_call *c, const char *bnd, lb_buf *b, cJSON **err)
{
    const char *prompt = lb_mcp_arg_str(c, "prompt"), *model = lb_mcp_arg_str(c, "model");
    *err = NULL;
    if (!prompt || !prompt[0]) {
        *err = lb_mcp_result_error("\"prompt\" is required: what the agent should do.");
        return -1;
    }
    long long turns = lb_mcp_arg_int(c, "max_turns", 0, 1, 100000), to = lb_mcp_arg_int(c, "timeout_s", 0, 1, 86400);
    if (turns < 0 || to < 0) {
        *err = lb_mcp_result_error("\"max_turns\" and \"timeout_s\" are whole numbers from 1 (timeout_s at most "
                                   "86400).");
        return -1;
    }
    char num[32];
    if (part(b, bnd, "prompt", NULL, prompt, strlen(prompt)) || (model && part(b, bnd, "model", NULL, model, strlen(model))))
        return -1;
    if (turns > 0 && (snprintf(num, sizeof num, "%lld", turns), part(b, bnd, "max_turns", NULL, num, strlen(num))))
        return -1;
    if (to > 0 && (snprintf(num, sizeof num, "%lld", to), part(b, bnd, "timeout_s", NULL, num, strlen(num))))
        return -1;
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(c->args, "files"), *f;
    if (files && (!cJSON_IsArray(files) || cJSON_GetArraySize(files) > TASK_FILES_MAX)) {
        *err = lb_mcp_result_error("\"files\" is a list of at most 100 {path, content, encoding} objects.");
        return -1;
    }
    cJSON_ArrayForEach(f, files) {
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "path"));
        const char *content = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "content"));
        const char *enc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "encoding"));
        /* the name goes into a quoted header: the API checks the rest of it */
        if (!path || !content || !path[0] || strpbrk(path, "\"\r\n\\") || (enc && strcmp(enc, "utf-8") &&
                                                                         strcmp(enc, "base64"))) {
            *err = lb_mcp_result_error("Each file needs a \"path\" (relative, without quotes or backslashes) and a "
                                       "\"content\"; \"encoding\" is utf-8 or base64.");
            return -1;
        }
        size_t cl = strlen(content);
        if (enc && !strcmp(enc, "base64")) {
            unsigned char *bytes = malloc(cl / 4 * 3 + 3);
            int n = bytes && cl % 4 == 0 ? EVP_DecodeBlock(bytes, (const unsigned char *)content, (int)cl) : -1;
            for (size_t i = cl; n > 0 && i > 0 && content[i - 1] == '='; i--)
                n--; /* EVP_DecodeBlock counts the padding as data */
            int bad = n < 0 || part(b, bnd, "files", path, bytes, (size_t)n);
            free(bytes);
            if (bad) {
                if (n < 0)
                    *err = lb_mcp_result_error("The content of %.200s is not valid base64.", path);
                return -1;
            }
        } else if (part(b, bnd, "files", path, content, cl)) {
            return -1;
        }
    }
    return lb_buf_printf(b, "--%s--\r\n", bnd) == LB_OK ? 0 : -1;
}

typedef struct follow {
    lb_mcp_call *c;
    int64_t last;
    int steps;
    int gone;
} follow;

/* One stored event as a progress notification: its type and the start of
 * its data. */
static int on_event(void *arg, int64_t seq, int64_t ts_ms, const char *type, const char *data)
{
    (void)ts_ms;
    follow *f = arg;
    f->last = seq;
    f->steps++;
    char msg[300];
    snprintf(msg, sizeof msg, "%s: %.200s", type, data ? data : "");
    if (f->c->progress(f->c, f->steps, 0, msg) < 0)
        f->gone = 1;
    return f->gone;
}

/* Whether the MCP client has closed its connection. */
static int client_left(lb_req *r)
{
    struct pollfd p = {.fd = r->fcgi->ipcFd, .events = POLLRDHUP};
    return p.fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* A place among the web's open event streams for a task_run that waits:
 * it holds a worker thread as long as a stream does, so it counts as one
 * (web/sse_admit.h: per user, or per address without users, and in
 * total). 1 when taken (*slot set), 0 when full. */
static int wait_admit(lb_req *r, int *slot)
{
    char key[LB_SSE_KEY_MAX];
    const char *addr = lb_http_param(r, "REMOTE_ADDR");
    if (r->user)
        snprintf(key, sizeof key, "u:%s", lb_auth_owner(r));
    else
        snprintf(key, sizeof key, "a:%s", addr && *addr ? addr : "?");
    return lb_sse_admit_take(key, slot) == LB_OK;
}

/* The task as a tool result: the answer, links to its files. */
static cJSON *task_result(lb_mcp_call *c, const char *id, const char *note)
{
    char api[96];
    snprintf(api, sizeof api, "/api/tasks/%s", id);
    lb_mcp_answer a;
    if (lb_mcp_sub(c->r, "GET", api, NULL, NULL, 0, 8u << 20, &a) != LB_OK) {
        lb_mcp_answer_free(&a);
        return NULL;
    }
    if (a.status != 200) {
        cJSON *e = lb_mcp_result_refused(&a, "read the task");
        lb_mcp_answer_free(&a);
        return e;
    }
    cJSON *t = lb_mcp_answer_json(&a);
    lb_mcp_answer_free(&a);
    if (!t)
        return lb_mcp_result_error("Could not read the task: the API's answer was not JSON.");
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "status"));
    const char *answer = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "answer"));
    const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "reason"));
    status = status ? status : "unknown";
    cJSON *res = cJSON_CreateObject();
    lb_buf text;
    lb_buf_init(&text, 256u << 10);
    int bad = !res;
    if (answer)
        lb_buf_append_trunc(&text, answer, strlen(answer));
    else /* the buffer holds any reason the store keeps: a failure is only OOM, and the text stays empty */
        LB_IGNORE(lb_buf_printf(&text, "The task %s is %s%s%s.", id, status, reason ? ": " : "", reason ? reason : ""));
    if (note)
        LB_IGNORE(lb_buf_printf(&text, "\n\n%s", note)); /* a cut note is still a note */
    bad = bad || lb_mcp_result_add_text(res, text.data ? text.data : "");
    cJSON *content = cJSON_GetObjectItemCaseSensitive(res, "content");
    const cJSON *it;
    int embedded = 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(t, "artifacts")) {
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "path"));
        const char *mime = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "mime"));
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(it, "size");
        if (bad || !path)
            continue;
        cJSON *item = NULL;
        if (cJSON_IsNumber(size) && size->valuedouble <= TASK_EMBED_MAX && embedded < TASK_EMBED_COUNT) {
            char uri[LB_PATH_MAX + 80], msg[300];
            int code = 0;
            cJSON *rsc = NULL;
            snprintf(uri, sizeof uri, "llmbox://tasks/%s/artifacts/%s", id, path);
            if (lb_mcp_resource_read(c->r, uri, TASK_EMBED_MAX, &rsc, &code, msg, sizeof msg) == LB_OK &&
                cJSON_GetObjectItemCaseSensitive(rsc, "text")) {
                item = cJSON_CreateObject();
                if (!item || !cJSON_AddStringToObject(item, "type", "resource") ||
                    !cJSON_AddItemToObject(item, "resource", rsc)) {
                    cJSON_Delete(rsc);
                    cJSON_Delete(item);
                    item = NULL;
                    bad = 1;
                }
                embedded += item != NULL;
            } else {
                cJSON_Delete(rsc);
            }
        }
        if (!item && !bad)
            item = lb_mcp_artifact_link(id, path, mime, cJSON_IsNumber(size) ? size->valuedouble : -1);
        if (!item || !cJSON_AddItemToArray(content, item)) {
            cJSON_Delete(item);
            bad = 1;
        }
    }
    if (!bad) {
        cJSON *sc = cJSON_CreateObject();
        bad = !sc || !cJSON_AddItemToObject(res, "structuredContent", sc) || !cJSON_AddStringToObject(sc, "id", id) ||
              !cJSON_AddStringToObject(sc, "status", status) ||
              !(answer ? cJSON_AddStringToObject(sc, "answer", answer) : cJSON_AddNullToObject(sc, "answer")) ||
              !(reason ? cJSON_AddStringToObject(sc, "reason", reason) : cJSON_AddNullToObject(sc, "reason"));
    }
    /* a task that failed or was stopped is the tool's error: the client's
     * model should not read its half-written answer as the result */
    if (!bad && (!strcmp(status, "failed") || !strcmp(status, "cancelled")))
        bad = !cJSON_AddBoolToObject(res, "isError", 1);
    lb_buf_free(&text);
    cJSON_Delete(t);
    if (bad) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}

cJSON *lb_mcp_tool_task_run(lb_mcp_call *c)
{
    char bnd[48], rnd[33];
    lb_buf body;
    lb_buf_init(&body, TASK_BODY_MAX);
    cJSON *res = NULL, *err = NULL;
    lb_mcp_answer a;
    memset(&a, 0, sizeof a);
    if (lb_random_hex(rnd, sizeof rnd, 16) != LB_OK)
        goto out;
    snprintf(bnd, sizeof bnd, "llmbox-mcp-%s", rnd);
    if (task_form(c, bnd, &body, &err)) {
        res = err ? err : lb_mcp_result_error("The task's files are larger than the %u MiB one call may send.",
                                             TASK_BODY_MAX >> 20);
        goto out;
    }
    char ctype[96];
    snprintf(ctype, sizeof ctype, "multipart/form-data; boundary=%s", bnd);
    if (lb_mcp_sub(c->r, "POST", "/api/tasks", ctype, body.data, body.len, 1u << 20, &a) != LB_OK)
        goto out;
    if (a.status != 201) {
        res = lb_mcp_result_refused(&a, "start the task");
        goto out;
    }
    cJSON *t = lb_mcp_answer_json(&a);
    const char *idv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "id"));
    const cJSON *tos = cJSON_GetObjectItemCaseSensitive(t, "timeout_s");
    char id[33] = "";
    if (idv && lb_id_valid(idv))
        snprintf(id, sizeof id, "%s", idv);
    int64_t wait_ms = ((cJSON_IsNumber(tos) && tos->valuedouble > 0 ? (int64_t)tos->valuedouble : 3600) +
                       TASK_WAIT_SLACK_S) * 1000;
    cJSON_Delete(t);
    if (!id[0]) {
        res = lb_mcp_result_error("Could not start the task: the API's answer had no task id.");
        goto out;
    }
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(c->args, "wait");
    if (cJSON_IsFalse(w)) {
        res = task_result(c, id, "The task runs on; follow it with task_status.");
        goto out;
    }
    int slot = -1;
    if (!wait_admit(c->r, &slot)) {
        res = task_result(c, id, "The task runs on, but this server already has as many clients waiting on tasks "
                                 "as it allows; follow it with task_status.");
        goto out;
    }
    follow f = {.c = c};
    int64_t end = lb_mono_ms() + wait_ms;
    char status[32] = "queued";
    while (lb_mono_ms() < end && !f.gone && !(c->cancelled && __atomic_load_n(c->cancelled, __ATOMIC_SEQ_CST))) {
        if (c->wants_progress) {
            int rc = lb_store_events_after(c->r->store, id, f.last, 100, on_event, &f);
            if (rc != LB_OK && rc != 1)
                break; /* the store failed: the answer below says where the task is */
        }
        if (lb_store_task_state(c->r->store, id, status, sizeof status, NULL) != LB_OK || ended(status))
            break;
        if (client_left(c->r))
            break;
        struct timespec ts = {0, TASK_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    /* the events the task's end wrote */
    if (c->wants_progress && !f.gone)
        LB_IGNORE(lb_store_events_after(c->r->store, id, f.last, 100, on_event, &f)); /* the answer has the end */
    lb_sse_admit_release(slot);
    res = task_result(c, id, ended(status) ? NULL : "The task is still running; follow it with task_status.");
out:
    lb_mcp_answer_free(&a);
    lb_buf_free(&body);
    return res;
}

cJSON *lb_mcp_tool_task_status(lb_mcp_call *c)
{
    cJSON *err = NULL;
    const char *id = task_id(c, &err);
    return id ? task_result(c, id, NULL) : err;
}

cJSON *lb_mcp_tool_task_cancel(lb_mcp_call *c)
{
    cJSON *err = NULL;
    const char *id = task_id(c, &err);
    if (!id)
        return err;
    char api[96];
    snprintf(api, sizeof api, "/api/tasks/%s/cancel", id);
    lb_mcp_answer a;
    cJSON *res = NULL;
    if (lb_mcp_sub(c->r, "POST", api, NULL, NULL, 0, 1u << 20, &a) == LB_OK) {
        if (a.status >= 200 && a.status < 300) {
            cJSON *o = lb_mcp_answer_json(&a);
            res = o ? lb_mcp_result_json(o) : lb_mcp_result_error("Could not cancel the task: the API's answer was "
                                                                  "not JSON.");
        } else {
            res = lb_mcp_result_refused(&a, "cancel the task");
        }
    }
    lb_mcp_answer_free(&a);
    return res;
}
