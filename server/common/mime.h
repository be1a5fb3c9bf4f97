/* File facts for artifacts: MIME type (libmagic) and SHA-256 (libcrypto). */
#ifndef LB_MIME_H
#define LB_MIME_H
#include <stddef.h>
#include "status.h"

/* MIME type of the regular file at path, e.g. "image/png". Uses one libmagic
 * handle per thread. Text types that libmagic cannot tell apart by content
 * (css, js, csv, svg, md, json) are refined from the file name extension.
 * Never follows a symlink. Falls back to "application/octet-stream". */
LB_MUST_CHECK int lb_mime_of_file(const char *path, char *out, size_t outsz);
/* Loads and warms a libmagic handle on a helper thread, for the next
 * lb_mime_of_file to take over: an agent calls it at the start of a task so
 * that typing its outputs at the end does not wait ~5 ms for libmagic's
 * first use. Optional; safe to call more than once. */
void lb_mime_preload(void);
/* Makes and warms a handle on the calling thread and keeps it for the
 * first lb_mime_of_file (lb_mime_preload then starts no thread), and makes
 * libcrypto's first SHA-256: for a single-threaded process that forks
 * workers (the agent zygote), whose children each inherit both warm
 * instead of paying ~5 ms each. */
void lb_mime_warm_here(void);
/* Closes this thread's handle and a preloaded one nobody took (a task that
 * ended before its outputs were collected): the end of a task. A handle
 * made by lb_mime_warm_here before a fork is kept, not freed (freeing
 * would copy its pages from the parent; the forked process ends soon). */
void lb_mime_release(void);
/* Lowercase hex SHA-256 of the file into out (65 bytes). */
LB_MUST_CHECK int lb_sha256_file(const char *path, char out[65]);
/* True for types a browser may run script in (html, svg, xml). */
int lb_mime_is_active(const char *mime);

#endif
