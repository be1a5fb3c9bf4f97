/* Reading OCI and docker-archive JSON documents (oci_json.h). Everything
 * here is hostile input: each count and string is capped before it is
 * copied, every text is checked to be UTF-8, and a document that is not
 * what it claims is refused with a sentence that says which part. */
#include "images/oci_json.h"

#include "common/path.h"
#include "common/utf8.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *msg, size_t msgsz, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msgsz, fmt, ap);
    va_end(ap);
    return rc;
}

int lb_oci_digest_valid(const char *s)
{
    if (!s || strncmp(s, "sha256:", 7) != 0 || strlen(s) != LB_OCI_DIGEST_LEN)
        return 0;
    for (const char *p = s + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

/* A string member of o that is valid UTF-8 and fits max bytes: copied into
 * out (outsz > max), "" when absent. -1 when present and not such a string. */
static int get_str(const cJSON *o, const char *key, char *out, size_t outsz)
{
    out[0] = '\0';
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v) || !v->valuestring)
        return -1;
    size_t n = strlen(v->valuestring);
    if (n >= outsz || !lb_utf8_valid(v->valuestring, n))
        return -1;
    memcpy(out, v->valuestring, n + 1);
    return 0;
}

static lb_oci_kind kind_of(const char *mt)
{
    static const char *const index_types[] = {"application/vnd.oci.image.index.v1+json",
                                              "application/vnd.docker.distribution.manifest.list.v2+json"};
    static const char *const manifest_types[] = {"application/vnd.oci.image.manifest.v1+json",
                                                 "application/vnd.docker.distribution.manifest.v2+json"};
    static const char *const config_types[] = {"application/vnd.oci.image.config.v1+json",
                                               "application/vnd.docker.container.image.v1+json"};
    static const char *const layer_types[] = {
        "application/vnd.oci.image.layer.v1.tar", "application/vnd.oci.image.layer.v1.tar+gzip",
        "application/vnd.oci.image.layer.v1.tar+zstd", "application/vnd.docker.image.rootfs.diff.tar.gzip",
        "application/vnd.docker.image.rootfs.diff.tar"};
    for (size_t i = 0; i < 2; i++) {
        if (!strcmp(mt, index_types[i]))
            return LB_OCI_KIND_INDEX;
        if (!strcmp(mt, manifest_types[i]))
            return LB_OCI_KIND_MANIFEST;
        if (!strcmp(mt, config_types[i]))
            return LB_OCI_KIND_CONFIG;
    }
    for (size_t i = 0; i < sizeof layer_types / sizeof layer_types[0]; i++)
        if (!strcmp(mt, layer_types[i]))
            return LB_OCI_KIND_LAYER;
    return LB_OCI_KIND_OTHER;
}

/* One descriptor {mediaType, digest, size, platform?, annotations?}. */
static int parse_desc(const cJSON *o, lb_oci_desc *d, const char *what, char *msg, size_t msgsz)
{
    char mt[128];
    memset(d, 0, sizeof *d);
    if (!cJSON_IsObject(o))
        return fail(msg, msgsz, LB_E_INVAL, "%s is not a JSON object", what);
    if (get_str(o, "mediaType", mt, sizeof mt) != 0)
        return fail(msg, msgsz, LB_E_INVAL, "%s has a mediaType that is not a short string", what);
    if (get_str(o, "digest", d->digest, sizeof d->digest) != 0 || !lb_oci_digest_valid(d->digest))
        return fail(msg, msgsz, LB_E_INVAL, "%s has no sha256 digest (\"sha256:\" and 64 lowercase hex "
                                            "digits; other algorithms are not taken)", what);
    const cJSON *sz = cJSON_GetObjectItemCaseSensitive(o, "size");
    if (!cJSON_IsNumber(sz) || sz->valuedouble < 0 || sz->valuedouble > 9.0e15 ||
        sz->valuedouble != (double)(int64_t)sz->valuedouble)
        return fail(msg, msgsz, LB_E_INVAL, "%s (%s) has no whole, non-negative size", what, d->digest);
    d->size = (int64_t)sz->valuedouble;
    d->kind = kind_of(mt);
    const cJSON *pf = cJSON_GetObjectItemCaseSensitive(o, "platform");
    if (pf && (!cJSON_IsObject(pf) || get_str(pf, "os", d->os, sizeof d->os) != 0 ||
               get_str(pf, "architecture", d->arch, sizeof d->arch) != 0 ||
               get_str(pf, "variant", d->variant, sizeof d->variant) != 0))
        return fail(msg, msgsz, LB_E_INVAL, "%s (%s) has a platform that is not short strings", what,
                    d->digest);
    const cJSON *an = cJSON_GetObjectItemCaseSensitive(o, "annotations");
    if (an && cJSON_IsObject(an) &&
        get_str(an, "org.opencontainers.image.ref.name", d->ref_name, sizeof d->ref_name) != 0)
        d->ref_name[0] = '\0'; /* a name we cannot use does not make the image unusable */
    return LB_OK;
}

static cJSON *parse_doc(const char *json, size_t len, const char *what, char *msg, size_t msgsz)
{
    if (len > LB_OCI_JSON_MAX) {
        fail(msg, msgsz, LB_E_TOOBIG, "the %s is larger than %u bytes", what, LB_OCI_JSON_MAX);
        return NULL;
    }
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        fail(msg, msgsz, LB_E_INVAL, "the %s is not a JSON object", what);
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static int schema2(const cJSON *root, const char *what, char *msg, size_t msgsz)
{
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schemaVersion");
    if (!cJSON_IsNumber(sv) || sv->valuedouble != 2)
        return fail(msg, msgsz, LB_E_INVAL, "the %s is not of schemaVersion 2 (Docker's schema 1 is not "
                                            "supported: convert it with skopeo)", what);
    return LB_OK;
}

int lb_oci_parse_index(const char *json, size_t len, lb_oci_index *out, char *msg, size_t msgsz)
{
    int rc = LB_E_INVAL;
    cJSON *root = parse_doc(json, len, "image index", msg, msgsz);
    if (!root)
        return len > LB_OCI_JSON_MAX ? LB_E_TOOBIG : LB_E_INVAL;
    if ((rc = schema2(root, "image index", msg, msgsz)) != LB_OK)
        goto out;
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "manifests");
    if (!cJSON_IsArray(ms)) {
        rc = fail(msg, msgsz, LB_E_INVAL, "the image index has no \"manifests\" list");
        goto out;
    }
    int n = cJSON_GetArraySize(ms);
    if (n > LB_OCI_INDEX_MAX) {
        rc = fail(msg, msgsz, LB_E_TOOBIG, "the image index lists %d manifests; at most %d are taken", n,
                  LB_OCI_INDEX_MAX);
        goto out;
    }
    lb_oci_index tmp;
    tmp.n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, ms) {
        char what[64];
        snprintf(what, sizeof what, "manifest %d of the image index", tmp.n + 1);
        if ((rc = parse_desc(m, &tmp.m[tmp.n], what, msg, msgsz)) != LB_OK)
            goto out;
        tmp.n++;
    }
    *out = tmp;
    rc = LB_OK;
out:
    cJSON_Delete(root);
    return rc;
}

int lb_oci_index_pick(const lb_oci_index *idx, const char *want, char *msg, size_t msgsz)
{
    int usable = 0, last = -1;
    for (int i = 0; i < idx->n; i++) {
        const lb_oci_desc *d = &idx->m[i];
        if (d->kind != LB_OCI_KIND_MANIFEST && d->kind != LB_OCI_KIND_INDEX)
            continue;
        if (want && *want) {
            if (!strcmp(d->ref_name, want))
                return i;
            continue;
        }
        if (!strcmp(d->os, "linux") && !strcmp(d->arch, "amd64"))
            return i;
        usable++;
        last = i;
    }
    if (want && *want) {
        fail(msg, msgsz, LB_E_NOTFOUND, "the image index names no manifest \"%s\"", want);
        return -1;
    }
    /* one manifest without a platform: a single-arch image (umoci and
     * skopeo write no platform for it) */
    if (usable == 1 && !idx->m[last].os[0])
        return last;
    if (usable == 1 && idx->m[last].kind == LB_OCI_KIND_INDEX)
        return last;
    fail(msg, msgsz, LB_E_NOTFOUND, usable ? "the image index has no linux/amd64 manifest"
                                           : "the image index lists no image manifest");
    return -1;
}

int lb_oci_parse_manifest(const char *json, size_t len, lb_oci_manifest *out, char *msg, size_t msgsz)
{
    int rc = LB_E_INVAL;
    cJSON *root = parse_doc(json, len, "image manifest", msg, msgsz);
    if (!root)
        return len > LB_OCI_JSON_MAX ? LB_E_TOOBIG : LB_E_INVAL;
    lb_oci_manifest *tmp = calloc(1, sizeof *tmp);
    if (!tmp) {
        rc = fail(msg, msgsz, LB_E_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = schema2(root, "image manifest", msg, msgsz)) != LB_OK)
        goto out;
    if ((rc = parse_desc(cJSON_GetObjectItemCaseSensitive(root, "config"), &tmp->config,
                         "the manifest's config", msg, msgsz)) != LB_OK)
        goto out;
    if (tmp->config.kind != LB_OCI_KIND_CONFIG) {
        rc = fail(msg, msgsz, LB_E_INVAL, "the manifest's config is not an image config (an artifact, "
                                          "not a container image?)");
        goto out;
    }
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(root, "layers");
    int n = cJSON_IsArray(ls) ? cJSON_GetArraySize(ls) : 0;
    if (n < 1) {
        rc = fail(msg, msgsz, LB_E_INVAL, "the image manifest has no layers");
        goto out;
    }
    if (n > LB_OCI_LAYERS_MAX) {
        rc = fail(msg, msgsz, LB_E_TOOBIG, "the image has %d layers; at most %d are taken (squash it)", n,
                  LB_OCI_LAYERS_MAX);
        goto out;
    }
    const cJSON *l;
    cJSON_ArrayForEach(l, ls) {
        char what[64];
        snprintf(what, sizeof what, "layer %d of the manifest", tmp->nlayers + 1);
        if ((rc = parse_desc(l, &tmp->layers[tmp->nlayers], what, msg, msgsz)) != LB_OK)
            goto out;
        if (tmp->layers[tmp->nlayers].kind != LB_OCI_KIND_LAYER) {
            rc = fail(msg, msgsz, LB_E_INVAL, "%s (%s) is not a tar layer (foreign, non-distributable and "
                                              "encrypted layers are not taken)", what,
                      tmp->layers[tmp->nlayers].digest);
            goto out;
        }
        tmp->nlayers++;
    }
    *out = *tmp;
    rc = LB_OK;
out:
    free(tmp);
    cJSON_Delete(root);
    return rc;
}

void lb_oci_config_free(lb_oci_config *c)
{
    if (!c)
        return;
    char **arrs[] = {c->env, c->cmd, c->entrypoint};
    int ns[] = {c->nenv, c->ncmd, c->nentry};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; arrs[k] && i < ns[k]; i++)
            free(arrs[k][i]);
        free(arrs[k]);
    }
    free(c->workdir);
    memset(c, 0, sizeof *c);
}

/* A list of strings (Env, Cmd, Entrypoint): each valid UTF-8, at most
 * LB_OCI_STR_MAX bytes, at most max of them. null or absent is empty. */
static int get_strv(const cJSON *o, const char *key, int max, char ***out, int *n, char *msg, size_t msgsz)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!a || cJSON_IsNull(a))
        return LB_OK;
    if (!cJSON_IsArray(a))
        return fail(msg, msgsz, LB_E_INVAL, "the image config's %s is not a list", key);
    int cnt = cJSON_GetArraySize(a);
    if (cnt > max)
        return fail(msg, msgsz, LB_E_TOOBIG, "the image config's %s has %d entries; at most %d are taken",
                    key, cnt, max);
    *out = calloc((size_t)cnt + 1, sizeof **out);
    if (!*out)
        return fail(msg, msgsz, LB_E_NOMEM, "out of memory");
    const cJSON *v;
    cJSON_ArrayForEach(v, a) {
        size_t l = cJSON_IsString(v) && v->valuestring ? strlen(v->valuestring) : 0;
        if (!cJSON_IsString(v) || !v->valuestring || l > LB_OCI_STR_MAX || !lb_utf8_valid(v->valuestring, l))
            return fail(msg, msgsz, LB_E_INVAL, "entry %d of the image config's %s is not a UTF-8 string of "
                                                "at most %d bytes", *n + 1, key, LB_OCI_STR_MAX);
        if (!((*out)[*n] = strdup(v->valuestring)))
            return fail(msg, msgsz, LB_E_NOMEM, "out of memory");
        (*n)++;
    }
    return LB_OK;
}

int lb_oci_parse_config(const char *json, size_t len, lb_oci_config *out, char *msg, size_t msgsz)
{
    int rc;
    memset(out, 0, sizeof *out);
    cJSON *root = parse_doc(json, len, "image config", msg, msgsz);
    if (!root)
        return len > LB_OCI_JSON_MAX ? LB_E_TOOBIG : LB_E_INVAL;
    if (get_str(root, "os", out->os, sizeof out->os) != 0 ||
        get_str(root, "architecture", out->arch, sizeof out->arch) != 0) {
        rc = fail(msg, msgsz, LB_E_INVAL, "the image config's os or architecture is not a short string");
        goto out;
    }
    if (out->os[0] && strcmp(out->os, "linux") != 0) {
        rc = fail(msg, msgsz, LB_E_INVAL, "the image is for %s, not linux", out->os);
        goto out;
    }
    const cJSON *cf = cJSON_GetObjectItemCaseSensitive(root, "config");
    if (cf && !cJSON_IsNull(cf) && !cJSON_IsObject(cf)) {
        rc = fail(msg, msgsz, LB_E_INVAL, "the image config's \"config\" is not an object");
        goto out;
    }
    char wd[LB_OCI_STR_MAX + 1] = "";
    if (cJSON_IsObject(cf)) {
        if (get_str(cf, "User", out->user, sizeof out->user) != 0) {
            rc = fail(msg, msgsz, LB_E_INVAL, "the image config's User is not a UTF-8 string of at most %d "
                                              "bytes", LB_OCI_USER_MAX);
            goto out;
        }
        if (get_str(cf, "WorkingDir", wd, sizeof wd) != 0 || (wd[0] && wd[0] != '/')) {
            rc = fail(msg, msgsz, LB_E_INVAL, "the image config's WorkingDir is not an absolute path of at "
                                              "most %d bytes", LB_OCI_STR_MAX);
            goto out;
        }
        if ((rc = get_strv(cf, "Env", LB_OCI_ENV_MAX, &out->env, &out->nenv, msg, msgsz)) != LB_OK ||
            (rc = get_strv(cf, "Cmd", LB_OCI_ENV_MAX, &out->cmd, &out->ncmd, msg, msgsz)) != LB_OK ||
            (rc = get_strv(cf, "Entrypoint", LB_OCI_ENV_MAX, &out->entrypoint, &out->nentry, msg, msgsz)) != LB_OK)
            goto out;
        for (int i = 0; i < out->nenv; i++) {
            const char *eq = strchr(out->env[i], '=');
            if (!eq || eq == out->env[i]) {
                rc = fail(msg, msgsz, LB_E_INVAL, "entry %d of the image config's Env is not NAME=VALUE", i + 1);
                goto out;
            }
        }
    }
    if (!(out->workdir = strdup(wd))) {
        rc = fail(msg, msgsz, LB_E_NOMEM, "out of memory");
        goto out;
    }
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "rootfs");
    const cJSON *di = cJSON_IsObject(rf) ? cJSON_GetObjectItemCaseSensitive(rf, "diff_ids") : NULL;
    out->ndiff = cJSON_IsArray(di) ? cJSON_GetArraySize(di) : -1;
    if (out->ndiff < 0) {
        rc = fail(msg, msgsz, LB_E_INVAL, "the image config has no rootfs.diff_ids list");
        goto out;
    }
    rc = LB_OK;
out:
    cJSON_Delete(root);
    return rc;
}

static int get_name(const cJSON *v, char *out, size_t outsz)
{
    char clean[LB_PATH_MAX + 1];
    if (!cJSON_IsString(v) || !v->valuestring || strlen(v->valuestring) >= outsz ||
        lb_path_clean_rel(v->valuestring, strlen(v->valuestring), clean, sizeof clean) != LB_OK)
        return -1;
    size_t n = strlen(clean);
    if (n >= outsz)
        return -1;
    memcpy(out, clean, n + 1);
    return 0;
}

int lb_docker_parse_manifest(const char *json, size_t len, lb_docker_manifest *out, char *msg, size_t msgsz)
{
    int rc = LB_E_INVAL;
    if (len > LB_OCI_JSON_MAX)
        return fail(msg, msgsz, LB_E_TOOBIG, "manifest.json is larger than %u bytes", LB_OCI_JSON_MAX);
    cJSON *root = cJSON_ParseWithLength(json, len);
    lb_docker_manifest *tmp = calloc(1, sizeof *tmp);
    if (!tmp) {
        rc = fail(msg, msgsz, LB_E_NOMEM, "out of memory");
        goto out;
    }
    if (!cJSON_IsArray(root) || cJSON_GetArraySize(root) < 1 || !cJSON_IsObject(cJSON_GetArrayItem(root, 0))) {
        rc = fail(msg, msgsz, LB_E_INVAL, "manifest.json is not a list of images");
        goto out;
    }
    const cJSON *img = cJSON_GetArrayItem(root, 0);
    if (get_name(cJSON_GetObjectItemCaseSensitive(img, "Config"), tmp->config, sizeof tmp->config) != 0) {
        rc = fail(msg, msgsz, LB_E_INVAL, "manifest.json's Config is not a clean relative file name");
        goto out;
    }
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(img, "RepoTags");
    const cJSON *t0 = cJSON_IsArray(tags) ? cJSON_GetArrayItem(tags, 0) : NULL;
    if (cJSON_IsString(t0) && t0->valuestring && strlen(t0->valuestring) < sizeof tmp->repo_tag &&
        lb_utf8_valid(t0->valuestring, strlen(t0->valuestring)))
        snprintf(tmp->repo_tag, sizeof tmp->repo_tag, "%s", t0->valuestring);
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(img, "Layers");
    int n = cJSON_IsArray(ls) ? cJSON_GetArraySize(ls) : 0;
    if (n < 1) {
        rc = fail(msg, msgsz, LB_E_INVAL, "manifest.json names no layers");
        goto out;
    }
    if (n > LB_OCI_LAYERS_MAX) {
        rc = fail(msg, msgsz, LB_E_TOOBIG, "the image has %d layers; at most %d are taken (squash it)", n,
                  LB_OCI_LAYERS_MAX);
        goto out;
    }
    const cJSON *l;
    cJSON_ArrayForEach(l, ls) {
        if (get_name(l, tmp->layers[tmp->nlayers], sizeof tmp->layers[0]) != 0) {
            rc = fail(msg, msgsz, LB_E_INVAL, "layer %d of manifest.json is not a clean relative file name",
                      tmp->nlayers + 1);
            goto out;
        }
        tmp->nlayers++;
    }
    *out = *tmp;
    rc = LB_OK;
out:
    free(tmp);
    cJSON_Delete(root);
    return rc;
}
