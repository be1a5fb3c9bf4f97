/* Prompt templates: files the operator can edit, with {placeholders}. */
#include "agent/prompts.h"
#include "common/buf.h"
#include "common/status.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_PROMPT_FILE_MAX (256u << 10)
#define LB_PROMPT_OUT_MAX (64u << 20)

int lb_prompt_load(const char *dir, const char *name, char **out, char *err, size_t errsz)
{
    char path[4096];
    *out = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len = 0;
    int rc = lb_read_file(path, LB_PROMPT_FILE_MAX, out, &len);
    if (rc == LB_E_TOOBIG)
        snprintf(err, errsz, "The prompt template %s is larger than %u KiB.", path,
                 LB_PROMPT_FILE_MAX >> 10);
    else if (rc != LB_OK)
        snprintf(err, errsz, "Cannot read the prompt template %s (%s); set LLMBOX_PROMPTS or "
                 "LLMBOX_HOME to the llmbox directory.", path, lb_strerror(rc));
    else if (memchr(*out, '\0', len)) {
        snprintf(err, errsz, "The prompt template %s contains NUL bytes.", path);
        free(*out);
        *out = NULL;
        rc = LB_E_INVAL;
    }
    return rc;
}

char *lb_prompt_render(const char *tmpl, const lb_prompt_var *vars, size_t n)
{
    lb_buf b;
    lb_buf_init(&b, LB_PROMPT_OUT_MAX);
    const char *p = tmpl;
    while (*p) {
        const char *open = strchr(p, '{');
        if (!open) {
            if (lb_buf_appends(&b, p))
                goto fail;
            break;
        }
        if (lb_buf_append(&b, p, (size_t)(open - p)))
            goto fail;
        const char *close = strchr(open + 1, '}');
        const lb_prompt_var *hit = NULL;
        if (close) {
            size_t klen = (size_t)(close - open - 1);
            for (size_t i = 0; i < n && !hit; i++)
                if (strlen(vars[i].name) == klen && !memcmp(vars[i].name, open + 1, klen))
                    hit = &vars[i];
        }
        if (hit) {
            if (lb_buf_appends(&b, hit->value ? hit->value : ""))
                goto fail;
            p = close + 1;
        } else {
            /* not one of ours (code samples in a template have braces) */
            if (lb_buf_append(&b, "{", 1))
                goto fail;
            p = open + 1;
        }
    }
    return lb_buf_steal(&b, NULL);
fail:
    lb_buf_free(&b);
    return NULL;
}
