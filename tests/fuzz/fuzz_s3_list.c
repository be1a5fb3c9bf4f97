/* libFuzzer target: an S3 ListObjectsV2 answer (lb_s3_list_parse) and the
 * <Code> of an error answer (lb_s3_error_code), as a hostile object store
 * could send them. Promises checked: every key handed out is non-empty,
 * NUL-free and at most LB_S3_KEY_MAX bytes; at most LB_S3_LIST_MAX_ENTRIES
 * per page; a truncated page has a non-empty token within its cap; an
 * error code is only [A-Za-z0-9.] within its buffer. */
#include "common/s3_list.h"
#include "fuzz_util.h"

#include <string.h>

static int count;

static int on_key(void *ctx, const char *key, uint64_t size)
{
    size_t n = strlen(key);
    if (n == 0 || n > LB_S3_KEY_MAX)
        __builtin_trap();
    if (++count > LB_S3_LIST_MAX_ENTRIES)
        __builtin_trap();
    return LB_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char next[LB_S3_TOKEN_MAX + 1], why[512] = "", code[32];
    int truncated = -1;
    count = 0;
    int rc = lb_s3_list_parse((const char *)data, size, on_key, NULL, &truncated, next, why, sizeof why);
    if (rc == LB_OK && truncated && (next[0] == '\0' || strlen(next) > LB_S3_TOKEN_MAX))
        __builtin_trap();
    if (rc != LB_OK && why[0] == '\0')
        __builtin_trap(); /* every refusal says why */
    lb_s3_error_code((const char *)data, size, code, sizeof code);
    for (const char *p = code; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.'))
            __builtin_trap();
    if (strlen(code) >= sizeof code)
        __builtin_trap();
    return 0;
}
