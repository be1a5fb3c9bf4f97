/* The store's own cost per task and per event, on whichever engine the
 * location names (a SQLite file or a postgresql:// URL): bench/store.py
 * builds this against build/'s objects and runs it on both engines in
 * turn. One task's life as an agent writes it: insert, running, K events
 * (a model turn's size), the artifact index, the end. Prints one JSON
 * line: per-event and per-task times (median, p99) in microseconds. */
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: store_bench WHERE TASKS EVENTS_PER_TASK\n");
        return 2;
    }
    int tasks = atoi(argv[2]), per = atoi(argv[3]);
    lb_store *s = NULL;
    if (tasks < 1 || per < 1 || lb_store_open(argv[1], &s) != LB_OK)
        return 1;
    double *ev = calloc((size_t)tasks * (size_t)per, sizeof *ev), *tk = calloc((size_t)tasks, sizeof *tk);
    char data[2048];
    memset(data, 0, sizeof data);
    int k = snprintf(data, sizeof data, "{\"turn\":1,\"content\":\"");
    for (int i = 0; i < 1500; i++)
        data[k++] = 'a' + i % 26;
    snprintf(data + k, sizeof data - (size_t)k, "\",\"tokens\":{\"prompt\":900,\"completion\":40}}");
    lb_artifact art = {.path = "answer.txt", .size = 3, .mime = "text/plain",
                       .sha256 = "2c624232cdd221771294dfbb310aca000a0df6ac8b66b696d90ef06fdefb64a3"};
    int ne = 0;
    for (int t = 0; t < tasks; t++) {
        char id[33];
        if (lb_random_hex(id, sizeof id, 16) != LB_OK)
            return 1;
        double t0 = now_us();
        lb_task_new nt = {.id = id, .prompt = "bench", .model = "m", .max_turns = 10, .inputs_json = "[]"};
        if (lb_store_task_insert(s, &nt) != LB_OK || lb_store_task_set_running(s, id, 1) != LB_OK)
            return 1;
        for (int e = 0; e < per; e++) {
            double e0 = now_us();
            if (lb_store_event_append(s, id, "model", data, NULL) != LB_OK)
                return 1;
            ev[ne++] = now_us() - e0;
        }
        if (lb_store_artifacts_set(s, id, &art, 1) != LB_OK ||
            lb_store_task_end(s, id, LB_TASK_SUCCEEDED, NULL, "ok") != LB_OK)
            return 1;
        tk[t] = now_us() - t0;
    }
    printf("{\"tasks\": %d, \"events_per_task\": %d, \"event_us_p50\": %.0f, \"event_us_p99\": %.0f,"
           " \"task_us_p50\": %.0f, \"task_us_p99\": %.0f}\n",
           tasks, per, pct(ev, ne, 0.5), pct(ev, ne, 0.99), pct(tk, tasks, 0.5), pct(tk, tasks, 0.99));
    free(ev);
    free(tk);
    lb_store_close(s);
    return 0;
}
