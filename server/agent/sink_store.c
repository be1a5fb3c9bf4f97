/* Event sink for `llmbox agent`: every step goes into the task store,
 * where the web backend streams it to the browser. */
#include "agent/sink_store.h"

#include "agent/prompts.h"
#include "agent/sink.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct store_sink {
    lb_store *st;
    char task_id[64];
} store_sink;

static store_sink the_store_sink; /* one task per agent process */
static int lb_fenced_out; /* several nodes: the store refused this agent's claim */

int lb_sink_store_fenced_out(void) { return lb_fenced_out; }

/* Moves what this process recorded (loop.c, model_http.c) into the store,
 * where the web's /metrics reads it. Called once per turn and at the end,
 * so a long task shows up while it runs and a crash loses one turn at
 * most. What could not be written is put back for the next try. */
static void flush_metrics(store_sink *s)
{
    lb_metric_row *rows = NULL;
    size_t n = 0;
    if (lb_metrics_snapshot(lb_metrics_proc(), &rows, &n, 1) != 0 || !n)
        return;
    int rc = lb_store_metrics_add(s->st, rows, n);
    if (rc != LB_OK) {
        lb_warn("task %s: cannot store metrics (kept for the next try): %s", s->task_id, lb_strerror(rc));
        for (size_t i = 0; i < n; i++)
            lb_metrics_add(lb_metrics_proc(), rows[i].name, rows[i].labels, rows[i].le, rows[i].value);
    }
    free(rows);
}

/* One log line per event: what happened, never its contents (prompts,
 * commands and outputs stay in the store and the trajectory). */
static void log_event(const store_sink *s, const char *type, const cJSON *data, int64_t seq)
{
    lb_log_field f[9];
    int n = 0;
    f[n++] = LB_LF_STR("task", s->task_id);
    f[n++] = LB_LF_INT("seq", seq);
    f[n++] = LB_LF_STR("type", type);
    const cJSON *turn = cJSON_GetObjectItemCaseSensitive(data, "turn");
    if (cJSON_IsNumber(turn))
        f[n++] = LB_LF_INT("turn", turn->valueint);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(data, "name");
    if (!strcmp(type, "tool") && cJSON_IsString(name))
        f[n++] = LB_LF_STR("tool", name->valuestring);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(data, "status");
    if (cJSON_IsString(st))
        f[n++] = LB_LF_STR("status", st->valuestring);
    const cJSON *dur = cJSON_GetObjectItemCaseSensitive(data, "duration_ms");
    if (cJSON_IsNumber(dur))
        f[n++] = LB_LF_INT("duration_ms", (long long)dur->valuedouble);
    const cJSON *sbms = cJSON_GetObjectItemCaseSensitive(data, "sandbox_ms");
    if (cJSON_IsNumber(sbms))
        f[n++] = LB_LF_INT("sandbox_ms", (long long)sbms->valuedouble);
    lb_log_fields(LB_LOG_INFO, "event", f, n);
}

/* The store waits LB_STORE_BUSY_MS (10 s) for a writer that holds the
 * lock; a writer that holds it longer (a backup, an operator's sqlite3
 * shell) must not cost the task its events or its end: the sink waits
 * again, up to this many times. */
#define LB_SINK_BUSY_TRIES 12
/* A database server out of reach (PostgreSQL restarting, several nodes): the
 * store answers at once, so the sink waits a second between tries, for up
 * to this many seconds, before the event is reported lost. */
#define LB_SINK_DOWN_TRIES 60

/* 1 when a store call that answered rc is worth another try (the try
 * number i); waits first when the server is out of reach. */
static int store_retry(int rc, int i)
{
    if (rc == LB_E_TIMEOUT)
        return i < LB_SINK_BUSY_TRIES;
    if (rc != LB_E_UNAVAILABLE || i >= LB_SINK_DOWN_TRIES)
        return 0;
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
    return 1;
}

/* Says once, at a write's first unanswered try, that the task waits for
 * its database (what: "store a tool event"): every write, so the log shows
 * the wait whichever write meets the outage first. */
static void say_waiting(int rc, int i, const char *what)
{
    if (rc == LB_E_TIMEOUT || (rc == LB_E_UNAVAILABLE && i == 0))
        lb_warn("the task database %s; still waiting to %s", rc == LB_E_TIMEOUT ? "stayed locked" : "cannot be reached",
                what);
}

static void ev(void *arg, const char *type, const cJSON *data)
{
    store_sink *s = arg;
    char *text = cJSON_PrintUnformatted(data);
    if (!text) {
        lb_error("cannot serialize a %s event", type);
        return;
    }
    int64_t seq = 0, ts = lb_now_ms();
    int rc = LB_OK;
    for (int i = 0;; i++) {
        /* again after an unanswered try: it may have been stored */
        rc = lb_store_event_append_at(s->st, s->task_id, ts, type, text, i > 0 && rc == LB_E_UNAVAILABLE, &seq);
        char what[64];
        snprintf(what, sizeof what, "store a %s event", type);
        say_waiting(rc, i, what);
        if (!store_retry(rc, i + 1))
            break;
    }
    if (rc == LB_E_DENIED) {
        /* several nodes: the store refused this agent's fence (its node lost
         * the lease, or the task was claimed again): the task is no longer
         * this process's to run. SIGTERM takes the agent's own way out
         * (sandbox destroyed, nothing more written). */
        lb_error("task %s: the store refused a %s event: this agent's claim on the task is gone; stopping",
                 s->task_id, type);
        lb_fenced_out = 1;
        kill(getpid(), SIGTERM);
    } else if (rc != LB_OK) {
        lb_error("cannot store a %s event: %s", type, lb_strerror(rc));
    } else {
        log_event(s, type, data, seq);
    }
    free(text);
    if (!strcmp(type, "model"))
        flush_metrics(s);
}

static void arts(void *arg, const lb_artifact *a, size_t n)
{
    store_sink *s = arg;
    int rc;
    for (int i = 0;; i++) {
        rc = lb_store_artifacts_set(s->st, s->task_id, a, n);
        say_waiting(rc, i, "store the artifact index");
        if (!store_retry(rc, i + 1))
            break;
    }
    if (rc != LB_OK)
        lb_error("cannot store the artifact index: %s", lb_strerror(rc));
}

static void usage(void *arg, const lb_task_usage *u)
{
    store_sink *s = arg;
    int rc;
    for (int i = 0;; i++) {
        rc = lb_store_task_set_usage(s->st, s->task_id, u);
        say_waiting(rc, i, "store the usage");
        if (!store_retry(rc, i + 1))
            break;
    }
    if (rc != LB_OK)
        lb_warn("cannot store usage: %s", lb_strerror(rc));
}

static int fin(void *arg, const char *status, const char *reason, const char *answer)
{
    store_sink *s = arg;
    flush_metrics(s); /* before the end is recorded: a scrape that sees the task done sees its turns */
    int rc;
    for (int i = 0;; i++) {
        rc = lb_store_task_end(s->st, s->task_id, lb_task_status_parse(status), reason, answer);
        char what[sizeof s->task_id + 32];
        snprintf(what, sizeof what, "record the end of task %s", s->task_id);
        say_waiting(rc, i, what);
        if (!store_retry(rc, i + 1))
            break;
    }
    if (rc == LB_E_EXISTS) {
        /* the web backend already ended it (e.g. marked it cancelled) */
        lb_info("task %s was already final; keeping that status", s->task_id);
        return LB_OK;
    }
    if (rc != LB_OK) {
        lb_error("cannot record the end of task %s: %s", s->task_id, lb_strerror(rc));
    } else {
        /* the store appended the "done" event in the same transaction */
        lb_log_field f[] = {LB_LF_STR("task", s->task_id), LB_LF_STR("type", "done"), LB_LF_STR("status", status)};
        lb_log_fields(LB_LOG_INFO, "event", f, 3);
    }
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
