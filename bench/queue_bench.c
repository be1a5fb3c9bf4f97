/* The queue's claim, measured (several nodes, bench/queue.py drives it):
 *
 *   queue_bench WHERE fill N           N queued, claimable tasks
 *   queue_bench WHERE claim NODE B     registers NODE, claims B at a time
 *                                      until the queue stays empty; one
 *                                      JSON line: claimed, calls, seconds,
 *                                      per-call latency p50/p99 (µs)
 *
 * WHERE: a SQLite file or a postgresql:// URL, as db_url. */
#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t lb_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int fill(lb_store *s, int n)
{
    for (int i = 0; i < n; i++) {
        char id[33];
        if (lb_random_hex(id, sizeof id, 16) != LB_OK)
            return 1;
        lb_task_new t = {.id = id, .prompt = "bench", .model = "m", .max_turns = 1, .options_json = "{\"mode\":\"llm\"}"};
        if (lb_store_task_insert(s, &t) != LB_OK || lb_store_queue_push(s, id) != LB_OK) {
            fprintf(stderr, "queue_bench: cannot queue task %d\n", i);
            return 1;
        }
    }
    return 0;
}

static int claim(lb_store *s, const char *node, int batch)
{
    lb_node_lease l;
    if (lb_store_node_renew(s, node, lb_now_ms(), 60000, batch, &l) != LB_OK) {
        fprintf(stderr, "queue_bench: cannot register %s\n", node);
        return 1;
    }
    free(l.left);
    size_t cap = 1 << 16, calls = 0;
    int64_t *lat = malloc(cap * sizeof *lat);
    lb_claim *c = malloc((size_t)batch * sizeof *c);
    if (!lat || !c)
        return 1;
    long claimed = 0;
    int empty = 0;
    int64_t t0 = lb_mono_us();
    while (empty < 2 && calls < cap) {
        size_t n = 0;
        int64_t a = lb_mono_us();
        if (lb_store_queue_claim(s, node, batch, c, &n) != LB_OK) {
            fprintf(stderr, "queue_bench: claim failed\n");
            return 1;
        }
        lat[calls++] = lb_mono_us() - a;
        claimed += (long)n;
        empty = n ? 0 : empty + 1;
    }
    double secs = (double)(lb_mono_us() - t0) / 1e6;
    qsort(lat, calls, sizeof *lat, cmp64);
    printf("{\"node\":\"%s\",\"claimed\":%ld,\"calls\":%zu,\"seconds\":%.4f,\"p50_us\":%lld,\"p99_us\":%lld}\n", node,
           claimed, calls, secs, (long long)lat[calls / 2], (long long)lat[calls * 99 / 100]);
    free(lat);
    free(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: queue_bench WHERE fill N | WHERE claim NODE BATCH\n");
        return 2;
    }
    lb_store *s = NULL;
    if (lb_store_open(argv[1], &s) != LB_OK) {
        fprintf(stderr, "queue_bench: cannot open %s\n", argv[1]);
        return 1;
    }
    int rc = !strcmp(argv[2], "fill") ? fill(s, atoi(argv[3]))
             : !strcmp(argv[2], "claim") && argc == 5 ? claim(s, argv[3], atoi(argv[4]))
                                                      : 2;
    lb_store_close(s);
    return rc;
}
