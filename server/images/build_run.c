/* The Dockerfile builder's run: steps, sandboxes, the cache and the
 * resulting OCI layout (build_run.h). */
#include "images/build_run.h"

#include "common/image_ref.h"
#include "common/util.h"
#include "images/build_copy.h"
#include "images/build_layer.h"
#include "images/image_admin.h"
#include "images/image_ids.h"
#include "images/import.h"
#include "images/registry_cli.h"
#include "images/store.h"
#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VARS_MAX 4096          /* ARG and ENV values of one build */
#define TMP_IMAGES_MAX 1000    /* one per RUN that runs */
#define OUTPUT_MAX (8u << 20)  /* a RUN's output shown */
#define BPATH (LB_CFG_PATH + 256) /* a path under the store's oci/ */
#define LAYER_MT "application/vnd.oci.image.layer.v1.tar"

typedef struct layer {
    char hex[65];
    char diff[72];             /* the diff_id, "sha256:..." */
    char mt[128];              /* its media type in the manifest */
    long long size;
} layer;

/* An earlier stage's result, kept for a later FROM or COPY --from. */
typedef struct stage_res {
    layer *layers;
    int nl;
    cJSON *config;
    char chain[65];
    char image[128];           /* registered under this name once its files were needed, or "" */
} stage_res;

typedef struct bld {
    const lb_config *cfg;
    const lb_dockerfile *df;
    const lb_build_opts *o;
    const char *ctx;
    char oci[LB_CFG_PATH + 8], stage[LB_CFG_PATH + 80], cache[LB_CFG_PATH + 24], tag[48];
    layer layers[LB_BUILD_LAYERS_MAX];
    int nl, nbase;
    cJSON *config;             /* the OCI image config being built */
    char chain[65];            /* the cache key of the image so far */
    char *shell[LB_DF_ARGS_MAX];
    int nshell;
    char *vnames[VARS_MAX], *vvals[VARS_MAX];
    int visarg[VARS_MAX];
    int nv;
    char *tmpimg[TMP_IMAGES_MAX];
    int ntmp;
    lbsb_conn *conn;
    stage_res stages[LB_DF_STAGES_MAX];
    int nglobal;               /* variables set before the first FROM: the only ones a new stage keeps */
    int step, nsteps, run, cached, seq;
    char *msg;
    size_t msgsz;
} bld;

static int failf(bld *b, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(bld *b, int rc, const char *fmt, ...)
{
    const lb_df_step *s = &b->df->steps[b->step];
    int n = snprintf(b->msg, b->msgsz, "Dockerfile:%d: step %d/%d %s: ", s->line, b->step + 1, b->nsteps,
                     lb_df_kind_name(s->kind));
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < b->msgsz)
        vsnprintf(b->msg + n, b->msgsz - (size_t)n, fmt, ap);
    va_end(ap);
    return rc;
}

static const char *lookup(void *ctx, const char *name)
{
    bld *b = ctx;
    for (int i = b->nv - 1; i >= 0; i--)
        if (!strcmp(b->vnames[i], name))
            return b->vvals[i];
    return NULL;
}

static int expand(bld *b, const char *s, char **out)
{
    char m[512];
    if (lb_df_expand(s, lookup, b, out, m, sizeof m) != LB_OK)
        return failf(b, LB_E_INVAL, "%s", m);
    return LB_OK;
}

static int set_var(bld *b, const char *name, size_t nl, const char *val, int isarg)
{
    if (b->nv >= VARS_MAX)
        return failf(b, LB_E_TOOBIG, "more than %d ARG and ENV values", VARS_MAX);
    if (!(b->vnames[b->nv] = strndup(name, nl)) || !(b->vvals[b->nv] = strdup(val))) {
        free(b->vnames[b->nv]);
        return failf(b, LB_E_NOMEM, "out of memory");
    }
    b->visarg[b->nv++] = isarg;
    return LB_OK;
}

static void sha_hex(const void *p, size_t n, char out[65])
{
    unsigned char d[32];
    unsigned int dl = 0;
    EVP_Digest(p, n, d, &dl, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* chain = sha256(chain, the step's words, extra) */
static void chain_step(bld *b, const char *kind, char *const *words, int nw, const char *extra)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char d[32];
    unsigned int dl = 0;
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    EVP_DigestUpdate(c, b->chain, 64);
    EVP_DigestUpdate(c, kind, strlen(kind) + 1);
    for (int i = 0; i < nw; i++)
        EVP_DigestUpdate(c, words[i], strlen(words[i]) + 1);
    EVP_DigestUpdate(c, extra ? extra : "", extra ? strlen(extra) + 1 : 1);
    EVP_DigestFinal_ex(c, d, &dl);
    EVP_MD_CTX_free(c);
    for (int i = 0; i < 32; i++)
        snprintf(b->chain + 2 * i, 3, "%02x", d[i]);
}

/* The blob hex into the stage's blobs/ (a hard link of the cache's or the
 * store's copy, or a rename of a new file). */
static int stage_blob(bld *b, const char *hex, const char *newfile)
{
    char dst[BPATH], src[BPATH];
    snprintf(dst, sizeof dst, "%s/blobs/sha256/%s", b->stage, hex);
    if (access(dst, F_OK) == 0) {
        if (newfile)
            unlink(newfile);
        return LB_OK;
    }
    if (newfile)
        return rename(newfile, dst) ? LB_E_IO : LB_OK;
    snprintf(src, sizeof src, "%s/blobs/%s", b->cache, hex);
    if (link(src, dst) == 0)
        return LB_OK;
    snprintf(src, sizeof src, "%s/blobs/sha256/%s", b->oci, hex);
    return link(src, dst) == 0 ? LB_OK : LB_E_NOTFOUND;
}

static int have_blob(bld *b, const char *hex)
{
    char p[BPATH];
    snprintf(p, sizeof p, "%s/blobs/%s", b->cache, hex);
    if (access(p, F_OK) == 0)
        return 1;
    snprintf(p, sizeof p, "%s/blobs/sha256/%s", b->oci, hex);
    return access(p, F_OK) == 0;
}

static int push_layer(bld *b, const char *hex, long long size, const char *newfile)
{
    if (b->nl >= LB_BUILD_LAYERS_MAX)
        return failf(b, LB_E_TOOBIG, "the image would have more than %d layers", LB_BUILD_LAYERS_MAX);
    if (stage_blob(b, hex, newfile) != LB_OK)
        return failf(b, LB_E_IO, "cannot place the layer sha256:%s: %s", hex, strerror(errno));
    /* the cache keeps its own link, so a later build finds the layer even
     * when this one fails or the image is removed */
    char src[BPATH], dst[BPATH];
    snprintf(src, sizeof src, "%s/blobs/sha256/%s", b->stage, hex);
    snprintf(dst, sizeof dst, "%s/blobs/%s", b->cache, hex);
    if (access(dst, F_OK) && link(src, dst) && errno != EEXIST)
        return failf(b, LB_E_IO, "cannot keep the layer in the build cache: %s", strerror(errno));
    layer *l = &b->layers[b->nl++];
    snprintf(l->hex, sizeof l->hex, "%s", hex);
    snprintf(l->diff, sizeof l->diff, "sha256:%s", hex);
    snprintf(l->mt, sizeof l->mt, "%s", LAYER_MT);
    l->size = size;
    cJSON *rootfs = cJSON_GetObjectItem(b->config, "rootfs");
    cJSON *ids = rootfs ? cJSON_GetObjectItem(rootfs, "diff_ids") : NULL;
    if (!ids || !cJSON_AddItemToArray(ids, cJSON_CreateString(l->diff)))
        return failf(b, LB_E_NOMEM, "out of memory");
    return LB_OK;
}

static int cache_get(bld *b, char hex[65], long long *size)
{
    char p[BPATH], *t = NULL;
    size_t n = 0;
    snprintf(p, sizeof p, "%s/steps/%s", b->cache, b->chain);
    if (b->o->no_cache || lb_read_file(p, 256, &t, &n) != LB_OK)
        return 0;
    long long sz = -1;
    int ok = sscanf(t, "%64[0-9a-f] %lld", hex, &sz) == 2 && strlen(hex) == 64 && sz >= 0 && have_blob(b, hex);
    free(t);
    *size = sz;
    return ok;
}

static void cache_put(bld *b, const char *hex, long long size)
{
    char p[BPATH], t[128];
    snprintf(p, sizeof p, "%s/steps/%s", b->cache, b->chain);
    int n = snprintf(t, sizeof t, "%s %lld\n", hex, size);
    if (lb_write_file_atomic(p, t, (size_t)n, 0600) != LB_OK)
        fprintf(stderr, "llmbox: build: cannot write the cache entry %s (the step runs again next time)\n", p);
}

static void history(bld *b, const char *by, int empty)
{
    if (!b->config)
        return; /* an ARG before FROM */
    cJSON *h = cJSON_GetObjectItem(b->config, "history");
    if (!h)
        h = cJSON_AddArrayToObject(b->config, "history");
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "created_by", by);
    if (empty)
        cJSON_AddBoolToObject(e, "empty_layer", 1);
    cJSON_AddItemToArray(h, e);
}

static cJSON *cfg_obj(bld *b)
{
    cJSON *c = cJSON_GetObjectItem(b->config, "config");
    if (!cJSON_IsObject(c)) {
        cJSON_DeleteItemFromObject(b->config, "config");
        c = cJSON_AddObjectToObject(b->config, "config");
    }
    return c;
}

static void cfg_set_string(bld *b, const char *key, const char *v)
{
    cJSON *c = cfg_obj(b);
    cJSON_DeleteItemFromObject(c, key);
    cJSON_AddStringToObject(c, key, v);
}

static const char *cfg_string(bld *b, const char *key)
{
    cJSON *v = cJSON_GetObjectItem(cfg_obj(b), key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* ENV k=v into the config's Env (replacing k). */
static void cfg_env(bld *b, const char *k, size_t kl, const char *v)
{
    cJSON *c = cfg_obj(b), *env = cJSON_GetObjectItem(c, "Env");
    if (!cJSON_IsArray(env)) {
        cJSON_DeleteItemFromObject(c, "Env");
        env = cJSON_AddArrayToObject(c, "Env");
    }
    size_t n = kl + strlen(v) + 2;
    char *kv = malloc(n);
    if (!kv)
        return;
    snprintf(kv, n, "%.*s=%s", (int)kl, k, v);
    int i = 0;
    for (cJSON *e = env->child; e; e = e->next, i++)
        if (cJSON_IsString(e) && !strncmp(e->valuestring, k, kl) && e->valuestring[kl] == '=') {
            cJSON_ReplaceItemInArray(env, i, cJSON_CreateString(kv));
            free(kv);
            return;
        }
    cJSON_AddItemToArray(env, cJSON_CreateString(kv));
    free(kv);
}

/* Writes blob text into the stage; hex of it into hex. */
static int put_json_blob(bld *b, const char *text, char hex[65])
{
    char p[BPATH];
    sha_hex(text, strlen(text), hex);
    snprintf(p, sizeof p, "%s/blobs/sha256/%s", b->stage, hex);
    return access(p, F_OK) == 0 ? LB_OK : lb_write_file_atomic(p, text, strlen(text), 0644);
}

/* An OCI layout of the image of ls (nl layers) and config at dir (its
 * blobs hard-linked from the stage), for the store's import. */
static int write_layout_of(bld *b, const char *dir, const layer *ls, int nl, cJSON *config)
{
    char p[BPATH], chex[65], mhex[65];
    snprintf(p, sizeof p, "%s/blobs/sha256", dir);
    if (lb_mkdirs(p, 0700) != LB_OK)
        return failf(b, LB_E_IO, "cannot make %s: %s", p, strerror(errno));
    cJSON_DeleteItemFromObject(config, "created");
    char now[32];
    time_t t = time(NULL);
    struct tm tmv;
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tmv));
    cJSON_AddStringToObject(config, "created", now);
    char *ctext = cJSON_PrintUnformatted(config);
    cJSON *man = cJSON_CreateObject();
    cJSON_AddNumberToObject(man, "schemaVersion", 2);
    cJSON_AddStringToObject(man, "mediaType", "application/vnd.oci.image.manifest.v1+json");
    int rc = ctext ? put_json_blob(b, ctext, chex) : LB_E_NOMEM;
    cJSON *cd = cJSON_AddObjectToObject(man, "config");
    cJSON_AddStringToObject(cd, "mediaType", "application/vnd.oci.image.config.v1+json");
    snprintf(p, sizeof p, "sha256:%s", chex);
    cJSON_AddStringToObject(cd, "digest", p);
    cJSON_AddNumberToObject(cd, "size", ctext ? (double)strlen(ctext) : 0);
    free(ctext);
    cJSON *jl = cJSON_AddArrayToObject(man, "layers");
    for (int i = 0; i < nl; i++) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "mediaType", ls[i].mt);
        snprintf(p, sizeof p, "sha256:%s", ls[i].hex);
        cJSON_AddStringToObject(d, "digest", p);
        cJSON_AddNumberToObject(d, "size", (double)ls[i].size);
        cJSON_AddItemToArray(jl, d);
    }
    char *mtext = cJSON_PrintUnformatted(man);
    cJSON_Delete(man);
    if (!rc)
        rc = mtext ? put_json_blob(b, mtext, mhex) : LB_E_NOMEM;
    long long msize = mtext ? (long long)strlen(mtext) : 0;
    free(mtext);
    const char *hexes[LB_BUILD_LAYERS_MAX + 2];
    int nh = 0;
    hexes[nh++] = chex;
    hexes[nh++] = mhex;
    for (int i = 0; i < nl; i++)
        hexes[nh++] = ls[i].hex;
    for (int i = 0; !rc && i < nh; i++) {
        char src[BPATH], dst[BPATH];
        snprintf(src, sizeof src, "%s/blobs/sha256/%s", b->stage, hexes[i]);
        snprintf(dst, sizeof dst, "%s/blobs/sha256/%s", dir, hexes[i]);
        if (link(src, dst) && errno != EEXIST)
            rc = LB_E_IO;
    }
    char idx[512];
    int n = snprintf(idx, sizeof idx,
                     "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                     "\"digest\":\"sha256:%s\",\"size\":%lld}]}", mhex, msize);
    snprintf(p, sizeof p, "%s/index.json", dir);
    if (!rc)
        rc = lb_write_file_atomic(p, idx, (size_t)n, 0644);
    snprintf(p, sizeof p, "%s/oci-layout", dir);
    if (!rc)
        rc = lb_write_file_atomic(p, "{\"imageLayoutVersion\":\"1.0.0\"}", 30, 0644);
    if (rc)
        return failf(b, rc, "cannot write the image layout %s: %s", dir, strerror(errno));
    return LB_OK;
}

static int write_layout(bld *b, const char *dir)
{
    return write_layout_of(b, dir, b->layers, b->nl, b->config);
}

/* Registers the image of ls and config in the store under a name of this
 * build (removed at its end) into tname: a RUN's sandbox is made of it,
 * and the store extracts its layers, which COPY --from and --chown read. */
static int register_image(bld *b, const layer *ls, int nl, cJSON *config, char *tname, size_t tsz)
{
    char dir[BPATH], canon[LB_IMAGE_REF_MAX + 8], m[1024];
    snprintf(dir, sizeof dir, "%s/img-%d", b->stage, b->seq);
    snprintf(tname, tsz, "llmbox-build/%s:step%d", b->tag, b->seq++);
    int rc = write_layout_of(b, dir, ls, nl, config);
    if (rc)
        return rc;
    if (b->ntmp >= TMP_IMAGES_MAX)
        return failf(b, LB_E_TOOBIG, "more than %d images made for RUN steps and stages", TMP_IMAGES_MAX);
    if ((rc = lb_image_import_layout(b->cfg, dir, tname, NULL, LB_IMPORT_MOVE, canon, sizeof canon, m, sizeof m)))
        return failf(b, rc, "the image so far could not be registered: %s", m);
    if (!(b->tmpimg[b->ntmp] = strdup(tname)))
        return failf(b, LB_E_NOMEM, "out of memory");
    b->ntmp++;
    if (lb_rmtree(dir) != LB_OK)
        fprintf(stderr, "llmbox: build: could not remove %s\n", dir);
    return LB_OK;
}

/* True when every layer of ls is extracted in the store (its root there). */
static int extracted(bld *b, const layer *ls, int nl)
{
    for (int i = 0; i < nl; i++) {
        char p[BPATH];
        struct stat st;
        snprintf(p, sizeof p, "%s/layers/sha256/%s/root", b->oci, ls[i].hex);
        if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            return 0;
    }
    return 1;
}

/* The ids of a COPY --chown that names a user or a group, from the image
 * so far's own /etc/passwd and /etc/group (images/image_ids.h): its layers
 * are registered first when some are not extracted yet (a RUN's, a
 * COPY's). */
static int chown_by_name(bld *b, const char *spec, long *uid, long *gid)
{
    char tname[128], m[512];
    int rc = LB_OK;
    if (!extracted(b, b->layers, b->nl) && (rc = register_image(b, b->layers, b->nl, b->config, tname, sizeof tname)))
        return rc;
    char p[BPATH];
    snprintf(p, sizeof p, "%s/layers/sha256", b->oci);
    int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return failf(b, LB_E_IO, "cannot open %s: %s", p, strerror(errno));
    const char *hexes[LB_BUILD_LAYERS_MAX];
    for (int i = 0; i < b->nl; i++)
        hexes[i] = b->layers[i].hex;
    rc = lb_image_ids_resolve(fd, hexes, b->nl, spec, uid, gid, m, sizeof m);
    close(fd);
    if (rc)
        return failf(b, rc, "--chown=%.64s: %s", spec, m);
    return LB_OK;
}

/* The extracted layer roots of the image so far, top first (for COPY's and
 * WORKDIR's parent folders). */
static int lower_roots(bld *b, char **roots)
{
    int n = 0;
    for (int i = b->nl - 1; i >= 0; i--)
        if (asprintf(&roots[n], "%s/layers/sha256/%s/root", b->oci, b->layers[i].hex) > 0)
            n++;
    return n;
}

static void print_lines(bld *b, const char *p, size_t n)
{
    if (!p)
        return;
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t l = nl ? (size_t)(nl - p) : n;
        fprintf(stderr, "Step %d/%d | %.*s\n", b->step + 1, b->nsteps, (int)l, p);
        n -= nl ? l + 1 : l;
        p += nl ? l + 1 : l;
    }
}

/* s appended single-quoted ('a'b -> 'a'\''b') and a space, for the
 * sandbox's shell */
static int sq(char **out, size_t *len, size_t *cap, const char *s)
{
    size_t need = *len + 4 * strlen(s) + 4;
    if (need > *cap) {
        size_t nc = need * 2;
        char *n = realloc(*out, nc);
        if (!n)
            return LB_E_NOMEM;
        *out = n;
        *cap = nc;
    }
    char *o = *out + *len;
    *o++ = '\'';
    for (; *s; s++) {
        if (*s == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *s;
        }
    }
    *o++ = '\'';
    *o++ = ' ';
    *o = '\0';
    *len = (size_t)(o - *out);
    return LB_OK;
}

static int do_run(bld *b, const lb_df_step *s)
{
    /* the command: ARG values as the command's environment, then the shell
     * (or the exec form's argv) */
    char *cmd = NULL, *extra = NULL;
    size_t len = 0, cap = 0;
    int rc = LB_OK;
    char *words[LB_DF_ARGS_MAX];
    int nw = 0;
    for (int i = 0; i < s->argc; i++) {
        if ((rc = expand(b, s->argv[i], &words[nw])))
            goto out;
        nw++;
    }
    size_t elen = 0, ecap = 0;
    for (int i = 0; i < b->nv && !rc; i++) {
        if (!b->visarg[i] || lookup(b, b->vnames[i]) != b->vvals[i])
            continue;
        /* NAME='value': only a shell name makes an assignment */
        const char *nm = b->vnames[i];
        if (!((*nm >= 'A' && *nm <= 'Z') || (*nm >= 'a' && *nm <= 'z') || *nm == '_') ||
            strspn(nm, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != strlen(nm))
            continue;
        if ((rc = sq(&cmd, &len, &cap, b->vvals[i])) == LB_OK && (rc = sq(&extra, &elen, &ecap, nm)) == LB_OK)
            rc = sq(&extra, &elen, &ecap, b->vvals[i]);
        if (!rc) {
            /* the name and '=' in front of the quoted value just added */
            size_t nl = strlen(nm) + 1, qv = 0;
            for (const char *c = b->vvals[i]; *c; c++)
                qv += *c == '\'' ? 4 : 1;
            qv += 3; /* the quotes and the space */
            char *n = realloc(cmd, len + nl + 1);
            if (!n) {
                rc = LB_E_NOMEM;
            } else {
                cmd = n;
                cap = len + nl + 1;
                memmove(cmd + len - qv + nl, cmd + len - qv, qv + 1);
                memcpy(cmd + len - qv, nm, nl - 1);
                cmd[len - qv + nl - 1] = '=';
                len += nl;
            }
        }
    }
    if (!s->exec_form)
        for (int i = 0; !rc && i < b->nshell; i++)
            rc = sq(&cmd, &len, &cap, b->shell[i]);
    for (int i = 0; !rc && i < nw; i++)
        rc = sq(&cmd, &len, &cap, words[i]);
    for (int i = 0; !rc && i < b->nshell; i++)
        rc = sq(&extra, &elen, &ecap, b->shell[i]);
    if (rc) {
        rc = failf(b, LB_E_NOMEM, "out of memory");
        goto out;
    }
    chain_step(b, "RUN", words, nw, extra);
    char hex[65];
    long long size;
    if (cache_get(b, hex, &size)) {
        fprintf(stderr, "Step %d/%d: from the cache\n", b->step + 1, b->nsteps);
        b->cached++;
        rc = push_layer(b, hex, size, NULL);
        goto out;
    }
    /* the image so far, registered under a name of this build for the
     * sandbox (removed at the end) */
    char tname[128], m[1024];
    if ((rc = register_image(b, b->layers, b->nl, b->config, tname, sizeof tname)))
        goto out;
    if (!b->conn && (rc = lbsb_connect(b->cfg->sandboxd_socket, NULL, &b->conn, m, sizeof m))) {
        rc = failf(b, rc, "cannot reach sandboxd at %s: %s", b->cfg->sandboxd_socket, m);
        goto out;
    }
    lbsb_spec spec = {.image = tname, .network = b->o->network};
    char id[128];
    if ((rc = lbsb_create(b->conn, &spec, id, sizeof id, m, sizeof m))) {
        rc = failf(b, rc, "cannot create the sandbox: %s", m);
        goto out;
    }
    b->run++;
    lbsb_exec_out eo = {0};
    int to = b->o->timeout_s > 0 ? b->o->timeout_s : 1800;
    /* streamed: every second the output so far (sandboxd's soft timeout
     * hands it over and the command goes on; "" waits for more) */
    lbsb_exec_opts eopt = {.timeout_ms = to * 1000, .soft_timeout_ms = 1000};
    int code = -1, state = LLMBOX_EXEC_RUNNING;
    size_t shown = 0;
    for (const char *c = cmd; !rc && state == LLMBOX_EXEC_RUNNING; c = "") {
        lbsb_exec_out_free(&eo);
        memset(&eo, 0, sizeof eo);
        if ((rc = lbsb_exec_ex(b->conn, id, c, &eopt, &eo, m, sizeof m)))
            break;
        size_t no = shown < OUTPUT_MAX ? (eo.out_len < OUTPUT_MAX - shown ? eo.out_len : OUTPUT_MAX - shown) : 0;
        print_lines(b, eo.out, no);
        shown += no;
        size_t ne = shown < OUTPUT_MAX ? (eo.err_len < OUTPUT_MAX - shown ? eo.err_len : OUTPUT_MAX - shown) : 0;
        print_lines(b, eo.err, ne);
        shown += ne;
        code = eo.exit_code;
        state = eo.state;
    }
    lbsb_exec_out_free(&eo);
    if (rc || code != 0) {
        char dm[256];
        if (lbsb_destroy(b->conn, id, dm, sizeof dm) != LB_OK)
            fprintf(stderr, "llmbox: build: the sandbox %s: %s\n", id, dm);
        rc = rc ? failf(b, rc, "the command did not run: %s", m)
                : failf(b, LB_E_SANDBOX, "the command failed with exit code %d%s", code,
                        state == LLMBOX_EXEC_TIMEOUT ? " (it ran past the step's time limit)" : "");
        goto out;
    }
    char sname[65], spath[BPATH], lpath[BPATH];
    snprintf(sname, sizeof sname, "build-%s-%d", b->tag, b->seq);
    for (char *c = sname; *c; c++)
        if (*c == '/' || *c == ':' || *c == '.')
            *c = '-';
    uint64_t sbytes = 0, sfiles = 0;
    rc = lbsb_save(b->conn, id, sname, b->cfg->sandbox_state_max_mib, &sbytes, &sfiles, m, sizeof m);
    char dm[256];
    if (lbsb_destroy(b->conn, id, dm, sizeof dm) != LB_OK)
        fprintf(stderr, "llmbox: build: the sandbox %s: %s\n", id, dm);
    if (rc) {
        rc = failf(b, rc, "cannot save the sandbox's files: %s", m);
        goto out;
    }
    snprintf(spath, sizeof spath, "%s/sandboxd/states/u%lu/%s.state", b->cfg->var_dir, (unsigned long)getuid(), sname);
    snprintf(lpath, sizeof lpath, "%s/layer-%d.tar", b->stage, b->seq);
    lb_build_layer bl;
    rc = lb_build_layer_from_state(spath, lpath, (long long)b->cfg->image_layer_max_mib << 20, &bl, m, sizeof m);
    if (lbsb_state_delete(b->conn, sname, dm, sizeof dm) != LB_OK)
        fprintf(stderr, "llmbox: build: the saved state %s: %s\n", sname, dm);
    if (rc) {
        rc = failf(b, rc, "the sandbox's files do not make a layer: %s", m);
        goto out;
    }
    if (!(rc = push_layer(b, bl.digest + 7, bl.size, lpath)))
        cache_put(b, bl.digest + 7, bl.size);
out:
    for (int i = 0; i < nw; i++)
        free(words[i]);
    free(cmd);
    free(extra);
    return rc;
}

static int image_layers(bld *b, const char *ref, layer *ls, int *nl, cJSON **config, char chain[65]);

/* What copy_from's child hands back. */
typedef struct copy_reply {
    int rc;
    lb_build_tar t;
    char msg[1024];
} copy_reply;

/* The source folder of COPY --from=: the earlier stage's layers (its image
 * registered when some are not extracted yet) or the image's, top first,
 * into rel as paths relative to the store's layers/sha256/. */
static int from_layers(bld *b, const lb_df_step *s, char **rel, int *nrel)
{
    layer *ls = NULL;
    int nl = 0, rc = LB_OK;
    cJSON *config = NULL;
    layer img[LB_BUILD_LAYERS_MAX];
    char chain[65];
    *nrel = 0;
    if (s->from_stage >= 0) {
        stage_res *r = &b->stages[s->from_stage];
        if (!r->layers)
            return failf(b, LB_E_NOMEM, "out of memory");
        ls = r->layers;
        nl = r->nl;
        if (!extracted(b, ls, nl) && (rc = register_image(b, ls, nl, r->config, r->image, sizeof r->image)))
            return rc;
    } else {
        if ((rc = image_layers(b, s->from, img, &nl, &config, chain)))
            return rc;
        cJSON_Delete(config);
        ls = img;
        if (!extracted(b, ls, nl))
            return failf(b, LB_E_NOTFOUND, "the image %s's layers are not extracted in the store (reimport it)",
                         s->from);
    }
    for (int i = nl - 1; i >= 0; i--) {
        char *p = NULL;
        if (asprintf(&p, "%s/root", ls[i].hex) < 0)
            return failf(b, LB_E_NOMEM, "out of memory"); /* p is undefined then: not kept */
        rel[(*nrel)++] = p;
    }
    return LB_OK;
}

/* COPY --from=: the source's layers mounted as one read-only tree (an
 * overlay of the extracted layers, whiteouts and all, in a child of its own
 * mount namespace, so nothing is left mounted), and the layer written
 * from it as from a context: sources resolved in that tree must stay
 * inside it (a symlink out of it is refused, never followed) and links
 * below a copied folder are kept as links. */
static int copy_from(bld *b, const lb_df_step *s, char **words, int nw, const char *dest, long uid, long gid,
                     int mode, char **roots, int nr, const char *lpath, lb_build_tar *t, char *m, size_t msz)
{
    char *rel[LB_BUILD_LAYERS_MAX];
    int nrel = 0;
    int rc = from_layers(b, s, rel, &nrel);
    char merged[BPATH], layers_dir[BPATH], opts[4096];
    snprintf(merged, sizeof merged, "%s/from-%d", b->stage, b->seq++);
    snprintf(layers_dir, sizeof layers_dir, "%s/layers/sha256", b->oci);
    size_t ol = 0;
    ol += (size_t)snprintf(opts, sizeof opts, "lowerdir=");
    for (int i = 0; !rc && i < nrel; i++) {
        int n = snprintf(opts + ol, sizeof opts - ol, "%s%s", i ? ":" : "", rel[i]);
        if (n < 0 || (size_t)n >= sizeof opts - ol)
            rc = failf(b, LB_E_TOOBIG, "--from=%s has too many layers to mount at once", s->from);
        else
            ol += (size_t)n;
    }
    int pfd[2] = {-1, -1};
    if (!rc && (mkdir(merged, 0700) != 0 || pipe2(pfd, O_CLOEXEC) != 0))
        rc = failf(b, LB_E_IO, "cannot make %s: %s", merged, strerror(errno));
    pid_t pid = -1;
    if (!rc && (pid = fork()) < 0)
        rc = failf(b, LB_E_IO, "cannot fork: %s", strerror(errno));
    if (!rc && pid == 0) {
        copy_reply r;
        memset(&r, 0, sizeof r);
        close(pfd[0]);
        /* a mount namespace of its own: the tree goes with the child */
        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
            chdir(layers_dir) != 0) {
            r.rc = LB_E_IO;
            snprintf(r.msg, sizeof r.msg, "cannot make a mount namespace: %s", strerror(errno));
        } else if (nrel == 1 ? mount(rel[0], merged, NULL, MS_BIND, NULL) != 0 ||
                                   mount(NULL, merged, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0
                             : mount("overlay", merged, "overlay", MS_RDONLY, opts) != 0) {
            r.rc = LB_E_IO;
            snprintf(r.msg, sizeof r.msg, "cannot mount the layers of %s: %s", s->from, strerror(errno));
        } else {
            r.rc = lb_build_copy_layer(merged, (const char *const *)words, nw - 1, dest, uid, gid, mode,
                                       (const char *const *)roots, nr, (long long)b->cfg->image_layer_max_mib << 20,
                                       lpath, &r.t, r.msg, sizeof r.msg);
        }
        _exit(lb_write_all(pfd[1], &r, sizeof r) == LB_OK ? 0 : 1);
    }
    if (pfd[1] >= 0)
        close(pfd[1]);
    if (pid > 0) {
        copy_reply r;
        size_t got = 0;
        if (lb_read_full(pfd[0], &r, sizeof r) == LB_OK)
            got = sizeof r;
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (got != sizeof r) {
            rc = LB_E_IO;
            snprintf(m, msz, "the copy's process ended without an answer");
        } else {
            rc = r.rc;
            *t = r.t;
            r.msg[sizeof r.msg - 1] = '\0';
            snprintf(m, msz, "%s", r.msg);
        }
        rmdir(merged);
    } else if (rc) {
        m[0] = '\0'; /* failf said it, with the step */
    }
    if (pfd[0] >= 0)
        close(pfd[0]);
    for (int i = 0; i < nrel; i++)
        free(rel[i]);
    return rc;
}

static int do_copy(bld *b, const lb_df_step *s)
{
    char *words[LB_DF_ARGS_MAX], *roots[LB_BUILD_LAYERS_MAX];
    int nw = 0, nr = 0, rc = LB_OK;
    for (int i = 0; i < s->argc; i++) {
        if ((rc = expand(b, s->argv[i], &words[nw])))
            goto out;
        nw++;
    }
    for (int i = 0; i < nw - 1; i++)
        if (strstr(words[i], "://")) {
            rc = failf(b, LB_E_INVAL, "%s takes files of the build context, not URLs (%.200s)",
                       lb_df_kind_name(s->kind), words[i]);
            goto out;
        }
    /* dest relative to WORKDIR */
    char dest[PATH_MAX];
    const char *wd = cfg_string(b, "WorkingDir");
    const char *d = words[nw - 1];
    snprintf(dest, sizeof dest, "%s%s%s", d[0] == '/' ? "" : (*wd ? wd : "/"), d[0] == '/' || !*wd ? "" : "/", d);
    long uid = 0, gid = 0;
    int mode = -1;
    if (s->chown) {
        char *e = NULL;
        uid = strtol(s->chown, &e, 10);
        gid = uid;
        if (e && *e == ':' && e[1] >= '0' && e[1] <= '9')
            gid = strtol(e + 1, &e, 10);
        if (e == s->chown || (e && *e)) {
            /* a name: the image's own /etc/passwd and /etc/group say its ids */
            if ((rc = chown_by_name(b, s->chown, &uid, &gid)))
                goto out;
        } else if (uid < 0 || gid < 0 || uid > 65535 || gid > 65535) {
            rc = failf(b, LB_E_INVAL, "--chown takes ids of 0-65535 or names of the image's users (%.64s)",
                       s->chown);
            goto out;
        }
    }
    if (s->chmod)
        mode = (int)strtol(s->chmod, NULL, 8) & 07777;
    nr = lower_roots(b, roots);
    char lpath[BPATH], m[1024];
    snprintf(lpath, sizeof lpath, "%s/layer-%d.tar", b->stage, b->seq++);
    lb_build_tar t;
    if (s->from)
        rc = copy_from(b, s, words, nw, dest, uid, gid, mode, roots, nr, lpath, &t, m, sizeof m);
    else
        rc = lb_build_copy_layer(b->ctx, (const char *const *)words, nw - 1, dest, uid, gid, mode,
                                 (const char *const *)roots, nr, (long long)b->cfg->image_layer_max_mib << 20, lpath,
                                 &t, m, sizeof m);
    if (rc) {
        if (s->from && m[0])
            rc = failf(b, rc, "--from=%.255s: %s", s->from, m);
        else if (!s->from)
            rc = failf(b, rc, "%s", m);
        goto out;
    }
    char extra[PATH_MAX + 160];
    /* a stage's or an image's files: the content digest keys the cache as the context's does */
    snprintf(extra, sizeof extra, "%s %s %ld:%ld %d %s", t.content, dest, uid, gid, mode, s->from ? "from" : "ctx");
    chain_step(b, lb_df_kind_name(s->kind), words, nw, extra);
    char hex[65];
    long long size;
    if (cache_get(b, hex, &size)) {
        unlink(lpath);
        fprintf(stderr, "Step %d/%d: from the cache\n", b->step + 1, b->nsteps);
        b->cached++;
        rc = push_layer(b, hex, size, NULL);
    } else if (!(rc = push_layer(b, t.digest + 7, t.size, lpath))) {
        cache_put(b, t.digest + 7, t.size);
    }
out:
    for (int i = 0; i < nw; i++)
        free(words[i]);
    for (int i = 0; i < nr; i++)
        free(roots[i]);
    return rc;
}

static int do_workdir(bld *b, const lb_df_step *s)
{
    char *w = NULL, dir[PATH_MAX], *roots[LB_BUILD_LAYERS_MAX];
    int rc = expand(b, s->argv[0], &w);
    if (rc)
        return rc;
    const char *cur = cfg_string(b, "WorkingDir");
    snprintf(dir, sizeof dir, "%s%s%s", w[0] == '/' ? "" : (*cur ? cur : ""), w[0] == '/' ? "" : "/", w);
    free(w);
    cfg_set_string(b, "WorkingDir", dir);
    char *words[1] = {dir};
    chain_step(b, "WORKDIR", words, 1, NULL);
    int nr = lower_roots(b, roots);
    char lpath[BPATH], m[512];
    snprintf(lpath, sizeof lpath, "%s/layer-%d.tar", b->stage, b->seq++);
    lb_build_tar t;
    rc = lb_build_dirs_layer(dir, (const char *const *)roots, nr, lpath, &t, m, sizeof m);
    for (int i = 0; i < nr; i++)
        free(roots[i]);
    if (rc)
        return failf(b, rc, "%s", m);
    if (t.entries == 0)
        return LB_OK;
    return push_layer(b, t.digest + 7, t.size, lpath);
}

/* The layers (bottom first, into ls, *nl of them), config (*config, the
 * caller's) and manifest digest (chain) of the stored image ref, pulled
 * first when it is a registry's the store lacks. */
static int image_layers(bld *b, const char *ref, layer *ls, int *nl, cJSON **config, char chain[65])
{
    char m[1024];
    cJSON *rec = NULL;
    *nl = 0;
    *config = NULL;
    int rc = lb_image_record_read(b->cfg, ref, &rec, m, sizeof m);
    if (rc == LB_E_NOTFOUND && lb_image_is_debootstrap(b->cfg, ref))
        return failf(b, LB_E_INVAL, "%s is a debootstrap image, which cannot be a build's base; FROM takes a "
                                    "layered image (llmbox image import or pull) or a registry reference", ref);
    if (rc == LB_E_NOTFOUND && lb_image_is_registry_ref(ref)) {
        fprintf(stderr, "Step %d/%d: pulling %s\n", b->step + 1, b->nsteps, ref);
        if ((rc = lb_pull_ensure(b->cfg, ref, m, sizeof m)) == LB_OK)
            rc = lb_image_record_read(b->cfg, ref, &rec, m, sizeof m);
    }
    if (rc)
        return failf(b, rc, "%s: %s", ref, m);
    cJSON *mdig = cJSON_GetObjectItem(rec, "manifest"), *cdig = cJSON_GetObjectItem(rec, "config");
    char p[BPATH], *text = NULL;
    size_t n = 0;
    cJSON *man = NULL;
    rc = LB_E_INVAL;
    if (cJSON_IsString(mdig) && cJSON_IsString(cdig) && strlen(mdig->valuestring) == 71 &&
        strlen(cdig->valuestring) == 71) {
        snprintf(p, sizeof p, "%s/blobs/sha256/%s", b->oci, mdig->valuestring + 7);
        if (lb_read_file(p, 4u << 20, &text, &n) == LB_OK)
            man = cJSON_ParseWithLength(text, n);
        free(text);
        text = NULL;
        snprintf(p, sizeof p, "%s/blobs/sha256/%s", b->oci, cdig->valuestring + 7);
        if (man && lb_read_file(p, 8u << 20, &text, &n) == LB_OK)
            *config = cJSON_ParseWithLength(text, n);
        free(text);
        memcpy(chain, mdig->valuestring + 7, 64);
        chain[64] = '\0';
    }
    cJSON *jl = man ? cJSON_GetObjectItem(man, "layers") : NULL;
    cJSON *rootfs = *config ? cJSON_GetObjectItem(*config, "rootfs") : NULL;
    cJSON *ids = rootfs ? cJSON_GetObjectItem(rootfs, "diff_ids") : NULL;
    if (cJSON_IsArray(jl) && cJSON_IsArray(ids) && cJSON_GetArraySize(jl) == cJSON_GetArraySize(ids) &&
        cJSON_GetArraySize(jl) <= LB_BUILD_LAYERS_MAX) {
        rc = LB_OK;
        cJSON *id = ids->child;
        for (cJSON *l = jl->child; l && !rc; l = l->next, id = id->next) {
            cJSON *dg = cJSON_GetObjectItem(l, "digest"), *mt = cJSON_GetObjectItem(l, "mediaType"),
                  *sz = cJSON_GetObjectItem(l, "size");
            if (!cJSON_IsString(dg) || strlen(dg->valuestring) != 71 || !cJSON_IsString(id) ||
                !cJSON_IsNumber(sz)) {
                rc = LB_E_INVAL;
                break;
            }
            layer *x = &ls[(*nl)++];
            snprintf(x->hex, sizeof x->hex, "%s", dg->valuestring + 7);
            snprintf(x->diff, sizeof x->diff, "%s", id->valuestring);
            snprintf(x->mt, sizeof x->mt, "%s", cJSON_IsString(mt) ? mt->valuestring : LAYER_MT);
            x->size = (long long)sz->valuedouble;
        }
    }
    cJSON_Delete(man);
    cJSON_Delete(rec);
    if (rc) {
        cJSON_Delete(*config);
        *config = NULL;
        return failf(b, rc, "the image %s's manifest or config is not in the store (reimport it)", ref);
    }
    return LB_OK;
}

/* The end of a stage (a FROM follows): its result kept for a later FROM or
 * COPY --from, and the builder's state made new, but for the variables set
 * before the first FROM (the build's global ARGs). */
static void stage_end(bld *b, int idx)
{
    stage_res *r = &b->stages[idx];
    r->layers = malloc(sizeof *r->layers * (size_t)(b->nl ? b->nl : 1));
    if (r->layers) {
        memcpy(r->layers, b->layers, sizeof *r->layers * (size_t)b->nl);
        r->nl = b->nl;
    }
    r->config = b->config;
    memcpy(r->chain, b->chain, sizeof r->chain);
    b->config = NULL;
    b->nl = b->nbase = 0;
    memset(b->chain, 0, sizeof b->chain);
    for (int j = 0; j < b->nshell; j++)
        free(b->shell[j]);
    b->shell[0] = strdup("/bin/sh");
    b->shell[1] = strdup("-c");
    b->nshell = b->shell[0] && b->shell[1] ? 2 : 0;
    while (b->nv > b->nglobal) {
        b->nv--;
        free(b->vnames[b->nv]);
        free(b->vvals[b->nv]);
    }
}

static int do_from(bld *b, const lb_df_step *s)
{
    if (s->from_stage >= 0) {
        /* an earlier stage's result: its blobs are in this build's stage already */
        stage_res *r = &b->stages[s->from_stage];
        if (!r->layers || !r->config || !(b->config = cJSON_Duplicate(r->config, 1)))
            return failf(b, LB_E_NOMEM, "out of memory");
        memcpy(b->layers, r->layers, sizeof *r->layers * (size_t)r->nl);
        b->nl = r->nl;
        memcpy(b->chain, r->chain, sizeof b->chain);
        b->nbase = b->nl;
        history(b, "FROM", 1);
        return LB_OK;
    }
    char *ref = NULL;
    int rc = expand(b, s->argv[0], &ref);
    if (rc)
        return rc;
    rc = image_layers(b, ref, b->layers, &b->nl, &b->config, b->chain);
    free(ref);
    for (int i = 0; !rc && i < b->nl; i++)
        if (stage_blob(b, b->layers[i].hex, NULL) != LB_OK)
            rc = failf(b, LB_E_NOTFOUND, "the base image's layer blob sha256:%s is not in the store (reimport it)",
                       b->layers[i].hex);
    if (rc)
        return rc;
    b->nbase = b->nl;
    history(b, "FROM", 1);
    return LB_OK;
}

static int do_step(bld *b, const lb_df_step *s)
{
    char *v = NULL;
    int rc = LB_OK;
    switch (s->kind) {
    case LB_DF_FROM:
        return do_from(b, s);
    case LB_DF_RUN:
        rc = do_run(b, s);
        break;
    case LB_DF_COPY:
    case LB_DF_ADD:
        rc = do_copy(b, s);
        break;
    case LB_DF_WORKDIR:
        rc = do_workdir(b, s);
        break;
    case LB_DF_ARG:
    case LB_DF_ENV:
        for (int j = 0; !rc && j < s->argc; j++) {
            const char *eq = strchr(s->argv[j], '=');
            size_t nl = eq ? (size_t)(eq - s->argv[j]) : strlen(s->argv[j]);
            const char *given = NULL;
            for (int k = 0; s->kind == LB_DF_ARG && k < b->o->nb; k++)
                if (!strncmp(b->o->bargs[k], s->argv[j], nl) && b->o->bargs[k][nl] == '=')
                    given = b->o->bargs[k] + nl + 1; /* a --build-arg wins over the default */
            if (given) {
                v = strdup(given);
            } else if (eq) {
                rc = expand(b, eq + 1, &v);
            } else {
                continue; /* an ARG without a value and none given: unset */
            }
            if (!rc && !v)
                rc = failf(b, LB_E_NOMEM, "out of memory");
            if (!rc)
                rc = set_var(b, s->argv[j], nl, v, s->kind == LB_DF_ARG);
            if (!rc && s->kind == LB_DF_ENV && b->config)
                cfg_env(b, s->argv[j], nl, v);
            /* an ARG changes the key only where it is used: a RUN's
             * environment, a word it expands in */
            if (!rc && s->kind == LB_DF_ENV) {
                char *kv = NULL;
                if (asprintf(&kv, "%.*s=%s", (int)nl, s->argv[j], v) > 0) {
                    char *w1[1] = {kv};
                    chain_step(b, lb_df_kind_name(s->kind), w1, 1, NULL);
                }
                free(kv);
            }
            free(v);
            v = NULL;
        }
        break;
    case LB_DF_USER:
        if (!(rc = expand(b, s->argv[0], &v))) {
            cfg_set_string(b, "User", v);
            chain_step(b, "USER", &v, 1, NULL);
        }
        break;
    case LB_DF_LABEL: {
        cJSON *c = cfg_obj(b), *lab = cJSON_GetObjectItem(c, "Labels");
        if (!cJSON_IsObject(lab)) {
            cJSON_DeleteItemFromObject(c, "Labels");
            lab = cJSON_AddObjectToObject(c, "Labels");
        }
        for (int j = 0; !rc && j < s->argc; j++) {
            const char *eq = strchr(s->argv[j], '=');
            if (!eq)
                continue;
            char *k = strndup(s->argv[j], (size_t)(eq - s->argv[j]));
            if (k && !(rc = expand(b, eq + 1, &v))) {
                cJSON_DeleteItemFromObject(lab, k);
                cJSON_AddStringToObject(lab, k, v);
                char *w2[2] = {k, v};
                chain_step(b, "LABEL", w2, 2, NULL);
            }
            free(k);
            free(v);
            v = NULL;
        }
        break;
    }
    case LB_DF_SHELL:
        for (int j = 0; j < b->nshell; j++)
            free(b->shell[j]);
        b->nshell = 0;
        for (int j = 0; j < s->argc; j++)
            if ((b->shell[b->nshell] = strdup(s->argv[j])))
                b->nshell++;
        chain_step(b, "SHELL", b->shell, b->nshell, NULL);
        break;
    }
    free(v);
    if (!rc && s->kind != LB_DF_RUN && s->kind != LB_DF_COPY && s->kind != LB_DF_ADD)
        history(b, lb_df_kind_name(s->kind), s->kind != LB_DF_WORKDIR);
    else if (!rc)
        history(b, lb_df_kind_name(s->kind), 0);
    return rc;
}

/* Removes what builds that were killed left: their stages
 * (stage-<pid>-<random> whose pid is gone) and their RUN images. */
static void clean_stages(bld *b)
{
    DIR *d = opendir(b->cache);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        long pid = 0;
        if (strncmp(de->d_name, "stage-", 6) || (pid = strtol(de->d_name + 6, NULL, 10)) <= 1 ||
            pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno == EPERM)
            continue;
        char p[BPATH + 256];
        snprintf(p, sizeof p, "%s/%s", b->cache, de->d_name);
        if (lb_rmtree(p) != LB_OK)
            fprintf(stderr, "llmbox: build: could not remove a killed build's %s\n", p);
    }
    if (d)
        closedir(d);
    /* and the images a killed build registered for its RUN sandboxes
     * (refs/llmbox-build+<pid>-<random>=stepN.json) */
    char refs[BPATH];
    snprintf(refs, sizeof refs, "%s/refs", b->oci);
    d = opendir(refs);
    while (d && (de = readdir(d))) {
        long pid = 0;
        size_t n = strlen(de->d_name);
        if (strncmp(de->d_name, "llmbox-build+", 13) || n < 19 || strcmp(de->d_name + n - 5, ".json") ||
            (pid = strtol(de->d_name + 13, NULL, 10)) <= 1 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
            errno == EPERM)
            continue;
        char name[256], m[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 5), de->d_name);
        for (char *c = name; *c; c++)
            *c = *c == '+' ? '/' : *c == '=' ? ':' : *c;
        if (lb_image_rm(b->cfg, name, m, sizeof m) != LB_OK)
            fprintf(stderr, "llmbox: build: could not remove a killed build's image %s: %s\n", name, m);
    }
    if (d)
        closedir(d);
}

int lb_build_run(const lb_config *cfg, const lb_dockerfile *df, const char *ctxreal, const char *name,
                 const lb_build_opts *opts, lb_build_result *res, char *msg, size_t msgsz)
{
    bld *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(msg, msgsz, "out of memory");
        return LB_E_NOMEM;
    }
    memset(res, 0, sizeof *res);
    b->cfg = cfg;
    b->df = df;
    b->o = opts;
    b->ctx = ctxreal;
    b->msg = msg;
    b->msgsz = msgsz;
    b->nsteps = df->n;
    b->shell[0] = strdup("/bin/sh");
    b->shell[1] = strdup("-c");
    b->nshell = 2;
    char rnd[17];
    int rc = lb_random_hex(rnd, sizeof rnd, 6);
    snprintf(b->tag, sizeof b->tag, "%ld-%s", (long)getpid(), rc ? "0" : rnd);
    /* absolute: COPY --from's child changes its folder */
    char store_real[PATH_MAX];
    const char *sr = realpath(cfg->image_store, store_real) && strlen(store_real) < LB_CFG_PATH ? store_real
                                                                                               : cfg->image_store;
    snprintf(b->oci, sizeof b->oci, "%.*s/oci", (int)(LB_CFG_PATH - 1), sr);
    snprintf(b->cache, sizeof b->cache, "%s/build-cache", b->oci);
    /* the stage is the cache's neighbour, not in the store's tmp/: the
     * store's import, called from this process, clears tmp/ of entries of
     * its own pid */
    snprintf(b->stage, sizeof b->stage, "%s/stage-%s", b->cache, b->tag);
    char p[BPATH];
    lb_image_store st;
    /* opening the store once makes its folders and clears what a killed
     * writer left in tmp/ (a killed build's stage included) */
    if ((rc = lb_image_store_open(cfg, &st, msg, msgsz)) != LB_OK)
        goto done;
    lb_image_store_close(&st);
    clean_stages(b);
    snprintf(p, sizeof p, "%s/steps", b->cache);
    if (lb_mkdirs(p, 0700) != LB_OK || (snprintf(p, sizeof p, "%s/blobs", b->cache), lb_mkdirs(p, 0700)) != LB_OK ||
        (snprintf(p, sizeof p, "%s/blobs/sha256", b->stage), lb_mkdirs(p, 0700)) != LB_OK) {
        snprintf(msg, msgsz, "cannot make the build's folders under %s: %s", b->oci, strerror(errno));
        rc = LB_E_IO;
        goto done;
    }
    for (b->step = 0; b->step < df->n && !rc; b->step++) {
        const lb_df_step *s = &df->steps[b->step];
        fprintf(stderr, "Step %d/%d: %s", b->step + 1, df->n, lb_df_kind_name(s->kind));
        for (int j = 0; j < s->argc; j++)
            fprintf(stderr, " %.200s", s->argv[j]);
        fputc('\n', stderr);
        if (!b->config && s->kind != LB_DF_FROM && s->kind != LB_DF_ARG) {
            rc = failf(b, LB_E_INVAL, "comes before FROM");
            break;
        }
        if (s->kind == LB_DF_FROM && s->stage == 0)
            b->nglobal = b->nv;
        else if (s->kind == LB_DF_FROM && s->stage > 0 && s->stage < LB_DF_STAGES_MAX)
            stage_end(b, s->stage - 1);
        rc = do_step(b, s);
    }
    if (!rc) {
        b->step = df->n - 1;
        char dir[BPATH];
        snprintf(dir, sizeof dir, "%s/final", b->stage);
        if (!(rc = write_layout(b, dir)) &&
            (rc = lb_image_import_layout(cfg, dir, name, NULL, LB_IMPORT_MOVE, res->canon, sizeof res->canon, p,
                                         sizeof p)) != LB_OK)
            snprintf(msg, msgsz, "the built image could not be registered as %s: %s", name, p);
    }
    res->steps = df->n;
    res->run = b->run;
    res->cached = b->cached;
    res->layers = b->nl - b->nbase;
done:
    if (b->conn)
        lbsb_close(b->conn);
    for (int i = 0; i < b->ntmp; i++) {
        char m[256];
        if (b->tmpimg[i] && lb_image_rm(cfg, b->tmpimg[i], m, sizeof m) != LB_OK)
            fprintf(stderr, "llmbox: build: could not remove the build's image %s: %s\n", b->tmpimg[i], m);
        free(b->tmpimg[i]);
    }
    if (b->stage[0] && lb_rmtree(b->stage) != LB_OK)
        fprintf(stderr, "llmbox: build: could not remove %s\n", b->stage);
    for (int i = 0; i < b->nv; i++) {
        free(b->vnames[i]);
        free(b->vvals[i]);
    }
    for (int i = 0; i < b->nshell; i++)
        free(b->shell[i]);
    for (int i = 0; i < LB_DF_STAGES_MAX; i++) {
        free(b->stages[i].layers);
        cJSON_Delete(b->stages[i].config);
    }
    cJSON_Delete(b->config);
    free(b);
    return rc;
}
