/*
 * Commands of a sandbox's persistent shell (sandbox_exec.c): start, wait,
 * interrupt, and the capture of their output between sentinels.
 */
#ifndef LBSD_SANDBOX_EXEC_H
#define LBSD_SANDBOX_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "sandboxd/objects.h"
#include "common/status.h"
#include "sandbox/rpc.h"

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

#endif
