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
LB_MUST_CHECK int lb_unpack(const char *archive_path, lb_archive_kind kind, const char *shown, int root_fd,
                            const char *prefix, const lb_unpack_limits *lim, lb_unpack_totals *tot,
                            lb_unpack_file_cb cb, void *arg, char *err, size_t errsz);

#endif
