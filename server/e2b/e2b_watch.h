/*
 * filesystem.Filesystem/WatchDir for E2B's SDK (sbx.files.watchDir): a
 * stream of {start}, {filesystem:{name, type}} and {keepalive} from a
 * watcher that sandboxd runs inside the sandbox (insandbox/sandbox_watch.h
 * says why there and what it writes).
 */
#ifndef LB_WEB_E2B_WATCH_H
#define LB_WEB_E2B_WATCH_H

#include "web/request.h"
#include "sbxapi/sandbox_registry.h"

#include <stddef.h>

#define LB_E2B_WATCH_LINE_MAX 8300   /* one line of the watcher: 2 x PATH_MAX escaped, and its letter */

/* One line of the watcher (without its newline; hostile: the sandbox's
 * code can replace the watcher). *kind gets its letter; an event's name is
 * unescaped into name. 0, or -1 for a malformed line. */
int lb_e2b_watch_line(const char *line, size_t n, char *kind, char *name, size_t namesz);
/* E2B's EventType name of an event letter (C, W, D, N, M), NULL for another. */
const char *lb_e2b_watch_type(char kind);
/* Whether an event's name ("[dir/]leaf") is the temporary name sandboxd's
 * write renames onto the file (".<leaf>.lbsd-<16 hex>"): 1, and the file's
 * own name ("[dir/]<leaf>") in out; 0 for any other name. */
int lb_e2b_watch_tmp_final(const char *name, char *out, size_t outsz);

/* The WatchDir stream: until the client leaves, its Connect-Timeout-Ms,
 * the directory goes or the sandbox does. */
void lb_e2b_watchdir(lb_req *r, lb_sbx *s);

#endif
