/* A task's files as MCP resources (see mcp_resources.h). The API's file
 * routes answer with X-Accel-Redirect (nginx serves the bytes): here the
 * route's answer is the permission, and the file it names under
 * /_artifacts/ is read from the artifacts folder, never following a
 * symbolic link, within a cap. */
#include "mcp/mcp_resources.h"

#include "common/config.h"
#include "common/path.h"
#include "common/utf8.h"
#include "mcp/mcp_rpc.h"
#include "mcp/mcp_sub.h"
#include "web/http.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define URI_PREFIX "llmbox://tasks/"
#define LIST_TASKS 10     /* tasks whose files resources/list shows: the newest */

static int fail(int *code, int c, char *msg, size_t msgsz, const char *s)
{
    *code = c;
    snprintf(msg, msgsz, "%s", s);
    return LB_E_INVAL;
}

/* Reads file rel (cleaned) of the artifacts folder: LB_OK, LB_E_TOOBIG
 * past max, LB_E_NOTFOUND. */
static int read_capped(const char *path, size_t max, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return LB_E_NOTFOUND;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return LB_E_NOTFOUND;
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return LB_E_TOOBIG;
    }
    char *b = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (b && got < (size_t)st.st_size) {
        ssize_t n = read(fd, b + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!b)
        return LB_E_NOMEM;
    b[got] = '\0';
    *out = b;
    *len = got;
    return LB_OK;
}

/* {uri, mimeType, text} when data is UTF-8 text, else {..., blob}. */
static cJSON *contents(const char *uri, const char *mime, const char *data, size_t len)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "uri", uri) || !cJSON_AddStringToObject(o, "mimeType", mime))
        goto fail;
    if (lb_utf8_valid(data, len) && !memchr(data, 0, len)) {
        if (!cJSON_AddStringToObject(o, "text", data))
            goto fail;
        return o;
    }
    char *b64 = malloc(4 * ((len + 2) / 3) + 1);
    if (!b64)
        goto fail;
    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)data, (int)len);
    cJSON *s = cJSON_AddStringToObject(o, "blob", b64);
    free(b64);
    if (s)
        return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

int lb_mcp_resource_read(lb_req *r, const char *uri, size_t max, cJSON **out, int *code, char *msg, size_t msgsz)
{
    *out = NULL;
    if (strncmp(uri, URI_PREFIX, strlen(URI_PREFIX)))
        return fail(code, LB_MCP_RESOURCE_NOT_FOUND, msg, msgsz,
                    "Resource not found: llmbox's resources are llmbox://tasks/<id>/trajectory and "
                    "llmbox://tasks/<id>/artifacts/<path>.");
    const char *p = uri + strlen(URI_PREFIX);
    char id[33];
    size_t n = strcspn(p, "/");
    if (n != 32 || p[32] != '/')
        return fail(code, LB_MCP_RESOURCE_NOT_FOUND, msg, msgsz, "Resource not found: a task id is 32 hexadecimal "
                                                                   "characters.");
    memcpy(id, p, 32);
    id[32] = '\0';
    const char *rest = p + 33;
    char api[LB_WEB_URI_MAX];
    if (!strcmp(rest, "trajectory")) {
        snprintf(api, sizeof api, "/api/tasks/%s/trajectory", id);
    } else if (!strncmp(rest, "artifacts/", 10) && rest[10]) {
        char enc[LB_WEB_URI_MAX - 128];
        if (lb_url_encode_path(rest + 10, enc, sizeof enc) != LB_OK)
            return fail(code, LB_RPC_INVALID_PARAMS, msg, msgsz, "The resource's path is too long.");
        snprintf(api, sizeof api, "/api/tasks/%s/artifacts/%s", id, enc);
    } else {
        return fail(code, LB_MCP_RESOURCE_NOT_FOUND, msg, msgsz,
                    "Resource not found: a task's resources are .../trajectory and .../artifacts/<path>.");
    }
    lb_mcp_answer a;
    int rc = lb_mcp_sub(r, "GET", api, NULL, NULL, 0, 64u << 10, &a);
    char accel[LB_WEB_URI_MAX], mime[200] = "application/octet-stream";
    if (rc != LB_OK) {
        lb_mcp_answer_free(&a);
        return fail(code, LB_RPC_INTERNAL_ERROR, msg, msgsz, "Out of memory.");
    }
    if (a.status != 200 || !lb_mcp_answer_header(&a, "X-Accel-Redirect", accel, sizeof accel) ||
        strncmp(accel, "/_artifacts/", 12)) {
        char why[1100], s[1200];
        lb_mcp_answer_why(&a, why, sizeof why);
        snprintf(s, sizeof s, "Resource not found: %s", a.status == 200 ? "the API served it in a way MCP cannot "
                                                                          "read (another node's object store)." : why);
        lb_mcp_answer_free(&a);
        return fail(code, LB_MCP_RESOURCE_NOT_FOUND, msg, msgsz, s);
    }
    LB_IGNORE(lb_mcp_answer_header(&a, "Content-Type", mime, sizeof mime)); /* the default stays when none */
    lb_mcp_answer_free(&a);
    /* the route's own URI: percent-encoded, relative to the artifacts folder */
    char dec[LB_WEB_URI_MAX], rel[LB_PATH_MAX + 1], file[LB_CFG_PATH + LB_PATH_MAX + 8];
    size_t dl = 0;
    if (lb_url_decode(accel + 12, strlen(accel + 12), dec, sizeof dec, &dl, 0) != LB_OK || memchr(dec, 0, dl) ||
        lb_path_clean_rel(dec, dl, rel, sizeof rel) != LB_OK ||
        lb_path_join(file, sizeof file, r->cfg->artifacts_dir, rel) != LB_OK)
        return fail(code, LB_MCP_RESOURCE_NOT_FOUND, msg, msgsz, "Resource not found: its path cannot be read.");
    char *data = NULL;
    size_t len = 0;
    rc = read_capped(file, max, &data, &len);
    if (rc == LB_E_TOOBIG) {
        snprintf(msg, msgsz, "The resource is larger than the %zu MiB one read may be; download it from the API "
                             "(GET %s).", max >> 20, api);
        *code = LB_RPC_INVALID_PARAMS;
        return LB_E_TOOBIG;
    }
    if (rc != LB_OK)
        return fail(code, LB_MCP_RESOURCE_NOT_FOUND, msg, msgsz, "Resource not found: the file is gone.");
    char *semi = strchr(mime, ';');
    if (semi)
        *semi = '\0';
    *out = contents(uri, mime, data, len);
    free(data);
    if (!*out)
        return fail(code, LB_RPC_INTERNAL_ERROR, msg, msgsz, "Out of memory.");
    return LB_OK;
}

cJSON *lb_mcp_artifact_link(const char *id, const char *path, const char *mime, double size)
{
    char uri[LB_PATH_MAX + 80];
    snprintf(uri, sizeof uri, URI_PREFIX "%s/artifacts/%s", id, path);
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "type", "resource_link") || !cJSON_AddStringToObject(o, "uri", uri) ||
        !cJSON_AddStringToObject(o, "name", path) ||
        !cJSON_AddStringToObject(o, "mimeType", mime && mime[0] ? mime : "application/octet-stream") ||
        (size >= 0 && !cJSON_AddNumberToObject(o, "size", size))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Adds task id's trajectory and files to arr. */
static int list_task(lb_req *r, const char *id, cJSON *arr)
{
    char api[96];
    snprintf(api, sizeof api, "/api/tasks/%s", id);
    lb_mcp_answer a;
    int rc = lb_mcp_sub(r, "GET", api, NULL, NULL, 0, 4u << 20, &a);
    cJSON *t = rc == LB_OK && a.status == 200 ? lb_mcp_answer_json(&a) : NULL;
    lb_mcp_answer_free(&a);
    if (!t)
        return 0; /* gone meanwhile: not listed */
    char uri[128], name[64];
    snprintf(uri, sizeof uri, URI_PREFIX "%s/trajectory", id);
    snprintf(name, sizeof name, "trajectory of %.8s", id);
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        cJSON_Delete(t);
        return -1;
    }
    if (!cJSON_AddStringToObject(o, "uri", uri) || !cJSON_AddStringToObject(o, "name", name) ||
        !cJSON_AddStringToObject(o, "mimeType", "application/json")) {
        cJSON_Delete(t);
        return -1;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(t, "artifacts")) {
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "path"));
        const char *mime = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "mime"));
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(it, "size");
        if (!path)
            continue;
        cJSON *l = lb_mcp_artifact_link(id, path, mime, cJSON_IsNumber(size) ? size->valuedouble : -1);
        if (!l || !cJSON_AddItemToArray(arr, l)) {
            cJSON_Delete(l);
            cJSON_Delete(t);
            return -1;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(l, "type"); /* a Resource, not a content item */
    }
    cJSON_Delete(t);
    return 0;
}

cJSON *lb_mcp_resources_list(lb_req *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "resources") : NULL;
    if (!arr) {
        cJSON_Delete(o);
        return NULL;
    }
    char api[64];
    snprintf(api, sizeof api, "/api/tasks?limit=%d", LIST_TASKS);
    lb_mcp_answer a;
    cJSON *page = NULL;
    if (lb_mcp_sub(r, "GET", api, NULL, NULL, 0, 8u << 20, &a) == LB_OK && a.status == 200)
        page = lb_mcp_answer_json(&a);
    lb_mcp_answer_free(&a);
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(page, "tasks")) {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "id"));
        if (id && strlen(id) == 32 && list_task(r, id, arr)) {
            cJSON_Delete(page);
            cJSON_Delete(o);
            return NULL;
        }
    }
    cJSON_Delete(page);
    return o;
}

cJSON *lb_mcp_resource_templates(void)
{
    static const char *const t[][4] = {
        {URI_PREFIX "{task_id}/artifacts/{path}", "task output file", "A file the task's agent wrote (its output/).",
         NULL},
        {URI_PREFIX "{task_id}/trajectory", "task trajectory", "The agent's steps: messages, tool calls, results.",
         "application/json"},
    };
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "resourceTemplates") : NULL;
    for (size_t i = 0; arr && i < sizeof t / sizeof t[0]; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(arr, e) || !cJSON_AddStringToObject(e, "uriTemplate", t[i][0]) ||
            !cJSON_AddStringToObject(e, "name", t[i][1]) || !cJSON_AddStringToObject(e, "description", t[i][2]) ||
            (t[i][3] && !cJSON_AddStringToObject(e, "mimeType", t[i][3]))) {
            arr = NULL;
        }
    }
    if (!arr) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
