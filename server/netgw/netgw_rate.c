/* The token buckets; the contract is netgw_rate.h. A take may drive the
 * bucket below zero; the taker then sleeps for the debt at the rate, so
 * that the long-run rate holds whatever the read sizes, and takers on
 * other connections meet the same debt and wait their turn. */
#include "netgw/netgw_rate.h"

#include <pthread.h>
#include <time.h>

static struct {
    pthread_mutex_t mu;
    uint64_t rate;
    uint64_t bytes, max_bytes;
    int spent; /* a count was refused: the next bytes would not fit */
    double tokens[2];
    double last[2];
} r = {.mu = PTHREAD_MUTEX_INITIALIZER};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double burst(uint64_t rate)
{
    double b = (double)rate / 8;
    return b < 16384 ? 16384 : b;
}

void lb_rate_set(uint64_t bytes_per_s)
{
    pthread_mutex_lock(&r.mu);
    if (r.rate != bytes_per_s) {
        r.rate = bytes_per_s;
        for (int d = 0; d < 2; d++) {
            r.tokens[d] = bytes_per_s ? burst(bytes_per_s) : 0;
            r.last[d] = now_s();
        }
    }
    pthread_mutex_unlock(&r.mu);
}

void lb_rate_take(int dir, size_t n)
{
    if (dir != LB_RATE_OUT && dir != LB_RATE_IN)
        return;
    pthread_mutex_lock(&r.mu);
    if (!r.rate) {
        pthread_mutex_unlock(&r.mu);
        return;
    }
    double t = now_s(), rate = (double)r.rate;
    r.tokens[dir] += (t - r.last[dir]) * rate;
    r.last[dir] = t;
    if (r.tokens[dir] > burst(r.rate))
        r.tokens[dir] = burst(r.rate);
    r.tokens[dir] -= (double)n;
    double wait = r.tokens[dir] < 0 ? -r.tokens[dir] / rate : 0;
    pthread_mutex_unlock(&r.mu);
    if (wait > 0) {
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
}

void lb_rate_allowance_set(uint64_t max_bytes)
{
    pthread_mutex_lock(&r.mu);
    if (r.max_bytes != max_bytes)
        r.spent = 0; /* a new policy's allowance: judged afresh */
    r.max_bytes = max_bytes;
    pthread_mutex_unlock(&r.mu);
}

int lb_rate_count(int dir, size_t n)
{
    pthread_mutex_lock(&r.mu);
    int over = r.max_bytes && r.bytes + n > r.max_bytes;
    if (!over)
        r.bytes += n;
    else
        r.spent = 1;
    pthread_mutex_unlock(&r.mu);
    if (over)
        return 0;
    lb_rate_take(dir, n);
    return 1;
}

int lb_rate_spent(void)
{
    pthread_mutex_lock(&r.mu);
    int spent = r.max_bytes && (r.spent || r.bytes >= r.max_bytes);
    pthread_mutex_unlock(&r.mu);
    return spent;
}
