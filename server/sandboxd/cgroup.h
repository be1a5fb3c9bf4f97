/*
 * Per-sandbox cgroups: memory (swap off), pids and cpu limits, OOM-kill
 * counting, and killing a sandbox as a whole.
 *
 * cgroup v2 is used when /sys/fs/cgroup/cgroup.controllers lists memory and
 * pids (cpu when present) and they can be enabled for our base group;
 * otherwise the v1 hierarchies
 * /sys/fs/cgroup/{memory,pids,cpu,freezer}; if neither can be written,
 * sandboxes fall back to rlimits (RLIMIT_AS, RLIMIT_NPROC) and a single
 * warning is logged. Groups are named llmbox-<hash of var dir>/<sandbox id>
 * in each hierarchy; a destroyed sandbox's empty groups wait as
 * llmbox-<hash>/spare-<n> for the next create (lbsd_cg_retire).
 */
#ifndef LBSD_CGROUP_H
#define LBSD_CGROUP_H

#include <stdint.h>
#include <sys/types.h>
#include "common/status.h"

typedef enum { LBSD_CG_RLIMIT = 0, LBSD_CG_V1 = 1, LBSD_CG_V2 = 2 } lbsd_cg_mode;

#define LBSD_CG_PATH 512
#define LBSD_CG_ROOT_MAX 256 /* the cgroup root's path, so that every group path fits */

typedef struct lbsd_cgroup {
    char v2[LBSD_CG_PATH];     /* v2: the group dir */
    char mem[LBSD_CG_PATH];    /* v1: memory group dir ("" if none) */
    char pids[LBSD_CG_PATH];   /* v1: pids group dir ("" if none) */
    char cpu[LBSD_CG_PATH];    /* v1: cpu group dir ("" if none or no CPU limit) */
    char frz[LBSD_CG_PATH];    /* v1: freezer group dir ("" if none) */
    int made;
    uint64_t oom_base;         /* OOM kills the groups had when this sandbox took them */
} lbsd_cgroup;

/* Probes once at startup; later calls return the cached answer. */
lbsd_cg_mode lbsd_cg_detect(void);
/* Tests only: the cgroup filesystem is at root instead of /sys/fs/cgroup
 * (a simulated tree), and the next call probes again. LB_E_INVAL when root
 * is empty or longer than LBSD_CG_ROOT_MAX - 1. */
LB_MUST_CHECK int lbsd_cg_set_root(const char *root);
const char *lbsd_cg_mode_name(lbsd_cg_mode m);

/* Creates the groups for id and sets the limits (cpu_milli: thousandths of
 * a core, 0 = no CPU limit). In rlimit mode does nothing and returns LB_OK. */
LB_MUST_CHECK int lbsd_cg_create(lbsd_cgroup *cg, const char *id, uint64_t mem_bytes, int pids, int cpu_milli);
/* Changes the memory limit of made groups from old_bytes (UINT64_MAX: no
 * limit yet) to bytes, and the pids limit; a pooled sandbox taken with other
 * limits than it was made with. LB_E_IO with errno when the kernel refuses. */
LB_MUST_CHECK int lbsd_cg_set_memory(const lbsd_cgroup *cg, uint64_t old_bytes, uint64_t bytes);
LB_MUST_CHECK int lbsd_cg_set_pids(const lbsd_cgroup *cg, int pids);
/* Moves pid into the groups. */
LB_MUST_CHECK int lbsd_cg_attach(const lbsd_cgroup *cg, pid_t pid);
/* OOM kills in the groups since this sandbox has them (0 when unknown). */
uint64_t lbsd_cg_oom_kills(const lbsd_cgroup *cg);
/* SIGKILLs every process in the groups at once, so that none can fork away
 * meanwhile: v2 cgroup.kill, v1 freeze + kill + thaw. LB_E_IO when there is
 * no such mechanism (the caller falls back to a /proc scan). */
LB_MUST_CHECK int lbsd_cg_kill(const lbsd_cgroup *cg);
/* SIGKILLs whatever one of the groups lists, once, without freezing it
 * (no wait): for a process in the groups that is not in the sandbox's pid
 * namespace, should there ever be one. Returns how many. */
int lbsd_cg_kill_members(const lbsd_cgroup *cg);
/* follow-ups: freezes (on) or thaws the groups: v2 cgroup.freeze, v1
 * freezer.state. LB_E_IO (errno set) without a freezer or when refused.
 * The freezer is asynchronous: lbsd_cg_is_frozen says when it is done. */
LB_MUST_CHECK int lbsd_cg_freeze(const lbsd_cgroup *cg, int on);
/* True when the groups say they are frozen. */
int lbsd_cg_is_frozen(const lbsd_cgroup *cg);
/* Removes the groups (they must be empty; retried briefly). */
LB_MUST_CHECK int lbsd_cg_remove(lbsd_cgroup *cg);
/* Like lbsd_cg_remove, for a sandbox whose processes are all gone (its init
 * reaped): keeps the empty groups as spares (renamed "spare-<n>", at most
 * 64) that the next lbsd_cg_create renames and reuses, else removes them.
 * mem_bytes: the memory limit they have now. cgroup.c says what a spare
 * may carry over and why none of it reaches the next sandbox. */
LB_MUST_CHECK int lbsd_cg_retire(lbsd_cgroup *cg, uint64_t mem_bytes);
/* Startup: kills what is left in llmbox/<anything> and removes the groups. */
void lbsd_cg_cleanup_stale(void);
/* Clean exit: removes the spares and this installation's (empty) base groups. */
void lbsd_cg_shutdown(void);

#endif
