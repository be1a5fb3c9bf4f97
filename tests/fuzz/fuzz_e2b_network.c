/* libFuzzer target for E2B's network options as a policy
 * (lb_e2b_network_map, server/e2b/e2b_network.c): any bytes as the create's
 * "network" object, per-host transforms (rules) above all. Promise: a
 * refusal says why and hands nothing out; an accepted one gives a policy
 * whose "secrets" are exactly the transform entries' names, each entry a
 * header line "NAME: {value}" with a token NAME and a value with no
 * control character (it cannot break the request the gateway writes). */
#include "e2b/e2b_network.h"

#include "common/netpolicy.h"
#include "common/status.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16384)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    cJSON *net = cJSON_Parse(s);
    free(s);
    cJSON *out = NULL, *fb = NULL;
    char *vals = NULL, err[300] = "";
    int rc = lb_e2b_network_map(NULL, net, &out, &fb, &vals, err, sizeof err);
    cJSON_Delete(net);
    if (rc != LB_OK) {
        if (!err[0] || out || fb || vals)
            __builtin_trap();
        return 0;
    }
    const cJSON *secrets = cJSON_GetObjectItemCaseSensitive(out, "secrets");
    cJSON *v = vals ? cJSON_Parse(vals) : NULL;
    if ((vals && !cJSON_IsArray(v)) || cJSON_GetArraySize(secrets) != (v ? cJSON_GetArraySize(v) : 0) ||
        cJSON_GetArraySize(v) > LB_E2B_TRANSFORMS_MAX)
        __builtin_trap();
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, v) {
        const char *nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
        const char *hd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "header"));
        const char *val = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "value"));
        const cJSON *sn = cJSON_GetArrayItem(secrets, i++);
        if (!nm || !hd || !val || !cJSON_IsString(sn) || strcmp(sn->valuestring, nm) ||
            strncmp(nm, LB_NETPOL_TRANSFORM_PREFIX, strlen(LB_NETPOL_TRANSFORM_PREFIX)) ||
            !lb_netpolicy_secret_name_ok(nm))
            __builtin_trap();
        size_t n = strcspn(hd, ":");
        if (!n || strcmp(hd + n, ": {value}") ||
            strspn(hd, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+.^_`|~-") != n)
            __builtin_trap();
        for (const char *q = val; *q; q++)
            if ((unsigned char)*q < 0x20 || *q == 0x7f)
                __builtin_trap();
    }
    cJSON_Delete(v);
    free(vals);
    cJSON_Delete(out);
    cJSON_Delete(fb);
    return 0;
}
