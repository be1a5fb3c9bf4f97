/* The sandbox tools of MCP (see mcp_tools_sbx.h). Each builds the body of
 * the sandbox API's request from the tool's arguments and turns the answer
 * into a tool result; the API does every check (the token, the spec, the
 * limits) and its refusal becomes the tool's error sentence. */
#include "mcp/mcp_tools_sbx.h"

#include "common/node_id.h"
#include "common/utf8.h"
#include "mcp/mcp_sub.h"
#include "sbxapi/sandbox_owner.h"    /* lb_sbx_owner_sees */
#include "sbxapi/sandbox_registry.h" /* the sandbox's cancel flag */
#include "web/http.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SBX_FILE_MAX (4u << 20)      /* a file read or written through MCP: a message stays small */
#define SBX_ANSWER_MAX (16u << 20)   /* an exec's answer: its output is capped by the API already */

/* The sandbox_id argument, checked so that it stays one path segment:
 * NULL after setting *err to the tool's error. */
static const char *sbx_id(lb_mcp_call *c, cJSON **err)
{
    const char *id = lb_mcp_arg_str(c, "sandbox_id");
    if (!id || !lb_node_id_valid(id)) {
        *err = lb_mcp_result_error("\"sandbox_id\" must be a sandbox's id as sandbox_create or sandbox_list gave it "
                                   "(32 lowercase hexadecimal characters, maybe after a node's name and a dot).");
        return NULL;
    }
    return id;
}

/* The path argument percent-encoded for a URL, absolute: 0, or -1 after
 * setting *err. The API checks the path itself (no "..", no control
 * characters). */
static int sbx_path(lb_mcp_call *c, char *out, size_t outsz, cJSON **err)
{
    const char *p = lb_mcp_arg_str(c, "path");
    if (!p || p[0] != '/' || lb_url_encode_path(p + 1, out, outsz) != LB_OK) {
        *err = lb_mcp_result_error("\"path\" must be an absolute path in the sandbox (/testbed/out.txt), at most "
                                   "1024 bytes.");
        return -1;
    }
    return 0;
}

/* The answer's JSON as the result, or the refusal as the error. */
static cJSON *sbx_answer(lb_mcp_answer *a, int ok_status, const char *what)
{
    if (a->status != ok_status)
        return lb_mcp_result_refused(a, what);
    cJSON *o = lb_mcp_answer_json(a);
    return o ? lb_mcp_result_json(o) : lb_mcp_result_error("Could not %s: the API's answer was not JSON.", what);
}

cJSON *lb_mcp_tool_sbx_create(lb_mcp_call *c)
{
    cJSON *spec = cJSON_CreateObject(), *res = NULL;
    lb_mcp_answer a;
    memset(&a, 0, sizeof a);
    if (!spec)
        return NULL;
    const char *image = lb_mcp_arg_str(c, "image"), *net = lb_mcp_arg_str(c, "network");
    long long ttl = lb_mcp_arg_int(c, "ttl_s", 0, 1, 7LL * 24 * 3600);
    if (ttl < 0) {
        res = lb_mcp_result_error("\"ttl_s\" must be a whole number of seconds from 1 to 604800.");
        goto out;
    }
    if ((image && !cJSON_AddStringToObject(spec, "image", image)) ||
        (net && !cJSON_AddStringToObject(spec, "network", net)) ||
        (ttl > 0 && !cJSON_AddNumberToObject(spec, "ttl_s", (double)ttl)))
        goto out;
    char *text = cJSON_PrintUnformatted(spec);
    if (!text)
        goto out;
    int rc = lb_mcp_sub(c->r, "POST", "/api/sandboxes", "application/json", text, strlen(text), 1u << 20, &a);
    free(text);
    if (rc == LB_OK)
        res = sbx_answer(&a, 201, "create the sandbox");
out:
    lb_mcp_answer_free(&a);
    cJSON_Delete(spec);
    return res;
}

/* The text of an exec's result: the exit, then each stream. */
static char *exec_text(const cJSON *o)
{
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(o, "return_code");
    const cJSON *et = cJSON_GetObjectItemCaseSensitive(o, "error_type");
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(o, "stdout");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "stderr");
    const char *so = cJSON_IsString(out) ? out->valuestring : "", *se = cJSON_IsString(err) ? err->valuestring : "";
    size_t n = strlen(so) + strlen(se) + 200;
    char *t = malloc(n);
    if (!t)
        return NULL;
    char head[120];
    if (cJSON_IsNumber(rc))
        snprintf(head, sizeof head, "exit code %d", rc->valueint);
    else
        snprintf(head, sizeof head, "no exit code (%s)", cJSON_IsString(et) ? et->valuestring : "unknown");
    snprintf(t, n, "%s\n--- stdout ---\n%s\n--- stderr ---\n%s", head, so, se);
    return t;
}

/* notifications/cancelled of a sandbox_exec: the sandbox's cancel flag,
 * the one its teardown sets, makes the running call ask sandboxd to
 * interrupt the command (the RPC's interrupt op) and return; the flag is
 * cleared under the sandbox's lock once the call has returned, so the
 * sandbox's next command runs. Only a sandbox the caller may reach. */
typedef struct exec_cancel {
    lb_req *r;
    const char *id;
    lb_sbx *s;                /* the reference taken at the cancel, NULL before */
} exec_cancel;

static void exec_cancel_fire(void *arg, int start)
{
    exec_cancel *x = arg;
    if (start) {
        char msg[200];
        if (!lb_sbx_owner_sees(x->r, x->id) || !(x->s = lb_sbx_get(x->id, msg, sizeof msg)))
            return; /* another's, gone, or on another node: the command runs to its end */
        x->s->cancel = 1;
        return;
    }
    if (!x->s)
        return;
    pthread_mutex_lock(&x->s->op_mu);
    x->s->cancel = 0;
    pthread_mutex_unlock(&x->s->op_mu);
    lb_sbx_put(x->s);
    x->s = NULL;
}

cJSON *lb_mcp_tool_sbx_exec(lb_mcp_call *c)
{
    cJSON *err = NULL;
    const char *id = sbx_id(c, &err);
    if (!id)
        return err;
    const char *cmd = lb_mcp_arg_str(c, "command"), *cwd = lb_mcp_arg_str(c, "cwd");
    long long to = lb_mcp_arg_int(c, "timeout_s", 0, 1, 86400);
    if (!cmd || !cmd[0])
        return lb_mcp_result_error("\"command\" is required: the shell command line to run.");
    if (to < 0)
        return lb_mcp_result_error("\"timeout_s\" must be a whole number of seconds from 1 to 86400.");
    cJSON *body = cJSON_CreateObject(), *res = NULL;
    lb_mcp_answer a;
    memset(&a, 0, sizeof a);
    char *text = NULL;
    if (!body || !cJSON_AddStringToObject(body, "command", cmd) ||
        (cwd && !cJSON_AddStringToObject(body, "cwd", cwd)) ||
        (to > 0 && !cJSON_AddNumberToObject(body, "timeout_s", (double)to)) || !(text = cJSON_PrintUnformatted(body)))
        goto out;
    char path[160];
    snprintf(path, sizeof path, "/api/sandboxes/%s/exec", id);
    exec_cancel x = {.r = c->r, .id = id};
    if (lb_mcp_sub_watch(c, "POST", path, "application/json", text, strlen(text), SBX_ANSWER_MAX, &a,
                         "the command runs", exec_cancel_fire, &x) != LB_OK)
        goto out;
    if (a.status != 200) {
        res = lb_mcp_result_refused(&a, "run the command");
        goto out;
    }
    cJSON *o = lb_mcp_answer_json(&a);
    char *t = o ? exec_text(o) : NULL;
    res = o ? cJSON_CreateObject() : lb_mcp_result_error("Could not run the command: the API's answer was not JSON.");
    if (o && (!t || !res || lb_mcp_result_add_text(res, t) || !cJSON_AddItemToObject(res, "structuredContent", o))) {
        cJSON_Delete(res);
        cJSON_Delete(o);
        res = NULL;
    }
    free(t);
out:
    free(text);
    cJSON_Delete(body);
    lb_mcp_answer_free(&a);
    return res;
}

/* An embedded resource holding bytes that are not text. */
static cJSON *blob_result(const char *uri, const char *data, size_t len)
{
    size_t bl = 4 * ((len + 2) / 3) + 1;
    char *b64 = malloc(bl);
    cJSON *res = cJSON_CreateObject();
    cJSON *content = res ? cJSON_AddArrayToObject(res, "content") : NULL;
    cJSON *item = cJSON_CreateObject();
    cJSON *rsc = item ? cJSON_AddObjectToObject(item, "resource") : NULL;
    if (!b64 || !content || !rsc || !cJSON_AddItemToArray(content, item)) {
        cJSON_Delete(item);
        goto fail;
    }
    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)data, (int)len);
    if (!cJSON_AddStringToObject(item, "type", "resource") || !cJSON_AddStringToObject(rsc, "uri", uri) ||
        !cJSON_AddStringToObject(rsc, "mimeType", "application/octet-stream") ||
        !cJSON_AddStringToObject(rsc, "blob", b64))
        goto fail;
    free(b64);
    return res;
fail:
    free(b64);
    cJSON_Delete(res);
    return NULL;
}

cJSON *lb_mcp_tool_sbx_read(lb_mcp_call *c)
{
    cJSON *err = NULL;
    const char *id = sbx_id(c, &err);
    char enc[3 * 1024 + 8];
    if (!id || sbx_path(c, enc, sizeof enc, &err))
        return err;
    char path[sizeof enc + 160];
    snprintf(path, sizeof path, "/api/sandboxes/%s/files/%s", id, enc);
    lb_mcp_answer a;
    cJSON *res = NULL;
    if (lb_mcp_sub(c->r, "GET", path, NULL, NULL, 0, SBX_FILE_MAX, &a) != LB_OK)
        goto out;
    if (a.status != 200) {
        res = lb_mcp_result_refused(&a, "read the file");
    } else if (a.cut) {
        res = lb_mcp_result_error("The file is larger than the 4 MiB MCP reads; use sandbox_exec to look at parts "
                                  "of it (head, tail, grep).");
    } else if (lb_utf8_valid(a.body.data ? a.body.data : "", a.body.len) &&
               !memchr(a.body.data ? a.body.data : "", 0, a.body.len)) {
        res = cJSON_CreateObject();
        if (res && lb_mcp_result_add_text(res, a.body.data ? a.body.data : "")) {
            cJSON_Delete(res);
            res = NULL;
        }
    } else {
        char uri[sizeof path + 64];
        snprintf(uri, sizeof uri, "llmbox://sandboxes/%s/files%s", id, lb_mcp_arg_str(c, "path"));
        res = blob_result(uri, a.body.data, a.body.len);
    }
out:
    lb_mcp_answer_free(&a);
    return res;
}

cJSON *lb_mcp_tool_sbx_write(lb_mcp_call *c)
{
    cJSON *err = NULL;
    const char *id = sbx_id(c, &err);
    char enc[3 * 1024 + 8];
    if (!id || sbx_path(c, enc, sizeof enc, &err))
        return err;
    const char *content = lb_mcp_arg_str(c, "content"), *encoding = lb_mcp_arg_str(c, "encoding");
    if (!content)
        return lb_mcp_result_error("\"content\" is required: the file's text (or base64 with encoding base64).");
    int b64 = encoding && !strcmp(encoding, "base64");
    if (encoding && !b64 && strcmp(encoding, "utf-8"))
        return lb_mcp_result_error("\"encoding\" is utf-8 or base64.");
    size_t cl = strlen(content);
    unsigned char *bytes = NULL;
    size_t len = cl;
    if (b64) {
        if (cl % 4 || cl / 4 * 3 > SBX_FILE_MAX)
            return lb_mcp_result_error("\"content\" is not base64 of at most 4 MiB (its length must be a multiple "
                                       "of 4).");
        bytes = malloc(cl / 4 * 3 + 1);
        if (!bytes)
            return NULL;
        int n = EVP_DecodeBlock(bytes, (const unsigned char *)content, (int)cl);
        if (n < 0) {
            free(bytes);
            return lb_mcp_result_error("\"content\" is not valid base64.");
        }
        len = (size_t)n;
        /* EVP_DecodeBlock counts the padding's bytes as data */
        for (size_t i = cl; i > 0 && content[i - 1] == '=' && len; i--)
            len--;
    }
    char path[sizeof enc + 160];
    snprintf(path, sizeof path, "/api/sandboxes/%s/files/%s", id, enc);
    lb_mcp_answer a;
    cJSON *res = NULL;
    if (lb_mcp_sub(c->r, "PUT", path, "application/octet-stream", b64 ? (const void *)bytes : content, len, 1u << 20,
                   &a) == LB_OK)
        res = sbx_answer(&a, 200, "write the file");
    lb_mcp_answer_free(&a);
    free(bytes);
    return res;
}

cJSON *lb_mcp_tool_sbx_list(lb_mcp_call *c)
{
    lb_mcp_answer a;
    cJSON *res = NULL;
    if (lb_mcp_sub(c->r, "GET", "/api/sandboxes", NULL, NULL, 0, 8u << 20, &a) == LB_OK)
        res = sbx_answer(&a, 200, "list the sandboxes");
    lb_mcp_answer_free(&a);
    return res;
}

cJSON *lb_mcp_tool_sbx_destroy(lb_mcp_call *c)
{
    cJSON *err = NULL;
    const char *id = sbx_id(c, &err);
    if (!id)
        return err;
    char path[160];
    snprintf(path, sizeof path, "/api/sandboxes/%s", id);
    lb_mcp_answer a;
    cJSON *res = NULL;
    if (lb_mcp_sub(c->r, "DELETE", path, NULL, NULL, 0, 1u << 20, &a) == LB_OK)
        res = sbx_answer(&a, 200, "destroy the sandbox");
    lb_mcp_answer_free(&a);
    return res;
}
