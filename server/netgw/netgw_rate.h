/* A sandbox's bandwidth, enforced by its gateway (netgw_rate.c): one
 * token bucket per direction for the whole gateway process, so every
 * connection of the sandbox draws from the same bytes per second, and a
 * sandbox at its limit waits in its own gateway, never in another's. */
#ifndef LB_NETGW_RATE_H
#define LB_NETGW_RATE_H

#include <stddef.h>
#include <stdint.h>

enum { LB_RATE_OUT = 0, LB_RATE_IN = 1 };

/* Bytes per second each way; 0: no limit. Callable at any time (a policy
 * change); the burst is an eighth of a second's bytes, at least 16 KiB. */
void lb_rate_set(uint64_t bytes_per_s);

/* The sandbox's byte allowance, both ways together; 0: none. */
void lb_rate_allowance_set(uint64_t max_bytes);

/* Counts n bytes against the allowance and takes them from dir's bucket
 * (below). 1, or 0 when the allowance is spent (nothing taken). */
int lb_rate_count(int dir, size_t n);

/* 1 once the allowance is spent (a count refused, or nothing left). */
int lb_rate_spent(void);

/* Takes n bytes from direction dir's bucket, sleeping until they are
 * there (a debt paid by waiting: a big read waits in proportion). */
void lb_rate_take(int dir, size_t n);

#endif
