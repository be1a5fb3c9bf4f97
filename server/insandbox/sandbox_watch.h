/*
 * watchDir for E2B (E2B's protocol): a watcher that runs inside the sandbox.
 *
 * Why inside and not inotify in sandboxd: inotify instances and watches are
 * counted per host uid (fs.inotify.max_user_instances, 128 by default, and
 * max_user_watches); sandboxd is host root, so its watches would share
 * root's budget with the host's own services and every sandbox's, and a
 * recursive watch of a tree the sandbox's code shapes would be host root
 * walking hostile directories. Inside, the watcher is one of sandboxd's own
 * processes (sandbox_proc.h): the spawner forks it like any other, with the
 * sandbox's confinement; its inotify is counted against the sandbox's own
 * uid range (uidslot.h), paths resolve in the sandbox's own root (a
 * symlink cannot lead out of it), and its output is a process's output:
 * pushed on the attached connection, with the same backpressure, and it
 * ends with the sandbox. What it writes is hostile input to the web (the
 * sandbox's code can replace it), parsed with caps (e2b/e2b_watch.c).
 *
 * The spawner runs it instead of an exec for argv {LBSB_WATCH_ARGV0, dir,
 * "0"|"1" (recursive)}. It writes lines on stdout:
 *   "R"            armed: every watch is in place
 *   "<t> <name>"   an event: t is C create, W write, D remove, N rename,
 *                  M chmod (fsnotify's mapping of inotify's events, as
 *                  envd does); name relative to dir, '\\' and newline
 *                  escaped as "\\\\" and "\\n"
 *   "O"            the kernel's queue overflowed: events were lost
 *   "L"            a recursive watch reached LBSB_WATCH_DIRS directories or
 *                  LBSB_WATCH_LEVELS levels
 *   "X"            the watched directory itself was removed or moved away
 * and ends (exit 0) after O, L or X; it exits 2 with a sentence on stderr
 * if dir cannot be watched.
 */
#ifndef LBSD_SANDBOX_WATCH_H
#define LBSD_SANDBOX_WATCH_H

#include "llmbox/sandbox.h"   /* LBSB_WATCH_ARGV0, LBSB_WATCH_DIRS */

/* In the spawner's child, instead of the exec. Never returns. */
__attribute__((noreturn)) void lbsd_watch_main(char *const *argv);

#endif
