/*
 * The file requests on a sandbox (sandbox_fs.c): read, write, list, stat,
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

#endif
