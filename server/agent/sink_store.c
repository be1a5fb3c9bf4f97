/* Event sink for `llmbox agent`: every step goes into the task store,
 * where the web backend streams it to the browser. */
#include "agent/agent.h"
#include "common/log.h"
#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct store_sink {
    lb_store *st;
    char task_id[64];
} store_sink;

static store_sink the_store_sink; /* one task per agent process */

/* The store waits LB_STORE_BUSY_MS (10 s) for a writer that holds the
 * lock; a writer that holds it longer (a backup, an operator's sqlite3
 * shell) must not cost the task its events or its end: the sink waits
 * again, up to this many times. */
#define LB_SINK_BUSY_TRIES 12

static void ev(void *arg, const char *type, const cJSON *data)
{
    store_sink *s = arg;
    char *text = cJSON_PrintUnformatted(data);
    if (!text) {
        lb_error("cannot serialize a %s event", type);
        return;
    }
    int rc = LB_E_TIMEOUT;
    for (int i = 0; i < LB_SINK_BUSY_TRIES && rc == LB_E_TIMEOUT; i++) {
        rc = lb_store_event_append(s->st, s->task_id, type, text, NULL);
        if (rc == LB_E_TIMEOUT)
            lb_warn("the task database stayed locked; still waiting to store a %s event", type);
    }
    if (rc != LB_OK)
        lb_error("cannot store a %s event: %s", type, lb_strerror(rc));
    free(text);
}

static void arts(void *arg, const lb_artifact *a, size_t n)
{
    store_sink *s = arg;
    int rc = lb_store_artifacts_set(s->st, s->task_id, a, n);
    if (rc != LB_OK)
        lb_error("cannot store the artifact index: %s", lb_strerror(rc));
}

static void usage(void *arg, const lb_task_usage *u)
{
    store_sink *s = arg;
    int rc = lb_store_task_set_usage(s->st, s->task_id, u);
    if (rc != LB_OK)
        lb_warn("cannot store usage: %s", lb_strerror(rc));
}

static int fin(void *arg, const char *status, const char *reason, const char *answer)
{
    store_sink *s = arg;
    int rc = LB_E_TIMEOUT;
    for (int i = 0; i < LB_SINK_BUSY_TRIES && rc == LB_E_TIMEOUT; i++) {
        rc = lb_store_task_finish(s->st, s->task_id, status, reason, answer);
        if (rc == LB_E_TIMEOUT)
            lb_warn("the task database stayed locked; still waiting to record the end of task %s", s->task_id);
    }
    if (rc == LB_E_EXISTS) {
        /* the web backend already ended it (e.g. marked it cancelled) */
        lb_info("task %s was already final; keeping that status", s->task_id);
        return LB_OK;
    }
    if (rc != LB_OK)
        lb_error("cannot record the end of task %s: %s", s->task_id, lb_strerror(rc));
    return rc;
}

void lb_sink_store_init(lb_sink *s, lb_store *st, const char *task_id)
{
    memset(s, 0, sizeof *s);
    store_sink *ss = &the_store_sink;
    ss->st = st;
    snprintf(ss->task_id, sizeof ss->task_id, "%s", task_id);
    s->arg = ss;
    s->event = ev;
    s->artifacts = arts;
    s->usage = usage;
    s->finish = fin;
}
