/* The sandboxes of the HTTP sandbox API (/api/sandboxes), held by the web
 * process.
 *
 * sandboxd gives a sandbox to the connection that created it and destroys
 * it when that connection closes; the client library allows one call at a
 * time per connection. So each API sandbox has its own sandboxd connection,
 * guarded by its own mutex: calls on one sandbox run one after another,
 * calls on different sandboxes run in parallel on different worker threads.
 * If the web process dies, every connection closes and sandboxd cleans up.
 *
 * Entries are reference counted. The table (and every field marked
 * "registry lock") is guarded by one registry mutex that is never held
 * across a sandboxd call. A removed entry (deleted, expired, failed create)
 * leaves the table at once, so no new request finds it, and is torn down
 * by the thread that removed it: a running call on it is interrupted
 * through the client's cancel flag, then the sandbox is destroyed and the
 * connection closed.
 *
 * A reaper thread removes sandboxes whose ttl_s has passed, whether or not
 * sandboxd enforces the TTL it was also given.
 */
#ifndef LB_SANDBOX_REGISTRY_H
#define LB_SANDBOX_REGISTRY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/node_id.h"
#include "common/path.h"
#include "common/status.h"
#include "llmbox/sandbox.h"

typedef enum lb_sbx_state {
    LB_SBX_STARTING = 0,    /* being created: not usable yet */
    LB_SBX_RUNNING = 1,
    LB_SBX_STOPPED = 2,     /* removed, being torn down */
    LB_SBX_ERROR = 3,       /* the sandbox or its sandboxd connection failed */
} lb_sbx_state;

/* Why a sandbox left the table (kept for a while to explain a 404). */
typedef enum lb_sbx_gone {
    LB_SBX_GONE_DELETED = 1,
    LB_SBX_GONE_EXPIRED = 2,
    LB_SBX_GONE_FAILED = 3, /* its creation failed */
} lb_sbx_gone;

#define LB_SBX_MASK_HOST_MAX 256 /* E2B's maskRequestHost, with its NUL */

typedef struct lb_sbx {
    char id[LB_NODE_ID_MAX + 1]; /* the API id ([<node_name>.]<32 random hex>: several nodes), immutable */
    /* guarded by op_mu */
    pthread_mutex_t op_mu;      /* one sandboxd call at a time on conn */
    lbsb_conn *conn;            /* NULL before connect and after teardown */
    char sbx_id[33];            /* sandboxd's id, "" before create */
    char lease_key[33];         /* what adopting it after a restart takes (sandbox_leases.h) */
    volatile int cancel;        /* conn's cancel flag: set by teardown */
    struct lb_tool_host *tool_host; /* the tool calls' process (tool_hosts.h), NULL before the first */
    int tool_host_lost;         /* the last host died in a call: the next answer says it is new */
    volatile int e2b_home;      /* E2B's /home/user: 0 not looked at yet, 1 a directory, -1 not (e2b_fs.c) */
    /* guarded by the registry lock */
    int refs;
    int removed;
    int tool_busy;              /* a tool call runs (lb_sbx_tool_claim) */
    lb_sbx_state state;
    char error[300];            /* why state is ERROR */
    int paused;                 /* follow-ups: frozen by POST .../pause until .../resume */
    int64_t created_ms, expires_ms;  /* wall clock */
    int64_t deadline_mono;      /* expiry on the monotonic clock */
    int ttl_s;
    int auto_pause;             /* E2B's autoPause: paused, not destroyed, at its timeout until hard_end_ms */
    int64_t hard_end_ms;        /* wall clock: sandboxd's own end, past which nothing keeps it */
    int auto_paused;            /* paused by autoPause at its timeout (a resume clears paused) */
    int auto_pausing;           /* the reaper's autoPause of it runs */
    int auto_pause_drop;        /* autoPause without memory: its processes end first (lb_sbx_pause_drop) */
    int auto_resume;            /* E2B's autoResume: an envd call or port traffic resumes it when paused */
    int public_ports;           /* E2B's network.allowPublicTraffic true: its ports need no token */
    char mask_host[LB_SBX_MASK_HOST_MAX]; /* E2B's network.maskRequestHost ("" none): its ports' Host */
    /* set by lb_sbx_reserve, then immutable */
    cJSON *spec;                /* the spec as echoed (no file contents, no metadata) */
    cJSON *metadata;            /* the client's object, or NULL */
    cJSON *env;                 /* object of strings: every exec's base env */
    char workdir[LB_PATH_MAX + 2];   /* absolute, cleaned */
    char owner[64];             /* the user whose API token made it; "" for the shared sandbox token */
    int exec_helper;            /* the shell has __llmbox_exec (sandbox_spec.h); set under the lock */
} lb_sbx;

/* Allocates the table of max entries (sandbox_api_max) and starts the
 * reaper thread. Call once, with the stop signals already blocked. */
LB_MUST_CHECK int lb_sbx_registry_init(int max);

/* Makes a STARTING entry with a fresh id (prefixed with node and a dot
 * unless node is "": several nodes), ttl_s counted from now, and one
 * reference for the caller. Takes ownership of spec, metadata and env
 * (each may be NULL) on success only. LB_E_TOOBIG when the table is full. */
LB_MUST_CHECK int lb_sbx_reserve(const char *node, int ttl_s, cJSON *spec, cJSON *metadata, cJSON *env, const char *workdir,
                                 lb_sbx **out);

/* lb_sbx_reserve for a user (owner, "" for the shared token) who may hold
 * at most owner_max sandboxes at once (0: no own limit): LB_E_BUSY when
 * they hold that many already, counted under the same lock that adds it,
 * so two creates at once cannot both take the last place. */
LB_MUST_CHECK int lb_sbx_reserve_owned(const char *node, const char *owner, int owner_max, int ttl_s, cJSON *spec,
                                       cJSON *metadata, cJSON *env, const char *workdir, lb_sbx **out);
/* Sets the owner of an entry reserve_as made (leases: before it runs). */
void lb_sbx_set_owner(lb_sbx *s, const char *owner);
/* Whether id names a sandbox in the table that owner may see: a user sees
 * their own, the shared token ("" or NULL) every one. 1 also when there is
 * no such sandbox (the handler answers that 404 with its reason). */
int lb_sbx_visible(const char *id, const char *owner);

/* lb_sbx_reserve for a sandbox of an earlier web (sandbox_leases.c): its
 * API id and times as recorded. LB_E_EXISTS if the id is in the table. */
LB_MUST_CHECK int lb_sbx_reserve_as(const char *id, int64_t created_ms, int64_t expires_ms, int ttl_s, cJSON *spec,
                                    cJSON *metadata, cJSON *env, const char *workdir, lb_sbx **out);
/* The sandboxd ids of the running sandboxes, at most max, into ids; the
 * count. */
int lb_sbx_running_ids(char (*ids)[33], int max);

/* several nodes: the API ids of the running sandboxes, at most max, into ids;
 * the count (sandbox_rows.c mends the store's rows with them). */
int lb_sbx_running_api_ids(char (*ids)[LB_NODE_ID_MAX + 1], int max);
/* several nodes: s's created_ms and expires_ms (wall clock), read together. */
void lb_sbx_times(lb_sbx *s, int64_t *created_ms, int64_t *expires_ms);

/* Finds a sandbox in the table and takes a reference. NULL when there is
 * none; then msg gets a sentence for the 404 (deleted, expired, unknown). */
lb_sbx *lb_sbx_get(const char *id, char *msg, size_t msgsz);
void lb_sbx_put(lb_sbx *s);

/* Locks op_mu for a sandboxd call: LB_OK. LB_E_NOTFOUND (and it is left
 * unlocked) if the sandbox was removed meanwhile; msg then gets the 404
 * sentence. */
LB_MUST_CHECK int lb_sbx_lock(lb_sbx *s, char *msg, size_t msgsz);
void lb_sbx_unlock(lb_sbx *s);

/* Claims the sandbox for one tool call: 0 when another runs (the caller
 * answers 409), 1 when claimed; lb_sbx_tool_release after. A second call
 * is refused rather than queued: it would wait behind a command of up to
 * cmd_timeout_s, and a trainer's loop wants to know it sent two. */
int lb_sbx_tool_claim(lb_sbx *s);
void lb_sbx_tool_release(lb_sbx *s);

/* State changes (registry lock taken inside). */
void lb_sbx_set_running(lb_sbx *s);
void lb_sbx_set_error(lb_sbx *s, const char *why);
/* follow-ups: whether the sandbox is paused, for its status object */
void lb_sbx_set_paused(lb_sbx *s, int paused);
/* E2B's autoPause: at its timeout s is paused instead of destroyed (its
 * end moves to hard_end_ms, sandboxd's own, past which it is destroyed
 * paused or not). Kept in its record (lb_sbx_e2b_flags). */
void lb_sbx_set_auto_pause(lb_sbx *s, int64_t hard_end_ms);
/* The same without memory (E2B's keepMemory: false): at its timeout its
 * processes end (lb_sbx_pause_drop) before the pause. */
void lb_sbx_set_auto_pause_drop(lb_sbx *s, int64_t hard_end_ms);
/* Whether s was paused at its timeout by autoPause and is still paused
 * (then forgotten: the caller resumes it and gives it a timeout again). */
int lb_sbx_take_auto_paused(lb_sbx *s);
/* E2B's autoResume: traffic to s while paused resumes it first
 * (lb_e2b_auto_resume). Kept in its record. */
void lb_sbx_set_auto_resume(lb_sbx *s);
/* Whether s was made with autoResume. */
int lb_sbx_auto_resume_of(lb_sbx *s);
/* E2B's network.allowPublicTraffic true: s's ports (not envd) are served
 * without its traffic token (e2b_envd.c). Kept in its record. */
void lb_sbx_set_public_ports(lb_sbx *s);
/* Whether s's ports were made public so. */
int lb_sbx_public_ports_of(lb_sbx *s);
/* E2B's network.maskRequestHost: requests relayed to s's ports carry
 * Host mask, "${PORT}" in it replaced by the port (e2b_port.c; the caller
 * checked it, shorter than LB_SBX_MASK_HOST_MAX). Kept in its record. */
void lb_sbx_set_mask_host(lb_sbx *s, const char *mask);
/* s's mask into out ("" none). */
void lb_sbx_mask_host_of(lb_sbx *s, char *out, size_t outsz);
/* E2B's lifecycle and port flags of s (autoPause and its end, autoResume,
 * allowPublicTraffic, maskRequestHost) as an object for its record
 * (sandbox_leases.c), so that a restart of the web keeps them; NULL when
 * none is set (or out of memory: the record then goes without them). */
cJSON *lb_sbx_e2b_flags(lb_sbx *s);
/* Sets them back from a record's object; what is not of the right type
 * or size is left unset. */
void lb_sbx_e2b_flags_restore(lb_sbx *s, const cJSON *o);
/* Whether it is paused now (E2B's envd health answers a paused one as gone). */
int lb_sbx_is_paused(lb_sbx *s);
/* E2B's setTimeout and connect (e2b_api.c): s now expires ttl_s seconds
 * from now, earlier or later than before; ttl_s and expires_at follow. */
void lb_sbx_set_expiry(lb_sbx *s, int ttl_s);
/* Copies the state and error under the lock. */
lb_sbx_state lb_sbx_state_of(lb_sbx *s, char *why, size_t whysz);

/* Takes the sandbox out of the table, remembers why, interrupts whatever
 * runs on it, destroys it in sandboxd and closes its connection. Blocks
 * until that is done (about the length of one sandboxd destroy, plus up to
 * a second to stop a running command). LB_E_NOTFOUND if it was not in the
 * table (already removed: still gone, which is what callers want). */
LB_MUST_CHECK int lb_sbx_remove(const char *id, lb_sbx_gone why);

/* The status object of one sandbox: {id, status, created_at, expires_at,
 * ttl_s, error?, spec...}. NULL on OOM. */
cJSON *lb_sbx_json(lb_sbx *s);
/* {"sandboxes":[...], "count", "max"} */
cJSON *lb_sbx_list_json(void);
/* The same, of owner's sandboxes only (NULL: every one). */
cJSON *lb_sbx_list_json_of(const char *owner);
/* Sandboxes in the table (any state). */
int lb_sbx_count(void);

#endif
