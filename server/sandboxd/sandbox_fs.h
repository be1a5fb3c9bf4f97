/*
 * The file requests on a sandbox (sandbox_fs.c): read, write, list, stat,
 * fs_change (E2B's makeDir, rename, remove),
 * each answered on the connection.
 */
#ifndef LBSD_SANDBOX_FS_H
#define LBSD_SANDBOX_FS_H

#include <stddef.h>

#include "sandboxd/objects.h"
#include "sandbox/rpc.h"

void lbsd_fs_read(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req);
void lbsd_fs_write(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, const char *data,
                   size_t len);
void lbsd_fs_list(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req);
void lbsd_fs_stat(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req);
/* E2B's makeDir (mkdir -p), rename (mv -T, one filesystem) and remove
 * (rm -rf), as the sandbox's root, what mkdir makes the request's "user"'s
 * when it names one. */
void lbsd_fs_change(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req);

/* E2B's file metadata: the next user.e2b.<key> name with a well-formed key
 * in names[*at..n) (an llistxattr list: NUL-ended names, the sandbox's to
 * choose); *key points at the key inside names, NUL-ended there. 1 found,
 * 0 at the end. */
int lbsd_fs_meta_next(const char *names, size_t n, size_t *at, const char **key);
/* A key of 1 to LBSB_META_KEY_MAX HTTP token characters; a value of at most
 * LBSB_META_VALUE_MAX printable ASCII bytes. */
int lbsd_fs_meta_key_ok(const char *k, size_t n);
int lbsd_fs_meta_value_ok(const char *v, size_t n);

#endif
