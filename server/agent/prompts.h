/*
 * The prompt templates (prompts.c): loaded from the prompts dir, their
 * {variables} filled in.
 */
#ifndef LB_PROMPTS_H
#define LB_PROMPTS_H

#include <stddef.h>

#include "common/status.h"

typedef struct lb_prompt_var {
    const char *name;           /* without braces */
    const char *value;
} lb_prompt_var;

/* Reads dir/name (capped) into a malloc'd string. */
LB_MUST_CHECK int lb_prompt_load(const char *dir, const char *name, char **out, char *err, size_t errsz);
/* Replaces {name} for the given variables in one pass over tmpl: text
 * that comes from a value is never scanned again, and unknown {words}
 * stay as they are. Caller frees. */
char *lb_prompt_render(const char *tmpl, const lb_prompt_var *vars, size_t n);

#endif
