/* A sandbox's image: a debootstrap root or a layered image's record
 * (image_layers.h). */
#include "sandboxd/image_layers.h"

#include "sandboxd/idmap.h"

#include "common/image_ref.h"
#include "sandbox/rpc.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IL_RECORD_MAX (1u << 20) /* images/store.h's LB_IMAGE_RECORD_MAX */
#define IL_LAYERS_MAX 48         /* images/oci_json.h's LB_OCI_LAYERS_MAX */

static int il_fail(char *msg, size_t msgsz, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msgsz, fmt, ap);
    va_end(ap);
    return rc;
}

int lbsd_image_is_layered_name(const char *name)
{
    return !lbsd_image_name_valid(name);
}

static int il_hex64(const char *s)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return i == 64;
}

static int il_debootstrap(const lb_config *cfg, const char *name, lbsd_image *out, char *msg, size_t msgsz)
{
    char p[LB_CFG_PATH + 96];
    snprintf(p, sizeof p, "%s/%s/.complete", cfg->image_store, name);
    if (access(p, F_OK) != 0)
        return il_fail(msg, msgsz, LB_E_NOTFOUND, "image '%s' is not built (run: llmbox image build %s)", name,
                       name);
    /* an image whose files are not owned by the sandbox uid range would
     * give the sandbox's root a read-only, foreign-owned system */
    snprintf(p, sizeof p, "%s/%s", cfg->image_store, name);
    if (!lbsd_idmap_image_ok(p, cfg->sandbox_uid_base))
        return il_fail(msg, msgsz, LB_E_UNAVAILABLE, "image '%s' is not owned by the sandbox uid range (base %u): "
                       "restart sandboxd to shift it, or rebuild it (llmbox image build --force %s)", name,
                       cfg->sandbox_uid_base, name);
    snprintf(out->lower, sizeof out->lower, "%s/%s/rootfs", cfg->image_store, name);
    return LB_OK;
}

/* The record's parts, each checked: layers (hex names that exist with
 * .complete), env, workdir, uid/gid. */
static int il_record(const lb_config *cfg, const cJSON *r, const char *canon, lbsd_image *out, char *msg,
                     size_t msgsz)
{
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(r, "layers"), *x;
    int n = cJSON_IsArray(ls) ? cJSON_GetArraySize(ls) : 0;
    if (n < 1 || n > IL_LAYERS_MAX)
        return il_fail(msg, msgsz, LB_E_INVAL, "the record of image '%s' is damaged (its layers)", canon);
    /* overlay's lowerdir lists the top layer first; the record, the base */
    size_t at = 0;
    for (int i = n - 1; i >= 0; i--) {
        x = cJSON_GetArrayItem(ls, i);
        if (!cJSON_IsString(x) || !il_hex64(x->valuestring))
            return il_fail(msg, msgsz, LB_E_INVAL, "the record of image '%s' is damaged (a layer name)", canon);
        char p[LB_CFG_PATH + 128];
        snprintf(p, sizeof p, "%s/oci/layers/sha256/%s/.complete", cfg->image_store, x->valuestring);
        if (access(p, F_OK) != 0)
            return il_fail(msg, msgsz, LB_E_NOTFOUND, "image '%s' lacks its layer sha256:%s (import it again)",
                           canon, x->valuestring);
        int w = snprintf(out->lowerdirs + at, sizeof out->lowerdirs - at, "%slower/%s/root", at ? ":" : "",
                         x->valuestring);
        if (w < 0 || (size_t)w >= sizeof out->lowerdirs - at)
            return il_fail(msg, msgsz, LB_E_TOOBIG, "image '%s' has too many layers", canon);
        at += (size_t)w;
    }
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(r, "env");
    cJSON_ArrayForEach(x, env) {
        size_t l = cJSON_IsString(x) ? strlen(x->valuestring) : 0;
        if (!l || !strchr(x->valuestring, '=') || out->nenv >= LBSD_IMG_ENV_MAX ||
            l + 1 > sizeof out->env - out->envlen)
            return il_fail(msg, msgsz, LB_E_TOOBIG, "image '%s' has an Env this service cannot hold", canon);
        memcpy(out->env + out->envlen, x->valuestring, l + 1);
        out->envlen += l + 1;
        out->nenv++;
    }
    x = cJSON_GetObjectItemCaseSensitive(r, "workdir");
    if (cJSON_IsString(x) && x->valuestring[0]) {
        if (x->valuestring[0] != '/' || strlen(x->valuestring) > LBSD_IMG_WORKDIR_MAX)
            return il_fail(msg, msgsz, LB_E_INVAL, "the record of image '%s' is damaged (its workdir)", canon);
        snprintf(out->workdir, sizeof out->workdir, "%s", x->valuestring);
    }
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(r, "uid"), *g = cJSON_GetObjectItemCaseSensitive(r, "gid");
    if (cJSON_IsNumber(u) && u->valuedouble >= 0 && u->valuedouble <= 65535 && cJSON_IsNumber(g) &&
        g->valuedouble >= 0 && g->valuedouble <= 65535) {
        out->uid = (int64_t)u->valuedouble;
        out->gid = (int64_t)g->valuedouble;
    }
    return LB_OK;
}

int lbsd_image_resolve(const lb_config *cfg, const char *name, lbsd_image *out, char *msg, size_t msgsz)
{
    memset(out, 0, sizeof *out);
    out->uid = out->gid = -1;
    if (lbsd_image_name_valid(name)) {
        /* a debootstrap image of that name first; else a local layered one */
        int rc = il_debootstrap(cfg, name, out, msg, msgsz);
        if (rc != LB_E_NOTFOUND)
            return rc;
    }
    lb_image_ref r;
    char canon[LB_IMAGE_REF_MAX + 1], fn[LB_IMAGE_REF_MAX + 1];
    if (lb_image_ref_parse(name, LB_IMAGE_REF_LOCAL, &r, msg, msgsz) != LB_OK)
        return LB_E_INVAL;
    if (lb_image_ref_format(&r, canon, sizeof canon) != LB_OK || lb_image_ref_file_name(&r, fn, sizeof fn) != LB_OK)
        return il_fail(msg, msgsz, LB_E_INVAL, "the image name is too long");
    if ((size_t)snprintf(out->hold, sizeof out->hold, "%s/oci/refs/%s.json", cfg->image_store, fn) >= sizeof out->hold)
        return il_fail(msg, msgsz, LB_E_TOOBIG, "the image store's path is too long");
    int fd = open(out->hold, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        return lbsd_image_name_valid(name)
                   ? il_fail(msg, msgsz, LB_E_NOTFOUND, "image '%s' is not built (run: llmbox image build %s) nor "
                             "imported (llmbox image import)", name, name)
                   : il_fail(msg, msgsz, LB_E_NOTFOUND, "there is no image '%s' on this host (llmbox image import "
                             "or pull it)", canon);
    }
    char *buf = NULL;
    int rc = LB_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > IL_RECORD_MAX ||
        !(buf = malloc((size_t)st.st_size + 1)) || read(fd, buf, (size_t)st.st_size) != st.st_size) {
        rc = il_fail(msg, msgsz, LB_E_IO, "cannot read the record of image '%s'", canon);
        goto out;
    }
    cJSON *j = cJSON_ParseWithLength(buf, (size_t)st.st_size);
    if (!cJSON_IsObject(j))
        rc = il_fail(msg, msgsz, LB_E_INVAL, "the record of image '%s' is damaged", canon);
    else
        rc = il_record(cfg, j, canon, out, msg, msgsz);
    cJSON_Delete(j);
    if (rc == LB_OK) {
        out->layered = 1;
        snprintf(out->lower, sizeof out->lower, "%s/oci/layers/sha256", cfg->image_store);
    }
out:
    free(buf);
    close(fd);
    return rc;
}
