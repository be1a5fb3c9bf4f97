/*
 * A create's input dir copied into the new sandbox (input_copy.c).
 */
#ifndef LBSD_INPUT_COPY_H
#define LBSD_INPUT_COPY_H

#include <stddef.h>
#include <sys/types.h>

#include "common/status.h"

/* Copies regular files and directories of src (a host path, checked with the
 * peer's uid/gid) into the directory dstfd; what it creates belongs to
 * owner (the sandbox's root on the host). Never follows symlinks inside
 * src; skips them and special files. */
LB_MUST_CHECK int lbsd_copy_input(const char *src, int dstfd, uid_t uid, gid_t gid, uid_t owner, char *msg,
                    size_t msgsz);

#endif
