/*
 * Processes of sandboxd's own (E2B's protocol): commands started beside the
 * sandbox's shell, each with its own pipes, whose output and exit are
 * pushed as frames to the connections attached to them.
 *
 * A spawner forked by the sandbox's init (as init forks the shell) forks
 * them (sandbox_proc_init.c), so they run with everything the shell runs
 * with: the sandbox's namespaces, cgroup, user, rlimits, capabilities,
 * seccomp filter, no_new_privs, and an oom_score_adj sandboxd set from
 * the host. One exception: a process started as a named user
 * (proc_start's "user", resolved from the sandbox's /etc/passwd and
 * /etc/group: image_user.h) runs without no_new_privs, so that sudo works
 * as on E2B; the seccomp filter holds for it all the same (seccomp.h). sandboxd talks to the spawner over a channel of their own (a
 * SOCK_SEQPACKET pair handed to init on the first start, "PROCSOCK"), so
 * nothing of the shell's control traffic (sandbox_create.c, fdpark.c)
 * sees them:
 *
 *   spawner -> sandboxd "HELLO"                   (first; its host pid comes
 *                                                  with the credentials)
 *   sandboxd -> spawner "START" \0 seq \0 stdin(0|1) \0 cwd \0
 *                      ids ("uid:gid:g1,g2,..." or "": the image's user) \0
 *                      argc \0 argv... \0 env... \0     + 2 or 3 fds
 *                      (stdout, stderr[, stdin]: sandboxd keeps the other ends)
 *                      "KILL <pid> <signal>"      (the process's group, then it)
 *   spawner -> sandboxd "STARTED <seq> <pid>"     (pid inside the sandbox)
 *                      "FAILED <seq> <errno>"     (chdir or exec failed; nothing runs)
 *                      "PEXIT <pid> <wait status>"
 *
 * The sandbox's own code can kill the spawner (it is root of the same
 * user namespace, as for the shell): the channel's end then says so to
 * every stream ("gone"), the processes run on unlisted, and the next start
 * makes a new spawner.
 * It can also stop it (SIGSTOP), or stop a child the spawner waits to see
 * exec: each start, and every LBSD_SPAWNER_CHECK_MS while one is not
 * answered, sends the spawner a SIGCONT from the host, and a start not
 * answered within
 * LBSD_SPAWNER_DEADLINE_MS is answered "busy" and the spawner is killed
 * from the host and replaced, so no start waits without end. While it
 * follows processes it is looked at every LBSD_SPAWNER_IDLE_CHECK_MS and
 * continued if stopped, so their exits are reported.
 *
 * Output: read from the loop, at most LBSD_PROC_READ bytes per read, and
 * queued on each attached connection as an event. Backpressure, not
 * dropping: while any attached connection has more than LBSD_PROC_BACKLOG
 * bytes unsent, the process's pipes are not read, so it blocks in write()
 * as it would on a terminal nobody reads, and sandboxd's memory stays
 * bounded. With nobody attached the output is read and dropped (counted
 * in proc_list's "dropped"), so a process whose client left runs on.
 */
#ifndef LBSD_SANDBOX_PROC_H
#define LBSD_SANDBOX_PROC_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "sandboxd/objects.h"

#define LBSD_PROC_MAX 1024            /* live processes per sandbox (the pids cgroup bounds the rest) */
#define LBSD_PROC_WATCHERS 8          /* connections attached to one process */
#define LBSD_PROC_READ (64u << 10)    /* one read of a pipe: one out event */
#define LBSD_PROC_BACKLOG (256u << 10) /* unsent bytes of a watcher before its process waits */
#define LBSD_PROC_INPUT_MAX (1u << 20) /* stdin bytes queued and not yet taken by the process */
/* stdin bytes sandboxd holds for all the processes of one sandbox: its
 * memory limit / LBSD_PROC_INPUT_SHARE, at least LBSD_PROC_INPUT_MAX and
 * at most LBSD_PROC_INPUT_SB_MAX (root's memory, charged to no cgroup);
 * over it proc_input is refused "busy" and the sender tries again later */
#define LBSD_PROC_INPUT_SHARE 16
#define LBSD_PROC_INPUT_SB_MAX (16u << 20)
/* a start the spawner has not answered: every CHECK_MS the spawner gets a
 * SIGCONT from the host (the sandbox's code may have stopped it; each
 * start sends one too), after DEADLINE_MS the start is answered "busy" and
 * the spawner replaced */
#define LBSD_SPAWNER_CHECK_MS 250
/* while it only follows started processes (their exits), it is looked at
 * this often and continued if stopped */
#define LBSD_SPAWNER_IDLE_CHECK_MS 1000
#define LBSD_SPAWNER_DEADLINE_MS 10000
#define LBSD_PROC_SPEC_MAX (120u << 10) /* argv + env + cwd of one start, bytes */
#define LBSD_PROC_ARGS_MAX 4096       /* argv entries */
#define LBSD_PROC_ENV_MAX 1024        /* env entries */
#define LBSD_PROC_TAG_MAX 256
#define LBSD_PROC_META_MAX (16u << 10) /* the client's opaque note, returned by proc_list */
#define LBSD_PROC_DRAIN_MAX (1u << 20) /* read per stream at the exit, after which the end is sent */

/* Handles proc_start, proc_attach, proc_input, proc_signal and proc_list
 * (include/llmbox/sandbox.h). Any connection of the uid that created the
 * sandbox may use them (the web streams each process on a connection of
 * its own). data: proc_input's data frame. */
void lbsd_proc_request(lbsd_conn *c, const lbsd_req *req, const char *data, size_t dlen);

/* The sandbox of req->id for c: its owner, or a connection of the uid
 * that created it (the 128-bit id is what it must know); NULL after
 * answering notfound, or "sandbox" when its init died. */
lbsd_sandbox *lbsd_proc_sandbox(lbsd_conn *c, const lbsd_req *req);

/* The most stdin bytes sandboxd holds for sb's processes (LBSD_PROC_INPUT_SHARE). */
size_t lbsd_proc_input_cap(const lbsd_sandbox *sb);

/* Deadlines: the spawner's watchdog and the pending port connects. Returns
 * ms until it wants to be called again (-1: no wish). The loop calls it
 * before each poll. */
int lbsd_proc_tick(int64_t now);

/* --- sandbox_port.c --- */
/* port_connect: a TCP connection to 127.0.0.1:port in the sandbox's
 * network namespace, handed to c with the answer, now or (a connect in
 * progress) from the loop when it completes or its deadline passes;
 * meanwhile c is not read. */
void lbsd_port_request(lbsd_conn *c, const lbsd_req *req);
/* The pending connects, for the loop (through lbsd_proc_poll and
 * lbsd_proc_on_ready): how many descriptors, add each, and fd is ready
 * (1 if it was one of theirs). */
size_t lbsd_port_fd_count(void);
void lbsd_port_poll(void (*add)(void *arg, int fd, short events, lbsd_sandbox *sb), void *arg);
int lbsd_port_on_ready(int fd);
/* Answers the connects past their deadline; ms until the next one (-1: none). */
int lbsd_port_tick(int64_t now);
/* sb is going: its pending connects are answered with why. */
void lbsd_port_sandbox_gone(const lbsd_sandbox *sb, const char *why);
/* c is closing: its pending connects are dropped. */
void lbsd_port_conn_closed(const lbsd_conn *c);

/* The sandbox is going (destroy, TTL, lease, shutdown) or its init died:
 * every attached or starting connection gets a "gone" event with why, and
 * the processes are forgotten (they die with the sandbox's pid namespace). */
void lbsd_proc_sandbox_gone(lbsd_sandbox *sb, const char *why);

/* The connection is closing: it is no longer attached to anything. */
void lbsd_proc_conn_closed(lbsd_conn *c);

/* Descriptors the loop polls for processes, at most this many. */
size_t lbsd_proc_fd_count(void);
/* Calls add for every descriptor to poll now (the channels to init, the
 * pipes of processes whose watchers are not over their backlog, stdin
 * pipes with bytes waiting). */
void lbsd_proc_poll(void (*add)(void *arg, int fd, short events, lbsd_sandbox *sb), void *arg);
/* fd of sb is ready (revents). */
void lbsd_proc_on_ready(lbsd_sandbox *sb, int fd, short revents);

/* --- sandbox_proc_init.c (runs in the sandbox's init) --- */
/* The channel arrived ("PROCSOCK" on the control socket): forks the
 * spawner, which takes it (and sock is closed here). */
void lbsd_initproc_spawn(int sock);

#endif
