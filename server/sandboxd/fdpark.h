/* Parking the descriptors of idle sandboxes with their inits.
 *
 * Each live sandbox holds five descriptors in sandboxd: its init's control
 * socket, its root directory and its shell's three pipes. The open-file
 * limit of a process caps the table (RLIMIT_NOFILE, which sandboxd raises
 * towards fs.nr_open where it may; a root without CAP_SYS_RESOURCE keeps
 * the hard limit it was given, 20,000 on the VM of bench/RESULTS.md). So
 * when the table fills, the sandboxes that have been idle longest hand
 * their shell's pipes to their own init (SCM_RIGHTS, "PARK"): sandboxd
 * keeps only the control socket, one descriptor per parked sandbox. (Its
 * root directory is closed too, and reopened when it comes back.)
 *
 * sandboxd closes its own only once init has said where it keeps them
 * ("PARKED <seq> a b c"). The next request that names a parked sandbox
 * takes them back before it runs: sandboxd copies them out of init's
 * table with pidfd_getfd, checks that they are the very pipes it gave
 * (device and inode), reopens the root through /proc/<init>/root, and
 * tells init to drop its copies ("UNPARK"); if init had not answered yet,
 * sandboxd still has its own and only sends the "UNPARK". Nothing waits
 * on init either way: a throttled or frozen sandbox unparks as fast as
 * any other.
 *
 * Parked sandboxes are not polled: their init's messages (a shell that
 * died) wait in the control socket and are read when they come back, and
 * an init that dies is seen by its SIGCHLD.
 *
 * What parking changes for the sandbox: nothing while it is idle, except
 * that output written by a background process while parked waits in the
 * pipe (64 KiB) instead of sandboxd's idle buffer, and a writer that
 * fills it blocks until the sandbox is next used. */
#ifndef LBSD_FDPARK_H
#define LBSD_FDPARK_H

#include <stdint.h>

#include "common/status.h"
#include "sandboxd/objects.h"

#define LBSD_PARK_IDLE_MS 2000   /* never park a sandbox used more recently */
/* Idle sandboxes beyond this many are parked whatever the table: the event
 * loop polls three descriptors of each unparked sandbox in every pass, and
 * a parked one not at all (its init's messages are read when it comes
 * back), so the loop's cost stays bounded with 10,000 sandboxes. */
#define LBSD_PARK_UNPARKED_MAX 512

/* At start: the descriptor budget, from the open-file limit sandboxd got,
 * less what connections (max_conns) and the workers' creates need. */
void lbsd_park_init(int max_conns, int workers);
/* When the unparked sandboxes of list (n in all) fill more than three
 * quarters of the budget, or are more than LBSD_PARK_UNPARKED_MAX, parks
 * idle ones (no command, unused for LBSD_PARK_IDLE_MS; past seven eighths
 * of the budget any without a command) until half the budget and three
 * quarters of that count are left. Returns how many it parked. */
int lbsd_park_relieve(lbsd_sandbox *list, int n, int64_t now);
/* Before any request on sb: brings its descriptors back if parked and
 * marks it used. On failure (init gone, a descriptor that is not what was
 * parked) a sentence in msg; the caller then treats sb as broken. */
LB_MUST_CHECK int lbsd_unpark(lbsd_sandbox *sb, char *msg, size_t msgsz);
/* A control message from init: 1 if it was an answer to a park ("PARKED
 * <seq> a b c": for the current park, sandboxd's copies are closed now),
 * else 0. */
int lbsd_park_note(lbsd_sandbox *sb, const char *msg);
/* Counts every park and unpark: the loop rebuilds what it caches of the
 * unparked sandboxes when this moves. */
unsigned lbsd_park_changes(void);
/* Parked sandboxes now (for ping). */
int lbsd_parked_count(const lbsd_sandbox *list);

#endif
