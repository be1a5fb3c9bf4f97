/*
 * sandboxd's objects, the ones its event loop juggles:
 *
 *   lbsd_conn      one client connection; owns the sandboxes it created
 *   lbsd_sandbox   one sandbox: its init (pid 1 of a new pid namespace),
 *                  the control socket to init, the current shell's pipes,
 *                  its cgroups and its scratch dir var/sandboxes/<id>
 *   lbsd_exec      the command running in a sandbox's shell right now
 *
 * Types and limits only: the functions over them are declared beside the
 * file that defines them (sandboxd.h: the loop, reply.h: answers,
 * sandbox_set.h: the live sandboxes, sandbox_create.h, sandbox_exec.h, ...).
 * Everything here runs on the event loop's thread, except what a worker
 * thread does to one sandbox it holds alone (workers.h): the make, the
 * input copy and the teardown, the blocking parts. The loop itself never
 * waits for a sandbox.
 */
#ifndef LBSD_OBJECTS_H
#define LBSD_OBJECTS_H

#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/util.h"
#include "sandboxd/cgroup.h"
#include "sandbox/rpc.h"

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
    /* its state (follow-ups: sandbox_freeze.c, sandbox_save.c) */
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

#endif
