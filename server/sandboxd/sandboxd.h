/*
 * sandboxd internals: the objects the event loop juggles.
 *
 *   lbsd_conn      one client connection; owns the sandboxes it created
 *   lbsd_sandbox   one sandbox: its init (pid 1 of a new pid namespace),
 *                  the control socket to init, the current shell's pipes,
 *                  its cgroups and its scratch dir var/sandboxes/<id>
 *   lbsd_exec      the command running in a sandbox's shell right now
 *
 * Everything here runs on the event loop's thread, except what a worker
 * thread does to one sandbox it holds alone (workers.h): the make, the
 * input copy and the teardown, the blocking parts. The loop itself never
 * waits for a sandbox.
 */
#ifndef LBSD_SANDBOXD_H
#define LBSD_SANDBOXD_H

#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/util.h"
#include "sandboxd/cgroup.h"
#include "sandbox/rpc.h"
#include "common/status.h"

/* sandboxes at once and per connection: the configuration's sandbox_max and
 * sandbox_max_per_conn (LLMBOX_SANDBOX_MAX, LLMBOX_SANDBOX_MAX_PER_CONN) */
#define LBSD_FDS_PER_SANDBOX 6          /* ctl, root, the shell's 3 pipes, its uid slot's
                                         * idmap namespace (cached for the first slots only,
                                         * uidslot.h); 1 (ctl) while parked (fdpark.h) */
#define LBSD_DEFERRED_MAX (64u << 10)   /* replies queued behind a running exec */
#define LBSD_OUT_HEAD (512u << 10)      /* kept from the start of each stream */
#define LBSD_OUT_TAIL (512u << 10)      /* kept from the end of each stream */
#define LBSD_IDLE_MAX (64u << 10)       /* background output between commands */
#define LBSD_SENTINEL_HEX 32            /* 128 random bits */
#define LBSD_INT_GRACE_MS 500           /* after SIGINT to the foreground group, before SIGKILL */
#define LBSD_KILL_GRACE_MS 1000         /* after a timeout kill, wait this long for the shell */
#define LBSD_STOP_REPEAT_MS 100         /* meanwhile, SIGINT it again this often */
#define LBSD_STDERR_GRACE_MS 300        /* stdout done, stderr sentinel missing (fd 2 closed?) */
#define LBSD_DEFAULT_TIMEOUT_MS 120000

/* A captured stream: the first LBSD_OUT_HEAD bytes, the last LBSD_OUT_TAIL
 * bytes, and a count of what fell in between. */
typedef struct lbsd_capture {
    lb_buf head;
    char *tail;              /* ring of LBSD_OUT_TAIL bytes, allocated lazily */
    size_t tail_len, tail_pos;
    uint64_t total;
} lbsd_capture;

/* Looks for "\n<sentinel>" in a stream while holding back just enough bytes
 * that a sentinel split over two reads is still found. */
typedef struct lbsd_scan {
    char pend[128];
    size_t pend_len;
    size_t pend_shown;       /* leading pend bytes already in the capture (lbsd_scan_show) */
    int found;
    int code;                /* stdout: the exit status after the sentinel */
} lbsd_scan;

/* How far stopping a command has gone: SIGINT to the shell's foreground
 * process group first (programs may clean up), then SIGKILL to everything
 * but the shell, then a fresh shell. */
typedef enum { LBSD_EX_RUNNING = 0, LBSD_EX_INT = 1, LBSD_EX_KILLED = 2 } lbsd_exec_phase;

/* A command of the persistent shell. It lives from its exec request until
 * its end has been sent to the client: after a soft timeout the client is
 * answered "running" and the command goes on (`waiting` 0); an exec with
 * command "" waits again, "C-c" interrupts it. When it ends with nobody
 * waiting, `done` is set and the end is kept until an exec collects it. */
typedef struct lbsd_exec {
    char sentinel[LBSD_SENTINEL_HEX + 16];
    size_t sentinel_len;
    char *wbuf;              /* the wrapper line still to be written to the shell */
    size_t wlen, woff;
    lbsd_capture out, err;   /* output since the last reply */
    lbsd_scan sout, serr;
    int64_t start_ms, deadline_ms, kill_ms, out_done_ms, next_stop_ms;
    int64_t int_ms;          /* when SIGINT went to the foreground group */
    int64_t soft_ms;         /* answer "running" at this time; 0: never */
    int64_t end_ms;          /* when the command ended */
    int timeout_ms;          /* the hard limit, for replies */
    lbsd_exec_phase phase;
    uint64_t oom_before;
    int shell_exited;        /* the shell died while running the command */
    int shell_status;        /* its wait status */
    int shell_restarted;     /* we had to kill it */
    int interrupted;         /* an interrupt request or "C-c" stopped it */
    int waiting;             /* the owner connection waits for a reply (it is busy) */
    int done;                /* over; end_state / end_code wait to be collected */
    int end_state, end_code;
    int64_t flood_ms[2];     /* sandbox_exec.c: when stdout [0] / stderr [1] went past
                              * what an answer keeps; 0: not yet */
} lbsd_exec;

struct lbsd_conn;

/* A sandbox's network beyond loopback (sandbox_net.c). All zero: none. */
typedef struct lbsd_net {
    int mode;                      /* LBSD_NET_NONE or LBSD_NET_NAT (0 until set) */
    pid_t slirp_pid;               /* slirp4netns serving the sandbox's netns, 0 if none */
    int slirp_reaped;              /* it exited and was waited for */
    int exit_fd;                   /* our end of its --exit-fd (valid while slirp_pid > 0) */
} lbsd_net;

typedef struct lbsd_sandbox {
    char id[LB_ID_HEX_LEN + 1];
    char image[LBSD_IMAGE_REF_MAX + 1];
    struct lbsd_image *img;        /* what the image gives it: root, Env, WorkingDir, User
                                    * (image_layers.h); owned, freed with the sandbox */
    const lb_config *cfg;          /* the daemon's configuration (read only): its defaults
                                    * and paths, for exec, the scratch dir and init */
    struct lbsd_conn *owner;
    struct lbsd_sandbox *next;     /* in the global list */
    char dir[LB_CFG_PATH + 64];    /* var/sandboxes/<id>: an empty dir on the host, the
                                    * mount point of the sandbox's tmpfs in its own mount
                                    * namespace (reach its files through root_fd only) */
    int memory_mib, pids, cpu_milli, disk_mib;
    lbsd_cgroup cg;
    int uid_slot;                  /* its host uid range (uidslot.h); 0: the shared one */
    int slot_held;                 /* uid_slot is taken and must be given back */
    uint32_t uid_root;             /* host uid and gid of its root: lbsd_slot_root(uid_slot) */

    pid_t init_pid;                /* host pid of the sandbox's pid 1 */
    int init_reaped;
    int ctl_fd;                    /* SOCK_SEQPACKET to init */
    int root_fd;                   /* the sandbox's / (via /proc/<init>/root) */
    uint64_t pidns_dev, pidns_ino; /* identifies the sandbox's pid namespace */
    int broken;                    /* init died: every op fails */

    int sh_in, sh_out, sh_err;     /* our ends of the shell's pipes, -1 if none */
    int sh_nspid;                  /* the shell's pid inside the sandbox, 0 if none */
    pid_t sh_hostpid;              /* the same process seen from the host, 0 if unknown */
    lb_buf idle_out, idle_err;     /* output that arrived while no command ran */
    int idle_dropped;
    int64_t out_rest_ms[2];        /* sandbox_exec.c: a flooding stdout [0] / stderr [1]
                                    * is not read again before this lb_mono_ms() */

    lbsd_exec *exec;               /* the running command, or NULL */
    int64_t created_ms;

    /* life cycle: pool.c, sandbox_net.c, the reaper in sandboxd.c */
    lbsd_net net;
    int ttl_s;                     /* 0: no TTL */
    int64_t expires_ms;            /* lb_mono_ms() when the reaper destroys it; 0: never */
    int pooled;                    /* came ready-made from the warm pool */
    int lease_s;                   /* 0: dies with its connection; else it outlives it and dies
                                    * lease_s after the last renewal (create, renew, adopt) */
    int64_t lease_expires_ms;      /* lb_mono_ms() of that death; 0 without a lease */
    uid_t creator_uid;             /* who may adopt it: the uid of the connection that made it */
    char lease_key[LB_ID_HEX_LEN + 1]; /* and with what: 128 random bits its create answered */

    /* host pools (hostlimits.h, filewatch.h) */
    uint64_t files_budget;         /* files it may hold in all */
    uint64_t files_held;           /* at the file watch's last count */
    char gone_why[256];            /* why it broke, for the owner ("" : init died) */

    /* fdpark.c: the shell's pipes parked with init while idle (fdpark.h) */
    int parked;                    /* 0: ours; 1: sent to init, ours still open until it
                                    * answers; 2: init has them, ours closed */
    unsigned park_seq;             /* which park init's "PARKED" answers */
    int park_fd[3];                /* their numbers in init's table (parked == 2) */
    uint64_t park_dev[3], park_ino[3]; /* what they were, checked when they come back */
    int64_t used_ms;               /* lb_mono_ms() of the last request that named it */
    /* its state (issue 14: sandbox_freeze.c, sandbox_save.c) */
    int frozen;                    /* LBSD_FROZEN_* of sandbox_freeze.h; 0: running */
    int saving;                    /* a save of it is with a worker */
} lbsd_sandbox;

#define LBSD_EXPIRED_KEEP 16          /* per connection: ids the reaper took, for clear notfounds */

typedef struct lbsd_conn {
    int fd;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    struct lbsd_conn *next;
    lbsd_decoder dec;
    lbsd_req pending;              /* a write request waiting for its data frame */
    int have_pending;
    int skip_data;                 /* swallow the next frame (data of a refused request) */
    lb_buf out;                    /* response bytes not yet sent */
    size_t out_off;
    int busy;                      /* an exec is running for this connection */
    uint64_t serial;               /* unique for the daemon's life: a worker's job names its
                                    * connection by it (the struct may be freed meanwhile) */
    int creating;                  /* a create is with a worker: not read until it is answered */
    lb_buf deferred;               /* replies to requests that came in while busy:
                                    * they follow the exec's reply (answers stay in order) */
    int dead;                      /* to be closed by the loop */
    /* the connection's sandboxes that the TTL reaper destroyed, newest last,
     * so a later request for one says so instead of a bare notfound */
    struct {
        char id[LB_ID_HEX_LEN + 1];
        int ttl_s;
    } expired[LBSD_EXPIRED_KEEP];
    unsigned expired_n;
} lbsd_conn;

/* --- sandboxd.c: responses --------------------------------------------- */
/* Queues a JSON response (r is consumed) and optionally a data frame. */
void lbsd_reply(lbsd_conn *c, cJSON *r, const void *data, size_t dlen, int with_data);
void lbsd_reply_error(lbsd_conn *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Clears busy and moves the replies deferred behind an exec to the output.
 * Call right after queuing the exec's own reply. */
void lbsd_conn_unbusy(lbsd_conn *c);

/* The live sandbox of that id, whichever connection holds it, or NULL
 * (issue 14: a save's end finds the sandbox it froze). */
lbsd_sandbox *lbsd_sandbox_by_id(const char *id);

/* Tears sb down off the loop (a worker's destroy job; at once when there
 * are no workers). The caller has unlinked it from every list and from its
 * connection; its running command, if any, is abandoned here. */
void lbsd_sandbox_retire(lbsd_sandbox *sb);

/* Fills sb->gone_why, if still empty, with why the sandbox broke: its
 * init was OOM-killed (the memory cgroup counted a kill), or it died. */
void lbsd_note_gone(lbsd_sandbox *sb);

/* Runs the event loop on the listening socket until SIGTERM/SIGINT; then
 * destroys every sandbox. cfg (read only, kept for the loop's life) gives
 * the limits, defaults and paths. Returns the exit status. */
LB_MUST_CHECK int lbsd_serve(const lb_config *cfg, int lfd);

/* --- sandbox_create.c ---------------------------------------------------- */
/* Creates a sandbox (synchronous): lbsd_sandbox_make, then the input copy.
 * On failure writes a sentence to msg. */
LB_MUST_CHECK int lbsd_sandbox_create(const lb_config *cfg, const lbsd_req *req, lbsd_conn *owner,
                                     lbsd_sandbox **out, char *msg, size_t msgsz);
/* A blank sandbox with no owner and an empty /testbed/input: namespaces
 * made, filesystem mounted, shell started. What the warm pool holds. Uses
 * req's image and limits, cfg's where req has none (the sandbox keeps cfg,
 * which must outlive it); ignores input_dir. */
LB_MUST_CHECK int lbsd_sandbox_make(const lb_config *cfg, const lbsd_req *req, lbsd_sandbox **out,
                                   char *msg, size_t msgsz);
/* Copies input_dir (a host path, read with uid/gid's rights) into the
 * sandbox's /testbed/input through its root fd. NULL input_dir: no-op. */
LB_MUST_CHECK int lbsd_sandbox_load_input(lbsd_sandbox *sb, const char *input_dir, uid_t uid, gid_t gid,
                            char *msg, size_t msgsz);
/* Kills everything, reaps init, removes cgroups and the scratch dir. */
void lbsd_sandbox_destroy(lbsd_sandbox *sb);
/* Starts a fresh shell through init (kills the old one if alive). */
LB_MUST_CHECK int lbsd_shell_spawn(lbsd_sandbox *sb, char *msg, size_t msgsz);
/* Handles one message from init (shell exit). Returns -1 when init is gone. */
int lbsd_ctl_handle(lbsd_sandbox *sb);
/* True when the host process pid lives in sb's pid namespace (the one test
 * every /proc walk over a sandbox's processes uses). */
int lbsd_pid_in_sandbox(const lbsd_sandbox *sb, pid_t pid);
/* SIGKILLs every process of the sandbox except init and (keep_shell) the
 * shell; returns how many it signalled (a count, not a status). */
int lbsd_kill_all(lbsd_sandbox *sb, int keep_shell);
/* Removes what a previous sandboxd run left behind under cfg's var dir. */
void lbsd_cleanup_stale(const lb_config *cfg);
/* False when cfg's var_dir or image_store hold characters overlayfs
 * options cannot carry (',', ':', '\\') or are not absolute. */
int lbsd_paths_ok(const lb_config *cfg);

/* --- pool.c: the warm pool ------------------------------------------------
 * Ready sandboxes (lbsd_sandbox_make with the daemon's defaults) of the
 * images in LLMBOX_POOL_IMAGES, LLMBOX_POOL_SIZE each, kept outside the
 * global list (no owner, never served). A create whose spec fits takes one;
 * a sandbox taken is its client's and is destroyed after, never returned. */
void lbsd_pool_init(const lb_config *cfg);
/* A ready sandbox for req, or NULL (counted as a miss, or as "other" when
 * the spec cannot come from the pool). The memory and pids limits of req
 * are applied on the way out. The caller sets owner and links it. */
lbsd_sandbox *lbsd_pool_take(const lbsd_req *req);
/* ms until the pool wants a refill (0: now), -1: nothing to do.
 * room: how many more sandboxes the daemon may hold at all. */
int lbsd_pool_refill_due(int64_t now, int room);
/* The next refill: fills req (image, defaults) and returns the index to
 * hand to lbsd_pool_refill_done, or -1 when no image is due. A worker
 * makes the sandbox (lbsd_sandbox_make), so the loop never waits for it. */
int lbsd_pool_refill_begin(lbsd_req *req);
/* A refill's outcome: sb (rc LB_OK) joins the pool, or the image backs off
 * and msg is logged. sb is retired instead when the image was rebuilt
 * meanwhile. */
void lbsd_pool_refill_done(int idx, lbsd_sandbox *sb, int rc, const char *msg);
/* SIGCHLD: 1 if pid was a pooled sandbox's init or helper (then handled). */
int lbsd_pool_child_exited(pid_t pid);
int lbsd_pool_ready(void);
/* {"size","ready","hits","misses","other","images":[{"image","size","ready"}]} */
cJSON *lbsd_pool_json(void);
/* Destroys every pooled sandbox. */
void lbsd_pool_shutdown(void);

/* --- sandbox_net.c: network modes --------------------------------------- */
/* Checks network_allow (the setting LLMBOX_NETWORK_ALLOW) at startup and
 * keeps the modes it allows; on failure a sentence in msg. */
LB_MUST_CHECK int lbsd_net_check_config(const char *network_allow, char *msg, size_t msgsz);
/* True when the operator allows mode (LBSD_NET_NONE / LBSD_NET_NAT). */
int lbsd_net_allowed(int mode);
/* The allowed modes as a JSON array of names. */
cJSON *lbsd_net_allowed_json(void);
/* Gives the sandbox its network: "none" keeps loopback only; "nat" starts
 * slirp4netns on its netns (waits until the tap is configured, ~10 ms)
 * and writes /etc/resolv.conf through its root fd. */
LB_MUST_CHECK int lbsd_net_attach(lbsd_sandbox *sb, int mode, char *msg, size_t msgsz);
/* Stops the sandbox's helper, if any (destroy calls this). */
void lbsd_net_detach(lbsd_sandbox *sb);
/* SIGCHLD: 1 if pid was sb's slirp4netns (then marked reaped). */
int lbsd_net_child_exited(lbsd_sandbox *sb, pid_t pid, int status);

/* --- stale.c: what a previous sandboxd left ------------------------------ */
/* "llmbox-<FNV-1a of the var dir, 8 hex>": names this installation's
 * cgroups and helper processes, so two installations never touch each
 * other's. */
const char *lbsd_install_tag(void);
/* Sets the tag from the var dir: sandboxd's start, before anything names a
 * cgroup or a helper (until then the tag is that of an empty var dir). */
void lbsd_install_tag_init(const char *var_dir);
/* Takes <var_dir>/sandboxd.lock for the life of the process: one sandboxd
 * per var dir, whatever its socket. Returns the fd, or -1 with a sentence. */
LB_MUST_CHECK int lbsd_lock_var(const char *var_dir, char *msg, size_t msgsz);
/* Kills every process of an old sandbox of this installation (its root is
 * an overlay whose upper layer is under var/sandboxes/) and every
 * slirp4netns it started. Run at startup, before the scratch dirs go. */
void lbsd_kill_stale_procs(void);

/* --- sandbox_init.c (runs as pid 1 in a clone of the zygote, zygote.h) --- */
typedef struct lbsd_init_cfg {
    const char *scratch;           /* var/sandboxes/<id>: init mounts the quota tmpfs here
                                    * (in its own mount namespace) with upper/, work/,
                                    * merged/ and tmp/ inside */
    const char *lower;             /* the image's rootfs (owned by the images' ids) */
    const char *tag;               /* lbsd_install_tag(): the overlay's source name (init
                                    * is cloned by the zygote, which has no configuration) */
    int idmap_fd;                  /* user namespace mapping the images' ids to the
                                    * sandbox's range for an idmapped lower layer; -1:
                                    * the sandbox shares the images' range (uidslot.h) */
    int idmap_make;                /* the zygote makes that namespace (idmap_fd -1) mapping
                                    * idmap_base.. to uid_root.. (uidslot.h) */
    uint32_t idmap_base;
    int disk_mib;                  /* size of that tmpfs: writable layer + /tmp */
    uint32_t uid_root;             /* host uid/gid of the sandbox's root (its slot's first) */
    int rlimit_mode;               /* no cgroups: limit memory and pids with rlimits */
    uint64_t memory_bytes;
    int pids;
    uint64_t nofile;               /* RLIMIT_NOFILE of every process (hostlimits.h) */
    int ptys;                      /* devpts max= */
    /* a layered image (image_layers.h); all NULL/empty/-1 for a debootstrap one */
    const char *lowerdirs;         /* overlay's lowerdir ("lower/<hex>/root:..."), lower being
                                    * the idmapped <image_store>/oci/layers */
    const char *hold;              /* the image's record: init holds a shared flock on it for
                                    * the sandbox's life, so gc and rm see the image in use */
    const char *workdir;           /* the shell's and processes' folder ("" /testbed) */
    const char *env;               /* the image's Env, "K=V\0..." (envlen bytes) */
    size_t envlen;
    int64_t uid, gid;              /* the user the shell and processes run as; -1 root */
} lbsd_init_cfg;
__attribute__((noreturn)) void lbsd_init_main(const lbsd_init_cfg *cfg, int ctl);
/* Init holds the overlay's upper dir at this fd for the sandbox's life, so
 * that sandboxd can save it (issue 14, sandbox_save.c opens
 * /proc/<init>/fd/5): once the old root is detached nothing else reaches
 * it. The sandbox cannot: init is not dumpable, so its fds need
 * CAP_SYS_PTRACE over the host. */
#define LBSD_INIT_UPPER_FD 5

/* --- seccomp.c ------------------------------------------------------------ */
/* Drops capabilities outside the sandbox set (bounding, permitted,
 * effective, inheritable, ambient). */
LB_MUST_CHECK int lbsd_drop_caps(void);
/* Compiles the seccomp deny list once (sandboxd, before the first clone;
 * later calls return at once). */
LB_MUST_CHECK int lbsd_seccomp_prepare(void);
/* PR_SET_NO_NEW_PRIVS + the seccomp deny list (the prepared program, or
 * compiled here if there is none). The last step before the sandbox runs
 * anything it did not choose. */
LB_MUST_CHECK int lbsd_seccomp_apply(void);

/* --- sandbox_exec.c ------------------------------------------------------- */
/* Handles an exec request of c (the owner) on sb: starts req->command, or,
 * while a command runs, waits for it again ("") or interrupts it ("C-c").
 * On LB_OK the reply is sent now or later (c is marked busy meanwhile);
 * otherwise nothing was sent and msg says why (LB_E_BUSY: another command
 * while one runs). */
LB_MUST_CHECK int lbsd_exec_request(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, char *msg,
                      size_t msgsz);
/* Starts running req->command; the reply comes later from lbsd_exec_tick. */
LB_MUST_CHECK int lbsd_exec_start(lbsd_sandbox *sb, const lbsd_req *req, char *msg, size_t msgsz);
/* Reads available shell output (fd is sh_out or sh_err). */
void lbsd_exec_on_output(lbsd_sandbox *sb, int fd);
/* Whether the loop polls the shell's stdout (is_err 0) or stderr now: 1,
 * or 0 while that stream rests (a flood: sandbox_exec.c, LBSD_FLOOD_GRACE_MS), with
 * *timeout lowered to when it may be read again. */
int lbsd_exec_out_ready(const lbsd_sandbox *sb, int is_err, int64_t now, int *timeout);
/* Writes pending wrapper bytes to the shell. */
void lbsd_exec_on_writable(lbsd_sandbox *sb);
/* Deadlines and completion; returns ms until it wants to be called again
 * (-1: no wish). Sends the reply when the command is over, or "running"
 * at the soft timeout. */
int lbsd_exec_tick(lbsd_sandbox *sb, int64_t now);
/* The shell died (status from init). */
void lbsd_exec_shell_exited(lbsd_sandbox *sb, int status);
/* Kills the running command (state "interrupted"); no-op if none or over. */
void lbsd_exec_interrupt(lbsd_sandbox *sb);
/* Ends a running command without a reply (connection gone, destroy). */
void lbsd_exec_abandon(lbsd_sandbox *sb);
void lbsd_capture_init(lbsd_capture *c);
void lbsd_capture_free(lbsd_capture *c);
void lbsd_capture_add(lbsd_capture *c, const char *p, size_t n);
/* Renders the capture as valid UTF-8 (bad bytes and NULs become U+FFFD),
 * with a marker where bytes were dropped. Caller frees. */
char *lbsd_capture_text(const lbsd_capture *c, int *truncated);
/* Feeds stream bytes through the sentinel scanner into the capture.
 * with_code: the sentinel is followed by a decimal exit status. Only bytes
 * that could be the start of the sentinel line are held back, so the
 * capture has everything else at once (for "running" replies). */
void lbsd_scan_feed(lbsd_scan *s, lbsd_capture *cap, const char *sent, size_t slen,
                    int with_code, const char *p, size_t n);
void lbsd_scan_flush(lbsd_scan *s, lbsd_capture *cap);
/* Before a "running" reply: a lone held-back newline (the usual end of the
 * output so far) goes to the capture, while the scanner keeps it to match
 * a sentinel line that may follow. */
void lbsd_scan_show(lbsd_scan *s, lbsd_capture *cap);
/* The shell line that runs cmd and prints the sentinels. Caller frees. */
char *lbsd_exec_wrapper(const char *cmd, size_t len, const char *sentinel, size_t *outlen);

/* --- sandbox_fs.c --------------------------------------------------------- */
void lbsd_fs_read(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req);
void lbsd_fs_write(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, const char *data,
                   size_t len);
void lbsd_fs_list(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req);
void lbsd_fs_stat(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req);

/* --- input_copy.c --------------------------------------------------------- */
/* Copies regular files and directories of src (a host path, checked with the
 * peer's uid/gid) into the directory dstfd; what it creates belongs to
 * owner (the sandbox's root on the host). Never follows symlinks inside
 * src; skips them and special files. */
LB_MUST_CHECK int lbsd_copy_input(const char *src, int dstfd, uid_t uid, gid_t gid, uid_t owner, char *msg,
                    size_t msgsz);

#endif
