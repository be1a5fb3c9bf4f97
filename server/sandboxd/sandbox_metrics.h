/* The metrics request of sandboxd: one sample of a sandbox's CPU time,
 * memory and disk, read from its own cgroup files and its root's
 * filesystem, for E2B's getMetrics (the web keeps the samples). */
#ifndef LB_SANDBOX_METRICS_H
#define LB_SANDBOX_METRICS_H

#include "sandboxd/sandboxd.h"

/* Answers {cpu_usage_us, cpu_count, mem_used, mem_total, mem_cache,
 * disk_used, disk_total}; a counter that cannot be read is left out. */
void lbsd_metrics_request(lbsd_conn *c, lbsd_sandbox *sb);

#endif
