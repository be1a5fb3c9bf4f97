/* llmbox eval --benchmark (bench_cli.h): an official benchmark folder made
 * into a folder dataset of llmbox, checked whole before anything runs. */
#include "eval/bench_cli.h"

#include "common/buf.h"
#include "common/token.h"
#include "common/util.h"
#include "eval/bench_config.h"
#include "eval/bench_render.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BENCH_OPTIONS_MAX 3900 /* a run's task options, within the store's 4 KiB with the eval's own */
#define BENCH_MAX_TOKENS 65536 /* the runner's max_tokens_per_call and max_response_len defaults */

typedef struct bench {
    const lb_bench_opts *o;
    lb_bench_config cfg;
    char *config_text, *reward, *vanilla, *data;
    size_t config_len, reward_len, vanilla_len, data_len;
    char data_path[PATH_MAX], data_name[256], folder[256], real[PATH_MAX];
    cJSON *rows;      /* the official rows, missing columns filled with null */
    size_t nrows;
    char *system;     /* the rendered system prompt */
    char **prompts;   /* create_prompt's, per row (LLM mode) */
} bench;

static void bench_free(bench *b)
{
    lb_bench_config_free(&b->cfg);
    free(b->config_text);
    free(b->reward);
    free(b->vanilla);
    free(b->data);
    cJSON_Delete(b->rows);
    free(b->system);
    for (size_t i = 0; b->prompts && i < b->nrows; i++)
        free(b->prompts[i]);
    free(b->prompts);
}

/* One file of the folder; optional: LB_E_NOTFOUND quietly when absent. */
static int read_part(const char *dir, const char *name, size_t max, int optional, char **data, size_t *len, char *err,
                     size_t errsz)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat st;
    if (stat(p, &st) != 0) {
        if (optional && errno == ENOENT)
            return LB_E_NOTFOUND;
        snprintf(err, errsz, "%s: %s%s", p, strerror(errno),
                 !strcmp(name, "reward.py") ? " (an official benchmark folder has reward.py with compute_score)" : "");
        return LB_E_NOTFOUND;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errsz, "%s is not a regular file", p);
        return LB_E_INVAL;
    }
    if ((size_t)st.st_size > max) {
        snprintf(err, errsz, "%s is %lld bytes; at most %zu are read", p, (long long)st.st_size, max);
        return LB_E_TOOBIG;
    }
    int rc = lb_read_file(p, max, data, len);
    if (rc != LB_OK)
        snprintf(err, errsz, "cannot read %s: %s", p, lb_strerror(rc));
    return rc;
}

/* The data file the folder names (dataset "json": data_files, relative to
 * the folder's parent as runner.py resolves it) or --data's. */
static int locate_data(bench *b, char *err, size_t errsz)
{
    const lb_bench_config *c = &b->cfg;
    int local = !strcmp(c->dataset, "json");
    if (local && b->o->data) {
        snprintf(err, errsz, "the folder names its own data file (data_files: %.200s); --data is for folders "
                 "whose dataset is a published one", c->data_files);
        return LB_E_INVAL;
    }
    if (!local && !b->o->data) {
        snprintf(err, errsz, "the folder expects the published dataset \"%.100s\" (config %.60s, split %.30s), "
                 "which llmbox does not download: give its rows with --data FILE (JSON or JSON lines)",
                 c->dataset, c->config && c->config[0] ? c->config : "none",
                 c->split && c->split[0] ? c->split : "test");
        return LB_E_INVAL;
    }
    if (local) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s", b->real);
        snprintf(b->data_path, sizeof b->data_path, "%s/%s",
                 c->data_files[0] == '/' ? "" : dirname(parent), c->data_files);
        if (c->data_files[0] == '/')
            snprintf(b->data_path, sizeof b->data_path, "%s", c->data_files);
    } else {
        snprintf(b->data_path, sizeof b->data_path, "%s", b->o->data);
        fprintf(stderr, "llmbox eval: the folder expects the dataset \"%s\" (config %s, split %s); its rows come "
                        "from %s\n",
                c->dataset, c->config && c->config[0] ? c->config : "none",
                c->split && c->split[0] ? c->split : "test", b->o->data);
    }
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", b->data_path);
    snprintf(b->data_name, sizeof b->data_name, "%s", basename(tmp));
    struct stat st;
    if (stat(b->data_path, &st) != 0) {
        snprintf(err, errsz, "the data file %.300s: %s", b->data_path, strerror(errno));
        return LB_E_NOTFOUND;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errsz, "the data file %.300s is not a regular file", b->data_path);
        return LB_E_INVAL;
    }
    if ((size_t)st.st_size > LB_BENCH_DATA_MAX) {
        snprintf(err, errsz, "the data file %.300s is %lld bytes; at most %u MiB are read", b->data_path,
                 (long long)st.st_size, LB_BENCH_DATA_MAX >> 20);
        return LB_E_TOOBIG;
    }
    int rc = lb_read_file(b->data_path, LB_BENCH_DATA_MAX, &b->data, &b->data_len);
    if (rc != LB_OK)
        snprintf(err, errsz, "cannot read the data file %.300s: %s", b->data_path, lb_strerror(rc));
    return rc;
}

/* One row as the official runner needs it: an object with an id, a
 * problem_statement and a ground_truth. */
static int check_row(const bench *b, const cJSON *r, size_t where, char *err, size_t errsz)
{
    const char *why = NULL;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "id");
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(r, "problem_statement");
    if (!cJSON_IsObject(r))
        why = "not a JSON object";
    else if (!cJSON_IsString(id) && !cJSON_IsNumber(id))
        why = "field `id`: missing, or not a string or a number";
    else if (!cJSON_IsString(ps))
        why = "field `problem_statement`: missing, or not a string";
    else if (!cJSON_GetObjectItemCaseSensitive(r, "ground_truth"))
        why = "field `ground_truth`: missing";
    if (why) {
        snprintf(err, errsz, "%s:%zu: %s (the official runner reads id, problem_statement and ground_truth)",
                 b->data_name, where, why);
        return LB_E_INVAL;
    }
    return LB_OK;
}

/* The rows: a JSON array, else JSON lines (the two shapes the "json"
 * loader reads). `where` is the element's or the line's number. */
static int parse_rows(bench *b, char *err, size_t errsz)
{
    size_t i = 0;
    while (i < b->data_len && (b->data[i] == ' ' || b->data[i] == '\n' || b->data[i] == '\r' || b->data[i] == '\t'))
        i++;
    b->rows = cJSON_CreateArray();
    if (!b->rows)
        return LB_E_NOMEM;
    if (i < b->data_len && b->data[i] == '[') {
        cJSON *all = cJSON_ParseWithLength(b->data, b->data_len);
        if (!cJSON_IsArray(all)) {
            cJSON_Delete(all);
            snprintf(err, errsz, "%s: not valid JSON", b->data_name);
            return LB_E_INVAL;
        }
        cJSON *r;
        size_t k = 0;
        while ((r = cJSON_DetachItemFromArray(all, 0))) {
            cJSON_AddItemToArray(b->rows, r);
            if (++k > LB_BENCH_ROWS_MAX)
                break;
        }
        cJSON_Delete(all);
    } else {
        size_t line = 0;
        for (size_t at = 0; at < b->data_len;) {
            const char *nl = memchr(b->data + at, '\n', b->data_len - at);
            size_t end = nl ? (size_t)(nl - b->data) : b->data_len;
            line++;
            size_t s = at;
            while (s < end && (b->data[s] == ' ' || b->data[s] == '\r' || b->data[s] == '\t'))
                s++;
            if (s < end) {
                cJSON *r = cJSON_ParseWithLength(b->data + at, end - at);
                if (!r) {
                    snprintf(err, errsz, "%s:%zu: not valid JSON", b->data_name, line);
                    return LB_E_INVAL;
                }
                cJSON_AddItemToArray(b->rows, r);
                if (cJSON_GetArraySize(b->rows) > LB_BENCH_ROWS_MAX)
                    break;
                if (check_row(b, r, line, err, errsz) != LB_OK)
                    return LB_E_INVAL;
            }
            at = end + 1;
        }
    }
    b->nrows = (size_t)cJSON_GetArraySize(b->rows);
    if (b->nrows > LB_BENCH_ROWS_MAX) {
        snprintf(err, errsz, "%s: more than %d rows", b->data_name, LB_BENCH_ROWS_MAX);
        return LB_E_TOOBIG;
    }
    if (!b->nrows) {
        snprintf(err, errsz, "%s: no rows", b->data_name);
        return LB_E_INVAL;
    }
    /* every row checked; the columns made the same for all, as the
     * dataset loader makes them (a field a row lacks is None there) */
    cJSON *names = cJSON_CreateObject(), *r;
    size_t k = 0;
    int rc = names ? LB_OK : LB_E_NOMEM;
    cJSON_ArrayForEach(r, b->rows)
    {
        if (rc == LB_OK)
            rc = check_row(b, r, ++k, err, errsz);
        const cJSON *f;
        cJSON_ArrayForEach(f, (rc == LB_OK ? r : NULL))
        {
            if (!cJSON_GetObjectItemCaseSensitive(names, f->string))
                cJSON_AddTrueToObject(names, f->string);
        }
    }
    cJSON_ArrayForEach(r, (rc == LB_OK ? b->rows : NULL))
    {
        const cJSON *f;
        cJSON_ArrayForEach(f, names)
        {
            if (!cJSON_GetObjectItemCaseSensitive(r, f->string))
                cJSON_AddNullToObject(r, f->string);
        }
    }
    cJSON_Delete(names);
    return rc;
}

static int hash_into(cJSON *files, const char *name, const char *data, size_t len)
{
    char hex[LB_SHA256_HEX];
    if (lb_sha256_hex(data, len, hex) != LB_OK || !cJSON_AddStringToObject(files, name, hex))
        return LB_E_NOMEM;
    return LB_OK;
}

/* {"folder", "path", "dataset", "config", "split", "files": {name: sha256}}
 * and the evaluation's name from it. */
static int identity(bench *b, lb_bench_prep *p)
{
    cJSON *j = cJSON_CreateObject(), *files = cJSON_CreateObject();
    int rc = j && files ? LB_OK : LB_E_NOMEM;
    if (rc == LB_OK)
        rc = hash_into(files, "config.yaml", b->config_text, b->config_len);
    if (rc == LB_OK)
        rc = hash_into(files, "reward.py", b->reward, b->reward_len);
    if (rc == LB_OK && b->vanilla)
        rc = hash_into(files, "vanilla_llm_prompt.py", b->vanilla, b->vanilla_len);
    if (rc == LB_OK)
        rc = hash_into(files, b->data_name, b->data, b->data_len);
    const lb_bench_config *c = &b->cfg;
    if (rc == LB_OK &&
        (!cJSON_AddStringToObject(j, "folder", b->folder) || !cJSON_AddStringToObject(j, "path", b->real) ||
         !cJSON_AddStringToObject(j, "dataset", c->dataset) ||
         !cJSON_AddStringToObject(j, "config", c->config ? c->config : "") ||
         !cJSON_AddStringToObject(j, "split", c->split ? c->split : "") ||
         !cJSON_AddStringToObject(j, "data_file", b->data_name) ||
         !cJSON_AddBoolToObject(j, "runner_dirs", b->o->runner_dirs) ||
         !cJSON_AddNumberToObject(j, "temperature", b->o->temperature) ||
         !cJSON_AddItemToObject(j, "files", files)))
        rc = LB_E_NOMEM;
    else if (rc == LB_OK)
        files = NULL;
    cJSON_Delete(files);
    if (rc != LB_OK) {
        cJSON_Delete(j);
        return rc;
    }
    const char *cy = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j,
                                                                           "files"), "config.yaml"));
    const char *rw = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j,
                                                                           "files"), "reward.py"));
    snprintf(p->name, sizeof p->name, "benchmark %.60s (config.yaml %.12s, reward.py %.12s)", b->folder, cy, rw);
    p->identity = j;
    return LB_OK;
}

static char *id_text(const cJSON *id)
{
    if (cJSON_IsString(id))
        return strdup(id->valuestring);
    char s[64];
    snprintf(s, sizeof s, "%.17g", id->valuedouble);
    return strdup(s);
}

/* One row.json of the folder dataset. */
static cJSON *llmbox_row(const bench *b, const cJSON *r, size_t k, const char *instance, cJSON *opts)
{
    cJSON *o = cJSON_CreateObject();
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "id");
    const cJSON *gt = cJSON_GetObjectItemCaseSensitive(r, "ground_truth");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(r, "input_files");
    int ok = o && cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 0)) &&
             cJSON_AddStringToObject(o, "domain", b->folder) &&
             cJSON_AddStringToObject(o, "problem_statement",
                                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "problem_statement"))) &&
             /* the scorer reads official_row's; this one only has to be there */
             cJSON_AddItemToObject(o, "ground_truth", cJSON_IsNull(gt) ? cJSON_CreateString("")
                                                                        : cJSON_Duplicate(gt, 1)) &&
             cJSON_AddStringToObject(o, "scorer", "script") &&
             cJSON_AddStringToObject(o, "task_prompt", instance) &&
             (!b->prompts || cJSON_AddStringToObject(o, "llm_prompt", b->prompts[k])) &&
             cJSON_AddItemToObject(o, "task_options", cJSON_Duplicate(opts, 1)) &&
             cJSON_AddItemToObject(o, "official_row", cJSON_Duplicate(r, 1));
    if (ok && cJSON_IsObject(files)) {
        /* the runner skips a file whose content is None */
        cJSON *f = cJSON_Duplicate(files, 1), *it = f ? f->child : NULL;
        while (it) {
            cJSON *next = it->next;
            if (cJSON_IsNull(it))
                cJSON_Delete(cJSON_DetachItemViaPointer(f, it));
            it = next;
        }
        ok = f && cJSON_AddItemToObject(o, "input_files", f);
    } else if (ok && cJSON_IsString(files)) {
        ok = cJSON_AddStringToObject(o, "input_files", files->valuestring) != NULL;
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The task options every sandbox run of the folder gets. */
static cJSON *run_options(const bench *b)
{
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "system_prompt", b->system) && cJSON_AddTrueToObject(o, "verbatim_prompts") &&
        cJSON_AddStringToObject(o, "input_dir", b->cfg.input_dir) &&
        cJSON_AddStringToObject(o, "output_dir", b->cfg.output_dir) &&
        cJSON_AddStringToObject(o, "working_dir", b->cfg.working_dir) &&
        cJSON_AddStringToObject(o, "tool_names", "official") && cJSON_AddFalseToObject(o, "finish_answer") &&
        cJSON_AddNumberToObject(o, "temperature", b->o->temperature) &&
        cJSON_AddNumberToObject(o, "max_tokens", BENCH_MAX_TOKENS))
        return o;
    cJSON_Delete(o);
    return NULL;
}

static int write_json(const char *path, const cJSON *j, char *err, size_t errsz)
{
    char *s = cJSON_PrintUnformatted(j);
    int rc = s ? lb_write_file_atomic(path, s, strlen(s), 0644) : LB_E_NOMEM;
    if (rc != LB_OK)
        snprintf(err, errsz, "cannot write %.300s: %s", path, lb_strerror(rc));
    free(s);
    return rc;
}

/* Renders every row's prompts; writes the dataset, or prints them. */
static int emit(bench *b, lb_bench_prep *p, char *err, size_t errsz)
{
    const lb_bench_config *c = &b->cfg;
    cJSON *opts = run_options(b);
    char *os = opts ? cJSON_PrintUnformatted(opts) : NULL;
    int rc = os ? LB_OK : LB_E_NOMEM;
    if (rc == LB_OK && strlen(os) > BENCH_OPTIONS_MAX) {
        snprintf(err, errsz, "the rendered system prompt is too long for a task's options (%zu bytes of options "
                 "JSON; at most %d)", strlen(os), BENCH_OPTIONS_MAX);
        rc = LB_E_TOOBIG;
    }
    free(os);
    if (rc == LB_OK && !b->o->print_prompts) {
        snprintf(p->dataset, sizeof p->dataset, "%s/benchmark-dataset", b->o->work);
        LB_IGNORE(lb_rmtree(p->dataset)); /* a folder of an earlier run: its rows are not this run's */
        char path[PATH_MAX + 64];
        char *prog = lb_bench_scorer_program(b->reward, b->reward_len);
        snprintf(path, sizeof path, "%s/scorer.py", p->dataset);
        if (!prog || lb_mkdirs(p->dataset, 0755) != LB_OK ||
            lb_write_file_atomic(path, prog, strlen(prog), 0644) != LB_OK) {
            snprintf(err, errsz, "cannot write the dataset into %.300s: %s", p->dataset, strerror(errno));
            rc = LB_E_IO;
        }
        free(prog);
    }
    size_t k = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, (rc == LB_OK ? b->rows : NULL))
    {
        char *inst = NULL, rerr[600] = "";
        const char *ps = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "problem_statement"));
        rc = lb_bench_render_instance(c->instance_prompt, c->working_dir, c->input_dir, c->output_dir, ps, &inst,
                                      rerr, sizeof rerr);
        if (rc != LB_OK) {
            char *id = id_text(cJSON_GetObjectItemCaseSensitive(r, "id"));
            snprintf(err, errsz, "the instance prompt of row %zu (id %.80s): %s", k + 1, id ? id : "?", rerr);
            free(id);
            break;
        }
        if (b->o->print_prompts) {
            cJSON *line = cJSON_CreateObject();
            if (!line || !cJSON_AddItemToObject(line, "id", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(r, "id"),
                                                                             0)) ||
                !cJSON_AddStringToObject(line, "system", b->system) ||
                !cJSON_AddStringToObject(line, "instance", inst) ||
                (b->prompts && !cJSON_AddStringToObject(line, "llm_prompt", b->prompts[k])) ||
                !cJSON_AddItemToObject(line, "task_options", cJSON_Duplicate(opts, 1)))
                rc = LB_E_NOMEM;
            char *s = rc == LB_OK ? cJSON_PrintUnformatted(line) : NULL;
            if (s)
                printf("%s\n", s);
            free(s);
            cJSON_Delete(line);
        } else {
            cJSON *row = llmbox_row(b, r, k, inst, opts);
            char path[PATH_MAX + 64];
            snprintf(path, sizeof path, "%s/r%07zu", p->dataset, k + 1);
            if (!row)
                rc = LB_E_NOMEM;
            else if (lb_mkdirs(path, 0755) != LB_OK) {
                snprintf(err, errsz, "cannot make %.300s: %s", path, strerror(errno));
                rc = LB_E_IO;
            } else {
                snprintf(path + strlen(path), sizeof path - strlen(path), "/row.json");
                rc = write_json(path, row, err, errsz);
            }
            cJSON_Delete(row);
        }
        free(inst);
        k++;
        if (rc != LB_OK)
            break;
    }
    if (rc == LB_E_NOMEM && !err[0])
        snprintf(err, errsz, "out of memory");
    cJSON_Delete(opts);
    return rc;
}

/* Every row as one line of JSON, for create_prompt in the sandbox. */
static char *rows_jsonl(const bench *b, size_t *len)
{
    lb_buf out;
    lb_buf_init(&out, LB_BENCH_DATA_MAX * 2u);
    const cJSON *r;
    int rc = LB_OK;
    cJSON_ArrayForEach(r, b->rows)
    {
        char *s = cJSON_PrintUnformatted(r);
        rc = s ? lb_buf_appends(&out, s) : LB_E_NOMEM;
        if (rc == LB_OK)
            rc = lb_buf_append(&out, "\n", 1);
        free(s);
        if (rc != LB_OK)
            break;
    }
    if (rc != LB_OK) {
        lb_buf_free(&out);
        return NULL;
    }
    return lb_buf_steal(&out, len);
}

int lb_bench_prepare(const lb_bench_opts *o, lb_bench_prep *p, char *err, size_t errsz)
{
    bench b;
    memset(&b, 0, sizeof b);
    memset(p, 0, sizeof *p);
    b.o = o;
    err[0] = '\0';
    if (!realpath(o->dir, b.real)) {
        snprintf(err, errsz, "%.300s: %s", o->dir, strerror(errno));
        return LB_E_NOTFOUND;
    }
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", b.real);
    snprintf(b.folder, sizeof b.folder, "%.64s", basename(tmp));
    char cerr[600] = "";
    int rc = read_part(b.real, "config.yaml", LB_BENCH_CONFIG_MAX, 0, &b.config_text, &b.config_len, err, errsz);
    if (rc == LB_OK && (rc = lb_bench_config_parse(b.config_text, b.config_len, &b.cfg, cerr, sizeof cerr)) != LB_OK)
        snprintf(err, errsz, "%.300s/%s", b.real, cerr);
    if (rc == LB_OK && o->runner_dirs) {
        /* runner.py reads the directories from a prompt config that holds only the two prompts */
        free(b.cfg.working_dir);
        free(b.cfg.input_dir);
        free(b.cfg.output_dir);
        b.cfg.working_dir = strdup(LB_BENCH_DEFAULT_WORKING_DIR);
        b.cfg.input_dir = strdup(LB_BENCH_DEFAULT_INPUT_DIR);
        b.cfg.output_dir = strdup(LB_BENCH_DEFAULT_OUTPUT_DIR);
        if (!b.cfg.working_dir || !b.cfg.input_dir || !b.cfg.output_dir) {
            snprintf(err, errsz, "out of memory");
            rc = LB_E_NOMEM;
        }
    }
    if (rc == LB_OK && strcmp(b.cfg.working_dir, "/testbed")) {
        snprintf(err, errsz, "%.300s/config.yaml: working_dir \"%s\": llmbox's tools run in /testbed, so only "
                 "/testbed can be the working directory", b.real, b.cfg.working_dir);
        rc = LB_E_INVAL;
    }
    if (rc == LB_OK)
        rc = read_part(b.real, "reward.py", LB_BENCH_PY_MAX, 0, &b.reward, &b.reward_len, err, errsz);
    if (rc == LB_OK) {
        rc = read_part(b.real, "vanilla_llm_prompt.py", LB_BENCH_PY_MAX, 1, &b.vanilla, &b.vanilla_len, err, errsz);
        if (rc == LB_E_NOTFOUND && !err[0])
            rc = LB_OK;
    }
    if (rc == LB_OK)
        rc = locate_data(&b, err, errsz);
    if (rc == LB_OK)
        rc = parse_rows(&b, err, errsz);
    if (rc == LB_OK && (rc = lb_bench_render_system(b.cfg.system_prompt, b.cfg.working_dir, b.cfg.input_dir,
                                                    b.cfg.output_dir, &b.system, cerr, sizeof cerr)) != LB_OK)
        snprintf(err, errsz, "%.300s/config.yaml: the system prompt: %s", b.real, cerr);
    int llm = strcmp(o->mode, "sandbox") != 0;
    /* the folder's Python: always before a real run (reward.py's imports);
     * for printed prompts only when LLM mode needs create_prompt */
    if (rc == LB_OK && (!o->print_prompts || llm)) {
        size_t jl = 0;
        char *jsonl = llm ? rows_jsonl(&b, &jl) : NULL;
        if (llm && !jsonl) {
            snprintf(err, errsz, "out of memory");
            rc = LB_E_NOMEM;
        } else {
            rc = lb_bench_py_check(&o->box, b.reward, b.reward_len, b.vanilla, b.vanilla_len, jsonl, jl, b.nrows,
                                   llm ? &b.prompts : NULL, err, errsz);
        }
        free(jsonl);
    }
    if (rc == LB_OK && (rc = identity(&b, p)) != LB_OK)
        snprintf(err, errsz, "out of memory");
    if (rc == LB_OK)
        rc = emit(&b, p, err, errsz);
    bench_free(&b);
    if (rc != LB_OK)
        lb_bench_prep_free(p);
    return rc;
}

void lb_bench_prep_free(lb_bench_prep *p)
{
    cJSON_Delete(p->identity);
    p->identity = NULL;
}
