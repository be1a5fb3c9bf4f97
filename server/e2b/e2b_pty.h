/*
 * E2B's pty for the SDK's sbx.pty (E2B's protocol): the pieces e2b_process.c
 * uses to run a process on a terminal through sandboxd's pty relay
 * (include/llmbox/sandbox.h LBSB_PTY_ARGV0, server/insandbox/sandbox_pty.h):
 * the size of a StartRequest's or an UpdateRequest's `pty`, the frames the
 * relay reads on its stdin, and whether a running process is on a pty.
 */
#ifndef LB_WEB_E2B_PTY_H
#define LB_WEB_E2B_PTY_H

#include "sbxapi/sandbox_registry.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define LB_E2B_PTY_DIM_MAX 10000   /* cols and rows; the relay's cap too */

/* pty ({size:{cols, rows}}) into *cols and *rows: 0, or -1 when absent,
 * not numbers or out of 1..LB_E2B_PTY_DIM_MAX. */
int lb_e2b_pty_size(const cJSON *pty, int *cols, int *rows);
/* A frame for the relay's stdin: kind 'd' (len bytes of input, at most
 * LBSB_PTY_FRAME_MAX) or 'r' (cols, rows; data ignored). *out is malloc'd.
 * 0, or -1 (too long, out of memory). */
int lb_e2b_pty_frame(char kind, const char *data, size_t len, int cols, int rows, char **out, size_t *outlen);
/* 1 when the running process pid of s is on a pty, 0 when not, -1 when
 * sandboxd could not say (msg then says why). */
int lb_e2b_is_pty(lb_sbx *s, uint32_t pid, char *msg, size_t msgsz);

#endif
