/* A volume's record file: parse and format (volume_meta.h). */
#include "volumes/volume_meta.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

int lbvol_name_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > LBVOL_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int lbvol_owner_valid(const char *s)
{
    size_t n = s ? strlen(s) : LBVOL_OWNER_MAX + 1;
    if (n > LBVOL_OWNER_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\')
            return 0;
    return 1;
}

int lbvol_meta_parse(const char *text, size_t n, lbvol_meta *m)
{
    memset(m, 0, sizeof *m);
    if (n > LBVOL_META_MAX)
        return LB_E_TOOBIG;
    cJSON *o = cJSON_ParseWithLength(text, n);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return LB_E_INVAL;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *owner = cJSON_GetObjectItemCaseSensitive(o, "owner");
    const cJSON *created = cJSON_GetObjectItemCaseSensitive(o, "created_ms");
    int rc = LB_E_INVAL;
    /* created_ms within what a double holds exactly, and after 1970 */
    if (cJSON_IsString(name) && lbvol_name_valid(name->valuestring) && cJSON_IsString(owner) &&
        lbvol_owner_valid(owner->valuestring) && cJSON_IsNumber(created) && created->valuedouble >= 0 &&
        created->valuedouble <= 9007199254740992.0) {
        snprintf(m->name, sizeof m->name, "%s", name->valuestring);
        snprintf(m->owner, sizeof m->owner, "%s", owner->valuestring);
        m->created_ms = (int64_t)created->valuedouble;
        rc = LB_OK;
    }
    cJSON_Delete(o);
    return rc;
}

int lbvol_meta_format(const lbvol_meta *m, char *out, size_t outsz, size_t *len)
{
    if (!lbvol_name_valid(m->name) || !lbvol_owner_valid(m->owner))
        return LB_E_INVAL;
    /* both strings need no escaping: their characters are checked above */
    int k = snprintf(out, outsz, "{\"name\":\"%s\",\"owner\":\"%s\",\"created_ms\":%lld}\n", m->name, m->owner,
                     (long long)m->created_ms);
    if (k < 0 || (size_t)k >= outsz)
        return LB_E_TOOBIG;
    *len = (size_t)k;
    return LB_OK;
}
