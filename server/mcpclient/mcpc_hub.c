/* The MCP servers of one task; the contract is mcpc_hub.h. */
#include "mcpclient/mcpc_hub.h"

#include "common/buf.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"
#include "mcpclient/mcpc_http.h"
#include "mcpclient/mcpc_msg.h"
#include "mcpclient/mcpc_result.h"
#include "mcpclient/mcpc_session.h"
#include "mcpclient/mcpc_stdio.h"
#include "mcpclient/mcpc_tools.h"
#include "mcpclient/mcpc_transport.h"
#include "web/req_body.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_MCPC_TOOLS_PAGES 8           /* tools/list pages read from one server */
#define LB_MCPC_ARGS_MAX (1u << 20)     /* one call's arguments: what a server's stdin queue takes */

typedef struct hub_server {
    lb_mcpc_session s;
    int up;
} hub_server;

struct lb_mcpc_hub {
    hub_server srv[LB_CFG_MAX_MCP];
    int n;
    lb_mcpc_toolset tools;
    lbsb_conn *conn;
    char sb_id[64];
};

int lb_mcpc_pick(const lb_config *cfg, const char (*task)[32], int n_task, const char *model_list,
                 char (*names)[LB_CFG_MCP_NAME], int *n, char *err, size_t errsz)
{
    *n = 0;
    if (n_task <= 0)
        return lb_cfg_mcp_list(cfg, model_list, names, LB_CFG_MAX_MCP, n, err, errsz);
    char list[LB_CFG_MAX_MCP * (LB_CFG_MCP_NAME + 1) + 1] = "";
    size_t at = 0;
    for (int i = 0; i < n_task && i < LB_CFG_MAX_MCP; i++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%.31s,", task[i]);
    return lb_cfg_mcp_list(cfg, list, names, LB_CFG_MAX_MCP, n, err, errsz);
}

/* A sentence for the task's log (and the agent's). */
static void note(cJSON *notes, const char *s)
{
    lb_warn("%s", s);
    if (notes)
        cJSON_AddItemToArray(notes, cJSON_CreateString(s));
}

/* tools/list, every page (at most LB_MCPC_TOOLS_PAGES), into h->tools. */
static int list_tools(lb_mcpc_hub *h, hub_server *sv, cJSON *notes, char *err, size_t errsz)
{
    size_t start = h->tools.n, bytes = 0;
    char cursor[512] = "";
    for (int page = 0; page < LB_MCPC_TOOLS_PAGES; page++) {
        cJSON *p = NULL;
        if (cursor[0] && (!(p = cJSON_CreateObject()) || !cJSON_AddStringToObject(p, "cursor", cursor))) {
            cJSON_Delete(p);
            snprintf(err, errsz, "out of memory");
            return LB_E_NOMEM;
        }
        cJSON *res = NULL;
        char why[1000];
        int rc = lb_mcpc_session_request(&sv->s, "tools/list", p, &res, why, sizeof why);
        if (rc != LB_OK) {
            lb_mcpc_tools_truncate(&h->tools, start);
            snprintf(err, errsz, "%s", why);
            return rc;
        }
        char n1[400];
        rc = lb_mcpc_tools_add(&h->tools, sv->s.name, res, &bytes, n1, sizeof n1, why, sizeof why);
        const char *next = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "nextCursor"));
        cursor[0] = '\0';
        if (next && *next && strlen(next) < sizeof cursor)
            snprintf(cursor, sizeof cursor, "%s", next);
        cJSON_Delete(res);
        if (rc != LB_OK) {
            lb_mcpc_tools_truncate(&h->tools, start);
            snprintf(err, errsz, "%s", why);
            return rc;
        }
        if (n1[0]) {
            char s[600];
            snprintf(s, sizeof s, "MCP server %s: %s.", sv->s.name, n1);
            note(notes, s);
        }
        if (!cursor[0])
            return LB_OK;
    }
    return LB_OK; /* more pages than read: the tools of the first ones are offered */
}

int lb_mcpc_hub_start(const lb_config *cfg, const char (*names)[LB_CFG_MCP_NAME], int n, const char *socket,
                      lbsb_conn *conn, const char *sb_id, volatile int *cancel, lb_mcpc_hub **out, cJSON *notes)
{
    lb_mcpc_hub *h = calloc(1, sizeof *h);
    if (!h)
        return LB_E_NOMEM;
    h->conn = conn;
    snprintf(h->sb_id, sizeof h->sb_id, "%s", sb_id ? sb_id : "");
    for (int i = 0; i < n && i < LB_CFG_MAX_MCP; i++) {
        const lb_mcp_cfg *m = lb_cfg_mcp(cfg, names[i]);
        if (!m)
            continue; /* lb_mcpc_pick checked the names */
        hub_server *sv = &h->srv[h->n];
        lb_mcpc_transport *t = NULL;
        char why[1000] = "";
        int rc = m->command[0] ? lb_mcpc_stdio_open(socket, cancel, conn, h->sb_id, m->name, m->command, &t, why,
                                                    sizeof why)
                               : lb_mcpc_http_open(m, cancel, &t, why, sizeof why);
        if (rc == LB_OK)
            rc = lb_mcpc_session_start(&sv->s, m->name, t, m->timeout_s * 1000, why, sizeof why);
        else
            snprintf(sv->s.name, sizeof sv->s.name, "%s", m->name);
        if (rc == LB_OK) {
            h->n++; /* from here the hub stops it */
            rc = list_tools(h, sv, notes, why, sizeof why);
            if (rc == LB_OK) {
                sv->up = 1;
                lb_info("mcp %s: started (%s), tools offered", m->name, m->command[0] ? "stdio in the sandbox"
                                                                                          : "Streamable HTTP");
                continue;
            }
            lb_mcpc_session_close(&sv->s);
        }
        if (rc == LB_E_NOMEM) {
            lb_mcpc_hub_free(h);
            return rc;
        }
        char s[1200];
        snprintf(s, sizeof s, "The MCP server %s was left out, its tools are not offered: %s", m->name, why);
        note(notes, s);
    }
    *out = h;
    return LB_OK;
}

size_t lb_mcpc_hub_count(const lb_mcpc_hub *h)
{
    return h ? h->tools.n : 0;
}

void lb_mcpc_hub_offer(const lb_mcpc_hub *h, cJSON *tools)
{
    for (size_t i = 0; h && i < h->tools.n; i++) {
        const lb_mcpc_tool *t = &h->tools.t[i];
        cJSON *e = cJSON_CreateObject();
        cJSON *fn = e ? cJSON_AddObjectToObject(e, "function") : NULL;
        char server[LB_CFG_MCP_NAME];
        size_t k = strcspn(t->offered, "_");
        while (t->offered[k] && strncmp(t->offered + k, "__", 2))
            k += 1 + strcspn(t->offered + k + 1, "_");
        snprintf(server, sizeof server, "%.*s", (int)k, t->offered);
        /* the model is told where the tool comes from */
        size_t dl = strlen(t->description) + strlen(server) + 40;
        char *desc = malloc(dl);
        if (desc)
            snprintf(desc, dl, "%s%s(MCP server %s)", t->description, t->description[0] ? " " : "", server);
        if (!fn || !desc || !cJSON_AddStringToObject(e, "type", "function") ||
            !cJSON_AddStringToObject(fn, "name", t->offered) || !cJSON_AddStringToObject(fn, "description", desc) ||
            !cJSON_AddItemToObject(fn, "parameters", cJSON_Duplicate(t->schema, 1)) ||
            !cJSON_AddItemToArray(tools, e)) {
            cJSON_Delete(e);
            lb_warn("mcp: out of memory: the tool %s is not offered", t->offered);
        }
        free(desc);
    }
}

static const lb_mcpc_tool *find_tool(const lb_mcpc_hub *h, const char *name)
{
    for (size_t i = 0; h && name && i < h->tools.n; i++)
        if (!strcmp(h->tools.t[i].offered, name))
            return &h->tools.t[i];
    return NULL;
}

static hub_server *server_of_tool(lb_mcpc_hub *h, const lb_mcpc_tool *t)
{
    for (int i = 0; i < h->n; i++) {
        size_t k = strlen(h->srv[i].s.name);
        if (h->srv[i].up && !strncmp(t->offered, h->srv[i].s.name, k) && !strncmp(t->offered + k, "__", 2))
            return &h->srv[i];
    }
    return NULL;
}

const char *lb_mcpc_hub_server_of(const lb_mcpc_hub *h, const char *name)
{
    const lb_mcpc_tool *t = find_tool(h, name);
    hub_server *sv = t ? server_of_tool((lb_mcpc_hub *)h, t) : NULL;
    return sv ? sv->s.name : NULL;
}

void lb_mcpc_outcome_free(lb_mcpc_outcome *o)
{
    free(o->text);
    free(o->observation);
    for (int i = 0; i < o->n_images; i++)
        free(o->images[i].b64);
    memset(o, 0, sizeof *o);
}

/* Writes one image into the sandbox; its path, or a sentence why not, in
 * out. When written and of a type a model takes, im->path and
 * im->media_type say so (the loop may then send it to the model). */
static void write_image(lb_mcpc_hub *h, const char *server, int call_no, int i, lb_mcpc_image *im, char *out,
                        size_t outsz)
{
    size_t n = strlen(im->b64);
    unsigned char *raw = malloc(n / 4 * 3 + 3);
    int k = raw && n % 4 == 0 ? EVP_DecodeBlock(raw, (const unsigned char *)im->b64, (int)n) : -1;
    if (k < 0) {
        free(raw);
        snprintf(out, outsz, "an image that is not valid base64 was left out");
        return;
    }
    /* EVP_DecodeBlock counts the padding's zero bytes */
    if (n >= 1 && im->b64[n - 1] == '=')
        k--;
    if (n >= 2 && im->b64[n - 2] == '=')
        k--;
    char path[200], why[300] = "";
    snprintf(path, sizeof path, "%s/%s-%d-%d.%s", LB_MCPC_IMAGE_DIR, server, call_no, i + 1, im->ext);
    int rc = lbsb_write(h->conn, h->sb_id, path, raw, (size_t)k, 0, why, sizeof why);
    const char *type = lb_mcpc_image_sniff(raw, (size_t)k);
    free(raw);
    if (rc == LB_OK && type) {
        snprintf(im->path, sizeof im->path, "%s", path);
        snprintf(im->media_type, sizeof im->media_type, "%s", type);
    }
    if (rc == LB_OK)
        snprintf(out, outsz, "an image (%d bytes) was written to %s", k, path);
    else
        snprintf(out, outsz, "an image could not be written into the sandbox: %.200s", why);
}

static int outcome_text(lb_mcpc_outcome *o, const char *status, const char *text)
{
    snprintf(o->status, sizeof o->status, "%s", status);
    o->text = strdup(text);
    o->observation = strdup(text);
    return o->text && o->observation ? LB_OK : LB_E_NOMEM;
}

int lb_mcpc_hub_call(lb_mcpc_hub *h, const char *name, const char *args, size_t len, int call_no,
                     lb_mcpc_outcome *o)
{
    memset(o, 0, sizeof *o);
    int64_t t0 = lb_mono_ms();
    const lb_mcpc_tool *t = find_tool(h, name);
    hub_server *sv = t ? server_of_tool(h, t) : NULL;
    char msg[1400];
    if (!sv) {
        snprintf(msg, sizeof msg, "Unknown tool: %.64s", name ? name : "");
        return outcome_text(o, "error", msg);
    }
    snprintf(o->server, sizeof o->server, "%s", sv->s.name);
    snprintf(o->tool, sizeof o->tool, "%s", t->name);
    int rc = LB_OK;
    cJSON *a = NULL;
    if (len > LB_MCPC_ARGS_MAX) {
        snprintf(msg, sizeof msg, "Invalid arguments for %s: %zu bytes, over the limit of %u.", name, len,
                 LB_MCPC_ARGS_MAX);
        rc = outcome_text(o, "error", msg);
        goto out;
    }
    size_t lead = args ? strspn(args, " \t\r\n") : 0;
    if (!args || lead == len) {
        a = cJSON_CreateObject();
    } else {
        char why[300];
        a = lb_json_parse_checked(args, len, "arguments", LB_MCPC_MSG_VALUES, LB_MCPC_SCHEMA_DEPTH * 4, &rc, why,
                                  sizeof why);
        if (!a || !cJSON_IsObject(a)) {
            snprintf(msg, sizeof msg, "Invalid arguments for %s: they must be a JSON object%s%s.", name,
                     a ? "" : ": ", a ? "" : why);
            rc = outcome_text(o, "error", msg);
            goto out;
        }
    }
    cJSON *p = cJSON_CreateObject();
    if (!a || !p || !cJSON_AddStringToObject(p, "name", t->name) || !cJSON_AddItemToObject(p, "arguments", a)) {
        cJSON_Delete(p);
        rc = LB_E_NOMEM;
        goto out;
    }
    a = NULL; /* p has it */
    cJSON *res = NULL;
    char why[1000];
    rc = lb_mcpc_session_request(&sv->s, "tools/call", p, &res, why, sizeof why);
    if (rc == LB_E_NOMEM)
        goto out;
    if (rc != LB_OK) {
        /* a timeout, an error answer, a server gone: the model reads why and goes on */
        lb_warn("mcp %s: %s", sv->s.name, why);
        rc = outcome_text(o, "failed", why);
        goto out;
    }
    lb_mcpc_result r;
    rc = lb_mcpc_result_parse(res, &r, why, sizeof why);
    cJSON_Delete(res);
    if (rc == LB_E_NOMEM) {
        lb_mcpc_result_free(&r);
        goto out;
    }
    if (rc != LB_OK) {
        snprintf(msg, sizeof msg, "The MCP server %s answered tools/call with something else than a result: %s.",
                 sv->s.name, why);
        lb_mcpc_result_free(&r);
        rc = outcome_text(o, "failed", msg);
        goto out;
    }
    lb_buf b;
    lb_buf_init(&b, LB_MCPC_TEXT_MAX + 4096);
    if (r.is_error)
        LB_IGNORE(lb_buf_printf(&b, "Error from the MCP server %s: ", sv->s.name)); /* within the cap */
    size_t cut = lb_buf_append_trunc(&b, r.text, strlen(r.text));
    if (r.truncated || cut)
        LB_IGNORE(lb_buf_printf(&b, "\n[the output was cut at %u bytes]", LB_MCPC_TEXT_MAX)); /* within the cap */
    for (int i = 0; i < r.n_images; i++) {
        char line[400];
        write_image(h, sv->s.name, call_no, i, &r.images[i], line, sizeof line);
        LB_IGNORE(lb_buf_printf(&b, "\n[%s]", line)); /* within the cap */
    }
    if (r.images_dropped) /* within the cap: LB_MCPC_TEXT_MAX + 4096 leaves room for the notes */
        LB_IGNORE(lb_buf_printf(&b, "\n[%d image%s left out: over %d images or %u bytes each]", r.images_dropped,
                                r.images_dropped == 1 ? " was" : "s were", LB_MCPC_IMAGES, LB_MCPC_IMAGE_MAX));
    if (!b.len)
        LB_IGNORE(lb_buf_appends(&b, "(no output)")); /* within the cap */
    int is_error = r.is_error;
    for (int i = 0; i < r.n_images; i++)
        if (r.images[i].path[0]) { /* handed on: the outcome owns its bytes */
            o->images[o->n_images++] = r.images[i];
            r.images[i].b64 = NULL;
        }
    lb_mcpc_result_free(&r);
    size_t bl;
    char *text = lb_buf_steal(&b, &bl);
    if (!text) {
        rc = LB_E_NOMEM;
        goto out;
    }
    lb_utf8_trim_partial(text);
    rc = outcome_text(o, is_error ? "error" : "ok", text);
    free(text);
out:
    cJSON_Delete(a);
    o->duration_ms = lb_mono_ms() - t0;
    return rc;
}

void lb_mcpc_hub_free(lb_mcpc_hub *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->n; i++)
        lb_mcpc_session_close(&h->srv[i].s);
    lb_mcpc_tools_free(&h->tools);
    free(h);
}
