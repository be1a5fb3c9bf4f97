/* E2B's volumes: control plane, content API and mounts (e2b_volume.h). */
#include "e2b/e2b_volume.h"

#include "e2b/e2b_connect.h"
#include "llmbox/sandbox.h"
#include "sbxapi/sandbox_owner.h"
#include "sbxapi/sandbox_registry.h"
#include "web/http.h"
#include "web/req_body.h"

#include "common/buf.h"
#include "common/config.h"
#include "common/log.h"
#include "common/node_id.h"
#include "common/token.h"
#include "common/util.h"
#include "store/store_volume.h"

#include <curl/curl.h>
#include <fcgiapp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LB_E2B_VOL_FILE_MAX (60u << 20) /* one file's body: sandboxd's cap (volumes/volume_fs.h) */
#define LB_E2B_VOL_BODY_MAX 4096        /* a JSON body of these routes */
#define LB_E2B_FWD_ANSWER_MAX (1u << 20) /* a forwarded create's answer: a sandbox's JSON, far below */
#define LB_E2B_FWD_TIMEOUT_S 120L        /* a forwarded create: as long as a sandbox may take to start */
#define LB_E2B_FWD_CONNECT_S 10L

/* The content token of volume id (64 hex): of its 32 hex alone when plain
 * (the tokens of a node without node_name), of the whole id when it names
 * its node. */
static int lb_e2b_volume_token(const lb_config *cfg, const char *id, char out[LB_SHA256_HEX])
{
    if (!cfg->sandbox_api_token[0])
        return LB_E_INVAL;
    char data[128];
    int n = snprintf(data, sizeof data, "e2b-volume-content:%.*s", LB_NODE_ID_MAX, id);
    return lb_hmac_sha256_hex(cfg->sandbox_api_token, strlen(cfg->sandbox_api_token), data, (size_t)n, out);
}

/* several nodes: a volume id is "<node>.<32 hex>" when the web has
 * node_name (store/store_volume.h), its sandboxd's 32 hex otherwise; a
 * plain id still names this node's volume. The hex part into hex and the
 * node into node ("" for a plain id); 0 when id is neither form. */
static int lb_e2b_vol_id_parse(const char *id, char hex[33], char node[LB_NODE_ID_NAME_MAX + 1])
{
    if (!lb_node_id_node(id, node, LB_NODE_ID_NAME_MAX + 1))
        return 0;
    const char *dot = strrchr(id, '.');
    snprintf(hex, 33, "%s", dot ? dot + 1 : id);
    return 1;
}

/* The id clients see of sandboxd's volume hex. */
static void lb_e2b_vol_public(const lb_config *cfg, const char *hex, char out[LB_NODE_ID_MAX + 1])
{
    if (cfg->node_name[0])
        snprintf(out, LB_NODE_ID_MAX + 1, "%s.%.32s", cfg->node_name, hex);
    else
        snprintf(out, LB_NODE_ID_MAX + 1, "%.32s", hex);
}

/* E2B's error with a 421 naming the node that holds what was asked
 * (X-Llmbox-Node, as sbxapi/sandbox_node.c's), after draining the body. */
static void lb_e2b_vol_misdirected(lb_req *r, const char *node, const char *msg)
{
    char hdr[96];
    snprintf(hdr, sizeof hdr, "X-Llmbox-Node: %s\r\n", node);
    cJSON *o = cJSON_CreateObject();
    lb_http_drain(r);
    if (o && cJSON_AddNumberToObject(o, "code", 421) && cJSON_AddStringToObject(o, "message", msg) &&
        cJSON_AddStringToObject(o, "node", node))
        lb_http_json(r, 421, o, hdr);
    else
        lb_e2b_error(r, 500, "Out of memory.");
    cJSON_Delete(o);
}

/* 1 with hex set when volume id is this node's; else answers (404 for
 * what is no id, 421 naming the holder for another node's) and 0. */
static int lb_e2b_vol_here(lb_req *r, const char *id, char hex[33])
{
    char node[LB_NODE_ID_NAME_MAX + 1], msg[600];
    if (!lb_e2b_vol_id_parse(id, hex, node)) {
        lb_e2b_error(r, 404, "There is no volume %.100s: volume ids are 32 lowercase hexadecimal characters, "
                             "prefixed with the node's name and a dot in a cluster.", id);
        return 0;
    }
    if (!node[0] || !strcmp(node, r->cfg->node_name))
        return 1;
    snprintf(msg, sizeof msg, "The volume %s is held by node %s, not by this web (%s%s): send the call through the "
             "balancer, which routes by the id's node prefix, or to node %s's web.",
             id, node, r->cfg->node_name[0] ? "node " : "node_name is not set", r->cfg->node_name, node);
    lb_e2b_vol_misdirected(r, node, msg);
    return 0;
}

/* The store's row of this node's volume hex (several nodes: node_name set)
 * written, or deleted (owner NULL). Logged on failure: a list through
 * another web misses it until this web lists again. */
static int lb_e2b_vol_row(lb_req *r, const char *hex, const char *owner, const char *name, int64_t created_ms)
{
    if (!r->cfg->node_name[0])
        return LB_OK;
    char id[LB_NODE_ID_MAX + 1];
    lb_e2b_vol_public(r->cfg, hex, id);
    lb_vol_row row = {.id = id, .owner = owner, .name = name, .node = r->cfg->node_name, .created_ms = created_ms};
    int rc = owner ? lb_store_vol_put(r->store, &row) : lb_store_vol_delete(r->store, id);
    if (rc && rc != LB_E_EXISTS)
        lb_warn("web: E2B volumes: cannot %s the store's row of volume %s (%s)", owner ? "write" : "delete", id,
                lb_strerror(rc));
    return rc;
}

/* A fresh connection to sandboxd, or NULL after answering 503. */
static lbsb_conn *lb_e2b_vol_conn(lb_req *r)
{
    lbsb_conn *c = NULL;
    char err[256];
    if (lbsb_connect(r->cfg->sandboxd_socket, NULL, &c, err, sizeof err) != LB_OK) {
        lb_e2b_error(r, 503, "The sandbox daemon cannot be reached: %s.", err);
        return NULL;
    }
    return c;
}

/* One volume request to sandboxd; *resp (and *data for a read) on LB_OK. */
static int lb_e2b_vol_call(lbsb_conn *c, cJSON *req, const void *body, size_t blen, cJSON **resp, char **data,
                           size_t *dlen, char *err, size_t errsz)
{
    char *ignored = NULL;
    size_t ilen = 0;
    int rc = lbsb_volume_call(c, req, body, blen, resp, data ? data : &ignored, data ? dlen : &ilen,
                              LB_E2B_VOL_FILE_MAX, err, errsz);
    free(ignored);
    return rc;
}

static cJSON *lb_e2b_vol_req(const char *action, const char *id)
{
    cJSON *q = cJSON_CreateObject();
    if (q && (!cJSON_AddStringToObject(q, "action", action) || (id && !cJSON_AddStringToObject(q, "volume", id)))) {
        cJSON_Delete(q);
        return NULL;
    }
    return q;
}

/* The HTTP status of sandboxd's answer rc. */
static int lb_e2b_vol_status(int rc)
{
    switch (rc) {
    case LB_E_NOTFOUND: return 404;
    case LB_E_EXISTS: return 409;
    case LB_E_INVAL:
    case LB_E_ISDIR: return 400;
    case LB_E_TOOBIG: return 413;
    case LB_E_NOSPACE: return 507;
    case LB_E_UNAVAILABLE: return 503;
    default: return 500;
    }
}

/* The record of volume id: LB_OK with its owner and name. */
static int lb_e2b_vol_get(lbsb_conn *c, const char *id, char owner[64], char name[65], char *err, size_t errsz)
{
    cJSON *resp = NULL;
    int rc = lb_e2b_vol_call(c, lb_e2b_vol_req("get", id), NULL, 0, &resp, NULL, NULL, err, errsz);
    if (rc != LB_OK)
        return rc;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(resp, "volume");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(v, "owner"), *n = cJSON_GetObjectItemCaseSensitive(v, "name");
    rc = cJSON_IsString(o) && cJSON_IsString(n) ? LB_OK : LB_E_PROTO;
    if (rc == LB_OK) {
        snprintf(owner, 64, "%s", o->valuestring);
        snprintf(name, 65, "%s", n->valuestring);
    }
    cJSON_Delete(resp);
    return rc;
}

int lb_e2b_volume_owner_sees(lb_req *r, const char *id)
{
    char hex[33], node[LB_NODE_ID_NAME_MAX + 1];
    /* no id, or another node's (the handler answers 421 naming it) */
    if (!r->user || !lb_e2b_vol_id_parse(id, hex, node) || (node[0] && strcmp(node, r->cfg->node_name)))
        return 1;
    lbsb_conn *c = NULL;
    char err[256], owner[64], name[65];
    if (lbsb_connect(r->cfg->sandboxd_socket, NULL, &c, err, sizeof err) != LB_OK)
        return 1; /* the handler answers 503 */
    int rc = lb_e2b_vol_get(c, hex, owner, name, err, sizeof err);
    lbsb_close(c);
    return rc != LB_OK || !strcmp(owner, lb_sbx_owner_name(r));
}

/* {volumeID, name, token} */
static cJSON *lb_e2b_vol_shape(const lb_config *cfg, const char *id, const char *name, int with_token)
{
    char tok[LB_SHA256_HEX];
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "volumeID", id) || !cJSON_AddStringToObject(o, "name", name) ||
        (with_token && (lb_e2b_volume_token(cfg, id, tok) != LB_OK || !cJSON_AddStringToObject(o, "token", tok)))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* A walk of the store's rows for one name: the node that holds it */
typedef struct lb_e2b_vol_found {
    const lb_config *cfg;
    char node[LB_NODE_ID_NAME_MAX + 1], id[LB_NODE_ID_MAX + 1];
} lb_e2b_vol_found;

static int lb_e2b_vol_found_cb(void *arg, const lb_vol_row *row)
{
    lb_e2b_vol_found *f = arg;
    if (!f->node[0]) { /* the oldest: one per owner and name, the shared token's walk of every owner's aside */
        snprintf(f->node, sizeof f->node, "%s", row->node);
        snprintf(f->id, sizeof f->id, "%s", row->id);
    }
    return 0;
}

/* A list's walk of the store's rows: the other nodes' into out; this
 * node's marked "rowed" in local (sandboxd's list), or kept to drop when
 * sandboxd has no such volume */
#define LB_E2B_VOL_DROP_MAX 64 /* one list's stale rows dropped; the next list drops more */
typedef struct lb_e2b_vol_merge {
    lb_req *r;
    cJSON *out, *local;
    char drop[LB_E2B_VOL_DROP_MAX][33];
    size_t ndrop;
} lb_e2b_vol_merge;

static int lb_e2b_vol_merge_cb(void *arg, const lb_vol_row *row)
{
    lb_e2b_vol_merge *mg = arg;
    if (strcmp(row->node, mg->r->cfg->node_name)) {
        cJSON *one = lb_e2b_vol_shape(mg->r->cfg, row->id, row->name, 0);
        if (!one || !cJSON_AddItemToArray(mg->out, one))
            cJSON_Delete(one);
        return 0;
    }
    const char *hex = strrchr(row->id, '.') + 1; /* a valid row names its node */
    cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(mg->local, "volumes"))
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "id"));
        if (id && !strcmp(id, hex)) {
            if (!cJSON_GetObjectItemCaseSensitive(v, "rowed"))
                cJSON_AddTrueToObject(v, "rowed");
            return 0;
        }
    }
    if (mg->ndrop < LB_E2B_VOL_DROP_MAX)
        snprintf(mg->drop[mg->ndrop++], 33, "%s", hex);
    return 0;
}

void lb_h_e2b_volumes(lb_req *r)
{
    lbsb_conn *c = lb_e2b_vol_conn(r);
    if (!c)
        return;
    char err[1400];
    cJSON *resp = NULL, *body = NULL, *out = NULL;
    const char *me = lb_sbx_owner_name(r);
    if (!strcmp(r->method, "POST")) {
        body = lb_req_json(r, LB_E2B_VOL_BODY_MAX, "volume");
        if (!body)
            goto done;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "name");
        if (!cJSON_IsString(name)) {
            lb_e2b_error(r, 400, "A volume needs a name.");
            goto done;
        }
        /* several nodes: a name the key has on another node is taken (the
         * store's row; its own node's rows are checked by its sandboxd) */
        if (r->cfg->node_name[0] && strlen(name->valuestring) <= LB_VOL_NAME_MAX) {
            lb_e2b_vol_found f = {.cfg = r->cfg};
            int src = lb_store_vol_list(r->store, me, name->valuestring, lb_e2b_vol_found_cb, &f);
            if (src == LB_OK && f.node[0] && strcmp(f.node, r->cfg->node_name)) {
                lb_e2b_error(r, 409, "A volume named \"%s\" already exists (on node %s).", name->valuestring, f.node);
                goto done;
            }
            if (src != LB_OK) {
                lb_e2b_error(r, 503, "The store cannot be reached to check the volume's name: %s.", lb_strerror(src));
                goto done;
            }
            /* this node's row of a volume its sandboxd no longer has: the
             * name is free (sandboxd is the truth) */
            char ow[64], nm[65];
            if (f.node[0] && lb_e2b_vol_get(c, strrchr(f.id, '.') + 1, ow, nm, err, sizeof err) == LB_E_NOTFOUND)
                LB_IGNORE(lb_store_vol_delete(r->store, f.id)); /* a failure is the 409 below: try again */
        }
        cJSON *q = lb_e2b_vol_req("create", NULL);
        if (q && (!cJSON_AddStringToObject(q, "owner", me) || !cJSON_AddStringToObject(q, "name", name->valuestring))) {
            cJSON_Delete(q);
            q = NULL;
        }
        int rc = lb_e2b_vol_call(c, q, NULL, 0, &resp, NULL, NULL, err, sizeof err);
        if (rc != LB_OK) {
            /* over the count is the key's limit, not the request's size */
            lb_e2b_error(r, rc == LB_E_TOOBIG ? 400 : lb_e2b_vol_status(rc), "%s", err);
            goto done;
        }
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(resp, "volume");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
        char pub[LB_NODE_ID_MAX + 1];
        if (cJSON_IsString(id) && lb_id_valid(id->valuestring)) {
            /* the row after sandboxd made it: the unique name is the
             * arbiter of two nodes' creates at once; the loser's goes */
            rc = lb_e2b_vol_row(r, id->valuestring, me, name->valuestring, lb_now_ms());
            if (rc != LB_OK) {
                cJSON *dresp = NULL;
                if (lb_e2b_vol_call(c, lb_e2b_vol_req("delete", id->valuestring), NULL, 0, &dresp, NULL, NULL, err,
                                    sizeof err) != LB_OK)
                    lb_warn("web: E2B volumes: cannot delete volume %s, made while its row failed: %s",
                            id->valuestring, err);
                cJSON_Delete(dresp);
                if (rc == LB_E_EXISTS)
                    lb_e2b_error(r, 409, "A volume named \"%s\" already exists (on another node).", name->valuestring);
                else
                    lb_e2b_error(r, 503, "The volume's row cannot be written in the store (%s), so other nodes "
                                         "would not find it: try again.", lb_strerror(rc));
                goto done;
            }
            lb_e2b_vol_public(r->cfg, id->valuestring, pub);
        }
        out = cJSON_IsString(id) && lb_id_valid(id->valuestring) ? lb_e2b_vol_shape(r->cfg, pub, name->valuestring, 1)
                                                                  : NULL;
        if (!out)
            lb_e2b_error(r, 500, "sandboxd named no volume.");
        else
            lb_http_json(r, 201, out, NULL);
        goto done;
    }
    int rc = lb_e2b_vol_call(c, lb_e2b_vol_req("list", NULL), NULL, 0, &resp, NULL, NULL, err, sizeof err);
    if (rc != LB_OK) {
        lb_e2b_error(r, lb_e2b_vol_status(rc), "%s", err);
        goto done;
    }
    out = cJSON_CreateArray();
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(resp, "volumes"))
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id"), *n = cJSON_GetObjectItemCaseSensitive(v, "name");
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(v, "owner");
        /* a user's key: its own; the shared token: every one */
        if (!cJSON_IsString(id) || !cJSON_IsString(n) || !cJSON_IsString(o) ||
            (r->user && strcmp(o->valuestring, me)) || !lb_id_valid(id->valuestring))
            continue;
        char pub[LB_NODE_ID_MAX + 1];
        lb_e2b_vol_public(r->cfg, id->valuestring, pub);
        cJSON *one = lb_e2b_vol_shape(r->cfg, pub, n->valuestring, 0);
        if (one && out)
            cJSON_AddItemToArray(out, one);
        else
            cJSON_Delete(one);
    }
    /* several nodes: the other nodes' from the store; this node's rows
     * sandboxd no longer has are dropped, its volumes without a row (made
     * before v17, or a failed write) get theirs */
    if (out && r->cfg->node_name[0]) {
        lb_e2b_vol_merge mg = {.r = r, .out = out, .local = resp};
        int src = lb_store_vol_list(r->store, r->user ? me : NULL, NULL, lb_e2b_vol_merge_cb, &mg);
        if (src != LB_OK) {
            lb_e2b_error(r, 503, "The store cannot be reached to list the other nodes' volumes: %s.", lb_strerror(src));
            goto done;
        }
        for (size_t i = 0; i < mg.ndrop; i++)
            LB_IGNORE(lb_e2b_vol_row(r, mg.drop[i], NULL, NULL, 0)); /* logged; the next list drops it */
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(resp, "volumes"))
        {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(v, "name"), *o = cJSON_GetObjectItemCaseSensitive(v, "owner");
            int want = cJSON_IsString(id) && cJSON_IsString(n) && cJSON_IsString(o) && lb_id_valid(id->valuestring) &&
                       !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "rowed")) &&
                       (!r->user || !strcmp(o->valuestring, me));
            if (want) /* logged; the next list mends it */
                LB_IGNORE(lb_e2b_vol_row(r, id->valuestring, o->valuestring, n->valuestring, lb_now_ms()));
        }
    }
    if (out)
        lb_http_json(r, 200, out, NULL);
    else
        lb_e2b_error(r, 500, "Out of memory.");
done:
    cJSON_Delete(out);
    cJSON_Delete(resp);
    cJSON_Delete(body);
    lbsb_close(c);
}

void lb_h_e2b_volume(lb_req *r)
{
    const char *id = r->rest ? r->rest : "";
    char hex[33], pub[LB_NODE_ID_MAX + 1];
    if (!lb_e2b_vol_here(r, id, hex))
        return;
    lb_e2b_vol_public(r->cfg, hex, pub);
    lbsb_conn *c = lb_e2b_vol_conn(r);
    if (!c)
        return;
    char err[1400], owner[64], name[65];
    int rc = lb_e2b_vol_get(c, hex, owner, name, err, sizeof err);
    /* the router let only the owner's key (or the shared token) through */
    if (rc != LB_OK) {
        if (rc == LB_E_NOTFOUND) /* sandboxd is the truth: a row of what it lacks goes */
            LB_IGNORE(lb_e2b_vol_row(r, hex, NULL, NULL, 0));
        lb_e2b_error(r, lb_e2b_vol_status(rc), "%s", rc == LB_E_NOTFOUND ? "There is no such volume." : err);
    } else if (!strcmp(r->method, "DELETE")) {
        cJSON *resp = NULL;
        rc = lb_e2b_vol_call(c, lb_e2b_vol_req("delete", hex), NULL, 0, &resp, NULL, NULL, err, sizeof err);
        cJSON_Delete(resp);
        if (rc == LB_OK || rc == LB_E_NOTFOUND)
            LB_IGNORE(lb_e2b_vol_row(r, hex, NULL, NULL, 0)); /* logged; a list mends */
        if (rc != LB_OK)
            lb_e2b_error(r, lb_e2b_vol_status(rc), "%s", err);
        else
            lb_http_head(r, 204, NULL, NULL);
    } else {
        cJSON *out = lb_e2b_vol_shape(r->cfg, pub, name, 1);
        if (out)
            lb_http_json(r, 200, out, NULL);
        else
            lb_e2b_error(r, 500, "Out of memory.");
        cJSON_Delete(out);
    }
    lbsb_close(c);
}

int lb_e2b_volume_auth_ok(lb_req *r)
{
    const char *rest = r->rest ? r->rest : "";
    char id[LB_NODE_ID_MAX + 1] = "", hex[33], node[LB_NODE_ID_NAME_MAX + 1];
    size_t n = strcspn(rest, "/");
    if (n <= LB_NODE_ID_MAX) {
        memcpy(id, rest, n);
        id[n] = '\0';
    }
    const char *h = lb_http_param(r, "HTTP_AUTHORIZATION");
    char want[LB_SHA256_HEX], got[LB_SHA256_HEX] = "";
    if (h) {
        while (*h == ' ')
            h++;
        if (!strncasecmp(h, "Bearer ", 7)) {
            h += 7;
            while (*h == ' ')
                h++;
            snprintf(got, sizeof got, "%.64s", h);
        }
    }
    if (lb_e2b_vol_id_parse(id, hex, node) && strlen(got) == 64 && lb_e2b_volume_token(r->cfg, id, want) == LB_OK &&
        lb_ct_equal(want, got, 64))
        return 1;
    lb_http_drain(r);
    lb_e2b_error(r, 401, "%s", !r->cfg->sandbox_api_token[0]
                     ? "Volumes are turned off because no sandbox API token is configured (LLMBOX_SANDBOX_API_TOKEN)."
                     : "Send the volume's token (Volume.create and Volume.getInfo answer it) as Authorization: Bearer.");
    return 0;
}

/* A query number into the request (absent: left out); 0 when it is not one. */
static int lb_e2b_vol_qnum(lb_req *r, cJSON *q, const char *key)
{
    char v[32];
    if (lb_query_get(r->query, key, v, sizeof v) != LB_OK || !v[0])
        return 1;
    long long x;
    if (lb_parse_ll(v, 0, 1 << 20, &x) != LB_OK)
        return 0;
    return cJSON_AddNumberToObject(q, key, (double)x) != NULL;
}

/* Sends the entry or entries sandboxd answered under key. */
static void lb_e2b_vol_entry_out(lb_req *r, cJSON *resp, const char *key)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(resp, key);
    if (e)
        lb_http_json(r, 200, e, NULL);
    else
        lb_e2b_error(r, 500, "sandboxd answered no entry.");
}

void lb_h_e2b_volume_content(lb_req *r)
{
    const char *rest = r->rest ? r->rest : "";
    char full[LB_NODE_ID_MAX + 1] = "", id[33];
    size_t idn = strcspn(rest, "/");
    if (idn <= LB_NODE_ID_MAX) {
        memcpy(full, rest, idn);
        full[idn] = '\0';
    }
    if (!lb_e2b_vol_here(r, full, id)) /* another node's: 421 naming it */
        return;
    const char *kind = rest[idn] == '/' ? rest + idn + 1 : "";
    const char *m = r->method;
    char path[LB_PATH_MAX + 2], err[1400];
    if (lb_query_get(r->query, "path", path, sizeof path) != LB_OK) {
        lb_http_drain(r);
        lb_e2b_error(r, 400, "A path (?path=) of at most %d bytes is needed.", LB_PATH_MAX);
        return;
    }
    const char *action = NULL, *entry_key = "entry";
    int write = 0, read = 0;
    if (!strcmp(kind, "dir") && !strcmp(m, "GET"))
        action = "list_dir", entry_key = "entries";
    else if (!strcmp(kind, "dir") && !strcmp(m, "POST"))
        action = "mkdir";
    else if (!strcmp(kind, "path") && !strcmp(m, "GET"))
        action = "stat";
    else if (!strcmp(kind, "path") && !strcmp(m, "PATCH"))
        action = "chmeta";
    else if (!strcmp(kind, "path") && !strcmp(m, "DELETE"))
        action = "remove";
    else if (!strcmp(kind, "file") && !strcmp(m, "GET"))
        action = "read", read = 1;
    else if (!strcmp(kind, "file") && !strcmp(m, "PUT"))
        action = "write", write = 1;
    if (!action) {
        lb_http_drain(r);
        lb_e2b_error(r, strcmp(kind, "dir") && strcmp(kind, "path") && strcmp(kind, "file") ? 404 : 405,
                     "There is no volume content route %s %.8s.", m, kind);
        return;
    }
    cJSON *q = lb_e2b_vol_req(action, id), *resp = NULL, *meta = NULL;
    int ok = q && cJSON_AddStringToObject(q, "path", path);
    char fq[16];
    if (ok && lb_query_get(r->query, "force", fq, sizeof fq) == LB_OK && !strcmp(fq, "true"))
        ok = cJSON_AddTrueToObject(q, "force") != NULL;
    if (ok && !strcmp(action, "list_dir"))
        ok = lb_e2b_vol_qnum(r, q, "depth");
    if (ok && (write || !strcmp(action, "mkdir")))
        ok = lb_e2b_vol_qnum(r, q, "uid") && lb_e2b_vol_qnum(r, q, "gid") && lb_e2b_vol_qnum(r, q, "mode");
    if (ok && !strcmp(action, "chmeta")) {
        /* {uid?, gid?, mode?}: numbers only */
        meta = lb_req_json(r, LB_E2B_VOL_BODY_MAX, "metadata");
        if (!meta) {
            cJSON_Delete(q);
            return;
        }
        static const char *const keys[] = {"uid", "gid", "mode"};
        for (size_t i = 0; ok && i < 3; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, keys[i]);
            if (v && !cJSON_IsNull(v))
                ok = cJSON_IsNumber(v) ? cJSON_AddNumberToObject(q, keys[i], v->valuedouble) != NULL : -1;
        }
    }
    if (ok != 1) {
        if (!meta && !write)
            lb_http_drain(r);
        lb_e2b_error(r, 400, "uid, gid, mode and depth are whole numbers.");
        cJSON_Delete(q);
        cJSON_Delete(meta);
        return;
    }
    lb_buf body;
    lb_buf_init(&body, LB_E2B_VOL_FILE_MAX);
    if (write && lb_req_body(r, LB_E2B_VOL_FILE_MAX, &body, "file") != LB_OK) {
        cJSON_Delete(q);
        lb_buf_free(&body);
        return;
    }
    if (!write && !meta)
        lb_http_drain(r);
    lbsb_conn *c = lb_e2b_vol_conn(r);
    char *data = NULL;
    size_t dlen = 0;
    int rc = c ? lb_e2b_vol_call(c, q, write ? (body.data ? body.data : "") : NULL, write ? body.len : 0, &resp,
                                 read ? &data : NULL, &dlen, err, sizeof err)
               : LB_E_UNAVAILABLE;
    if (!c)
        cJSON_Delete(q);
    else if (rc != LB_OK)
        lb_e2b_error(r, lb_e2b_vol_status(rc), "%s", err);
    else if (read) {
        char extra[64];
        snprintf(extra, sizeof extra, "Content-Length: %zu\r\n", dlen);
        lb_http_head(r, 200, "application/octet-stream", extra);
        if (!r->is_head && dlen)
            FCGX_PutStr(data, (int)dlen, r->fcgi->out);
    } else if (!strcmp(action, "remove")) {
        lb_http_head(r, 204, NULL, NULL);
    } else {
        lb_e2b_vol_entry_out(r, resp, entry_key);
    }
    free(data);
    cJSON_Delete(resp);
    cJSON_Delete(meta);
    lb_buf_free(&body);
    lbsb_close(c);
}

/* The mount path's shape, checked again by sandboxd (sandbox_volume.c). */
static int lb_e2b_mount_path_ok(const char *p)
{
    size_t n = strlen(p);
    if (!n || p[0] != '/' || n > LB_PATH_MAX || strstr(p, "/../") || (n >= 3 && !strcmp(p + n - 3, "/..")))
        return 0;
    static const char *const sys[] = {"/proc", "/sys", "/dev"};
    for (size_t i = 0; i < 3; i++) {
        size_t k = strlen(sys[i]);
        if (!strncmp(p, sys[i], k) && (p[k] == '\0' || p[k] == '/'))
            return 0;
    }
    return strspn(p, "/") < n; /* not "/" */
}

int lb_e2b_mounts_parse(lb_req *r, const cJSON *body, lb_e2b_mounts *m, char *msg, size_t msgsz)
{
    memset(m, 0, sizeof *m);
    const cJSON *vm = cJSON_GetObjectItemCaseSensitive(body, "volumeMounts");
    if (!vm || cJSON_IsNull(vm))
        return 0;
    if (!cJSON_IsArray(vm) || cJSON_GetArraySize(vm) > LB_E2B_MOUNTS_MAX) {
        snprintf(msg, msgsz, "volumeMounts is a list of at most %d {name, path}.", LB_E2B_MOUNTS_MAX);
        return 400;
    }
    if (!cJSON_GetArraySize(vm))
        return 0;
    lbsb_conn *c = NULL;
    char err[512];
    if (lbsb_connect(r->cfg->sandboxd_socket, NULL, &c, err, sizeof err) != LB_OK) {
        snprintf(msg, msgsz, "The sandbox daemon cannot be reached: %s.", err);
        return 503;
    }
    cJSON *resp = NULL;
    int rc = lb_e2b_vol_call(c, lb_e2b_vol_req("list", NULL), NULL, 0, &resp, NULL, NULL, err, sizeof err);
    lbsb_close(c);
    if (rc != LB_OK) {
        snprintf(msg, msgsz, "The volumes cannot be listed: %s", err);
        return lb_e2b_vol_status(rc);
    }
    const char *me = lb_sbx_owner_name(r);
    int st = 0;
    const cJSON *one;
    cJSON_ArrayForEach(one, vm)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(one, "name");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(one, "path");
        if (!cJSON_IsString(name) || !cJSON_IsString(path) || !lb_e2b_mount_path_ok(path->valuestring)) {
            snprintf(msg, msgsz, "Each volume mount is {name, path}, path absolute, not \"/\", not under /proc, /sys "
                     "or /dev, without \"..\".");
            st = 400;
            break;
        }
        /* the key's own volume of that name; the shared token's own first, then any one */
        const char *found = NULL;
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(resp, "volumes"))
        {
            const cJSON *vn = cJSON_GetObjectItemCaseSensitive(v, "name");
            const cJSON *vo = cJSON_GetObjectItemCaseSensitive(v, "owner");
            const cJSON *vi = cJSON_GetObjectItemCaseSensitive(v, "id");
            if (!cJSON_IsString(vn) || !cJSON_IsString(vo) || !cJSON_IsString(vi) || strcmp(vn->valuestring, name->valuestring))
                continue;
            if (!strcmp(vo->valuestring, me)) {
                found = vi->valuestring;
                break;
            }
            if (!r->user && !found)
                found = vi->valuestring; /* an own volume of that name, later in the list, replaces it */
        }
        /* several nodes: not here, maybe on another node (the store's row) */
        char node[LB_NODE_ID_NAME_MAX + 1] = "";
        lb_e2b_vol_found f = {.cfg = r->cfg}; /* found may point into it */
        if (!found && r->cfg->node_name[0] && strlen(name->valuestring) <= LB_VOL_NAME_MAX) {
            int src = lb_store_vol_list(r->store, me, name->valuestring, lb_e2b_vol_found_cb, &f);
            if (src == LB_OK && !f.node[0] && !r->user) /* the shared token: any owner's of that name */
                src = lb_store_vol_list(r->store, NULL, name->valuestring, lb_e2b_vol_found_cb, &f);
            if (src != LB_OK) {
                snprintf(msg, msgsz, "The store cannot be reached to find the volume \"%.64s\": %s.",
                         name->valuestring, lb_strerror(src));
                st = 503;
                break;
            }
            if (f.node[0] && !strcmp(f.node, r->cfg->node_name)) /* a row of what sandboxd no longer has */
                LB_IGNORE(lb_store_vol_delete(r->store, f.id));
            else if (f.node[0])
                snprintf(node, sizeof node, "%s", f.node), found = strrchr(f.id, '.') + 1;
        }
        if (!found) {
            snprintf(msg, msgsz, "There is no volume named \"%.64s\" (Volume.create makes one).", name->valuestring);
            st = 400;
            break;
        }
        /* one sandbox's volumes are one node's: it binds them from its disk */
        if (m->n && strcmp(node, m->holder)) {
            snprintf(msg, msgsz, "The volumes \"%.64s\" and \"%.64s\" are on different nodes (%s and %s): one "
                     "sandbox can mount the volumes of one node only, since each lives on its node's disk.",
                     m->name[0], name->valuestring, m->holder[0] ? m->holder : r->cfg->node_name,
                     node[0] ? node : r->cfg->node_name);
            st = 400;
            break;
        }
        snprintf(m->holder, sizeof m->holder, "%s", node);
        for (size_t i = 0; i < m->n; i++)
            if (!strcmp(m->path[i], path->valuestring))
                st = 400;
        if (st) {
            snprintf(msg, msgsz, "Two volumes are mounted at %.200s.", path->valuestring);
            break;
        }
        snprintf(m->id[m->n], sizeof m->id[0], "%s", found);
        snprintf(m->name[m->n], sizeof m->name[0], "%s", name->valuestring);
        snprintf(m->path[m->n], sizeof m->path[0], "%s", path->valuestring);
        m->n++;
    }
    cJSON_Delete(resp);
    return st;
}

/* The forwarded create's answer, capped */
typedef struct lb_e2b_fwd {
    lb_buf body;
    int over;
} lb_e2b_fwd;

static size_t lb_e2b_fwd_write(char *p, size_t sz, size_t n, void *arg)
{
    lb_e2b_fwd *f = arg;
    if (lb_buf_append(&f->body, p, sz * n) != LB_OK) {
        f->over = 1;
        return 0; /* past the cap: curl stops */
    }
    return sz * n;
}

/* Adds "Name: value" of the caller's header param (a CGI name) to h */
static int lb_e2b_fwd_hdr(lb_req *r, struct curl_slist **h, const char *param, const char *name)
{
    const char *v = lb_http_param(r, param);
    if (!v)
        return 1;
    if (strlen(v) > 4096 || strpbrk(v, "\r\n"))
        return 0;
    char line[4200];
    snprintf(line, sizeof line, "%s: %s", name, v);
    struct curl_slist *n = curl_slist_append(*h, line);
    if (n)
        *h = n;
    return n != NULL;
}

void lb_e2b_mounts_elsewhere(lb_req *r, const cJSON *body, const lb_e2b_mounts *m)
{
    char msg[900];
    const char *fwd = lb_http_param(r, "HTTP_X_LLMBOX_NODE");
    if (fwd || !r->cfg->cluster_url[0]) {
        snprintf(msg, sizeof msg, "The volume \"%s\" is held by node %s, not by this web (%s%s): %s", m->name[0],
                 m->holder, r->cfg->node_name[0] ? "node " : "no node_name", r->cfg->node_name,
                 fwd ? "this request was forwarded already (X-Llmbox-Node), and is not forwarded again; send the "
                       "create through the balancer with X-Llmbox-Node naming the holder."
                     : "set cluster_url (the balancer's URL) on the webs so that they forward such a create to the "
                       "holder, or send it through the balancer with X-Llmbox-Node naming the holder.");
        lb_e2b_vol_misdirected(r, m->holder, msg);
        return;
    }
    char url[sizeof r->cfg->cluster_url + LB_WEB_URI_MAX + 8], node_hdr[96];
    const char *base = r->cfg->cluster_url;
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        bl--;
    snprintf(url, sizeof url, "%.*s%s%s%s", (int)bl, base, r->path, r->query[0] ? "?" : "", r->query);
    snprintf(node_hdr, sizeof node_hdr, "X-Llmbox-Node: %s", m->holder);
    char *json = cJSON_PrintUnformatted(body);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL, *h2 = curl_slist_append(NULL, node_hdr);
    h = h2 ? curl_slist_append(h2, "Content-Type: application/json") : NULL;
    /* no "Expect: 100-continue" (libcurl's for larger bodies): it would wait up to a second for the go-ahead */
    h = h ? curl_slist_append(h, "Expect:") : NULL;
    if (!h)
        curl_slist_free_all(h2);
    /* the caller's Host too: the holder's web checks it (allowed_hosts)
     * as this one did, and cluster_url's own name need not be allowed */
    int ok = json && c && h && lb_e2b_fwd_hdr(r, &h, "HTTP_X_API_KEY", "X-API-KEY") &&
             lb_e2b_fwd_hdr(r, &h, "HTTP_AUTHORIZATION", "Authorization") && lb_e2b_fwd_hdr(r, &h, "HTTP_HOST", "Host");
    lb_e2b_fwd f = {.over = 0};
    lb_buf_init(&f.body, LB_E2B_FWD_ANSWER_MAX);
    char *ctype = NULL;
    long code = 0;
    CURLcode cr = CURLE_OK;
    if (ok) {
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, lb_e2b_fwd_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, LB_E2B_FWD_CONNECT_S);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, LB_E2B_FWD_TIMEOUT_S);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L); /* a create's answer is relayed as it is */
        cr = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ctype);
    }
    if (!ok) {
        lb_e2b_error(r, 500, "The create cannot be forwarded to node %s: out of memory, or a header too long.",
                     m->holder);
    } else if (f.over) {
        lb_e2b_error(r, 502, "Node %s's answer to the forwarded create is over %u bytes.", m->holder,
                     LB_E2B_FWD_ANSWER_MAX);
    } else if (cr != CURLE_OK || code < 100 || code > 599) {
        lb_e2b_error(r, 502, "The balancer at %s (cluster_url) did not answer the create forwarded to node %s, "
                             "which holds the volume \"%s\": %s.", r->cfg->cluster_url, m->holder, m->name[0],
                     cr != CURLE_OK ? curl_easy_strerror(cr) : "no HTTP status");
    } else {
        char extra[128];
        snprintf(extra, sizeof extra, "Content-Length: %zu\r\n", f.body.len);
        /* only a JSON answer's type is relayed as it is */
        lb_http_head(r, (int)code, ctype && !strncmp(ctype, "application/json", 16) ? "application/json"
                                                                                   : "text/plain; charset=utf-8",
                     extra);
        if (!r->is_head && f.body.len)
            FCGX_PutStr(f.body.data, (int)f.body.len, r->fcgi->out);
    }
    lb_buf_free(&f.body);
    curl_slist_free_all(h);
    if (c)
        curl_easy_cleanup(c);
    cJSON_free(json);
}

int lb_e2b_mounts_apply(lb_req *r, struct lb_sbx *s, const lb_e2b_mounts *m, char *msg, size_t msgsz)
{
    for (size_t i = 0; i < m->n; i++) {
        char err[1400];
        if (lb_sbx_lock(s, msg, msgsz) != LB_OK)
            return 404;
        int rc = s->conn && s->sbx_id[0] ? lbsb_volume_mount(s->conn, s->sbx_id, m->id[i], m->path[i], err, sizeof err)
                                         : LB_E_NOTFOUND;
        lb_sbx_unlock(s);
        if (rc != LB_OK) {
            snprintf(msg, msgsz, "The volume \"%s\" could not be mounted at %.200s: %s", m->name[i], m->path[i], err);
            return lb_e2b_vol_status(rc);
        }
    }
    return 0;
}

/* getInfo's volumeMounts: a ring of the last sandboxes made with mounts */
static struct {
    char id[LB_NODE_ID_MAX + 1];
    lb_e2b_mounts *m;
} g_kept[LB_E2B_MOUNTS_KEPT];
static size_t g_kept_next;
static pthread_mutex_t g_kept_mu = PTHREAD_MUTEX_INITIALIZER;

void lb_e2b_mounts_remember(const char *id, const lb_e2b_mounts *m)
{
    if (!m->n || strlen(id) > LB_NODE_ID_MAX)
        return;
    lb_e2b_mounts *copy = malloc(sizeof *copy);
    if (!copy)
        return; /* getInfo then shows none: the mounts themselves are in place */
    *copy = *m;
    pthread_mutex_lock(&g_kept_mu);
    size_t i = g_kept_next++ % LB_E2B_MOUNTS_KEPT;
    free(g_kept[i].m);
    snprintf(g_kept[i].id, sizeof g_kept[i].id, "%s", id);
    g_kept[i].m = copy;
    pthread_mutex_unlock(&g_kept_mu);
}

int lb_e2b_mounts_shape(const char *id, cJSON *o)
{
    cJSON *arr = cJSON_AddArrayToObject(o, "volumeMounts");
    if (!arr)
        return 0;
    int ok = 1;
    pthread_mutex_lock(&g_kept_mu);
    for (size_t i = 0; id && i < LB_E2B_MOUNTS_KEPT; i++) {
        if (!g_kept[i].m || strcmp(g_kept[i].id, id))
            continue;
        for (size_t k = 0; ok && k < g_kept[i].m->n; k++) {
            cJSON *one = cJSON_CreateObject();
            ok = one && cJSON_AddStringToObject(one, "name", g_kept[i].m->name[k]) &&
                 cJSON_AddStringToObject(one, "path", g_kept[i].m->path[k]) && cJSON_AddItemToArray(arr, one);
            if (!ok)
                cJSON_Delete(one);
        }
        break;
    }
    pthread_mutex_unlock(&g_kept_mu);
    return ok;
}
