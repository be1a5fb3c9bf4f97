/*
 * Host-wide kernel pools a sandbox could drain, and what sandboxd assumes
 * about them (hostlimits.c): the global file table (fs.file-max), the pty
 * pool (kernel.pty.max), the pid space (kernel.pid_max), host memory, and
 * whether sandbox init can be shielded from the OOM killer.
 *
 * The pure functions (budgets, caps) take every input as an argument so the
 * unit tests (tests/unit/test_hostlimits.c) can check them for any host.
 */
#ifndef LLMBOX_SANDBOX_HOSTLIMITS_H
#define LLMBOX_SANDBOX_HOSTLIMITS_H

#include <stdint.h>

#include "common/config.h"

/* Per-sandbox file budget when the operator sets none: at least this many
 * (half by descriptors: a sandbox with the default 512 pids then gets 256
 * open files per process, the soft limit macOS gives every process)... */
#define LBSD_FILES_FLOOR 262144ull
/* ...and at most this fraction (1/8) of fs.file-max, so that one sandbox
 * can never hold more than an eighth of the host's table. */
#define LBSD_FILES_MAX_SHARE 8
/* RLIMIT_NOFILE of a sandbox process is never below this (a process needs
 * its stdio, a few libraries and sockets) nor above this. */
#define LBSD_NOFILE_MIN 64ull
#define LBSD_NOFILE_MAX 65536ull

/* What sandboxd read at start (0 where a file could not be read). */
typedef struct lbsd_host {
    uint64_t file_max;      /* fs.file-max */
    uint64_t nr_open;       /* fs.nr_open: the highest RLIMIT_NOFILE */
    uint64_t map_max;       /* vm.max_map_count: mappings per process */
    uint64_t pty_max;       /* kernel.pty.max */
    uint64_t pty_reserve;   /* kernel.pty.reserve: kept for the host's own devpts */
    uint64_t pid_max;       /* kernel.pid_max */
    uint64_t ram_mib;       /* MemTotal */
    uint64_t nofile_hard;   /* sandboxd's own hard RLIMIT_NOFILE: what init can set */
    uint64_t files_budget;  /* per sandbox: LLMBOX_SANDBOX_FILES, or derived */
    int oom_shield;         /* 1: init gets oom_score_adj -1000; 0: ranked mode */
} lbsd_host;

/* The per-sandbox file budget: configured (> 0) as given, else derived
 * from fs.file-max and the most sandboxes at once: half the table shared
 * out, at least LBSD_FILES_FLOOR, at most file_max / LBSD_FILES_MAX_SHARE
 * (the floor gives way to that on a tiny table). */
uint64_t lbsd_files_budget(uint64_t configured, uint64_t file_max, int sandbox_max);

/* RLIMIT_NOFILE of each process of a sandbox with `pids` processes: half
 * the budget shared out (budget / 2 / pids: the other half is for files
 * held without a descriptor, which filewatch.c counts), within LBSD_NOFILE_MIN..LBSD_NOFILE_MAX and never above
 * hard (what sandboxd may hand out; 0: unknown). */
uint64_t lbsd_nofile_for(uint64_t budget, int pids, uint64_t hard);

/* The most files a sandbox holds through descriptors: pids * nofile
 * (budget / 2, or more where LBSD_NOFILE_MIN rounds up). */
uint64_t lbsd_files_worst(int pids, uint64_t nofile);

/* A sandbox's tmpfs pages (its disk: the writable layer and /tmp; and
 * /dev/shm) are RAM charged to its memory cgroup and cannot be reclaimed
 * (no swap). Were they allowed to fill memory_mib, every new process would
 * be OOM-killed at once: the sandbox could not even start the `rm` that
 * frees them. So they together stay LBSD_HEADROOM_MIB(memory) below it:
 * a full disk answers ENOSPC and the sandbox stays usable. */
#define LBSD_HEADROOM_MIB(mem) ((mem) / 8 > 16 ? (mem) / 8 : 16)
#define LBSD_SHM_MAX_MIB 64
/* /dev/shm's size: a quarter of what the headroom leaves, at most
 * LBSD_SHM_MAX_MIB, at least 1. */
int lbsd_shm_mib(int memory_mib);
/* The disk a sandbox gets: disk_mib, lowered so that disk + /dev/shm +
 * the headroom fit in memory_mib (at least 1). memory_mib <= 0: no memory
 * limit, disk_mib as asked. */
int lbsd_disk_fit(int memory_mib, int disk_mib);

/* Reads the host's values, derives the budgets, probes the OOM shield
 * and logs one line per pool saying what is assumed and the worst case
 * per sandbox and for LLMBOX_SANDBOX_MAX sandboxes, from cfg's sandbox
 * limits. Call once at start. */
void lbsd_host_init(const lb_config *cfg);
const lbsd_host *lbsd_host_get(void);

#endif
