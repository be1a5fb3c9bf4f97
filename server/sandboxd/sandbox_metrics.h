/* The metrics request of sandboxd: one sample of a sandbox's CPU time,
 * memory and disk, read from its own cgroup files and its root's
 * filesystem, for E2B's getMetrics (the web keeps the samples). */
#ifndef LB_SANDBOX_METRICS_H
#define LB_SANDBOX_METRICS_H

#include "sandboxd/objects.h"

/* Answers {cpu_usage_us, cpu_count, mem_used, mem_total, mem_cache,
 * disk_used, disk_total}; a counter that cannot be read is left out. */
void lbsd_metrics_request(lbsd_conn *c, lbsd_sandbox *sb);

/* The parsers (tests/fuzz/fuzz_sandbox_metrics.c), over a NUL-terminated
 * buf: the number after "key " at a line's start of a flat-keyed cgroup
 * file, and utime + stime of a /proc/<pid>/stat line. 1 with *v, else 0. */
int lbsd_metrics_keyed(const char *buf, const char *key, uint64_t *v);
int lbsd_metrics_stat_ticks(const char *buf, uint64_t *v);

#endif
