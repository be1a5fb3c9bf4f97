/* libFuzzer target for E2B's template steps made a Dockerfile
 * (server/e2b/e2b_template_steps.c): any JSON a client sends as the body
 * of POST /v2/templates/{name}/builds/{build}. Promises: a refusal has a
 * sentence and names a step ("base", "finalize" or a number within the
 * steps); an accepted template's Dockerfile is read by the builder's own
 * parser (server/images/dockerfile_parse.c) with one FROM first and only
 * RUN, COPY, ENV, WORKDIR and USER after it (no word of the client's can
 * start an instruction of its choosing), every RUN is the exec form of
 * /bin/sh -c, every COPY source is under files/<64 hex>/ and every word
 * expands; the lines' steps never go down. */
#include "e2b/e2b_template_steps.h"
#include "images/dockerfile_parse.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Whether path has a ".." component ("..." is a name like any other). */
static int has_dotdot(const char *path)
{
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return 1;
        p += n;
        while (*p == '/')
            p++;
    }
    return 0;
}

static const char *lookup(void *ctx, const char *name)
{
    (void)ctx;
    return name[0] == 'A' ? "value-of-a" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (!j)
        return 0;
    lb_buf out;
    lb_buf_init(&out, 4u << 20);
    char hashes[64][65], msg[1024] = "", step[16] = "";
    int nh = 0, lines[700];
    int rc = lb_e2b_tpl_dockerfile(j, &out, hashes, 64, &nh, lines, 700, msg, sizeof msg, step);
    int nsteps = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "steps"));
    if (rc) {
        char *end = NULL;
        long n = strtol(step, &end, 10);
        if (!msg[0] || (strcmp(step, "base") && strcmp(step, "finalize") && (*end || n < 1 || n > nsteps)))
            __builtin_trap();
    } else {
        lb_dockerfile df;
        char pm[512];
        if (!out.data || lb_dockerfile_parse(out.data, out.len, &df, pm, sizeof pm) != 0)
            __builtin_trap();
        if (df.n < 1 || df.from_index != 0 || df.steps[0].kind != LB_DF_FROM)
            __builtin_trap();
        for (int i = 1; i < df.n; i++) {
            const lb_df_step *s = &df.steps[i];
            if (s->kind != LB_DF_RUN && s->kind != LB_DF_COPY && s->kind != LB_DF_ENV && s->kind != LB_DF_WORKDIR &&
                s->kind != LB_DF_USER)
                __builtin_trap();
            if (s->kind == LB_DF_RUN && (!s->exec_form || s->argc != 3 || strcmp(s->argv[0], "/bin/sh")))
                __builtin_trap();
            if (s->kind == LB_DF_COPY && (!s->exec_form || s->argc != 2 || strncmp(s->argv[0], "files/", 6) ||
                                          strlen(s->argv[0]) < 70 || has_dotdot(s->argv[0])))
                __builtin_trap();
            for (int k = 0; k < s->argc; k++) {
                char *e = NULL, em[256];
                if (lb_df_expand(s->argv[k], lookup, NULL, &e, em, sizeof em) != 0)
                    __builtin_trap();
                free(e);
            }
        }
        for (int l = 1; l < 699; l++)
            if (lines[l + 1] && lines[l + 1] < lines[l])
                __builtin_trap();
        lb_dockerfile_free(&df);
    }
    lb_buf_free(&out);
    cJSON_Delete(j);
    return 0;
}
