/* libFuzzer target: sandboxd's request decoding — the frame decoder fed in
 * random chunk sizes, then each frame through lbsd_req_parse (any local
 * client may send anything). Promise checked: accepted requests carry a
 * clean sandbox path, a valid id where one is needed, sane numbers. */
#include "common/status.h"
#include "common/util.h"
#include "fuzz_util.h"
#include "sandbox/rpc.h"

#include <stdlib.h>

static void check_req(const char *frame, size_t len)
{
    lbsd_req req;
    char msg[512];
    if (lbsd_req_parse(frame, len, &req, msg, sizeof msg) == LB_OK) {
        if (req.path[0])
            fz_assert_clean_rel(req.path);
        if (req.id && !lb_id_valid(req.id))
            __builtin_trap();
        if (req.timeout_ms < 0 || req.memory_mib < 0 || req.pids < 0 || req.ttl_s < 0 ||
            req.cpu_milli < 0 || req.disk_mib < 0 || (req.mode & ~0777))
            __builtin_trap();
        if (req.image[0] && !lbsd_image_spec_valid(req.image)) /* a name or a reference */
            __builtin_trap();
    }
    lbsd_req_free(&req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t chunk = (size_t)data[0] % 32 + 1;
    data++;
    size--;
    /* the whole input as one request... */
    check_req((const char *)data, size);
    /* ...and as a framed stream */
    lbsd_decoder d;
    lbsd_decoder_init(&d, 1 << 16);
    size_t off = 0;
    while (off < size) {
        size_t n = size - off < chunk ? size - off : chunk, used = 0;
        char *frame = NULL;
        size_t flen = 0;
        int r = lbsd_decoder_feed(&d, (const char *)data + off, n, &used, &frame, &flen);
        if (r < 0)
            break;
        if (used > n)
            __builtin_trap();
        if (r == 1) {
            if (flen > (1u << 16))
                __builtin_trap();
            check_req(frame, flen);
            free(frame);
        }
        if (used == 0 && r == 0)
            break;
        off += used;
    }
    lbsd_decoder_free(&d);
    return 0;
}
