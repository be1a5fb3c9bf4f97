/* Pulling an image into an OCI image layout folder (pull_image.h). */
#include "images/pull_image.h"

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
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define ACCEPT_MANIFESTS                                                                                      \
    "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, "   \
    "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"

static void hex_of(const unsigned char *md, char *out)
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void sha256_digest(const void *p, size_t n, char out[72])
{
    unsigned char md[32];
    unsigned int ml = 0;
    EVP_Digest(p, n, md, &ml, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 7);
    hex_of(md, out + 7);
}

static int digest_ok(const char *d)
{
    if (!d || strlen(d) != 71 || strncmp(d, "sha256:", 7))
        return 0;
    for (int i = 7; i < 71; i++)
        if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f')))
            return 0;
    return 1;
}

static int is_index_type(const char *t)
{
    return !strcmp(t, "application/vnd.oci.image.index.v1+json") ||
           !strcmp(t, "application/vnd.docker.distribution.manifest.list.v2+json");
}

static int is_manifest_type(const char *t)
{
    return !strcmp(t, "application/vnd.oci.image.manifest.v1+json") ||
           !strcmp(t, "application/vnd.docker.distribution.manifest.v2+json");
}

/* A descriptor's digest and size, checked. */
static int descriptor(const cJSON *d, long long max, char *digest, long long *size, const char *what, char *msg,
                      size_t msgsz)
{
    const cJSON *dg = cJSON_GetObjectItemCaseSensitive(d, "digest");
    const cJSON *sz = cJSON_GetObjectItemCaseSensitive(d, "size");
    if (!cJSON_IsString(dg) || !digest_ok(dg->valuestring)) {
        lb_say(msg, msgsz, "The image's %s has a digest that is not sha256 and 64 lowercase hex digits.", what);
        return LB_E_INVAL;
    }
    if (!cJSON_IsNumber(sz) || sz->valuedouble < 0 || sz->valuedouble > 9e15 ||
        sz->valuedouble != (double)(long long)sz->valuedouble) {
        lb_say(msg, msgsz, "The image's %s %s has no valid size.", what, dg->valuestring);
        return LB_E_INVAL;
    }
    if ((long long)sz->valuedouble > max) {
        lb_say(msg, msgsz, "The image's %s %s is %.0f bytes, more than the %lld allowed.", what, dg->valuestring,
            sz->valuedouble, max);
        return LB_E_TOOBIG;
    }
    memcpy(digest, dg->valuestring, 72);
    *size = (long long)sz->valuedouble;
    return LB_OK;
}

/* GET a manifest by tag or digest into body; its media type into type.
 * A digest reference must match the bytes. */
static int get_manifest(lb_reg_client *c, const char *reference, lb_buf *body, char *type, size_t typesz,
                        char *digest, char *msg, size_t msgsz)
{
    char url[600];
    snprintf(url, sizeof url, "/v2/%s/manifests/%s", c->repo, reference);
    lb_reg_req rq;
    lb_reg_req_init(&rq, "GET", url);
    rq.accept = ACCEPT_MANIFESTS;
    rq.out = body;
    lb_reg_resp rs;
    int rc = lb_reg_do(c, &rq, &rs, msg, msgsz);
    if (rc)
        return rc;
    if (rs.status == 404) {
        lb_say(msg, msgsz, "The registry at %s has no image %s:%s%s%s.", c->host, c->repo, reference,
            rs.errbody[0] ? ": " : "", rs.errbody);
        return LB_E_NOTFOUND;
    }
    if (rs.status != 200) {
        lb_reg_say_status(c, &rq, &rs, msg, msgsz);
        return rs.status == 401 || rs.status == 403 ? LB_E_DENIED : LB_E_PROTO;
    }
    sha256_digest(body->data ? body->data : "", body->len, digest);
    if (!strncmp(reference, "sha256:", 7) && strcmp(reference, digest)) {
        lb_say(msg, msgsz, "The manifest the registry at %s sent for %s is not what its digest says (%s).", c->host,
            reference, digest);
        return LB_E_PROTO;
    }
    /* the type: the Content-Type, else the document's own mediaType */
    snprintf(type, typesz, "%.*s", (int)strcspn(rs.content_type, "; "), rs.content_type);
    if (!is_index_type(type) && !is_manifest_type(type)) {
        cJSON *doc = cJSON_ParseWithLength(body->data ? body->data : "", body->len);
        const cJSON *mt = doc ? cJSON_GetObjectItemCaseSensitive(doc, "mediaType") : NULL;
        snprintf(type, typesz, "%s", cJSON_IsString(mt) ? mt->valuestring : "");
        if (!is_index_type(type) && !is_manifest_type(type) && doc) {
            if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "manifests")))
                snprintf(type, typesz, "application/vnd.oci.image.index.v1+json");
            else if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "layers")))
                snprintf(type, typesz, "application/vnd.oci.image.manifest.v1+json");
        }
        cJSON_Delete(doc);
    }
    if (!is_index_type(type) && !is_manifest_type(type)) {
        lb_say(msg, msgsz, "The registry at %s sent a manifest of a kind llmbox does not read (%s); "
                        "Docker's old schema 1 is not supported.", c->host, type[0] ? type : "no type");
        return LB_E_INVAL;
    }
    return LB_OK;
}

/* The linux/amd64 manifest's digest of an index. */
static int pick_platform(const lb_buf *body, char *digest, char *msg, size_t msgsz)
{
    cJSON *doc = cJSON_ParseWithLength(body->data ? body->data : "", body->len);
    const cJSON *ms = doc ? cJSON_GetObjectItemCaseSensitive(doc, "manifests") : NULL;
    int rc = LB_E_NOTFOUND;
    if (!cJSON_IsArray(ms)) {
        lb_say(msg, msgsz, "The image's manifest list is not JSON with a \"manifests\" array.");
        cJSON_Delete(doc);
        return LB_E_INVAL;
    }
    const cJSON *m;
    cJSON_ArrayForEach(m, ms) {
        const cJSON *pf = cJSON_GetObjectItemCaseSensitive(m, "platform");
        const cJSON *os = pf ? cJSON_GetObjectItemCaseSensitive(pf, "os") : NULL;
        const cJSON *ar = pf ? cJSON_GetObjectItemCaseSensitive(pf, "architecture") : NULL;
        const cJSON *mt = cJSON_GetObjectItemCaseSensitive(m, "mediaType");
        if (!cJSON_IsString(os) || !cJSON_IsString(ar) || strcmp(os->valuestring, "linux") ||
            strcmp(ar->valuestring, "amd64") || (cJSON_IsString(mt) && !is_manifest_type(mt->valuestring)))
            continue;
        long long size;
        rc = descriptor(m, LB_PULL_MANIFEST_MAX, digest, &size, "linux/amd64 manifest", msg, msgsz);
        break;
    }
    if (rc == LB_E_NOTFOUND)
        lb_say(msg, msgsz, "The image's manifest list has no linux/amd64 image.");
    cJSON_Delete(doc);
    return rc;
}

static int progress_ok(const lb_pull_opts *o)
{
    return !o->quiet;
}

/* One blob into dir/blobs/sha256/<hex>, checked against its digest and
 * size while it streams; resumed from a .partial left by a stopped pull. */
static int get_blob(lb_reg_client *c, const lb_pull_opts *o, const char *dir, const char *digest, long long size,
                    const char *what, char *msg, size_t msgsz)
{
    char path[4200], part[4300];
    snprintf(path, sizeof path, "%s/blobs/sha256/%s", dir, digest + 7);
    snprintf(part, sizeof part, "%s.partial", path);
    struct stat st;
    if (!stat(path, &st) && S_ISREG(st.st_mode) && st.st_size == size)
        return LB_OK; /* verified when it was renamed into place */
    int fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        lb_say(msg, msgsz, "Cannot write %s: %s.", part, strerror(errno));
        return LB_E_IO;
    }
    EVP_MD_CTX *sha = EVP_MD_CTX_new();
    int rc = LB_OK;
    long long have = 0;
    if (!sha || !EVP_DigestInit_ex(sha, EVP_sha256(), NULL)) {
        rc = LB_E_NOMEM;
        goto out;
    }
    /* what a stopped pull left: hash it again, ask for the rest */
    char buf[65536];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            lb_say(msg, msgsz, "Cannot read %s: %s.", part, strerror(errno));
            rc = LB_E_IO;
            goto out;
        }
        if (r == 0)
            break;
        have += r;
        EVP_DigestUpdate(sha, buf, (size_t)r);
    }
    if (have > size) { /* not ours to trust: start again */
        if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET) < 0 || !EVP_DigestInit_ex(sha, EVP_sha256(), NULL)) {
            rc = LB_E_IO;
            goto out;
        }
        have = 0;
    }
    if (have < size) {
        char url[600];
        snprintf(url, sizeof url, "/v2/%s/blobs/%s", c->repo, digest);
        lb_reg_req rq;
        lb_reg_req_init(&rq, "GET", url);
        rq.out_fd = fd;
        rq.out_sha = sha;
        rq.out_max = size;
        rq.range_from = have;
        rq.follow = 1;
        lb_reg_resp rs;
        if (progress_ok(o) && have)
            fprintf(stderr, "llmbox: pull: %s %.19s resumes at %lld of %lld bytes\n", what, digest, have, size);
        rc = lb_reg_do(c, &rq, &rs, msg, msgsz);
        if (rc == LB_E_TOOBIG)
            lb_say(msg, msgsz, "The registry at %s sent more than the %lld bytes the manifest gives for %s %s.",
                c->host, size, what, digest);
        if (rc)
            goto out;
        if (rs.status != 200 && rs.status != 206) {
            lb_reg_say_status(c, &rq, &rs, msg, msgsz);
            rc = rs.status == 404 ? LB_E_NOTFOUND : LB_E_PROTO;
            goto out;
        }
        have = (rs.restarted ? 0 : have) + rs.written;
    }
    unsigned char md[32];
    unsigned int ml = 0;
    char got[72];
    EVP_DigestFinal_ex(sha, md, &ml);
    memcpy(got, "sha256:", 7);
    hex_of(md, got + 7);
    if (have != size || strcmp(got, digest)) {
        /* a corrupt or truncated blob is not kept for the next try */
        LB_IGNORE(ftruncate(fd, 0)); /* the unlink below removes it anyway */
        unlink(part);
        lb_say(msg, msgsz, "The %s the registry at %s sent is not what its digest says: %lld bytes with %s, "
                        "expected %lld bytes with %s; nothing was kept.", what, c->host, have, got, size, digest);
        rc = LB_E_PROTO;
        goto out;
    }
    if (fsync(fd) || rename(part, path)) {
        lb_say(msg, msgsz, "Cannot store %s: %s.", path, strerror(errno));
        rc = LB_E_IO;
        goto out;
    }
out:
    EVP_MD_CTX_free(sha);
    close(fd);
    return rc;
}

static int put_doc(const char *dir, const char *digest, const lb_buf *b, char *msg, size_t msgsz)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/blobs/sha256/%s", dir, digest + 7);
    if (lb_write_file_atomic(path, b->data ? b->data : "", b->len, 0644) != LB_OK) {
        lb_say(msg, msgsz, "Cannot write %s: %s.", path, strerror(errno));
        return LB_E_IO;
    }
    return LB_OK;
}

static int write_index(const char *dir, const char *type, const char *digest, size_t size, const char *tag,
                       char *msg, size_t msgsz)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/oci-layout", dir);
    const char *layout = "{\"imageLayoutVersion\":\"1.0.0\"}";
    if (lb_write_file_atomic(path, layout, strlen(layout), 0644) != LB_OK) {
        lb_say(msg, msgsz, "Cannot write %s: %s.", path, strerror(errno));
        return LB_E_IO;
    }
    cJSON *idx = cJSON_CreateObject();
    cJSON_AddNumberToObject(idx, "schemaVersion", 2);
    cJSON_AddStringToObject(idx, "mediaType", "application/vnd.oci.image.index.v1+json");
    cJSON *ms = cJSON_AddArrayToObject(idx, "manifests");
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "mediaType", type);
    cJSON_AddStringToObject(d, "digest", digest);
    cJSON_AddNumberToObject(d, "size", (double)size);
    cJSON *pf = cJSON_AddObjectToObject(d, "platform");
    cJSON_AddStringToObject(pf, "architecture", "amd64");
    cJSON_AddStringToObject(pf, "os", "linux");
    if (tag && *tag) {
        cJSON *an = cJSON_AddObjectToObject(d, "annotations");
        cJSON_AddStringToObject(an, "org.opencontainers.image.ref.name", tag);
    }
    cJSON_AddItemToArray(ms, d);
    char *text = cJSON_PrintUnformatted(idx);
    cJSON_Delete(idx);
    snprintf(path, sizeof path, "%s/index.json", dir);
    int rc = text && lb_write_file_atomic(path, text, strlen(text), 0644) == LB_OK ? LB_OK : LB_E_IO;
    cJSON_free(text);
    if (rc)
        lb_say(msg, msgsz, "Cannot write %s: %s.", path, strerror(errno));
    return rc;
}

int lb_pull_image(const lb_pull_opts *o, char *canon, size_t canonsz, char *manifest, size_t manifestsz, char *msg,
                  size_t msgsz)
{
    lb_image_ref ref;
    int rc = lb_image_ref_parse(o->ref, 0, &ref, msg, msgsz);
    if (rc)
        return rc;
    char text[LB_IMAGE_REF_MAX + 1];
    if ((rc = lb_image_ref_format(&ref, text, sizeof text)))
        return rc;
    char blobs[4200];
    snprintf(blobs, sizeof blobs, "%s/blobs/sha256", o->layout_dir);
    if (lb_mkdirs(blobs, 0755) != LB_OK) {
        lb_say(msg, msgsz, "Cannot create %s: %s.", blobs, strerror(errno));
        return LB_E_IO;
    }
    /* a layout being written never looks whole: index.json comes back last */
    char idx[4200];
    snprintf(idx, sizeof idx, "%s/index.json", o->layout_dir);
    if (unlink(idx) && errno != ENOENT) {
        lb_say(msg, msgsz, "Cannot remove %s: %s.", idx, strerror(errno));
        return LB_E_IO;
    }
    lb_reg_client c;
    lb_buf body;
    lb_buf_init(&body, LB_PULL_MANIFEST_MAX);
    cJSON *doc = NULL;
    if ((rc = lb_reg_open(&c, ref.host, ref.repo, "pull", o->insecure, o->auth_file, msg, msgsz)))
        goto out;
    char type[128], digest[72];
    if ((rc = get_manifest(&c, ref.digest[0] ? ref.digest : ref.tag, &body, type, sizeof type, digest, msg, msgsz)))
        goto out;
    if (is_index_type(type)) {
        char want[72];
        if ((rc = pick_platform(&body, want, msg, msgsz)))
            goto out;
        if (progress_ok(o))
            fprintf(stderr, "llmbox: pull: %s is a list of platforms; linux/amd64 is %.19s\n", text, want);
        if ((rc = get_manifest(&c, want, &body, type, sizeof type, digest, msg, msgsz)))
            goto out;
        if (!is_manifest_type(type)) {
            lb_say(msg, msgsz, "The image's linux/amd64 entry is itself a list.");
            rc = LB_E_INVAL;
            goto out;
        }
    }
    doc = cJSON_ParseWithLength(body.data ? body.data : "", body.len);
    const cJSON *cfgd = doc ? cJSON_GetObjectItemCaseSensitive(doc, "config") : NULL;
    const cJSON *layers = doc ? cJSON_GetObjectItemCaseSensitive(doc, "layers") : NULL;
    if (!cJSON_IsObject(cfgd) || !cJSON_IsArray(layers)) {
        lb_say(msg, msgsz, "The image's manifest is not JSON with a config and layers.");
        rc = LB_E_INVAL;
        goto out;
    }
    int nl = cJSON_GetArraySize(layers);
    if (nl > LB_PULL_LAYERS_MAX) {
        lb_say(msg, msgsz, "The image has %d layers, more than the %d allowed.", nl, LB_PULL_LAYERS_MAX);
        rc = LB_E_TOOBIG;
        goto out;
    }
    char d[72];
    long long size, total = 0;
    if ((rc = descriptor(cfgd, LB_PULL_CONFIG_MAX, d, &size, "config", msg, msgsz)) ||
        (rc = get_blob(&c, o, o->layout_dir, d, size, "config", msg, msgsz)))
        goto out;
    total = size;
    int i = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, layers) {
        i++;
        char what[32];
        snprintf(what, sizeof what, "layer %d/%d", i, nl);
        if ((rc = descriptor(l, o->blob_max, d, &size, what, msg, msgsz)))
            goto out;
        total += size;
        if (total > o->total_max) {
            lb_say(msg, msgsz, "The image is more than the %lld bytes allowed for one image.", o->total_max);
            rc = LB_E_TOOBIG;
            goto out;
        }
        int64_t t0 = lb_mono_ms();
        if ((rc = get_blob(&c, o, o->layout_dir, d, size, what, msg, msgsz)))
            goto out;
        if (progress_ok(o))
            fprintf(stderr, "llmbox: pull: %s %.19s %.1f MiB in %.1f s\n", what, d, size / 1048576.0,
                    (double)(lb_mono_ms() - t0) / 1000.0);
    }
    if ((rc = put_doc(o->layout_dir, digest, &body, msg, msgsz)) ||
        (rc = write_index(o->layout_dir, type, digest, body.len, ref.tag, msg, msgsz)))
        goto out;
    if (progress_ok(o))
        fprintf(stderr, "llmbox: pull: %s is %s, %d layers, %.1f MiB\n", text, digest, nl, total / 1048576.0);
    if (canon)
        snprintf(canon, canonsz, "%s", text);
    if (manifest)
        snprintf(manifest, manifestsz, "%s", digest);
out:
    cJSON_Delete(doc);
    lb_buf_free(&body);
    lb_reg_close(&c);
    return rc;
}
