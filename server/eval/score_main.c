/* `llmbox score`: scores one answer. The web's eval runner spawns it per
 * run with a time limit, so hostile answers are parsed here, not in the
 * web, and the boxed / script scorers reach a sandbox and the judge a
 * model from a short process of their own.
 *
 * stdin: one JSON request (at most LB_SCORE_REQUEST_MAX bytes)
 *   {"scorer": "exact"|"numeric"|"choice"|"boxed"|"script"|"judge",
 *    "answer": TEXT, "ground_truth": JSON, "row": {the whole row},
 *    "script": TEXT (script; else the row's "scorer_script"),
 *    "judge": {"model": NAME, "votes": K}, "timeout_s": N,
 *    "rel_tol": X, "abs_tol": X (numeric; else the row's, else 1e-2 and 1e-6)}
 * stdout: one line
 *   {"score": 0..1 | null, "scorer": NAME, "detail": TEXT, "error_class": null |
 *    "scorer_error" | "scorer_timeout" | "judge_unavailable" | "bad_request"}
 * score is null exactly when error_class is set (the runner records the run
 * as an error, not as a wrong answer). Exit status 0 when that line was printed,
 * 1 when not even that could be done (out of memory, stdout closed). */
#include "common/config.h"
#include "common/status.h"
#include "common/utf8.h"
#include "entry.h"
#include "eval/dataset.h"
#include "eval/score_judge.h"
#include "eval/score_request.h"
#include "eval/score_sandbox.h"
#include "eval/score_text.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LB_SCORE_REQUEST_MAX ((size_t)32 << 20) /* a 64 KiB answer file or a long llm reply, a row with documents */
#define TIMEOUT_DEFAULT_S 60
#define TIMEOUT_MAX_S 600
#define SCORE_MEMORY_MIB 1024 /* SymPy and a scorer script need little; a blow-up stops here */
#define SCORE_PIDS 64
#define BARE_ANSWER_MAX 256   /* an answer without \boxed{} taken whole when this short, on one line */

typedef struct req {
    const char *scorer;
    const char *answer;
    size_t alen;
    const cJSON *truth;
    const cJSON *row;
    const cJSON *req;
    int timeout_s;
} req;

static int emit(const char *scorer, const lb_score *s)
{
    cJSON *o = cJSON_CreateObject();
    size_t dl = 0;
    char *detail = lb_utf8_sanitize(s->detail, strlen(s->detail), &dl);
    char *line = NULL;
    /* no verdict, no number: a failed scorer must not read as a wrong answer */
    if (o && detail &&
        (s->error_class ? cJSON_AddNullToObject(o, "score") : cJSON_AddNumberToObject(o, "score", s->score)) &&
        cJSON_AddStringToObject(o, "scorer", scorer ? scorer : "") && cJSON_AddStringToObject(o, "detail", detail) &&
        (s->error_class ? cJSON_AddStringToObject(o, "error_class", s->error_class)
                        : cJSON_AddNullToObject(o, "error_class")))
        line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    free(detail);
    if (!line)
        return 1;
    int bad = printf("%s\n", line) < 0 || fflush(stdout) != 0;
    free(line);
    return bad;
}

__attribute__((format(printf, 2, 3))) static int bad_request(const char *scorer, const char *fmt, ...)
{
    lb_score s;
    memset(&s, 0, sizeof s);
    s.error_class = "bad_request";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s.detail, sizeof s.detail, fmt, ap);
    va_end(ap);
    return emit(scorer, &s);
}

static const char *str_field(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void sandbox_of(const lb_config *cfg, const req *r, lb_score_sandbox *sb)
{
    sb->socket = cfg->sandboxd_socket;
    /* a row with its own image (docs/EVAL.md, "A row's own image") is scored
     * in it as it ran in it: its scorer may need what only that image has;
     * the daemon checks the name as it checks any */
    const char *own = str_field(r->row, "image");
    sb->image = own && own[0] ? own : cfg->default_image[0] ? cfg->default_image : NULL;
    sb->memory_mib = cfg->sandbox_memory_mib > 0 && cfg->sandbox_memory_mib < SCORE_MEMORY_MIB
                         ? cfg->sandbox_memory_mib
                         : SCORE_MEMORY_MIB;
    sb->pids = SCORE_PIDS;
    sb->timeout_s = r->timeout_s;
}

/* boxed: the last \boxed{} of answer and ground truth; equal spellings
 * score without a sandbox, the rest goes to SymPy in one. */
static void score_boxed(const lb_config *cfg, const req *r, const char *truth, lb_score *s)
{
    static char a[LB_BOXED_MAX + 1], t[LB_BOXED_MAX + 1], na[LB_BOXED_MAX + 1], nt[LB_BOXED_MAX + 1];
    int rc = lb_boxed_last(r->answer, r->alen, a, sizeof a);
    if (rc == LB_E_TOOBIG) {
        snprintf(s->detail, sizeof s->detail, "boxed: the answer's last \\boxed{} is over %d bytes", LB_BOXED_MAX);
        return;
    }
    if (rc != LB_OK) {
        /* an answer file may hold the bare answer */
        size_t b = 0, e = r->alen;
        while (b < e && (r->answer[b] == ' ' || r->answer[b] == '\n' || r->answer[b] == '\t' || r->answer[b] == '\r'))
            b++;
        while (e > b && (r->answer[e - 1] == ' ' || r->answer[e - 1] == '\n' || r->answer[e - 1] == '\t' ||
                         r->answer[e - 1] == '\r'))
            e--;
        if (e == b || e - b > BARE_ANSWER_MAX || memchr(r->answer + b, '\n', e - b) ||
            memchr(r->answer + b, '\0', e - b)) {
            snprintf(s->detail, sizeof s->detail, "boxed: no \\boxed{} in the answer");
            return;
        }
        memcpy(a, r->answer + b, e - b);
        a[e - b] = 0;
    }
    if (lb_boxed_last(truth, strlen(truth), t, sizeof t) != LB_OK) {
        if (strlen(truth) > LB_BOXED_MAX) {
            s->bad_truth = 1;
            s->error_class = "scorer_error";
            snprintf(s->detail, sizeof s->detail, "boxed: the ground truth is over %d bytes", LB_BOXED_MAX);
            return;
        }
        snprintf(t, sizeof t, "%s", truth);
    }
    lb_boxed_normalize(a, na, sizeof na);
    lb_boxed_normalize(t, nt, sizeof nt);
    if (!nt[0]) {
        s->bad_truth = 1;
        s->error_class = "scorer_error";
        snprintf(s->detail, sizeof s->detail, "boxed: the ground truth is empty");
        return;
    }
    if (!strcmp(na, nt)) {
        s->score = 1;
        snprintf(s->detail, sizeof s->detail, "boxed: the same after normalising (%.200s); no sandbox needed", na);
        return;
    }
    lb_score_sandbox sb;
    sandbox_of(cfg, r, &sb);
    lb_score_boxed_sympy(&sb, a, t, s);
}

static void score_script(const lb_config *cfg, const req *r, lb_score *s)
{
    const char *script = str_field(r->req, "script");
    if (!script)
        script = str_field(r->row, "scorer_script");
    if (!script || !script[0]) {
        s->error_class = "bad_request";
        snprintf(s->detail, sizeof s->detail, "script: no scorer program (request field `script` or the row's "
                                              "`scorer_script`)");
        return;
    }
    char *gt = r->truth ? cJSON_PrintUnformatted(r->truth) : NULL;
    char *row = r->row ? cJSON_PrintUnformatted(r->row) : NULL;
    lb_score_sandbox sb;
    sandbox_of(cfg, r, &sb);
    lb_score_script(&sb, script, strlen(script), r->answer, r->alen, gt, row, s);
    free(gt);
    free(row);
}

static void score_judge(const lb_config *cfg, const req *r, const char *reference, lb_score *s)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(r->req, "judge");
    const cJSON *votes = cJSON_GetObjectItemCaseSensitive(j, "votes");
    lb_judge_opts o = {
        .cfg = cfg,
        .model = str_field(j, "model"),
        .votes = cJSON_IsNumber(votes) ? (int)votes->valuedouble : 1,
        .timeout_s = r->timeout_s,
    };
    if (cJSON_IsNumber(votes) && (votes->valuedouble < 1 || votes->valuedouble > LB_JUDGE_VOTES_MAX)) {
        s->error_class = "bad_request";
        snprintf(s->detail, sizeof s->detail, "judge: votes must be 1 to %d", LB_JUDGE_VOTES_MAX);
        return;
    }
    const char *q = str_field(r->row, "problem_statement");
    if (!q)
        q = str_field(r->row, "problem");
    lb_score_judge(&o, q, reference, r->answer, r->alen, s);
}

static int run(const lb_config *cfg, const char *text, size_t len)
{
    cJSON *o = cJSON_ParseWithLength(text, len);
    char *truths[LB_SCORE_TRUTHS_MAX];
    size_t lens[LB_SCORE_TRUTHS_MAX], nt = 0;
    int ret;
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return bad_request(NULL, "the request is not a JSON object");
    }
    req r = {.req = o};
    r.scorer = str_field(o, "scorer");
    if (!r.scorer || !lb_eval_scorer_known(r.scorer)) {
        ret = bad_request(r.scorer, "unknown scorer \"%.64s\" (exact, numeric, choice, boxed, script, judge)",
                          r.scorer ? r.scorer : "");
        goto out;
    }
    const cJSON *ans = cJSON_GetObjectItemCaseSensitive(o, "answer");
    if (ans && !cJSON_IsString(ans) && !cJSON_IsNull(ans)) {
        ret = bad_request(r.scorer, "field `answer`: not a string");
        goto out;
    }
    r.answer = cJSON_IsString(ans) ? ans->valuestring : "";
    r.alen = strlen(r.answer);
    r.truth = cJSON_GetObjectItemCaseSensitive(o, "ground_truth");
    r.row = cJSON_GetObjectItemCaseSensitive(o, "row");
    if (r.row && !cJSON_IsObject(r.row) && !cJSON_IsNull(r.row)) {
        ret = bad_request(r.scorer, "field `row`: not an object");
        goto out;
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "timeout_s");
    r.timeout_s = TIMEOUT_DEFAULT_S;
    if (t) {
        if (!cJSON_IsNumber(t) || t->valuedouble < 1 || t->valuedouble > TIMEOUT_MAX_S) {
            ret = bad_request(r.scorer, "field `timeout_s`: a number of seconds from 1 to %d", TIMEOUT_MAX_S);
            goto out;
        }
        r.timeout_s = (int)t->valuedouble;
    }
    if (strcmp(r.scorer, "script") && (!r.truth || cJSON_IsNull(r.truth))) {
        ret = bad_request(r.scorer, "field `ground_truth`: missing (the %s scorer compares with it)", r.scorer);
        goto out;
    }
    if (r.truth && !cJSON_IsNull(r.truth))
        nt = lb_score_truth_texts(r.truth, truths, lens, LB_SCORE_TRUTHS_MAX);
    lb_score s;
    memset(&s, 0, sizeof s);
    const char *const *tv = (const char *const *)truths;
    if (lb_score_is_text(r.scorer)) {
        lb_score_text_run(r.scorer, r.answer, r.alen, tv, lens, nt, o, r.row, &s);
    } else if (!strcmp(r.scorer, "boxed")) {
        score_boxed(cfg, &r, nt ? truths[0] : "", &s);
    } else if (!strcmp(r.scorer, "script")) {
        score_script(cfg, &r, &s);
    } else {
        score_judge(cfg, &r, nt ? truths[0] : NULL, &s);
    }
    if (s.bad_truth && !s.error_class)
        s.error_class = "scorer_error";
    ret = emit(r.scorer, &s);
out:
    lb_score_truths_free(truths, nt);
    cJSON_Delete(o);
    return ret;
}

int lb_score_main(int argc, char **argv, const lb_config *cfg)
{
    if (argc > 1) {
        int help = !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help");
        fprintf(help ? stdout : stderr,
                "usage: llmbox score < request.json\n"
                "Scores one answer; the request and the one-line answer are described in docs/EVAL.md "
                "(\"Scorers\").\n");
        return help ? 0 : 2;
    }
    /* read stdin up to the cap (+1 to tell "over it" apart) */
    size_t cap = LB_SCORE_REQUEST_MAX + 1, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return 1;
    for (;;) {
        ssize_t n = read(0, buf + len, cap - len);
        if (n < 0) {
            free(buf);
            return bad_request(NULL, "cannot read the request on stdin");
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == cap) {
            free(buf);
            return bad_request(NULL, "the request is over %zu bytes", LB_SCORE_REQUEST_MAX);
        }
    }
    int ret = run(cfg, buf, len);
    free(buf);
    return ret;
}
