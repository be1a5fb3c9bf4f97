/* libFuzzer target for a volume's record file (lbvol_meta_parse,
 * server/volumes/volume_meta.c): any bytes as <var_dir>/volumes/<id>/
 * volume.json, which sandboxd reads back at every volume request. Promise:
 * a record parsed has a valid name and owner and a created time >= 0, it
 * formats, and the formatted text parses back to the same record; input
 * past LBVOL_META_MAX is refused whole; nothing is read past the input. */
#include "volumes/volume_meta.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of its own size, so a read past it is ASan's to see */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    lbvol_meta m, back;
    int rc = lbvol_meta_parse(text, size, &m);
    if (size > LBVOL_META_MAX && rc != LB_E_TOOBIG)
        __builtin_trap();
    if (rc == LB_OK) {
        char out[LBVOL_META_MAX];
        size_t n = 0;
        if (!lbvol_name_valid(m.name) || !lbvol_owner_valid(m.owner) || m.created_ms < 0)
            __builtin_trap();
        if (lbvol_meta_format(&m, out, sizeof out, &n) != LB_OK || lbvol_meta_parse(out, n, &back) != LB_OK ||
            strcmp(back.name, m.name) || strcmp(back.owner, m.owner) || back.created_ms != m.created_ms)
            __builtin_trap();
    }
    free(text);
    return 0;
}
