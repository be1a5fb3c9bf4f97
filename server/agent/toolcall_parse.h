/*
 * A model's reply, parsed (toolcall_parse.c): its text, reasoning, tool
 * calls and token counts, from an OpenAI or an Anthropic answer body.
 */
#ifndef LB_TOOLCALL_PARSE_H
#define LB_TOOLCALL_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/status.h"

typedef struct lb_toolcall {
    char *id;                   /* NULL when the model gave none (the loop makes one) */
    char *name;                 /* never NULL; "" when missing */
    char *arguments;            /* never NULL; JSON text as the model sent it */
} lb_toolcall;

typedef struct lb_model_reply {
    char *content;              /* NULL when none */
    char *reasoning;            /* reasoning_content / reasoning, NULL when none */
    lb_toolcall *calls;
    size_t n_calls;
    char *finish_reason;        /* NULL when none */
    int64_t prompt_tokens;      /* -1 when the server did not say */
    int64_t completion_tokens;
    cJSON *blocks;              /* Anthropic thinking blocks, verbatim (signatures), or NULL;
                                 * sent back in the assistant message as "thinking_blocks" */
    struct lb_turn_tokens *tokens; /* the exact tokens (agent/tokens.h) when they were asked
                                 * for (capture_tokens), else NULL */
} lb_model_reply;

#define LB_MODEL_MAX_CALLS 64   /* tool calls kept from one reply */

/* Parses an OpenAI chat completion response body. Every string kept is
 * sanitized UTF-8. On failure returns LB_E_PROTO with a sentence in err. */
LB_MUST_CHECK int lb_parse_chat_response(const char *body, size_t len, lb_model_reply *r,
                                         char *err, size_t errsz);
/* The same, and with want_tokens the answer's token fields into r->tokens
 * (lb_tokens_parse: a verdict, never a failure of the reply). */
LB_MUST_CHECK int lb_parse_chat_response_tokens(const char *body, size_t len, lb_model_reply *r, int want_tokens,
                                                char *err, size_t errsz);
/* Parses an Anthropic Messages API response body, the same way. */
LB_MUST_CHECK int lb_parse_anthropic_response(const char *body, size_t len, lb_model_reply *r,
                                              char *err, size_t errsz);
void lb_model_reply_free(lb_model_reply *r);
/* The error message in an error body ({"error":{"message"}}, {"error":"..."},
 * {"detail":"..."}), or the start of the body when it is not JSON; one line,
 * sanitized, at most ~300 bytes. */
void lb_model_error_text(const char *body, size_t len, char *out, size_t outsz);

#endif
