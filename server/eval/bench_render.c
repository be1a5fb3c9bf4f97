/* The official prompt rendering (bench_render.h): str.replace of the
 * directories, then the subset of str.format the official templates use. */
#include "eval/bench_render.h"

#include "common/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int replace_all(const char *s, const char *what, const char *with, char **out)
{
    lb_buf b;
    lb_buf_init(&b, LB_BENCH_PROMPT_MAX);
    size_t wl = strlen(what);
    int rc = LB_OK;
    for (const char *p = s; rc == LB_OK;) {
        const char *hit = strstr(p, what);
        if (!hit) {
            rc = lb_buf_appends(&b, p);
            break;
        }
        rc = lb_buf_append(&b, p, (size_t)(hit - p));
        if (rc == LB_OK)
            rc = lb_buf_appends(&b, with);
        p = hit + wl;
    }
    if (rc == LB_OK && !b.data)
        rc = lb_buf_append(&b, "", 0);
    if (rc != LB_OK) {
        lb_buf_free(&b);
        return rc;
    }
    *out = lb_buf_steal(&b, NULL);
    return LB_OK;
}

int lb_bench_replace_dirs(const char *tmpl, const char *working_dir, const char *input_dir, const char *output_dir,
                          char **out, char *err, size_t errsz)
{
    char *a = NULL, *b = NULL;
    *out = NULL;
    int rc = replace_all(tmpl, "{working_dir}", working_dir, &a);
    if (rc == LB_OK)
        rc = replace_all(a, "{input_dir}", input_dir, &b);
    if (rc == LB_OK)
        rc = replace_all(b, "{output_dir}", output_dir, out);
    free(a);
    free(b);
    if (rc != LB_OK)
        snprintf(err, errsz, "the prompt would be over %u MiB", LB_BENCH_PROMPT_MAX >> 20);
    return rc;
}

int lb_bench_format(const char *tmpl, const lb_bench_var *vars, size_t nvars, char **out, char *err, size_t errsz)
{
    lb_buf b;
    lb_buf_init(&b, LB_BENCH_PROMPT_MAX);
    int rc = LB_OK;
    *out = NULL;
    const char *p = tmpl;
    while (*p && rc == LB_OK) {
        const char *q = p + strcspn(p, "{}");
        rc = lb_buf_append(&b, p, (size_t)(q - p));
        p = q;
        if (rc != LB_OK || !*p)
            break;
        size_t at = (size_t)(p - tmpl);
        if (p[0] == '}') {
            if (p[1] != '}') {
                snprintf(err, errsz, "Single '}' encountered in format string (at byte %zu)", at);
                rc = LB_E_INVAL;
                break;
            }
            rc = lb_buf_append(&b, "}", 1);
            p += 2;
            continue;
        }
        if (p[1] == '{') {
            rc = lb_buf_append(&b, "{", 1);
            p += 2;
            continue;
        }
        const char *end = p + 1 + strcspn(p + 1, "{}");
        if (*end != '}') {
            if (*end == '{')
                snprintf(err, errsz, "a nested replacement field at byte %zu is not supported", at);
            else if (p[1] == '\0')
                snprintf(err, errsz, "Single '{' encountered in format string (at byte %zu)", at);
            else
                snprintf(err, errsz, "expected '}' before end of string (the field at byte %zu)", at);
            rc = LB_E_INVAL;
            break;
        }
        size_t nl = (size_t)(end - p - 1);
        char name[80];
        size_t shown = nl < 64 ? nl : 64;
        for (size_t i = 0; i < shown; i++)
            name[i] = (p[1 + i] >= 0x20 && p[1 + i] < 0x7f) ? p[1 + i] : '?';
        name[shown] = '\0';
        if (nl == 0 || (p[1] >= '0' && p[1] <= '9')) {
            snprintf(err, errsz, "the positional field {%s} at byte %zu has no value (str.format is given names "
                     "only: IndexError)", name, at);
            rc = LB_E_INVAL;
            break;
        }
        if (memchr(p + 1, '!', nl) || memchr(p + 1, ':', nl) || memchr(p + 1, '.', nl) || memchr(p + 1, '[', nl)) {
            snprintf(err, errsz, "the field {%s} at byte %zu uses a conversion, format spec, attribute or index, "
                     "which llmbox does not render", name, at);
            rc = LB_E_INVAL;
            break;
        }
        const char *val = NULL;
        for (size_t i = 0; i < nvars && !val; i++)
            if (strlen(vars[i].name) == nl && !memcmp(vars[i].name, p + 1, nl))
                val = vars[i].value;
        if (!val) {
            snprintf(err, errsz, "the placeholder {%s} at byte %zu has no value (the official code's str.format "
                     "raises KeyError: write it as {{%s}} for literal braces)", name, at, name);
            rc = LB_E_INVAL;
            break;
        }
        rc = lb_buf_appends(&b, val);
        p = end + 1;
    }
    if (rc == LB_OK && !b.data)
        rc = lb_buf_append(&b, "", 0);
    if (rc != LB_OK) {
        if (rc == LB_E_TOOBIG || rc == LB_E_NOMEM)
            snprintf(err, errsz, "the prompt would be over %u MiB", LB_BENCH_PROMPT_MAX >> 20);
        lb_buf_free(&b);
        return rc;
    }
    *out = lb_buf_steal(&b, NULL);
    return LB_OK;
}

int lb_bench_render_system(const char *tmpl, const char *working_dir, const char *input_dir, const char *output_dir,
                           char **out, char *err, size_t errsz)
{
    char *t = NULL;
    int rc = lb_bench_replace_dirs(tmpl, working_dir, input_dir, output_dir, &t, err, errsz);
    if (rc == LB_OK) {
        lb_bench_var v[] = {{"command_docs", ""}, {"demo", ""}};
        rc = lb_bench_format(t, v, 2, out, err, errsz);
    }
    free(t);
    return rc;
}

int lb_bench_render_instance(const char *tmpl, const char *working_dir, const char *input_dir,
                             const char *output_dir, const char *problem, char **out, char *err, size_t errsz)
{
    if (!tmpl || !tmpl[0]) {
        /* the agent: no instance template, the problem statement is the message */
        *out = strdup(problem);
        if (!*out)
            snprintf(err, errsz, "out of memory");
        return *out ? LB_OK : LB_E_NOMEM;
    }
    char *t = NULL;
    int rc = lb_bench_replace_dirs(tmpl, working_dir, input_dir, output_dir, &t, err, errsz);
    if (rc == LB_OK) {
        lb_bench_var v[] = {{"problem_statement", problem}};
        rc = lb_bench_format(t, v, 1, out, err, errsz);
    }
    free(t);
    return rc;
}
