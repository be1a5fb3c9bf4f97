/* libFuzzer target: path normalisation for artifact URLs, uploads and
 * sandbox paths (lb_path_clean_rel, lbsd_sandbox_path) and query-string
 * decoding (lb_query_get, e.g. ?last_event_id= and ?path=). Promise checked:
 * what comes out is a clean relative path, and decoded values never hold NUL. */
#include "common/path.h"
#include "common/status.h"
#include "fuzz_util.h"
#include "sandbox/rpc.h"
#include "web/http.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1);
    if (!in)
        return 0;
    memcpy(in, data, size);
    in[size] = '\0';
    char out[LB_PATH_MAX + 1];
    if (lb_path_clean_rel(in, size, out, sizeof out) == LB_OK) {
        fz_assert_clean_rel(out);
        fz_assert_utf8(out, strlen(out));
    }
    if (!memchr(data, '\0', size) && lbsd_sandbox_path(in, out, sizeof out) == LB_OK && out[0])
        fz_assert_clean_rel(out);
    char val[256];
    static const char *const keys[] = {"path", "last_event_id", "limit", "before"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        if (!memchr(data, '\0', size) && lb_query_get(in, keys[k], val, sizeof val) == LB_OK &&
            strlen(val) >= sizeof val)
            __builtin_trap();
    }
    free(in);
    return 0;
}
