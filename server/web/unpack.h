/* Unpacking uploaded archives (.zip, .tar.gz, .tgz, .tar) into a task's
 * input folder, with libarchive.
 *
 * An archive from a client is hostile. Every entry must be a regular file
 * or a folder whose name is a clean relative path (lb_path_clean_rel: no
 * "..", no leading "/", no backslashes, control characters or bad UTF-8);
 * a symlink, a hard link, a device, a FIFO or a socket refuses the whole
 * archive. Files are created with O_EXCL | O_NOFOLLOW under folders opened
 * one component at a time with O_NOFOLLOW, so nothing is ever written
 * through a link or over an existing file. Permissions and owners in the
 * archive are ignored (files 0640, or 0750 when executable; folders 0750).
 * The entry count, the unpacked bytes (counted as written, not as the
 * headers claim) and the ratio of unpacked bytes to archive bytes are
 * capped, so a zip bomb stops at the cap.
 *
 * Entries under "__MACOSX/" (resource forks added by macOS's archiver) are
 * skipped: they are never what the user meant to upload.
 */
#ifndef LB_WEB_UNPACK_H
#define LB_WEB_UNPACK_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

struct lb_config;
struct lb_req;

#define LB_UNPACK_DEPTH_MAX 24      /* folders below the input root */

typedef enum lb_archive_kind {
    LB_ARCHIVE_NONE = 0,
    LB_ARCHIVE_ZIP,
    LB_ARCHIVE_TAR_GZ,  /* .tar.gz and .tgz */
    LB_ARCHIVE_TAR,
} lb_archive_kind;

typedef struct lb_unpack_limits {
    size_t max_entries;     /* files and folders, all archives of a task */
    uint64_t max_bytes;     /* unpacked bytes, all archives of a task */
    unsigned max_ratio;     /* unpacked bytes per byte of the archive file */
    uint64_t ratio_slack;   /* bytes of an archive unpacked before the ratio counts */
} lb_unpack_limits;

/* Running totals over the archives of one task (zero it before the first). */
typedef struct lb_unpack_totals {
    size_t entries;
    uint64_t bytes;
} lb_unpack_totals;

/* Called once per file written: rel is its path under the input root. A
 * nonzero return stops the unpacking and is returned. */
typedef int (*lb_unpack_file_cb)(void *arg, const char *rel, uint64_t size);

/* The kind of archive a file name says it is (case-insensitive suffix). */
lb_archive_kind lb_archive_kind_of(const char *name);

/* Unpacks archive_path (of the given kind; shown to the user as `shown`)
 * into the folder `prefix` (a clean relative path, or "" for the root) under
 * the directory root_fd. Returns:
 *   LB_OK
 *   LB_E_INVAL   the archive is refused: an unsafe entry, a damaged or
 *                encrypted archive (a 400 for the client)
 *   LB_E_EXISTS  an entry clashes with a file already there (a 400)
 *   LB_E_TOOBIG  a cap was reached (a 413)
 *   LB_E_IO, LB_E_NOMEM  our own failure (a 500)
 * err always gets a sentence for the client. What was written before a
 * failure stays: the caller removes the task folder. */
/* Places for unpacking in a request's thread (work_slots.h): an archive
 * of max_unpack_mb takes a thread for seconds, so one user sending many
 * at once would take every thread. key is "u:" + the user's name, or
 * "a:" + the client address without users (lb_unpack_place_key). LB_OK
 * (give it back with lb_unpack_place_release), LB_E_TOOBIG (the key holds
 * unpack_max_per_user places: a 429) or LB_E_BUSY (unpack_max_running are
 * held: a 503). */
LB_MUST_CHECK int lb_unpack_place_take(const struct lb_config *cfg, const char *key);
void lb_unpack_place_release(const char *key);
/* The place key of r's user or client address, into key (LB_SLOT_KEY_MAX). */
void lb_unpack_place_key(struct lb_req *r, char *key, size_t keysz);
/* The sentence for a refused place (rc of lb_unpack_place_take), and its
 * JSON error code: too_many_unpacks (429) or unpacks_busy (503). */
int lb_unpack_place_refusal(const struct lb_config *cfg, int rc, const char *key, char *msg, size_t msgsz,
                            const char **code);

LB_MUST_CHECK int lb_unpack(const char *archive_path, lb_archive_kind kind, const char *shown, int root_fd,
                            const char *prefix, const lb_unpack_limits *lim, lb_unpack_totals *tot,
                            lb_unpack_file_cb cb, void *arg, char *err, size_t errsz);

#endif
