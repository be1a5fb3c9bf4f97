/* In-memory metric series of one process; the contract is metrics.h.
 *
 * A flat array searched linearly: a process holds tens of series (a few
 * routes x statuses, a few tools, a few models), and one lookup per
 * request or tool call is far below anything else those cost. */
#include "common/metrics.h"

#include "common/log.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Model turns: from a fast local server to a long reasoning reply. */
static const double lb_le_model_turn[] = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600};
/* Tool calls: file edits take milliseconds, bash up to its soft timeout
 * (10 s by default) per call, longer when the hard timeout is raised. */
static const double lb_le_tool[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 600};
/* Sandboxes: sub-millisecond from the warm pool, tens of ms made fresh. */
static const double lb_le_sandbox[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};
static const double lb_le_http[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60};

#define LB_N(a) (sizeof a / sizeof a[0])
const lb_hist_def lb_hist_model_turn = {"llmbox_model_turn_duration_seconds", lb_le_model_turn, LB_N(lb_le_model_turn)};
const lb_hist_def lb_hist_tool = {"llmbox_tool_duration_seconds", lb_le_tool, LB_N(lb_le_tool)};
const lb_hist_def lb_hist_sandbox_start = {"llmbox_sandbox_start_duration_seconds", lb_le_sandbox,
                                           LB_N(lb_le_sandbox)};
const lb_hist_def lb_hist_http = {"llmbox_http_request_duration_seconds", lb_le_http, LB_N(lb_le_http)};

struct lb_metrics {
    pthread_mutex_t mu;
    lb_metric_row *rows;
    size_t n, cap;
    int dropped_logged;
};

lb_metrics *lb_metrics_proc(void)
{
    static lb_metrics set = {.mu = PTHREAD_MUTEX_INITIALIZER};
    return &set;
}

void lb_metrics_le_text(double le, char *out, size_t outsz)
{
    if (isinf(le))
        snprintf(out, outsz, "+Inf");
    else
        snprintf(out, outsz, "%g", le);
}

int lb_metrics_label(char *labels, size_t sz, const char *key, const char *value)
{
    char esc[140];
    size_t o = 0;
    const char *v = value ? value : "";
    for (const char *p = v; *p && o + 2 < sizeof esc && p - v < 64; p++) {
        if (*p == '\\' || *p == '"') {
            esc[o++] = '\\';
            esc[o++] = *p;
        } else if (*p == '\n') {
            esc[o++] = '\\';
            esc[o++] = 'n';
        } else {
            esc[o++] = *p;
        }
    }
    esc[o] = '\0';
    size_t len = strlen(labels);
    int k = snprintf(labels + len, sz - len, "%s%s=\"%s\"", len ? "," : "", key, esc);
    if (k < 0 || (size_t)k >= sz - len) {
        labels[len] = '\0';
        return -1;
    }
    return 0;
}

static int lb_copy_field(char *dst, size_t dsz, const char *src)
{
    size_t l = strlen(src);
    if (l >= dsz)
        return -1;
    memcpy(dst, src, l + 1);
    return 0;
}

/* Adds under the lock. */
static void lb_add_locked(lb_metrics *m, const char *name, const char *labels, const char *le, double v)
{
    for (size_t i = 0; i < m->n; i++) {
        lb_metric_row *r = &m->rows[i];
        if (!strcmp(r->name, name) && !strcmp(r->labels, labels) && !strcmp(r->le, le)) {
            r->value += v;
            return;
        }
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 32;
        lb_metric_row *nr = m->n < LB_METRICS_MAX_SERIES ? realloc(m->rows, cap * sizeof *nr) : NULL;
        if (!nr) {
            if (!m->dropped_logged++)
                lb_warn("metrics: %zu series and no room for more; %s{%s} and later new series are not recorded",
                        m->n, name, labels);
            return;
        }
        m->rows = nr;
        m->cap = cap;
    }
    lb_metric_row *r = &m->rows[m->n];
    if (lb_copy_field(r->name, sizeof r->name, name) || lb_copy_field(r->labels, sizeof r->labels, labels) ||
        lb_copy_field(r->le, sizeof r->le, le)) {
        lb_warn("metrics: the series %.80s{%.200s} has too long a name or labels; not recorded", name, labels);
        return;
    }
    r->value = v;
    m->n++;
}

void lb_metrics_add(lb_metrics *m, const char *name, const char *labels, const char *le, double v)
{
    pthread_mutex_lock(&m->mu);
    lb_add_locked(m, name, labels ? labels : "", le ? le : "", v);
    pthread_mutex_unlock(&m->mu);
}

void lb_metrics_observe(lb_metrics *m, const lb_hist_def *h, const char *labels, double v)
{
    if (!(v >= 0)) /* NaN or a clock that went backwards */
        v = 0;
    size_t b = 0;
    while (b < h->n && v > h->le[b])
        b++;
    char le[LB_METRIC_LE_MAX];
    lb_metrics_le_text(b < h->n ? h->le[b] : INFINITY, le, sizeof le);
    pthread_mutex_lock(&m->mu);
    lb_add_locked(m, h->name, labels ? labels : "", le, 1);
    lb_add_locked(m, h->name, labels ? labels : "", "", v);
    pthread_mutex_unlock(&m->mu);
}

int lb_metrics_snapshot(lb_metrics *m, lb_metric_row **rows, size_t *n, int reset)
{
    *rows = NULL;
    *n = 0;
    pthread_mutex_lock(&m->mu);
    int rc = 0;
    if (m->n) {
        lb_metric_row *copy = malloc(m->n * sizeof *copy);
        if (!copy) {
            rc = -1;
        } else {
            memcpy(copy, m->rows, m->n * sizeof *copy);
            *rows = copy;
            *n = m->n;
            if (reset)
                m->n = 0;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}
