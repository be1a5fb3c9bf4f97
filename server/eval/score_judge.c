/* The judge scorer (score_judge.h). */
#include "eval/score_judge.h"
#include "agent/loop.h"
#include "agent/model_http.h"
#include "agent/prompts.h"
#include "agent/run_state.h"
#include "agent/toolcall_parse.h"
#include "common/buf.h"
#include "common/status.h"
#include "common/utf8.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLY_SHOWN 240 /* bytes of each judge reply kept in the detail */

/* Appends a hostile text cut to LB_JUDGE_PART_MAX (keep_end: its last
 * bytes, else its first), as valid UTF-8. */
static int add_part(lb_buf *b, const char *s, size_t n, int keep_end)
{
    size_t cut = 0;
    if (n > LB_JUDGE_PART_MAX) {
        cut = n - LB_JUDGE_PART_MAX;
        if (keep_end)
            s += cut;
        n = LB_JUDGE_PART_MAX;
    }
    char *clean = lb_utf8_sanitize(s, n, &n);
    if (!clean)
        return LB_E_NOMEM;
    int rc = LB_OK;
    if (cut && keep_end)
        rc = lb_buf_printf(b, "[... the first %zu bytes are left out ...]\n", cut);
    if (rc == LB_OK)
        rc = lb_buf_append(b, clean, n);
    if (rc == LB_OK && cut && !keep_end)
        rc = lb_buf_printf(b, "\n[... %zu more bytes left out ...]", cut);
    free(clean);
    return rc;
}

char *lb_judge_prompt(const char *question, const char *reference, const char *answer, size_t alen)
{
    lb_buf b;
    lb_buf_init(&b, 4 * LB_JUDGE_PART_MAX);
    const char *q = question ? question : "(not given)";
    const char *r = reference ? reference : "(not given)";
    int rc = lb_buf_appends(&b,
                            "You are grading an answer to a question. Decide whether the candidate answer is "
                            "correct: it must agree with the reference answer in meaning and in every value "
                            "that matters (equivalent forms, units and rounding that do not change the value "
                            "are fine). Do not solve the question yourself; judge only against the reference.\n"
                            "Reply with exactly one word: CORRECT or INCORRECT.\n\n### Question\n");
    if (rc == LB_OK)
        rc = add_part(&b, q, strlen(q), 0);
    if (rc == LB_OK)
        rc = lb_buf_appends(&b, "\n\n### Reference answer\n");
    if (rc == LB_OK)
        rc = add_part(&b, r, strlen(r), 0);
    if (rc == LB_OK)
        rc = lb_buf_appends(&b, "\n\n### Candidate answer\n");
    if (rc == LB_OK)
        rc = add_part(&b, answer ? answer : "", answer ? alen : 0, 1);
    if (rc == LB_OK)
        rc = lb_buf_appends(&b, "\n\n### Your verdict (CORRECT or INCORRECT)\n");
    if (rc != LB_OK) {
        lb_buf_free(&b);
        return NULL;
    }
    return lb_buf_steal(&b, NULL);
}

int lb_judge_verdict(const char *reply)
{
    int v = -1;
    if (!reply)
        return -1;
    for (const char *p = reply; *p; p++) {
        if (p != reply && isalpha((unsigned char)p[-1]))
            continue;
        size_t w = 0;
        int this = -1;
        if (!strncasecmp(p, "incorrect", 9)) {
            w = 9;
            this = 0;
        } else if (!strncasecmp(p, "correct", 7)) {
            w = 7;
            this = 1;
        }
        if (this >= 0 && !isalpha((unsigned char)p[w]))
            v = this;
    }
    return v;
}

/* A reply cut for the detail, printable ASCII. */
static void shown(const char *s, char *out, size_t outsz)
{
    size_t k = 0;
    for (size_t i = 0; s && s[i] && k + 4 < outsz && i < REPLY_SHOWN; i++) {
        unsigned char c = (unsigned char)s[i];
        out[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : ' ';
    }
    if (s && strlen(s) > REPLY_SHOWN && k + 4 < outsz) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = 0;
}

void lb_score_judge(const lb_judge_opts *o, const char *question, const char *reference, const char *answer,
                    size_t alen, lb_score *out)
{
    lb_model m;
    char err[1024] = "";
    char *prompt = NULL;
    cJSON *msgs = NULL;
    lb_buf d;
    lb_buf_init(&d, sizeof out->detail - 1);
    out->score = 0;
    out->error_class = NULL;
    int votes = o->votes < 1 ? 1 : o->votes > LB_JUDGE_VOTES_MAX ? LB_JUDGE_VOTES_MAX : o->votes;
    int rc = lb_model_init(&m, o->cfg, o->model, NULL, err, sizeof err);
    if (rc != LB_OK) {
        out->error_class = rc == LB_E_NOTFOUND ? "bad_request" : "judge_unavailable";
        snprintf(out->detail, sizeof out->detail, "judge: %s", err);
        return;
    }
    /* the judge is asked a question, not given tools: no tool prompt in text mode */
    m.tool_mode = LB_TOOL_MODE_NATIVE;
    if (o->timeout_s > 0 && (m.timeout_s <= 0 || o->timeout_s < m.timeout_s))
        m.timeout_s = o->timeout_s;
    prompt = lb_judge_prompt(question, reference, answer, alen);
    msgs = cJSON_CreateArray();
    cJSON *u = cJSON_CreateObject();
    if (u && msgs && !cJSON_AddItemToArray(msgs, u)) {
        cJSON_Delete(u);
        u = NULL;
    }
    if (!prompt || !msgs || !u || !cJSON_AddStringToObject(u, "role", "user") ||
        !cJSON_AddStringToObject(u, "content", prompt)) {
        if (!msgs)
            cJSON_Delete(u);
        out->error_class = "scorer_error";
        snprintf(out->detail, sizeof out->detail, "judge: out of memory");
        goto out;
    }
    int correct = 0, decided = 0;
    for (int i = 0; i < votes; i++) {
        lb_model_reply r;
        memset(&r, 0, sizeof r);
        rc = lb_model_chat(&m, msgs, NULL, &r, err, sizeof err);
        if (rc != LB_OK) {
            lb_model_reply_free(&r);
            out->error_class = "judge_unavailable";
            out->score = 0;
            snprintf(out->detail, sizeof out->detail, "judge %s: vote %d of %d failed: %s", m.name, i + 1, votes,
                     err);
            goto out;
        }
        int v = lb_judge_verdict(r.content);
        char s[REPLY_SHOWN + 8];
        shown(r.content, s, sizeof s);
        /* the votes past what the detail holds are left out of it */
        LB_IGNORE(lb_buf_printf(&d, "; vote %d: %s (\"%s\")", i + 1,
                                v == 1 ? "CORRECT" : v == 0 ? "INCORRECT" : "no verdict", s));
        correct += v == 1;
        decided += v >= 0;
        lb_model_reply_free(&r);
    }
    if (!decided) {
        out->error_class = "scorer_error";
        snprintf(out->detail, sizeof out->detail, "judge %s: no reply said CORRECT or INCORRECT%s", m.name,
                 d.data ? d.data : "");
        goto out;
    }
    out->score = (double)correct / (double)votes;
    snprintf(out->detail, sizeof out->detail, "judge %s: %d of %d votes CORRECT%s", m.name, correct, votes,
             d.data ? d.data : "");
out:
    lb_buf_free(&d);
    cJSON_Delete(msgs);
    free(prompt);
    lb_model_free(&m);
}
