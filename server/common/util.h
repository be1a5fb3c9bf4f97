/* Small OS helpers used everywhere. All return lb_status codes. */
#ifndef LB_UTIL_H
#define LB_UTIL_H
#include <stddef.h>
#include <stdint.h>
#include "status.h"

#define LB_ID_HEX_LEN 32 /* 128-bit ids as lowercase hex */

/* Fills out with 2*nbytes hex chars + NUL from getrandom(). outsz >= 2*nbytes+1. */
LB_MUST_CHECK int lb_random_hex(char *out, size_t outsz, size_t nbytes);
/* The whole of s as a decimal integer in [lo, hi] (leading blanks and a
 * sign allowed, as strtoll takes them; nothing after): LB_E_INVAL
 * otherwise (empty, junk, overflow, out of range), *out untouched. What
 * atoi/atol would be if they could fail (docs/STYLE.md, banned functions). */
LB_MUST_CHECK int lb_parse_ll(const char *s, long long lo, long long hi, long long *out);
/* True when s is exactly LB_ID_HEX_LEN lowercase hex chars. */
int lb_id_valid(const char *s);

int64_t lb_now_ms(void);          /* CLOCK_REALTIME, milliseconds */
int64_t lb_mono_ms(void);         /* CLOCK_MONOTONIC, milliseconds */

/* Writes data to path atomically: path.tmp.<rand> then fsync + rename. */
LB_MUST_CHECK int lb_write_file_atomic(const char *path, const void *data, size_t len, int mode);
/* The same without the fsync: readers never see a partial file, but a
 * crash of the host may leave the old content, none, or an empty file.
 * Only for files whose meaning does not outlive the host (a sandbox's
 * record: sandbox_leases.c). */
LB_MUST_CHECK int lb_write_file_replace(const char *path, const void *data, size_t len, int mode);
/* Reads at most max bytes; LB_E_TOOBIG if the file is larger. *data is
 * NUL-terminated, caller frees. */
LB_MUST_CHECK int lb_read_file(const char *path, size_t max, char **data, size_t *len);
/* mkdir -p with mode for every created component. */
LB_MUST_CHECK int lb_mkdirs(const char *path, int mode);
/* rm -rf that never follows symlinks and never crosses mount points. */
LB_MUST_CHECK int lb_rmtree(const char *path);
/* Writes a sentence for a person into msg (the "char *msg, size_t msgsz"
 * of a failing call); a NULL msg or a size of 0 writes nothing. */
void lb_say(char *msg, size_t msgsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Starts fn(arg) on a detached thread (a stack of 256 KiB: the service's
 * helper threads loop on small work): LB_OK or LB_E_NOMEM. */
LB_MUST_CHECK int lb_thread_detached(void *(*fn)(void *), void *arg);
/* Reads/writes everything, retrying on EINTR and short counts. */
LB_MUST_CHECK int lb_write_all(int fd, const void *p, size_t n);
/* Raises RLIMIT_NOFILE's soft limit to need (and the hard one when it is
 * lower and we may: root); returns the soft limit we end up with. */
unsigned long long lb_raise_nofile(unsigned long long need);
LB_MUST_CHECK int lb_read_full(int fd, void *p, size_t n); /* LB_E_IO on EOF before n */
/* Field k (0-based) of the ':'-separated line [s, e) (an /etc/passwd or
 * /etc/group line) as [*fs, *fe); 0 when the line has fewer fields. */
int lb_colon_field(const char *s, const char *e, int k, const char **fs, const char **fe);
/* Drops root to user name (setgroups, setgid, setuid); no-op when not root. */
LB_MUST_CHECK int lb_drop_privileges(const char *user);
/* Frees a secret's text (NULL: nothing), its bytes wiped first with
 * explicit_bzero (a memset before free is a dead store a compiler may drop). */
void lb_free_wiped(char *s);

#endif
