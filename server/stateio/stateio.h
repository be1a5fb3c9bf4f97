/*
 * build/llmbox-stateio: packs and unpacks a sandbox's writable state
 * (follow-ups). sandboxd (root, linking no archive library) starts it for one
 * save or one restore, already inside the sandbox's user namespace as that
 * namespace's root (a host uid of the sandbox's own range, never host
 * root), with no_new_privs, and hands it only file descriptors:
 *
 *   fd 0  the state file: save writes it, restore reads it
 *   fd 1  one line of JSON for sandboxd: {"files":N,"skipped":N}
 *   fd 2  on failure, one sentence for the client
 *   fd 3  save: the overlay's upper directory (what the sandbox wrote)
 *   fd 4  the sandbox's merged root ("/" as the sandbox sees it)
 *
 * A state is a pax tar, zstd-compressed, of entries under "layer/": the
 * upper layer's directories, files and symlinks, with overlay's deletions
 * in the OCI image layer form (".wh.<name>" for a deleted <name>,
 * ".wh..wh..opq" for a directory that hides the image's contents).
 * Restore applies it through the merged root with the sandbox's own
 * rights, so it can do nothing the sandbox itself could not: every path is
 * resolved beneath that root, through no symlink and across no mount
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV).
 *
 * The first entry, "meta/image", names the image the sandbox ran: a state
 * restores only into a sandbox of the same image (a state without it, as
 * older ones, into any).
 *
 * Exit status: 0 done; 2 over a cap (sandboxd answers "toobig"); 3 a
 * damaged or hostile state (restore: "invalid"); 4 a state of another
 * image (restore: "invalid", naming it); 1 anything else.
 */
#ifndef LB_STATEIO_H
#define LB_STATEIO_H

#include <stdint.h>

#define LBST_EXIT_OK 0
#define LBST_EXIT_ERROR 1
#define LBST_EXIT_TOOBIG 2
#define LBST_EXIT_DAMAGED 3
#define LBST_EXIT_IMAGE 4
#define LBST_IMAGE_MAX 255  /* image names and references (sandbox/rpc.h LBSD_IMAGE_REF_MAX) */

#define LBST_FD_STATE 0
#define LBST_FD_RESULT 1
#define LBST_FD_MSG 2
#define LBST_FD_UPPER 3
#define LBST_FD_ROOT 4

#define LBST_PATH_MAX 4096   /* one entry's path, bytes (PATH_MAX) */
#define LBST_DEPTH_MAX 128   /* folders within folders: each level holds an fd while walked */

typedef struct lbst_caps {
    uint64_t max_bytes;      /* save: the compressed state; restore: the files' sizes together */
    uint64_t max_entries;    /* entries of one state */
    const char *image;       /* the sandbox's image: saved in "meta/image", checked on restore */
} lbst_caps;

/* Each returns an exit status above and has written the sentence to fd 2. */
int lbst_save(const lbst_caps *caps);
int lbst_restore(const lbst_caps *caps);

/* Writes "fmt ..." as the one sentence on fd 2 and returns code. */
int lbst_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* openat2 of path beneath dirfd: no symlink, no magic link, no other mount. */
int lbst_open_beneath(int dirfd, const char *path, int flags, int mode);

#endif
