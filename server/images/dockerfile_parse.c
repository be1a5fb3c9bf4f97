/* The Dockerfile parser and variable expansion (dockerfile_parse.h). */
#include "images/dockerfile_parse.h"

#include "common/util.h"
#include "common/buf.h"
#include "common/path.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    lb_df_kind kind;
} KINDS[] = {
    {"FROM", LB_DF_FROM}, {"RUN", LB_DF_RUN},         {"COPY", LB_DF_COPY}, {"ADD", LB_DF_ADD},
    {"ENV", LB_DF_ENV},   {"ARG", LB_DF_ARG},         {"WORKDIR", LB_DF_WORKDIR}, {"USER", LB_DF_USER},
    {"LABEL", LB_DF_LABEL}, {"SHELL", LB_DF_SHELL},
};

/* Docker's other instructions: named as such in the refusal */
static const char *const UNSUPPORTED[] = {"CMD", "ENTRYPOINT", "EXPOSE", "VOLUME", "ONBUILD", "STOPSIGNAL",
                                          "HEALTHCHECK", "MAINTAINER"};

const char *lb_df_kind_name(lb_df_kind k)
{
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (KINDS[i].kind == k)
            return KINDS[i].name;
    return "?";
}

static void step_free(lb_df_step *s)
{
    for (int i = 0; i < s->argc; i++)
        free(s->argv[i]);
    free(s->argv);
    free(s->chown);
    free(s->chmod);
    free(s->from);
    memset(s, 0, sizeof *s);
}

void lb_dockerfile_free(lb_dockerfile *df)
{
    if (!df)
        return;
    for (int i = 0; i < df->n; i++)
        step_free(&df->steps[i]);
    free(df->steps);
    for (int i = 0; i < LB_DF_STAGES_MAX; i++)
        free(df->stage_names[i]);
    memset(df, 0, sizeof *df);
}

static int add_arg(lb_df_step *s, const char *p, size_t n)
{
    if (s->argc >= LB_DF_ARGS_MAX)
        return LB_E_TOOBIG;
    if (!s->argv && !(s->argv = calloc(LB_DF_ARGS_MAX, sizeof *s->argv)))
        return LB_E_NOMEM;
    char *w = malloc(n + 1);
    if (!w)
        return LB_E_NOMEM;
    memcpy(w, p, n);
    w[n] = '\0';
    s->argv[s->argc++] = w;
    return LB_OK;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Words split at blanks, no quoting (FROM, COPY, ADD in shell form). */
static int split_plain(lb_df_step *s, const char *p)
{
    while (*p) {
        while (is_space(*p))
            p++;
        size_t n = strcspn(p, " \t");
        if (n) {
            int rc = add_arg(s, p, n);
            if (rc)
                return rc;
        }
        p += n;
    }
    return LB_OK;
}

/* Words split at blanks with shell-like quotes removed (ENV, LABEL, ARG):
 * a literal '$' or '\' that came from quotes or an escape is written as
 * "\$" / "\\", so that lb_df_expand keeps it literal. */
static int split_quoted(lb_df_step *s, const char *p, char esc, char *msg, size_t msgsz, int line)
{
    lb_buf w;
    lb_buf_init(&w, LB_DF_LINE_MAX);
    int rc = LB_OK;
    while (*p && !rc) {
        while (is_space(*p))
            p++;
        if (!*p)
            break;
        lb_buf_reset(&w);
        char q = 0;
        for (; *p && (q || !is_space(*p)); p++) {
            char c = *p;
            if (q == '\'') {
                if (c == '\'') {
                    q = 0;
                    continue;
                }
            } else if (c == '\'' && !q) {
                q = '\'';
                continue;
            } else if (c == '"') {
                q = q ? 0 : '"';
                continue;
            } else if (c == esc && p[1] && (!q || p[1] == '"' || p[1] == esc || p[1] == '$')) {
                c = *++p;
                if (c == '$' || c == '\\')
                    rc = rc ? rc : lb_buf_append(&w, "\\", 1);
                rc = rc ? rc : lb_buf_append(&w, &c, 1);
                continue;
            } else {
                rc = rc ? rc : lb_buf_append(&w, &c, 1);
                continue;
            }
            /* inside single quotes: everything literal */
            if (c == '$' || c == '\\')
                rc = rc ? rc : lb_buf_append(&w, "\\", 1);
            rc = rc ? rc : lb_buf_append(&w, &c, 1);
        }
        if (q) {
            lb_say(msg, msgsz, "Dockerfile:%d: %s has an unclosed quote.", line, lb_df_kind_name(s->kind));
            rc = LB_E_INVAL;
        }
        if (!rc)
            rc = add_arg(s, w.data ? w.data : "", w.len);
    }
    lb_buf_free(&w);
    return rc;
}

/* A JSON array of strings: the exec form. 1 when p is one (the words
 * added), 0 when it is not (Docker then takes the shell form). */
static int try_exec_form(lb_df_step *s, const char *p, int *rc)
{
    *rc = LB_OK;
    if (*p != '[')
        return 0;
    cJSON *a = cJSON_Parse(p);
    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        return 0;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, a) if (!cJSON_IsString(e))
    {
        cJSON_Delete(a);
        return 0;
    }
    cJSON_ArrayForEach(e, a) if (!*rc) *rc = add_arg(s, e->valuestring, strlen(e->valuestring));
    cJSON_Delete(a);
    s->exec_form = 1;
    return 1;
}

static int name_ok(const char *p, size_t n)
{
    if (!n || !((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z') || p[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') ||
              p[i] == '_'))
            return 0;
    return 1;
}

/* A COPY/ADD source: from the context only. A source with a variable is
 * checked again by the builder once expanded. */
static int source_ok(const lb_df_step *s, const char *src, char *msg, size_t msgsz, int line)
{
    const char *k = lb_df_kind_name(s->kind);
    if (strstr(src, "://") || !strncmp(src, "git@", 4)) {
        lb_say(msg, msgsz, "Dockerfile:%d: %s takes files from the build context only, not from a URL; "
                        "download in a RUN step.", line, k);
        return LB_E_INVAL;
    }
    if (strchr(src, '$'))
        return LB_OK;
    const char *p = src;
    while (*p == '/')
        p++;
    if (!*p || !strcmp(p, "."))
        return LB_OK;
    char clean[LB_PATH_MAX + 1];
    if (lb_path_clean_rel(p, strlen(p), clean, sizeof clean) != LB_OK) {
        lb_say(msg, msgsz, "Dockerfile:%d: %s's source %.200s is not a path inside the build context.", line, k, src);
        return LB_E_INVAL;
    }
    return LB_OK;
}

/* A stage's AS name: [a-z][a-z0-9._-]*, any case (Docker's), capped. */
static int stage_name_ok(const char *p)
{
    size_t n = strlen(p);
    if (!n || n > LB_DF_STAGE_NAME_MAX || !((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z')))
        return 0;
    return strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* The index of the stage named name (without case) among stages [0, upto), or -1. */
static int stage_find(const lb_dockerfile *df, const char *name, int upto)
{
    for (int i = 0; i < upto && i < LB_DF_STAGES_MAX; i++)
        if (df->stage_names[i] && !strcasecmp(df->stage_names[i], name))
            return i;
    return -1;
}

/* FROM's stage: its AS name recorded (once in the file), and an image
 * that names an earlier stage builds on it; naming itself is refused here,
 * a later stage once the whole file is read (stages_check). */
static int from_stage(lb_dockerfile *df, lb_df_step *s, char *msg, size_t msgsz)
{
    if (s->argc == 3) {
        if (stage_find(df, s->argv[2], s->stage) >= 0) {
            lb_say(msg, msgsz, "Dockerfile:%d: the stage name \"%s\" is used twice.", s->line, s->argv[2]);
            return LB_E_INVAL;
        }
        if (!strcasecmp(s->argv[0], s->argv[2])) {
            lb_say(msg, msgsz, "Dockerfile:%d: FROM %s names its own stage; a stage builds on an image or an "
                               "earlier stage.", s->line, s->argv[0]);
            return LB_E_INVAL;
        }
        if (!(df->stage_names[s->stage] = strdup(s->argv[2])))
            return LB_E_NOMEM;
        for (char *c = df->stage_names[s->stage]; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    }
    s->from_stage = stage_find(df, s->argv[0], s->stage);
    return LB_OK;
}

/* A number of 0..LB_DF_STAGES_MAX-1 (a stage's index), else -1. */
static int stage_number(const char *v)
{
    if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 2)
        return -1;
    long n = strtol(v, NULL, 10); /* at most two digits, checked above */
    return n < LB_DF_STAGES_MAX ? (int)n : -1;
}

/* True when v reads as an image reference rather than a stage's name: it
 * has a registry, a path, a tag or a digest. */
static int looks_like_image(const char *v)
{
    return strpbrk(v, "/:@.") != NULL;
}

/* COPY --from=: an earlier stage (by name or number), or an image
 * reference; itself, a later stage and an unknown name are refused (the
 * later ones once the whole file is read, stages_check). */
static int copy_from_stage(lb_dockerfile *df, lb_df_step *s, char *msg, size_t msgsz)
{
    int own = s->stage, num = stage_number(s->from);
    int named = stage_find(df, s->from, own + 1);
    if (num == own || named == own) {
        lb_say(msg, msgsz, "Dockerfile:%d: COPY --from=%s names its own stage; it may copy from an earlier one.",
               s->line, s->from);
        return LB_E_INVAL;
    }
    if (num >= 0) {
        if (num > own) {
            lb_say(msg, msgsz, "Dockerfile:%d: COPY --from=%d names a later stage; it may copy from an earlier one.",
                   s->line, num);
            return LB_E_INVAL;
        }
        s->from_stage = num;
        return LB_OK;
    }
    s->from_stage = named;
    if (named < 0 && strchr(s->from, '$')) {
        lb_say(msg, msgsz, "Dockerfile:%d: COPY --from= takes a stage or an image as written, without variables.",
               s->line);
        return LB_E_INVAL;
    }
    return LB_OK;
}

/* Once every stage is known: a FROM or COPY --from that names a stage
 * declared later (the way a cycle would be made), or a --from that is
 * neither a stage nor an image reference, is refused. */
static int stages_check(const lb_dockerfile *df, char *msg, size_t msgsz)
{
    for (int i = 0; i < df->n; i++) {
        const lb_df_step *s = &df->steps[i];
        const char *v = s->kind == LB_DF_FROM ? s->argv[0] : s->kind == LB_DF_COPY ? s->from : NULL;
        if (!v || s->from_stage >= 0)
            continue;
        if (stage_find(df, v, df->nstages) >= 0) {
            lb_say(msg, msgsz, "Dockerfile:%d: %s %s names a later stage; a stage builds on and copies from "
                               "earlier ones only.", s->line, s->kind == LB_DF_FROM ? "FROM" : "COPY --from", v);
            return LB_E_INVAL;
        }
        if (s->kind == LB_DF_COPY && !looks_like_image(v)) {
            lb_say(msg, msgsz, "Dockerfile:%d: COPY --from=%s names no stage of this Dockerfile (an image "
                               "reference has a tag, a registry or a path: name:tag).", s->line, v);
            return LB_E_INVAL;
        }
    }
    return LB_OK;
}

/* --flags at the start of rest: COPY/ADD --chown= and --chmod=, FROM
 * --platform=linux/amd64; anything else refused. Returns rest past them. */
static int flags(lb_df_step *s, const char **rest, char *msg, size_t msgsz, int line)
{
    const char *p = *rest, *k = lb_df_kind_name(s->kind);
    while (!strncmp(p, "--", 2)) {
        size_t n = strcspn(p, " \t");
        const char *eq = memchr(p, '=', n);
        size_t kl = eq ? (size_t)(eq - p) : n;
        const char *v = eq ? eq + 1 : "";
        size_t vl = eq ? n - kl - 1 : 0;
        int copy = s->kind == LB_DF_COPY || s->kind == LB_DF_ADD;
        if (copy && kl == 7 && !strncmp(p, "--chown", 7) && vl && !s->chown) {
            if (!(s->chown = strndup(v, vl)))
                return LB_E_NOMEM;
        } else if (copy && kl == 7 && !strncmp(p, "--chmod", 7) && vl && vl <= 4 && !s->chmod &&
                   strspn(v, "01234567") >= vl) {
            if (!(s->chmod = strndup(v, vl)))
                return LB_E_NOMEM;
        } else if (s->kind == LB_DF_COPY && kl == 6 && !strncmp(p, "--from", 6) && vl && !s->from) {
            if (vl > LB_DF_FROM_MAX) {
                lb_say(msg, msgsz, "Dockerfile:%d: COPY --from= takes a stage or an image of at most %d bytes.", line,
                       LB_DF_FROM_MAX);
                return LB_E_INVAL;
            }
            if (!(s->from = strndup(v, vl)))
                return LB_E_NOMEM;
        } else if (s->kind == LB_DF_FROM && kl == 10 && !strncmp(p, "--platform", 10) && vl == 11 &&
                   !strncmp(v, "linux/amd64", 11)) {
            /* the only platform llmbox runs */
        } else {
            lb_say(msg, msgsz, "Dockerfile:%d: %s %.*s is not supported%s.", line, k, (int)(kl > 40 ? 40 : kl), p,
                s->kind == LB_DF_ADD && kl == 6 && !strncmp(p, "--from", 6) ? " (COPY takes --from)" : "");
            return LB_E_INVAL;
        }
        p += n;
        while (is_space(*p))
            p++;
    }
    *rest = p;
    return LB_OK;
}

/* One logical line, "INSTRUCTION rest", into a new step. */
static int parse_step(lb_dockerfile *df, const char *text, int line, char esc, char *msg, size_t msgsz)
{
    const char *p = text;
    size_t wl = 0;
    while ((p[wl] >= 'A' && p[wl] <= 'Z') || (p[wl] >= 'a' && p[wl] <= 'z'))
        wl++;
    if (!wl || (p[wl] && !is_space(p[wl]))) {
        lb_say(msg, msgsz, "Dockerfile:%d: a line must start with an instruction.", line);
        return LB_E_INVAL;
    }
    lb_df_kind kind = 0;
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (strlen(KINDS[i].name) == wl && !strncasecmp(p, KINDS[i].name, wl))
            kind = KINDS[i].kind;
    if (!kind) {
        char up[24];
        size_t n = wl < sizeof up - 1 ? wl : sizeof up - 1;
        for (size_t i = 0; i < n; i++)
            up[i] = (char)(p[i] >= 'a' && p[i] <= 'z' ? p[i] - 'a' + 'A' : p[i]);
        up[n] = '\0';
        for (size_t i = 0; i < sizeof UNSUPPORTED / sizeof UNSUPPORTED[0]; i++)
            if (!strcmp(up, UNSUPPORTED[i])) {
                lb_say(msg, msgsz, "Dockerfile:%d: %s is not supported by llmbox's builder (it takes FROM, RUN, COPY, "
                                "ADD, ENV, ARG, WORKDIR, USER, LABEL and SHELL).", line, up);
                return LB_E_INVAL;
            }
        lb_say(msg, msgsz, "Dockerfile:%d: unknown instruction %s%s.", line, up, wl > n ? "..." : "");
        return LB_E_INVAL;
    }
    if (df->n >= LB_DF_STEPS_MAX) {
        lb_say(msg, msgsz, "Dockerfile:%d: more than %d instructions.", line, LB_DF_STEPS_MAX);
        return LB_E_TOOBIG;
    }
    const char *k = lb_df_kind_name(kind);
    lb_df_step *s = &df->steps[df->n++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->line = line;
    const char *rest = p + wl;
    while (is_space(*rest))
        rest++;
    if (!*rest) {
        lb_say(msg, msgsz, "Dockerfile:%d: %s needs arguments.", line, k);
        return LB_E_INVAL;
    }
    if (kind == LB_DF_FROM && df->nstages >= LB_DF_STAGES_MAX) {
        lb_say(msg, msgsz, "Dockerfile:%d: more than %d stages (FROM).", line, LB_DF_STAGES_MAX);
        return LB_E_TOOBIG;
    }
    s->stage = df->nstages - (kind == LB_DF_FROM ? 0 : 1);
    s->from_stage = -1;
    if (kind != LB_DF_FROM && kind != LB_DF_ARG && df->from_index < 0) {
        lb_say(msg, msgsz, "Dockerfile:%d: %s before FROM; only ARG may come before it.", line, k);
        return LB_E_INVAL;
    }
    int rc = LB_OK;
    if (kind == LB_DF_RUN && !strncmp(rest, "--", 2)) {
        lb_say(msg, msgsz, "Dockerfile:%d: RUN %.*s is not supported.", line, (int)strcspn(rest, " \t="), rest);
        return LB_E_INVAL;
    }
    if ((kind == LB_DF_COPY || kind == LB_DF_ADD || kind == LB_DF_FROM) && (rc = flags(s, &rest, msg, msgsz, line)))
        return rc;
    switch (kind) {
    case LB_DF_FROM:
        if (df->from_index < 0)
            df->from_index = df->n - 1;
        df->nstages++;
        if ((rc = split_plain(s, rest)))
            break;
        if (!(s->argc == 1 || (s->argc == 3 && !strcasecmp(s->argv[1], "AS") && stage_name_ok(s->argv[2])))) {
            lb_say(msg, msgsz, "Dockerfile:%d: FROM takes an image and optionally AS and a stage name "
                               "([a-z][a-z0-9._-]*, at most %d bytes).", line, LB_DF_STAGE_NAME_MAX);
            return LB_E_INVAL;
        }
        if ((rc = from_stage(df, s, msg, msgsz)) != LB_E_NOMEM && rc)
            return rc; /* the sentence is said */
        break;
    case LB_DF_RUN:
        if (!try_exec_form(s, rest, &rc) && !rc)
            rc = add_arg(s, rest, strlen(rest));
        if (!rc && !s->argc) {
            lb_say(msg, msgsz, "Dockerfile:%d: RUN has an empty command.", line);
            return LB_E_INVAL;
        }
        break;
    case LB_DF_SHELL:
        if (!try_exec_form(s, rest, &rc) || rc || !s->argc) {
            lb_say(msg, msgsz, "Dockerfile:%d: SHELL takes a JSON array of strings, such as [\"/bin/bash\", \"-c\"].",
                line);
            return rc ? rc : LB_E_INVAL;
        }
        break;
    case LB_DF_COPY:
    case LB_DF_ADD:
        if (!try_exec_form(s, rest, &rc) && !rc)
            rc = split_plain(s, rest);
        if (rc)
            break;
        if (s->argc < 2) {
            lb_say(msg, msgsz, "Dockerfile:%d: %s takes one or more sources and a destination.", line, k);
            return LB_E_INVAL;
        }
        for (int i = 0; i < s->argc - 1; i++)
            if ((rc = source_ok(s, s->argv[i], msg, msgsz, line)))
                return rc;
        if (s->from && (rc = copy_from_stage(df, s, msg, msgsz)))
            return rc; /* the sentence is said */
        break;
    case LB_DF_ENV:
    case LB_DF_LABEL: {
        size_t first = strcspn(rest, " \t");
        if (kind == LB_DF_ENV && !memchr(rest, '=', first)) {
            /* the old form: ENV NAME the rest of the line */
            const char *v = rest + first;
            while (is_space(*v))
                v++;
            if (!name_ok(rest, first) || !*v) {
                lb_say(msg, msgsz, "Dockerfile:%d: ENV takes NAME=value pairs (or NAME and a value).", line);
                return LB_E_INVAL;
            }
            lb_buf kv;
            lb_buf_init(&kv, LB_DF_LINE_MAX + 8);
            rc = lb_buf_append(&kv, rest, first);
            rc = rc ? rc : lb_buf_append(&kv, "=", 1);
            rc = rc ? rc : lb_buf_append(&kv, v, strlen(v));
            rc = rc ? rc : add_arg(s, kv.data, kv.len);
            lb_buf_free(&kv);
            break;
        }
        if ((rc = split_quoted(s, rest, esc, msg, msgsz, line)))
            return rc;
        for (int i = 0; i < s->argc; i++) {
            const char *eq = strchr(s->argv[i], '=');
            size_t nl = eq ? (size_t)(eq - s->argv[i]) : 0;
            if (!eq || !nl || (kind == LB_DF_ENV && !name_ok(s->argv[i], nl))) {
                lb_say(msg, msgsz, "Dockerfile:%d: %s takes NAME=value pairs; \"%.60s\" is not one.", line, k,
                    s->argv[i]);
                return LB_E_INVAL;
            }
        }
        break;
    }
    case LB_DF_ARG:
        if ((rc = split_quoted(s, rest, esc, msg, msgsz, line)))
            return rc;
        for (int i = 0; i < s->argc; i++) {
            size_t nl = strcspn(s->argv[i], "=");
            if (!name_ok(s->argv[i], nl)) {
                lb_say(msg, msgsz, "Dockerfile:%d: ARG takes NAME or NAME=default; \"%.60s\" is not one.", line,
                    s->argv[i]);
                return LB_E_INVAL;
            }
        }
        break;
    case LB_DF_WORKDIR:
    case LB_DF_USER: {
        size_t n = strlen(rest);
        while (n && is_space(rest[n - 1]))
            n--;
        rc = add_arg(s, rest, n);
        break;
    }
    }
    if (rc == LB_E_TOOBIG)
        lb_say(msg, msgsz, "Dockerfile:%d: %s has more than %d arguments.", line, k, LB_DF_ARGS_MAX);
    else if (rc)
        lb_say(msg, msgsz, "Dockerfile:%d: out of memory.", line);
    return rc;
}

int lb_dockerfile_parse(const char *text, size_t n, lb_dockerfile *out, char *msg, size_t msgsz)
{
    memset(out, 0, sizeof *out);
    out->from_index = -1;
    if (n > LB_DF_FILE_MAX) {
        lb_say(msg, msgsz, "Dockerfile:1: the file is larger than %d bytes.", LB_DF_FILE_MAX);
        return LB_E_TOOBIG;
    }
    if (memchr(text, '\0', n)) {
        lb_say(msg, msgsz, "Dockerfile:1: the file holds a NUL byte; it is not text.");
        return LB_E_INVAL;
    }
    out->steps = calloc(LB_DF_STEPS_MAX, sizeof *out->steps);
    if (!out->steps)
        return LB_E_NOMEM;
    char esc = '\\';
    lb_buf logical;
    lb_buf_init(&logical, LB_DF_LINE_MAX);
    int rc = LB_OK, line = 0, start = 0, directives = 1, open = 0;
    size_t i = 0;
    while (i < n && !rc) {
        size_t e = i;
        while (e < n && text[e] != '\n')
            e++;
        line++;
        const char *l = text + i;
        size_t ll = e - i;
        i = e + 1;
        if (ll && l[ll - 1] == '\r')
            ll--;
        size_t b = 0;
        while (b < ll && is_space(l[b]))
            b++;
        if (b < ll && l[b] == '#') {
            /* parser directives: "# escape=`" before anything else */
            if (directives && !open) {
                const char *d = l + b + 1;
                size_t dl = ll - b - 1;
                while (dl && is_space(*d)) {
                    d++;
                    dl--;
                }
                if (dl >= 7 && !strncasecmp(d, "escape=", 7)) {
                    if (dl == 8 && (d[7] == '\\' || d[7] == '`')) {
                        esc = d[7];
                    } else {
                        lb_say(msg, msgsz, "Dockerfile:%d: the escape directive takes \\ or `.", line);
                        rc = LB_E_INVAL;
                    }
                    continue;
                }
                if (!(dl >= 7 && !strncasecmp(d, "syntax=", 7)))
                    directives = 0;
            }
            continue; /* a comment, also inside a continued instruction */
        }
        directives = 0;
        if (b == ll && !open)
            continue;
        if (!open)
            start = line;
        size_t t = ll;
        while (t > b && is_space(l[t - 1]))
            t--;
        int cont = t > b && l[t - 1] == esc;
        if ((rc = lb_buf_append(&logical, l + b, cont ? t - 1 - b : (open ? ll - b : t - b)))) {
            lb_say(msg, msgsz, "Dockerfile:%d: an instruction longer than %d bytes.", start, LB_DF_LINE_MAX);
            break;
        }
        if (cont) {
            open = 1;
            continue;
        }
        open = 0;
        rc = parse_step(out, logical.data ? logical.data : "", start, esc, msg, msgsz);
        lb_buf_reset(&logical);
    }
    if (!rc && open && logical.len)
        rc = parse_step(out, logical.data, start, esc, msg, msgsz);
    lb_buf_free(&logical);
    if (!rc && out->from_index < 0) {
        lb_say(msg, msgsz, "Dockerfile:%d: there is no FROM.", line ? line : 1);
        rc = LB_E_INVAL;
    }
    if (!rc)
        rc = stages_check(out, msg, msgsz);
    return rc;
}

int lb_df_expand(const char *s, const char *(*lookup)(void *ctx, const char *name), void *ctx, char **out,
                 char *msg, size_t msgsz)
{
    lb_buf b;
    lb_buf_init(&b, LB_DF_EXPAND_MAX);
    int rc = LB_OK;
    for (const char *p = s; *p && !rc; p++) {
        if (*p == '\\' && (p[1] == '$' || p[1] == '\\')) {
            rc = lb_buf_append(&b, ++p, 1);
            continue;
        }
        if (*p != '$') {
            rc = lb_buf_append(&b, p, 1);
            continue;
        }
        char name[256];
        const char *word = NULL;
        char op = 0;
        if (p[1] == '{') {
            const char *q = p + 2;
            size_t nl = 0;
            while (name_ok(q, nl + 1) && nl < sizeof name - 1)
                nl++;
            if (!nl) {
                lb_say(msg, msgsz, "A ${...} has no variable name.");
                rc = LB_E_INVAL;
                break;
            }
            memcpy(name, q, nl);
            name[nl] = '\0';
            q += nl;
            if (q[0] == ':' && (q[1] == '-' || q[1] == '+')) {
                op = q[1];
                word = q + 2;
                q = strchr(word, '}');
            } else if (*q != '}') {
                q = NULL;
            }
            if (!q) {
                lb_say(msg, msgsz, "A ${%s...} is not closed or uses an operator other than :- and :+.", name);
                rc = LB_E_INVAL;
                break;
            }
            const char *v = lookup(ctx, name);
            if (op == '-' && (!v || !*v))
                rc = lb_buf_append(&b, word, (size_t)(q - word));
            else if (op == '+')
                rc = v && *v ? lb_buf_append(&b, word, (size_t)(q - word)) : LB_OK;
            else if (v)
                rc = lb_buf_appends(&b, v);
            p = q;
            continue;
        }
        size_t nl = 0;
        while (name_ok(p + 1, nl + 1) && nl < sizeof name - 1)
            nl++;
        if (!nl) {
            rc = lb_buf_append(&b, p, 1); /* a lone '$' stays */
            continue;
        }
        memcpy(name, p + 1, nl);
        name[nl] = '\0';
        const char *v = lookup(ctx, name);
        if (v)
            rc = lb_buf_appends(&b, v);
        p += nl;
    }
    if (rc == LB_E_TOOBIG)
        lb_say(msg, msgsz, "An argument is longer than %d bytes once its variables are expanded.", LB_DF_EXPAND_MAX);
    if (rc) {
        lb_buf_free(&b);
        return rc;
    }
    size_t len;
    *out = b.data ? lb_buf_steal(&b, &len) : strdup("");
    return *out ? LB_OK : LB_E_NOMEM;
}
