/*
 * A sandbox's birth and death on the host side (sandbox_create.c): make,
 * fill its input, start its shell, talk to its init, kill and destroy; the
 * child side is insandbox/sandbox_init.c.
 */
#ifndef LBSD_SANDBOX_CREATE_H
#define LBSD_SANDBOX_CREATE_H

#include <sys/types.h>

#include "sandboxd/objects.h"
#include "common/config.h"
#include "common/status.h"
#include "sandbox/rpc.h"

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

/* Fills sb->gone_why, if still empty, with why the sandbox broke: its
 * init was OOM-killed (the memory cgroup counted a kill), or it died. */
void lbsd_note_gone(lbsd_sandbox *sb);

#endif
