/* One JSON-RPC 2.0 message from an MCP server, parsed within a budget,
 * and the messages the client sends. What a server sends is hostile: the
 * text is capped (LB_MCPC_MSG_MAX), the values and nesting counted before
 * cJSON builds anything (web/req_body.h's pre-scan), and a message is
 * sorted into a response to us (an id that is a whole number: the only
 * ids this client sends), a notification, or a request of the server's. */
#ifndef LB_MCPC_MSG_H
#define LB_MCPC_MSG_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/status.h"

#define LB_MCPC_MSG_MAX (4u << 20)   /* one message's text: a tools/list of 64 capped schemas, an image */
#define LB_MCPC_MSG_VALUES 200000    /* JSON values in one message */
#define LB_MCPC_MSG_DEPTH 64         /* nesting in one message */

typedef enum lb_mcpc_kind {
    LB_MCPC_RESPONSE = 1,       /* id and exactly one of result and error */
    LB_MCPC_NOTIFICATION = 2,   /* method and no id */
    LB_MCPC_REQUEST = 3,        /* method and an id: the server asks us */
} lb_mcpc_kind;

typedef struct lb_mcpc_msg {
    cJSON *root;                /* owned */
    int kind;                   /* lb_mcpc_kind */
    int id_ours;                /* RESPONSE: the id is a whole number (ours may match it) */
    int64_t id;                 /* RESPONSE: that number */
    const cJSON *id_item;       /* RESPONSE, REQUEST: the id as sent */
    const char *method;         /* NOTIFICATION, REQUEST */
    const cJSON *result;        /* RESPONSE: result (any JSON), or NULL */
    const cJSON *error;         /* RESPONSE: error, or NULL */
} lb_mcpc_msg;

/* Parses s[0..n): LB_OK with *m filled (free with lb_mcpc_msg_free), or
 * LB_E_INVAL / LB_E_TOOBIG / LB_E_NOMEM with a sentence in err and *m
 * empty. Refused: not JSON, over the budget, not an object, "jsonrpc" not
 * "2.0", none of the three shapes. Pure. */
LB_MUST_CHECK int lb_mcpc_msg_parse(const char *s, size_t n, lb_mcpc_msg *m, char *err, size_t errsz);
void lb_mcpc_msg_free(lb_mcpc_msg *m);

/* The text of a request {jsonrpc, id, method, params} (params taken,
 * may be NULL), or NULL when out of memory. Caller frees. */
char *lb_mcpc_msg_request(int64_t id, const char *method, cJSON *params);
/* The text of a notification {jsonrpc, method} (no params). Caller frees. */
char *lb_mcpc_msg_notification(const char *method);
/* The text of our answer to a server's request: result (taken) when not
 * NULL, else an error with code and message. Caller frees. */
char *lb_mcpc_msg_answer(const cJSON *id, cJSON *result, int code, const char *message);
/* A response's error {code, message} as a sentence fragment for a person
 * or a model ("Invalid params (-32602)"), printable and capped. */
void lb_mcpc_msg_error_text(const cJSON *error, char *out, size_t outsz);

#endif
