/* A task's sandbox options as a client may ask for them: the network mode
 * and the image. Both are checked against what the operator allows before
 * a task is stored, so a task never fails later for an option the service
 * would not grant. */
#include "web/task_options.h"

#include "common/image_ref.h"
#include "images/image_admin.h"
#include "images/store.h"

#include "common/config.h"
#include "common/netpolicy.h"
#include "common/status.h"
#include "images/registry_cli.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LB_IMAGES_MAX 64

int lb_network_check(const lb_config *cfg, const char *v, char *err, size_t errsz)
{
    return lb_network_check_for(cfg, NULL, v, NULL, 0, err, errsz);
}

int lb_network_check_for(const lb_config *cfg, const lb_user_cfg *user, const char *v, char *canon, size_t canonsz,
                         char *err, size_t errsz)
{
    if (canon && canonsz)
        snprintf(canon, canonsz, "%s", v);
    if (v[0] == '{') {
        lb_netpolicy *p = malloc(sizeof *p);
        if (!p) {
            snprintf(err, errsz, "out of memory");
            return LB_E_NOMEM;
        }
        int rc = lb_netpolicy_parse(v, p, err, errsz);
        if (rc == LB_OK)
            rc = lb_netpolicy_admit(p, cfg->network_egress_max, user ? user->network_egress_max : NULL, err,
                                    errsz);
        if (rc == LB_OK)
            rc = lb_netpolicy_admit_bytes(p, cfg->network_max_bytes, user ? user->network_max_bytes : 0, err, errsz);
        if (rc == LB_OK && canon && lb_netpolicy_text(p, canon, canonsz) != LB_OK) {
            snprintf(err, errsz, "network is longer than %zu bytes", canonsz);
            rc = LB_E_TOOBIG;
        }
        free(p);
        return rc == LB_E_TOOBIG ? LB_E_INVAL : rc;
    }
    if (!strcmp(v, "none"))
        return LB_OK;
    if (!strcmp(v, "nat")) {
        if (lb_cfg_network_allowed(cfg, "nat"))
            return LB_OK;
        snprintf(err, errsz,
                 "This service does not allow network access from sandboxes (network \"nat\"); the operator can "
                 "allow it with network_allow = none,nat (LLMBOX_NETWORK_ALLOW).");
        return LB_E_DENIED;
    }
    snprintf(err, errsz, "network must be \"none\", \"nat\" or {\"allow\": [rules], \"deny\": [rules]}.");
    return LB_E_INVAL;
}

/* An image name as sandboxd accepts it: [a-z0-9._-], not starting with a
 * dot, at most 63 characters. */
static int lb_image_name_ok(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n > 63 || v[0] == '.' || v[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static int lb_image_built(const char *image_store, const char *name)
{
    char p[LB_CFG_PATH + 300];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s/.complete", image_store, name);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

cJSON *lb_images_list(const lb_config *cfg)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    char names[LB_IMAGES_MAX][64];
    size_t n = 0;
    DIR *d = opendir(cfg->image_store);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL && n < LB_IMAGES_MAX) {
            size_t len = strlen(de->d_name);
            if (len < sizeof names[0] && lb_image_name_ok(de->d_name) && lb_image_built(cfg->image_store, de->d_name))
                memcpy(names[n++], de->d_name, len + 1);
        }
        closedir(d);
    }
    qsort(names, n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    /* then the layered images (images/image_admin.h), by their references */
    cJSON *layered = lb_image_list_json(cfg, NULL, 0);
    const cJSON *li;
    cJSON_ArrayForEach(li, layered) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(li, "kind"), *nm = cJSON_GetObjectItemCaseSensitive(li, "name");
        if (!cJSON_IsString(k) || strcmp(k->valuestring, "layered") != 0 || !cJSON_IsString(nm))
            continue;
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            break;
        }
        cJSON_AddStringToObject(o, "name", nm->valuestring);
        cJSON_AddBoolToObject(o, "default", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(li, "default")));
        cJSON_AddBoolToObject(o, "layered", 1);
    }
    cJSON_Delete(layered);
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            break;
        }
        cJSON_AddStringToObject(o, "name", names[i]);
        cJSON_AddBoolToObject(o, "default", !strcmp(names[i], cfg->default_image));
    }
    return arr;
}

/* True when v names a layered image of this host (an imported, pulled or
 * built one: its record in <image_store>/oci/refs/, images/store.h). */
static int lb_image_layered(const lb_config *cfg, const char *v)
{
    char canon[LB_IMAGE_REF_MAX + 8], file[LB_IMAGE_REF_MAX + 8], why[160], p[LB_CFG_PATH + 300];
    struct stat st;
    if (lb_image_record_name(v, canon, sizeof canon, file, sizeof file, why, sizeof why) != LB_OK)
        return 0;
    snprintf(p, sizeof p, "%s/oci/refs/%s", cfg->image_store, file);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int lb_image_check(const lb_config *cfg, const char *v, char *err, size_t errsz)
{
    /* a debootstrap image, or a layered one by its reference */
    if (strlen(v) <= LB_IMAGE_REF_MAX && !(lb_image_name_ok(v) && lb_image_built(cfg->image_store, v)) &&
        lb_image_layered(cfg, v))
        return LB_OK;
    if (lb_image_is_registry_ref(v)) /* a registry's image: pulled on first use, once (registry_cli.h) */
        return lb_pull_ensure(cfg, v, err, errsz);
    if (!lb_image_name_ok(v)) {
        lb_image_ref ref;
        char why[160];
        if (strlen(v) > LB_IMAGE_REF_MAX || lb_image_ref_parse(v, LB_IMAGE_REF_LOCAL, &ref, why, sizeof why) != LB_OK) {
            snprintf(err, errsz, "The image must be an image name (lowercase letters, digits, '.', '_' and '-') or "
                                 "an image reference ([host[:port]/]repo[:tag]).");
            return LB_E_INVAL;
        }
        snprintf(err, errsz, "There is no sandbox image \"%.255s\" on this service; GET /api/images lists them "
                             "(llmbox image import or pull adds one).", v);
        return LB_E_NOTFOUND;
    }
    if (!lb_image_built(cfg->image_store, v)) {
        snprintf(err, errsz, "There is no sandbox image \"%s\" on this service; GET /api/info lists the images.", v);
        return LB_E_NOTFOUND;
    }
    return LB_OK;
}
