/*
 * Context-length errors (model_context.c): when an answer says the
 * request does not fit, and what to retry with.
 */
#ifndef LB_MODEL_CONTEXT_H
#define LB_MODEL_CONTEXT_H

#include <stddef.h>

/* Whether an error answer (HTTP
 * status and body) says the request does not fit the model's context; when
 * it names them, *limit gets the context size and *prompt the prompt's
 * tokens (else -1). */
int lb_context_error(long http, const char *body, size_t len, long *limit, long *prompt);
/* The max_tokens to retry with, or 0 when nothing smaller can fit:
 * limit - prompt - a margin when both are known, else half of current (or
 * of context_length / 2 when nothing was sent, else of 8192). */
long lb_context_retry_tokens(long current, long limit, long prompt, long context_length);

#endif
