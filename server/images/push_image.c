/* Pushing an OCI image layout's image to a registry (push_image.h). */
#include "images/push_image.h"

#include "common/buf.h"
#include "common/image_ref.h"
#include "common/util.h"
#include "images/registry_http.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DOC_MAX (4 << 20) /* index.json and a manifest, as pull_image.h's cap */

static int digest_ok(const char *d)
{
    if (!d || strlen(d) != 71 || strncmp(d, "sha256:", 7))
        return 0;
    for (int i = 7; i < 71; i++)
        if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f')))
            return 0;
    return 1;
}

/* The layout's manifest descriptor: the only one, or the linux/amd64 one. */
static int pick(const cJSON *idx, const cJSON **out, char *msg, size_t msgsz)
{
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(idx, "manifests");
    if (!cJSON_IsArray(ms) || cJSON_GetArraySize(ms) < 1) {
        lb_say(msg, msgsz, "The layout's index.json lists no manifest.");
        return LB_E_INVAL;
    }
    if (cJSON_GetArraySize(ms) == 1) {
        *out = cJSON_GetArrayItem(ms, 0);
        return LB_OK;
    }
    const cJSON *m;
    cJSON_ArrayForEach(m, ms) {
        const cJSON *pf = cJSON_GetObjectItemCaseSensitive(m, "platform");
        const cJSON *os = pf ? cJSON_GetObjectItemCaseSensitive(pf, "os") : NULL;
        const cJSON *ar = pf ? cJSON_GetObjectItemCaseSensitive(pf, "architecture") : NULL;
        if (cJSON_IsString(os) && cJSON_IsString(ar) && !strcmp(os->valuestring, "linux") &&
            !strcmp(ar->valuestring, "amd64")) {
            *out = m;
            return LB_OK;
        }
    }
    lb_say(msg, msgsz, "The layout holds several images and none for linux/amd64.");
    return LB_E_NOTFOUND;
}

/* The upload URL with "digest=<d>" added. */
static void with_digest(const char *loc, const char *d, char *out, size_t outsz)
{
    snprintf(out, outsz, "%s%sdigest=%s", loc, strchr(loc, '?') ? "&" : "?", d);
}

static int push_blob(lb_reg_client *c, const lb_push_opts *o, const char *d, long long size, const char *what,
                     char *msg, size_t msgsz)
{
    char url[600], path[4200];
    snprintf(url, sizeof url, "/v2/%s/blobs/%s", c->repo, d);
    lb_reg_req rq;
    lb_reg_resp rs;
    lb_reg_req_init(&rq, "HEAD", url);
    int rc = lb_reg_do(c, &rq, &rs, msg, msgsz);
    if (rc)
        return rc;
    if (rs.status == 200) {
        if (!o->quiet)
            fprintf(stderr, "llmbox: push: %s %.19s is there already\n", what, d);
        return LB_OK;
    }
    snprintf(path, sizeof path, "%s/blobs/sha256/%s", o->layout_dir, d + 7);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size != size) {
        lb_say(msg, msgsz, "The layout's %s %s is missing or not %lld bytes.", what, d, size);
        if (fd >= 0)
            close(fd);
        return LB_E_INVAL;
    }
    int64_t t0 = lb_mono_ms();
    snprintf(url, sizeof url, "/v2/%s/blobs/uploads/", c->repo);
    lb_reg_req_init(&rq, "POST", url);
    if ((rc = lb_reg_do(c, &rq, &rs, msg, msgsz)))
        goto out;
    if (rs.status != 202 || !rs.location[0]) {
        lb_reg_say_status(c, &rq, &rs, msg, msgsz);
        rc = rs.status == 401 || rs.status == 403 ? LB_E_DENIED : LB_E_PROTO;
        goto out;
    }
    char loc[LB_REG_URL_MAX], put[LB_REG_URL_MAX + 100];
    snprintf(loc, sizeof loc, "%s", rs.location);
    long long off = 0;
    int chunked = o->chunk_bytes > 0 && size > o->chunk_bytes;
    while (chunked && off < size) {
        long long n = size - off < o->chunk_bytes ? size - off : o->chunk_bytes;
        char range[64];
        snprintf(range, sizeof range, "%lld-%lld", off, off + n - 1);
        lb_reg_req_init(&rq, "PATCH", loc);
        rq.content_type = "application/octet-stream";
        rq.content_range = range;
        rq.body_fd = fd;
        rq.body_off = off;
        rq.body_fd_len = n;
        if ((rc = lb_reg_do(c, &rq, &rs, msg, msgsz)))
            goto out;
        if (rs.status != 202 || !rs.location[0]) {
            lb_reg_say_status(c, &rq, &rs, msg, msgsz);
            rc = LB_E_PROTO;
            goto out;
        }
        snprintf(loc, sizeof loc, "%s", rs.location);
        off += n;
    }
    with_digest(loc, d, put, sizeof put);
    lb_reg_req_init(&rq, "PUT", put);
    rq.content_type = "application/octet-stream";
    if (!chunked) {
        rq.body_fd = fd;
        rq.body_fd_len = size;
    }
    if ((rc = lb_reg_do(c, &rq, &rs, msg, msgsz)))
        goto out;
    if (rs.status != 201) {
        lb_reg_say_status(c, &rq, &rs, msg, msgsz);
        rc = LB_E_PROTO;
        goto out;
    }
    if (!o->quiet)
        fprintf(stderr, "llmbox: push: %s %.19s %.1f MiB in %.1f s%s\n", what, d, size / 1048576.0,
                (double)(lb_mono_ms() - t0) / 1000.0, chunked ? " (chunked)" : "");
out:
    close(fd);
    return rc;
}

static int read_doc(const char *path, char **data, size_t *len, char *msg, size_t msgsz)
{
    int rc = lb_read_file(path, DOC_MAX, data, len);
    if (rc)
        lb_say(msg, msgsz, "Cannot read %s: %s.", path, lb_strerror(rc));
    return rc;
}

int lb_push_image(const lb_push_opts *o, char *manifest, size_t manifestsz, char *msg, size_t msgsz)
{
    lb_image_ref ref;
    int rc = lb_image_ref_parse(o->ref, 0, &ref, msg, msgsz);
    if (rc)
        return rc;
    char path[4200], *idx_text = NULL, *man = NULL;
    size_t idx_len = 0, man_len = 0;
    cJSON *idx = NULL, *mdoc = NULL;
    lb_reg_client c;
    memset(&c, 0, sizeof c);
    snprintf(path, sizeof path, "%s/index.json", o->layout_dir);
    if ((rc = read_doc(path, &idx_text, &idx_len, msg, msgsz)))
        goto out;
    idx = cJSON_ParseWithLength(idx_text, idx_len);
    const cJSON *md = NULL;
    if (!idx) {
        lb_say(msg, msgsz, "The layout's index.json is not JSON.");
        rc = LB_E_INVAL;
        goto out;
    }
    if ((rc = pick(idx, &md, msg, msgsz)))
        goto out;
    const cJSON *mdg = cJSON_GetObjectItemCaseSensitive(md, "digest");
    const cJSON *mmt = cJSON_GetObjectItemCaseSensitive(md, "mediaType");
    if (!cJSON_IsString(mdg) || !digest_ok(mdg->valuestring) || !cJSON_IsString(mmt)) {
        lb_say(msg, msgsz, "The layout's manifest descriptor has no sha256 digest or media type.");
        rc = LB_E_INVAL;
        goto out;
    }
    char mdigest[72], mtype[128];
    snprintf(mdigest, sizeof mdigest, "%s", mdg->valuestring);
    snprintf(mtype, sizeof mtype, "%s", mmt->valuestring);
    snprintf(path, sizeof path, "%s/blobs/sha256/%s", o->layout_dir, mdigest + 7);
    if ((rc = read_doc(path, &man, &man_len, msg, msgsz)))
        goto out;
    unsigned char h[32];
    unsigned int hl = 0;
    char got[72] = "sha256:";
    EVP_Digest(man, man_len, h, &hl, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(got + 7 + 2 * i, 3, "%02x", h[i]);
    if (strcmp(got, mdigest)) {
        lb_say(msg, msgsz, "The layout's manifest is not what its digest says.");
        rc = LB_E_PROTO;
        goto out;
    }
    if (strstr(mtype, "index") || strstr(mtype, "list")) {
        lb_say(msg, msgsz, "Pushing a list of platforms is not supported; push one image.");
        rc = LB_E_INVAL;
        goto out;
    }
    mdoc = cJSON_ParseWithLength(man, man_len);
    const cJSON *cfgd = mdoc ? cJSON_GetObjectItemCaseSensitive(mdoc, "config") : NULL;
    const cJSON *layers = mdoc ? cJSON_GetObjectItemCaseSensitive(mdoc, "layers") : NULL;
    if (!cJSON_IsObject(cfgd) || !cJSON_IsArray(layers)) {
        lb_say(msg, msgsz, "The layout's manifest is not JSON with a config and layers.");
        rc = LB_E_INVAL;
        goto out;
    }
    if ((rc = lb_reg_open(&c, ref.host, ref.repo, "pull,push", o->insecure, o->auth_file, msg, msgsz)))
        goto out;
    int n = cJSON_GetArraySize(layers), i = 0;
    const cJSON *blob = cfgd;
    for (;;) {
        const cJSON *dg = cJSON_GetObjectItemCaseSensitive(blob, "digest");
        const cJSON *sz = cJSON_GetObjectItemCaseSensitive(blob, "size");
        char what[32];
        snprintf(what, sizeof what, i ? "layer %d/%d" : "config", i, n);
        if (!cJSON_IsString(dg) || !digest_ok(dg->valuestring) || !cJSON_IsNumber(sz) || sz->valuedouble < 0) {
            lb_say(msg, msgsz, "The layout's manifest has a %s without a sha256 digest and a size.", what);
            rc = LB_E_INVAL;
            goto out;
        }
        if ((rc = push_blob(&c, o, dg->valuestring, (long long)sz->valuedouble, what, msg, msgsz)))
            goto out;
        if (++i > n)
            break;
        blob = cJSON_GetArrayItem(layers, i - 1);
    }
    char url[600];
    snprintf(url, sizeof url, "/v2/%s/manifests/%s", c.repo, ref.tag[0] ? ref.tag : ref.digest);
    lb_reg_req rq;
    lb_reg_resp rs;
    lb_reg_req_init(&rq, "PUT", url);
    rq.content_type = mtype;
    rq.body = man;
    rq.body_len = man_len;
    if ((rc = lb_reg_do(&c, &rq, &rs, msg, msgsz)))
        goto out;
    if (rs.status != 201) {
        lb_reg_say_status(&c, &rq, &rs, msg, msgsz);
        rc = LB_E_PROTO;
        goto out;
    }
    if (!o->quiet)
        fprintf(stderr, "llmbox: push: %s is %s\n", o->ref, mdigest);
    if (manifest)
        snprintf(manifest, manifestsz, "%s", mdigest);
out:
    lb_reg_close(&c);
    cJSON_Delete(mdoc);
    cJSON_Delete(idx);
    free(man);
    free(idx_text);
    return rc;
}
