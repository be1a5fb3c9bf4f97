/* file_editor: view, create, str_replace, insert and undo_edit for files
 * in the sandbox. File contents travel as data through host->read_file and
 * host->write_file, never through a shell command line, so any byte of
 * any text file round-trips (tabs, CRLF, quotes, $(...)). */
#include "llmbox/tool.h"
#include "llmbox/utf8.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FE_MAX_FILE (2u << 20)      /* files we read or write */
#define FE_MAX_VIEW (48u << 10)     /* text shown by one view */
#define FE_MAX_DIR_ENTRIES 1000     /* entries shown by a directory view */
#define FE_SNIPPET_CONTEXT 4        /* lines around an edit */
#define FE_UNDO_PER_FILE 10         /* versions kept per file for undo_edit */
#define FE_UNDO_TOTAL (8u << 20)    /* bytes kept for undo_edit, all files */

LLMBOX_PLUGIN_INIT;

static const char description[] =
    "View, create and edit files in the sandbox.\n"
    "* view: shows a file with line numbers (like `cat -n`), or a directory's non-hidden "
    "entries two levels deep. For files, view_range [start, end] limits the lines "
    "(1-based, end -1 means to the end of the file).\n"
    "* create: writes file_text to a new file (parent directories are created). It "
    "refuses to overwrite an existing file.\n"
    "* str_replace: replaces old_str with new_str. old_str must match exactly one place in "
    "the file, character for character including whitespace and indentation; include "
    "enough surrounding lines to make it unique. An empty or missing new_str deletes "
    "old_str.\n"
    "* insert: inserts new_str after line insert_line (0 inserts at the top).\n"
    "* undo_edit: reverts the last str_replace or insert on path (up to 10 steps back per "
    "file). The creation of a file cannot be undone; delete it with bash instead.\n"
    "Paths must be absolute, e.g. /testbed/output/report.md. Binary files are not shown; "
    "use bash for them. Files up to 2 MiB.";

static const char parameters[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"command\":{\"type\":\"string\",\"enum\":[\"view\",\"create\",\"str_replace\",\"insert\","
    "\"undo_edit\"],\"description\":\"The operation: view, create, str_replace, insert or undo_edit.\"},"
    "\"path\":{\"type\":\"string\",\"description\":\"Absolute path of the file or directory.\"},"
    "\"file_text\":{\"type\":\"string\",\"description\":\"create: the content of the new file.\"},"
    "\"old_str\":{\"type\":\"string\",\"description\":\"str_replace: the exact text to replace.\"},"
    "\"new_str\":{\"type\":\"string\",\"description\":\"str_replace: the replacement; insert: the text to insert.\"},"
    "\"insert_line\":{\"type\":\"integer\",\"description\":\"insert: the line after which new_str goes (0 = top).\"},"
    "\"view_range\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},"
    "\"description\":\"view: [start, end] lines, 1-based; end -1 = to the end.\"}"
    "},\"required\":[\"command\",\"path\"]}";

/* ---- a small growable string, owned by the plugin ---------------------- */

typedef struct sb {
    char *p;
    size_t len, cap;
    int oom;
} sb;

static void sb_add(sb *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 1024;
        while (ncap < b->len + n + 1)
            ncap *= 2;
        char *np = realloc(b->p, ncap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sb *b, const char *s) { sb_add(b, s, strlen(s)); }

static void sb_fmt(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_fmt(sb *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* ---- text helpers ------------------------------------------------------- */

static long count_lines(const char *d, size_t n)
{
    long lines = 0;
    for (size_t i = 0; i < n; i++)
        if (d[i] == '\n')
            lines++;
    if (n && d[n - 1] != '\n')
        lines++;
    return lines;
}

/* Byte offset where 1-based line `line` starts (n when past the end). */
static size_t line_start(const char *d, size_t n, long line)
{
    size_t i = 0;
    for (long l = 1; l < line && i < n; i++)
        if (d[i] == '\n')
            l++;
    return i;
}

/* 1-based line number of byte offset off. */
static long line_of(const char *d, size_t off)
{
    long l = 1;
    for (size_t i = 0; i < off; i++)
        if (d[i] == '\n')
            l++;
    return l;
}

/* Appends lines [from, to] of d as `cat -n` does (number, tab, line),
 * stopping at FE_MAX_VIEW bytes with a note on what was left out. */
static void show_lines(sb *b, const char *d, size_t n, long from, long to)
{
    size_t i = line_start(d, n, from);
    size_t start_len = b->len;
    for (long l = from; l <= to && i < n; l++) {
        const char *nl = memchr(d + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - d) : n;
        if (b->len - start_len + (end - i) > FE_MAX_VIEW) {
            sb_fmt(b, "[... lines %ld-%ld not shown: the view is limited to %u KiB; use view_range "
                      "to see them]\n", l, to, FE_MAX_VIEW >> 10);
            return;
        }
        sb_fmt(b, "%6ld\t", l);
        sb_add(b, d + i, end - i);
        sb_str(b, "\n");
        i = nl ? end + 1 : n;
    }
}

static void say(llmbox_result *r, const sb *b)
{
    if (b->oom) {
        static const char m[] = "The file editor ran out of memory.";
        host->result_append(r, LLMBOX_STREAM_TEXT, m, sizeof m - 1);
        return;
    }
    if (b->len)
        host->result_append(r, LLMBOX_STREAM_TEXT, b->p, b->len);
}

static void says(llmbox_result *r, const char *s)
{
    host->result_append(r, LLMBOX_STREAM_TEXT, s, strlen(s));
}

/* A sentence for a failed host call. */
static int host_error(llmbox_result *r, int st, const char *what, const char *path)
{
    sb b = {0};
    switch (st) {
    case LLMBOX_ERR_NOTFOUND:
        sb_fmt(&b, "The path %s does not exist.", path);
        break;
    case LLMBOX_ERR_EXISTS:
        sb_fmt(&b, "File already exists at: %s. 'create' does not overwrite files; use "
                   "str_replace or insert to edit it.", path);
        break;
    case LLMBOX_ERR_TOOBIG:
        sb_fmt(&b, "The file %s is larger than %u MiB; use bash (head, tail, sed -n 'A,Bp', "
                   "grep -n) to work with it.", path, FE_MAX_FILE >> 20);
        break;
    case LLMBOX_ERR_ISDIR:
        sb_fmt(&b, "The path %s is a directory.", path);
        break;
    case LLMBOX_ERR_CANCELLED:
        sb_fmt(&b, "Interrupted: the task was cancelled.");
        break;
    case LLMBOX_ERR_INVALID:
        sb_fmt(&b, "Could not %s %s: the path is not valid for this operation.", what, path);
        break;
    default:
        sb_fmt(&b, "Could not %s %s: the sandbox reported an error.", what, path);
        break;
    }
    say(r, &b);
    free(b.p);
    host->result_set_status(r, st == LLMBOX_ERR_CANCELLED ? "interrupted" : "error");
    return st ? st : LLMBOX_ERR_INTERNAL;
}

static int fail(llmbox_result *r, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(llmbox_result *r, int st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    says(r, msg);
    host->result_set_status(r, "error");
    return st;
}

/* Reads a text file for view and edits; on failure explains and returns
 * nonzero. */
static int read_text(llmbox_ctx *ctx, llmbox_result *r, const char *path, const char *what,
                     const char **data, size_t *len)
{
    int type = host->path_type(ctx, path);
    if (type < 0)
        return host_error(r, LLMBOX_ERR_SANDBOX, what, path);
    if (type == 0)
        return fail(r, LLMBOX_ERR_NOTFOUND, "The path %s does not exist.%s", path,
                    strcmp(what, "view") ? " Use the create command to make a new file." : "");
    if (type == 2)
        return fail(r, LLMBOX_ERR_ISDIR, "The path %s is a directory; %s works on files.", path, what);
    if (type != 1)
        return fail(r, LLMBOX_ERR_INVALID, "The path %s is not a regular file (a symlink or special "
                                           "file); use bash to look at it.", path);
    int st = host->read_file(ctx, path, FE_MAX_FILE, data, len);
    if (st)
        return host_error(r, st, "read", path);
    if (!llmbox_utf8_is_text(*data, *len))
        return fail(r, LLMBOX_ERR_INVALID,
                    "The file %s is binary (%zu bytes, not UTF-8 text), so it is not shown or "
                    "edited here. Inspect it with bash (file, xxd | head, python).", path, *len);
    return LLMBOX_OK;
}

/* ---- undo history ------------------------------------------------------- */
/* The plugin process lives exactly as long as its task, so the history is
 * plain static memory and goes away with the task. Versions are kept in
 * one list, oldest first: the byte cap drops the oldest versions of any
 * file, the per-file cap that file's oldest. */

typedef struct fe_version {
    char *path;
    char *data;                 /* content before the edit; NULL: the edit created the file */
    size_t len;
    uint64_t after;             /* hash of what the edit wrote, to notice later changes */
} fe_version;

static fe_version *undo_v;
static size_t undo_n, undo_cap, undo_bytes;

static uint64_t fnv1a(const char *d, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)d[i]) * 1099511628211ull;
    return h;
}

static void undo_drop(size_t i)
{
    undo_bytes -= undo_v[i].len + strlen(undo_v[i].path);
    free(undo_v[i].path);
    free(undo_v[i].data);
    memmove(undo_v + i, undo_v + i + 1, (undo_n - i - 1) * sizeof *undo_v);
    undo_n--;
}

static void undo_forget(const char *path)
{
    for (size_t i = undo_n; i-- > 0;)
        if (!strcmp(undo_v[i].path, path))
            undo_drop(i);
}

/* The process ends with the task anyway; freeing on unload keeps leak
 * checkers (and a host that dlcloses plugins) quiet. */
__attribute__((destructor)) static void undo_free_all(void)
{
    while (undo_n)
        undo_drop(undo_n - 1);
    free(undo_v);
    undo_v = NULL;
    undo_cap = 0;
}

/* Index of the newest version of path, or -1. */
static long undo_last(const char *path)
{
    for (size_t i = undo_n; i-- > 0;)
        if (!strcmp(undo_v[i].path, path))
            return (long)i;
    return -1;
}

/* Remembers old (NULL when the edit created the file) as the content of
 * path before an edit that wrote now. When the version cannot be kept (out
 * of memory), the older ones of that path go too: an undo must never skip
 * a step silently and restore something older than the model expects. */
static void undo_push(const char *path, const char *old, size_t len, const char *now, size_t now_len)
{
    fe_version v = {.path = strdup(path), .len = old ? len : 0, .after = fnv1a(now, now_len)};
    v.data = old ? malloc(len + 1) : NULL;
    if (!v.path || (old && !v.data))
        goto fail;
    if (old) {
        memcpy(v.data, old, len);
        v.data[len] = '\0';
    }
    if (!old)
        undo_forget(path); /* versions under a creation can never be reached */
    if (undo_n == undo_cap) {
        size_t ncap = undo_cap ? undo_cap * 2 : 16;
        fe_version *nv = realloc(undo_v, ncap * sizeof *nv);
        if (!nv)
            goto fail;
        undo_v = nv;
        undo_cap = ncap;
    }
    size_t cost = v.len + strlen(path), same = 0;
    long oldest = -1;
    for (size_t i = 0; i < undo_n; i++)
        if (!strcmp(undo_v[i].path, path) && same++ == 0)
            oldest = (long)i;
    if (same >= FE_UNDO_PER_FILE)
        undo_drop((size_t)oldest);
    while (undo_n && undo_bytes + cost > FE_UNDO_TOTAL)
        undo_drop(0);
    undo_v[undo_n++] = v;
    undo_bytes += cost;
    return;
fail:
    free(v.path);
    free(v.data);
    undo_forget(path);
}

/* ---- commands ----------------------------------------------------------- */

static int hidden(const char *rel)
{
    if (rel[0] == '.')
        return 1;
    return strstr(rel, "/.") != NULL;
}

static int cmp_dirent(const void *a, const void *b)
{
    return strcmp(((const llmbox_dirent *)a)->path, ((const llmbox_dirent *)b)->path);
}

static int view_dir(llmbox_ctx *ctx, llmbox_result *r, const char *path)
{
    const llmbox_dirent *ents = NULL;
    size_t n = 0;
    int st = host->list_dir(ctx, path, 2, &ents, &n);
    if (st)
        return host_error(r, st, "list", path);
    /* the host lists sorted, but a copy costs little and makes sure */
    llmbox_dirent *sorted = n ? malloc(n * sizeof *sorted) : NULL;
    if (n && !sorted)
        return fail(r, LLMBOX_ERR_INTERNAL, "Out of memory.");
    if (n)
        memcpy(sorted, ents, n * sizeof *sorted);
    if (n)
        qsort(sorted, n, sizeof *sorted, cmp_dirent);
    size_t plen = strlen(path);
    while (plen > 1 && path[plen - 1] == '/')
        plen--;
    sb b = {0};
    sb_fmt(&b, "Files and directories up to 2 levels deep in %.*s, excluding hidden items:\n",
           (int)plen, path);
    sb_fmt(&b, "%.*s%s\n", (int)plen, path, plen == 1 ? "" : "/");
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!sorted[i].path || hidden(sorted[i].path))
            continue;
        total++;
        if (shown >= FE_MAX_DIR_ENTRIES)
            continue;
        sb_fmt(&b, "%.*s/", (int)plen, plen == 1 ? "" : path);
        sb_str(&b, sorted[i].path);
        sb_str(&b, sorted[i].is_dir ? "/\n" : "\n");
        shown++;
    }
    if (total == 0)
        sb_str(&b, "(empty directory)\n");
    else if (shown < total)
        sb_fmt(&b, "[... %zu more entries not shown; use bash (find, ls) to explore]\n", total - shown);
    free(sorted);
    say(r, &b);
    free(b.p);
    host->result_set_status(r, "ok");
    return LLMBOX_OK;
}

static int view(llmbox_ctx *ctx, llmbox_result *r, const char *path, const cJSON *range)
{
    int type = host->path_type(ctx, path);
    if (type < 0)
        return host_error(r, LLMBOX_ERR_SANDBOX, "view", path);
    if (type == 2) {
        if (range)
            return fail(r, LLMBOX_ERR_INVALID, "view_range is only for files; %s is a directory.", path);
        return view_dir(ctx, r, path);
    }
    const char *d;
    size_t n;
    int st = read_text(ctx, r, path, "view", &d, &n);
    if (st)
        return st;
    long lines = count_lines(d, n);
    long from = 1, to = lines;
    if (range) {
        const cJSON *a = cJSON_GetArrayItem(range, 0), *z = cJSON_GetArrayItem(range, 1);
        if (cJSON_GetArraySize(range) != 2 || !cJSON_IsNumber(a) || !cJSON_IsNumber(z))
            return fail(r, LLMBOX_ERR_INVALID, "view_range must be two integers [start, end].");
        from = (long)a->valuedouble;
        to = (long)z->valuedouble;
        if (from < 1 || from > (lines ? lines : 1))
            return fail(r, LLMBOX_ERR_INVALID, "Invalid view_range [%ld, %ld]: start must be between 1 "
                                               "and %ld, the number of lines in %s.", from, to,
                        lines ? lines : 1, path);
        if (to == -1 || to > lines)
            to = lines;
        else if (to < from)
            return fail(r, LLMBOX_ERR_INVALID, "Invalid view_range [%ld, %ld]: end must be -1 or at "
                                               "least start.", from, to);
    }
    sb b = {0};
    if (n == 0) {
        sb_fmt(&b, "The file %s is empty.", path);
    } else {
        sb_fmt(&b, "Here's the result of running `cat -n` on %s", path);
        if (range)
            sb_fmt(&b, " (lines %ld-%ld of %ld)", from, to, lines);
        sb_str(&b, ":\n");
        show_lines(&b, d, n, from, to);
    }
    say(r, &b);
    free(b.p);
    host->result_set_status(r, "ok");
    return LLMBOX_OK;
}

static int create(llmbox_ctx *ctx, llmbox_result *r, const char *path, const cJSON *text)
{
    if (!cJSON_IsString(text))
        return fail(r, LLMBOX_ERR_INVALID, "Parameter 'file_text' is required for command 'create'.");
    size_t n = strlen(text->valuestring);
    if (n > FE_MAX_FILE)
        return fail(r, LLMBOX_ERR_TOOBIG, "file_text is %zu bytes; the file editor writes files up to "
                                          "%u MiB. Write big files with a program instead.", n,
                    FE_MAX_FILE >> 20);
    int type = host->path_type(ctx, path);
    if (type < 0)
        return host_error(r, LLMBOX_ERR_SANDBOX, "check", path);
    if (type != 0)
        return host_error(r, LLMBOX_ERR_EXISTS, "create", path);
    int st = host->write_file(ctx, path, text->valuestring, n, LLMBOX_WRITE_EXCL);
    if (st)
        return host_error(r, st, "create", path);
    undo_push(path, NULL, 0, text->valuestring, n);
    sb b = {0};
    sb_fmt(&b, "File created successfully at: %s (%ld lines, %zu bytes)", path, count_lines(text->valuestring, n), n);
    say(r, &b);
    free(b.p);
    host->result_set_status(r, "ok");
    return LLMBOX_OK;
}

/* Shows lines [from, to] (clamped) of the new content after an edit. */
static void edited(llmbox_result *r, const char *path, const char *d, size_t n, long from, long to)
{
    long lines = count_lines(d, n);
    from -= FE_SNIPPET_CONTEXT;
    to += FE_SNIPPET_CONTEXT;
    if (from < 1)
        from = 1;
    if (to > lines)
        to = lines;
    sb b = {0};
    sb_fmt(&b, "The file %s has been edited. Here's the result of running `cat -n` on a snippet "
               "of %s:\n", path, path);
    if (lines)
        show_lines(&b, d, n, from, to);
    sb_str(&b, "Review the changes and make sure they are as expected. Edit the file again if "
               "necessary.");
    say(r, &b);
    free(b.p);
    host->result_set_status(r, "ok");
}

static int str_replace(llmbox_ctx *ctx, llmbox_result *r, const char *path, const cJSON *old_s,
                       const cJSON *new_s)
{
    if (!cJSON_IsString(old_s))
        return fail(r, LLMBOX_ERR_INVALID, "Parameter 'old_str' is required for command 'str_replace'.");
    if (!old_s->valuestring[0])
        return fail(r, LLMBOX_ERR_INVALID, "old_str is empty; give the exact text to replace.");
    const char *ns = cJSON_IsString(new_s) ? new_s->valuestring : "";
    const char *d;
    size_t n;
    int st = read_text(ctx, r, path, "edit", &d, &n);
    if (st)
        return st;
    const char *os = old_s->valuestring;
    size_t olen = strlen(os), nlen = strlen(ns);
    /* every match, overlapping ones included: the match must be unique */
    size_t count = 0, first = 0;
    long lines_at[20];
    const char *p = d;
    while ((size_t)(p - d) < n) {
        const char *hit = memmem(p, n - (size_t)(p - d), os, olen);
        if (!hit)
            break;
        if (count == 0)
            first = (size_t)(hit - d);
        if (count < 20)
            lines_at[count] = line_of(d, (size_t)(hit - d));
        count++;
        p = hit + 1;
    }
    if (count == 0)
        return fail(r, LLMBOX_ERR_INVALID,
                    "No replacement was performed: old_str did not appear verbatim in %s. It must "
                    "match exactly, including whitespace, indentation (tabs or spaces) and line "
                    "endings; view the file to check.", path);
    if (count > 1) {
        sb b = {0};
        sb_fmt(&b, "No replacement was performed: old_str occurs %zu times in %s, at lines ", count, path);
        for (size_t i = 0; i < count && i < 20; i++)
            sb_fmt(&b, "%s%ld", i ? ", " : "", lines_at[i]);
        if (count > 20)
            sb_str(&b, ", ...");
        sb_str(&b, ". Include more surrounding lines in old_str to make it unique.");
        say(r, &b);
        free(b.p);
        host->result_set_status(r, "error");
        return LLMBOX_ERR_INVALID;
    }
    if (n - olen + nlen > FE_MAX_FILE)
        return fail(r, LLMBOX_ERR_TOOBIG, "The edited file would exceed %u MiB.", FE_MAX_FILE >> 20);
    sb nb = {0};
    sb_add(&nb, d, first);
    sb_add(&nb, ns, nlen);
    sb_add(&nb, d + first + olen, n - first - olen);
    if (nb.oom) {
        free(nb.p);
        return fail(r, LLMBOX_ERR_INTERNAL, "Out of memory.");
    }
    long from = line_of(nb.p ? nb.p : "", first);
    long to = from + count_lines(ns, nlen) - 1;
    if (to < from)
        to = from;
    st = host->write_file(ctx, path, nb.p ? nb.p : "", nb.len, 0);
    if (st) {
        free(nb.p);
        return host_error(r, st, "write", path);
    }
    undo_push(path, d, n, nb.p ? nb.p : "", nb.len); /* d stays valid: no read since */
    edited(r, path, nb.p ? nb.p : "", nb.len, from, to);
    free(nb.p);
    return LLMBOX_OK;
}

static int insert(llmbox_ctx *ctx, llmbox_result *r, const char *path, const cJSON *line_j,
                  const cJSON *new_s)
{
    if (!cJSON_IsNumber(line_j))
        return fail(r, LLMBOX_ERR_INVALID, "Parameter 'insert_line' is required for command 'insert'.");
    if (!cJSON_IsString(new_s))
        return fail(r, LLMBOX_ERR_INVALID, "Parameter 'new_str' is required for command 'insert'.");
    const char *d;
    size_t n;
    int st = read_text(ctx, r, path, "edit", &d, &n);
    if (st)
        return st;
    long lines = count_lines(d, n);
    double lv = line_j->valuedouble;
    if (lv < 0 || lv > (double)lines)
        return fail(r, LLMBOX_ERR_INVALID, "Invalid insert_line %.0f: it must be between 0 and %ld, the "
                                           "number of lines in %s.", lv, lines, path);
    long at = (long)lv;
    const char *ns = new_s->valuestring;
    size_t nlen = strlen(ns);
    if (n + nlen + 2 > FE_MAX_FILE)
        return fail(r, LLMBOX_ERR_TOOBIG, "The edited file would exceed %u MiB.", FE_MAX_FILE >> 20);
    /* keep the file's own line ending for the lines we add */
    const char *first_nl = memchr(d, '\n', n);
    const char *eol = first_nl && first_nl > d && first_nl[-1] == '\r' ? "\r\n" : "\n";
    size_t off = line_start(d, n, at + 1);
    sb nb = {0};
    sb_add(&nb, d, off);
    if (off == n && n && d[n - 1] != '\n')
        sb_str(&nb, eol); /* the last line had no newline; end it first */
    sb_add(&nb, ns, nlen);
    if (!nlen || ns[nlen - 1] != '\n')
        sb_str(&nb, eol);
    sb_add(&nb, d + off, n - off);
    if (nb.oom) {
        free(nb.p);
        return fail(r, LLMBOX_ERR_INTERNAL, "Out of memory.");
    }
    st = host->write_file(ctx, path, nb.p, nb.len, 0);
    if (st) {
        free(nb.p);
        return host_error(r, st, "write", path);
    }
    undo_push(path, d, n, nb.p, nb.len); /* d stays valid: no read since */
    long added = count_lines(ns, nlen);
    if (added < 1)
        added = 1;
    edited(r, path, nb.p, nb.len, at + 1, at + added);
    free(nb.p);
    return LLMBOX_OK;
}

static int undo_edit(llmbox_ctx *ctx, llmbox_result *r, const char *path)
{
    long i = undo_last(path);
    if (i < 0)
        return fail(r, LLMBOX_ERR_INVALID, "No edit to undo for %s: the file editor kept no earlier "
                                           "version of it in this task (changes made with bash are "
                                           "not recorded).", path);
    /* Deleting is not something the host API offers, and an empty file in
     * its place would look like a real (empty) result: say it plainly. */
    if (!undo_v[i].data)
        return fail(r, LLMBOX_ERR_INVALID, "Cannot undo the creation of %s; the file is left as it "
                                           "is. Delete it with bash (rm) if it should not exist.", path);
    int type = host->path_type(ctx, path);
    if (type < 0)
        return host_error(r, LLMBOX_ERR_SANDBOX, "check", path);
    if (type == 2 || type == 3)
        return fail(r, LLMBOX_ERR_INVALID, "The path %s is no longer a regular file; nothing was "
                                           "restored.", path);
    /* a change made since the edit (by bash) is overwritten too: tell the model */
    const char *cur;
    size_t curlen;
    int changed = type == 0 || host->read_file(ctx, path, FE_MAX_FILE, &cur, &curlen) != LLMBOX_OK ||
                  fnv1a(cur, curlen) != undo_v[i].after;
    const fe_version *v = &undo_v[i];
    int st = host->write_file(ctx, path, v->data, v->len, 0);
    if (st)
        return host_error(r, st, "write", path);
    sb b = {0};
    sb_fmt(&b, "Last edit to %s undone.", path);
    if (changed)
        sb_str(&b, " The file had been changed after that edit by something other than the file "
                   "editor; those changes are gone too.");
    if (v->len) {
        sb_fmt(&b, " Here's the result of running `cat -n` on %s:\n", path);
        show_lines(&b, v->data, v->len, 1, count_lines(v->data, v->len));
    } else {
        sb_str(&b, " The file is now empty.");
    }
    say(r, &b);
    free(b.p);
    undo_drop((size_t)i);
    host->result_set_status(r, "ok");
    return LLMBOX_OK;
}

static int fe_invoke(llmbox_ctx *ctx, const char *args_json, size_t args_len, llmbox_result *r)
{
    int rc;
    cJSON *args = cJSON_ParseWithLength(args_json, args_len);
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command");
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(args, "path");
    if (!cJSON_IsString(cmd) || !cJSON_IsString(path)) {
        rc = fail(r, LLMBOX_ERR_INVALID, "Parameters 'command' and 'path' are required strings.");
        goto out;
    }
    const char *p = path->valuestring;
    if (p[0] != '/') {
        rc = fail(r, LLMBOX_ERR_INVALID, "The path '%.200s' is not absolute; use a path starting with "
                                         "/, e.g. /testbed/%.200s.", p, p);
        goto out;
    }
    if (strlen(p) > 4095) {
        rc = fail(r, LLMBOX_ERR_INVALID, "The path is too long.");
        goto out;
    }
    const char *c = cmd->valuestring;
    if (!strcmp(c, "view"))
        rc = view(ctx, r, p, cJSON_GetObjectItemCaseSensitive(args, "view_range"));
    else if (!strcmp(c, "create"))
        rc = create(ctx, r, p, cJSON_GetObjectItemCaseSensitive(args, "file_text"));
    else if (!strcmp(c, "str_replace"))
        rc = str_replace(ctx, r, p, cJSON_GetObjectItemCaseSensitive(args, "old_str"),
                         cJSON_GetObjectItemCaseSensitive(args, "new_str"));
    else if (!strcmp(c, "insert"))
        rc = insert(ctx, r, p, cJSON_GetObjectItemCaseSensitive(args, "insert_line"),
                    cJSON_GetObjectItemCaseSensitive(args, "new_str"));
    else if (!strcmp(c, "undo_edit"))
        rc = undo_edit(ctx, r, p);
    else
        rc = fail(r, LLMBOX_ERR_INVALID, "Unknown command '%.40s'; use view, create, str_replace, "
                                         "insert or undo_edit.", c);
out:
    cJSON_Delete(args);
    return rc;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "file_editor",
    .description = description,
    .parameters = parameters,
    .invoke = fe_invoke,
}};

LLMBOX_PLUGIN_DEFINE("file_editor", "1.0", tools);
