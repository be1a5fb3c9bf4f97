/* libFuzzer target for the Dockerfile parser and its variable expansion
 * (server/images/dockerfile_parse.c), any bytes a user gives as a
 * Dockerfile. Promises: no read past the input (it is not
 * NUL-terminated); a failure says "Dockerfile:LINE:" with LINE within the
 * file; an accepted file has its first FROM at from_index, with only
 * ARGs before it, 1 to LB_DF_STAGES_MAX stages, every step in the stage of
 * the FROM before it, every FROM and COPY --from that names a stage naming
 * an earlier one (no cycle), at most LB_DF_STEPS_MAX steps of at most LB_DF_ARGS_MAX
 * words, lines that only grow, and no COPY/ADD source that names a URL;
 * expanding any word either fails with a sentence or gives a string of at
 * most LB_DF_EXPAND_MAX bytes. */
#include "images/dockerfile_parse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *lookup(void *ctx, const char *name)
{
    (void)ctx;
    return name[0] == 'A' ? "value-of-a" : name[0] == 'E' ? "" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size ? size : 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    lb_dockerfile df;
    char msg[512] = "";
    int rc = lb_dockerfile_parse(s, size, &df, msg, sizeof msg);
    if (rc) {
        int line = 0;
        if (sscanf(msg, "Dockerfile:%d:", &line) != 1 || line < 1)
            __builtin_trap();
        size_t lines = 1;
        for (size_t i = 0; i < size; i++)
            lines += s[i] == '\n';
        if ((size_t)line > lines)
            __builtin_trap();
    } else {
        if (df.from_index < 0 || df.from_index >= df.n || df.n > LB_DF_STEPS_MAX ||
            df.steps[df.from_index].kind != LB_DF_FROM)
            __builtin_trap();
        int last = 0, stage = -1;
        if (df.nstages < 1 || df.nstages > LB_DF_STAGES_MAX)
            __builtin_trap();
        for (int i = 0; i < df.n; i++) {
            const lb_df_step *st = &df.steps[i];
            if (st->argc < 1 || st->argc > LB_DF_ARGS_MAX || st->line < last)
                __builtin_trap();
            last = st->line;
            if (i < df.from_index && st->kind != LB_DF_ARG)
                __builtin_trap();
            if (st->kind == LB_DF_FROM)
                stage++;
            if (st->stage != (i < df.from_index ? -1 : stage) || st->from_stage >= (st->stage < 0 ? 0 : st->stage) ||
                st->from_stage < -1 || (st->from_stage >= 0 && st->kind != LB_DF_FROM && st->kind != LB_DF_COPY) ||
                (st->from && st->kind != LB_DF_COPY))
                __builtin_trap();
            for (int j = 0; j < st->argc; j++) {
                if (!st->argv[j])
                    __builtin_trap();
                if ((st->kind == LB_DF_COPY || st->kind == LB_DF_ADD) && j < st->argc - 1 &&
                    strstr(st->argv[j], "://"))
                    __builtin_trap();
                char *out = NULL, emsg[256] = "";
                if (lb_df_expand(st->argv[j], lookup, NULL, &out, emsg, sizeof emsg) == 0) {
                    if (!out || strlen(out) > LB_DF_EXPAND_MAX)
                        __builtin_trap();
                    free(out);
                } else if (!emsg[0]) {
                    __builtin_trap();
                }
            }
        }
    }
    lb_dockerfile_free(&df);
    free(s);
    return 0;
}
