/* E2B's control plane over the API sandboxes (e2b_api.h). */
#include "e2b/e2b_api.h"

#include "e2b/e2b_connect.h"
#include "e2b/e2b_envd.h"
#include "e2b/e2b_fork.h"
#include "e2b/e2b_metrics.h"
#include "e2b/e2b_network.h"
#include "e2b/e2b_snapshot_info.h"
#include "e2b/e2b_template.h"
#include "e2b/e2b_volume.h"
#include "sbxapi/handlers_sandbox_pause.h"
#include "sbxapi/handlers_sandboxes.h"
#include "llmbox/sandbox.h"
#include "web/http.h"
#include "web/req_body.h"
#include "sbxapi/sandbox_leases.h"
#include "sbxapi/sandbox_node.h" /* several nodes */
#include "sbxapi/sandbox_owner.h"
#include "sbxapi/sandbox_registry.h"
#include "sbxapi/sandbox_rows.h" /* several nodes */
#include "sbxapi/sandbox_spec.h"
#include "sbxapi/snapshot_records.h"

#include "common/config.h"
#include "common/log.h"
#include "common/node_id.h" /* several nodes */
#include "common/token.h"
#include "common/util.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LB_E2B_DEFAULT_TIMEOUT_S 300  /* E2B's default sandbox timeout */
#define LB_E2B_KEY_MAX 4096
#define LB_E2B_PAGE_MAX 1000          /* sandboxes in one list page */
#define LB_E2B_QUERY_MAX 8192

int lb_e2b_auth_ok(lb_req *r)
{
    if (!strncmp(r->path, "/e2b/sandbox/", 13))
        return 1;
    if (lb_e2b_tpl_is_upload(r->path)) /* the URL's one-time token is checked there (e2b_template.h) */
        return 1;
    const char *want = r->cfg->sandbox_api_token;
    if (!want[0]) {
        lb_e2b_error(r, 403, "The sandbox API (and with it E2B's) is turned off because no token is configured: set "
                             "LLMBOX_SANDBOX_API_TOKEN for `llmbox web` and use it as E2B_API_KEY.");
        return 0;
    }
    const char *got = lb_http_param(r, "HTTP_X_API_KEY");
    char a[LB_SHA256_HEX], b[LB_SHA256_HEX];
    r->user = NULL;
    /* a user's own API token: that user's sandboxes only (sandbox_owner.h) */
    const lb_user_cfg *u = got && *got && strlen(got) <= LB_TOKEN_MAX ? lb_cfg_user_by_token(r->cfg, got, strlen(got)) : NULL;
    if (u) {
        r->user = u;
        return 1;
    }
    /* digests, so neither the key's content nor its length shows in the time */
    if (!got || !*got || strlen(got) > LB_E2B_KEY_MAX || lb_sha256_hex(got, strlen(got), a) != LB_OK ||
        lb_sha256_hex(want, strlen(want), b) != LB_OK || !lb_ct_equal(a, b, 64)) {
        lb_e2b_error(r, 401, "%s",
                     got && *got ? "The X-API-KEY is neither this server's sandbox API token (LLMBOX_SANDBOX_API_TOKEN) nor a user's API token."
                                 : "Send the sandbox API token (LLMBOX_SANDBOX_API_TOKEN) as X-API-KEY: set E2B_API_KEY.");
        return 0;
    }
    return 1;
}

/* ---- shapes ---- */

/* {sandboxID, templateID, clientID, envdVersion, envdAccessToken,
 * trafficAccessToken} of create and connect; the traffic token (what
 * reaches the sandbox's ports, e2b_port.h) is the same one */
cJSON *lb_e2b_created(lb_req *r, lb_sbx *s, const char *template_id)
{
    char tok[LB_SHA256_HEX];
    if (lb_e2b_access_token(r->cfg, s->id, tok, sizeof tok) != LB_OK)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (o && (!cJSON_AddStringToObject(o, "sandboxID", s->id) || !cJSON_AddStringToObject(o, "templateID", template_id) ||
              !cJSON_AddStringToObject(o, "clientID", "llmbox") ||
              !cJSON_AddStringToObject(o, "envdVersion", LB_E2B_ENVD_VERSION) ||
              !cJSON_AddStringToObject(o, "envdAccessToken", tok) ||
              !cJSON_AddStringToObject(o, "trafficAccessToken", tok))) {
        cJSON_Delete(o);
        o = NULL;
    }
    return o;
}

/* getInfo's and list's shape from the API sandbox's status object. */
static cJSON *lb_e2b_info(const cJSON *st)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(st, "spec");
    const cJSON *image = cJSON_GetObjectItemCaseSensitive(spec, "image");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(spec, "resources");
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(res, "cpu");
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(res, "memory_mib");
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(st, "metadata");
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "sandboxID", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "id"))) &&
             cJSON_AddStringToObject(o, "templateID", cJSON_IsString(image) ? image->valuestring : "default") &&
             cJSON_AddStringToObject(o, "clientID", "llmbox") &&
             cJSON_AddItemToObject(o, "metadata", md ? cJSON_Duplicate(md, 1) : cJSON_CreateObject()) &&
             cJSON_AddStringToObject(o, "startedAt", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "created_at"))) &&
             cJSON_AddStringToObject(o, "endAt", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "expires_at"))) &&
             cJSON_AddStringToObject(o, "state", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "paused")) ? "paused"
                                                                                                              : "running") &&
             cJSON_AddNumberToObject(o, "cpuCount", cJSON_IsNumber(cpu) && cpu->valuedouble >= 1 ? cpu->valuedouble : 1) &&
             cJSON_AddNumberToObject(o, "memoryMB", cJSON_IsNumber(mem) ? mem->valuedouble : 0) &&
             cJSON_AddStringToObject(o, "envdVersion", LB_E2B_ENVD_VERSION) &&
             lb_e2b_mounts_shape(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "id")), o);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The id of /e2b/sandboxes/<id>[/...] or /e2b/v2/sandboxes/<id>[/...]
 * into id, the rest ("" or "/timeout") into *rest; 0 if not that shape. */
static int lb_e2b_sbx_path(const char *path, char id[LB_NODE_ID_MAX + 1], const char **rest)
{
    const char *p = !strncmp(path, "/e2b/v2/sandboxes/", 18) ? path + 18
                  : !strncmp(path, "/e2b/sandboxes/", 15)    ? path + 15
                                                              : NULL;
    if (!p)
        return 0;
    size_t n = strcspn(p, "/");
    if (n > LB_NODE_ID_MAX) /* several nodes: "[<node>.]<32 hex>", checked by lb_e2b_get */
        n = 0;
    memcpy(id, p, n);
    id[n] = '\0';
    *rest = p + strcspn(p, "/");
    return 1;
}

/* The sandbox of id, or answers E2B's 404 and returns NULL. */
static lb_sbx *lb_e2b_get(lb_req *r, const char *id)
{
    char msg[512] = "There is no sandbox with that id: sandbox ids are 32 lowercase hexadecimal characters, "
                    "prefixed with the node's name and a dot in a cluster.";
    char node[LB_NODE_ID_NAME_MAX + 1];
    if (lb_node_id_valid(id) && !lb_sbx_id_mine(r->cfg->node_name, id, node, sizeof node)) {
        lb_sbx_id_elsewhere_msg(r->cfg->node_name, id, node, msg, sizeof msg); /* several nodes: sandbox_node.h */
        lb_e2b_error(r, 421, "%s", msg);
        return NULL;
    }
    lb_sbx *s = lb_node_id_valid(id) ? lb_sbx_get(id, msg, sizeof msg) : NULL;
    if (!s)
        lb_e2b_error(r, 404, "%s", msg);
    return s;
}

/* The timeout field (seconds) of a body: its value, def when absent, -1
 * (answered 400) when not a whole number in 1..max. */
static int lb_e2b_timeout(lb_req *r, const cJSON *body, int def, int max)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "timeout");
    if (!t || cJSON_IsNull(t))
        return def;
    if (!cJSON_IsNumber(t) || t->valuedouble < 1 || t->valuedouble > max || t->valuedouble != (int)t->valuedouble) {
        lb_e2b_error(r, 400, "timeout must be a whole number of seconds from 1 to %d (LLMBOX_SANDBOX_API_TTL_MAX_S).",
                     max);
        return -1;
    }
    return (int)t->valuedouble;
}

/* ---- POST /v2/sandboxes ---- */

static void lb_e2b_create(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    char msg[1400] = "";
    lb_sbx_spec sp;
    memset(&sp, 0, sizeof sp);
    cJSON *spec = NULL, *out = NULL;
    lb_sbx *s = NULL;
    cJSON *body = lb_req_json(r, (size_t)cfg->sandbox_api_body_bytes, "sandbox spec");
    if (!body)
        return;
    const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(body, "templateID");
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(body, "metadata");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(body, "envVars");
    const char *tname = cJSON_IsString(tpl) ? tpl->valuestring : "base";
    /* mcp: the SDK itself starts E2B's mcp-gateway in the sandbox once it
     * is made (commands.run as root), and kills the sandbox when that
     * fails; the API has nothing to do but take the object */
    const cJSON *mcp = cJSON_GetObjectItemCaseSensitive(body, "mcp");
    if (mcp && !cJSON_IsNull(mcp) && !cJSON_IsObject(mcp)) {
        lb_e2b_error(r, 400, "mcp must be an object of MCP servers (E2B's mcp-gateway configuration).");
        goto out;
    }
    /* autoPause (lifecycle onTimeout 'pause'): paused at the timeout; its
     * memory is always kept (sandboxd's freeze), and only a connect resumes */
    int auto_pause = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "autoPause"));
    const cJSON *apm = cJSON_GetObjectItemCaseSensitive(body, "autoPauseMemory");
    const cJSON *ar = cJSON_GetObjectItemCaseSensitive(body, "autoResume");
    /* keepMemory: false: its processes end at the pause (lb_sbx_pause_drop) */
    int auto_pause_drop = auto_pause && cJSON_IsFalse(apm);
    /* autoResume: envd calls and port traffic resume it when paused
     * (lb_e2b_auto_resume); only with a pause that keeps its memory, as E2B */
    int auto_resume = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ar, "enabled"));
    if (auto_resume && (!auto_pause || auto_pause_drop)) {
        lb_e2b_error(r, 400, "autoResume needs autoPause (lifecycle onTimeout 'pause') with its memory kept: "
                             "traffic cannot resume a sandbox whose processes ended; Sandbox.connect does.");
        goto out;
    }
    /* network.allowPublicTraffic: E2B's ports are public unless false;
     * llmbox's need the traffic token unless the caller says true, or
     * the operator chose E2B's default (e2b_ports_public) and the caller
     * did not say false */
    const cJSON *netb = cJSON_GetObjectItemCaseSensitive(body, "network");
    const cJSON *pub = cJSON_IsObject(netb) ? cJSON_GetObjectItemCaseSensitive(netb, "allowPublicTraffic") : NULL;
    if (pub && !cJSON_IsNull(pub) && !cJSON_IsBool(pub)) {
        lb_e2b_error(r, 400, "network.allowPublicTraffic must be true or false.");
        goto out;
    }
    char mask[LB_SBX_MASK_HOST_MAX];
    if (lb_e2b_mask_host_check(cJSON_IsObject(netb) ? cJSON_GetObjectItemCaseSensitive(netb, "maskRequestHost") : NULL,
                               mask, sizeof mask, msg, sizeof msg) != LB_OK) {
        lb_e2b_error(r, 400, "%s", msg);
        goto out;
    }
    int ttl = lb_e2b_timeout(r, body, LB_E2B_DEFAULT_TIMEOUT_S, cfg->sandbox_api_ttl_max_s);
    if (ttl < 0)
        goto out;
    /* volumeMounts: the key's own volumes by name, checked before anything starts */
    lb_e2b_mounts mounts;
    int vst = lb_e2b_mounts_parse(r, body, &mounts, msg, sizeof msg);
    if (vst) {
        lb_e2b_error(r, vst, "%s", msg);
        goto out;
    }
    if (mounts.holder[0]) { /* several nodes: another node's volumes, made there (e2b_volume.h) */
        lb_e2b_mounts_elsewhere(r, body, &mounts);
        goto out;
    }
    /* the llmbox spec it means: E2B's default template is the default image */
    /* a snapshot's id as the template (E2B's Sandbox.create(snapshotId)):
     * the sandbox API's snapshot, on the default image it was taken of */
    int snap = lb_node_id_valid(tname);
    spec = cJSON_CreateObject();
    if (!spec || !cJSON_AddNumberToObject(spec, "ttl_s", ttl) ||
        (snap && !cJSON_AddStringToObject(spec, "snapshot", tname)) ||
        (!snap && strcmp(tname, "base") && !cJSON_AddStringToObject(spec, "image", tname)) ||
        (cJSON_IsObject(md) && !cJSON_AddItemToObject(spec, "metadata", cJSON_Duplicate(md, 1))) ||
        (cJSON_IsObject(env) && !cJSON_AddItemToObject(spec, "env", cJSON_Duplicate(env, 1)))) {
        lb_e2b_error(r, 500, "Out of memory.");
        goto out;
    }
    /* E2B's network options: e2b_network.h */
    cJSON *net = NULL, *net_fb = NULL;
    char *net_values = NULL; /* transforms' values: only ever in sp.net_values, for sandboxd */
    int nrc = lb_e2b_network_map(cJSON_GetObjectItemCaseSensitive(body, "allow_internet_access"), netb, &net,
                                 &net_fb, &net_values, msg, sizeof msg);
    if (nrc == LB_OK && net_values)
        nrc = lb_e2b_transforms_admit(net_values, cfg->network_egress_max,
                                      r->user ? r->user->network_egress_max : NULL, msg, sizeof msg);
    if (nrc != LB_OK) {
        lb_free_wiped(net_values);
        cJSON_Delete(net);
        cJSON_Delete(net_fb);
        lb_e2b_error(r, nrc == LB_E_NOMEM ? 500 : nrc == LB_E_DENIED ? 403 : 400, "%s", msg);
        goto out;
    }
    cJSON_AddItemToObject(spec, "network", net);
    int rc = lb_sbx_spec_parse(spec, cfg, r->user, &sp, msg, sizeof msg);
    /* E2B's SDK sends allow_internet_access true on every create that does
     * not say false (E2B's default: the internet). Where the operator's
     * ceiling has no "*", that default is a gateway that allows nothing
     * yet (so updateNetwork can add rules later), and where it allows no
     * rules at all, this service's own (no network): not a refusal of
     * every create. Rules the caller listed are still held to it. */
    if (rc == LB_E_DENIED && net_fb) {
        lb_sbx_spec_free(&sp);
        memset(&sp, 0, sizeof sp);
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "network");
        cJSON_AddItemToObject(spec, "network", net_fb);
        net_fb = NULL; /* spec's now */
        rc = lb_sbx_spec_parse(spec, cfg, r->user, &sp, msg, sizeof msg);
        if (rc == LB_E_DENIED) {
            lb_sbx_spec_free(&sp);
            memset(&sp, 0, sizeof sp);
            cJSON_DeleteItemFromObjectCaseSensitive(spec, "network");
            rc = lb_sbx_spec_parse(spec, cfg, r->user, &sp, msg, sizeof msg);
        }
    }
    cJSON_Delete(net_fb);
    if (rc == LB_OK) {
        sp.net_values = net_values; /* the spec's now: wiped and freed with it */
        net_values = NULL;
    }
    lb_free_wiped(net_values);
    if (rc) {
        lb_e2b_error(r, rc == LB_E_TOOBIG ? 413 : rc == LB_E_DENIED ? 403 : 400, "%s", msg);
        goto out;
    }
    lb_sbx_quota_ticket qt;
    int retry_s = 0, st = lb_sbx_owner_quota(r, &sp, &qt, msg, sizeof msg, &retry_s);
    if (st) { /* E2B's 429 is {code, message} (the SDK's RateLimitError), waited out by Retry-After */
        char hdr[64] = "";
        if (retry_s)
            snprintf(hdr, sizeof hdr, "Retry-After: %d\r\n", retry_s);
        cJSON *eo = cJSON_CreateObject();
        if (eo && cJSON_AddNumberToObject(eo, "code", st) && cJSON_AddStringToObject(eo, "message", msg))
            lb_http_json(r, st, eo, hdr[0] ? hdr : NULL);
        else
            lb_e2b_error(r, 500, "Out of memory.");
        cJSON_Delete(eo);
        goto out;
    }
    st = lb_sbx_open(cfg, &sp, cfg->sandbox_api_ttl_max_s, &s, msg, sizeof msg);
    if (st)
        lb_sbx_owner_refund(r, &qt);
    if (st == 400 && strcmp(tname, "base") && !snap) {
        lb_e2b_error(r, 400, "%s The template \"%.64s\" must be the name of an llmbox image (images/), or of a "
                             "template built with Template.build (docs/E2B.md).",
                     msg, tname);
        goto out;
    }
    if (st) {
        lb_e2b_error(r, st, "%s", msg);
        goto out;
    }
    if ((vst = lb_e2b_mounts_apply(r, s, &mounts, msg, sizeof msg)) != 0) {
        LB_IGNORE(lb_sbx_remove(s->id, LB_SBX_GONE_FAILED)); /* a sandbox without its volumes is not what was asked */
        lb_e2b_error(r, vst, "%s", msg);
        goto out;
    }
    lb_e2b_mounts_remember(s->id, &mounts);
    if (auto_pause) { /* sandboxd's own end (its TTL, set to the API's maximum) bounds it */
        int64_t created_ms, end_ms;
        lb_sbx_times(s, &created_ms, &end_ms);
        if (auto_pause_drop)
            lb_sbx_set_auto_pause_drop(s, created_ms + (int64_t)cfg->sandbox_api_ttl_max_s * 1000);
        else
            lb_sbx_set_auto_pause(s, created_ms + (int64_t)cfg->sandbox_api_ttl_max_s * 1000);
        if (auto_resume)
            lb_sbx_set_auto_resume(s);
    }
    if (cJSON_IsTrue(pub) || (cfg->e2b_ports_public && !cJSON_IsFalse(pub)))
        lb_sbx_set_public_ports(s);
    if (mask[0])
        lb_sbx_set_mask_host(s, mask);
    if (auto_pause || mask[0] || lb_sbx_public_ports_of(s))
        lb_sbx_lease_save(s); /* the record again, with them: a restart of the web keeps them */
    out = lb_e2b_created(r, s, tname);
    if (!out) {
        LB_IGNORE(lb_sbx_remove(s->id, LB_SBX_GONE_FAILED)); /* nobody would know its id; already gone is fine */
        lb_e2b_error(r, 500, "Out of memory.");
        goto out;
    }
    lb_http_json(r, 201, out, NULL);
out:
    cJSON_Delete(out);
    cJSON_Delete(spec);
    lb_sbx_spec_free(&sp);
    cJSON_Delete(body);
    lb_sbx_put(s);
}

/* ---- GET /v2/sandboxes ---- */

/* Whether st's metadata holds every k=v of filter (E2B's form: pairs
 * joined by '&', each side URL-encoded once more by the SDK). */
static int lb_e2b_md_match(const cJSON *st, const char *filter)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(st, "metadata");
    char buf[LB_E2B_QUERY_MAX];
    snprintf(buf, sizeof buf, "%s", filter);
    char *save = NULL;
    for (char *pair = strtok_r(buf, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(pair, '=');
        if (!eq)
            return 0;
        *eq = '\0';
        char k1[LB_E2B_QUERY_MAX], k2[LB_E2B_QUERY_MAX], v1[LB_E2B_QUERY_MAX], v2[LB_E2B_QUERY_MAX];
        size_t n;
        if (lb_url_decode(pair, strlen(pair), k1, sizeof k1, &n, 1) || memchr(k1, 0, n) ||
            lb_url_decode(k1, n, k2, sizeof k2, &n, 0) || memchr(k2, 0, n) ||
            lb_url_decode(eq + 1, strlen(eq + 1), v1, sizeof v1, &n, 1) || memchr(v1, 0, n) ||
            lb_url_decode(v1, n, v2, sizeof v2, &n, 0) || memchr(v2, 0, n))
            return 0;
        const cJSON *have = cJSON_GetObjectItemCaseSensitive(md, k2);
        if (!cJSON_IsString(have) || strcmp(have->valuestring, v2))
            return 0;
    }
    return 1;
}

/* Milliseconds since the epoch of an RFC 3339 time ("2026-01-02T03:04:05Z",
 * fractions and a "+hh:mm" offset allowed: what the SDK's toISOString()
 * sends, and what other clients may). LB_E_INVAL if it is not one. */
static LB_MUST_CHECK int lb_e2b_rfc3339_ms(const char *t, int64_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int y, mo, d, h, mi, sec, n = 0;
    if (strlen(t) > 64 || sscanf(t, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19 ||
        y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return LB_E_INVAL;
    const char *p = t + n;
    int64_t frac = 0, scale = 1000;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return LB_E_INVAL;
        for (; *p >= '0' && *p <= '9'; p++)
            if (scale > 1)
                frac += (int64_t)(*p - '0') * (scale /= 10);
    }
    int off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om, m = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &m) != 2 || m != 5 || oh > 23 || om > 59)
            return LB_E_INVAL;
        off = (*p == '-' ? -1 : 1) * (oh * 3600 + om * 60);
        p += 6;
    } else {
        return LB_E_INVAL;
    }
    if (*p)
        return LB_E_INVAL;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    time_t secs = timegm(&tm);
    if (secs == (time_t)-1)
        return LB_E_INVAL;
    *out = ((int64_t)secs - off) * 1000 + frac;
    return LB_OK;
}

/* One sandbox the list keeps, with what it is sorted by. */
typedef struct {
    int64_t started_ms;
    cJSON *full;
} lb_e2b_listed;

static int lb_e2b_listed_asc(const void *a, const void *b)
{
    const lb_e2b_listed *x = a, *y = b;
    if (x->started_ms != y->started_ms)
        return x->started_ms < y->started_ms ? -1 : 1;
    /* same millisecond: by id, so that pages never repeat or skip one */
    return strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x->full, "id")),
                  cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(y->full, "id")));
}

static int lb_e2b_listed_desc(const void *a, const void *b)
{
    return -lb_e2b_listed_asc(a, b);
}

/* Whether a sandbox's status object is of template tpl: its image's name
 * (the default image's when the spec names none), or "base" (E2B's default
 * template) for the default image. */
static int lb_e2b_tpl_match(const lb_config *cfg, const cJSON *full, const char *tpl)
{
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(full, "spec"), "image");
    const char *name = cJSON_IsString(img) ? img->valuestring : cfg->default_image;
    return !strcmp(name, tpl) || (!strcmp(tpl, "base") && !strcmp(name, cfg->default_image));
}

/* GET /v2/sandboxes: E2B's list, newest first unless order=asc, filtered
 * by metadata, state (running and paused when absent: the SDK's default),
 * startedAfter and template, paged by nextToken (an offset into the
 * sorted list). */
static void lb_e2b_list(lb_req *r)
{
    char filter[LB_E2B_QUERY_MAX] = "", state[256] = "", num[32], order[16] = "desc", after[80] = "", tpl[256] = "";
    long long limit = 100, from = 0;
    int64_t after_ms = 0;
    int qa = lb_query_get(r->query, "startedAfter", after, sizeof after);
    int qt = lb_query_get(r->query, "template", tpl, sizeof tpl);
    int qo = lb_query_get(r->query, "order", order, sizeof order);
    if ((lb_query_get(r->query, "metadata", filter, sizeof filter) == LB_E_TOOBIG) ||
        (lb_query_get(r->query, "limit", num, sizeof num) == LB_OK && lb_parse_ll(num, 1, LB_E2B_PAGE_MAX, &limit)) ||
        (lb_query_get(r->query, "nextToken", num, sizeof num) == LB_OK && lb_parse_ll(num, 0, 1 << 30, &from)) ||
        qa == LB_E_TOOBIG || qt == LB_E_TOOBIG || qo == LB_E_TOOBIG ||
        (qa == LB_OK && lb_e2b_rfc3339_ms(after, &after_ms) != LB_OK) ||
        (qo == LB_OK && strcmp(order, "asc") && strcmp(order, "desc"))) {
        lb_e2b_error(r, 400, "Bad query: metadata at most %d bytes, limit 1 to %d, nextToken as this server gave it, "
                             "order asc or desc, startedAfter an RFC 3339 time, template at most %d bytes.",
                     LB_E2B_QUERY_MAX, LB_E2B_PAGE_MAX, (int)sizeof tpl - 1);
        return;
    }
    if (lb_query_get(r->query, "state", state, sizeof state) != LB_OK)
        snprintf(state, sizeof state, "running,paused");
    lb_http_drain(r);
    /* several nodes: in a cluster every node's, from the store (sandbox_rows.h),
     * each with its spec */
    int cluster = r->cfg->node_name[0] != '\0';
    cJSON *all = NULL;
    /* a user's token: that user's sandboxes of every node (each row records its owner) */
    int rc = cluster ? lb_sbx_rows_list_of(r->store, r->cfg, r->user ? lb_sbx_owner_name(r) : NULL, 1, &all)
             : (all = lb_sbx_list_json_of(lb_sbx_owner_name(r))) ? LB_OK : LB_E_NOMEM;
    const cJSON *arr = rc ? NULL : cJSON_GetObjectItemCaseSensitive(all, "sandboxes");
    int cap = cJSON_GetArraySize(arr), kept = 0;
    lb_e2b_listed *keep = rc ? NULL : calloc((size_t)(cap > 0 ? cap : 1), sizeof *keep);
    cJSON *out = keep ? cJSON_CreateArray() : NULL;
    if (!out) {
        free(keep);
        cJSON_Delete(all);
        if (rc && rc != LB_E_NOMEM)
            lb_e2b_error(r, 503, "Cannot list the cluster's sandboxes: the store answered: %s.", lb_strerror(rc));
        else
            lb_e2b_error(r, 500, "Out of memory.");
        return;
    }
    const cJSON *it;
    int want_running = strstr(state, "running") != NULL, want_paused = strstr(state, "paused") != NULL;
    cJSON_ArrayForEach(it, arr)
    {
        int paused = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "paused"));
        if (kept >= cap || !(paused ? want_paused : want_running) ||
            strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "status")), "running"))
            continue;
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "id"));
        char msg[400];
        cJSON *full = NULL;
        if (cluster) {
            full = cJSON_Duplicate(it, 1);
        } else {
            lb_sbx *s = id ? lb_sbx_get(id, msg, sizeof msg) : NULL;
            full = s ? lb_sbx_json(s) : NULL;
            lb_sbx_put(s);
        }
        const char *at = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(full, "created_at"));
        int64_t ms = 0;
        if (!full || !at || lb_e2b_rfc3339_ms(at, &ms) != LB_OK || ms < after_ms ||
            (filter[0] && !lb_e2b_md_match(full, filter)) || (tpl[0] && !lb_e2b_tpl_match(r->cfg, full, tpl)) ||
            !cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(full, "id"))) {
            cJSON_Delete(full);
            continue;
        }
        keep[kept].started_ms = ms;
        keep[kept++].full = full;
    }
    qsort(keep, (size_t)kept, sizeof *keep, strcmp(order, "asc") ? lb_e2b_listed_desc : lb_e2b_listed_asc);
    long long next = from + limit < kept ? from + limit : -1;
    for (long long i = from; i < kept && i < from + limit; i++) {
        cJSON *e = lb_e2b_info(keep[i].full);
        if (e)
            cJSON_AddItemToArray(out, e);
    }
    for (int i = 0; i < kept; i++)
        cJSON_Delete(keep[i].full);
    free(keep);
    char extra[64] = "";
    if (next >= 0)
        snprintf(extra, sizeof extra, "X-Next-Token: %lld\r\n", next);
    lb_http_json(r, 200, out, extra[0] ? extra : NULL);
    cJSON_Delete(all);
    cJSON_Delete(out);
}

/* ---- snapshots: the sandbox API's (handlers_sandbox_pause.h) ---- */

/* POST /sandboxes/{id}/snapshots: sbx.createSnapshot(); the id is what
 * Sandbox.create(snapshotId) starts from. */
static void lb_e2b_snapshot(lb_req *r, lb_sbx *s)
{
    char id[LB_NODE_ID_MAX + 1], state[LB_SNAPSHOT_STATE_MAX], err[512] = "", msg[1400];
    lb_e2b_snap_info info;
    memset(&info, 0, sizeof info);
    /* {name?}: the SDK's createSnapshot({name}); no body is no name */
    lb_buf b;
    if (lb_req_body(r, 4096, &b, "snapshot request") != LB_OK)
        return;
    cJSON *body = NULL;
    int jrc = LB_OK;
    if (b.len && !(body = lb_json_parse_checked(b.data, b.len, "snapshot request", 64, 4, &jrc, msg, sizeof msg))) {
        lb_buf_free(&b);
        lb_e2b_error(r, jrc == LB_E_NOMEM ? 500 : 400, "%s", msg);
        return;
    }
    lb_buf_free(&b);
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(body, "name");
    if ((body && !cJSON_IsObject(body)) || (nm && !cJSON_IsNull(nm) && !cJSON_IsString(nm)) ||
        (cJSON_IsString(nm) && !lb_e2b_snap_name_ok(nm->valuestring))) {
        cJSON_Delete(body);
        lb_e2b_error(r, 400, "A snapshot's name is 1 to %d of letters, digits, '.', '_' and '-'.",
                     LB_E2B_SNAP_NAME_MAX);
        return;
    }
    if (cJSON_IsString(nm))
        snprintf(info.name, sizeof info.name, "%s", nm->valuestring);
    cJSON_Delete(body);
    if (lb_node_id_new(r->cfg->node_name, id, sizeof id) != LB_OK) {
        lb_e2b_error(r, 500, "No randomness for a snapshot id.");
        return;
    }
    lb_snapshot_state_name(id, state, sizeof state);
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        lb_e2b_error(r, 404, "%s", msg);
        return;
    }
    uint64_t bytes = 0, files = 0;
    int rc = lbsb_save(s->conn, s->sbx_id, state, 0, &bytes, &files, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        int st = lb_sbx_rpc_fail(s, rc, "snapshot", err, msg, sizeof msg);
        lb_e2b_error(r, st == 404 ? 404 : st >= 400 && st < 600 ? st : 500, "%s", msg);
        return;
    }
    lb_info("web: e2b: snapshot %s of %s (%llu bytes)", id, s->id, (unsigned long long)bytes);
    lb_snapshot_owner_save(r, id);
    snprintf(info.sandbox, sizeof info.sandbox, "%s", s->id);
    lb_e2b_snap_info_save(r, id, &info);
    cJSON *o = cJSON_CreateObject(), *names = o ? cJSON_AddArrayToObject(o, "names") : NULL;
    if (!names || !cJSON_AddStringToObject(o, "snapshotID", id) ||
        (info.name[0] && !cJSON_AddItemToArray(names, cJSON_CreateString(info.name)))) {
        cJSON_Delete(o);
        lb_e2b_error(r, 500, "Out of memory.");
        return;
    }
    lb_http_json(r, 201, o, NULL);
    cJSON_Delete(o);
}

/* GET /snapshots: Sandbox.listSnapshots(), the sandbox API's snapshots,
 * newest first, paged as the sandbox list (an offset in nextToken). */
static void lb_e2b_snapshots_list(lb_req *r)
{
    char num[32], sbx[LB_NODE_ID_MAX + 8], name[LB_E2B_SNAP_NAME_MAX + 8], err[512] = "";
    long long limit = 100, from = 0;
    /* listSnapshots({sandboxId, name}): by the records lb_e2b_snapshot kept */
    int qs = lb_query_get(r->query, "sandboxID", sbx, sizeof sbx);
    int qn = lb_query_get(r->query, "name", name, sizeof name);
    lb_http_drain(r);
    if ((lb_query_get(r->query, "limit", num, sizeof num) == LB_OK && lb_parse_ll(num, 1, LB_E2B_PAGE_MAX, &limit)) ||
        (lb_query_get(r->query, "nextToken", num, sizeof num) == LB_OK && lb_parse_ll(num, 0, 1 << 30, &from))) {
        lb_e2b_error(r, 400, "Bad query: limit 1 to %d, nextToken as this server gave it.", LB_E2B_PAGE_MAX);
        return;
    }
    if ((qs != LB_E_NOTFOUND && (qs != LB_OK || !lb_node_id_valid(sbx))) ||
        (qn != LB_E_NOTFOUND && (qn != LB_OK || !lb_e2b_snap_name_ok(name)))) {
        lb_e2b_error(r, 400, "Bad query: sandboxID is a sandbox's id, name 1 to %d of letters, digits, '.', '_' "
                             "and '-'.", LB_E2B_SNAP_NAME_MAX);
        return;
    }
    lbsb_conn *c = NULL;
    if (lbsb_connect(r->cfg->sandboxd_socket, NULL, &c, err, sizeof err) != LB_OK) {
        lb_e2b_error(r, 503, "The sandbox daemon cannot be reached: %s.", err);
        return;
    }
    lbsb_state *st = NULL;
    size_t n = 0;
    time_t asked = time(NULL);
    int rc = lbsb_state_list(c, &st, &n, err, sizeof err);
    lbsb_close(c);
    if (rc) {
        lb_e2b_error(r, 503, "The sandbox daemon could not list the snapshots: %s.", err);
        return;
    }
    lb_snapshot_records_drop_unlisted(r->cfg, st, n, asked); /* of snapshots that expired by age */
    /* the API's only (other states of the web's uid are no snapshots), newest first */
    size_t pl = strlen(LB_SNAPSHOT_PREFIX), kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(st[i].name, LB_SNAPSHOT_PREFIX, pl) || !lb_id_valid(st[i].name + pl))
            continue;
        char sid[LB_NODE_ID_MAX + 1];
        snprintf(sid, sizeof sid, "%s%s%s", r->cfg->node_name, r->cfg->node_name[0] ? "." : "", st[i].name + pl);
        if (!lb_snapshot_owner_sees(r, sid)) /* a user's token: that user's only */
            continue;
        lb_e2b_snap_info info;
        int irc = qs == LB_OK || qn == LB_OK ? lb_e2b_snap_info_load(r, sid, &info) : LB_E_NOTFOUND;
        if ((qs == LB_OK && (irc != LB_OK || strcmp(info.sandbox, sbx))) ||
            (qn == LB_OK && (irc != LB_OK || strcmp(info.name, name))))
            continue;
        st[kept++] = st[i];
    }
    for (size_t i = 1; i < kept; i++) /* insertion sort: at most the states sandboxd keeps */
        for (size_t j = i; j > 0 && (st[j].mtime > st[j - 1].mtime ||
                                     (st[j].mtime == st[j - 1].mtime && strcmp(st[j].name, st[j - 1].name) < 0)); j--) {
            lbsb_state t = st[j];
            st[j] = st[j - 1];
            st[j - 1] = t;
        }
    cJSON *out = cJSON_CreateArray();
    int ok = out != NULL;
    for (size_t i = (size_t)from; ok && i < kept && i < (size_t)(from + limit); i++) {
        char sid[LB_NODE_ID_MAX + 1]; /* named by this node, as when it was made */
        snprintf(sid, sizeof sid, "%s%s%s", r->cfg->node_name, r->cfg->node_name[0] ? "." : "", st[i].name + pl);
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(out, e)) {
            cJSON_Delete(e);
            ok = 0;
            break;
        }
        lb_e2b_snap_info info;
        cJSON *names = cJSON_AddArrayToObject(e, "names");
        ok = names && cJSON_AddStringToObject(e, "snapshotID", sid);
        if (ok && lb_e2b_snap_info_load(r, sid, &info) == LB_OK && info.name[0])
            ok = cJSON_AddItemToArray(names, cJSON_CreateString(info.name));
    }
    free(st);
    if (!ok) {
        cJSON_Delete(out);
        lb_e2b_error(r, 500, "Out of memory.");
        return;
    }
    char extra[64] = "";
    if ((size_t)(from + limit) < kept)
        snprintf(extra, sizeof extra, "X-Next-Token: %lld\r\n", from + limit);
    lb_http_json(r, 200, out, extra[0] ? extra : NULL);
    cJSON_Delete(out);
}

/* DELETE /templates/{snapshotID}: Sandbox.deleteSnapshot(); 404 when there
 * is none (the SDK's false). */
static void lb_e2b_snapshot_delete(lb_req *r, const char *id)
{
    char state[LB_SNAPSHOT_STATE_MAX], err[512] = "";
    lbsb_conn *c = NULL;
    lb_http_drain(r);
    if (lbsb_connect(r->cfg->sandboxd_socket, NULL, &c, err, sizeof err) != LB_OK) {
        lb_e2b_error(r, 503, "The sandbox daemon cannot be reached: %s.", err);
        return;
    }
    lb_snapshot_state_name(id, state, sizeof state);
    int rc = lbsb_state_delete(c, state, err, sizeof err);
    lbsb_close(c);
    if (rc == LB_E_NOTFOUND)
        lb_e2b_error(r, 404, "There is no snapshot %s.", id);
    else if (rc)
        lb_e2b_error(r, 503, "The sandbox daemon could not delete the snapshot: %s.", err);
    else {
        lb_snapshot_owner_forget(r, id);
        lb_e2b_snap_info_forget(r, id);
        lb_http_head(r, 204, NULL, NULL);
    }
}

/* ---- /sandboxes/{id}[/...] ---- */

static void lb_e2b_one(lb_req *r, const char *id, const char *rest)
{
    const char *m = r->method;
    if (!strcmp(rest, "/resume")) { /* the SDK resumes by connect; no route of E2B's API any more */
        lb_e2b_error(r, 404, "Resume a paused sandbox with POST /v2/sandboxes/%.40s/connect (Sandbox.connect).", id);
        return;
    }
    if ((!strcmp(rest, "/network") && strcmp(m, "PUT")) || !strcmp(rest, "/logs")) {
        lb_e2b_error(r, 501, "%s of a sandbox is not supported by llmbox (docs/E2B.md).", rest + 1);
        return;
    }
    lb_sbx *s = lb_e2b_get(r, id);
    if (!s)
        return;
    cJSON *body = NULL, *o = NULL;
    int auto_resumed = 0;
    if (!strcmp(rest, "/network") && !strcmp(m, "PUT")) { /* updateNetwork: e2b_network.h */
        lb_e2b_network_put(r, s);
        lb_sbx_put(s);
        return;
    }
    if (!strcmp(rest, "/metrics") && !strcmp(m, "GET")) {
        lb_e2b_metrics(r, s); /* e2b_metrics.h: the samples of the last minutes */
        lb_sbx_put(s);
        return;
    }
    if (!rest[0] && !strcmp(m, "DELETE")) {
        lb_http_drain(r);
        if (lb_sbx_remove(id, LB_SBX_GONE_DELETED) != LB_OK) {
            lb_e2b_error(r, 404, "The sandbox %s was already killed.", id);
            goto out;
        }
        lb_info("web: e2b: killed %s", id);
        lb_http_head(r, 204, NULL, NULL);
    } else if (!rest[0] && !strcmp(m, "GET")) {
        cJSON *st = lb_sbx_json(s);
        o = st ? lb_e2b_info(st) : NULL;
        cJSON_Delete(st);
        if (o)
            lb_http_json(r, 200, o, NULL);
        else
            lb_e2b_error(r, 500, "Out of memory.");
    } else if (!strcmp(rest, "/snapshots") && !strcmp(m, "POST")) {
        lb_e2b_snapshot(r, s);
    } else if (!strcmp(rest, "/fork") && !strcmp(m, "POST")) {
        lb_e2b_fork(r, s); /* e2b_fork.h: its files into new sandboxes */
    } else if (!strcmp(rest, "/pause") && !strcmp(m, "POST")) {
        /* follow-ups's pause (its "memory" kept: a frozen cgroup), or with
         * {memory: false} (keepMemory: false) every process ended first */
        char err[512] = "";
        int same = 0, rc;
        if (!(body = lb_req_json(r, 65536, "pause")))
            goto out;
        int drop = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(body, "memory"));
        if (drop)
            rc = lb_sbx_pause_drop(s, &same, err, sizeof err);
        else
            rc = lb_sbx_pause_set(s, 1, &same, err, sizeof err);
        if (rc == LB_E_BUSY && drop) /* not 409: the SDK takes that as "paused already" */
            lb_e2b_error(r, 503, "Cannot pause %s without its memory now: %s.", id, err);
        else if (rc == LB_E_NOTFOUND)
            lb_e2b_error(r, 404, "%s", err);
        else if (rc)
            lb_e2b_error(r, rc == LB_E_BUSY ? 409 : 500, "Cannot pause %s: %s.", id, err);
        else if (same)
            lb_e2b_error(r, 409, "The sandbox %s is paused already.", id);
        else
            lb_http_head(r, 204, NULL, NULL);
    } else if ((!strcmp(rest, "/timeout") || !strcmp(rest, "/connect")) && !strcmp(m, "POST")) {
        if (!(body = lb_req_json(r, 65536, "timeout")))
            goto out;
        if (!strcmp(rest, "/connect")) {
            /* a paused sandbox is resumed by a connect (SDK's Sandbox.connect) */
            char err[512] = "";
            auto_resumed = lb_sbx_take_auto_paused(s);
            int same = 0, rc = lb_sbx_pause_set(s, 0, &same, err, sizeof err);
            if (rc) {
                lb_e2b_error(r, rc == LB_E_NOTFOUND ? 404 : 500, "Cannot resume %s: %s", id, err);
                goto out;
            }
        }
        /* never past sandboxd's own TTL, set at create to the API's maximum */
        int left = r->cfg->sandbox_api_ttl_max_s - (int)((lb_now_ms() - s->created_ms) / 1000);
        int t = lb_e2b_timeout(r, body, 0, left > 1 ? left : 1);
        if (t < 0)
            goto out;
        /* one paused at its timeout (autoPause) gets a timeout again: the
         * asked one, else E2B's default */
        if (auto_resumed && !t)
            t = left < LB_E2B_DEFAULT_TIMEOUT_S ? (left > 1 ? left : 1) : LB_E2B_DEFAULT_TIMEOUT_S;
        /* setTimeout sets the end, earlier or later; a connect only ever
         * moves it later (E2B: connecting never shortens a sandbox's life),
         * but for one autoPause had paused, whose end was sandboxd's */
        int64_t created_ms, end_ms;
        lb_sbx_times(s, &created_ms, &end_ms);
        if (t > 0 && (!strcmp(rest, "/timeout") || auto_resumed || lb_now_ms() + (int64_t)t * 1000 > end_ms)) {
            lb_sbx_set_expiry(s, t);
            lb_sbx_lease_save(s);
        }
        if (!strcmp(rest, "/timeout")) {
            lb_http_head(r, 204, NULL, NULL);
        } else {
            cJSON *st = lb_sbx_json(s);
            const cJSON *img = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "spec"), "image");
            o = lb_e2b_created(r, s, cJSON_IsString(img) ? img->valuestring : "default");
            cJSON_Delete(st);
            if (o)
                lb_http_json(r, 200, o, NULL);
            else
                lb_e2b_error(r, 500, "Out of memory.");
        }
    } else {
        lb_e2b_error(r, 404, "There is no E2B route %.16s %.80s here (docs/E2B.md lists them).", m, r->path);
    }
out:
    cJSON_Delete(body);
    cJSON_Delete(o);
    lb_sbx_put(s);
}

lb_status lb_e2b_auto_resume(const lb_config *cfg, lb_sbx *s, char *err, size_t errsz)
{
    if (!lb_sbx_auto_resume_of(s) || !lb_sbx_is_paused(s))
        return LB_OK;
    /* as a connect without a timeout: the resume, then one paused at its
     * timeout gets E2B's default timeout again; one paused by pause()
     * keeps its end */
    int auto_resumed = lb_sbx_take_auto_paused(s);
    int same = 0, rc = lb_sbx_pause_set(s, 0, &same, err, errsz);
    if (rc)
        return rc;
    if (auto_resumed) {
        int left = cfg->sandbox_api_ttl_max_s - (int)((lb_now_ms() - s->created_ms) / 1000);
        lb_sbx_set_expiry(s, left < LB_E2B_DEFAULT_TIMEOUT_S ? (left > 1 ? left : 1) : LB_E2B_DEFAULT_TIMEOUT_S);
        lb_sbx_lease_save(s);
    }
    if (!same)
        lb_info("web: e2b: %s resumed by traffic (autoResume)", s->id);
    return LB_OK;
}

void lb_h_e2b_api(lb_req *r)
{
    const char *p = r->path, *m = r->method, *rest = NULL;
    char id[LB_NODE_ID_MAX + 1];
    lb_e2b_metrics_start(); /* the samples of getMetrics, from the first E2B client on */
    if (!strcmp(p, "/e2b/v2/sandboxes") || !strcmp(p, "/e2b/sandboxes")) {
        if (!strcmp(m, "POST"))
            lb_e2b_create(r);
        else if (!strcmp(m, "GET"))
            lb_e2b_list(r);
        else
            lb_e2b_error(r, 405, "Use GET or POST on %s.", p);
    } else if (!strcmp(p, "/e2b/sandboxes/metrics")) {
        lb_e2b_metrics_many(r); /* e2b_metrics.h: the newest sample of each listed sandbox */
    } else if (lb_e2b_sbx_path(p, id, &rest)) {
        lb_e2b_one(r, id, rest);
    } else if (!strcmp(p, "/e2b/snapshots") && !strcmp(m, "GET")) {
        lb_e2b_snapshots_list(r);
    } else if (lb_e2b_tpl_handle(r)) {
        /* template builds (e2b_template.h) */
    } else if (!strncmp(p, "/e2b/templates/", 15) && lb_node_id_valid(p + 15) && !strcmp(m, "DELETE")) {
        lb_e2b_snapshot_delete(r, p + 15); /* a snapshot is a template to E2B */
    } else if (!strncmp(p, "/e2b/templates", 14) || !strncmp(p, "/e2b/v2/templates", 17) ||
               !strncmp(p, "/e2b/v3/templates", 17)) {
        lb_e2b_error(r, 501, "This template call is not supported by llmbox: Template.build and Template.exists "
                             "are; tags, listing and deleting templates are not (docs/E2B.md).");
    } else {
        lb_e2b_error(r, 404, "There is no E2B route %.80s here (docs/E2B.md lists them).", p);
    }
}
