/* Metrics: counters and histograms that a process records in memory.
 *
 * Each process has one set (lb_metrics_proc). The web renders its own set
 * at GET /metrics (HTTP requests); an agent is a short-lived separate
 * process, so it moves what it recorded into the task store from time to
 * time (lb_metrics_take + lb_store_metrics_add), where the web reads it.
 *
 * A series is (name, labels, le):
 *   name    the metric family, e.g. "llmbox_tool_duration_seconds";
 *   labels  the label pairs as they appear between the braces of the
 *           exposition format, already escaped, e.g. tool="bash" ("" none);
 *   le      "" for a counter's value or a histogram's sum; for a histogram
 *           bucket its upper bound ("0.5", "+Inf"). Bucket values here are
 *           NOT cumulative: each counts the observations in (previous bound,
 *           le]; the renderer adds them up and derives _count.
 * Every label value must come from a bounded set (tool names of loaded
 * plugins, configured model names, route classes): never from a client or
 * a model as is.
 */
#ifndef LB_METRICS_H
#define LB_METRICS_H

#include <stddef.h>
#include "status.h"

#define LB_METRIC_NAME_MAX 80
#define LB_METRIC_LABELS_MAX 200
#define LB_METRIC_LE_MAX 24
#define LB_METRICS_MAX_SERIES 2048 /* per process; more are dropped (and logged once) */

typedef struct lb_metric_row {
    char name[LB_METRIC_NAME_MAX];
    char labels[LB_METRIC_LABELS_MAX];
    char le[LB_METRIC_LE_MAX];
    double value;
} lb_metric_row;

/* The bucket bounds of one histogram (ascending; +Inf is implied). */
typedef struct lb_hist_def {
    const char *name;
    const double *le;
    size_t n;
} lb_hist_def;

/* The histograms llmbox records (bounds in seconds). */
extern const lb_hist_def lb_hist_model_turn;     /* one turn's wait for the model */
extern const lb_hist_def lb_hist_tool;           /* one tool call */
extern const lb_hist_def lb_hist_sandbox_start;  /* a task's sandbox, asked to ready */
extern const lb_hist_def lb_hist_http;           /* one HTTP request (not event streams) */

typedef struct lb_metrics lb_metrics;

/* This process's set (created on first use; never freed). */
lb_metrics *lb_metrics_proc(void);

/* Adds v to a series (created at 0). Thread-safe. */
void lb_metrics_add(lb_metrics *m, const char *name, const char *labels, const char *le, double v);
/* One observation of a histogram: +1 in the bucket v falls in, +v to the sum. */
void lb_metrics_observe(lb_metrics *m, const lb_hist_def *h, const char *labels, double v);
/* A copy of every series (*rows malloc'd, caller frees; *n may be 0 with
 * *rows NULL). With reset, the set is emptied in the same step: used to
 * move an agent's increments into the store. Returns 0, or -1 when out of
 * memory (nothing taken). */
LB_MUST_CHECK int lb_metrics_snapshot(lb_metrics *m, lb_metric_row **rows, size_t *n, int reset);

/* Formats a bucket bound the way rows and the exposition spell it
 * ("0.005", "2.5", "600"); +Inf for INFINITY. */
void lb_metrics_le_text(double le, char *out, size_t outsz);
/* Appends key="value" (comma-separated after the first) to labels, the
 * value escaped for the exposition format (\\, \", \n) and cut at 64 bytes.
 * Returns 0, or -1 when it does not fit (labels unchanged). */
LB_MUST_CHECK int lb_metrics_label(char *labels, size_t sz, const char *key, const char *value);

#endif
