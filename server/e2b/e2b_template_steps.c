/* E2B's template steps as a Dockerfile (e2b_template_steps.h). The
 * Dockerfile is what the SDK's own Template.toDockerfile() would write,
 * with three differences that keep a client's words from meaning more
 * than they say: RUN is the exec form of /bin/sh -c with '$' and '\'
 * escaped (the builder expands variables in every word; the shell must
 * see the command as the user wrote it), COPY is the exec form with its
 * sources under files/<hash>/, and no word may hold a control character
 * (a newline would start an instruction of the client's choosing). */
#include "e2b/e2b_template_steps.h"

#include "common/image_ref.h"
#include "common/path.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tr {
    lb_buf *out;
    char *msg;
    size_t msgsz;
    char *step;
    char *cur_user;     /* the last USER written, or NULL: the base image's */
} tr;

static int fail(tr *t, const char *step, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(tr *t, const char *step, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->msg, t->msgsz, fmt, ap);
    va_end(ap);
    snprintf(t->step, 16, "%s", step);
    return rc;
}

/* No C0 control, DEL, within the word cap; newlines and tabs only where
 * the word goes into a JSON string (allow_nl). */
static int word_ok(const char *s, int allow_nl)
{
    size_t n = strnlen(s, LB_E2B_TPL_WORD_MAX + 1);
    if (n > LB_E2B_TPL_WORD_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0x7f || (c < 0x20 && !(allow_nl && (c == '\n' || c == '\t'))))
            return 0;
    }
    return 1;
}

/* Whether every ${...} in s is one the builder expands (lb_df_expand's
 * grammar: ${NAME}, ${NAME:-word}, ${NAME:+word}), so a value left to the
 * builder's expansion cannot fail the build later with a harder sentence. */
static int vars_ok(const char *s)
{
    for (const char *p = strchr(s, '$'); p; p = strchr(p + 1, '$')) {
        if (p[1] != '{')
            continue;
        const char *q = p + 2;
        size_t n = 0;
        while ((q[n] >= 'A' && q[n] <= 'Z') || (q[n] >= 'a' && q[n] <= 'z') || q[n] == '_' ||
               (n && q[n] >= '0' && q[n] <= '9'))
            n++;
        if (!n || n > 255)
            return 0;
        if (q[n] == '}')
            continue;
        if (q[n] != ':' || (q[n + 1] != '-' && q[n + 1] != '+') || !strchr(q + n + 2, '}'))
            return 0;
    }
    return 1;
}

/* s with '\' and '$' escaped, so lb_df_expand gives s back (malloc'd). */
static char *literal(const char *s)
{
    size_t n = strlen(s), k = 0;
    char *o = malloc(2 * n + 1);
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' || s[i] == '$')
            o[k++] = '\\';
        o[k++] = s[i];
    }
    o[k] = '\0';
    return o;
}

/* A JSON array of the words made literal: the exec form's argument. */
static int exec_form(tr *t, const char *const *w, int n)
{
    cJSON *a = cJSON_CreateArray();
    int rc = a ? LB_OK : LB_E_NOMEM;
    for (int i = 0; !rc && i < n; i++) {
        char *l = literal(w[i]);
        cJSON *e = l ? cJSON_CreateString(l) : NULL;
        free(l);
        if (!e || !cJSON_AddItemToArray(a, e)) {
            cJSON_Delete(e);
            rc = LB_E_NOMEM;
        }
    }
    char *j = rc ? NULL : cJSON_PrintUnformatted(a);
    if (!rc && !j)
        rc = LB_E_NOMEM;
    /* the parser's logical line: a command near the word cap escapes to more */
    if (!rc && strlen(j) > 60000)
        rc = LB_E_TOOBIG;
    if (!rc)
        rc = lb_buf_append(t->out, j, strlen(j));
    free(j);
    cJSON_Delete(a);
    return rc;
}

/* A user of RUN or USER: a name as useradd takes it, or uid[:gid]. */
static int user_ok(const char *u)
{
    size_t n = strlen(u);
    if (!n || n > 32)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((u[i] >= 'a' && u[i] <= 'z') || (u[i] >= 'A' && u[i] <= 'Z') || (u[i] >= '0' && u[i] <= '9') ||
              u[i] == '_' || u[i] == '.' || u[i] == '-' || u[i] == ':'))
            return 0;
    return u[0] != '-';
}

/* Exactly n hex digits (either case). */
static int hex_ok(const char *s, size_t n)
{
    return strlen(s) == n && strspn(s, "0123456789abcdefABCDEF") == n;
}

static int env_name_ok(const char *k)
{
    size_t n = strlen(k);
    if (!n || n > 255 || (k[0] >= '0' && k[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= '0' && k[i] <= '9') ||
              k[i] == '_'))
            return 0;
    return 1;
}

static int set_user(tr *t, const char *u)
{
    char *d = strdup(u);
    if (!d)
        return LB_E_NOMEM;
    free(t->cur_user);
    t->cur_user = d;
    return lb_buf_printf(t->out, "USER %s\n", u);
}

/* The step's args as strings: NULL (after the sentence) when one is not. */
static int args_of(tr *t, const char *sn, const cJSON *step, const char **a, int max, int *n)
{
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(step, "args");
    *n = 0;
    if (args && !cJSON_IsNull(args) && !cJSON_IsArray(args))
        return fail(t, sn, LB_E_INVAL, "Step %s: its args must be an array of strings.", sn);
    const cJSON *e;
    cJSON_ArrayForEach(e, args) {
        if (!cJSON_IsString(e))
            return fail(t, sn, LB_E_INVAL, "Step %s: its args must be an array of strings.", sn);
        if (*n >= max)
            return fail(t, sn, LB_E_INVAL, "Step %s has more args than its kind takes (%d).", sn, max);
        a[(*n)++] = e->valuestring;
    }
    return LB_OK;
}

static int do_run(tr *t, const char *sn, const char **a, int n)
{
    if (n < 1 || !a[0][0])
        return fail(t, sn, LB_E_INVAL, "Step %s (runCmd) has no command.", sn);
    if (!word_ok(a[0], 1))
        return fail(t, sn, LB_E_INVAL, "Step %s (runCmd): the command holds a control character or is longer than "
                    "%d bytes.", sn, LB_E2B_TPL_WORD_MAX);
    const char *u = n > 1 && a[1][0] ? a[1] : NULL;
    if (u && !user_ok(u))
        return fail(t, sn, LB_E_INVAL, "Step %s (runCmd): the user \"%.40s\" is not a user name or uid.", sn, u);
    /* E2B's user of one command: USER around it, then back (to root when
     * no USER came before: Docker's default, the base image's own User
     * is not known here) */
    int switched = u && (!t->cur_user || strcmp(t->cur_user, u));
    char *prev = switched && t->cur_user ? strdup(t->cur_user) : NULL;
    int rc = LB_OK;
    if (switched && t->cur_user && !prev)
        return LB_E_NOMEM;
    if (switched)
        rc = set_user(t, u);
    const char *argv[3] = {"/bin/sh", "-c", a[0]};
    rc = rc ? rc : lb_buf_append(t->out, "RUN ", 4);
    rc = rc ? rc : exec_form(t, argv, 3);
    rc = rc ? rc : lb_buf_append(t->out, "\n", 1);
    if (!rc && switched)
        rc = set_user(t, prev ? prev : "root");
    free(prev);
    if (rc == LB_E_TOOBIG)
        return fail(t, sn, rc, "Step %s (runCmd): the command is too long once escaped for the Dockerfile.", sn);
    return rc;
}

static int do_copy(tr *t, const char *sn, const cJSON *step, const char **a, int n, char (*hashes)[65],
                   int max_hashes, int *n_hashes)
{
    if (n < 2)
        return fail(t, sn, LB_E_INVAL, "Step %s (copy) needs a source and a destination.", sn);
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(step, "filesHash");
    if (!cJSON_IsString(h) || !hex_ok(h->valuestring, 64))
        return fail(t, sn, LB_E_INVAL, "Step %s (copy) has no filesHash (64 hex digits): the SDK sends one.", sn);
    char hash[65];
    for (int i = 0; i < 64; i++) /* the folder's name: one spelling of the hash */
        hash[i] = (char)(h->valuestring[i] >= 'A' && h->valuestring[i] <= 'F' ? h->valuestring[i] + 32
                                                                                : h->valuestring[i]);
    hash[64] = '\0';
    /* the source inside the upload: "." is all of it */
    char clean[LB_PATH_MAX + 1] = "";
    const char *s = a[0];
    while (s[0] == '.' && s[1] == '/')
        s += 2;
    if (strcmp(s, ".") && strcmp(s, "") &&
        lb_path_clean_rel(s, strlen(s), clean, sizeof clean) != LB_OK)
        return fail(t, sn, LB_E_INVAL, "Step %s (copy): the source \"%.80s\" is not a relative path inside the "
                    "template's folder.", sn, a[0]);
    if (!a[1][0] || !word_ok(a[1], 0))
        return fail(t, sn, LB_E_INVAL, "Step %s (copy): the destination is empty or holds a control character.", sn);
    const char *user = n > 2 ? a[2] : "", *mode = n > 3 ? a[3] : "";
    char chown[80] = "";
    if (!strcmp(user, "root")) {
        snprintf(chown, sizeof chown, "--chown=0:0 ");
    } else if (user[0]) {
        size_t d = strspn(user, "0123456789");
        if (!d || d > 10 || (user[d] && (user[d] != ':' || !user[d + 1] || strspn(user + d + 1, "0123456789") !=
                                                                                strlen(user + d + 1) ||
                                         strlen(user + d + 1) > 10)))
            return fail(t, sn, LB_E_INVAL, "Step %s (copy): the user \"%.40s\" is not a number: llmbox's COPY takes "
                        "a numeric owner (uid or uid:gid) or root (names would need the image's /etc/passwd).", sn,
                        user);
        snprintf(chown, sizeof chown, "--chown=%s ", user);
    }
    char chmod[16] = "";
    if (mode[0]) {
        size_t ml = strlen(mode);
        if (ml > 4 || strspn(mode, "01234567") != ml)
            return fail(t, sn, LB_E_INVAL, "Step %s (copy): the mode \"%.20s\" is not an octal mode.", sn, mode);
        snprintf(chmod, sizeof chmod, "--chmod=%s ", mode);
    }
    char src[LB_PATH_MAX + 128];
    snprintf(src, sizeof src, "%s/%s%s%s", LB_E2B_TPL_FILES_DIR, hash, clean[0] ? "/" : "", clean);
    int known = 0;
    for (int i = 0; i < *n_hashes; i++)
        known |= !strcmp(hashes[i], hash);
    if (!known) {
        if (*n_hashes >= max_hashes)
            return fail(t, sn, LB_E_TOOBIG, "Step %s (copy): more than %d copies.", sn, max_hashes);
        memcpy(hashes[(*n_hashes)++], hash, 65);
    }
    const char *argv[2] = {src, a[1]};
    int rc = lb_buf_printf(t->out, "COPY %s%s", chown, chmod);
    rc = rc ? rc : exec_form(t, argv, 2);
    rc = rc ? rc : lb_buf_append(t->out, "\n", 1);
    return rc;
}

/* ENV "K=v" pairs: in double quotes with '"' and '\' escaped; '$' is
 * left to the builder, as in a Dockerfile the SDK writes itself. */
static int do_env(tr *t, const char *sn, const char **a, int n)
{
    if (n < 2 || n % 2)
        return fail(t, sn, LB_E_INVAL, "Step %s (setEnvs) needs name and value pairs.", sn);
    int rc = lb_buf_append(t->out, "ENV", 3);
    for (int i = 0; !rc && i < n; i += 2) {
        if (!env_name_ok(a[i]))
            return fail(t, sn, LB_E_INVAL, "Step %s (setEnvs): \"%.60s\" is not a variable name ([A-Za-z_][A-Za-z0-9_]*).",
                        sn, a[i]);
        if (!word_ok(a[i + 1], 0))
            return fail(t, sn, LB_E_INVAL, "Step %s (setEnvs): the value of %s holds a control character or is longer "
                        "than %d bytes.", sn, a[i], LB_E2B_TPL_WORD_MAX);
        if (!vars_ok(a[i + 1]))
            return fail(t, sn, LB_E_INVAL, "Step %s (setEnvs): the value of %s has a ${...} that is not ${NAME}, "
                        "${NAME:-default} or ${NAME:+alternative}.", sn, a[i]);
        rc = lb_buf_printf(t->out, " %s=\"", a[i]);
        for (const char *p = a[i + 1]; !rc && *p; p++)
            rc = (*p == '"' || *p == '\\') ? lb_buf_printf(t->out, "\\%c", *p) : lb_buf_append(t->out, p, 1);
        rc = rc ? rc : lb_buf_append(t->out, "\"", 1);
    }
    return rc ? rc : lb_buf_append(t->out, "\n", 1);
}

/* Marks the lines written since *from (1-based: *line) as step's. */
static void mark_lines(const lb_buf *out, size_t *from, int *line, int step, int *line_steps, int max_lines)
{
    for (size_t i = *from; i < out->len; i++)
        if (out->data[i] == '\n') {
            if (line_steps && *line < max_lines)
                line_steps[*line] = step;
            (*line)++;
        }
    *from = out->len;
}

int lb_e2b_tpl_dockerfile(const cJSON *tpl, lb_buf *out, char (*hashes)[65], int max_hashes, int *n_hashes,
                          int *line_steps, int max_lines, char *msg, size_t msgsz, char step[16])
{
    for (int l = 0; line_steps && l < max_lines; l++)
        line_steps[l] = 0;
    size_t marked = 0;
    int line = 1;
    tr t = {out, msg, msgsz, step, NULL};
    *n_hashes = 0;
    msg[0] = '\0';
    snprintf(step, 16, "base");
    if (!cJSON_IsObject(tpl))
        return fail(&t, "base", LB_E_INVAL, "The template must be a JSON object.");
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(tpl, "fromImage");
    const cJSON *from_tpl = cJSON_GetObjectItemCaseSensitive(tpl, "fromTemplate");
    const cJSON *reg = cJSON_GetObjectItemCaseSensitive(tpl, "fromImageRegistry");
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(tpl, "startCmd");
    const cJSON *ready = cJSON_GetObjectItemCaseSensitive(tpl, "readyCmd");
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(tpl, "steps");
    if (reg && !cJSON_IsNull(reg))
        return fail(&t, "base", LB_E_INVAL, "Registry credentials in a template (fromImage with credentials, "
                    "fromAWSRegistry, fromGCPRegistry) are not supported by llmbox: give the registry's credentials to "
                    "llmbox (docs/IMAGES.md) and use fromImage without them.");
    /* a template is an llmbox image here, so fromTemplate is a FROM too */
    const cJSON *base = cJSON_IsString(from_tpl) ? from_tpl : img;
    if (!cJSON_IsString(base) || !base->valuestring[0])
        return fail(&t, "base", LB_E_INVAL, "The template has no fromImage.");
    const char *b = base->valuestring;
    /* the one reference parser (common/image_ref.h): it also keeps out
     * blanks, quotes, '$' and a leading '-' (FROM would read a flag) */
    lb_image_ref ref;
    char rm[256];
    if (!word_ok(b, 0) || lb_image_ref_parse(b, LB_IMAGE_REF_LOCAL, &ref, rm, sizeof rm) != LB_OK)
        return fail(&t, "base", LB_E_INVAL, "The base image \"%.80s\" is not an image reference: %s", b,
                    word_ok(b, 0) ? rm : "it holds a control character.");
    if ((cJSON_IsString(start) && start->valuestring[0]) || (cJSON_IsString(ready) && ready->valuestring[0]))
        return fail(&t, "finalize", LB_E_INVAL, "setStartCmd and setReadyCmd are not supported by llmbox: a sandbox "
                    "starts no command of its image; start it with commands.run after Sandbox.create.");
    if (steps && !cJSON_IsNull(steps) && !cJSON_IsArray(steps))
        return fail(&t, "base", LB_E_INVAL, "The template's steps must be an array.");
    if (cJSON_GetArraySize(steps) > LB_E2B_TPL_STEPS_MAX)
        return fail(&t, "base", LB_E_TOOBIG, "The template has %d steps; llmbox builds at most %d.",
                    cJSON_GetArraySize(steps), LB_E2B_TPL_STEPS_MAX);
    int rc = lb_buf_printf(out, "# llmbox: from an E2B template (Template.build)\nFROM %s\n", b);
    mark_lines(out, &marked, &line, 0, line_steps, max_lines);
    int i = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, steps) {
        if (rc)
            break;
        char sn[16];
        snprintf(sn, sizeof sn, "%d", ++i);
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(s, "type");
        const char *a[64];
        int n = 0;
        if (!cJSON_IsObject(s) || !cJSON_IsString(ty)) {
            rc = fail(&t, sn, LB_E_INVAL, "Step %s has no type.", sn);
            break;
        }
        if ((rc = args_of(&t, sn, s, a, 64, &n)))
            break;
        const char *k = ty->valuestring;
        if (!strcmp(k, "RUN")) {
            rc = do_run(&t, sn, a, n);
        } else if (!strcmp(k, "COPY")) {
            rc = do_copy(&t, sn, s, a, n, hashes, max_hashes, n_hashes);
        } else if (!strcmp(k, "ENV")) {
            rc = do_env(&t, sn, a, n);
        } else if (!strcmp(k, "WORKDIR")) {
            if (n != 1 || !a[0][0] || !word_ok(a[0], 0) || a[0][0] == ' ' || a[0][strlen(a[0]) - 1] == ' ' ||
                strchr(a[0], '\\') || !vars_ok(a[0]))
                rc = fail(&t, sn, LB_E_INVAL, "Step %s (setWorkdir) needs one path without control characters, "
                          "backslashes, blanks at its ends or a broken ${...}.", sn);
            else
                rc = lb_buf_printf(out, "WORKDIR %s\n", a[0]);
        } else if (!strcmp(k, "USER")) {
            if (n != 1 || !user_ok(a[0]))
                rc = fail(&t, sn, LB_E_INVAL, "Step %s (setUser): \"%.40s\" is not a user name or uid.", sn,
                          n ? a[0] : "");
            else
                rc = set_user(&t, a[0]);
        } else {
            rc = fail(&t, sn, LB_E_INVAL, "Step %s: the step type \"%.20s\" is not one llmbox's builder runs "
                      "(RUN, COPY, ENV, WORKDIR, USER).", sn, k);
        }
        if (!rc)
            mark_lines(out, &marked, &line, i, line_steps, max_lines);
        if (rc == LB_E_TOOBIG && !msg[0])
            rc = fail(&t, sn, rc, "The template's Dockerfile is larger than llmbox takes.");
        else if (rc == LB_E_NOMEM && !msg[0])
            rc = fail(&t, sn, rc, "Out of memory.");
    }
    if (rc == LB_E_TOOBIG && !msg[0])
        rc = fail(&t, "base", rc, "The template's Dockerfile is larger than llmbox takes.");
    free(t.cur_user);
    return rc;
}
