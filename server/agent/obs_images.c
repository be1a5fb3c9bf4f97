/* The store of the observations' image bytes; the contract is
 * obs_images.h. */
#include "agent/obs_images.h"

#include <string.h>

static size_t held(const cJSON *e)
{
    const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "data"));
    return d ? strlen(d) : 0;
}

int lb_obs_images_add(lb_obs_images *s, const char *path, const char *media_type, const char *b64)
{
    size_t n = strlen(b64);
    if (n > LB_OBS_IMAGES_BYTES)
        return LB_E_INVAL;
    if (!s->by_path && !(s->by_path = cJSON_CreateObject()))
        return LB_E_NOMEM;
    cJSON *old = cJSON_DetachItemFromObjectCaseSensitive(s->by_path, path);
    s->bytes -= held(old);
    cJSON_Delete(old);
    /* the oldest go first: the model has seen them in earlier turns */
    while (s->by_path->child &&
           (s->bytes + n > LB_OBS_IMAGES_BYTES || cJSON_GetArraySize(s->by_path) >= LB_OBS_IMAGES_MAX)) {
        cJSON *first = cJSON_DetachItemViaPointer(s->by_path, s->by_path->child);
        s->bytes -= held(first);
        cJSON_Delete(first);
    }
    cJSON *e = cJSON_CreateObject();
    if (!e || !cJSON_AddStringToObject(e, "media_type", media_type) || !cJSON_AddStringToObject(e, "data", b64) ||
        !cJSON_AddItemToObject(s->by_path, path, e)) {
        cJSON_Delete(e);
        return LB_E_NOMEM;
    }
    s->bytes += n;
    return LB_OK;
}

const char *lb_obs_images_get(const lb_obs_images *s, const char *path, const char **media_type)
{
    const cJSON *e = s && path ? cJSON_GetObjectItemCaseSensitive(s->by_path, path) : NULL;
    const char *mt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "media_type"));
    const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "data"));
    if (!mt || !d)
        return NULL;
    *media_type = mt;
    return d;
}

void lb_obs_images_free(lb_obs_images *s)
{
    cJSON_Delete(s->by_path);
    memset(s, 0, sizeof *s);
}
