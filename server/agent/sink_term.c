/* Event sink for `llmbox run`: the steps as readable lines on a terminal.
 * Model and sandbox text is shown cut to a few lines, with control
 * characters neutralised so output cannot drive the terminal. */
#include "agent/sink_term.h"

#include "agent/prompts.h"
#include "agent/run_state.h"
#include "agent/sink.h"
#include "common/status.h"
#include "common/task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TERM_MAX_LINES 12
#define TERM_MAX_LINE 200

typedef struct term_sink {
    FILE *f;
    int color;
} term_sink;

static term_sink the_term_sink;

static const char *c_on(const term_sink *t, const char *code) { return t->color ? code : ""; }
static const char *c_off(const term_sink *t) { return t->color ? "\033[0m" : ""; }

/* Prints text indented, at most TERM_MAX_LINES lines of TERM_MAX_LINE
 * bytes, escape and control characters shown as '?'. */
static void block(const term_sink *t, const char *prefix, const char *s)
{
    if (!s || !*s)
        return;
    int lines = 0;
    const char *p = s;
    while (*p && lines < TERM_MAX_LINES) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        size_t shown = len > TERM_MAX_LINE ? TERM_MAX_LINE : len;
        fputs(prefix, t->f);
        for (size_t i = 0; i < shown; i++) {
            unsigned char ch = (unsigned char)p[i];
            fputc(ch < 0x20 && ch != '\t' ? '?' : ch == 0x7f ? '?' : ch, t->f);
        }
        if (shown < len)
            fputs("...", t->f);
        fputc('\n', t->f);
        lines++;
        p = nl ? nl + 1 : p + len;
    }
    if (*p) {
        int more = 0;
        for (; *p; p++)
            more += *p == '\n';
        fprintf(t->f, "%s%s[... %d more lines]%s\n", prefix, c_on(t, "\033[2m"), more + 1, c_off(t));
    }
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The one argument worth showing for a call: bash's command, the
 * editor's command + path, finish's answer; else the raw arguments. */
static void call_line(const term_sink *t, const char *name, const char *args)
{
    cJSON *a = args ? cJSON_Parse(args) : NULL;
    const char *cmd = str(a, "command"), *path = str(a, "path");
    fprintf(t->f, "  %s%s%s", c_on(t, "\033[1;36m"), name, c_off(t));
    if (!strcmp(name, "bash") && cmd) {
        fputc('\n', t->f);
        block(t, "    $ ", cmd);
    } else if (!strcmp(name, "file_editor") && cmd && path) {
        fprintf(t->f, " %s ", cmd);
        block(t, "", path);
    } else {
        fputc('\n', t->f);
        block(t, "    ", args);
    }
    cJSON_Delete(a);
}

static void ev(void *arg, const char *type, const cJSON *d)
{
    term_sink *t = arg;
    if (!strcmp(type, "model")) {
        fprintf(t->f, "%s[turn %.0f]%s model replied in %.1f s", c_on(t, "\033[1m"), num(d, "turn"),
                c_off(t), num(d, "duration_ms") / 1000.0);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(d, "usage");
        if (num(u, "prompt_tokens") >= 0 && !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(u, "reported")))
            fprintf(t->f, " (%.0f prompt + %.0f completion tokens)", num(u, "prompt_tokens"),
                    num(u, "completion_tokens"));
        fputc('\n', t->f);
        const char *r = str(d, "reasoning");
        if (r) {
            fputs(c_on(t, "\033[2m"), t->f);
            block(t, "  thinking: ", r);
            fputs(c_off(t), t->f);
        }
        block(t, "  ", str(d, "content"));
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(d, "tool_calls");
        if (!cJSON_GetArraySize(calls))
            fprintf(t->f, "  (no tool call)\n");
    } else if (!strcmp(type, "tool")) {
        const char *name = str(d, "name");
        call_line(t, name ? name : "?", str(d, "arguments"));
        block(t, "    ", str(d, "text"));
        block(t, "    out| ", str(d, "stdout"));
        fputs(c_on(t, "\033[33m"), t->f);
        block(t, "    err| ", str(d, "stderr"));
        fputs(c_off(t), t->f);
        const char *st = str(d, "status");
        int ok = st && !strcmp(st, "ok");
        fprintf(t->f, "    -> %s%s%s (%.0f ms)\n", c_on(t, ok ? "\033[32m" : "\033[31m"),
                st ? st : "?", c_off(t), num(d, "duration_ms"));
    } else if (!strcmp(type, "status")) {
        const char *reason = str(d, "reason");
        fprintf(t->f, "%s== %s%s%s%s\n", c_on(t, "\033[1m"), str(d, "status") ? str(d, "status") : "?",
                reason ? ": " : "", reason ? reason : "", c_off(t));
    } else if (!strcmp(type, "error")) {
        fprintf(t->f, "%serror:%s ", c_on(t, "\033[1;31m"), c_off(t));
        block(t, "", str(d, "message"));
    } else if (!strcmp(type, "answer")) {
        fprintf(t->f, "%sanswer:%s\n", c_on(t, "\033[1;32m"), c_off(t));
        block(t, "  ", str(d, "answer"));
    } else if (!strcmp(type, "artifacts")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(d, "artifacts");
        fprintf(t->f, "%soutputs:%s %d file(s)\n", c_on(t, "\033[1m"), c_off(t), cJSON_GetArraySize(list));
        const cJSON *a;
        int shown = 0;
        cJSON_ArrayForEach(a, list)
        {
            if (shown++ == 30) {
                fprintf(t->f, "  ...\n");
                break;
            }
            char line[1400];
            snprintf(line, sizeof line, "%s (%.0f bytes, %s)", str(a, "path") ? str(a, "path") : "?",
                     num(a, "size"), str(a, "mime") ? str(a, "mime") : "?");
            block(t, "  ", line);
        }
    }
    fflush(t->f);
}

static int fin(void *arg, const char *status, const char *reason, const char *answer)
{
    term_sink *t = arg;
    (void)answer;
    int ok = lb_task_status_parse(status) == LB_TASK_SUCCEEDED;
    fprintf(t->f, "%s== %s%s", c_on(t, ok ? "\033[1;32m" : "\033[1;31m"), status, c_off(t));
    if (reason && *reason)
        block(t, ": ", reason); /* may quote a model server's message */
    else
        fputc('\n', t->f);
    fflush(t->f);
    return LB_OK;
}

void lb_sink_term_init(lb_sink *s, void *file)
{
    memset(s, 0, sizeof *s);
    term_sink *t = &the_term_sink;
    t->f = file ? file : stdout;
    t->color = isatty(fileno(t->f)) && !getenv("NO_COLOR");
    s->arg = t;
    s->event = ev;
    s->finish = fin;
}
