/* Validation of the sandbox API's request bodies, and the shell line of an
 * exec (see sandbox_spec.h). */
#include "sbxapi/sandbox_spec.h"

#include "common/status.h"
#include "common/netpolicy.h"
#include "common/node_id.h"
#include "common/util.h"
#include "images/store.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int lb_fail(char *msg, size_t msgsz, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int lb_fail(char *msg, size_t msgsz, int rc, const char *fmt, ...)
{
    if (msg && msgsz) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msgsz, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ---- building blocks ---- */

/* Appends s as it goes inside single quotes: each ' becomes '\'' (close,
 * escaped quote, reopen). Everything else is literal in single quotes. */
static int lb_sh_quote_body(lb_buf *b, const char *s)
{
    int rc = LB_OK;
    while (!rc && *s) {
        size_t run = strcspn(s, "'");
        rc = lb_buf_append(b, s, run);
        s += run;
        if (!rc && *s == '\'') {
            rc = lb_buf_append(b, "'\\''", 4);
            s++;
        }
    }
    return rc;
}

int lb_sh_quote(lb_buf *b, const char *s)
{
    int rc = lb_buf_append(b, "'", 1);
    if (!rc)
        rc = lb_sh_quote_body(b, s);
    return rc ? rc : lb_buf_append(b, "'", 1);
}

int lb_sbx_env_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > LB_SBX_ENV_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return 0;
    }
    return 1;
}

/* True when p names the root: only "/" and "." components. */
static int lb_is_root(const char *p, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && p[j] != '/')
            j++;
        if (!(j == i || (j - i == 1 && p[i] == '.')))
            return 0;
        i = j + 1;
    }
    return 1;
}

int lb_sbx_path(const char *in, size_t n, const char *base, int allow_root, char *out, size_t outsz)
{
    if (!in || !out || outsz < 2 || memchr(in, '\0', n))
        return LB_E_INVAL;
    out[0] = '\0';
    char joined[2 * LB_PATH_MAX + 8];
    const char *p = in;
    size_t len = n;
    if (!n || in[0] != '/') {
        if (!base || base[0] != '/' || n >= sizeof joined)
            return LB_E_INVAL;
        int k = snprintf(joined, sizeof joined, "%s/%.*s", base, (int)n, in);
        if (k < 0 || (size_t)k >= sizeof joined)
            return LB_E_INVAL;
        p = joined;
        len = (size_t)k;
    }
    while (len && *p == '/')
        p++, len--;
    if (lb_is_root(p, len)) {
        if (!allow_root)
            return LB_E_INVAL;
        snprintf(out, outsz, "/");
        return LB_OK;
    }
    char rel[LB_PATH_MAX + 1];
    int rc = lb_path_clean_rel(p, len, rel, sizeof rel);
    if (rc)
        return rc;
    int k = snprintf(out, outsz, "/%s", rel);
    return (k < 0 || (size_t)k >= outsz) ? LB_E_INVAL : LB_OK;
}

int lb_base64_decode(const char *in, size_t n, size_t max, char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    char *d = malloc(n / 4 * 3 + 4);
    if (!d)
        return LB_E_NOMEM;
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0, pad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        int v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '+')
            v = 62;
        else if (c == '/')
            v = 63;
        else if (c == '=') {
            pad++;
            continue;
        } else if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
            continue;
        else {
            free(d);
            return LB_E_INVAL;
        }
        if (pad) { /* data after padding */
            free(d);
            return LB_E_INVAL;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= max) {
                free(d);
                return LB_E_TOOBIG;
            }
            d[o++] = (char)((acc >> bits) & 0xFF);
        }
    }
    /* a lone sextet cannot end a valid encoding; leftover bits must be zero */
    if (bits >= 6 || (acc & ((1u << bits) - 1)) || pad > 2) {
        free(d);
        return LB_E_INVAL;
    }
    *out = d;
    *outlen = o;
    return LB_OK;
}

/* Refuses fields that are not in keys (a typo like "ttl" for "ttl_s" should
 * not be silently ignored). */
static int lb_known_keys(const cJSON *o, const char *const *keys, const char *what, char *msg, size_t msgsz)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, o)
    {
        int known = 0;
        for (size_t i = 0; keys[i] && !known; i++)
            known = it->string && !strcmp(it->string, keys[i]);
        if (known)
            continue;
        char list[256] = "";
        size_t l = 0;
        for (size_t i = 0; keys[i]; i++)
            l += (size_t)snprintf(list + l, l < sizeof list ? sizeof list - l : 0, "%s%s", i ? ", " : "", keys[i]);
        return lb_fail(msg, msgsz, LB_E_INVAL, "The %s has an unknown field \"%.64s\"; its fields are %s.", what,
                       it->string ? it->string : "", list);
    }
    return LB_OK;
}

static int lb_is_null(const cJSON *v) { return !v || cJSON_IsNull(v); }

/* A whole number in the range of long long (no libm for floor()). */
static int lb_whole(double d)
{
    return d >= -9e15 && d <= 9e15 && (double)(long long)d == d;
}

/* An integer field in [lo, hi]; absent or null leaves *out alone. */
static int lb_get_int(const cJSON *o, const char *key, long lo, long hi, int *out, char *msg, size_t msgsz)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (lb_is_null(v))
        return LB_OK;
    if (!cJSON_IsNumber(v) || !lb_whole(v->valuedouble) || v->valuedouble < (double)lo ||
        v->valuedouble > (double)hi)
        return lb_fail(msg, msgsz, LB_E_INVAL, "\"%s\" must be a whole number from %ld to %ld.", key, lo, hi);
    *out = (int)v->valuedouble;
    return LB_OK;
}

/* A string field (or null/absent: *out NULL). */
static int lb_get_str(const cJSON *o, const char *key, size_t max, const char **out, char *msg, size_t msgsz)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (lb_is_null(v))
        return LB_OK;
    if (!cJSON_IsString(v) || !v->valuestring)
        return lb_fail(msg, msgsz, LB_E_INVAL, "\"%s\" must be a string.", key);
    if (strlen(v->valuestring) > max)
        return lb_fail(msg, msgsz, LB_E_TOOBIG, "\"%s\" is longer than %zu bytes.", key, max);
    *out = v->valuestring;
    return LB_OK;
}

/* An env object: {NAME: "value"} with shell-safe names, capped. */
static int lb_env_check(const cJSON *env, const char *where, char *msg, size_t msgsz)
{
    if (!cJSON_IsObject(env))
        return lb_fail(msg, msgsz, LB_E_INVAL, "\"%s\" must be an object of strings, like {\"LANG\": \"C.UTF-8\"}.",
                       where);
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, env)
    {
        if (++n > LB_SBX_ENV_MAX)
            return lb_fail(msg, msgsz, LB_E_TOOBIG, "\"%s\" has more than %d variables.", where, LB_SBX_ENV_MAX);
        if (!lb_sbx_env_name_ok(it->string))
            return lb_fail(msg, msgsz, LB_E_INVAL,
                           "The variable name \"%.64s\" in \"%s\" is not valid: names match [A-Za-z_][A-Za-z0-9_]* "
                           "(at most %d characters).", it->string ? it->string : "", where, LB_SBX_ENV_NAME_MAX);
        if (!cJSON_IsString(it) || !it->valuestring)
            return lb_fail(msg, msgsz, LB_E_INVAL, "The value of %s in \"%s\" must be a string.", it->string, where);
        if (strlen(it->valuestring) > LB_SBX_ENV_VALUE_MAX)
            return lb_fail(msg, msgsz, LB_E_TOOBIG, "The value of %s in \"%s\" is longer than %u bytes.", it->string,
                           where, LB_SBX_ENV_VALUE_MAX);
    }
    return LB_OK;
}

/* A file mode: 420 (a JSON number) or "0644" / "644" (octal text). */
static int lb_parse_mode(const cJSON *v, int *mode)
{
    if (cJSON_IsNumber(v)) {
        if (!lb_whole(v->valuedouble) || v->valuedouble < 0 || v->valuedouble > 0777)
            return LB_E_INVAL;
        *mode = (int)v->valuedouble;
        return LB_OK;
    }
    if (!cJSON_IsString(v) || !v->valuestring)
        return LB_E_INVAL;
    const char *s = v->valuestring;
    size_t n = strlen(s);
    if (n < 1 || n > 4)
        return LB_E_INVAL;
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '7')
            return LB_E_INVAL;
        m = m * 8 + (s[i] - '0');
    }
    if (m > 0777) /* no setuid, setgid or sticky bits through the API */
        return LB_E_INVAL;
    *mode = m;
    return LB_OK;
}

/* ---- the create spec ---- */

/* A debootstrap image's name, or an image reference (a layered image,
 * images/store.h): sandboxd says whether the image exists. */
static int lb_image_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > LB_IMAGE_REF_MAX)
        return 0;
    int plain = n <= 32;
    for (size_t i = 0; plain && i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            plain = 0;
    lb_image_ref r;
    char why[160];
    return plain || lb_image_ref_parse(s, LB_IMAGE_REF_LOCAL, &r, why, sizeof why) == LB_OK;
}

static int lb_parse_resources(const cJSON *res, const lb_config *cfg, lb_sbx_spec *sp, char *msg, size_t msgsz)
{
    static const char *const keys[] = {"cpu", "memory_mib", "disk_mib", "pids", NULL};
    sp->memory_mib = cfg->sandbox_memory_mib;
    sp->pids = cfg->sandbox_pids;
    if (lb_is_null(res))
        return LB_OK;
    if (!cJSON_IsObject(res))
        return lb_fail(msg, msgsz, LB_E_INVAL, "\"resources\" must be an object: {cpu, memory_mib, disk_mib, pids}.");
    int rc = lb_known_keys(res, keys, "\"resources\" object", msg, msgsz);
    if (rc)
        return rc;
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(res, "cpu");
    if (!lb_is_null(cpu)) {
        if (!cJSON_IsNumber(cpu) || !(cpu->valuedouble >= 0.01) || cpu->valuedouble > 1024)
            return lb_fail(msg, msgsz, LB_E_INVAL, "\"resources.cpu\" must be a number of cores from 0.01 to 1024.");
        sp->cpu = cpu->valuedouble;
        sp->cpu_milli = (int)(cpu->valuedouble * 1000 + 0.5);
    }
    if ((rc = lb_get_int(res, "memory_mib", 32, 1 << 20, &sp->memory_mib, msg, msgsz)) ||
        (rc = lb_get_int(res, "disk_mib", 16, 1 << 22, &sp->disk_mib, msg, msgsz)) ||
        (rc = lb_get_int(res, "pids", 8, 1 << 22, &sp->pids, msg, msgsz)))
        return rc;
    /* the operator's caps (config_host.c): sandboxd enforces them too, this
     * says it first and names the setting (0: a config that was never
     * resolved, as in unit tests: no cap) */
    if (cfg->sandbox_max_memory_mib > 0 && sp->memory_mib > cfg->sandbox_max_memory_mib)
        return lb_fail(msg, msgsz, LB_E_INVAL,
                       "\"resources.memory_mib\" %d is above this server's cap of %d MiB "
                       "(sandbox_max_memory_mib).",
                       sp->memory_mib, cfg->sandbox_max_memory_mib);
    if (cfg->sandbox_max_pids > 0 && sp->pids > cfg->sandbox_max_pids)
        return lb_fail(msg, msgsz, LB_E_INVAL,
                       "\"resources.pids\" %d is above this server's cap of %d "
                       "(sandbox_max_pids).",
                       sp->pids, cfg->sandbox_max_pids);
    return LB_OK;
}

static int lb_parse_files(const cJSON *files, lb_sbx_spec *sp, char *msg, size_t msgsz)
{
    static const char *const keys[] = {"path", "content", "content_base64", "mode", NULL};
    if (lb_is_null(files))
        return LB_OK;
    if (!cJSON_IsArray(files))
        return lb_fail(msg, msgsz, LB_E_INVAL, "\"files\" must be a list of {path, content | content_base64, mode}.");
    int n = cJSON_GetArraySize(files);
    if (n > LB_SBX_FILES_MAX)
        return lb_fail(msg, msgsz, LB_E_TOOBIG, "A spec takes at most %d files.", LB_SBX_FILES_MAX);
    sp->files = calloc(n ? (size_t)n : 1, sizeof *sp->files);
    if (!sp->files)
        return lb_fail(msg, msgsz, LB_E_NOMEM, "Out of memory.");
    const cJSON *f;
    cJSON_ArrayForEach(f, files)
    {
        size_t i = sp->nfiles;
        lb_sbx_file *out = &sp->files[i];
        out->mode = -1;
        sp->nfiles++;
        if (!cJSON_IsObject(f))
            return lb_fail(msg, msgsz, LB_E_INVAL, "files[%zu] must be an object {path, content | content_base64, mode}.",
                           i);
        char what[48];
        snprintf(what, sizeof what, "files[%zu] object", i);
        int rc = lb_known_keys(f, keys, what, msg, msgsz);
        if (rc)
            return rc;
        const char *path, *text, *b64;
        if ((rc = lb_get_str(f, "path", 4 * LB_PATH_MAX, &path, msg, msgsz)) ||
            (rc = lb_get_str(f, "content", LB_SBX_FILE_MAX, &text, msg, msgsz)) ||
            (rc = lb_get_str(f, "content_base64", LB_SBX_FILE_MAX / 3 * 4 + 8, &b64, msg, msgsz)))
            return rc;
        if (!path)
            return lb_fail(msg, msgsz, LB_E_INVAL, "files[%zu] has no \"path\".", i);
        if (lb_sbx_path(path, strlen(path), sp->workdir, 0, out->path, sizeof out->path) != LB_OK)
            return lb_fail(msg, msgsz, LB_E_INVAL,
                           "files[%zu].path \"%.200s\" is not a usable file path: no \"..\", control characters or "
                           "backslashes, at most 1024 bytes.", i, path);
        if (!!text == !!b64)
            return lb_fail(msg, msgsz, LB_E_INVAL, "files[%zu] needs exactly one of \"content\" (text) and "
                           "\"content_base64\".", i);
        if (text) {
            out->data = text;
            out->len = strlen(text);
        } else {
            rc = lb_base64_decode(b64, strlen(b64), LB_SBX_FILE_MAX, &out->owned, &out->len);
            if (rc == LB_E_TOOBIG)
                return lb_fail(msg, msgsz, rc, "files[%zu] (%s) is larger than %u bytes.", i, out->path, LB_SBX_FILE_MAX);
            if (rc)
                return lb_fail(msg, msgsz, rc, "files[%zu].content_base64 is not valid base64.", i);
            out->data = out->owned;
        }
        const cJSON *mode = cJSON_GetObjectItemCaseSensitive(f, "mode");
        if (!lb_is_null(mode) && lb_parse_mode(mode, &out->mode) != LB_OK)
            return lb_fail(msg, msgsz, LB_E_INVAL,
                           "files[%zu].mode must be an octal string like \"0755\" or a number up to 511 (0777).", i);
    }
    return LB_OK;
}

/* network as a policy object: parsed, held to the service's
 * network_egress_max and byte allowance and to those of the user who asks
 * (NULL: the shared token; LB_E_DENIED names the rule or setting beyond
 * them), and kept as canonical text, the form sandboxd hands the gateway. */
static int spec_network_policy(const cJSON *v, const lb_config *cfg, const lb_user_cfg *user, lb_sbx_spec *sp,
                               char *msg, size_t msgsz)
{
    lb_netpolicy *p = malloc(sizeof *p);
    char *text = malloc(LB_NETPOL_TEXT_MAX + 1);
    int rc = LB_E_NOMEM;
    if (!p || !text) {
        snprintf(msg, msgsz, "Out of memory.");
        goto out;
    }
    if ((rc = lb_netpolicy_from_json(v, p, msg, msgsz)) != LB_OK ||
        (rc = lb_netpolicy_admit(p, cfg->network_egress_max, user ? user->network_egress_max : NULL, msg, msgsz)) !=
            LB_OK ||
        (rc = lb_netpolicy_admit_bytes(p, cfg->network_max_bytes, user ? user->network_max_bytes : 0, msg, msgsz)) !=
            LB_OK)
        goto out;
    if (lb_netpolicy_text(p, text, LB_NETPOL_TEXT_MAX + 1) != LB_OK) {
        rc = lb_fail(msg, msgsz, LB_E_TOOBIG, "\"network\" is longer than %d bytes as text.", LB_NETPOL_TEXT_MAX);
        goto out;
    }
    snprintf(sp->network, sizeof sp->network, "rules");
    sp->network_policy = text;
    text = NULL;
    rc = LB_OK;
out:
    free(p);
    free(text);
    return rc;
}

int lb_sbx_spec_parse(const cJSON *body, const lb_config *cfg, const lb_user_cfg *user, lb_sbx_spec *sp, char *msg,
                      size_t msgsz)
{
    static const char *const keys[] = {"image", "ttl_s", "workdir", "env", "files", "resources", "network",
                                       "metadata", "snapshot", NULL};
    memset(sp, 0, sizeof *sp);
    if (!cJSON_IsObject(body))
        return lb_fail(msg, msgsz, LB_E_INVAL, "The body must be a JSON object (the sandbox spec).");
    int rc = lb_known_keys(body, keys, "sandbox spec", msg, msgsz);
    if (rc)
        return rc;
    const char *s;
    if ((rc = lb_get_str(body, "image", LB_IMAGE_REF_MAX, &s, msg, msgsz)))
        return rc;
    if (s && !lb_image_ok(s))
        return lb_fail(msg, msgsz, LB_E_INVAL, "\"image\" must be an image name (1 to 32 of a-z, 0-9, _ and -) or "
                                               "an image reference ([host[:port]/]repo[:tag]).");
    snprintf(sp->image, sizeof sp->image, "%s", s ? s : cfg->default_image);

    sp->ttl_s = cfg->sandbox_api_ttl_s;
    if (lb_get_int(body, "ttl_s", 1, cfg->sandbox_api_ttl_max_s, &sp->ttl_s, NULL, 0))
        return lb_fail(msg, msgsz, LB_E_INVAL,
                       "\"ttl_s\" must be a whole number of seconds from 1 to %d (LLMBOX_SANDBOX_API_TTL_MAX_S).",
                       cfg->sandbox_api_ttl_max_s);

    if ((rc = lb_get_str(body, "workdir", 4 * LB_PATH_MAX, &s, msg, msgsz)))
        return rc;
    snprintf(sp->workdir, sizeof sp->workdir, "/testbed");
    if (s) {
        if (s[0] != '/' || lb_sbx_path(s, strlen(s), NULL, 1, sp->workdir, sizeof sp->workdir) != LB_OK)
            return lb_fail(msg, msgsz, LB_E_INVAL, "\"workdir\" must be an absolute path without \"..\" or control "
                           "characters, at most 1024 bytes.");
        sp->workdir_given = 1;
    } else {
        /* a layered image's WorkingDir is the sandbox's, as in `docker run`
         * (images/store.h: its record) */
        cJSON *rec = NULL;
        char why[256];
        if (lb_image_record_read(cfg, sp->image, &rec, why, sizeof why) == LB_OK) {
            const cJSON *wd = cJSON_GetObjectItemCaseSensitive(rec, "workdir");
            if (cJSON_IsString(wd) && wd->valuestring[0] == '/' &&
                lb_sbx_path(wd->valuestring, strlen(wd->valuestring), NULL, 1, sp->workdir, sizeof sp->workdir) != LB_OK)
                snprintf(sp->workdir, sizeof sp->workdir, "/testbed");
            cJSON_Delete(rec);
        }
    }

    const cJSON *env = cJSON_GetObjectItemCaseSensitive(body, "env");
    if (!lb_is_null(env) && (rc = lb_env_check(env, "env", msg, msgsz)))
        return rc;
    sp->env = lb_is_null(env) ? cJSON_CreateObject() : cJSON_Duplicate(env, 1);
    if (!sp->env)
        return lb_fail(msg, msgsz, LB_E_NOMEM, "Out of memory.");

    if ((rc = lb_parse_resources(cJSON_GetObjectItemCaseSensitive(body, "resources"), cfg, sp, msg, msgsz)))
        return rc;

    const cJSON *netv = cJSON_GetObjectItemCaseSensitive(body, "network");
    if (cJSON_IsObject(netv)) {
        if ((rc = spec_network_policy(netv, cfg, user, sp, msg, msgsz)))
            return rc;
    } else {
        if ((rc = lb_get_str(body, "network", 16, &s, msg, msgsz)))
            return rc;
        if (s && strcmp(s, "none") != 0 && strcmp(s, "nat") != 0)
            return lb_fail(msg, msgsz, LB_E_INVAL, "\"network\" must be \"none\" (loopback only), \"nat\" (outbound "
                           "only, if the operator allows it) or {\"allow\": [rules], \"deny\": [rules]}.");
        snprintf(sp->network, sizeof sp->network, "%s", s ? s : "");
    }

    /* follow-ups: a snapshot to start from (POST /api/sandboxes/{id}/snapshot) */
    if ((rc = lb_get_str(body, "snapshot", 64, &s, msg, msgsz)))
        return rc;
    if (s && !lb_node_id_valid(s))
        return lb_fail(msg, msgsz, LB_E_INVAL, "\"snapshot\" must be a snapshot_id (32 lowercase hex characters, "
                       "after its node's name and a dot in a cluster: n1.<32 hex>).");
    snprintf(sp->snapshot, sizeof sp->snapshot, "%s", s ? s : "");

    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(body, "metadata");
    if (!lb_is_null(meta)) {
        if (!cJSON_IsObject(meta))
            return lb_fail(msg, msgsz, LB_E_INVAL, "\"metadata\" must be a JSON object.");
        char *text = cJSON_PrintUnformatted(meta);
        size_t len = text ? strlen(text) : 0;
        free(text);
        if (!text)
            return lb_fail(msg, msgsz, LB_E_NOMEM, "Out of memory.");
        if (len > LB_SBX_METADATA_MAX)
            return lb_fail(msg, msgsz, LB_E_TOOBIG, "\"metadata\" is %zu bytes as JSON; the limit is %d.", len,
                           LB_SBX_METADATA_MAX);
        if (!(sp->metadata = cJSON_Duplicate(meta, 1)))
            return lb_fail(msg, msgsz, LB_E_NOMEM, "Out of memory.");
    }
    return lb_parse_files(cJSON_GetObjectItemCaseSensitive(body, "files"), sp, msg, msgsz);
}

void lb_sbx_spec_free(lb_sbx_spec *sp)
{
    if (!sp)
        return;
    for (size_t i = 0; i < sp->nfiles; i++)
        free(sp->files[i].owned);
    free(sp->files);
    cJSON_Delete(sp->env);
    cJSON_Delete(sp->metadata);
    free(sp->network_policy);
    lb_free_wiped(sp->net_values);
    memset(sp, 0, sizeof *sp);
}

cJSON *lb_sbx_spec_echo(const lb_sbx_spec *sp)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    int ok = cJSON_AddStringToObject(o, "image", sp->image) && cJSON_AddNumberToObject(o, "ttl_s", sp->ttl_s) &&
             cJSON_AddStringToObject(o, "workdir", sp->workdir);
    cJSON *env = ok ? cJSON_Duplicate(sp->env, 1) : NULL;
    ok = env && cJSON_AddItemToObject(o, "env", env);
    if (!ok)
        cJSON_Delete(env);
    cJSON *files = ok ? cJSON_AddArrayToObject(o, "files") : NULL;
    ok = files != NULL;
    for (size_t i = 0; ok && i < sp->nfiles; i++) {
        cJSON *f = cJSON_CreateObject();
        if (!f || !cJSON_AddItemToArray(files, f)) {
            cJSON_Delete(f);
            ok = 0;
            break;
        }
        char mode[16];
        snprintf(mode, sizeof mode, "%04o", (unsigned)(sp->files[i].mode < 0 ? 0644 : sp->files[i].mode));
        ok = cJSON_AddStringToObject(f, "path", sp->files[i].path) &&
             cJSON_AddNumberToObject(f, "size", (double)sp->files[i].len) && cJSON_AddStringToObject(f, "mode", mode);
    }
    cJSON *res = ok ? cJSON_AddObjectToObject(o, "resources") : NULL;
    ok = res != NULL;
    if (ok)
        ok = (sp->cpu > 0 ? cJSON_AddNumberToObject(res, "cpu", sp->cpu) : cJSON_AddNullToObject(res, "cpu")) &&
             cJSON_AddNumberToObject(res, "memory_mib", sp->memory_mib) &&
             (sp->disk_mib > 0 ? cJSON_AddNumberToObject(res, "disk_mib", sp->disk_mib)
                               : cJSON_AddNullToObject(res, "disk_mib")) &&
             cJSON_AddNumberToObject(res, "pids", sp->pids);
    if (ok)
        ok = cJSON_AddStringToObject(o, "network", sp->network[0] ? sp->network : "none") != NULL;
    if (ok && sp->snapshot[0]) /* follow-ups */
        ok = cJSON_AddStringToObject(o, "snapshot", sp->snapshot) != NULL;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* ---- exec ---- */

int lb_sbx_exec_parse(const cJSON *body, const lb_config *cfg, const char *workdir, lb_sbx_exec_req *er,
                      char *msg, size_t msgsz)
{
    static const char *const keys[] = {"command", "timeout_s", "stdin", "env", "cwd", NULL};
    memset(er, 0, sizeof *er);
    if (!cJSON_IsObject(body))
        return lb_fail(msg, msgsz, LB_E_INVAL, "The body must be a JSON object: {command, timeout_s, stdin, env, cwd}.");
    int rc = lb_known_keys(body, keys, "exec request", msg, msgsz);
    if (rc)
        return rc;
    if ((rc = lb_get_str(body, "command", LB_SBX_COMMAND_MAX, &er->command, msg, msgsz)))
        return rc;
    if (!er->command || !er->command[0])
        return lb_fail(msg, msgsz, LB_E_INVAL, "\"command\" is required: the shell command to run.");

    int max_s = cfg->sandbox_api_exec_max_s;
    int def_s = cfg->cmd_timeout_s < max_s ? cfg->cmd_timeout_s : max_s;
    er->timeout_ms = def_s * 1000;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "timeout_s");
    if (!lb_is_null(t)) {
        if (!cJSON_IsNumber(t) || !(t->valuedouble > 0) || t->valuedouble > max_s)
            return lb_fail(msg, msgsz, LB_E_INVAL,
                           "\"timeout_s\" must be a number of seconds above 0 and at most %d "
                           "(LLMBOX_SANDBOX_API_EXEC_MAX_S).", max_s);
        double ms = t->valuedouble * 1000;
        er->timeout_ms = (int)ms + ((double)(int)ms < ms); /* rounded up: at least 1 ms */
    }

    const cJSON *in = cJSON_GetObjectItemCaseSensitive(body, "stdin");
    if (!lb_is_null(in)) {
        if (!cJSON_IsString(in) || !in->valuestring)
            return lb_fail(msg, msgsz, LB_E_INVAL, "\"stdin\" must be a string (or null for no input).");
        er->has_stdin = 1;
        er->stdin_data = in->valuestring;
        er->stdin_len = strlen(in->valuestring);
        if (er->stdin_len > LB_SBX_FILE_MAX)
            return lb_fail(msg, msgsz, LB_E_TOOBIG, "\"stdin\" is longer than %u bytes.", LB_SBX_FILE_MAX);
    }

    const cJSON *env = cJSON_GetObjectItemCaseSensitive(body, "env");
    if (!lb_is_null(env)) {
        if ((rc = lb_env_check(env, "env", msg, msgsz)))
            return rc;
        er->env = env;
    }

    const char *cwd;
    if ((rc = lb_get_str(body, "cwd", 4 * LB_PATH_MAX, &cwd, msg, msgsz)))
        return rc;
    if (lb_sbx_path(cwd ? cwd : workdir, strlen(cwd ? cwd : workdir), workdir, 1, er->cwd, sizeof er->cwd) != LB_OK)
        return lb_fail(msg, msgsz, LB_E_INVAL, "\"cwd\" must be a path without \"..\" or control characters, at most "
                       "1024 bytes (relative paths start at the workdir).");
    return LB_OK;
}

/* Appends ' NAME=value' single-quoted as one word (NAME is already checked). */
static int lb_export_word(lb_buf *b, const cJSON *kv)
{
    int rc = lb_buf_appends(b, " '");
    if (!rc)
        rc = lb_buf_appends(b, kv->string);
    if (!rc)
        rc = lb_buf_append(b, "=", 1);
    if (!rc)
        rc = lb_sh_quote_body(b, kv->valuestring);
    return rc ? rc : lb_buf_append(b, "'", 1);
}

/* Bash's builtins and reserved words: a command starting with one of these
 * (but the few below that change nothing in the shell) may change the
 * shell itself (cd, export, exit, exec, set, trap, ulimit, read, ...), so it
 * always runs in the subshell. */
static const char *const lb_sh_builtins[] = {
    ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen", "complete",
    "compopt", "continue", "declare", "dirs", "disown", "echo", "enable", "eval", "exec", "exit", "export",
    "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill", "let", "local", "logout",
    "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "set", "shift",
    "shopt", "source", "suspend", "test", "times", "trap", "true", "type", "typeset", "ulimit", "umask",
    "unalias", "unset", "wait", "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while",
    "until", "do", "done", "in", "function", "time", "coproc", "{", "}", "!", "[[", "]]", NULL};
/* Builtins that only print or give a status: as cheap to run in the
 * persistent shell as an external program, and they change nothing. */
static const char *const lb_sh_inert[] = {"true", "false", ":", "echo", "pwd", NULL};

static int lb_in_list(const char *const *l, const char *w, size_t n)
{
    for (; *l; l++)
        if (strlen(*l) == n && memcmp(*l, w, n) == 0)
            return 1;
    return 0;
}

/* True when cmd is one simple command of plain words (letters, digits and
 * _ . / : , + = % - separated by spaces) whose first word is not an
 * assignment and is an external program or an inert builtin: nothing in it
 * is expanded, so running it as `command WORDS` does exactly what eval
 * would, and it cannot change the shell it runs in. */
static int lb_exec_plain(const char *cmd)
{
    size_t n = strlen(cmd);
    if (n == 0 || n > 4096)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = cmd[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr(" _./:,+=%-", c) != NULL))
            return 0;
    }
    const char *w = cmd;
    while (*w == ' ')
        w++;
    size_t wn = strcspn(w, " ");
    /* an assignment; an option to `command` itself; a job spec (%1 is fg) */
    if (wn == 0 || w[0] == '-' || memchr(w, '=', wn) != NULL || memchr(w, '%', wn) != NULL)
        return 0;
    if (lb_in_list(lb_sh_builtins, w, wn) && !lb_in_list(lb_sh_inert, w, wn))
        return 0;
    /* the helper's own name: its "command not found" must mean the helper */
    if (strstr(cmd, "__llmbox") != NULL)
        return 0;
    return 1;
}

/* The helper behind the fast form (sandbox_spec.h), defined in the
 * persistent shell by the first fast exec. It takes the cwd and the words;
 * env comes as temporary assignments of the call, which bash exports to
 * what the function runs and drops after. A subshell would keep cd, OLDPWD
 * and bash's hash table from leaking; here they are put back by hand (the
 * hashall flag is off while the command runs, so nothing is hashed), also
 * when a timeout's SIGINT unwinds it (its INT trap; sandboxd's wrapper
 * resets the trap after). `builtin command` skips functions and aliases,
 * which the subshell's eval would run: when that name is a function or
 * aliases are on, it runs the subshell form itself.
 * Each redirection costs bash ~10 syscalls (open, save, dup2, restore),
 * so the fast path has none it can do without: the command's stdin is
 * /dev/null already (sandboxd's wrapper sources the line with </dev/null,
 * sandbox_exec.c), and the cd back (its 2>/dev/null) is skipped when the
 * cd went where the shell was: the usual case, every exec in the
 * sandbox's workdir. */
static const char lb_exec_helper[] =
    "__llmbox_exec() { local __d=$PWD __o=$OLDPWD __h=$- __r; "
    "if builtin shopt -q expand_aliases || builtin declare -F -- \"$2\" >/dev/null; then "
    "( builtin cd -- \"$1\" && builtin shift && builtin eval \"$*\" ) </dev/null; builtin return; fi; "
    "builtin set +h; builtin trap 'builtin cd -- \"$__d\" 2>/dev/null; OLDPWD=$__o; "
    "[[ $__h == *h* ]] && builtin set -h; builtin return 130' INT; "
    "builtin cd -- \"$1\" && builtin shift && builtin command \"$@\"; __r=$?; "
    "[[ $PWD == \"$__d\" ]] || builtin cd -- \"$__d\" 2>/dev/null; OLDPWD=$__o; [[ $__h == *h* ]] && builtin set -h; "
    "builtin return $__r; }";

const char *lb_sbx_exec_helper(void)
{
    return lb_exec_helper;
}

/* The fast form's call: as short as can be, because bash reads a command
 * line from its pipe one byte at a time and sandboxd sends most
 * punctuation as four bytes (\xHH): the line's length is most of the cost
 * of an exec of `true` (a fork of bash is the rest of a subshell's). In a
 * shell without the helper (a new shell after a stuck one was replaced, a
 * restored state) bash answers "__llmbox_exec: command not found" before
 * anything ran: the web sends the definition and runs it again
 * (handlers_sandboxes.c). */
static int lb_exec_fast(const lb_sbx_exec_req *er, const cJSON *base_env, lb_buf *out)
{
    int rc = LB_OK;
    const cJSON *envs[2] = {base_env, er->env};
    for (int k = 0; k < 2 && !rc; k++) {
        const cJSON *kv;
        if (!envs[k])
            continue;
        cJSON_ArrayForEach(kv, envs[k])
        {
            /* NAME='value' : an assignment word, for this call only */
            int ok = cJSON_IsString(kv) && lb_sbx_env_name_ok(kv->string);
            if (!rc && ok)
                rc = lb_buf_printf(out, "%s='", kv->string);
            if (!rc && ok)
                rc = lb_sh_quote_body(out, kv->valuestring);
            if (!rc && ok)
                rc = lb_buf_appends(out, "' ");
        }
    }
    if (!rc)
        rc = lb_buf_appends(out, "__llmbox_exec ");
    if (!rc)
        rc = lb_sh_quote(out, er->cwd);
    if (!rc)
        rc = lb_buf_printf(out, " %s", er->command);
    return rc;
}

int lb_sbx_exec_line(const lb_sbx_exec_req *er, const cJSON *base_env, const char *stdin_path, lb_buf *out)
{
    if (!stdin_path && lb_exec_plain(er->command)) {
        lb_buf_init(out, LB_SBX_LINE_MAX);
        int rc = lb_exec_fast(er, base_env, out);
        if (rc) {
            lb_buf_free(out);
            return rc == LB_E_NOMEM ? rc : LB_E_TOOBIG;
        }
        return LB_OK;
    }
    return lb_sbx_exec_line_sub(er, base_env, stdin_path, out);
}

int lb_sbx_exec_fast_missing(int exit_code, const char *out, size_t out_len, const char *err, size_t err_len)
{
    static const char tail[] = "__llmbox_exec: command not found\n";
    size_t t = sizeof tail - 1;
    (void)out;
    return exit_code == 127 && out_len == 0 && err && err_len >= t && err_len < t + 200 &&
           memcmp(err + err_len - t, tail, t) == 0;
}

int lb_sbx_exec_line_sub(const lb_sbx_exec_req *er, const cJSON *base_env, const char *stdin_path, lb_buf *out)
{
    lb_buf_init(out, LB_SBX_LINE_MAX);
    int rc = lb_buf_appends(out, "( ");
    if (!rc && stdin_path) {
        rc = lb_buf_appends(out, "rm -f -- ");
        if (!rc)
            rc = lb_sh_quote(out, stdin_path);
        if (!rc)
            rc = lb_buf_appends(out, "; ");
    }
    if (!rc)
        rc = lb_buf_appends(out, "cd -- ");
    if (!rc)
        rc = lb_sh_quote(out, er->cwd);
    int any = (base_env && base_env->child) || (er->env && er->env->child);
    if (!rc && any) {
        rc = lb_buf_appends(out, " && export");
        const cJSON *envs[2] = {base_env, er->env};
        for (int k = 0; k < 2 && !rc; k++) {
            const cJSON *kv;
            if (!envs[k])
                continue;
            cJSON_ArrayForEach(kv, envs[k])
            {
                if (!rc && cJSON_IsString(kv) && lb_sbx_env_name_ok(kv->string))
                    rc = lb_export_word(out, kv);
            }
        }
    }
    if (!rc)
        rc = lb_buf_appends(out, " && eval ");
    if (!rc)
        rc = lb_sh_quote(out, er->command);
    if (!rc)
        rc = lb_buf_appends(out, " ) < ");
    if (!rc)
        rc = stdin_path ? lb_sh_quote(out, stdin_path) : lb_buf_appends(out, "/dev/null");
    if (rc) {
        lb_buf_free(out);
        return rc == LB_E_NOMEM ? rc : LB_E_TOOBIG;
    }
    return LB_OK;
}
