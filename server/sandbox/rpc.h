/*
 * Sandbox RPC plumbing shared by the client library (client.c) and the
 * daemon (sandboxd.c): frame I/O, request validation, error codes.
 * The wire protocol itself is documented in include/llmbox/sandbox.h.
 */
#ifndef LBSD_RPC_H
#define LBSD_RPC_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "llmbox/sandbox.h"
#include "common/status.h"

/* ---- frames -------------------------------------------------------------- */

#define LBSD_FRAME_HDR 4

/* Blocking frame I/O for clients. Waits in poll() ticks so that a set
 * *cancel (may be NULL) is noticed within a fraction of a second even if the
 * signal handler was installed with SA_RESTART. Returns LB_OK, LB_E_CANCELLED,
 * LB_E_UNAVAILABLE (peer closed / I/O error), LB_E_PROTO (frame over max). */
LB_MUST_CHECK int lbsd_frame_send(int fd, const void *a, size_t alen, volatile int *cancel);
/* Waits until a frame starts to arrive (or the peer closes). */
LB_MUST_CHECK int lbsd_frame_wait(int fd, volatile int *cancel);
/* Reads one frame of at most max bytes; *data (NUL-terminated, caller frees). */
LB_MUST_CHECK int lbsd_frame_recv(int fd, size_t max, char **data, size_t *len, volatile int *cancel);

/* Incremental, non-blocking frame decoder for the daemon. */
typedef struct lbsd_decoder {
    unsigned char hdr[LBSD_FRAME_HDR];
    size_t hdr_got;
    char *payload;    /* owned while being filled */
    size_t want;      /* payload length from the header */
    size_t got;
    size_t max;       /* frames over max are a protocol error */
} lbsd_decoder;

void lbsd_decoder_init(lbsd_decoder *d, size_t max);
void lbsd_decoder_free(lbsd_decoder *d);
/* Feeds bytes; consumes what it can and returns how many bytes were used in
 * *used. When a full frame is ready, returns 1 and hands it out in
 * *frame / *flen (caller frees; NUL-terminated). Returns 0 when more bytes
 * are needed, or a negative value (-LB_E_PROTO / -LB_E_NOMEM) on error. */
LB_MUST_CHECK int lbsd_decoder_feed(lbsd_decoder *d, const char *p, size_t n, size_t *used,
                      char **frame, size_t *flen);
/* Writes the 4-byte big-endian header for a payload of n bytes. */
void lbsd_frame_header(unsigned char hdr[LBSD_FRAME_HDR], uint32_t n);

/* ---- requests ------------------------------------------------------------ */

typedef enum lbsd_op {
    LBSD_OP_NONE = 0,
    LBSD_OP_CREATE,
    LBSD_OP_EXEC,
    LBSD_OP_WRITE,
    LBSD_OP_READ,
    LBSD_OP_LIST,
    LBSD_OP_STAT,
    LBSD_OP_DESTROY,
    LBSD_OP_PING,
    /* Extension to include/llmbox/sandbox.h: {id} -> {}. Sent while an exec
     * of the same connection runs, it kills the command (state
     * "interrupted"); the exec's response comes first, then this one's.
     * With nothing running it is a no-op. The client sends it when a call
     * is cancelled, so the connection stays usable (e.g. to collect
     * outputs after Stop). */
    LBSD_OP_INTERRUPT,
    /* Leases (include/llmbox/sandbox.h): renew {id, lease_s?} -> {lease_s};
     * adopt {id, key, lease_s?} -> {id, lease_s, ttl_s?}. */
    LBSD_OP_RENEW,
    LBSD_OP_ADOPT,
    /* A sandbox's state (follow-ups; include/llmbox/sandbox.h): freeze {id},
     * thaw {id}, save {id, state, max_mib?}, state_delete {state},
     * state_list {}; and create's "restore". */
    LBSD_OP_FREEZE,
    LBSD_OP_THAW,
    LBSD_OP_SAVE,
    LBSD_OP_STATE_DELETE,
    LBSD_OP_STATE_LIST,
    /* Processes of sandboxd's own (E2B's protocol; include/llmbox/sandbox.h,
     * sandboxd/sandbox_proc.h): proc_start, proc_attach, proc_input (may
     * carry a data frame), proc_signal, proc_list. */
    LBSD_OP_PROC_START,
    LBSD_OP_PROC_ATTACH,
    LBSD_OP_PROC_INPUT,
    LBSD_OP_PROC_SIGNAL,
    LBSD_OP_PROC_LIST,
    /* E2B's protocol: port_connect {id, port} -> {port} with a connected socket
     * (SCM_RIGHTS) to 127.0.0.1:port in the sandbox (sandboxd/sandbox_port.c) */
    LBSD_OP_PORT_CONNECT,
    /* metrics {id} -> one sample of its CPU time, memory and disk
     * (sandboxd/sandbox_metrics.h) */
    LBSD_OP_METRICS,
    /* image work for an unprivileged client (sandboxd/image_jobs.h):
     * image_job_start {kind, ref, context?, dockerfile?, build_args?} ->
     * {job}; image_job_poll {job, offset?, max?} -> {state, ...} + data.
     * Their fields are checked where they are served. */
    LBSD_OP_IMAGE_JOB_START,
    LBSD_OP_IMAGE_JOB_POLL,
    /* E2B's volumes (volumes/volume_store.h, sandboxd/sandbox_volume.h):
     * volume {action, ...} (a write carries a data frame) and
     * volume_mount {id, volume, path}. Their fields are checked where they
     * are served. */
    LBSD_OP_VOLUME,
    LBSD_OP_VOLUME_MOUNT,
    /* E2B's makeDir, rename and remove (sandboxd/sandbox_fs.c): fs_change
     * {id, action:"mkdir"|"rename"|"remove", path, dest (rename's), user?}
     * -> {}. action and dest are checked where it is served. */
    LBSD_OP_FS_CHANGE,
} lbsd_op;

/* network modes of a sandbox */
typedef enum lbsd_network {
    LBSD_NET_DEFAULT = 0,            /* whatever the daemon is configured with ("none") */
    LBSD_NET_NONE = 1,               /* loopback only */
    LBSD_NET_NAT = 2,                /* outbound through slirp4netns, no host loopback */
    LBSD_NET_EGRESS = 3,             /* only through the network gateway, by rules (docs/NETWORK.md) */
} lbsd_network;
const char *lbsd_network_name(int net);
int lbsd_network_parse(const char *s); /* -1 if unknown */

#define LBSD_TTL_MAX_S (7 * 24 * 3600)
#define LBSD_LEASE_MAX_S 86400       /* a lease longer than a day is a TTL: use ttl_s */
#define LBSD_IMAGE_MAX 32            /* image names: [a-z0-9_-]{1,32} */
#define LBSD_IMAGE_REF_MAX 255       /* a layered image's reference (common/image_ref.h) */
#define LBSD_INPUT_DIR_MAX 4096
#define LBSD_CMD_MAX (1u << 20)      /* one command, bytes */
#define LBSD_TIMEOUT_MAX_MS (24 * 3600 * 1000)
#define LBSD_READ_MAX (LLMBOX_RPC_MAX_FRAME - 1024)
#define LBSD_LIST_MAX_DEPTH 32
#define LBSD_LIST_MAX_ENTRIES 100000
#define LBSD_STATE_NAME_MAX 64       /* saved state names: [a-z0-9_-]{1,64} (follow-ups) */
#define LBSD_STATE_MAX_MIB (1 << 20) /* a save's max_mib: the configuration caps it lower */

/* A validated request. String fields point into `json`, which it owns. */
typedef struct lbsd_req {
    cJSON *json;
    lbsd_op op;
    const char *id;                  /* 32 lowercase hex chars */
    char image[LBSD_IMAGE_REF_MAX + 1]; /* a debootstrap name or a layered image's reference */
    int memory_mib;                  /* 0: default */
    int pids;                        /* 0: default */
    const char *input_dir;           /* NULL: none; absolute */
    int cpu_milli;                   /* CPU quota in thousandths of a core; 0: default */
    int disk_mib;                    /* writable layer + /tmp quota; 0: default */
    int network;                     /* lbsd_network; LBSD_NET_DEFAULT: daemon default */
    const char *net_policy;          /* LBSD_NET_EGRESS: the rules as text (common/netpolicy.h), which
                                        sandboxd hands the gateway unread */
    const char *net_values;          /* LBSD_NET_EGRESS, optional: the values of the policy's transform
                                        secrets (e2b.*) as JSON text [{name, hosts, header, value}], for
                                        the gateway's pipe only: never logged, written or answered */
    int ttl_s;                       /* destroyed this long after create; 0: no TTL */
    const char *key;                 /* adopt: the lease_key its create answered (32 hex) */
    int lease_s;                     /* create, renew, adopt: the sandbox outlives its connection
                                        and dies lease_s after the last renewal; 0: none
                                        (create) or the sandbox's own (renew, adopt) */
    const char *command;
    size_t command_len;
    int timeout_ms;                  /* exec: hard limit from the command's start; 0: default */
    int soft_timeout_ms;             /* exec: answer "running" after this long; 0: never */
    char path[1100];                 /* cleaned, relative to the sandbox root; "" = "/" */
    int excl;
    int reboot;                      /* freeze: a new boot id first (every process but init ended) */
    int mode;                        /* file mode for write, 0644 default */
    size_t max;                      /* read cap */
    int64_t offset;                  /* read: -1 = the whole file (over max: LB_E_TOOBIG);
                                        >= 0 = up to max bytes from there (a range) */
    int max_depth;
    size_t max_entries;
    int has_data;                    /* a binary frame follows */
    /* saved states (follow-ups) */
    const char *state;               /* save, state_delete: its name; create: "restore", the state
                                        the new sandbox starts from (NULL: none) */
    int max_mib;                     /* save: cap of the compressed state; 0: the daemon's */
} lbsd_req;

/* Parses and validates one request frame. On failure returns LB_E_INVAL (or
 * LB_E_NOMEM) and writes a sentence to msg. Always call lbsd_req_free. */
LB_MUST_CHECK int lbsd_req_parse(const char *frame, size_t len, lbsd_req *req, char *msg, size_t msgsz);
void lbsd_req_free(lbsd_req *req);
const char *lbsd_op_name(lbsd_op op);

/* True for [a-z0-9_-]{1,32}. */
int lbsd_image_name_valid(const char *s);
/* True when s is a debootstrap image name or an image reference
 * (common/image_ref.h, local names allowed): what create takes. */
int lbsd_image_spec_valid(const char *s);
/* True for [a-z0-9_-]{1,64}: a saved state's name (follow-ups). */
int lbsd_state_name_valid(const char *s);
/* Turns an absolute sandbox path into a cleaned relative one ("" for "/"). */
LB_MUST_CHECK int lbsd_sandbox_path(const char *abs, char *out, size_t outsz);

/* ---- error codes ---------------------------------------------------------- */

/* Wire error code of an lb_status ("invalid", "notfound", ...). */
const char *lbsd_status_code(int status);
/* lb_status of a wire error code; unknown codes are LB_E_PROTO. "busy" is
 * LB_E_BUSY (LB_E_UNAVAILABLE is sent as "busy" too, for "too many
 * sandboxes", and comes back as LB_E_BUSY). */
int lbsd_code_status(const char *code);

/* exec states on the wire: exited, timeout, oom, interrupted, error, running */
const char *lbsd_state_name(int state);
int lbsd_state_parse(const char *s); /* -1 if unknown */

#endif
