/* libFuzzer target: the entry names of a saved sandbox state (follow-ups,
 * server/stateio/stateio_path.c: lbst_entry_path), which build/llmbox-stateio
 * checks before it creates, replaces or deletes anything in a restored
 * sandbox. Input: one tar entry name, any bytes. Promise checked: an
 * accepted name was "layer" or "layer/..." and what comes out is a
 * relative path of components that are neither empty, "." nor "..", no
 * longer than the caps, a suffix of the input; a refusal says why. */
#include "stateio/stateio.h"
#include "stateio/stateio_path.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1);
    if (!in)
        return 0;
    memcpy(in, data, size);
    in[size] = '\0';
    char rel[LBST_PATH_MAX + 1];
    const char *why = NULL;
    if (lbst_entry_path(in, rel, sizeof rel, &why) == 0) {
        if (strncmp(in, "layer", 5) != 0 || rel[0] == '/' || strlen(rel) > LBST_PATH_MAX)
            __builtin_trap();
        if (!strstr(in, rel))
            __builtin_trap();
        int depth = 0;
        for (const char *c = rel; *c;) {
            size_t n = strcspn(c, "/");
            if (n == 0 || n > LBST_NAME_MAX || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                __builtin_trap();
            depth++;
            c += n;
            if (*c == '/')
                c++;
            else if (*c)
                __builtin_trap();
        }
        if (depth > LBST_DEPTH_MAX || (rel[0] && rel[strlen(rel) - 1] == '/'))
            __builtin_trap();
    } else if (!why || !why[0]) {
        __builtin_trap();
    }
    free(in);
    return 0;
}
