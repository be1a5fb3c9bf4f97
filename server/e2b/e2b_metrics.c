/* The samples behind E2B's getMetrics (the contract is e2b_metrics.h).
 *
 * A thread takes one sample of every running, unpaused API sandbox every
 * LB_MET_EVERY_MS through its own sandboxd connection, only when nothing
 * else runs on it (trylock: a sample is never worth delaying a client's
 * call); a busy sandbox skips that tick. Each sandbox keeps its last
 * LB_MET_RING samples (E2B keeps them for the sandbox's life; llmbox only
 * the last ten minutes); a sandbox that left the table loses its ring at
 * the next tick. CPU use is the CPU time the sandbox's processes took
 * between two samples over the time between them, per CPU it may use, as
 * E2B's cpuUsedPct. */
#include "e2b/e2b_metrics.h"

#include "common/log.h"
#include "common/util.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_entry.h"
#include "common/node_id.h"
#include "llmbox/sandbox.h"
#include "sbxapi/sandbox_node.h"
#include "sbxapi/sandbox_owner.h"
#include "web/http.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LB_MET_EVERY_MS 5000
#define LB_MET_RING 120          /* ten minutes of samples */
#define LB_MET_TABLE 4096        /* sandboxes with a ring (sandbox_api_max is at most 4096) */

typedef struct lb_met_sample {
    int64_t at_ms;               /* wall clock */
    double cpu_pct, mem_used, mem_total, mem_cache, disk_used, disk_total;
    int cpu_count;
} lb_met_sample;

typedef struct lb_met_ring {
    char id[LB_NODE_ID_MAX + 1];
    lb_met_sample s[LB_MET_RING];
    int n, head;                 /* head: where the next sample goes */
    double last_cpu_us;          /* -1: none yet */
    int64_t last_mono;
    int seen;                    /* in the table at the last tick */
} lb_met_ring;

static pthread_mutex_t lb_met_mu = PTHREAD_MUTEX_INITIALIZER;
static lb_met_ring *lb_met_tab[LB_MET_TABLE];
static pthread_once_t lb_met_once = PTHREAD_ONCE_INIT;

/* The ring of id (made when make), under lb_met_mu; NULL if none or full. */
static lb_met_ring *lb_met_find_locked(const char *id, int make)
{
    int free_at = -1;
    for (int i = 0; i < LB_MET_TABLE; i++) {
        if (lb_met_tab[i] && !strcmp(lb_met_tab[i]->id, id))
            return lb_met_tab[i];
        if (!lb_met_tab[i] && free_at < 0)
            free_at = i;
    }
    if (!make || free_at < 0)
        return NULL;
    lb_met_ring *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    snprintf(g->id, sizeof g->id, "%s", id);
    g->last_cpu_us = -1;
    lb_met_tab[free_at] = g;
    return g;
}

/* One sample of s into its ring; 0 when s was busy or could not answer. */
static int lb_met_sample_one(lb_sbx *s, int wait)
{
    if (lb_sbx_state_of(s, NULL, 0) != LB_SBX_RUNNING || lb_sbx_is_paused(s))
        return 0;
    if (wait ? pthread_mutex_lock(&s->op_mu) : pthread_mutex_trylock(&s->op_mu))
        return 0;
    lbsb_metrics m;
    char err[256];
    int rc = s->conn && s->sbx_id[0] ? lbsb_metrics_get(s->conn, s->sbx_id, &m, err, sizeof err) : LB_E_NOTFOUND;
    pthread_mutex_unlock(&s->op_mu);
    if (rc != LB_OK)
        return 0;
    int64_t mono = lb_mono_ms();
    pthread_mutex_lock(&lb_met_mu);
    lb_met_ring *g = lb_met_find_locked(s->id, 1);
    if (g) {
        lb_met_sample *x = &g->s[g->head];
        memset(x, 0, sizeof *x);
        x->at_ms = lb_now_ms();
        x->cpu_count = m.cpu_count;
        double dt_us = (double)(mono - g->last_mono) * 1000.0;
        if (g->last_cpu_us >= 0 && m.cpu_usage_us >= g->last_cpu_us && dt_us > 0) {
            x->cpu_pct = (m.cpu_usage_us - g->last_cpu_us) / (dt_us * (m.cpu_count > 0 ? m.cpu_count : 1)) * 100.0;
            if (x->cpu_pct > 100.0)
                x->cpu_pct = 100.0;
        }
        g->last_cpu_us = m.cpu_usage_us;
        g->last_mono = mono;
        x->mem_used = m.mem_used < 0 ? 0 : m.mem_used;
        x->mem_total = m.mem_total < 0 ? 0 : m.mem_total;
        x->mem_cache = m.mem_cache < 0 ? 0 : m.mem_cache;
        x->disk_used = m.disk_used < 0 ? 0 : m.disk_used;
        x->disk_total = m.disk_total < 0 ? 0 : m.disk_total;
        g->head = (g->head + 1) % LB_MET_RING;
        if (g->n < LB_MET_RING)
            g->n++;
    }
    pthread_mutex_unlock(&lb_met_mu);
    return g != NULL;
}

static void *lb_met_thread(void *arg)
{
    (void)arg;
    static char ids[LB_MET_TABLE][LB_NODE_ID_MAX + 1];
    for (;;) {
        usleep(LB_MET_EVERY_MS * 1000);
        int n = lb_sbx_running_api_ids(ids, LB_MET_TABLE);
        for (int i = 0; i < n; i++) {
            lb_sbx *s = lb_sbx_get(ids[i], NULL, 0);
            if (!s)
                continue;
            lb_met_sample_one(s, 0); /* a busy one is sampled at a later tick */
            lb_sbx_put(s);
        }
        /* forget the rings of sandboxes that left the table */
        pthread_mutex_lock(&lb_met_mu);
        for (int t = 0; t < LB_MET_TABLE; t++) {
            int keep = 0;
            for (int i = 0; lb_met_tab[t] && i < n && !keep; i++)
                keep = !strcmp(lb_met_tab[t]->id, ids[i]);
            if (lb_met_tab[t] && !keep) {
                free(lb_met_tab[t]);
                lb_met_tab[t] = NULL;
            }
        }
        pthread_mutex_unlock(&lb_met_mu);
    }
    return NULL;
}

static void lb_met_start_once(void)
{
    if (lb_thread_detached(lb_met_thread, NULL) != 0)
        lb_warn("web: e2b: cannot start the metrics sampler; getMetrics answers one sample per call");
}

void lb_e2b_metrics_start(void)
{
    pthread_once(&lb_met_once, lb_met_start_once);
}

/* E2B's SandboxMetric of x into e: 1, or 0 out of memory. */
static int lb_met_json(cJSON *e, const lb_met_sample *x)
{
    char when[64];
    long long sec = (long long)(x->at_ms / 1000);
    return lb_e2b_rfc3339(x->at_ms / 1000, (uint32_t)(x->at_ms % 1000) * 1000000u, when, sizeof when) == 0 &&
           cJSON_AddStringToObject(e, "timestamp", when) && cJSON_AddNumberToObject(e, "timestampUnix", (double)sec) &&
           cJSON_AddNumberToObject(e, "cpuUsedPct", x->cpu_pct) && cJSON_AddNumberToObject(e, "cpuCount", x->cpu_count) &&
           cJSON_AddNumberToObject(e, "memUsed", x->mem_used) && cJSON_AddNumberToObject(e, "memTotal", x->mem_total) &&
           cJSON_AddNumberToObject(e, "memCache", x->mem_cache) &&
           cJSON_AddNumberToObject(e, "diskUsed", x->disk_used) && cJSON_AddNumberToObject(e, "diskTotal", x->disk_total);
}

/* Answers out (consumed) with 200, or 500 when building it ran out of memory (!ok). */
static void lb_met_answer(lb_req *r, cJSON *out, int ok)
{
    if (ok)
        lb_http_json(r, 200, out, NULL);
    else
        lb_e2b_error_json(r, 500, NULL, "Out of memory.");
    cJSON_Delete(out);
}

/* A query's unix seconds (start, end) into *out; 0 when absent, -1 when
 * malformed. */
static int lb_met_query_s(lb_req *r, const char *key, long long *out)
{
    char v[32];
    int q = lb_query_get(r->query, key, v, sizeof v);
    if (q == LB_E_NOTFOUND)
        return 0;
    return q == LB_OK && lb_parse_ll(v, 0, 1LL << 40, out) == LB_OK ? 1 : -1;
}

void lb_e2b_metrics(lb_req *r, lb_sbx *s)
{
    long long start = 0, end = 1LL << 40;
    lb_http_drain(r);
    if (lb_met_query_s(r, "start", &start) < 0 || lb_met_query_s(r, "end", &end) < 0) {
        lb_e2b_error_json(r, 400, NULL, "Bad query: start and end are unix times in seconds.");
        return;
    }
    pthread_mutex_lock(&lb_met_mu);
    int have = lb_met_find_locked(s->id, 0) != NULL;
    pthread_mutex_unlock(&lb_met_mu);
    if (!have) /* none yet (a fresh sandbox, or a busy one): one now, waiting for its connection */
        lb_met_sample_one(s, 1);
    cJSON *out = cJSON_CreateArray();
    int ok = out != NULL;
    pthread_mutex_lock(&lb_met_mu);
    lb_met_ring *g = lb_met_find_locked(s->id, 0);
    for (int k = 0; ok && g && k < g->n; k++) {
        const lb_met_sample *x = &g->s[(g->head - g->n + k + LB_MET_RING) % LB_MET_RING];
        long long sec = (long long)(x->at_ms / 1000);
        if (sec < start || sec > end)
            continue;
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddItemToArray(out, e) && lb_met_json(e, x);
    }
    pthread_mutex_unlock(&lb_met_mu);
    lb_met_answer(r, out, ok);
}

/* ---- GET /sandboxes/metrics?sandbox_ids=a,b (E2B's SandboxesWithMetrics) ---- */

/* The newest sample of sandbox id into o's "sandboxes" under its id, when
 * r's key sees it, it is this node's, running and has one (a sandbox with
 * no sample yet is sampled now if its connection is free, never waited
 * for: one busy sandbox must not hold an answer about a hundred). */
static int lb_met_add_newest(lb_req *r, cJSON *o, const char *id)
{
    char msg[256], node[LB_NODE_ID_NAME_MAX + 1];
    if (!lb_sbx_owner_sees(r, id) || !lb_sbx_id_mine(r->cfg->node_name, id, node, sizeof node))
        return 1; /* another key's or another node's: as absent */
    lb_sbx *s = lb_sbx_get(id, msg, sizeof msg);
    if (!s)
        return 1;
    pthread_mutex_lock(&lb_met_mu);
    int have = lb_met_find_locked(s->id, 0) != NULL;
    pthread_mutex_unlock(&lb_met_mu);
    if (!have)
        lb_met_sample_one(s, 0);
    int running = lb_sbx_state_of(s, NULL, 0) == LB_SBX_RUNNING && !lb_sbx_is_paused(s); /* E2B: running ones */
    lb_sbx_put(s);
    if (!running)
        return 1;
    int ok = 1;
    pthread_mutex_lock(&lb_met_mu);
    lb_met_ring *g = lb_met_find_locked(id, 0);
    if (g && g->n > 0) {
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddItemToObject(o, id, e) && lb_met_json(e, &g->s[(g->head + LB_MET_RING - 1) % LB_MET_RING]);
    }
    pthread_mutex_unlock(&lb_met_mu);
    return ok;
}

void lb_e2b_metrics_many(lb_req *r)
{
    /* ids and commas, and room to see one id too many */
    char q[(LB_NODE_ID_MAX + 1) * (LB_E2B_METRICS_IDS_MAX + 1) + 1];
    char ids[LB_E2B_METRICS_IDS_MAX][LB_NODE_ID_MAX + 1];
    char too_many[80];
    int n = 0;
    snprintf(too_many, sizeof too_many, "Too many sandboxes requested, maximum is %d.", LB_E2B_METRICS_IDS_MAX);
    lb_http_drain(r);
    if (strcmp(r->method, "GET")) {
        lb_e2b_error_json(r, 405, NULL, "Use GET on /sandboxes/metrics.");
        return;
    }
    int qr = lb_query_get(r->query, "sandbox_ids", q, sizeof q);
    if (qr == LB_E_NOTFOUND || (qr == LB_OK && !q[0])) {
        lb_e2b_error_json(r, 400, NULL, "sandbox_ids is required: a comma-separated list of sandbox ids.");
        return;
    }
    if (qr != LB_OK) {
        lb_e2b_error_json(r, 400, NULL, too_many);
        return;
    }
    for (char *p = q, *comma; p; p = comma ? comma + 1 : NULL) {
        comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (n == LB_E2B_METRICS_IDS_MAX) {
            lb_e2b_error_json(r, 400, NULL, too_many);
            return;
        }
        size_t pl = strlen(p);
        if (pl > LB_NODE_ID_MAX || !lb_node_id_valid(p)) {
            lb_e2b_error_json(r, 400, NULL, "Invalid sandbox ID: sandbox ids are 32 lowercase hexadecimal characters, "
                              "prefixed with the node's name and a dot in a cluster.");
            return;
        }
        int dup = 0;
        for (int i = 0; i < n && !dup; i++)
            dup = !strcmp(ids[i], p);
        if (!dup)
            memcpy(ids[n++], p, pl + 1);
    }
    cJSON *out = cJSON_CreateObject();
    cJSON *o = out ? cJSON_AddObjectToObject(out, "sandboxes") : NULL;
    int ok = o != NULL;
    for (int i = 0; ok && i < n; i++)
        ok = lb_met_add_newest(r, o, ids[i]);
    lb_met_answer(r, out, ok);
}
