/* The summary of an evaluation (summary.h). */
#include "eval/summary.h"
#include "common/buf.h"
#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MD_MAX ((size_t)16 << 20) /* summary.md: a table row per domain, domains are few */

enum { M_LLM = 0, M_SANDBOX = 1, M__COUNT };
static const char *const MODE_NAMES[M__COUNT] = {"llm", "sandbox"};

/* The paper's domain order (Table 1). */
static const char *const PAPER_ORDER[] = {"math", "physics", "chem", "biomed", "long_context", "instruct_follow"};

typedef struct acc {
    double row_sum;       /* Σ over rows of the row's mean score */
    long long rows, runs, errors, failed, skipped;
    double prompt, completion, env, traj, model_ms, tool_ms, wall_ms;
    long long cap[LB_CAP__COUNT], cap_turns, cap_rows;
    /* runs with a network record: how many, how many by pattern and by
     * traffic used something outside, and their connections */
    long long net_rows, net_by_pattern, net_by_traffic, net_conns;
} acc;

typedef struct ctx {
    const lb_eval_result *v;
    const char **domains; /* unique, in the summary's order */
    size_t ndomains;
} ctx;

static int mode_of(const lb_eval_result *r)
{
    if (!r->mode)
        return -1;
    for (int m = 0; m < M__COUNT; m++)
        if (!strcmp(r->mode, MODE_NAMES[m]))
            return m;
    return -1;
}

static const char *dom(const lb_eval_result *r)
{
    return r->domain ? r->domain : "";
}

static int paper_rank(const char *d)
{
    for (size_t i = 0; i < sizeof PAPER_ORDER / sizeof PAPER_ORDER[0]; i++)
        if (!strcmp(d, PAPER_ORDER[i]))
            return (int)i;
    return (int)(sizeof PAPER_ORDER / sizeof PAPER_ORDER[0]);
}

static int cmp_domain(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    int rx = paper_rank(x), ry = paper_rank(y);
    return rx != ry ? rx - ry : strcmp(x, y);
}

/* Index of d in c->domains (sorted by cmp_domain). */
static size_t domain_index(const ctx *c, const char *d)
{
    const char **hit = bsearch(&d, c->domains, c->ndomains, sizeof *c->domains, cmp_domain);
    LB_ASSERT(hit);
    return (size_t)(hit - c->domains);
}

static int cmp_run(const void *a, const void *b, void *arg)
{
    const lb_eval_result *v = arg;
    const lb_eval_result *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];
    int mx = mode_of(x), my = mode_of(y);
    if (mx != my)
        return mx - my;
    int d = strcmp(dom(x), dom(y));
    if (d)
        return d;
    return strcmp(x->id ? x->id : "", y->id ? y->id : "");
}

static double run_score(const lb_eval_result *r)
{
    if (r->status && (!strcmp(r->status, "error") || !strcmp(r->status, "failed")))
        return 0;
    return r->score >= 0 && r->score <= 1 ? r->score : 0;
}

static void add_run(acc *a, const lb_eval_result *r)
{
    a->runs++;
    a->errors += r->status && !strcmp(r->status, "error");
    a->failed += r->status && !strcmp(r->status, "failed");
    a->prompt += (double)r->prompt_tokens;
    a->completion += (double)r->completion_tokens;
    a->env += (double)r->env_tokens;
    a->traj += (double)(r->context_tokens > 0 ? r->context_tokens : r->prompt_tokens + r->completion_tokens);
    a->model_ms += (double)r->model_ms;
    a->tool_ms += (double)r->tool_ms;
    /* T_total of Table 6 is the run's wall time; a line without one (an
     * old or imported line) counts its model and tool time instead */
    a->wall_ms += r->wall_ms > 0 ? (double)r->wall_ms : (double)(r->model_ms + r->tool_ms);
    if (lb_eval_result_has_capabilities(r)) {
        a->cap[LB_CAP_EXTERNAL] += r->capabilities.external;
        a->cap[LB_CAP_FILE] += r->capabilities.file;
        a->cap[LB_CAP_COMPUTE] += r->capabilities.compute;
        a->cap_turns += r->capabilities.turns;
        a->cap_rows++;
        if (r->capabilities.traffic) {
            a->net_rows++;
            a->net_by_pattern += r->capabilities.external > 0;
            a->net_by_traffic += r->capabilities.external_conns > 0;
            a->net_conns += r->capabilities.external_conns;
        }
    }
}

static double round4(double x)
{
    double s = x * 10000.0;
    if (s > 9e15 || s < -9e15)
        return x;
    return (double)(long long)(s + (s >= 0 ? 0.5 : -0.5)) / 10000.0;
}

/* Adds k: x / y rounded, or null when y is 0. */
static int add_ratio(cJSON *o, const char *k, double x, double y)
{
    if (y <= 0)
        return cJSON_AddNullToObject(o, k) != NULL;
    return cJSON_AddNumberToObject(o, k, round4(x / y)) != NULL;
}

static cJSON *mode_json(const acc *a)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    double runs = (double)a->runs;
    int ok = add_ratio(o, "accuracy", 100.0 * a->row_sum, (double)a->rows) &&
             cJSON_AddNumberToObject(o, "n", (double)a->rows) && cJSON_AddNumberToObject(o, "runs", runs) &&
             cJSON_AddNumberToObject(o, "errors", (double)a->errors) &&
             cJSON_AddNumberToObject(o, "failed", (double)a->failed) &&
             cJSON_AddNumberToObject(o, "skipped", (double)a->skipped) &&
             add_ratio(o, "tokens_per_query", a->traj, runs) &&
             add_ratio(o, "prompt_tokens_per_query", a->prompt, runs) &&
             add_ratio(o, "completion_tokens_per_query", a->completion, runs) &&
             add_ratio(o, "env_tokens_per_query", a->env, runs) && add_ratio(o, "env_token_share", a->env, a->traj) &&
             add_ratio(o, "exec_time_share", a->tool_ms, a->wall_ms);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *caps_json(const acc *a)
{
    if (!a->cap_rows)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    double t = (double)a->cap_turns;
    if (o && add_ratio(o, "external", (double)a->cap[LB_CAP_EXTERNAL], t) &&
        add_ratio(o, "file", (double)a->cap[LB_CAP_FILE], t) &&
        add_ratio(o, "compute", (double)a->cap[LB_CAP_COMPUTE], t) && cJSON_AddNumberToObject(o, "turns", t) &&
        cJSON_AddNumberToObject(o, "rows", (double)a->cap_rows) &&
        (!a->net_rows ||
         (cJSON_AddNumberToObject(o, "traffic_rows", (double)a->net_rows) &&
          add_ratio(o, "external_runs_by_pattern", (double)a->net_by_pattern, (double)a->net_rows) &&
          add_ratio(o, "external_runs_by_traffic", (double)a->net_by_traffic, (double)a->net_rows) &&
          cJSON_AddNumberToObject(o, "external_connections", (double)a->net_conns))))
        return o;
    cJSON_Delete(o);
    return NULL;
}

static int present(const acc *a)
{
    return a->runs > 0 || a->skipped > 0;
}

/* GROUP of summary.h from one domain's (or the overall) accumulators. */
static cJSON *group_json(const acc m[M__COUNT])
{
    cJSON *g = cJSON_CreateObject();
    if (!g)
        return NULL;
    int ok = 1;
    for (int k = 0; ok && k < M__COUNT; k++)
        if (present(&m[k])) {
            cJSON *mj = mode_json(&m[k]);
            ok = mj && cJSON_AddItemToObject(g, MODE_NAMES[k], mj);
        }
    const acc *l = &m[M_LLM], *s = &m[M_SANDBOX];
    if (ok && l->rows && s->rows)
        ok = cJSON_AddNumberToObject(g, "delta",
                                     round4(100.0 * s->row_sum / (double)s->rows - 100.0 * l->row_sum / (double)l->rows))
             != NULL;
    else if (ok)
        ok = cJSON_AddNullToObject(g, "delta") != NULL;
    if (ok)
        ok = add_ratio(g, "token_ratio", s->traj, s->runs ? l->traj : 0);
    if (ok) {
        cJSON *c = caps_json(s);
        ok = c && cJSON_AddItemToObject(g, "capabilities", c);
    }
    if (!ok) {
        cJSON_Delete(g);
        return NULL;
    }
    return g;
}

static int collect_domains(ctx *c, size_t n)
{
    c->domains = malloc((n ? n : 1) * sizeof *c->domains);
    if (!c->domains)
        return LB_E_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (mode_of(&c->v[i]) >= 0)
            c->domains[k++] = dom(&c->v[i]);
    qsort(c->domains, k, sizeof *c->domains, cmp_domain);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || strcmp(c->domains[u - 1], c->domains[i]))
            c->domains[u++] = c->domains[i];
    c->ndomains = u;
    return LB_OK;
}

cJSON *lb_eval_summary(const lb_eval_result *v, size_t n, double wall_s_llm, double wall_s_sandbox)
{
    ctx c = {v, NULL, 0};
    acc *per = NULL, all[M__COUNT];
    size_t *ix = NULL;
    cJSON *out = NULL;
    memset(all, 0, sizeof all);
    if (collect_domains(&c, n) != LB_OK)
        goto fail;
    per = calloc(c.ndomains ? c.ndomains * M__COUNT : 1, sizeof *per);
    ix = malloc((n ? n : 1) * sizeof *ix);
    if (!per || !ix)
        goto fail;
    size_t k = 0;
    int max_repeat = -1;
    for (size_t i = 0; i < n; i++) {
        int m = mode_of(&v[i]);
        if (m < 0)
            continue; /* not a mode of ours: nothing to put it under */
        acc *a = &per[domain_index(&c, dom(&v[i])) * M__COUNT + m];
        if (v[i].status && !strcmp(v[i].status, "skipped")) {
            a->skipped++;
            all[m].skipped++;
            continue;
        }
        if (v[i].repeat > max_repeat)
            max_repeat = v[i].repeat;
        add_run(a, &v[i]);
        add_run(&all[m], &v[i]);
        ix[k++] = i;
    }
    /* each row's mean over its repeats, then into its domain and overall */
    qsort_r(ix, k, sizeof *ix, cmp_run, (void *)v);
    for (size_t i = 0; i < k;) {
        size_t j = i;
        double sum = 0;
        while (j < k && cmp_run(&ix[i], &ix[j], (void *)v) == 0)
            sum += run_score(&v[ix[j++]]);
        const lb_eval_result *r = &v[ix[i]];
        int m = mode_of(r);
        acc *a = &per[domain_index(&c, dom(r)) * M__COUNT + m];
        a->row_sum += sum / (double)(j - i);
        a->rows++;
        all[m].row_sum += sum / (double)(j - i);
        all[m].rows++;
        i = j;
    }
    out = cJSON_CreateObject();
    cJSON *modes = out ? cJSON_AddArrayToObject(out, "modes") : NULL;
    if (!modes)
        goto fail;
    for (int m = 0; m < M__COUNT; m++)
        if (present(&all[m]) && !cJSON_AddItemToArray(modes, cJSON_CreateString(MODE_NAMES[m])))
            goto fail;
    if (!cJSON_AddNumberToObject(out, "repeats", max_repeat + 1))
        goto fail;
    cJSON *doms = cJSON_AddObjectToObject(out, "domains");
    if (!doms)
        goto fail;
    for (size_t d = 0; d < c.ndomains; d++) {
        cJSON *g = group_json(&per[d * M__COUNT]);
        if (!g || !cJSON_AddItemToObject(doms, c.domains[d], g)) {
            cJSON_Delete(g);
            goto fail;
        }
    }
    cJSON *ov = group_json(all);
    if (!ov || !cJSON_AddItemToObject(out, "overall", ov)) {
        cJSON_Delete(ov);
        goto fail;
    }
    const acc *l = &all[M_LLM], *s = &all[M_SANDBOX];
    cJSON *tok = cJSON_AddObjectToObject(out, "tokens");
    cJSON *qpm = NULL;
    cJSON *caps = NULL;
    /* Table 5 counts a query's trajectory (prompt + generated +
     * environment tokens, each once), not the sum over its requests,
     * which counts the growing context again at every turn */
    int ok = tok && add_ratio(tok, "llm_per_query", l->traj, (double)l->runs) &&
             add_ratio(tok, "sandbox_per_query", s->traj, (double)s->runs) &&
             add_ratio(tok, "ratio", s->traj, s->runs ? l->traj : 0) &&
             add_ratio(out, "env_token_share", s->env, s->traj) &&
             add_ratio(out, "exec_time_share", s->tool_ms, s->wall_ms) &&
             (qpm = cJSON_AddObjectToObject(out, "qpm")) != NULL &&
             add_ratio(qpm, "llm", l->runs ? (double)l->runs * 60.0 : 0, wall_s_llm) &&
             add_ratio(qpm, "sandbox", s->runs ? (double)s->runs * 60.0 : 0, wall_s_sandbox);
    if (ok) {
        double ql = wall_s_llm > 0 ? (double)l->runs * 60.0 / wall_s_llm : 0;
        double qs = wall_s_sandbox > 0 ? (double)s->runs * 60.0 / wall_s_sandbox : 0;
        ok = add_ratio(qpm, "ratio", qs, qs > 0 ? ql : 0) && (caps = caps_json(s)) != NULL &&
             cJSON_AddItemToObject(out, "capabilities", caps);
    }
    if (!ok)
        goto fail;
    free(c.domains);
    free(per);
    free(ix);
    return out;
fail:
    cJSON_Delete(out);
    free(c.domains);
    free(per);
    free(ix);
    return NULL;
}

/* ---- summary.md --------------------------------------------------------- */

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* A number as text with the given decimals, "–" when missing or null. */
static void fmt_num(char *out, size_t sz, const cJSON *v, int decimals, const char *suffix)
{
    if (!cJSON_IsNumber(v))
        snprintf(out, sz, "–");
    else
        snprintf(out, sz, "%.*f%s", decimals, v->valuedouble, suffix);
}

/* A domain name for a table cell: `|` and line breaks would break the row. */
static int cell(lb_buf *b, const char *s)
{
    for (; *s; s++) {
        int rc = *s == '|' ? lb_buf_appends(b, "\\|")
                 : (*s == '\n' || *s == '\r') ? lb_buf_appends(b, " ")
                                              : lb_buf_append(b, s, 1);
        if (rc != LB_OK)
            return rc;
    }
    return LB_OK;
}

static int row_start(lb_buf *b, const char *name, int bold)
{
    int rc = lb_buf_appends(b, bold ? "| **" : "| ");
    if (rc == LB_OK)
        rc = cell(b, name);
    if (rc == LB_OK)
        rc = lb_buf_appends(b, bold ? "** |" : " |");
    return rc;
}

typedef int (*row_fn)(lb_buf *b, const cJSON *group);

static int acc_row(lb_buf *b, const cJSON *g)
{
    char l[32], s[32], d[32];
    const cJSON *lj = get(g, "llm"), *sj = get(g, "sandbox"), *dj = get(g, "delta");
    fmt_num(l, sizeof l, get(lj, "accuracy"), 1, "");
    fmt_num(s, sizeof s, get(sj, "accuracy"), 1, "");
    if (cJSON_IsNumber(dj))
        snprintf(d, sizeof d, "%+.1f", dj->valuedouble);
    else
        snprintf(d, sizeof d, "–");
    const cJSON *n = cJSON_IsNumber(get(sj, "n")) ? get(sj, "n") : get(lj, "n");
    long long errs = 0;
    if (cJSON_IsNumber(get(lj, "errors")))
        errs += (long long)get(lj, "errors")->valuedouble;
    if (cJSON_IsNumber(get(sj, "errors")))
        errs += (long long)get(sj, "errors")->valuedouble;
    return lb_buf_printf(b, " %lld | %s | %s | %s | %lld |\n", cJSON_IsNumber(n) ? (long long)n->valuedouble : 0LL, l,
                         s, d, errs);
}

static int tok_row(lb_buf *b, const cJSON *g)
{
    char l[32], s[32], r[32];
    fmt_num(l, sizeof l, get(get(g, "llm"), "tokens_per_query"), 0, "");
    fmt_num(s, sizeof s, get(get(g, "sandbox"), "tokens_per_query"), 0, "");
    fmt_num(r, sizeof r, get(g, "token_ratio"), 2, "×");
    return lb_buf_printf(b, " %s | %s | %s |\n", l, s, r);
}

static int time_row(lb_buf *b, const cJSON *g)
{
    const cJSON *sj = get(g, "sandbox");
    char e[32], t[32], et[32];
    fmt_num(et, sizeof et, get(sj, "env_tokens_per_query"), 0, "");
    const cJSON *es = get(sj, "env_token_share"), *xs = get(sj, "exec_time_share");
    if (cJSON_IsNumber(es))
        snprintf(e, sizeof e, "%.1f%%", 100.0 * es->valuedouble);
    else
        snprintf(e, sizeof e, "–");
    if (cJSON_IsNumber(xs))
        snprintf(t, sizeof t, "%.1f%%", 100.0 * xs->valuedouble);
    else
        snprintf(t, sizeof t, "–");
    return lb_buf_printf(b, " %s | %s | %s |\n", et, e, t);
}

/* A share (0..1) as a percentage with one decimal; "–" when it is absent. */
static void fmt_share(char *out, size_t outsz, const cJSON *v)
{
    if (cJSON_IsNumber(v))
        snprintf(out, outsz, "%.1f%%", 100.0 * v->valuedouble);
    else
        snprintf(out, outsz, "–");
}

static int cap_row(lb_buf *b, const cJSON *g)
{
    const cJSON *c = get(g, "capabilities");
    char x[3][32], t[32];
    const char *k[3] = {"external", "file", "compute"};
    for (int i = 0; i < 3; i++)
        fmt_share(x[i], sizeof x[i], get(c, k[i]));
    fmt_num(t, sizeof t, get(c, "turns"), 0, "");
    return lb_buf_printf(b, " %s | %s | %s | %s |\n", x[0], x[1], x[2], t);
}

/* External access of the runs that had network rules, by pattern and by
 * their gateway's record, side by side. */
static int net_row(lb_buf *b, const cJSON *g)
{
    const cJSON *c = get(g, "capabilities");
    const char *k[2] = {"external_runs_by_pattern", "external_runs_by_traffic"};
    char x[2][32], n[32], r[32];
    for (int i = 0; i < 2; i++)
        fmt_share(x[i], sizeof x[i], get(c, k[i]));
    fmt_num(n, sizeof n, get(c, "external_connections"), 0, "");
    fmt_num(r, sizeof r, get(c, "traffic_rows"), 0, "");
    return lb_buf_printf(b, " %s | %s | %s | %s |\n", x[0], x[1], n, r);
}

/* One table: a header, a row per domain, the overall row in bold. */
static int table(lb_buf *b, const cJSON *s, const char *head, row_fn fn)
{
    int rc = lb_buf_appends(b, head);
    const cJSON *d;
    cJSON_ArrayForEach(d, get(s, "domains")) {
        if (rc == LB_OK)
            rc = row_start(b, d->string ? d->string : "", 0);
        if (rc == LB_OK)
            rc = fn(b, d);
    }
    if (rc == LB_OK)
        rc = row_start(b, "Overall", 1);
    if (rc == LB_OK)
        rc = fn(b, get(s, "overall"));
    if (rc == LB_OK)
        rc = lb_buf_appends(b, "\n");
    return rc;
}

static long long count_of(const cJSON *s, const char *mode, const char *k)
{
    const cJSON *v = get(get(get(s, "overall"), mode), k);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : 0;
}

char *lb_eval_summary_markdown(const cJSON *s)
{
    lb_buf b;
    lb_buf_init(&b, MD_MAX);
    const cJSON *rep = get(s, "repeats");
    int rc = lb_buf_printf(&b,
                           "# Evaluation summary\n\n"
                           "## Accuracy (%%, Table 1)\n\n"
                           "Each row's score averaged over its repeats (%lld), then over the rows of a "
                           "domain. Δ = Sandbox − LLM, in points.\n\n",
                           cJSON_IsNumber(rep) ? (long long)rep->valuedouble : 0LL);
    if (rc == LB_OK)
        rc = table(&b, s, "| Domain | n | LLM | Sandbox | Δ | errors |\n| --- | ---: | ---: | ---: | ---: | ---: |\n",
                   acc_row);
    if (rc == LB_OK)
        rc = lb_buf_printf(&b,
                           "Runs with status `error` (the task or its scoring could not finish) count as score 0 "
                           "and are counted apart: %lld in LLM mode, %lld in sandbox mode; runs whose task "
                           "failed count as 0 too (%lld LLM, %lld sandbox). Skipped rows (they could not run: "
                           "see results.jsonl) are left out: %lld LLM, %lld sandbox.\n\n",
                           count_of(s, "llm", "errors"), count_of(s, "sandbox", "errors"),
                           count_of(s, "llm", "failed"), count_of(s, "sandbox", "failed"),
                           count_of(s, "llm", "skipped"), count_of(s, "sandbox", "skipped"));
    if (rc == LB_OK)
        rc = table(&b, s,
                   "## Tokens per query (Table 5)\n\nThe tokens of a run's trajectory (prompt, generated and "
                   "environment tokens, each counted once: the last request's prompt + completion); "
                   "ratio = Σ sandbox / Σ LLM.\n\n"
                   "| Domain | LLM | Sandbox | Ratio |\n| --- | ---: | ---: | ---: |\n",
                   tok_row);
    if (rc == LB_OK)
        rc = table(&b, s,
                   "## Sandbox mode: environment tokens and execution time (Table 6)\n\n"
                   "Env share = environment tokens / the trajectory's tokens; exec share = time in tools / "
                   "the runs' wall time (T_exe / T_total).\n\n"
                   "| Domain | Env tokens per query | Env token share | Exec time share |\n"
                   "| --- | ---: | ---: | ---: |\n",
                   time_row);
    if (rc == LB_OK) {
        const cJSON *q = get(s, "qpm");
        char l[32], sb[32], r[32];
        fmt_num(l, sizeof l, get(q, "llm"), 2, "");
        fmt_num(sb, sizeof sb, get(q, "sandbox"), 2, "");
        fmt_num(r, sizeof r, get(q, "ratio"), 2, "×");
        rc = lb_buf_printf(&b,
                           "## Throughput\n\nQueries per minute, from submission to answer at the run's "
                           "concurrency.\n\n| LLM QPM | Sandbox QPM | Ratio |\n| ---: | ---: | ---: |\n"
                           "| %s | %s | %s |\n\n",
                           l, sb, r);
    }
    if (rc == LB_OK)
        rc = table(&b, s,
                   "## Capability usage (Appendix D)\n\nShare of sandbox-mode turns whose actions match "
                   "the patterns of eval/capabilities.conf.\n\n"
                   "| Domain | External resources | File management | Computation | Turns |\n"
                   "| --- | ---: | ---: | ---: | ---: |\n",
                   cap_row);
    if (rc == LB_OK && cJSON_IsNumber(get(get(get(s, "overall"), "capabilities"), "traffic_rows")))
        rc = table(&b, s,
                   "## External access by traffic\n\nRuns that had network rules: the share whose turns match "
                   "the external patterns, and the share whose gateway recorded an allowed connection to a "
                   "name (what they really fetched).\n\n"
                   "| Domain | By pattern | By traffic | Connections | Runs |\n"
                   "| --- | ---: | ---: | ---: | ---: |\n",
                   net_row);
    if (rc != LB_OK) {
        lb_buf_free(&b);
        return NULL;
    }
    return lb_buf_steal(&b, NULL);
}
