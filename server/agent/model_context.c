/* Context-length errors: recognising them in an endpoint's error answer,
 * and sizing the one retry with a smaller max_tokens.
 *
 * What the servers say (lower-cased before matching):
 *   vLLM     "This model's maximum context length is 32768 tokens. However, you
 *             requested 33000 tokens (25000 in the messages, 8000 in the completion)."
 *   SGLang   "... the model's maximum context length of 32768 tokens. You requested a
 *             total of 33000 tokens: 25000 tokens from the input messages and ..."
 *   OpenAI   code "context_length_exceeded", "... your messages resulted in 130532 tokens"
 *   llama.cpp "exceed_context_size_error" with "n_prompt_tokens" and "n_ctx"
 *   Anthropic "prompt is too long: 210000 tokens > 200000 maximum", or
 *             "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000"
 */
#include "agent/model_context.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define LB_CTX_SCAN_MAX 8192   /* bytes of the error body looked at */
#define LB_CTX_MARGIN 64       /* tokens kept free: templates count a few more */
#define LB_CTX_MIN_TOKENS 16   /* below this a completion cannot hold a tool call */

static const char *const lb_ctx_phrases[] = {
    "context length",  "context_length",       "maximum context", "context window",
    "prompt is too long", "exceed context limit", "exceeds the context", "context size",
    "exceed_context_size", NULL,
};

/* The first number within 32 bytes after phrase, or -1. */
static long num_after(const char *s, const char *phrase)
{
    const char *p = strstr(s, phrase);
    if (!p)
        return -1;
    p += strlen(phrase);
    for (int i = 0; i < 32 && *p && !isdigit((unsigned char)*p); i++)
        p++;
    return isdigit((unsigned char)*p) ? strtol(p, NULL, 10) : -1;
}

/* The number right before phrase (spaces between), or -1. */
static long num_before(const char *s, const char *phrase)
{
    const char *p = strstr(s, phrase);
    if (!p || p == s)
        return -1;
    const char *q = p;
    while (q > s && q[-1] == ' ')
        q--;
    const char *e = q;
    while (q > s && isdigit((unsigned char)q[-1]))
        q--;
    return q < e ? strtol(q, NULL, 10) : -1;
}

static long first_of(long a, long b) { return a >= 0 ? a : b; }

int lb_context_error(long http, const char *body, size_t len, long *limit, long *prompt)
{
    *limit = *prompt = -1;
    if (!body || !len || (http != 400 && http != 413 && http != 422 && http != 500))
        return 0;
    if (len > LB_CTX_SCAN_MAX)
        len = LB_CTX_SCAN_MAX;
    char *s = malloc(len + 1);
    if (!s)
        return 0;
    for (size_t i = 0; i < len; i++)
        s[i] = body[i] ? (char)tolower((unsigned char)body[i]) : ' ';
    s[len] = '\0';
    int hit = 0;
    for (int i = 0; lb_ctx_phrases[i] && !hit; i++)
        hit = strstr(s, lb_ctx_phrases[i]) != NULL;
    if (!hit) {
        free(s);
        return 0;
    }
    long L = num_after(s, "maximum context length");
    L = first_of(L, num_after(s, "context length of"));
    L = first_of(L, num_after(s, "context window of"));
    L = first_of(L, num_after(s, "\"n_ctx\""));
    L = first_of(L, num_after(s, "context size ("));
    L = first_of(L, num_before(s, " maximum"));
    long P = num_before(s, " in the messages");
    P = first_of(P, num_before(s, " tokens from the input"));
    P = first_of(P, num_after(s, "messages resulted in"));
    P = first_of(P, num_after(s, "request has"));
    P = first_of(P, num_after(s, "\"n_prompt_tokens\""));
    P = first_of(P, num_after(s, "prompt is too long"));
    /* Anthropic: "exceed context limit: P + C > L" */
    const char *cl = strstr(s, "context limit:");
    if (cl) {
        char *end;
        long p1 = strtol(cl + 14, &end, 10);
        const char *gt = strchr(end, '>');
        if (end != cl + 14 && gt && gt - end < 32) {
            P = first_of(P, p1);
            L = first_of(L, strtol(gt + 1, NULL, 10));
        }
    }
    free(s);
    *limit = L > 0 ? L : -1;
    *prompt = P > 0 ? P : -1;
    return 1;
}

long lb_context_retry_tokens(long current, long limit, long prompt, long context_length)
{
    long next;
    if (limit > 0 && prompt > 0) {
        next = limit - prompt - LB_CTX_MARGIN;
        if (current > 0 && next >= current)
            next = current / 2; /* the numbers disagree with what was sent: halve */
    } else {
        long base = current > 0 ? current : context_length > 0 ? context_length / 2 : 8192;
        next = base / 2;
    }
    return next >= LB_CTX_MIN_TOKENS ? next : 0;
}
