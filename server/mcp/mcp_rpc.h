/* JSON-RPC 2.0 as MCP's Streamable HTTP carries it (mcp_rpc.c): one POST
 * body is one message (the protocol revisions this server speaks have no
 * batches). Parses a body within a budget and sorts it into a request, a
 * notification or a client's response; builds the answers. */
#ifndef LB_MCP_RPC_H
#define LB_MCP_RPC_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"

#define LB_MCP_BODY_MAX (8u << 20)     /* one message: a file written through sandbox_write_file fits */
#define LB_MCP_JSON_VALUES 20000       /* values in one message: MCP's are a few dozen */
#define LB_MCP_JSON_DEPTH 32           /* nesting: tool arguments are shallow */
#define LB_MCP_METHOD_MAX 128          /* bytes of a method name */
#define LB_MCP_ID_STR_MAX 256          /* bytes of a string id */

/* JSON-RPC's error codes, and MCP's own */
#define LB_RPC_PARSE_ERROR (-32700)
#define LB_RPC_INVALID_REQUEST (-32600)
#define LB_RPC_METHOD_NOT_FOUND (-32601)
#define LB_RPC_INVALID_PARAMS (-32602)
#define LB_RPC_INTERNAL_ERROR (-32603)
#define LB_RPC_SERVER_ERROR (-32000)   /* the transport's refusals: no session, too many */
#define LB_MCP_RESOURCE_NOT_FOUND (-32002)

typedef enum lb_mcp_kind {
    LB_MCP_REQUEST = 1,      /* method and id: answered */
    LB_MCP_NOTIFICATION = 2, /* method, no id: never answered */
    LB_MCP_RESPONSE = 3,     /* result or error with an id: the client answering us */
} lb_mcp_kind;

typedef struct lb_mcp_msg {
    cJSON *root;             /* the whole message, owned */
    lb_mcp_kind kind;
    const char *method;      /* in root; NULL for a response */
    const cJSON *id;         /* in root: a string or an integer; NULL for a notification */
    const cJSON *params;     /* in root: an object, or NULL when absent */
} lb_mcp_msg;

/* Parses body[0..n) into m. LB_OK; else m is empty, *code gets the
 * JSON-RPC error to answer (LB_RPC_PARSE_ERROR: not JSON or over the
 * budget; LB_RPC_INVALID_REQUEST: JSON but not one valid message), *id_out
 * a copy of the message's id when one could be read (else NULL; the
 * caller frees it), and msg a sentence. Pure. */
LB_MUST_CHECK int lb_mcp_rpc_parse(const char *body, size_t n, lb_mcp_msg *m, int *code, cJSON **id_out, char *msg,
                                   size_t msgsz);
void lb_mcp_msg_free(lb_mcp_msg *m);

/* {"jsonrpc":"2.0","id":id,"result":result}; takes result. id NULL: null.
 * NULL on OOM. */
cJSON *lb_mcp_rpc_result(const cJSON *id, cJSON *result);
/* {"jsonrpc":"2.0","id":id,"error":{"code","message"}}; id NULL: null. */
cJSON *lb_mcp_rpc_error(const cJSON *id, int code, const char *message);

#endif
