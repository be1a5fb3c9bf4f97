/* Reading llmbox.conf with libinih (the contract is config_priv.h).
 *
 * libinih's callback only collects (section, key, value, line) entries;
 * checking them is the caller's, so every error can name its line. The
 * reader inih calls for each line is ours: it counts lines, notes
 * indentation (inih reads an indented line as the continuation of the
 * previous value, which only extra_body may use), and refuses a line longer
 * than inih's 200-byte buffer instead of letting it be cut in two. */
#include "config_priv.h"
#include "status.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int conf_fail(lb_conf *cf, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int conf_fail(lb_conf *cf, int line, const char *fmt, ...)
{
    if (cf->err[0])
        return 0;
    char msg[1000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(cf->err, sizeof cf->err, "%s:%d: %s", cf->path, line, msg);
    return 0;
}

/* inih's line reader (fgets-like), over the file text in memory: counts
 * lines, notes indentation (inih reads an indented line as the
 * continuation of the previous value), and refuses a line longer than
 * inih's buffer instead of letting it be cut in two. */
static char *conf_read(char *str, int num, void *stream)
{
    lb_conf *cf = stream;
    if (cf->err[0] || cf->p >= cf->end)
        return NULL;
    const char *nl = memchr(cf->p, '\n', (size_t)(cf->end - cf->p));
    size_t len = nl ? (size_t)(nl - cf->p) + 1 : (size_t)(cf->end - cf->p);
    cf->lineno++;
    if (len > (size_t)num - 1) {
        conf_fail(cf, cf->lineno,
                  "the line is longer than %d characters; put a long extra_body on indented "
                  "continuation lines",
                  num - 2);
        return NULL;
    }
    if (memchr(cf->p, '\0', len)) {
        conf_fail(cf, cf->lineno, "the line contains a NUL byte");
        return NULL;
    }
    memcpy(str, cf->p, len);
    str[len] = '\0';
    cf->indented = str[0] == ' ' || str[0] == '\t';
    cf->p += len;
    return str;
}

static int conf_entry(void *user, const char *section, const char *name, const char *value)
{
    lb_conf *cf = user;
    int line = cf->lineno;
    if (cf->err[0])
        return 0;
    lb_entry *last = cf->n ? &cf->e[cf->n - 1] : NULL;
    if (cf->indented && last && !strcmp(last->name, name) && !strcmp(last->section, section)) {
        /* the two values that may be longer than a line: a JSON object,
         * and the token hashes of a user (old and new while rotating) */
        if (strcmp(name, "extra_body") && strcmp(name, "token_sha256"))
            return conf_fail(cf, line,
                             "this indented line would continue the value of '%s' (only extra_body and "
                             "token_sha256 may span lines); do not indent keys",
                             name);
        size_t a = strlen(last->value), b = strlen(value);
        if (a + b + 2 > 2 * LB_CFG_EXTRA_MAX)
            return conf_fail(cf, last->line, "extra_body is longer than %d bytes", LB_CFG_EXTRA_MAX - 1);
        char *nv = realloc(last->value, a + b + 2);
        if (!nv)
            return conf_fail(cf, line, "out of memory");
        nv[a] = ' ';
        memcpy(nv + a + 1, value, b + 1);
        last->value = nv;
        return 1;
    }
    if (strlen(section) >= LB_CFG_SECTION_MAX)
        return conf_fail(cf, line, "the section name [%.40s...] is too long", section);
    if (strlen(name) >= LB_CFG_KEY_MAX)
        return conf_fail(cf, line, "the key '%.40s...' is too long", name);
    for (size_t i = 0; i < cf->n; i++)
        if (!strcmp(cf->e[i].name, name) && !strcmp(cf->e[i].section, section))
            return conf_fail(cf, line, "'%s' is set a second time%s%s%s (first on line %d)", name,
                             *section ? " in [" : "", section, *section ? "]" : "", cf->e[i].line);
    if (cf->n == LB_CFG_MAX_ENTRIES)
        return conf_fail(cf, line, "more than %d settings", LB_CFG_MAX_ENTRIES);
    if (cf->n == cf->cap) {
        size_t ncap = cf->cap ? cf->cap * 2 : 32;
        lb_entry *ne = realloc(cf->e, ncap * sizeof *ne);
        if (!ne)
            return conf_fail(cf, line, "out of memory");
        cf->e = ne;
        cf->cap = ncap;
    }
    lb_entry *e = &cf->e[cf->n];
    snprintf(e->section, sizeof e->section, "%s", section);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->line = line;
    if (!(e->value = strdup(value)))
        return conf_fail(cf, line, "out of memory");
    cf->n++;
    return 1;
}

void lb_conf_free(lb_conf *cf)
{
    for (size_t i = 0; i < cf->n; i++)
        free(cf->e[i].value);
    free(cf->e);
    cf->e = NULL;
    cf->n = cf->cap = 0;
}

int lb_conf_parse(lb_conf *cf, const char *path)
{
    memset(cf, 0, sizeof *cf);
    cf->path = path;
    char *text = NULL;
    int rc = LB_E_IO;
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(cf->err, sizeof cf->err, "%s: cannot read the configuration file: %s", path, strerror(errno));
        return errno == ENOENT ? LB_E_NOTFOUND : LB_E_IO;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        /* /dev/null is accepted: "no file" on purpose */
        if (!(S_ISCHR(st.st_mode) && !strcmp(path, "/dev/null"))) {
            snprintf(cf->err, sizeof cf->err, "%s: not a regular file", path);
            goto out;
        }
    }
    text = malloc(LB_CFG_FILE_MAX + 1);
    if (!text) {
        rc = LB_E_NOMEM;
        goto out;
    }
    size_t len = fread(text, 1, LB_CFG_FILE_MAX + 1, f);
    if (ferror(f)) {
        snprintf(cf->err, sizeof cf->err, "%s: cannot read the configuration file: %s", path, strerror(errno));
        goto out;
    }
    if (len > LB_CFG_FILE_MAX) {
        snprintf(cf->err, sizeof cf->err, "%s: the configuration file is larger than %u KiB", path,
                 LB_CFG_FILE_MAX >> 10);
        rc = LB_E_TOOBIG;
        goto out;
    }
    cf->p = text;
    cf->end = text + len;
    int line = ini_parse_stream(conf_read, cf, conf_entry, cf);
    if (cf->err[0]) {
        rc = LB_E_INVAL;
        goto out;
    }
    if (line > 0) {
        snprintf(cf->err, sizeof cf->err, "%s:%d: not a 'key = value' line or a [section] header", path, line);
        rc = LB_E_INVAL;
        goto out;
    }
    if (line < 0) {
        snprintf(cf->err, sizeof cf->err, "%s: cannot parse the configuration file (out of memory)", path);
        rc = LB_E_NOMEM;
        goto out;
    }
    rc = LB_OK;
out:
    free(text);
    fclose(f);
    return rc;
}

/* [KIND "NAME"] or [KIND.NAME] -> NAME */
static int lb_conf_named_section(const char *section, const char *kind, char *name, size_t namesz)
{
    size_t k = strlen(kind), n = strlen(section);
    if (strncmp(section, kind, k) != 0)
        return 0;
    if (section[k] == '.') {
        snprintf(name, namesz, "%s", section + k + 1);
        return 1;
    }
    if (section[k] == ' ' && n >= k + 3) {
        const char *q = section + k + 1;
        while (*q == ' ')
            q++;
        size_t qn = strlen(q);
        if (qn >= 2 && q[0] == '"' && q[qn - 1] == '"') {
            snprintf(name, namesz, "%.*s", (int)(qn - 2), q + 1);
            return 1;
        }
    }
    return 0;
}

int lb_conf_model_section(const char *section, char *name, size_t namesz)
{
    return lb_conf_named_section(section, "model", name, namesz);
}

int lb_conf_user_section(const char *section, char *name, size_t namesz)
{
    return lb_conf_named_section(section, "user", name, namesz);
}

int lb_conf_secret_section(const char *section, char *name, size_t namesz)
{
    return lb_conf_named_section(section, "secret", name, namesz);
}

int lb_conf_mcp_section(const char *section, char *name, size_t namesz)
{
    return lb_conf_named_section(section, "mcp", name, namesz);
}
