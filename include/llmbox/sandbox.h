/*
 * llmbox sandbox client: the local RPC to `llmbox sandboxd`.
 *
 * Wire protocol (unix stream socket, var/run/sandboxd.sock):
 *   every message is a frame: 4-byte big-endian length N (N <= 64 MiB),
 *   then N bytes. A request is one JSON frame, optionally followed by one
 *   binary frame when the JSON has "data": true (write). A response is one
 *   JSON frame {"ok":true,...} or {"ok":false,"error":"code","message":"..."},
 *   optionally followed by one binary frame when it has "data": true (read).
 *   Requests on one connection are answered in order, one at a time.
 *
 * Operations ("op"):
 *   create   {image, memory_mib, pids, cpu_milli, disk_mib, network, ttl_s,
 *            input_dir?}                                -> {id, pooled, network, ttl_s?}
 *            input_dir: host directory copied into /testbed/input.
 *            cpu_milli: CPU quota in thousandths of a core; disk_mib: quota of
 *            the writable layer and /tmp (a tmpfs: its pages count toward
 *            memory_mib, so keep it below); network: "none" (loopback only) or
 *            "nat" (outbound through slirp4netns, host loopback unreachable;
 *            only if the operator allows it, else "invalid");
 *            ttl_s: the sandbox is destroyed this long after creation.
 *            Omitted or 0: the daemon's defaults. With network "egress",
 *            "policy" (the rules) and optionally "net_values" (the values of
 *            the policy's transform secrets, for its gateway's pipe only).
 *            Reply: pooled: taken ready-made from the warm pool (a fresh
 *            sandbox nothing ran in); network: the mode it got; ttl_s: the
 *            effective TTL (capped by the daemon's maximum), absent if none.
 *            When a TTL runs out the sandbox is destroyed: a running exec
 *            answers error "sandbox" (message says it expired), later
 *            requests "notfound" (message says it expired).
 *   exec     {id, command, timeout_ms, soft_timeout_ms} -> {state, exit_code, stdout, stderr,
 *            truncated, duration_ms, timeout_ms, shell_restarted?}
 *            state: exited (exit_code valid) | running | interrupted | timeout | oom | error.
 *            timeout_ms: hard limit, counted from the command's start (0 or
 *            absent: LLMBOX_CMD_TIMEOUT_S); at it: SIGINT to the shell's
 *            foreground process group, after 0.5 s SIGKILL to every other
 *            process of the sandbox, after 1 s more a fresh shell.
 *            soft_timeout_ms (0 or absent: none): when the command still runs
 *            then, the answer is state "running" with the output so far
 *            (exit_code -1); the command goes on, its output keeps being
 *            captured, and the connection is free for other requests. While
 *            it runs (or has ended without its end being answered yet), the
 *            next exec on that sandbox must have command
 *              ""     keep waiting, up to this request's soft_timeout_ms and
 *                     never past the hard limit; answers the output since the
 *                     previous answer, and the end state when it ended;
 *              "C-c"  interrupt it (as at the hard limit); answers
 *                     "interrupted" (or how it ended, if it already had);
 *            any other command gets error "busy" with a sentence saying so.
 *            "" or "C-c" with no command running: error "invalid".
 *            duration_ms: since the command started. Output: per answer, the
 *            first and last 512 KiB of each stream (truncated: some was cut).
 *            shell_restarted: the old shell was gone and a fresh one started.
 *   write    {id, path, excl, mode?} + data frame       -> {}
 *   read     {id, path, max}                            -> {size} + data frame
 *   list     {id, path, max_depth, max_entries}         -> {entries:[{path,type:"file"|"dir"|"other",size}], truncated?}
 *            symlinks and special files are reported with type "other" and never followed.
 *   stat     {id, path}                                 -> {type:"missing"|"file"|"dir"|"other", size}
 *            list's entries and stat (but "missing") also carry (E2B's protocol, appended):
 *            kind "file"|"dir"|"symlink"|"fifo"|"socket"|"chardev"|"blockdev"|"other",
 *            mode (the 07777 bits), uid, gid (as the sandbox sees them; 65534 for
 *            an id outside its range), mtime (s), mtime_ns, target (a symlink's,
 *            read without following it; absent if longer than 4096 bytes),
 *            st_size (the filesystem's size of any kind, a directory's too).
 *   fs_change {id, action, path, dest?, user?, owner_only?} -> {} (E2B's makeDir, rename, remove:
 *            lbsb_fs_change_owned)
 *            write and fs_change: the call is the sandbox's root's, what it makes user's (owner_only:
 *            true or absent; false is refused); read, list and stat take no user
 *            read, write, list, stat, fs_change: in_root true follows symlinks among the path's
 *            folders, resolved inside the sandbox's root (E2B's envd's way)
 *   destroy  {id}                                       -> {}   (idempotent)
 *   interrupt {id}                                      -> {}
 *            may be sent while an exec on the same connection is waiting:
 *            the command is stopped, the exec answers first with state
 *            "interrupted", then the interrupt answers. Any other request
 *            sent while an exec waits gets "busy" after the exec's answer.
 *            Used on cancel, so the outputs can still be collected
 *            afterwards. On a command left running after a "running"
 *            answer it stops it too (its end waits for an exec "").
 *   ping     {}                                         -> {version, sandboxes, cgroup:"v1"|"v2"|"rlimit",
 *                                                           uptime_ms, pool, networks, ttl_max_s,
 *                                                           uid_base, uid_slots, uid_slots_used}
 *            sandboxes: in use (pooled ones not counted);
 *            pool: {size, ready, hits, misses, other, making, images:[{image, size, ready, error?}]}
 *            (making: sandboxes being made for the pool right now)
 *            (hits: creates served from the pool; misses: creates that fitted
 *            but found it empty; other: specs the pool cannot serve);
 *            networks: the modes clients may ask for, e.g. ["none","nat"];
 *            ttl_max_s: the daemon's TTL cap, 0 if none;
 *            uid_base: the host uid of the images' ids; uid_slots: host uid
 *            ranges for sandboxes, one each above uid_base (0: all share
 *            uid_base's); uid_slots_used: how many are taken now.
 *
 *   renew    {id, lease_s?}                             -> {lease_s}
 *   adopt    {id, key, lease_s?}                        -> {id, lease_s, network, ttl_s?}
 *            Leases. A create with lease_s (1..86400) makes a sandbox that
 *            outlives its connection (its answer adds lease_s and
 *            lease_key, 32 hex): when that closes, the sandbox waits,
 *            held by nobody (a command still running is stopped), until a
 *            connection of the same uid adopts it with that key, which makes it that
 *            connection's. Whoever holds it renews the lease (renew; adopt
 *            renews too); lease_s after the last renewal it is destroyed,
 *            held or not (a waiting exec answers error "sandbox"). The TTL
 *            and destroy apply as always. adopt of a sandbox another live
 *            connection holds: "busy"; of one without a lease or of
 *            another uid: "notfound". ping counts the unheld ones
 *            (leased_unheld). What the web uses to keep API sandboxes
 *            across its own restart.
 *
 *   -- a sandbox's state (follow-ups) --
 *   freeze   {id} -> {}   none of the sandbox's processes gets CPU (cgroup
 *            freezer; where there is none, SIGSTOP to each process, logged);
 *            its memory stays counted. While frozen, exec, read, write, list
 *            and stat answer "busy" ("sandbox is frozen"); destroy, save,
 *            renew and adopt work. A command left running (soft timeout)
 *            freezes too, and its hard limit keeps counting.
 *   thaw     {id} -> {}
 *   save     {id, state, max_mib?} -> {state, bytes, files}
 *            writes the sandbox's writable state into sandboxd's state store
 *            as `state` ([a-z0-9_-]{1,64}, chosen by the caller, one name
 *            space per uid; an existing one is replaced): the overlay's upper
 *            layer (everything written under /, e.g. /testbed, /root,
 *            /usr/local; deletions of image files as whiteouts) and the
 *            persistent shell's cwd and exported variables as of the end of
 *            its last command (the exec wrapper keeps them in
 *            /run/.llmbox-shell, which is part of the layer). Not saved:
 *            running processes, /tmp and /dev/shm (tmpfs of their own),
 *            hard links (each link is saved as a file of its own), sockets,
 *            fifos, and files named ".wh.*". Compressed; atomic (a temporary
 *            file renamed: a crash keeps the old state or the new one, never
 *            a part); capped by max_mib (0 or absent: the daemon's
 *            sandbox_state_max_mib, which also caps max_mib): over it
 *            "toobig", naming the cap, and nothing is kept. A running
 *            sandbox is frozen for the time of the save and thawed after; a
 *            frozen one is saved as it is and stays frozen.
 *   create   ... restore: "<state>": the new sandbox starts with that state's
 *            files, and its shell in the saved cwd with the saved exported
 *            variables; input_dir, if given, is copied in after the state
 *            (beside the saved /testbed/input). A state this uid does not have: "notfound"; a damaged
 *            or hostile one: "invalid", "saved state is damaged: <why>"; one
 *            whose files do not fit the new sandbox's disk_mib: "toobig"; one
 *            saved from a sandbox of another image: "invalid", naming it.
 *            Either way no sandbox is left. Entries are applied through the new
 *            sandbox's own filesystem with its own root's rights: never
 *            through a symlink, never outside its writable layer.
 *   state_delete {state} -> {}   ("notfound" if there is none)
 *   state_list   {} -> {states: [{state, bytes, mtime}]}   this uid's states
 *            (mtime: Unix seconds). States older than
 *            sandbox_state_max_age_s (default 7 days) are removed by a sweep.
 *
 *   -- processes of sandboxd's own (E2B's protocol; sandboxd/sandbox_proc.h) --
 *   Commands beside the shell, forked by a spawner the sandbox's init
 *   forks as it forks the shell (same namespaces, cgroup, user, rlimits,
 *   no_new_privs, seccomp, OOM score),
 *   each with its own pipes held by sandboxd; no shell state is shared
 *   (the environment is the shell's initial one plus env). Any connection
 *   of the uid that created the sandbox may use these ops (not only its
 *   owner): a client streams each process on a connection of its own.
 *   proc_start {id, argv:[...], env?:{NAME:value}, cwd?, stdin?, tag?, meta?, attach?}
 *            -> {pid}  (pid inside the sandbox). argv[0] without '/' is
 *            looked up in env's PATH. cwd: absolute (absent: /testbed,
 *            else /). stdin: a pipe for proc_input, else /dev/null. tag
 *            (<= 256 bytes) selects it like pid; meta (<= 16 KiB) is the
 *            client's note, returned by proc_list. argv+env+cwd <= 120 KiB
 *            ("toobig"). A program that cannot be run: "notfound"/"invalid"
 *            with the reason, nothing runs. At most 1024 live processes per
 *            sandbox ("busy"); a frozen sandbox: "busy". attach: this
 *            connection gets the process's events from its first byte on.
 *   proc_attach {id, pid | tag} -> {pid}  this connection gets its events
 *            from now on (at most 8 connections per process: "busy").
 *   Events, pushed after the answer on an attached connection, until the
 *   process's end (then the connection is an ordinary one again; send
 *   nothing else on it meanwhile, or its answers come between events):
 *            {"event":"out","pid","fd":1|2,"data":true} + a data frame (<= 64 KiB)
 *            {"event":"exit","pid","exit_code"} or {..., "signal"}
 *            {"event":"gone","pid","message"}  the sandbox was destroyed,
 *            expired or its init died (the process died with it), or the
 *            spawner was killed from inside the sandbox (the process is
 *            no longer followed).
 *            Backpressure: while an attached connection has more than
 *            256 KiB unsent, the process's pipes are not read (it blocks
 *            writing). With nobody attached its output is read and dropped
 *            (proc_list's "dropped"). At the exit, what is still in the
 *            pipes (<= 1 MiB each) is sent before "exit"; later output of
 *            children it left behind is not.
 *   proc_input  {id, pid | tag, eof?} + data frame? -> {}  queued for its
 *            stdin (at most 1 MiB not yet taken: "busy"); eof closes stdin
 *            once the queue is written.
 *   proc_signal {id, pid | tag, signal: 1..64} -> {}  to its process group
 *            (it leads one) and to it; delivered by init, so to a frozen
 *            sandbox's process at the thaw.
 *   proc_list   {id} -> {procs: [{pid, tag?, meta?, stdin, attached, dropped, age_ms}]}
 *   Processes die with the sandbox (destroy, TTL, lease, its connection's
 *   close when not leased, sandboxd's end); a freeze stops them with the
 *   rest; a leased sandbox's processes run on while nobody holds it and are
 *   listed to whoever adopts it. Nothing survives a restart of sandboxd.
 *
 *   port_connect {id, port: 1..65535} -> {port, fd: true}, the answer's
 *            first byte carrying (SCM_RIGHTS) a TCP socket connected to
 *            127.0.0.1:port in the sandbox's network namespace (E2B's protocol,
 *            E2B's getHost). The sandbox gets no new network access; a
 *            connection of the creator's uid only; "notfound" when nothing
 *            listens; send it on a connection with no answer owed ("busy").
 *
 *   -- image work for an unprivileged client (sandboxd/image_jobs.h) --
 *   The layered image store is root's; sandboxd runs `llmbox image pull`
 *   or `llmbox image build` as its child for a client that is not root
 *   (the web). Any connection may start and poll jobs.
 *   image_job_start {kind:"pull", ref} | {kind:"build", ref, context, dockerfile?, build_args?:["K=V"]}
 *            -> {job}  (32 hex). pull: `llmbox image pull --if-missing ref`;
 *            the same ref already being pulled answers that job. build:
 *            ref is the NAME the image gets; context a folder name
 *            [a-z0-9-]{1,64} under <var_dir>/image-contexts/ (not a
 *            symlink); dockerfile a file name in it (absent: Dockerfile);
 *            at most 64 build args of <= 4 KiB each. More than
 *            image_jobs_max jobs running: "busy".
 *   image_job_poll {job, offset?, max?} -> {state, exit_code?, next_offset,
 *            log_bytes, error?, data: true} + a data frame: the job's log
 *            (stdout and stderr) from offset, at most max bytes (<= 1 MiB).
 *            state: running | succeeded | failed; error: the last line the
 *            job printed when it failed. Finished jobs are forgotten after
 *            a while ("notfound"); none survives a restart of sandboxd.
 *   volume   {action, ...}: E2B's volumes (sandboxd/sandbox_volume.h), on
 *            sandboxd's own store <var_dir>/volumes (no host path is ever
 *            named): create {owner, name} -> {volume:{id, name, owner,
 *            created_ms}}; list {} -> {volumes:[...]}; get {volume} ->
 *            {volume}; delete {volume} -> {}; on its content, each
 *            with {volume, path} (never through a link): stat -> {entry};
 *            list_dir {depth?} -> {entries}; mkdir {uid?, gid?, mode?,
 *            force?} -> {entry}; read -> {size} + a data frame; write
 *            {uid?, gid?, mode?, force?} + a data frame -> {entry}; remove
 *            -> {}; chmeta {uid?, gid?, mode?} -> {entry}. Over the owner's
 *            volume_max_per_owner "toobig", volume_max_mb_per_owner "nospace".
 *   volume_mount {id, volume, path} -> {}: the volume bound read-write at
 *            path (absolute, not /proc, /sys, /dev, no "..", made when
 *            missing, never through a link) in sandbox id.
 *
 * Sandboxes without a lease belong to the connection that created them:
 * when it closes (the agent exits, is killed or cancelled), sandboxd
 * destroys them. That is how cancel and agent crashes leave nothing behind.
 *
 * Error codes: "invalid" (also: a network mode the operator does not
 * allow), "notfound" (also: a sandbox whose TTL ran out), "exists",
 * "toobig", "isdir", "nospace" (a volume owner's room), "sandbox" (the
 * sandbox itself failed or expired under a running command; nat could not
 * be set up), "busy", "internal".
 */
#ifndef LLMBOX_SANDBOX_H
#define LLMBOX_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "tool.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LLMBOX_RPC_MAX_FRAME (64u << 20)

/* A status a caller must look at: the compiler warns when a call drops it
 * (server/common/status.h's LB_MUST_CHECK, defined here too so that this
 * header stands alone). To drop one on purpose, cast through `!`:
 * `(void)!lbsb_destroy(...)`, since GCC ignores a plain (void) here. */
#ifndef LLMBOX_MUST_CHECK
#if defined(__GNUC__) || defined(__clang__)
#define LLMBOX_MUST_CHECK __attribute__((warn_unused_result))
#else
#define LLMBOX_MUST_CHECK
#endif
#endif

typedef struct lbsb_conn lbsb_conn;

typedef struct lbsb_spec {
    const char *image;          /* NULL: "default" */
    int memory_mib;             /* 0: daemon default */
    int pids;                   /* 0: daemon default */
    const char *input_dir;      /* NULL: empty /testbed/input */
    int cpu_milli;              /* 0: daemon default; 1000 = one core */
    int disk_mib;               /* 0: daemon default */
    const char *network;        /* NULL: "none"; "none" | "nat" (if the daemon allows it) | a policy
                                 * {"allow": [...], "deny": [...]} as JSON text (docs/NETWORK.md) */
    int ttl_s;                  /* 0: none (the daemon may impose a maximum) */
    int lease_s;                /* 0: dies with the connection; else outlives it (renew, adopt) */
    const char *restore;        /* NULL: a fresh sandbox; else a saved state's name (lbsb_save):
                                 * the sandbox starts with its files, cwd and environment */
    const char *net_values;     /* NULL, or with a policy: the values of its transform secrets (names
                                 * "e2b.*") as JSON [{name, hosts, header, value}], for its gateway only */
} lbsb_spec;

/* One saved state of lbsb_state_list. */
typedef struct lbsb_state {
    char name[65];              /* [a-z0-9_-]{1,64} */
    uint64_t bytes;             /* compressed, on sandboxd's disk */
    int64_t mtime;              /* when it was saved, Unix seconds */
} lbsb_state;

typedef struct lbsb_exec_out {
    int state;                  /* llmbox_exec_state (LLMBOX_EXEC_RUNNING: see lbsb_exec_ex) */
    int exit_code;              /* -1 while running */
    char *out; size_t out_len;  /* owned by the caller: free() */
    char *err; size_t err_len;
    int truncated;
    int64_t duration_ms;        /* since the command started */
    int timeout_ms;             /* the hard limit that applies (0 if the daemon did not say) */
    int shell_restarted;        /* the next command runs in a fresh shell */
} lbsb_exec_out;

typedef struct lbsb_exec_opts {
    int timeout_ms;             /* hard limit from the command's start; 0: daemon default */
    int soft_timeout_ms;        /* answer LLMBOX_EXEC_RUNNING after this long; 0: never */
} lbsb_exec_opts;

/* E2B's protocol: watchDir's watcher, one of sandboxd's processes run inside the
 * sandbox for argv {LBSB_WATCH_ARGV0, dir, "0"|"1" recursive}; what it
 * writes: server/insandbox/sandbox_watch.h */
#define LBSB_WATCH_ARGV0 "llmbox:watch"  /* no '/', so never a program the PATH finds */
#define LBSB_WATCH_DIRS 4096              /* directories one recursive watcher watches */
#define LBSB_WATCH_LEVELS 128             /* levels below the watched dir one recursive watcher goes */

/* E2B's protocol: E2B's pty. argv {LBSB_PTY_ARGV0, cols, rows, program, args...}
 * with stdin: the spawner runs program on a pty of the sandbox's own devpts
 * (server/insandbox/sandbox_pty.h); its stdout is the terminal's output.
 * Its stdin carries frames, never raw bytes: 'd' + 4-byte big-endian length
 * + that many input bytes; 'r' + 4-byte length 4 + cols and rows (2 bytes
 * each, big-endian): a resize. */
#define LBSB_PTY_ARGV0 "llmbox:pty"
#define LBSB_PTY_FRAME_MAX (1u << 20)   /* payload of one 'd' frame */

/* E2B's protocol: what a file is beyond file/dir/other (lbsb_entry.kind) */
#define LBSB_TARGET_MAX 4096    /* bytes of a symlink's target stat and list answer (PATH_MAX) */
/* E2B's file metadata (envd 0.6.2): a regular file's user.e2b.<key> extended
 * attributes; keys are 1 to LBSB_META_KEY_MAX of the HTTP token characters,
 * values up to LBSB_META_VALUE_MAX printable ASCII bytes, at most
 * LBSB_META_KEYS of them (more, or others, are not written and not read) */
#define LBSB_META_KEYS 32
#define LBSB_META_KEY_MAX 64
#define LBSB_META_VALUE_MAX 1024
enum lbsb_kind {
    LBSB_KIND_UNKNOWN = 0,      /* an older sandboxd did not say */
    LBSB_KIND_FILE, LBSB_KIND_DIR, LBSB_KIND_SYMLINK, LBSB_KIND_FIFO, LBSB_KIND_SOCKET,
    LBSB_KIND_CHARDEV, LBSB_KIND_BLOCKDEV, LBSB_KIND_OTHER
};

typedef struct lbsb_entry {
    char *path;                 /* relative to the listed dir; owned (NULL from lbsb_stat_entry) */
    int type;                   /* 1 file, 2 dir, 3 other */
    uint64_t size;
    /* E2B's protocol: metadata; has_meta 0 when sandboxd sent none */
    int has_meta;
    int kind;                   /* enum lbsb_kind */
    uint32_t mode;              /* permission bits with setuid, setgid, sticky (07777) */
    uint32_t uid, gid;          /* as the sandbox sees them (0..65535) */
    int64_t mtime_s;            /* modification time, s since the epoch */
    uint32_t mtime_ns;          /* and ns (0..999999999) */
    uint64_t fs_size;           /* the filesystem's size of any kind (st_size: a directory's too); size if not sent */
    char *target;               /* a symlink's target, owned; NULL if none or unknown */
    char *file_meta;            /* E2B's file metadata as a JSON object of strings, owned; NULL: none */
} lbsb_entry;

/* All functions return an lb_status code (server/common/status.h numbering:
 * 0 ok, LB_E_NOTFOUND, LB_E_EXISTS, LB_E_TOOBIG, LB_E_SANDBOX, LB_E_BUSY,
 * LB_E_UNAVAILABLE when the daemon cannot be reached, LB_E_CANCELLED when a
 * call was interrupted by a signal and *cancel_flag was set ...).
 * errbuf (may be NULL) receives a human sentence on failure. */

/* cancel_flag (may be NULL): when a signal interrupts a blocking call and
 * *cancel_flag is nonzero, the call returns LB_E_CANCELLED. */
LLMBOX_MUST_CHECK int lbsb_connect(const char *socket_path, volatile int *cancel_flag, lbsb_conn **out,
                                   char *errbuf, size_t errsz);
void lbsb_close(lbsb_conn *c);   /* closing destroys the connection's sandboxes */
/* A connection over an fd already connected to something that speaks the
 * protocol (the tool host's socketpair to the web, which relays the calls
 * to the sandbox's own connection). Takes fd: lbsb_close closes it. */
LLMBOX_MUST_CHECK int lbsb_conn_from_fd(int fd, volatile int *cancel_flag, lbsb_conn **out);

/* Deadlines. Every call of a process op (proc_start, proc_attach,
 * proc_input, proc_signal, proc_list) and port_connect waits for its
 * answer at most LBSB_PROC_CALL_MS, and any call at most until the
 * connection's deadline (lb_mono_ms clock, CLOCK_MONOTONIC in ms; 0:
 * none): past it the call fails LB_E_TIMEOUT and its answer, when it
 * comes, is dropped by the next call. While a call or lbsb_proc_next
 * waits, a hangup on the watched descriptor (the HTTP request's
 * connection: its client left) ends it LB_E_CANCELLED, so a caller that
 * leaves frees its thread. */
#define LBSB_PROC_CALL_MS 30000
void lbsb_set_deadline(lbsb_conn *c, int64_t deadline_ms);
void lbsb_set_watch_fd(lbsb_conn *c, int fd); /* -1: none (the default) */

LLMBOX_MUST_CHECK int lbsb_create(lbsb_conn *c, const lbsb_spec *spec, char *id_out, size_t idsz,
                                  char *errbuf, size_t errsz);
/* Runs cmd and waits for its end (or the hard timeout). */
LLMBOX_MUST_CHECK int lbsb_exec(lbsb_conn *c, const char *id, const char *cmd, int timeout_ms,
                                lbsb_exec_out *out, char *errbuf, size_t errsz);
/* The same with options (opts may be NULL). With a soft timeout, out->state
 * may be LLMBOX_EXEC_RUNNING: the command goes on, out holds the output so
 * far. Then call again with cmd "" to keep waiting or "C-c" to interrupt;
 * any other cmd fails with LB_E_BUSY (errbuf says what to do) until the
 * command's end has been returned. "" or "C-c" with nothing running fail
 * with LB_E_INVAL. */
LLMBOX_MUST_CHECK int lbsb_exec_ex(lbsb_conn *c, const char *id, const char *cmd, const lbsb_exec_opts *opts,
                                   lbsb_exec_out *out, char *errbuf, size_t errsz);
void lbsb_exec_out_free(lbsb_exec_out *o);
LLMBOX_MUST_CHECK int lbsb_write(lbsb_conn *c, const char *id, const char *path, const void *data,
                                 size_t len, int excl, char *errbuf, size_t errsz);
LLMBOX_MUST_CHECK int lbsb_read(lbsb_conn *c, const char *id, const char *path, size_t max,
                                char **data, size_t *len, char *errbuf, size_t errsz);
/* Up to max bytes (at most LBSD_READ_MAX, ~64 MiB: one frame) of the file
 * from byte offset on, for files larger than one read; *file_size gets the
 * file's size when read (0 bytes at or past the end). */
LLMBOX_MUST_CHECK int lbsb_read_range(lbsb_conn *c, const char *id, const char *path, uint64_t offset, size_t max,
                                      char **data, size_t *len, uint64_t *file_size, char *errbuf, size_t errsz);
LLMBOX_MUST_CHECK int lbsb_list(lbsb_conn *c, const char *id, const char *path, int max_depth,
                                size_t max_entries, lbsb_entry **ents, size_t *n, char *errbuf, size_t errsz);
void lbsb_entries_free(lbsb_entry *ents, size_t n);
/* *type: 0 missing, 1 file, 2 dir, 3 other */
LLMBOX_MUST_CHECK int lbsb_stat(lbsb_conn *c, const char *id, const char *path, int *type, uint64_t *size,
                                char *errbuf, size_t errsz);
/* E2B's protocol: the same with the metadata in *out (out->type 0: missing);
 * lbsb_entry_clear frees what it holds. */
LLMBOX_MUST_CHECK int lbsb_stat_entry(lbsb_conn *c, const char *id, const char *path, lbsb_entry *out,
                                      char *errbuf, size_t errsz);
void lbsb_entry_clear(lbsb_entry *e);
/* E2B's envd (which runs in the sandbox as root): a write, with E2B's file
 * metadata (meta holds nmeta key, value pairs: 2 * nmeta strings;
 * LBSB_META_* caps, else LB_E_INVAL, nothing written), and makeDir, rename
 * and remove (action "mkdir": mkdir -p; "rename": mv -T to dest, on one
 * filesystem; "remove": rm -rf, nothing there is LB_OK), made as the
 * sandbox's root, what they make handed to user (a user of the sandbox's
 * /etc/passwd, LB_E_NOTFOUND without one; NULL or "root": root's). What
 * sandboxd cannot do in place (a rename overlayfs refuses, a mount, a
 * folder on another filesystem) is LB_E_INVAL; a remove of too many
 * entries LB_E_TOOBIG. */
LLMBOX_MUST_CHECK int lbsb_write_owned(lbsb_conn *c, const char *id, const char *path, const void *data, size_t len,
                                       int excl, const char *user, const char *const *meta, int nmeta, char *errbuf,
                                       size_t errsz);
LLMBOX_MUST_CHECK int lbsb_fs_change_owned(lbsb_conn *c, const char *id, const char *action, const char *path,
                                           const char *dest, const char *user, char *errbuf, size_t errsz);
/* E2B's envd: lbsb_read, lbsb_list and lbsb_stat_entry as envd, which
 * runs in the sandbox, makes them: symlinks among the path's folders (and
 * a listed folder's own) are followed inside the sandbox's root (a link to
 * "/etc" is the sandbox's /etc, never the host's), where the others refuse
 * them. lbsb_write_owned and lbsb_fs_change_owned follow them so too. */
LLMBOX_MUST_CHECK int lbsb_read_envd(lbsb_conn *c, const char *id, const char *path, size_t max, char **data,
                                     size_t *len, char *errbuf, size_t errsz);
LLMBOX_MUST_CHECK int lbsb_list_envd(lbsb_conn *c, const char *id, const char *path, int max_depth,
                                     size_t max_entries, lbsb_entry **ents, size_t *n, char *errbuf, size_t errsz);
LLMBOX_MUST_CHECK int lbsb_stat_envd(lbsb_conn *c, const char *id, const char *path, lbsb_entry *out,
                                     char *errbuf, size_t errsz);
LLMBOX_MUST_CHECK int lbsb_destroy(lbsb_conn *c, const char *id, char *errbuf, size_t errsz);
/* *info_json: the ping response, caller frees. */
LLMBOX_MUST_CHECK int lbsb_ping(lbsb_conn *c, char **info_json, char *errbuf, size_t errsz);
/* Leases. lbsb_create with spec->lease_s: key_out (>= 33 bytes) gets the
 * sandbox's lease_key, which adopting it takes. Renew the lease of a
 * sandbox this uid created (from any of its connections; lease_s 0 keeps
 * its length); adopt one whose connection is gone, making it c's (renewed
 * too). */
LLMBOX_MUST_CHECK int lbsb_create_leased(lbsb_conn *c, const lbsb_spec *spec, char *id_out, size_t idsz,
                                         char *key_out, size_t keysz, char *errbuf, size_t errsz);
LLMBOX_MUST_CHECK int lbsb_renew(lbsb_conn *c, const char *id, int lease_s, char *errbuf, size_t errsz);
LLMBOX_MUST_CHECK int lbsb_adopt(lbsb_conn *c, const char *id, const char *key, int lease_s, char *errbuf,
                                 size_t errsz);

/* A sandbox's state (follow-ups). Freeze: none of its processes gets CPU
 * (its memory stays); exec, read, write, list and stat fail with LB_E_BUSY
 * until thaw. Freezing a frozen sandbox, or thawing a running one, is a
 * no-op. */
LLMBOX_MUST_CHECK int lbsb_freeze(lbsb_conn *c, const char *id, char *errbuf, size_t errsz);
/* The same after every process but init has ended (E2B's pause without
 * memory): the sandbox gets a new boot id, as a machine that booted again. */
LLMBOX_MUST_CHECK int lbsb_freeze_reboot(lbsb_conn *c, const char *id, char *errbuf, size_t errsz);
LLMBOX_MUST_CHECK int lbsb_thaw(lbsb_conn *c, const char *id, char *errbuf, size_t errsz);
/* Saves the sandbox's writable layer, cwd and exported environment as the
 * state `state` ([a-z0-9_-]{1,64}; replaces one of that name) of this
 * uid. max_mib: cap of the compressed state (0: the daemon's
 * sandbox_state_max_mib, which also caps it); over it LB_E_TOOBIG and
 * nothing is kept. *bytes and *files (may be NULL) get its size and how
 * many entries it holds. A running sandbox is frozen for the time of the
 * save; a frozen one stays frozen. */
LLMBOX_MUST_CHECK int lbsb_save(lbsb_conn *c, const char *id, const char *state, int max_mib, uint64_t *bytes,
                                uint64_t *files, char *errbuf, size_t errsz);
/* Deletes a saved state of this uid (LB_E_NOTFOUND if there is none). */
LLMBOX_MUST_CHECK int lbsb_state_delete(lbsb_conn *c, const char *state, char *errbuf, size_t errsz);
/* This uid's saved states: *out (caller frees with free()) and *n. */
LLMBOX_MUST_CHECK int lbsb_state_list(lbsb_conn *c, lbsb_state **out, size_t *n, char *errbuf, size_t errsz);

/* Processes of sandboxd's own (E2B's protocol; the ops above). */
typedef struct lbsb_proc_spec {
    const char *const *argv;    /* argc strings; argv[0] without '/' is looked up in PATH */
    int argc;
    const char *const *env;     /* envc "NAME=value" over the shell's initial environment */
    int envc;
    const char *cwd;            /* absolute; NULL: /testbed (else /) */
    int with_stdin;             /* a pipe for lbsb_proc_input; else /dev/null */
    const char *tag;            /* NULL: none; else selects it like its pid */
    const char *meta;           /* NULL: none; the caller's note, returned by lbsb_proc_list */
    const char *user;           /* NULL: the image's user, with no_new_privs (as the shell);
                                   else a user of the sandbox's /etc/passwd ("root": 0 always),
                                   its groups from /etc/group, HOME/USER/LOGNAME its own,
                                   without no_new_privs (sudo works): E2B's commands */
} lbsb_proc_spec;

enum { LBSB_PROC_OUT = 1, LBSB_PROC_EXIT = 2, LBSB_PROC_GONE = 3 };

typedef struct lbsb_proc_event {
    int kind;                   /* LBSB_PROC_OUT, _EXIT or _GONE */
    uint32_t pid;
    int fd;                     /* OUT: 1 stdout, 2 stderr */
    char *data; size_t len;     /* OUT: the bytes (lbsb_proc_event_free) */
    int exit_code;              /* EXIT: its status, -1 when a signal ended it */
    int signal;                 /* EXIT: that signal, else 0 */
    char message[256];          /* GONE: why */
} lbsb_proc_event;

/* Starts a process; *pid gets its pid in the sandbox. attach: c gets its
 * events from the first byte on (read them with lbsb_proc_next). */
LLMBOX_MUST_CHECK int lbsb_proc_start(lbsb_conn *c, const char *id, const lbsb_proc_spec *spec, int attach,
                                      uint32_t *pid, char *errbuf, size_t errsz);
/* Attaches c to the process of pid (tag NULL) or of tag; its events from now on. */
LLMBOX_MUST_CHECK int lbsb_proc_attach(lbsb_conn *c, const char *id, uint32_t pid, const char *tag,
                                       uint32_t *pid_out, char *errbuf, size_t errsz);
/* The next event of an attached connection, waiting up to timeout_ms:
 * LB_E_TIMEOUT when none came. Free ev with lbsb_proc_event_free. */
LLMBOX_MUST_CHECK int lbsb_proc_next(lbsb_conn *c, int timeout_ms, lbsb_proc_event *ev, char *errbuf,
                                     size_t errsz);
void lbsb_proc_event_free(lbsb_proc_event *ev);
/* len bytes for its stdin; eof: close it after them. */
LLMBOX_MUST_CHECK int lbsb_proc_input(lbsb_conn *c, const char *id, uint32_t pid, const void *data, size_t len,
                                      int eof, char *errbuf, size_t errsz);
LLMBOX_MUST_CHECK int lbsb_proc_signal(lbsb_conn *c, const char *id, uint32_t pid, int sig, char *errbuf,
                                       size_t errsz);
/* *json: the array of proc_list's answer as JSON text (caller frees). */
LLMBOX_MUST_CHECK int lbsb_proc_list(lbsb_conn *c, const char *id, char **json, char *errbuf, size_t errsz);

/* One sample of a sandbox's use (sandboxd's metrics request). A counter
 * sandboxd could not read is -1. */
typedef struct lbsb_metrics {
    double cpu_usage_us;        /* CPU time of its processes, microseconds */
    int cpu_count;              /* the CPUs it may use */
    double mem_used, mem_total, mem_cache;  /* bytes */
    double disk_used, disk_total;           /* bytes of its root's filesystem */
} lbsb_metrics;
LLMBOX_MUST_CHECK int lbsb_metrics_get(lbsb_conn *c, const char *id, lbsb_metrics *m, char *errbuf, size_t errsz);
/* E2B's protocol: *fd_out gets a TCP socket connected to 127.0.0.1:port inside
 * the sandbox (the caller closes it). LB_E_NOTFOUND: nothing listens
 * there. c must be idle (no answer owed). */
LLMBOX_MUST_CHECK int lbsb_port_connect(lbsb_conn *c, const char *id, int port, int *fd_out, char *errbuf,
                                        size_t errsz);

/* Image work sandboxd runs for an unprivileged client (image_job_start,
 * image_job_poll above). */
typedef struct lbsb_image_job_spec {
    const char *kind;            /* "pull" or "build" */
    const char *ref;             /* pull: the reference; build: the NAME the image gets */
    const char *context;         /* build: a folder NAME [a-z0-9-]{1,64} under <var_dir>/image-contexts/ that the
                                    web wrote (holds the Dockerfile) */
    const char *dockerfile;      /* build: file name inside it (NULL: "Dockerfile") */
    const char *const *build_args; size_t n_build_args;   /* build: "K=V" */
    const char *network;         /* build: the RUN steps' network, "none" or "nat" (the builder's --network);
                                    NULL: the builder's default ("none"). sandboxd refuses one beyond the
                                    operator's network_allow (LB_E_INVAL, saying so) */
} lbsb_image_job_spec;
/* Starts a job (or finds the pull of the same ref already running):
 * job_id gets its id (32 hex). */
LLMBOX_MUST_CHECK int lbsb_image_job_start(lbsb_conn *c, const lbsb_image_job_spec *s, char job_id[33], char *errbuf,
                                           size_t errsz);
typedef struct lbsb_image_job_status {
    char state[16];      /* "running", "succeeded", "failed" */
    int exit_code;       /* when ended */
    char *log; size_t log_len;   /* log bytes from the offset asked (caller frees with lbsb_image_job_status_free) */
    int64_t next_offset;
    char error[512];     /* failed: the last sentence the job printed */
} lbsb_image_job_status;
/* The job's state and up to log_max bytes of its log from log_offset.
 * LB_E_NOTFOUND: no such job (or it ended long ago). */
LLMBOX_MUST_CHECK int lbsb_image_job_poll(lbsb_conn *c, const char *job_id, int64_t log_offset, size_t log_max,
                                          lbsb_image_job_status *st, char *errbuf, size_t errsz);
void lbsb_image_job_status_free(lbsb_image_job_status *st);

/* E2B's volumes (the volume request above): req (taken, freed) gets its
 * op; data, when not NULL, goes as its data frame (a write); the answer's
 * data frame (a read) into *rdata, at most rmax bytes (free it). */
struct cJSON;
LLMBOX_MUST_CHECK int lbsb_volume_call(lbsb_conn *c, struct cJSON *req, const void *data, size_t dlen,
                                       struct cJSON **resp, char **rdata, size_t *rlen, size_t rmax, char *errbuf, size_t errsz);
/* Binds volume (its id) at path inside sandbox id (volume_mount above). */
LLMBOX_MUST_CHECK int lbsb_volume_mount(lbsb_conn *c, const char *id, const char *volume, const char *path,
                                        char *errbuf, size_t errsz);

#ifdef __cplusplus
}
#endif
#endif
