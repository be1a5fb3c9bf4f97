/*
 * The model client (model_http.c): one configured model, one chat
 * completion over HTTP with retries, the request bodies of each provider
 * (model_openai.h, model_anthropic.h) and the sampling settings they share.
 */
#ifndef LB_MODEL_HTTP_H
#define LB_MODEL_HTTP_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "agent/toolcall_parse.h"
#include "common/status.h"

#define LB_MODEL_MAX_RESPONSE (16u << 20)

/* The API a model's endpoint speaks (provider in llmbox.conf). */
typedef enum lb_provider {
    LB_PROVIDER_OPENAI = 0,
    LB_PROVIDER_ANTHROPIC = 1,
    LB_PROVIDER_REPLAY = 2,     /* no model: a recorded run played back (model_replay.c) */
} lb_provider;

/* How tools reach the model (tool_mode; openai provider). */
typedef enum lb_tool_mode {
    LB_TOOL_MODE_NATIVE = 0,    /* the API's `tools` and tool_calls */
    LB_TOOL_MODE_TEXT = 1,      /* described in the system prompt, called as
                                 * <function=NAME> text, observations as user messages */
} lb_tool_mode;

struct lb_config;
struct lb_model_cfg;

typedef struct lb_model {
    const struct lb_model_cfg *cfg; /* the configured model (process lifetime) */
    int provider;               /* lb_provider */
    char name[64];              /* its configured name */
    char url[1200];             /* {base_url}/chat/completions or .../v1/messages */
    char shown_url[1200];       /* the same without user:password@, for messages */
    char model[256];            /* the id sent to the endpoint */
    char auth[600];             /* "Authorization: Bearer ...", "x-api-key: ..." or ""
                                 * (never logged) */
    char key_env[128];          /* where the key came from, for messages ("" = none) */
    int max_tokens;             /* sent when > 0 (anthropic always, 8192 by default);
                                 * lowered after a context-length error */
    double temperature, top_p;  /* NAN = not sent; the model's, or a task's own */
    int top_k;                  /* -1 = not sent */
    int timeout_s;
    int retries;                /* after the first try */
    volatile int *cancel;
    cJSON *extra_body;          /* merged into requests */
    void *curl;
    int retry_base_ms;          /* first backoff; tests may lower it */
    int tool_mode;              /* lb_tool_mode */
    size_t last_request_bytes;  /* of the last request body (token estimates) */
    int capture_tokens;         /* openai: ask for token ids and log-probabilities
                                 * and read them (tokens.h); set by the caller */
    cJSON *replay;              /* replay: the assistant messages to play, in order */
    int replay_next;            /* replay: index of the next one */
    /* a task's own model_url (LB_MODEL_ENDPOINT_TASK): the targets the
     * operator lets it reach (common/netcheck.h), NULL for the operator's
     * own endpoints (not checked); host_named: a host rule names the URL's
     * host, so any address it resolves to is allowed; refused: the address
     * the last request was refused (model_http.c's socket check) */
    struct lb_netallow *allow;
    int host_named;
    char refused[64];
    /* borrowed, may be NULL: the bytes of the images tool messages name
     * (obs_images.h), sent by the providers whose tool results take them */
    const struct lb_obs_images *images;
} lb_model;

/* The model of cfg called name (NULL or "": the default model); m keeps a
 * pointer into cfg, which must outlive it. cancel may be NULL.
 * LB_E_NOTFOUND with the list of models in err when there is no such
 * model. */
LB_MUST_CHECK int lb_model_init(lb_model *m, const struct lb_config *cfg, const char *name, volatile int *cancel,
                  char *err, size_t errsz);
void lb_model_free(lb_model *m);
/* One chat completion. Returns LB_OK, LB_E_CANCELLED, LB_E_UNAVAILABLE
 * (endpoint unreachable), LB_E_DENIED (the key was refused: 401/403),
 * LB_E_TOOBIG (the conversation does not fit the model's context, even
 * after one retry with a lower max_tokens), LB_E_PROTO (another bad HTTP
 * status or body), with a plain sentence in err that can be shown to a
 * user as is. */
LB_MUST_CHECK int lb_model_chat(lb_model *m, const cJSON *messages, const cJSON *tools,
                                lb_model_reply *r, char *err, size_t errsz);
/* The request body lb_model_chat sends (for tests). Caller frees. */
char *lb_model_request_body(const lb_model *m, const cJSON *messages, const cJSON *tools);
struct lb_task_opts;
/* A task's own sampling (temperature, top_p, top_k options) in place of
 * the model's settings, where the options set them. */
void lb_model_apply_opts(lb_model *m, const struct lb_task_opts *o);

/* Adds the model's sampling settings (temperature, top_p, top_k, and for
 * openai min_p, repetition_penalty, max_tokens) to req. */
void lb_model_add_sampling(const lb_model *m, cJSON *req);
/* Adds the model's extra_body members to req (replacing same-named ones,
 * sampling included), except the `keep` names, which the request builder
 * owns. */
void lb_model_merge_extra(const lb_model *m, cJSON *req, const char *const *keep);

#endif
