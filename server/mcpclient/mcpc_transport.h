/* How the client reaches one MCP server: the two transports of the
 * protocol behind one table of functions. mcpc_stdio.c runs the server
 * inside the task's sandbox (newline-delimited JSON over its stdin and
 * stdout, through sandboxd's process API); mcpc_http.c speaks Streamable
 * HTTP to a server outside (libcurl). The session (mcpc_session.c) only
 * sends texts and reads texts; it never knows which. */
#ifndef LB_MCPC_TRANSPORT_H
#define LB_MCPC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

typedef struct lb_mcpc_transport lb_mcpc_transport;

struct lb_mcpc_transport {
    /* Sends one message (JSON text, no newline), by deadline_ms
     * (lb_mono_ms). HTTP: the POST, whose answer's messages are queued for
     * recv. LB_OK, or a status with a sentence in err. */
    int (*send)(lb_mcpc_transport *t, const char *msg, size_t len, int64_t deadline_ms, char *err, size_t errsz);
    /* The next message from the server, waiting at most until
     * deadline_ms: LB_OK with *msg (NUL-terminated, valid until the next
     * call) and *len; LB_E_TIMEOUT when none came in time (HTTP: none is
     * queued: the answer to the last send held no more); another status
     * with a sentence in err when the server is gone. */
    int (*recv)(lb_mcpc_transport *t, int64_t deadline_ms, const char **msg, size_t *len, char *err, size_t errsz);
    /* Stops the server (stdio) or ends the session (HTTP) and frees t. */
    void (*close)(lb_mcpc_transport *t);
    /* HTTP: forgets the session id and the protocol version, so that the
     * next send is a new session's initialize (the server answered 404:
     * it no longer knows the session). NULL for stdio. */
    void (*forget)(lb_mcpc_transport *t);
    /* HTTP: the protocol version the session agreed, sent as
     * MCP-Protocol-Version on every later request ("" before). */
    char proto[32];
    /* lines or events dropped for their size (the session reports them) */
    size_t dropped;
};

#endif
