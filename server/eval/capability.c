/* Capability patterns and counting (capability.h). The patterns are one
 * global set: loaded once at start (or the compiled-in copy), then only
 * read; a mutex guards the swap so a late reload is still safe. */
#include "eval/capability.h"
#include "common/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATTERNS_MAX 256
#define CONF_MAX (64u << 10)
#define ACTION_MAX ((size_t)1 << 20) /* bytes of one turn's actions matched: a turn's commands fit many times */

typedef struct pattern {
    int cap;
    regex_t re;
} pattern;

typedef struct pattern_set {
    pattern *v;
    size_t n;
} pattern_set;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pattern_set current;
static int loaded;

/* eval/capabilities.conf as it was when this was built; tests/unit
 * test_eval.c checks they are still the same. */
static const char DEFAULT_CONF[] =
    "# Capability patterns for the paper's Appendix D (capability usage rates).\n"
    "#\n"
    "# A sandbox-mode turn \"uses\" a capability when the text of its actions (the\n"
    "# arguments of its tool calls, decoded; the reply text when a turn has no\n"
    "# tool calls, as in text tool mode) matches one of that capability's\n"
    "# patterns. Rate = turns with a match / all turns, per domain and overall.\n"
    "#\n"
    "# Format: one pattern a line, `CAPABILITY  REGEX`, where CAPABILITY is\n"
    "# external, file or compute and REGEX a POSIX extended regular expression\n"
    "# (glibc: \\b \\< \\> work) matched case-insensitively anywhere in the text.\n"
    "# Blank lines and lines starting with # are ignored. llmbox reads\n"
    "# $LLMBOX_HOME/eval/capabilities.conf; a copy of this file is compiled in\n"
    "# (server/eval/capability.c) for when it is missing, and a unit test keeps\n"
    "# the two the same.\n"
    "\n"
    "# external resources: installing packages, fetching from the network\n"
    "external  \\b(pip|pip3|conda|mamba|uv)\\b[^\\n]*\\binstall\\b\n"
    "external  \\bapt(-get)?\\b[^\\n]*\\binstall\\b\n"
    "external  \\bnpm (install|i)\\b\n"
    "external  \\b(curl|wget)\\b\n"
    "external  \\brequests\\.(get|post|put|head|Session)\\b\n"
    "external  \\burllib(\\.request|3)?\\b\n"
    "external  \\bhttpx\\b\n"
    "external  \\bgit clone\\b\n"
    "external  \\b(huggingface_hub|hf_hub_download|load_dataset|snapshot_download)\\b\n"
    "external  \\bPubChemPy|pubchem|\\bEntrez\\b\n"
    "\n"
    "# file management: finding, reading and writing files\n"
    "file  \\bopen\\(\n"
    "file  \\bread_(csv|excel|json|parquet|table|fwf|pickle)\\b\n"
    "file  \\b(cat|head|tail|less|ls|find|grep|rg|wc|sed|awk|xxd|od)\\b\n"
    "file  \\bglob\\b\n"
    "file  \\bos\\.(listdir|walk|scandir|path)\\b\n"
    "file  \\bpathlib\\b|\\bPath\\(\n"
    "file  \\b(json|yaml|pickle|np|numpy)\\.(load|loads|save|dump)\\b\n"
    "file  \\b(pdftotext|pdfplumber|PyPDF2|pypdf|fitz|docx|openpyxl)\\b\n"
    "file  \\bshutil\\.\n"
    "file  \\b(str_replace_editor|file_editor)\\b\n"
    "\n"
    "# computation: numerical methods, symbolic maths, big searches\n"
    "compute  \\bscipy\\b\n"
    "compute  \\b(solve_ivp|odeint|quad|dblquad|nquad|minimize|fsolve|brentq|root_scalar|curve_fit|linprog)\\b\n"
    "compute  \\b(sympy|sp)\\.(solve|integrate|diff|simplify|limit|series|dsolve|nsolve|Matrix|factor|expand|summation)\\b\n"
    "compute  \\bfrom sympy\\b|\\bimport sympy\\b\n"
    "compute  \\b(np|numpy)\\.(linalg|fft|polyfit|roots|convolve|einsum)\\b\n"
    "compute  \\bitertools\\b\n"
    "compute  \\brange\\([^)]*[0-9]{5,}\n"
    "compute  \\b[0-9]{5,}\\b[^\\n]*\\bfor\\b|\\bfor\\b[^\\n]*\\b[0-9]{5,}\\b\n"
    "compute  \\bwhile True\\b\n"
    "compute  \\b(multiprocessing|concurrent\\.futures|numba|networkx|rdkit|Bio\\.|torch)\\b\n"
    "compute  \\b(math\\.comb|math\\.factorial|fractions\\.Fraction|decimal\\.Decimal)\\b\n";

const char *lb_capability_default_conf(void)
{
    return DEFAULT_CONF;
}

static const char *const NAMES[LB_CAP__COUNT] = {"external", "file", "compute"};

static void set_free(pattern_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        regfree(&s->v[i].re);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

static int parse_conf(const char *text, const char *path, pattern_set *out, char *err, size_t errsz)
{
    pattern_set s = {calloc(PATTERNS_MAX, sizeof(pattern)), 0};
    if (!s.v)
        return LB_E_NOMEM;
    int rc = LB_OK;
    long line = 0;
    const char *p = text;
    while (*p) {
        line++;
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char buf[2048];
        if (len >= sizeof buf) {
            snprintf(err, errsz, "%s:%ld: the line is longer than %zu bytes", path, line, sizeof buf - 1);
            rc = LB_E_TOOBIG;
            break;
        }
        memcpy(buf, p, len);
        buf[len] = 0;
        p = nl ? nl + 1 : p + len;
        while (len && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\r'))
            buf[--len] = 0;
        char *q = buf;
        while (*q == ' ' || *q == '\t')
            q++;
        if (!*q || *q == '#')
            continue;
        char *name = q;
        while (*q && *q != ' ' && *q != '\t')
            q++;
        if (*q)
            *q++ = 0;
        while (*q == ' ' || *q == '\t')
            q++;
        int cap = -1;
        for (int i = 0; i < LB_CAP__COUNT; i++)
            if (!strcmp(name, NAMES[i]))
                cap = i;
        if (cap < 0) {
            snprintf(err, errsz, "%s:%ld: unknown capability \"%.40s\" (external, file, compute)", path, line, name);
            rc = LB_E_INVAL;
            break;
        }
        if (!*q) {
            snprintf(err, errsz, "%s:%ld: no pattern after \"%s\"", path, line, name);
            rc = LB_E_INVAL;
            break;
        }
        if (s.n >= PATTERNS_MAX) {
            snprintf(err, errsz, "%s:%ld: more than %d patterns", path, line, PATTERNS_MAX);
            rc = LB_E_TOOBIG;
            break;
        }
        int r = regcomp(&s.v[s.n].re, q, REG_EXTENDED | REG_ICASE | REG_NOSUB);
        if (r != 0) {
            char why[128];
            regerror(r, &s.v[s.n].re, why, sizeof why);
            snprintf(err, errsz, "%s:%ld: the pattern does not compile: %s", path, line, why);
            rc = LB_E_INVAL;
            break;
        }
        s.v[s.n++].cap = cap;
    }
    if (rc != LB_OK) {
        set_free(&s);
        return rc;
    }
    *out = s;
    return LB_OK;
}

int lb_capability_load_text(const char *text, const char *path, char *err, size_t errsz)
{
    pattern_set s;
    int rc = parse_conf(text, path, &s, err, errsz);
    if (rc != LB_OK)
        return rc;
    pthread_mutex_lock(&lock);
    pattern_set old = current;
    current = s;
    loaded = 1;
    pthread_mutex_unlock(&lock);
    set_free(&old);
    return LB_OK;
}

int lb_capability_load(const char *path, char *err, size_t errsz)
{
    char *text = NULL;
    size_t len = 0;
    int rc = lb_read_file(path, CONF_MAX, &text, &len);
    if (rc != LB_OK) {
        snprintf(err, errsz, "%s: %s", path, rc == LB_E_TOOBIG ? "larger than 64 KiB" : "cannot read it");
        return rc;
    }
    if (memchr(text, 0, len)) {
        snprintf(err, errsz, "%s: contains NUL bytes", path);
        free(text);
        return LB_E_INVAL;
    }
    rc = lb_capability_load_text(text, path, err, errsz);
    free(text);
    return rc;
}

int lb_capability_load_home(const char *home, char *err, size_t errsz)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/eval/capabilities.conf", home && *home ? home : ".");
    if (stat(path, &st) != 0 && errno == ENOENT)
        return LB_OK; /* the compiled-in copy stays */
    return lb_capability_load(path, err, errsz);
}

/* Called with lock held: the compiled-in set when nothing was loaded. */
static void ensure_loaded(void)
{
    if (loaded)
        return;
    char err[256];
    pattern_set s;
    /* the compiled-in text is ours and tested: it always parses */
    if (parse_conf(DEFAULT_CONF, "(built-in capabilities.conf)", &s, err, sizeof err) == LB_OK) {
        current = s;
        loaded = 1;
    }
}

unsigned lb_capability_match(const char *s)
{
    char *cut = NULL;
    if (strlen(s) > ACTION_MAX) {
        cut = strndup(s, ACTION_MAX);
        if (!cut)
            return 0;
        s = cut;
    }
    unsigned bits = 0;
    pthread_mutex_lock(&lock);
    ensure_loaded();
    for (size_t i = 0; i < current.n; i++) {
        if (bits & (1u << current.v[i].cap))
            continue;
        if (regexec(&current.v[i].re, s, 0, NULL, 0) == 0)
            bits |= 1u << current.v[i].cap;
    }
    pthread_mutex_unlock(&lock);
    free(cut);
    return bits;
}

/* Appends every string inside v (depth-first) to *acc, newline-separated,
 * up to ACTION_MAX bytes. */
static void collect_strings(const cJSON *v, char **acc, size_t *len, int depth)
{
    if (depth > 32 || *len >= ACTION_MAX)
        return;
    if (cJSON_IsString(v)) {
        size_t n = strlen(v->valuestring);
        if (n > ACTION_MAX - *len)
            n = ACTION_MAX - *len;
        char *g = realloc(*acc, *len + n + 2);
        if (!g)
            return;
        *acc = g;
        memcpy(g + *len, v->valuestring, n);
        *len += n;
        g[(*len)++] = '\n';
        g[*len] = 0;
        return;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, v) collect_strings(it, acc, len, depth + 1);
}

/* The text of one assistant message's actions (malloc'd, may be NULL). */
static char *actions_of(const cJSON *msg)
{
    char *acc = NULL;
    size_t len = 0;
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
    if (cJSON_IsArray(calls) && cJSON_GetArraySize(calls) > 0) {
        const cJSON *c;
        cJSON_ArrayForEach(c, calls) {
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
            if (cJSON_IsString(name))
                collect_strings(name, &acc, &len, 0);
            if (cJSON_IsString(args)) {
                cJSON *parsed = cJSON_Parse(args->valuestring);
                collect_strings(parsed ? parsed : args, &acc, &len, 0);
                cJSON_Delete(parsed);
            } else if (args) {
                collect_strings(args, &acc, &len, 0);
            }
        }
        return acc;
    }
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (content)
        collect_strings(content, &acc, &len, 0);
    return acc;
}

int lb_capability_count_trajectory(const char *trajectory_json_text, size_t len, lb_capability_counts *out)
{
    cJSON *t = cJSON_ParseWithLength(trajectory_json_text, len);
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(t, "messages");
    if (!cJSON_IsArray(msgs)) {
        cJSON_Delete(t);
        return LB_E_INVAL;
    }
    lb_capability_counts c = {0, 0, 0, 0, 0, 0};
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsString(role) || strcmp(role->valuestring, "assistant"))
            continue;
        c.turns++;
        char *a = actions_of(m);
        unsigned bits = a ? lb_capability_match(a) : 0;
        free(a);
        c.external += !!(bits & (1u << LB_CAP_EXTERNAL));
        c.file += !!(bits & (1u << LB_CAP_FILE));
        c.compute += !!(bits & (1u << LB_CAP_COMPUTE));
    }
    cJSON_Delete(t);
    *out = c;
    return LB_OK;
}

int lb_capability_count_network(const char *network_json_text, size_t len, lb_capability_counts *out)
{
    cJSON *t = cJSON_ParseWithLength(network_json_text, len);
    const cJSON *conns = cJSON_GetObjectItemCaseSensitive(t, "connections"), *x;
    if (!cJSON_IsArray(conns)) {
        cJSON_Delete(t);
        return LB_E_INVAL;
    }
    long long n = 0;
    cJSON_ArrayForEach(x, conns) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(x, "kind");
        /* a lookup alone moves nothing; a refused connection reached nothing */
        n += cJSON_IsString(kind) && !strcmp(kind->valuestring, "tcp") &&
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "allowed")) &&
             cJSON_IsString(cJSON_GetObjectItemCaseSensitive(x, "name"));
    }
    cJSON_Delete(t);
    out->external_conns = n;
    out->traffic = 1;
    return LB_OK;
}
