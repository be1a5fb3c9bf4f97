/* Loading evaluation datasets (dataset.h): the official JSONL/JSON-array
 * format and the folder form. Every row is parsed on its own, so an error
 * names the row's file and line; a whole-dataset problem stops the load
 * before anything runs, a row's own problem only marks that row. */
#include "eval/dataset.h"
#include "common/image_ref.h"
#include "common/path.h"
#include "common/utf8.h"
#include "common/util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ID_MAX 256          /* bytes of an id: official ids are short names */
#define DOMAIN_MAX 64       /* bytes of a domain name: it heads a table row */
#define QA_TYPE_MAX 64
#define SCORER_MAX 64
#define DIR_DEPTH_MAX 8     /* files/ sub-folders deep: real inputs are flat or one level */
#define SCRIPT_MAX (1u << 20) /* a folder dataset's scorer.py */

void lb_eval_limits_default(lb_eval_limits *lim)
{
    lim->max_rows = 100000;
    lim->max_row_bytes = (size_t)32 << 20;
    lim->max_file_bytes = (size_t)16 << 20;
    lim->max_files_per_row = 256;
    lim->max_total_bytes = (size_t)1 << 30;
}

static const char *const SCORERS[] = {"exact", "numeric", "choice", "boxed", "script", "judge"};

int lb_eval_scorer_known(const char *name)
{
    for (size_t i = 0; name && i < sizeof SCORERS / sizeof SCORERS[0]; i++)
        if (!strcmp(name, SCORERS[i]))
            return 1;
    return 0;
}

const char *lb_eval_default_scorer(const char *domain)
{
    if (!domain)
        return "exact";
    if (!strcasecmp(domain, "math"))
        return "boxed";
    if (!strcasecmp(domain, "chem") || !strcasecmp(domain, "chemistry") || !strcasecmp(domain, "biomed"))
        return "choice";
    if (!strcasecmp(domain, "physics") || !strcasecmp(domain, "long_context"))
        return "judge";
    return "exact";
}

void lb_eval_row_free(lb_eval_row *row)
{
    if (!row)
        return;
    free(row->id);
    free(row->domain);
    free(row->problem);
    free(row->qa_type);
    free(row->image);
    free(row->scorer);
    free(row->ground_truth_json);
    for (size_t i = 0; i < row->nfiles; i++) {
        free(row->files[i].name);
        free(row->files[i].data);
    }
    free(row->files);
    for (size_t i = 0; i < row->ndocuments; i++)
        free(row->documents[i]);
    free(row->documents);
    free(row->row_json);
    free(row->error);
    memset(row, 0, sizeof *row);
}

void lb_eval_dataset_free(lb_eval_dataset *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        lb_eval_row_free(&d->rows[i]);
    free(d->rows);
    free(d->script);
    memset(d, 0, sizeof *d);
}

/* ---- one row ------------------------------------------------------------ */

typedef struct where {
    const char *file;
    long line;
    char *err;
    size_t errsz;
} where;

/* Writes "FILE:LINE: field `f`: reason" (field may be NULL) and returns rc. */
__attribute__((format(printf, 4, 5))) static int fail(const where *w, int rc, const char *field,
                                                      const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (field)
        snprintf(w->err, w->errsz, "%s:%ld: field `%s`: %s", w->file, w->line, field, why);
    else
        snprintf(w->err, w->errsz, "%s:%ld: %s", w->file, w->line, why);
    return rc;
}

/* Marks the row as not runnable (the first reason wins). */
__attribute__((format(printf, 3, 4))) static int row_error(lb_eval_row *row, const where *w, const char *fmt, ...)
{
    if (row->error)
        return LB_OK;
    char why[512], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(msg, sizeof msg, "%s:%ld: %s", w->file, w->line, why);
    row->error = strdup(msg);
    return row->error ? LB_OK : LB_E_NOMEM;
}

/* True when s (n bytes) is valid UTF-8 without control characters: text
 * that heads a table row or names a task. */
static int printable(const char *s, size_t n)
{
    if (!lb_utf8_valid(s, n))
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

/* A short required or optional label (id, domain, qa_type, scorer). */
static int take_label(const cJSON *o, const char *field, size_t max, int required, const where *w, char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return fail(w, LB_E_INVAL, field, "missing");
        return LB_OK;
    }
    if (!cJSON_IsString(v))
        return fail(w, LB_E_INVAL, field, "not a string");
    size_t n = strlen(v->valuestring);
    if (n == 0 || n > max)
        return fail(w, LB_E_INVAL, field, "must be 1 to %zu bytes, is %zu", max, n);
    if (!printable(v->valuestring, n))
        return fail(w, LB_E_INVAL, field, "not printable UTF-8 (control characters or invalid bytes)");
    *out = strdup(v->valuestring);
    return *out ? LB_OK : LB_E_NOMEM;
}

static int take_id(const cJSON *o, const char *default_id, const where *w, char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        /* the range first: casting a double out of long long's range is undefined */
        if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != (double)(long long)d)
            return fail(w, LB_E_INVAL, "id", "a number id must be a whole number below 2^53");
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)d);
        *out = strdup(buf);
        return *out ? LB_OK : LB_E_NOMEM;
    }
    if ((!v || cJSON_IsNull(v)) && default_id) {
        *out = strdup(default_id);
        return *out ? LB_OK : LB_E_NOMEM;
    }
    return take_label(o, "id", ID_MAX, 1, w, out);
}

/* A long text field (the problem, a document): valid UTF-8, may be big. */
static int text_ok(const char *s, const char *field, const where *w)
{
    if (!lb_utf8_valid(s, strlen(s)))
        return fail(w, LB_E_INVAL, field, "not valid UTF-8");
    return LB_OK;
}

/* Adds a file to the row, taking ownership of data (freed on failure). */
static int add_file(lb_eval_row *row, const char *name, unsigned char *data, size_t len)
{
    lb_eval_file *f = realloc(row->files, (row->nfiles + 1) * sizeof *f);
    if (!f) {
        free(data);
        return LB_E_NOMEM;
    }
    row->files = f;
    char *nm = strdup(name);
    if (!nm) {
        free(data);
        return LB_E_NOMEM;
    }
    row->files[row->nfiles++] = (lb_eval_file){nm, data, len};
    return LB_OK;
}

static int has_file(const lb_eval_row *row, const char *name)
{
    for (size_t i = 0; i < row->nfiles; i++)
        if (!strcmp(row->files[i].name, name))
            return 1;
    return 0;
}

/* input_files: {"name": "text", ...}, or that object as a JSON string (the
 * official sets store it so); "" and null mean none. */
static int take_input_files(const cJSON *o, const lb_eval_limits *lim, const where *w, lb_eval_row *row)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "input_files");
    cJSON *parsed = NULL;
    int rc = LB_OK;
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
            s++;
        if (!*s)
            return LB_OK;
        const char *end = NULL;
        parsed = cJSON_ParseWithOpts(s, &end, 1);
        if (!parsed)
            return fail(w, LB_E_INVAL, "input_files", "a string that is not a JSON object (near byte %zu)",
                        end ? (size_t)(end - v->valuestring) : 0);
        v = parsed;
    }
    if (!cJSON_IsObject(v)) {
        rc = fail(w, LB_E_INVAL, "input_files", "neither an object {name: text} nor such an object as a string");
        goto out;
    }
    const cJSON *it;
    size_t count = 0;
    cJSON_ArrayForEach(it, v) {
        count++;
        char clean[LB_PATH_MAX + 1];
        const char *name = it->string ? it->string : "";
        if (lb_path_clean_rel(name, strlen(name), clean, sizeof clean) != LB_OK) {
            rc = fail(w, LB_E_INVAL, "input_files", "the name \"%.80s\" is not a safe relative path", name);
            goto out;
        }
        if (!cJSON_IsString(it)) {
            rc = fail(w, LB_E_INVAL, "input_files", "the content of \"%.80s\" is not a string", clean);
            goto out;
        }
        if (has_file(row, clean)) {
            rc = fail(w, LB_E_INVAL, "input_files", "\"%.80s\" appears twice", clean);
            goto out;
        }
        size_t len = strlen(it->valuestring);
        if (len > lim->max_file_bytes) {
            rc = row_error(row, w, "field `input_files`: \"%.80s\" is %zu bytes, over the cap of %zu", clean, len,
                           lim->max_file_bytes);
            continue;
        }
        if (count > lim->max_files_per_row) {
            rc = row_error(row, w, "field `input_files`: more than %zu files", lim->max_files_per_row);
            continue;
        }
        if (row->error)
            continue; /* the row will not run: keep no more of its bytes */
        unsigned char *data = malloc(len + 1);
        if (!data) {
            rc = LB_E_NOMEM;
            goto out;
        }
        memcpy(data, it->valuestring, len + 1);
        rc = add_file(row, clean, data, len);
        if (rc != LB_OK)
            goto out;
    }
out:
    cJSON_Delete(parsed);
    return rc;
}

/* documents: an array of strings (or of {"text"|"content": string}), or
 * that array as a JSON string. */
static int take_documents(const cJSON *o, const where *w, lb_eval_row *row)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "documents");
    cJSON *parsed = NULL;
    int rc = LB_OK;
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    if (cJSON_IsString(v)) {
        parsed = cJSON_Parse(v->valuestring);
        if (!parsed)
            return fail(w, LB_E_INVAL, "documents", "a string that is not a JSON array");
        v = parsed;
    }
    if (!cJSON_IsArray(v)) {
        rc = fail(w, LB_E_INVAL, "documents", "not an array");
        goto out;
    }
    int n = cJSON_GetArraySize(v);
    if (n > 0) {
        row->documents = calloc((size_t)n, sizeof *row->documents);
        if (!row->documents) {
            rc = LB_E_NOMEM;
            goto out;
        }
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        const cJSON *t = it;
        if (cJSON_IsObject(it)) {
            t = cJSON_GetObjectItemCaseSensitive(it, "text");
            if (!t)
                t = cJSON_GetObjectItemCaseSensitive(it, "content");
        }
        if (!cJSON_IsString(t)) {
            rc = fail(w, LB_E_INVAL, "documents", "document %zu is not a string (nor {\"text\": string})",
                      row->ndocuments + 1);
            goto out;
        }
        rc = text_ok(t->valuestring, "documents", w);
        if (rc != LB_OK)
            goto out;
        row->documents[row->ndocuments] = strdup(t->valuestring);
        if (!row->documents[row->ndocuments]) {
            rc = LB_E_NOMEM;
            goto out;
        }
        row->ndocuments++;
    }
out:
    cJSON_Delete(parsed);
    return rc;
}

/* 1-based line of byte off in text, counted from first_line. */
static long line_at(const char *text, size_t off, long first_line)
{
    long l = first_line;
    for (size_t i = 0; i < off; i++)
        l += text[i] == '\n';
    return l;
}

/* Fills row from the object o (the fields of dataset.h). */
/* The row's optional `image`: a debootstrap name or an image reference
 * (common/image_ref.h, local names allowed). A malformed one refuses the
 * whole dataset, not the row alone: the evaluation would run half its rows
 * in an image nobody asked for. Whether it exists is the caller's check
 * (the store and the registries are not the parser's). */
static int take_image(const cJSON *o, const where *w, char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "image");
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    if (!cJSON_IsString(v))
        return fail(w, LB_E_INVAL, "image", "not a string");
    size_t n = strlen(v->valuestring);
    if (n < 1 || n > LB_IMAGE_REF_MAX)
        return fail(w, LB_E_INVAL, "image", "must be 1 to %d bytes, is %zu", LB_IMAGE_REF_MAX, n);
    if (!printable(v->valuestring, n))
        return fail(w, LB_E_INVAL, "image", "not printable UTF-8 (control characters or invalid bytes)");
    lb_image_ref ref;
    char why[200];
    if (lb_image_ref_parse(v->valuestring, LB_IMAGE_REF_LOCAL, &ref, why, sizeof why) != LB_OK)
        return fail(w, LB_E_INVAL, "image", "\"%s\" is not an image name or reference: %s", v->valuestring, why);
    *out = strdup(v->valuestring);
    return *out ? LB_OK : LB_E_NOMEM;
}

static int row_from_object(const cJSON *o, const lb_eval_limits *lim, const char *default_id, const where *w,
                           lb_eval_row *row)
{
    int rc = take_id(o, default_id, w, &row->id);
    if (rc == LB_OK)
        rc = take_label(o, "domain", DOMAIN_MAX, 1, w, &row->domain);
    if (rc != LB_OK)
        return rc;
    const char *pfield = "problem_statement";
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, pfield);
    if (!p) {
        pfield = "problem";
        p = cJSON_GetObjectItemCaseSensitive(o, pfield);
    }
    if (!p)
        return fail(w, LB_E_INVAL, "problem_statement", "missing");
    if (!cJSON_IsString(p))
        return fail(w, LB_E_INVAL, pfield, "not a string");
    if (!p->valuestring[0])
        return fail(w, LB_E_INVAL, pfield, "empty");
    rc = text_ok(p->valuestring, pfield, w);
    if (rc != LB_OK)
        return rc;
    row->problem = strdup(p->valuestring);
    if (!row->problem)
        return LB_E_NOMEM;
    const cJSON *gt = cJSON_GetObjectItemCaseSensitive(o, "ground_truth");
    if (!gt)
        return fail(w, LB_E_INVAL, "ground_truth", "missing");
    row->ground_truth_json = cJSON_PrintUnformatted(gt);
    if (!row->ground_truth_json)
        return LB_E_NOMEM;
    rc = take_label(o, "qa_type", QA_TYPE_MAX, 0, w, &row->qa_type);
    if (rc == LB_OK)
        rc = take_label(o, "scorer", SCORER_MAX, 0, w, &row->scorer);
    if (rc != LB_OK)
        return rc;
    rc = take_image(o, w, &row->image);
    if (rc != LB_OK)
        return rc;
    if (row->scorer && !lb_eval_scorer_known(row->scorer)) {
        rc = row_error(row, w, "field `scorer`: unknown scorer \"%s\" (exact, numeric, choice, boxed, script, judge)",
                       row->scorer);
        if (rc != LB_OK)
            return rc;
    }
    if (!row->scorer) {
        row->scorer = strdup(lb_eval_default_scorer(row->domain));
        if (!row->scorer)
            return LB_E_NOMEM;
    }
    const cJSON *script = cJSON_GetObjectItemCaseSensitive(o, "scorer_script");
    if (script && !cJSON_IsNull(script) && !cJSON_IsString(script))
        return fail(w, LB_E_INVAL, "scorer_script", "not a string");
    row->has_script = cJSON_IsString(script) && script->valuestring[0];
    rc = take_input_files(o, lim, w, row);
    if (rc == LB_OK)
        rc = take_documents(o, w, row);
    if (rc != LB_OK)
        return rc;
    row->row_json = cJSON_PrintUnformatted(o);
    return row->row_json ? LB_OK : LB_E_NOMEM;
}

static int row_parse(const char *text, size_t n, const lb_eval_limits *lim, const char *default_id,
                     const where *w, lb_eval_row *row)
{
    memset(row, 0, sizeof *row);
    if (n > lim->max_row_bytes)
        return fail(w, LB_E_TOOBIG, NULL, "the row is %zu bytes, over the cap of %zu", n, lim->max_row_bytes);
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    if (!o) {
        size_t off = end && end >= text && end <= text + n ? (size_t)(end - text) : 0;
        where at = *w;
        at.line = line_at(text, off, w->line);
        return fail(&at, LB_E_INVAL, NULL, "not valid JSON (at byte %zu of the row)", off);
    }
    int rc = LB_OK;
    size_t used = (size_t)(end - text);
    for (size_t i = used; i < n; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r') {
            where at = *w;
            at.line = line_at(text, i, w->line);
            rc = fail(&at, LB_E_INVAL, NULL, "text after the row's JSON object");
            goto out;
        }
    if (!cJSON_IsObject(o)) {
        rc = fail(w, LB_E_INVAL, NULL, "the row is not a JSON object");
        goto out;
    }
    rc = row_from_object(o, lim, default_id, w, row);
out:
    cJSON_Delete(o);
    if (rc != LB_OK)
        lb_eval_row_free(row);
    return rc;
}

int lb_eval_row_parse(const char *text, size_t n, const lb_eval_limits *lim, const char *file, long line,
                      lb_eval_row *row, char *err, size_t errsz)
{
    lb_eval_limits def;
    if (!lim) {
        lb_eval_limits_default(&def);
        lim = &def;
    }
    where w = {file ? file : "-", line, err, errsz};
    return row_parse(text, n, lim, NULL, &w, row);
}

/* ---- the dataset -------------------------------------------------------- */

typedef struct loader {
    const lb_eval_limits *lim;
    const char *path;
    lb_eval_dataset *d;
    long *lines;       /* each row's line, for the duplicate-id message */
    char **files;      /* each row's file (folder form), NULL for the file forms */
    size_t cap;
    size_t total;      /* bytes of the dataset so far */
    char *err;
    size_t errsz;
} loader;

static int push_row(loader *L, lb_eval_row *row, long line, const char *file)
{
    if (L->d->n >= L->lim->max_rows) {
        lb_eval_row_free(row);
        snprintf(L->err, L->errsz, "%s:%ld: more than %zu rows (the cap)", file, line, L->lim->max_rows);
        return LB_E_TOOBIG;
    }
    if (L->d->n == L->cap) {
        size_t nc = L->cap ? L->cap * 2 : 64;
        lb_eval_row *r = realloc(L->d->rows, nc * sizeof *r);
        if (r)
            L->d->rows = r;
        long *l = r ? realloc(L->lines, nc * sizeof *l) : NULL;
        if (l)
            L->lines = l;
        char **f = l ? realloc(L->files, nc * sizeof *f) : NULL;
        if (!f) {
            lb_eval_row_free(row);
            return LB_E_NOMEM;
        }
        L->files = f;
        L->cap = nc;
    }
    L->files[L->d->n] = file == L->path ? NULL : strdup(file);
    L->lines[L->d->n] = line;
    L->d->rows[L->d->n++] = *row;
    return LB_OK;
}

static int add_bytes(loader *L, size_t n, const char *file, long line)
{
    L->total += n;
    if (L->total > L->lim->max_total_bytes) {
        snprintf(L->err, L->errsz, "%s:%ld: the dataset is over the cap of %zu bytes", file, line,
                 L->lim->max_total_bytes);
        return LB_E_TOOBIG;
    }
    return LB_OK;
}

static int parse_one(loader *L, const char *text, size_t n, long line)
{
    lb_eval_row row;
    where w = {L->path, line, L->err, L->errsz};
    int rc = row_parse(text, n, L->lim, NULL, &w, &row);
    return rc == LB_OK ? push_row(L, &row, line, L->path) : rc;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int load_lines(loader *L, const char *text, size_t len)
{
    long line = 1;
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t s = i;
        while (s < end && is_blank(text[s]))
            s++;
        if (s < end) {
            int rc = parse_one(L, text + s, end - s, line);
            if (rc != LB_OK)
                return rc;
        }
        i = end + 1;
        line++;
    }
    return LB_OK;
}

/* A JSON array of rows, split into its elements by a scan that follows
 * strings and nesting, so each element is parsed (and its errors placed)
 * on its own. */
static int load_array(loader *L, const char *text, size_t len, size_t start)
{
    size_t i = start + 1;
    long line = line_at(text, i, 1);
    for (;;) {
        while (i < len && is_blank(text[i]))
            line += text[i++] == '\n';
        if (i >= len)
            break;
        if (text[i] == ']' && L->d->n == 0) {
            i++;
            goto tail;
        }
        size_t s = i;
        long sline = line;
        int depth = 0, in_str = 0;
        for (; i < len; i++) {
            char c = text[i];
            line += c == '\n';
            if (in_str) {
                if (c == '\\')
                    i++;
                else if (c == '"')
                    in_str = 0;
            } else if (c == '"') {
                in_str = 1;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (depth == 0)
                    break;
                depth--;
            } else if (c == ',' && depth == 0) {
                break;
            }
        }
        if (i >= len)
            break;
        size_t e = i;
        while (e > s && is_blank(text[e - 1]))
            e--;
        if (e == s) {
            snprintf(L->err, L->errsz, "%s:%ld: an empty element in the array", L->path, sline);
            return LB_E_INVAL;
        }
        int rc = parse_one(L, text + s, e - s, sline);
        if (rc != LB_OK)
            return rc;
        if (text[i++] == ']')
            goto tail;
    }
    snprintf(L->err, L->errsz, "%s:%ld: the array is not closed with `]`", L->path, line);
    return LB_E_INVAL;
tail:
    for (; i < len; i++) {
        if (!is_blank(text[i])) {
            snprintf(L->err, L->errsz, "%s:%ld: text after the array", L->path, line_at(text, i, 1));
            return LB_E_INVAL;
        }
    }
    return LB_OK;
}

/* A dataset file's text: a JSON array, else JSONL. */
static int split_text(loader *L, const char *text, size_t len)
{
    size_t i = 0;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) /* a byte-order mark some editors write */
        i = 3;
    while (i < len && is_blank(text[i]))
        i++;
    if (i < len && text[i] == '[')
        return load_array(L, text, len, i);
    return load_lines(L, text, len);
}

static int load_text_file(loader *L)
{
    char *text = NULL;
    size_t len = 0;
    int rc = lb_read_file(L->path, L->lim->max_total_bytes, &text, &len);
    if (rc == LB_E_TOOBIG) {
        snprintf(L->err, L->errsz, "%s: the dataset is over the cap of %zu bytes", L->path, L->lim->max_total_bytes);
        return rc;
    }
    if (rc != LB_OK) {
        snprintf(L->err, L->errsz, "%s: cannot read it: %s", L->path, strerror(errno));
        return rc;
    }
    L->total = len;
    rc = split_text(L, text, len);
    free(text);
    return rc;
}

/* Reads a regular file under dirfd without following a symlink; max caps
 * it (LB_E_TOOBIG, *size says how big). */
static int read_at(int dirfd, const char *name, size_t max, unsigned char **out, size_t *len, size_t *size)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? LB_E_NOTFOUND : LB_E_IO;
    struct stat st;
    int rc = LB_OK;
    unsigned char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = LB_E_INVAL;
        goto out;
    }
    *size = (size_t)st.st_size;
    if ((size_t)st.st_size > max) {
        rc = LB_E_TOOBIG;
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        rc = LB_E_NOMEM;
        goto out;
    }
    size_t got = 0;
    while (got <= (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size + 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = LB_E_IO;
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    if (got > (size_t)st.st_size) { /* grew while we read: refuse rather than cut */
        rc = LB_E_TOOBIG;
        goto out;
    }
    buf[got] = 0;
    *out = buf;
    *len = got;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of an open directory (not . and ..), sorted; at most max. */
static int list_dir(int dirfd, size_t max, char ***names, size_t *n)
{
    int fd = dup(dirfd);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0)
            close(fd);
        return LB_E_IO;
    }
    char **v = NULL;
    size_t k = 0, cap = 0;
    int rc = LB_OK;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (k >= max) {
            rc = LB_E_TOOBIG;
            break;
        }
        if (k == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                rc = LB_E_NOMEM;
                break;
            }
            v = nv;
        }
        if (!(v[k] = strdup(de->d_name))) {
            rc = LB_E_NOMEM;
            break;
        }
        k++;
    }
    closedir(dir);
    if (rc != LB_OK) {
        for (size_t i = 0; i < k; i++)
            free(v[i]);
        free(v);
        return rc;
    }
    if (k)
        qsort(v, k, sizeof *v, cmp_names);
    *names = v;
    *n = k;
    return LB_OK;
}

static void free_names(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Adds every regular file under dirfd (prefix: its path below files/) to
 * the row; a file over the caps, a symlink or a special file marks the row. */
static int walk_files(loader *L, int dirfd, const char *prefix, int depth, const where *w, lb_eval_row *row)
{
    char **names = NULL;
    size_t n = 0;
    int rc = list_dir(dirfd, L->lim->max_files_per_row + 1, &names, &n);
    if (rc == LB_E_TOOBIG)
        return row_error(row, w, "files/%s: more than %zu files", prefix, L->lim->max_files_per_row);
    if (rc != LB_OK)
        return fail(w, rc, NULL, "cannot list files/%s", prefix);
    for (size_t i = 0; i < n && rc == LB_OK && !row->error; i++) {
        char rel[LB_PATH_MAX + 1], clean[LB_PATH_MAX + 1];
        snprintf(rel, sizeof rel, "%s%s%s", prefix, prefix[0] ? "/" : "", names[i]);
        if (lb_path_clean_rel(rel, strlen(rel), clean, sizeof clean) != LB_OK) {
            rc = row_error(row, w, "files/%.80s: not a safe file name", rel);
            break;
        }
        struct stat st;
        if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = fail(w, LB_E_IO, NULL, "cannot stat files/%s: %s", clean, strerror(errno));
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            if (depth >= DIR_DEPTH_MAX) {
                rc = row_error(row, w, "files/%s: folders nested deeper than %d", clean, DIR_DEPTH_MAX);
                break;
            }
            int sub = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                rc = fail(w, LB_E_IO, NULL, "cannot open files/%s: %s", clean, strerror(errno));
                break;
            }
            rc = walk_files(L, sub, clean, depth + 1, w, row);
            close(sub);
            continue;
        }
        if (!S_ISREG(st.st_mode)) {
            rc = row_error(row, w, "files/%s: not a regular file (a symbolic link or a special file)", clean);
            break;
        }
        if (row->nfiles >= L->lim->max_files_per_row) {
            rc = row_error(row, w, "files/: more than %zu files", L->lim->max_files_per_row);
            break;
        }
        if (has_file(row, clean)) {
            rc = row_error(row, w, "files/%s: also given in input_files", clean);
            break;
        }
        unsigned char *data = NULL;
        size_t len = 0, size = 0;
        int r = read_at(dirfd, names[i], L->lim->max_file_bytes, &data, &len, &size);
        if (r == LB_E_TOOBIG) {
            rc = row_error(row, w, "files/%s is %zu bytes, over the cap of %zu", clean, size,
                           L->lim->max_file_bytes);
            break;
        }
        if (r != LB_OK) {
            rc = fail(w, r, NULL, "cannot read files/%s: %s", clean, lb_strerror(r));
            break;
        }
        rc = add_bytes(L, len, w->file, w->line);
        if (rc == LB_OK)
            rc = add_file(row, clean, data, len);
        else
            free(data);
    }
    free_names(names, n);
    return rc;
}

/* One row folder: row.json (its id defaults to the folder's name) and
 * files/. */
static int load_row_dir(loader *L, int top, const char *name)
{
    char file[4096];
    snprintf(file, sizeof file, "%s/%s/row.json", L->path, name);
    where w = {file, 1, L->err, L->errsz};
    int dfd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return fail(&w, LB_E_IO, NULL, "cannot open the row folder: %s", strerror(errno));
    unsigned char *text = NULL;
    size_t len = 0, size = 0;
    lb_eval_row row;
    memset(&row, 0, sizeof row);
    int rc = read_at(dfd, "row.json", L->lim->max_row_bytes, &text, &len, &size);
    if (rc == LB_E_TOOBIG)
        rc = fail(&w, rc, NULL, "%zu bytes, over the cap of %zu", size, L->lim->max_row_bytes);
    else if (rc == LB_E_NOTFOUND)
        rc = fail(&w, rc, NULL, "missing (every folder of a folder dataset is a row)");
    else if (rc != LB_OK)
        rc = fail(&w, rc, NULL, "cannot read it (a regular file is needed)");
    if (rc == LB_OK)
        rc = add_bytes(L, len, file, 1);
    if (rc == LB_OK)
        rc = row_parse((const char *)text, len, L->lim, name, &w, &row);
    if (rc != LB_OK)
        goto out;
    int ffd = openat(dfd, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ffd >= 0) {
        char fwhere[4096];
        snprintf(fwhere, sizeof fwhere, "%s/%s/files", L->path, name);
        where fw = {fwhere, 1, L->err, L->errsz};
        rc = walk_files(L, ffd, "", 0, &fw, &row);
        close(ffd);
    } else if (errno != ENOENT) {
        rc = fail(&w, LB_E_IO, NULL, "files/ is not a folder");
    }
    if (rc != LB_OK) {
        lb_eval_row_free(&row);
        goto out;
    }
    rc = push_row(L, &row, 1, file);
out:
    free(text);
    close(dfd);
    return rc;
}

static int load_folder(loader *L)
{
    int top = open(L->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top < 0) {
        snprintf(L->err, L->errsz, "%s: cannot open the folder: %s", L->path, strerror(errno));
        return LB_E_IO;
    }
    char **names = NULL;
    size_t n = 0;
    int rc = list_dir(top, L->lim->max_rows + 64, &names, &n);
    if (rc != LB_OK) {
        snprintf(L->err, L->errsz, "%s: %s", L->path,
                 rc == LB_E_TOOBIG ? "more entries than the row cap allows" : "cannot list the folder");
        goto out;
    }
    for (size_t i = 0; i < n && rc == LB_OK; i++) {
        struct stat st;
        if (names[i][0] == '.' || fstatat(top, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            rc = load_row_dir(L, top, names[i]);
        } else if (!strcmp(names[i], "scorer.py") && S_ISREG(st.st_mode)) {
            unsigned char *s = NULL;
            size_t len = 0, size = 0;
            rc = read_at(top, names[i], SCRIPT_MAX, &s, &len, &size);
            if (rc != LB_OK)
                snprintf(L->err, L->errsz, "%s/scorer.py: %s", L->path,
                         rc == LB_E_TOOBIG ? "over the cap of 1 MiB" : "cannot read it");
            else
                L->d->script = (char *)s;
        }
        /* other files (a README, a licence) are not rows: left alone */
    }
out:
    free_names(names, n);
    close(top);
    return rc;
}

static int cmp_ids(const void *a, const void *b, void *arg)
{
    const lb_eval_row *rows = arg;
    return strcmp(rows[*(const size_t *)a].id, rows[*(const size_t *)b].id);
}

static int check_duplicates(loader *L)
{
    size_t n = L->d->n;
    if (n < 2)
        return LB_OK;
    size_t *ix = malloc(n * sizeof *ix);
    if (!ix)
        return LB_E_NOMEM;
    for (size_t i = 0; i < n; i++)
        ix[i] = i;
    qsort_r(ix, n, sizeof *ix, cmp_ids, L->d->rows);
    int rc = LB_OK;
    for (size_t i = 1; i < n; i++) {
        size_t a = ix[i - 1], b = ix[i];
        if (strcmp(L->d->rows[a].id, L->d->rows[b].id))
            continue;
        if (a > b) {
            size_t t = a;
            a = b;
            b = t;
        }
        const char *fb = L->files[b] ? L->files[b] : L->path;
        const char *fa = L->files[a] ? L->files[a] : L->path;
        snprintf(L->err, L->errsz, "%s:%ld: field `id`: duplicate id \"%.80s\" (first at %s:%ld)", fb,
                 L->lines[b], L->d->rows[b].id, fa, L->lines[a]);
        rc = LB_E_EXISTS;
        break;
    }
    free(ix);
    return rc;
}

/* The checks of a whole dataset once its rows are read, and the
 * loader's cleanup; on failure *L->d is emptied. */
static int finish(loader *L, int rc)
{
    if (rc == LB_OK && L->d->n == 0) {
        snprintf(L->err, L->errsz, "%s: no rows", L->path);
        rc = LB_E_INVAL;
    }
    if (rc == LB_OK)
        rc = check_duplicates(L);
    /* a script row needs a program; a folder's scorer.py is known only now */
    for (size_t i = 0; rc == LB_OK && i < L->d->n; i++) {
        lb_eval_row *r = &L->d->rows[i];
        if (!r->error && !strcmp(r->scorer, "script") && !r->has_script && !L->d->script) {
            where w = {L->files[i] ? L->files[i] : L->path, L->lines[i], L->err, L->errsz};
            rc = row_error(r, &w, "field `scorer`: the script scorer needs a program: the row's `scorer_script`, "
                                  "or a folder dataset's scorer.py");
        }
    }
    if (rc == LB_E_NOMEM && L->errsz && L->err[0] == 0)
        snprintf(L->err, L->errsz, "%s: out of memory", L->path);
    for (size_t i = 0; i < L->d->n; i++)
        free(L->files[i]);
    free(L->files);
    free(L->lines);
    if (rc != LB_OK)
        lb_eval_dataset_free(L->d);
    return rc;
}

int lb_eval_dataset_load(const char *path, const lb_eval_limits *lim, lb_eval_dataset *out, char *err,
                         size_t errsz)
{
    lb_eval_limits def;
    if (!lim) {
        lb_eval_limits_default(&def);
        lim = &def;
    }
    memset(out, 0, sizeof *out);
    if (errsz)
        err[0] = 0;
    loader L = {.lim = lim, .path = path, .d = out, .err = err, .errsz = errsz};
    struct stat st;
    int rc;
    if (stat(path, &st) != 0) {
        snprintf(err, errsz, "%s: %s", path, strerror(errno));
        rc = LB_E_NOTFOUND;
    } else if (S_ISDIR(st.st_mode)) {
        rc = load_folder(&L);
    } else {
        rc = load_text_file(&L);
    }
    return finish(&L, rc);
}

int lb_eval_dataset_parse(const char *text, size_t len, const char *name, const lb_eval_limits *lim,
                          lb_eval_dataset *out, char *err, size_t errsz)
{
    lb_eval_limits def;
    if (!lim) {
        lb_eval_limits_default(&def);
        lim = &def;
    }
    memset(out, 0, sizeof *out);
    if (errsz)
        err[0] = 0;
    loader L = {.lim = lim, .path = name ? name : "-", .d = out, .err = err, .errsz = errsz};
    int rc;
    if (len > lim->max_total_bytes) {
        snprintf(err, errsz, "%s: the dataset is over the cap of %zu bytes", L.path, lim->max_total_bytes);
        rc = LB_E_TOOBIG;
    } else {
        L.total = len;
        rc = split_text(&L, text, len);
    }
    return finish(&L, rc);
}
