/* libFuzzer target for E2B's network.maskRequestHost (lb_e2b_mask_host_check
 * and lb_e2b_mask_host_apply, server/e2b/e2b_network.c): any bytes as the
 * client's string. Promise: an accepted mask, applied for any port, is a
 * Host value of letters, digits, '.', '-', '_' and at most one ':' followed
 * by 1 to 5 digits, shorter than LB_SBX_MASK_HOST_MAX, with no "${PORT}" left: it
 * cannot break the header line it goes into; a refused one says why. */
#include "e2b/e2b_network.h"

#include "common/status.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1024)
        return 0;
    char s[1025];
    memcpy(s, data, size);
    s[size] = '\0';
    cJSON *v = cJSON_CreateString(s);
    if (!v)
        return 0;
    char mask[LB_SBX_MASK_HOST_MAX], err[300] = "";
    int rc = lb_e2b_mask_host_check(v, mask, sizeof mask, err, sizeof err);
    cJSON_Delete(v);
    if (rc != LB_OK) {
        if (rc != LB_E_INVAL || !err[0])
            __builtin_trap();
        return 0;
    }
    static const int ports[] = {1, 80, 8080, 65535};
    for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++) {
        char host[LB_SBX_MASK_HOST_MAX];
        lb_e2b_mask_host_apply(mask, ports[i], host, sizeof host);
        size_t n = strlen(host);
        if (!n || n >= LB_SBX_MASK_HOST_MAX || strstr(host, "${PORT}") || host[0] == ':')
            __builtin_trap();
        const char *colon = strchr(host, ':');
        if (colon && (strchr(colon + 1, ':') || !colon[1] || strlen(colon + 1) > 5 ||
                      strspn(colon + 1, "0123456789") != strlen(colon + 1)))
            __builtin_trap();
        if (strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:") != n)
            __builtin_trap();
    }
    return 0;
}
