/*
 * The warm pool (pool.c): sandboxes made ahead of the creates that will
 * take them.
 */
#ifndef LBSD_POOL_H
#define LBSD_POOL_H

#include <stdint.h>

#include "sandboxd/objects.h"
#include "common/config.h"
#include "sandbox/rpc.h"

/*
 * Ready sandboxes (lbsd_sandbox_make with the daemon's defaults) of the
 * images in LLMBOX_POOL_IMAGES, LLMBOX_POOL_SIZE each, kept outside the
 * global list (no owner, never served). A create whose spec fits takes one;
 * a sandbox taken is its client's and is destroyed after, never returned. */
void lbsd_pool_init(const lb_config *cfg);
/* A ready sandbox for req, or NULL (counted as a miss, or as "other" when
 * the spec cannot come from the pool). The memory and pids limits of req
 * are applied on the way out. The caller sets owner and links it. */
lbsd_sandbox *lbsd_pool_take(const lbsd_req *req);
/* ms until the pool wants a refill (0: now), -1: nothing to do.
 * room: how many more sandboxes the daemon may hold at all. */
int lbsd_pool_refill_due(int64_t now, int room);
/* The next refill: fills req (image, defaults) and returns the index to
 * hand to lbsd_pool_refill_done, or -1 when no image is due. A worker
 * makes the sandbox (lbsd_sandbox_make), so the loop never waits for it. */
int lbsd_pool_refill_begin(lbsd_req *req);
/* A refill's outcome: sb (rc LB_OK) joins the pool, or the image backs off
 * and msg is logged. sb is retired instead when the image was rebuilt
 * meanwhile. */
void lbsd_pool_refill_done(int idx, lbsd_sandbox *sb, int rc, const char *msg);
/* SIGCHLD: 1 if pid was a pooled sandbox's init or helper (then handled). */
int lbsd_pool_child_exited(pid_t pid);
int lbsd_pool_ready(void);
/* {"size","ready","hits","misses","other","images":[{"image","size","ready"}]} */
cJSON *lbsd_pool_json(void);
/* Destroys every pooled sandbox. */
void lbsd_pool_shutdown(void);

#endif
