/* GET /metrics: the Prometheus text exposition format, version 0.0.4.
 *
 * Three sources, read at each scrape:
 *   - the task store: tasks per state (a gauge, counted now), the task
 *     counters its triggers keep, and what agents recorded (model turns,
 *     tool calls, sandbox starts, model errors) — agents are separate
 *     processes and move their counts there (agent/sink_store.c);
 *   - this process: HTTP requests (access.c);
 *   - sandboxd's ping (cached 3 s): sandboxes alive, the warm pool.
 * Families are listed below, in the order they are written; a series of
 * the store that no family here names (written by a newer agent) is left
 * out rather than sent without HELP and TYPE.
 */
#include "front/handlers_metrics.h"

#include "front/handlers_info.h"
#include "web/http.h"
#include "web/spawn.h"
#include "store/store.h"
#include "common/buf.h"
#include "common/config.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status.h"
#include "entry.h"
#include "sbxapi/sandbox_registry.h"

#include <cjson/cJSON.h>
#include <fcgiapp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_METRICS_BODY_MAX (8u << 20)

typedef struct lb_family {
    const char *name;
    const char *type;               /* "counter", "gauge", "histogram" */
    const char *help;
    const lb_hist_def *hist;        /* histograms: the bucket bounds */
    const char *const *zero;        /* label sets always written (0 until counted), NULL-ended */
} lb_family;

static const char *const lb_zero_none[] = {"", NULL};
static const char *const lb_zero_final[] = {"status=\"succeeded\"", "status=\"failed\"", "status=\"cancelled\"",
                                            NULL};

/* The families kept as series (store and memory). */
static const lb_family lb_families[] = {
    {"llmbox_tasks_created_total", "counter", "Tasks created (POST /api/tasks and Run again).", NULL, lb_zero_none},
    {"llmbox_tasks_finished_total", "counter", "Tasks that reached a final status, by that status.", NULL,
     lb_zero_final},
    {"llmbox_model_turn_duration_seconds", "histogram",
     "Time an agent waited for the model's reply in one turn (retries and their waits included), by model.",
     &lb_hist_model_turn, NULL},
    {"llmbox_model_errors_total", "counter",
     "Failed model requests by model and kind (http_429, http_5xx, http_4xx, http_other, timeout, connection, "
     "bad_reply, context_length, auth); each retried attempt counts.",
     NULL, NULL},
    {"llmbox_tool_duration_seconds", "histogram",
     "Time of one tool call, by tool (bash: the command in the sandbox; unknown: a name no enabled tool has).",
     &lb_hist_tool, NULL},
    {"llmbox_sandbox_start_duration_seconds", "histogram",
     "Time from asking sandboxd for a task's sandbox to having it (from the warm pool or made).",
     &lb_hist_sandbox_start, NULL},
    {"llmbox_http_requests_total", "counter",
     "HTTP requests answered by the backend since it started, by route class, method and status.", NULL, NULL},
    {"llmbox_http_request_duration_seconds", "histogram",
     "Time to answer an HTTP request in the backend, by route class (event streams not included).", &lb_hist_http,
     NULL},
};
#define LB_N_FAMILIES (sizeof lb_families / sizeof lb_families[0])

static int lb_row_cmp(const void *a, const void *b)
{
    const lb_metric_row *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (!c)
        c = strcmp(x->labels, y->labels);
    if (!c)
        c = strcmp(x->le, y->le);
    return c;
}

/* A sample value: integers as integers, the rest with 15 significant
 * digits (a float's sum of seconds needs no more). */
static void lb_num(char *out, size_t outsz, double v)
{
    if (isnan(v))
        snprintf(out, outsz, "NaN");
    else if (isinf(v))
        snprintf(out, outsz, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(out, outsz, "%.0f", v);
    else
        snprintf(out, outsz, "%.15g", v);
}

/* Set when a line did not fit the body's cap: the scrape then fails
 * whole rather than send a cut exposition. One request per thread. */
static _Thread_local int lb_body_full;

static void lb_head(lb_buf *b, const char *name, const char *type, const char *help)
{
    if (lb_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type) != LB_OK)
        lb_body_full = 1;
}

static void lb_sample(lb_buf *b, const char *name, const char *labels, double v)
{
    char num[64];
    lb_num(num, sizeof num, v);
    int rc = labels && *labels ? lb_buf_printf(b, "%s{%s} %s\n", name, labels, num)
                               : lb_buf_printf(b, "%s %s\n", name, num);
    if (rc != LB_OK)
        lb_body_full = 1;
}

/* Which bucket of h a stored bound falls in (n: +Inf). A bound that is not
 * one of h's (the bounds changed between versions) goes to the first
 * bucket that contains it, so the counts stay whole. */
static size_t lb_bucket_of(const lb_hist_def *h, const char *le)
{
    if (!strcmp(le, "+Inf"))
        return h->n;
    char *end;
    double d = strtod(le, &end);
    if (end == le || *end)
        return h->n;
    for (size_t i = 0; i < h->n; i++) {
        char t[LB_METRIC_LE_MAX];
        lb_metrics_le_text(h->le[i], t, sizeof t);
        if (!strcmp(t, le) || h->le[i] >= d)
            return i;
    }
    return h->n;
}

/* Writes one histogram series: rows[0..n) share name and labels. */
static void lb_histogram(lb_buf *b, const lb_family *f, const char *labels, const lb_metric_row *rows, size_t n)
{
    const lb_hist_def *h = f->hist;
    double counts[64] = {0}, sum = 0;
    if (h->n + 1 > sizeof counts / sizeof counts[0])
        return;
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].le[0])
            sum += rows[i].value;
        else
            counts[lb_bucket_of(h, rows[i].le)] += rows[i].value;
    }
    char name[LB_METRIC_NAME_MAX + 16], lab[LB_METRIC_LABELS_MAX + 40], le[LB_METRIC_LE_MAX];
    double cum = 0;
    snprintf(name, sizeof name, "%s_bucket", f->name);
    for (size_t i = 0; i <= h->n; i++) {
        cum += counts[i];
        lb_metrics_le_text(i < h->n ? h->le[i] : INFINITY, le, sizeof le);
        snprintf(lab, sizeof lab, "%s%sle=\"%s\"", labels, *labels ? "," : "", le);
        lb_sample(b, name, lab, cum);
    }
    snprintf(name, sizeof name, "%s_sum", f->name);
    lb_sample(b, name, labels, sum);
    snprintf(name, sizeof name, "%s_count", f->name);
    lb_sample(b, name, labels, cum);
}

/* Writes every family of lb_families from rows (sorted by lb_row_cmp). */
static void lb_families_write(lb_buf *b, const lb_metric_row *rows, size_t n)
{
    for (size_t fi = 0; fi < LB_N_FAMILIES; fi++) {
        const lb_family *f = &lb_families[fi];
        lb_head(b, f->name, f->type, f->help);
        size_t i = 0;
        while (i < n && strcmp(rows[i].name, f->name) < 0)
            i++;
        while (i < n && !strcmp(rows[i].name, f->name)) {
            size_t j = i;
            while (j < n && !strcmp(rows[j].name, f->name) && !strcmp(rows[j].labels, rows[i].labels))
                j++;
            if (f->hist) {
                lb_histogram(b, f, rows[i].labels, rows + i, j - i);
            } else {
                double v = 0;
                for (size_t k = i; k < j; k++)
                    if (!rows[k].le[0])
                        v += rows[k].value;
                lb_sample(b, f->name, rows[i].labels, v);
            }
            i = j;
        }
    }
}

/* Store rows + this process's rows + zero rows of the families that always
 * show their label sets, sorted. *out malloc'd. */
static int lb_rows_gather(lb_store *s, lb_metric_row **out, size_t *nout, int *store_ok)
{
    lb_metric_row *st = NULL, *mem = NULL, *all = NULL;
    size_t nst = 0, nmem = 0, nzero = 0;
    *out = NULL;
    *nout = 0;
    int rc = lb_store_metrics_all(s, &st, &nst);
    *store_ok = rc == LB_OK;
    if (rc != LB_OK) {
        lb_warn("web: /metrics: cannot read the metrics of the task store: %s", lb_strerror(rc));
        nst = 0;
    }
    if (lb_metrics_snapshot(lb_metrics_proc(), &mem, &nmem, 0) != 0) {
        free(st);
        return LB_E_NOMEM;
    }
    for (size_t fi = 0; fi < LB_N_FAMILIES; fi++)
        for (size_t k = 0; lb_families[fi].zero && lb_families[fi].zero[k]; k++)
            nzero++;
    size_t n = nst + nmem + nzero;
    all = malloc((n ? n : 1) * sizeof *all);
    if (!all) {
        free(st);
        free(mem);
        return LB_E_NOMEM;
    }
    if (nst)
        memcpy(all, st, nst * sizeof *all);
    if (nmem)
        memcpy(all + nst, mem, nmem * sizeof *all);
    size_t z = nst + nmem;
    for (size_t fi = 0; fi < LB_N_FAMILIES; fi++) {
        for (size_t k = 0; lb_families[fi].zero && lb_families[fi].zero[k]; k++, z++) {
            memset(&all[z], 0, sizeof all[z]);
            snprintf(all[z].name, sizeof all[z].name, "%s", lb_families[fi].name);
            snprintf(all[z].labels, sizeof all[z].labels, "%s", lb_families[fi].zero[k]);
        }
    }
    free(st);
    free(mem);
    qsort(all, n, sizeof *all, lb_row_cmp);
    *out = all;
    *nout = n;
    return LB_OK;
}

/* Gauges read now: tasks per state, agents, the sandbox API, sandboxd. */
static void lb_gauges_write(const lb_config *cfg, lb_buf *b, lb_store *s, int store_ok)
{
    char labels[LB_METRIC_LABELS_MAX];

    int64_t counts[LB_STORE_N_STATUS];
    if (store_ok && lb_store_task_counts(s, counts) == LB_OK) {
        lb_head(b, "llmbox_tasks", "gauge", "Tasks in the store now, by state (deleted tasks are not counted).");
        for (int i = 0; i < LB_STORE_N_STATUS; i++) {
            labels[0] = '\0';
            LB_IGNORE(lb_metrics_label(labels, sizeof labels, "state", lb_store_status_names[i])); /* bounded names fit; one that does not is left out */
            lb_sample(b, "llmbox_tasks", labels, (double)counts[i]);
        }
    } else {
        store_ok = 0;
    }
    lb_head(b, "llmbox_store_up", "gauge", "1 when this scrape could read the task store.");
    lb_sample(b, "llmbox_store_up", "", store_ok);

    lb_head(b, "llmbox_agents_running", "gauge", "Agent processes this web backend runs now (one per running task).");
    lb_sample(b, "llmbox_agents_running", "", lb_spawn_running());
    lb_head(b, "llmbox_tasks_max", "gauge", "Tasks that may run at once (max_tasks); more get 429.");
    lb_sample(b, "llmbox_tasks_max", "", cfg->max_concurrent_tasks);
    lb_head(b, "llmbox_sandbox_api_sandboxes", "gauge", "Sandboxes of the sandbox API (/api/sandboxes) alive now.");
    lb_sample(b, "llmbox_sandbox_api_sandboxes", "", lb_sbx_count());

    cJSON *sb = lb_sandboxd_info(cfg);
    int up = sb && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sb, "ok"));
    lb_head(b, "llmbox_sandboxd_up", "gauge", "1 when sandboxd answered its ping (cached up to 3 s).");
    lb_sample(b, "llmbox_sandboxd_up", "", up);
    if (up) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(sb, "sandboxes");
        lb_head(b, "llmbox_sandboxes_alive", "gauge",
                "Sandboxes in use in sandboxd (tasks' and the sandbox API's; the warm pool's not counted).");
        lb_sample(b, "llmbox_sandboxes_alive", "", cJSON_IsNumber(n) ? n->valuedouble : 0);
        const cJSON *pool = cJSON_GetObjectItemCaseSensitive(sb, "pool");
        static const struct {
            const char *key, *name, *type, *help;
        } pf[] = {
            {"size", "llmbox_pool_size", "gauge", "Ready sandboxes the warm pool aims to keep (all pooled images)."},
            {"ready", "llmbox_pool_ready", "gauge", "Ready sandboxes in the warm pool now."},
            {"hits", "llmbox_pool_hits_total", "counter", "Creates served from the warm pool since sandboxd started."},
            {"misses", "llmbox_pool_misses_total", "counter",
             "Creates the pool could have served but found empty, since sandboxd started."},
            {"other", "llmbox_pool_other_total", "counter",
             "Creates the pool cannot serve (another image, CPU or disk quota), since sandboxd started."},
        };
        for (size_t i = 0; cJSON_IsObject(pool) && i < sizeof pf / sizeof pf[0]; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(pool, pf[i].key);
            lb_head(b, pf[i].name, pf[i].type, pf[i].help);
            lb_sample(b, pf[i].name, "", cJSON_IsNumber(v) ? v->valuedouble : 0);
        }
    }
    cJSON_Delete(sb);

    lb_head(b, "llmbox_build_info", "gauge", "Always 1; the version of the llmbox that answers.");
    labels[0] = '\0';
    LB_IGNORE(lb_metrics_label(labels, sizeof labels, "version", LLMBOX_VERSION)); /* bounded names fit; one that does not is left out */
    lb_sample(b, "llmbox_build_info", labels, 1);
}

void lb_h_metrics(lb_req *r)
{
    lb_buf b;
    lb_buf_init(&b, LB_METRICS_BODY_MAX);
    lb_body_full = 0;
    lb_metric_row *rows = NULL;
    size_t n = 0;
    int store_ok = 0;
    if (lb_rows_gather(r->store, &rows, &n, &store_ok) != LB_OK) {
        lb_buf_free(&b);
        lb_http_error(r, 500, NULL, "Out of memory while gathering the metrics.");
        return;
    }
    lb_families_write(&b, rows, n);
    free(rows);
    lb_gauges_write(r->cfg, &b, r->store, store_ok);
    if (!b.data || lb_body_full) {
        lb_buf_free(&b);
        lb_http_error(r, 500, NULL, "The metrics do not fit in %u MiB.", LB_METRICS_BODY_MAX >> 20);
        return;
    }
    lb_http_head(r, 200, "text/plain; version=0.0.4; charset=utf-8", NULL);
    if (!r->is_head)
        FCGX_PutStr(b.data, (int)b.len, r->fcgi->out);
    lb_buf_free(&b);
}
