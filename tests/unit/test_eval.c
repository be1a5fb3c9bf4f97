/* server/eval/: datasets (both text forms and the folder form, every
 * error with file, line and field), results.jsonl lines, the summary's
 * figures and tables, and the capability patterns. */
#include "testlib.h"

#include "common/util.h"
#include "eval/capability.h"
#include "eval/dataset.h"
#include "eval/result.h"
#include "eval/summary.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char T[] = "/tmp/llmbox-test-eval-XXXXXX";
static char errbuf[1024];

/* Writes text to T/name and returns the path (static buffer). */
static const char *put(const char *name, const void *data, size_t len)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", T, name);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    *slash = 0;
    if (lb_mkdirs(dir, 0700) != LB_OK)
        return NULL;
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    fwrite(data, 1, len, f);
    fclose(f);
    return path;
}

static const char *puts_(const char *name, const char *text)
{
    return put(name, text, strlen(text));
}

static int load(const char *path, const lb_eval_limits *lim, lb_eval_dataset *d)
{
    errbuf[0] = 0;
    return lb_eval_dataset_load(path, lim, d, errbuf, sizeof errbuf);
}

static int err_has(const char *s)
{
    return strstr(errbuf, s) != NULL;
}

TEST(jsonl_rows_load_with_their_fields)
{
    const char *p = puts_("a.jsonl",
                          "{\"id\":\"m1\",\"domain\":\"math\",\"problem_statement\":\"1+1?\",\"ground_truth\":\"2\"}\n"
                          "\n"
                          "{\"id\":7,\"domain\":\"chem\",\"problem_statement\":\"Pick\",\"ground_truth\":[\"B\"],"
                          "\"qa_type\":\"mcq\",\"input_files\":{\"data/x.csv\":\"a,b\\n1,2\\n\"},\"extra\":{\"k\":1}}\n"
                          "{\"id\":\"lc\",\"domain\":\"long_context\",\"problem_statement\":\"Q\",\"ground_truth\":\"A\","
                          "\"input_files\":\"{\\\"n.txt\\\":\\\"hello\\\"}\",\"documents\":[\"d1\",{\"text\":\"d2\"}],"
                          "\"scorer\":\"numeric\"}\n");
    lb_eval_dataset d;
    CHECK(load(p, NULL, &d) == LB_OK);
    CHECK(d.n == 3);
    if (d.n != 3)
        return;
    CHECK_STR(d.rows[0].id, "m1");
    CHECK_STR(d.rows[0].scorer, "boxed");
    CHECK_STR(d.rows[0].ground_truth_json, "\"2\"");
    CHECK(d.rows[0].error == NULL);
    CHECK_STR(d.rows[1].id, "7");
    CHECK_STR(d.rows[1].scorer, "choice");
    CHECK_STR(d.rows[1].qa_type, "mcq");
    CHECK_STR(d.rows[1].ground_truth_json, "[\"B\"]");
    CHECK(d.rows[1].nfiles == 1);
    CHECK_STR(d.rows[1].files[0].name, "data/x.csv");
    CHECK(d.rows[1].files[0].len == 8 && !memcmp(d.rows[1].files[0].data, "a,b\n1,2\n", 8));
    CHECK(strstr(d.rows[1].row_json, "\"extra\":{\"k\":1}") != NULL);
    CHECK_STR(d.rows[2].scorer, "numeric");
    CHECK(d.rows[2].nfiles == 1 && !strcmp(d.rows[2].files[0].name, "n.txt"));
    CHECK(d.rows[2].ndocuments == 2 && !strcmp(d.rows[2].documents[1], "d2"));
    lb_eval_dataset_free(&d);
    CHECK(d.n == 0 && d.rows == NULL);
}

TEST(json_array_rows_load_and_errors_name_the_line)
{
    const char *p = puts_("a.json", "[\n  {\"id\": \"a\", \"domain\": \"physics\",\n   \"problem_statement\": \"p, [x]\",\n"
                                    "   \"ground_truth\": {\"v\": \"}\"}},\n  {\"id\": \"b\", \"domain\": \"biomed\", "
                                    "\"problem\": \"q\", \"ground_truth\": \"C\"}\n]\n");
    lb_eval_dataset d;
    CHECK(load(p, NULL, &d) == LB_OK);
    CHECK(d.n == 2);
    if (d.n == 2) {
        CHECK_STR(d.rows[0].problem, "p, [x]");
        CHECK_STR(d.rows[0].scorer, "judge");
        CHECK_STR(d.rows[1].problem, "q");
    }
    lb_eval_dataset_free(&d);
    p = puts_("b.json", "[\n  {\"id\": \"a\", \"domain\": \"math\", \"problem_statement\": \"x\", \"ground_truth\": 1},\n"
                        "  {\"id\": \"b\", \"domain\": \"math\",\n   \"problem_statement\": 5, \"ground_truth\": 1}\n]\n");
    CHECK(load(p, NULL, &d) == LB_E_INVAL);
    CHECK(err_has("b.json:3: field `problem_statement`: not a string"));
    CHECK(d.n == 0);
    p = puts_("c.json", "[{\"id\": \"a\", \"domain\": \"math\", \"problem_statement\": \"x\", \"ground_truth\": 1}\n");
    CHECK(load(p, NULL, &d) == LB_E_INVAL);
    CHECK(err_has("c.json:") && err_has("not closed"));
}

TEST(dataset_text_in_memory_parses_as_a_file_would)
{
    const char *t = "[{\"id\":\"a\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1},\n"
                    " {\"id\":\"a\",\"domain\":\"math\",\"problem_statement\":\"y\",\"ground_truth\":2}]";
    lb_eval_dataset d;
    CHECK(lb_eval_dataset_parse(t, strlen(t), "upload.json", NULL, &d, errbuf, sizeof errbuf) == LB_E_EXISTS);
    CHECK(err_has("upload.json:2: field `id`: duplicate id \"a\" (first at upload.json:1)"));
    t = "\xEF\xBB\xBF{\"id\":\"a\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1}\r\n";
    CHECK(lb_eval_dataset_parse(t, strlen(t), "bom.jsonl", NULL, &d, errbuf, sizeof errbuf) == LB_OK);
    CHECK(d.n == 1);
    lb_eval_dataset_free(&d);
    lb_eval_limits lim;
    lb_eval_limits_default(&lim);
    lim.max_total_bytes = 10;
    CHECK(lb_eval_dataset_parse(t, strlen(t), "bom.jsonl", &lim, &d, errbuf, sizeof errbuf) == LB_E_TOOBIG);
    CHECK(lb_eval_dataset_parse("[]", 2, "e.json", NULL, &d, errbuf, sizeof errbuf) == LB_E_INVAL);
    CHECK(err_has("e.json: no rows"));
    CHECK(lb_eval_dataset_parse("[1,]", 4, "e.json", NULL, &d, errbuf, sizeof errbuf) == LB_E_INVAL);
    CHECK(err_has("e.json:1:"));
}

TEST(a_rows_image_is_kept_and_a_malformed_one_refuses_the_dataset)
{
    const char *t = "{\"id\":\"a\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1}\n"
                    "{\"id\":\"b\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1,"
                    "\"image\":\"127.0.0.1:5000/team/img:1\"}\n";
    lb_eval_dataset d;
    CHECK(lb_eval_dataset_parse(t, strlen(t), "i.jsonl", NULL, &d, errbuf, sizeof errbuf) == LB_OK);
    CHECK(d.n == 2 && !d.rows[0].image && d.rows[1].image && !strcmp(d.rows[1].image, "127.0.0.1:5000/team/img:1"));
    lb_eval_dataset_free(&d);
    static const char *const bad[] = {"\"Upper/Case\"", "3", "\"\"", "\"a b\"", "\"x@sha256:12\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char row[512];
        snprintf(row, sizeof row, "{\"id\":\"a\",\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1}\n"
                 "{\"id\":\"b\",\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1,\"image\":%s}\n", bad[i]);
        CHECK(lb_eval_dataset_parse(row, strlen(row), "i.jsonl", NULL, &d, errbuf, sizeof errbuf) == LB_E_INVAL);
        CHECK(err_has("i.jsonl:2: field `image`:") && d.n == 0);
    }
}

TEST(bad_rows_name_file_line_and_field)
{
    struct {
        const char *line2, *want;
    } cases[] = {
        {"{\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1}", ":2: field `id`: missing"},
        {"{\"id\":\"b\",\"problem_statement\":\"x\",\"ground_truth\":1}", ":2: field `domain`: missing"},
        {"{\"id\":\"b\",\"domain\":\"math\",\"ground_truth\":1}", ":2: field `problem_statement`: missing"},
        {"{\"id\":\"b\",\"domain\":\"math\",\"problem_statement\":\"x\"}", ":2: field `ground_truth`: missing"},
        {"{\"id\":\"b\",\"domain\":3,\"problem_statement\":\"x\",\"ground_truth\":1}", ":2: field `domain`: not a string"},
        {"{\"id\":1.5,\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1}", ":2: field `id`: a number id"},
        /* found by fuzz_eval_row: a huge number id was cast to long long before the range check */
        {"{\"id\":5.5e35,\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1}", ":2: field `id`: a number id"},
        {"{\"id\":\"b\",\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1,\"input_files\":[1]}",
         ":2: field `input_files`: neither"},
        {"{\"id\":\"b\",\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1,\"input_files\":\"{oops\"}",
         ":2: field `input_files`: a string that is not a JSON object"},
        {"{\"id\":\"b\",\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1,\"input_files\":{\"../x\":\"a\"}}",
         ":2: field `input_files`: the name \"../x\" is not a safe relative path"},
        {"{\"id\":\"b\",\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1,\"input_files\":{\"x\":3}}",
         ":2: field `input_files`: the content of \"x\" is not a string"},
        {"{\"id\":\"b\",\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1,\"documents\":[3]}",
         ":2: field `documents`: document 1 is not a string"},
        {"{\"id\":\"b\",\"domain\":\"m\",\"problem_statement\":\"\xc3\x28\",\"ground_truth\":1}",
         ":2: field `problem_statement`: not valid UTF-8"},
        {"{\"id\":\"b\",\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1,\"scorer\":7}",
         ":2: field `scorer`: not a string"},
        {"{\"id\":\"b\" \"domain\":\"m\"}", ":2: not valid JSON"},
        {"[1]", ":2: the row is not a JSON object"},
        {"{\"id\":\"b\",\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1} trailing", ":2: text after"},
        {"{\"id\":\"a\",\"domain\":\"m\",\"problem_statement\":\"y\",\"ground_truth\":2}",
         ":2: field `id`: duplicate id \"a\" (first at "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text, "{\"id\":\"a\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1}\n%s\n",
                 cases[i].line2);
        const char *p = puts_("bad.jsonl", text);
        lb_eval_dataset d;
        int rc = load(p, NULL, &d);
        CHECK(rc != LB_OK);
        CHECK(err_has("bad.jsonl") && err_has(cases[i].want));
        if (!err_has(cases[i].want))
            printf("   case %zu: got \"%s\"\n", i, errbuf);
        CHECK(d.n == 0 && d.rows == NULL);
    }
}

TEST(row_problems_mark_the_row_and_the_rest_load)
{
    lb_eval_limits lim;
    lb_eval_limits_default(&lim);
    lim.max_file_bytes = 4;
    lim.max_files_per_row = 2;
    const char *p = puts_("rows.jsonl",
                          "{\"id\":\"ok\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1,"
                          "\"input_files\":{\"a\":\"1234\"}}\n"
                          "{\"id\":\"big\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1,"
                          "\"input_files\":{\"a\":\"12345\"}}\n"
                          "{\"id\":\"many\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1,"
                          "\"input_files\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\"}}\n"
                          "{\"id\":\"sc\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1,"
                          "\"scorer\":\"bleu\"}\n"
                          "{\"id\":\"nos\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1,"
                          "\"scorer\":\"script\"}\n"
                          "{\"id\":\"s\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1,"
                          "\"scorer\":\"script\",\"scorer_script\":\"print(1)\"}\n");
    lb_eval_dataset d;
    CHECK(load(p, &lim, &d) == LB_OK);
    CHECK(d.n == 6);
    if (d.n != 6)
        return;
    CHECK(d.rows[0].error == NULL && d.rows[0].nfiles == 1);
    CHECK(d.rows[1].error && strstr(d.rows[1].error, "rows.jsonl:2: field `input_files`: \"a\" is 5 bytes, over the cap of 4"));
    CHECK(d.rows[2].error && strstr(d.rows[2].error, "rows.jsonl:3: field `input_files`: more than 2 files"));
    CHECK(d.rows[3].error && strstr(d.rows[3].error, "rows.jsonl:4: field `scorer`: unknown scorer \"bleu\""));
    CHECK(d.rows[4].error && strstr(d.rows[4].error, "rows.jsonl:5: field `scorer`: the script scorer needs a program"));
    CHECK(d.rows[5].error == NULL && d.rows[5].has_script);
    lb_eval_dataset_free(&d);
}

TEST(dataset_caps_refuse_the_whole_dataset)
{
    lb_eval_limits lim;
    lb_eval_limits_default(&lim);
    char text[4096] = "";
    for (int i = 0; i < 5; i++) {
        char one[256];
        snprintf(one, sizeof one, "{\"id\":\"%d\",\"domain\":\"math\",\"problem_statement\":\"x\",\"ground_truth\":1}\n",
                 i);
        strncat(text, one, sizeof text - strlen(text) - 1); /* test code: bounded by sizeof */
    }
    const char *p = puts_("caps.jsonl", text);
    lb_eval_dataset d;
    lim.max_rows = 4;
    CHECK(load(p, &lim, &d) == LB_E_TOOBIG);
    CHECK(err_has("caps.jsonl:5: more than 4 rows"));
    lb_eval_limits_default(&lim);
    lim.max_row_bytes = 40;
    CHECK(load(p, &lim, &d) == LB_E_TOOBIG);
    CHECK(err_has("caps.jsonl:1: the row is"));
    lb_eval_limits_default(&lim);
    lim.max_total_bytes = 100;
    CHECK(load(p, &lim, &d) == LB_E_TOOBIG);
    CHECK(err_has("over the cap of 100 bytes"));
    p = puts_("empty.jsonl", "\n\n");
    CHECK(load(p, NULL, &d) == LB_E_INVAL);
    CHECK(err_has("no rows"));
    char missing[600];
    snprintf(missing, sizeof missing, "%s/nope.jsonl", T);
    CHECK(load(missing, NULL, &d) == LB_E_NOTFOUND);
    CHECK(err_has("nope.jsonl"));
}

TEST(folder_rows_carry_binary_files)
{
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0xff};
    CHECK(puts_("fold/r1/row.json", "{\"domain\":\"chem\",\"problem_statement\":\"Which?\",\"ground_truth\":\"A\","
                                    "\"input_files\":{\"notes.txt\":\"hi\"}}") != NULL);
    CHECK(put("fold/r1/files/img/mol.png", png, sizeof png) != NULL);
    CHECK(puts_("fold/r2/row.json", "{\"id\":\"second\",\"domain\":\"math\",\"problem_statement\":\"2+2\","
                                    "\"ground_truth\":\"4\",\"scorer\":\"script\"}") != NULL);
    CHECK(puts_("fold/README.md", "not a row") != NULL);
    CHECK(puts_("fold/scorer.py", "print(1)\n") != NULL);
    char path[600];
    snprintf(path, sizeof path, "%s/fold", T);
    lb_eval_dataset d;
    CHECK(load(path, NULL, &d) == LB_OK);
    CHECK(d.n == 2);
    if (d.n != 2)
        return;
    CHECK_STR(d.rows[0].id, "r1");
    CHECK(d.rows[0].nfiles == 2);
    int seen_png = 0;
    for (size_t i = 0; i < d.rows[0].nfiles; i++)
        if (!strcmp(d.rows[0].files[i].name, "img/mol.png"))
            seen_png = d.rows[0].files[i].len == sizeof png && !memcmp(d.rows[0].files[i].data, png, sizeof png);
    CHECK(seen_png);
    CHECK_STR(d.rows[1].id, "second");
    CHECK(d.rows[1].error == NULL); /* its program is the folder's scorer.py */
    CHECK_STR(d.script, "print(1)\n");
    lb_eval_dataset_free(&d);

    /* a symlink and a file over the caps mark their rows; the others load */
    char link[700];
    snprintf(link, sizeof link, "%s/fold/r2/files", T);
    CHECK(lb_mkdirs(link, 0700) == LB_OK);
    snprintf(link, sizeof link, "%s/fold/r2/files/passwd", T);
    CHECK(symlink("/etc/passwd", link) == 0);
    lb_eval_limits lim;
    lb_eval_limits_default(&lim);
    lim.max_file_bytes = 8;
    CHECK(load(path, &lim, &d) == LB_OK);
    CHECK(d.n == 2);
    if (d.n == 2) {
        CHECK(d.rows[0].error && strstr(d.rows[0].error, "files/img/mol.png is 12 bytes, over the cap of 8"));
        CHECK(d.rows[1].error && strstr(d.rows[1].error, "files/passwd: not a regular file"));
    }
    lb_eval_dataset_free(&d);

    /* a folder without row.json is a dataset error naming it */
    char bad[700];
    snprintf(bad, sizeof bad, "%s/fold/r3", T);
    CHECK(lb_mkdirs(bad, 0700) == LB_OK);
    CHECK(load(path, NULL, &d) == LB_E_NOTFOUND);
    CHECK(err_has("fold/r3/row.json:1: missing"));
    /* duplicate ids across folders */
    CHECK(puts_("fold/r3/row.json", "{\"id\":\"second\",\"domain\":\"m\",\"problem_statement\":\"x\",\"ground_truth\":1}"));
    CHECK(load(path, NULL, &d) == LB_E_EXISTS);
    CHECK(err_has("r3/row.json:1: field `id`: duplicate id \"second\" (first at ") && err_has("r2/row.json:1"));
}

TEST(default_scorers_follow_the_domain)
{
    CHECK_STR(lb_eval_default_scorer("math"), "boxed");
    CHECK_STR(lb_eval_default_scorer("chem"), "choice");
    CHECK_STR(lb_eval_default_scorer("biomed"), "choice");
    CHECK_STR(lb_eval_default_scorer("physics"), "judge");
    CHECK_STR(lb_eval_default_scorer("long_context"), "judge");
    CHECK_STR(lb_eval_default_scorer("instruct_follow"), "exact");
    CHECK_STR(lb_eval_default_scorer("poetry"), "exact");
    CHECK(lb_eval_scorer_known("script") && !lb_eval_scorer_known("bleu") && !lb_eval_scorer_known(NULL));
}

TEST(result_lines_round_trip)
{
    lb_eval_result r = {0};
    r.id = "a\"b";
    r.domain = "math";
    r.mode = "sandbox";
    r.repeat = 3;
    r.score = 0.5;
    r.scorer = "boxed";
    r.answer = "\\boxed{2}\n";
    r.ground_truth_json = "{\"x\":[1,2]}";
    r.status = "ok";
    r.turns = 4;
    r.prompt_tokens = 1000;
    r.completion_tokens = 20;
    r.env_tokens = 300;
    r.context_tokens = 700;
    r.model_ms = 5;
    r.tool_ms = 6;
    r.wall_ms = 12;
    r.has_capabilities = 1;
    r.capabilities = (lb_capability_counts){1, 2, 3, 4, 0, 0};
    r.task_id = "t1";
    r.score_detail = "equal";
    char *line = lb_eval_result_to_json(&r);
    CHECK(line && !strchr(line, '\n'));
    CHECK(line && strstr(line, "\"ground_truth\":{\"x\":[1,2]}") && strstr(line, "\"error\":null"));
    lb_eval_result b;
    CHECK(lb_eval_result_from_json(line, strlen(line), &b, errbuf, sizeof errbuf) == LB_OK);
    CHECK_STR(b.id, "a\"b");
    CHECK_STR(b.answer, "\\boxed{2}\n");
    CHECK_STR(b.ground_truth_json, "{\"x\":[1,2]}");
    CHECK(b.repeat == 3 && b.score == 0.5 && b.turns == 4 && b.env_tokens == 300 && b.context_tokens == 700);
    CHECK(b.has_capabilities && b.capabilities.compute == 3 && b.capabilities.turns == 4);
    CHECK(b.error == NULL && b.error_class == NULL);
    lb_eval_result_free(&b);
    free(line);
    r.score = -1;
    r.has_capabilities = 0;
    r.capabilities = (lb_capability_counts){0, 0, 0, 0, 0, 0};
    line = lb_eval_result_to_json(&r);
    CHECK(line && strstr(line, "\"score\":null") && strstr(line, "\"capabilities\":null"));
    CHECK(lb_eval_result_from_json(line, strlen(line), &b, errbuf, sizeof errbuf) == LB_OK);
    CHECK(b.score == -1 && !b.has_capabilities);
    lb_eval_result_free(&b);
    free(line);
    /* counted turns mean counts, even when the writer did not set the flag */
    r.capabilities = (lb_capability_counts){0, 1, 0, 2, 0, 0};
    line = lb_eval_result_to_json(&r);
    CHECK(line && strstr(line, "\"capabilities\":{\"external\":0,\"file\":1,\"compute\":0,\"turns\":2}"));
    CHECK(lb_eval_result_from_json(line, strlen(line), &b, errbuf, sizeof errbuf) == LB_OK);
    CHECK(lb_eval_result_has_capabilities(&b) && b.capabilities.file == 1);
    lb_eval_result_free(&b);
    free(line);

    const char *bad[] = {"{\"mode\":\"llm\",\"status\":\"ok\"}", "{\"id\":\"a\",\"mode\":\"llm\",\"status\":\"ok\",\"score\":2}",
                         "{\"id\":\"a\",\"mode\":\"llm\",\"status\":\"ok\",\"turns\":\"3\"}", "[]", "{\"id\":"};
    const char *why[] = {"field `id`: missing", "field `score`", "field `turns`: not a number", "not a JSON object",
                         "not a JSON object"};
    for (size_t i = 0; i < 5; i++) {
        CHECK(lb_eval_result_from_json(bad[i], strlen(bad[i]), &b, errbuf, sizeof errbuf) == LB_E_INVAL);
        CHECK(err_has(why[i]));
        CHECK(b.id == NULL);
    }
}

static lb_eval_result mk(const char *id, const char *dom, const char *mode, int rep, double score, const char *status,
                         long long pt, long long ct)
{
    lb_eval_result r = {0};
    r.id = (char *)id;
    r.domain = (char *)dom;
    r.mode = (char *)mode;
    r.repeat = rep;
    r.score = score;
    r.status = (char *)status;
    r.prompt_tokens = pt;
    r.completion_tokens = ct;
    return r;
}

static double num(const cJSON *s, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *o = s;
    char *save = NULL;
    for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
        o = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

static int is_null(const cJSON *s, const char *a, const char *b)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(s, a);
    if (b)
        o = cJSON_GetObjectItemCaseSensitive(o, b);
    return cJSON_IsNull(o);
}

TEST(summary_figures_are_exact)
{
    lb_eval_result v[] = {
        /* math: m1 right in both modes; m2 wrong in llm, half right over two sandbox repeats */
        mk("m1", "math", "llm", 0, 1, "ok", 100, 10),
        mk("m1", "math", "llm", 1, 1, "ok", 100, 10),
        mk("m2", "math", "llm", 0, 0, "ok", 100, 10),
        mk("m2", "math", "llm", 1, 0, "ok", 100, 10),
        mk("m1", "math", "sandbox", 0, 1, "ok", 1000, 100),
        mk("m1", "math", "sandbox", 1, 1, "ok", 1000, 100),
        mk("m2", "math", "sandbox", 0, 1, "ok", 1000, 100),
        mk("m2", "math", "sandbox", 1, -1, "error", 1000, 100),
        /* chem: one row, a scorer error in llm, right in sandbox; one skipped row */
        mk("c1", "chem", "llm", 0, 0.9, "error", 50, 5),
        mk("c1", "chem", "sandbox", 0, 1, "ok", 500, 50),
        mk("c2", "chem", "sandbox", 0, -1, "skipped", 0, 0),
        mk("x", "math", "bogus", 0, 1, "ok", 1, 1),
    };
    size_t n = sizeof v / sizeof v[0];
    v[4].env_tokens = 300;
    v[4].context_tokens = 600;
    v[4].model_ms = 3000;
    v[4].tool_ms = 1000;
    v[4].has_capabilities = 1;
    v[4].capabilities = (lb_capability_counts){1, 2, 0, 4, 0, 0};
    v[9].has_capabilities = 1;
    v[9].capabilities = (lb_capability_counts){0, 1, 2, 4, 0, 0};
    cJSON *s = lb_eval_summary(v, n, 60, 120);
    CHECK(s != NULL);
    if (!s)
        return;
    /* math llm: rows 1 and 0 → 50; sandbox: 1 and (1+0)/2 → 75 */
    CHECK(num(s, "domains.math.llm.accuracy") == 50);
    CHECK(num(s, "domains.math.sandbox.accuracy") == 75);
    CHECK(num(s, "domains.math.delta") == 25);
    CHECK(num(s, "domains.math.sandbox.n") == 2 && num(s, "domains.math.sandbox.runs") == 4);
    CHECK(num(s, "domains.math.sandbox.errors") == 1);
    CHECK(num(s, "domains.chem.llm.accuracy") == 0 && num(s, "domains.chem.llm.errors") == 1);
    CHECK(num(s, "domains.chem.sandbox.accuracy") == 100 && num(s, "domains.chem.sandbox.skipped") == 1);
    CHECK(num(s, "domains.chem.sandbox.n") == 1);
    /* overall over rows: llm (1 + 0 + 0) / 3; sandbox (1 + 0.5 + 1) / 3 */
    CHECK(fabs(num(s, "overall.llm.accuracy") - 33.3333) < 1e-9);
    CHECK(fabs(num(s, "overall.sandbox.accuracy") - 83.3333) < 1e-9);
    CHECK(fabs(num(s, "overall.delta") - 50) < 1e-9);
    /* tokens of the trajectories: llm 4×110 + 55 over 5 runs; sandbox run
     * 4's context_tokens 600 (not its 1100 of requests) + 3×1100 + 550 */
    CHECK(num(s, "tokens.llm_per_query") == 99);
    CHECK(num(s, "tokens.sandbox_per_query") == 890);
    CHECK(num(s, "tokens.ratio") == 8.9899);            /* 4450 / 495 */
    CHECK(num(s, "domains.math.token_ratio") == 8.8636); /* 3900 / 440 */
    /* env share: 300 over run 4's 600 trajectory tokens + 3×1100 + 550 */
    CHECK(num(s, "env_token_share") == 0.0674); /* 300 / 4450 = 0.06741... */
    CHECK(num(s, "exec_time_share") == 0.25);
    CHECK(num(s, "qpm.llm") == 5 && num(s, "qpm.sandbox") == 2.5 && num(s, "qpm.ratio") == 0.5);
    CHECK(num(s, "capabilities.external") == 0.125 && num(s, "capabilities.file") == 0.375);
    CHECK(num(s, "capabilities.compute") == 0.25 && num(s, "capabilities.turns") == 8);
    CHECK(num(s, "domains.chem.capabilities.compute") == 0.5);
    CHECK(is_null(cJSON_GetObjectItemCaseSensitive(s, "domains"), "chem", NULL) == 0);
    CHECK(num(s, "repeats") == 2);
    /* the paper's order: math before chem */
    const cJSON *doms = cJSON_GetObjectItemCaseSensitive(s, "domains");
    CHECK(doms && doms->child && !strcmp(doms->child->string, "math"));

    char *md = lb_eval_summary_markdown(s);
    CHECK(md != NULL);
    if (md) {
        CHECK(strstr(md, "| Domain | n | LLM | Sandbox | Δ | errors |"));
        CHECK(strstr(md, "| math | 2 | 50.0 | 75.0 | +25.0 | 1 |"));
        CHECK(strstr(md, "| **Overall** | 3 | 33.3 | 83.3 | +50.0 | 2 |"));
        CHECK(strstr(md, "count as score 0 and are counted apart: 1 in LLM mode, 1 in sandbox mode"));
        CHECK(strstr(md, "| chem | 55 | 550 | 10.00× |"));
        CHECK(strstr(md, "| 5.00 | 2.50 | 0.50× |"));
        CHECK(strstr(md, "## Capability usage (Appendix D)"));
        free(md);
    }
    cJSON_Delete(s);

    /* one mode only: delta and ratios are null, not made up */
    s = lb_eval_summary(v, 4, 0, 0);
    CHECK(s && is_null(cJSON_GetObjectItemCaseSensitive(s, "overall"), "delta", NULL));
    CHECK(s && is_null(s, "qpm", "llm") && is_null(s, "tokens", "ratio") && is_null(s, "capabilities", NULL));
    char *md2 = s ? lb_eval_summary_markdown(s) : NULL;
    CHECK(md2 && strstr(md2, "| math | 2 | 50.0 | – | – | 0 |"));
    free(md2);
    cJSON_Delete(s);
    s = lb_eval_summary(NULL, 0, 0, 0);
    CHECK(s != NULL);
    cJSON_Delete(s);
}

TEST(summary_markdown_escapes_domain_names)
{
    lb_eval_result v[] = {mk("a", "x|y\nz", "llm", 0, 1, "ok", 1, 1)};
    cJSON *s = lb_eval_summary(v, 1, 0, 0);
    char *md = s ? lb_eval_summary_markdown(s) : NULL;
    CHECK(md && strstr(md, "| x\\|y z |"));
    free(md);
    cJSON_Delete(s);
}

TEST(capability_file_matches_the_compiled_in_copy)
{
    char *text = NULL;
    size_t len = 0;
    CHECK(lb_read_file("eval/capabilities.conf", 1 << 20, &text, &len) == LB_OK);
    CHECK_STR(text, lb_capability_default_conf());
    free(text);
    CHECK(lb_capability_load("eval/capabilities.conf", errbuf, sizeof errbuf) == LB_OK);
    /* a home without the file keeps the built-in copy; a bad file there is an error */
    CHECK(lb_capability_load_home(T, errbuf, sizeof errbuf) == LB_OK);
    CHECK(lb_capability_match("wget x") & (1u << LB_CAP_EXTERNAL));
    CHECK(puts_("eval/capabilities.conf", "nonsense here\n") != NULL);
    CHECK(lb_capability_load_home(T, errbuf, sizeof errbuf) == LB_E_INVAL);
    CHECK(err_has("eval/capabilities.conf:1: unknown capability"));
    CHECK(puts_("eval/capabilities.conf", "compute  \\bqqqz\\b\n") != NULL);
    CHECK(lb_capability_load_home(T, errbuf, sizeof errbuf) == LB_OK);
    CHECK(lb_capability_match("qqqz") == (1u << LB_CAP_COMPUTE));
    CHECK(lb_capability_load_text(lb_capability_default_conf(), "x", errbuf, sizeof errbuf) == LB_OK);
}

TEST(capability_patterns_classify_actions)
{
    CHECK(lb_capability_match("pip install rdkit") & (1u << LB_CAP_EXTERNAL));
    CHECK(lb_capability_match("apt-get install -y jq") & (1u << LB_CAP_EXTERNAL));
    CHECK(lb_capability_match("curl -sL https://x") & (1u << LB_CAP_EXTERNAL));
    CHECK(lb_capability_match("import pandas as pd\ndf = pd.read_csv('a.csv')") & (1u << LB_CAP_FILE));
    CHECK(lb_capability_match("grep -n foo /testbed/documents/*") & (1u << LB_CAP_FILE));
    CHECK(lb_capability_match("from scipy.integrate import solve_ivp") & (1u << LB_CAP_COMPUTE));
    CHECK(lb_capability_match("for i in range(1000000): s += i") & (1u << LB_CAP_COMPUTE));
    CHECK(lb_capability_match("echo hello") == 0);
    CHECK(lb_capability_match("print(2 + 2)") == 0);
}

TEST(capability_counts_turns_of_a_trajectory)
{
    const char *t =
        "{\"version\":1,\"messages\":["
        "{\"role\":\"system\",\"content\":\"pip install everything\"},"
        "{\"role\":\"user\",\"content\":\"solve\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
        "\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"pip install sympy && cat a.txt\\\"}\"}}]},"
        "{\"role\":\"tool\",\"content\":\"curl wget\"},"
        "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c2\",\"type\":\"function\","
        "\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"python3 -c 'import itertools'\\\"}\"}}]},"
        "{\"role\":\"assistant\",\"content\":\"<bash>ls /testbed</bash>\"},"
        "{\"role\":\"assistant\",\"content\":\"The answer is 4.\"}]}";
    lb_capability_counts c = {9, 9, 9, 9, 9, 9};
    CHECK(lb_capability_count_trajectory(t, strlen(t), &c) == LB_OK);
    CHECK(c.turns == 4);
    CHECK(c.external == 1);
    CHECK(c.file == 2);
    CHECK(c.compute == 1);
    lb_capability_counts d = {9, 9, 9, 9, 9, 9};
    CHECK(lb_capability_count_trajectory("{\"x\":1}", 7, &d) == LB_E_INVAL);
    CHECK(lb_capability_count_trajectory("\x00\xff", 2, &d) == LB_E_INVAL);
    CHECK(d.turns == 9);
}

/* External access by traffic: the allowed TCP connections to names of a
 * task's network.json, and the summary's by-pattern and by-traffic
 * shares side by side over the runs that had a record. */
TEST(capability_counts_traffic_of_a_network_record)
{
    const char *rec = "{\"id\":\"t\",\"network\":{\"allow\":[\"a.test\"]},\"connections\":["
                      "{\"kind\":\"dns\",\"name\":\"a.test\",\"allowed\":true,\"rule\":\"resolved\"},"
                      "{\"kind\":\"tcp\",\"name\":\"a.test\",\"allowed\":true,\"rule\":\"allow a.test\"},"
                      "{\"kind\":\"tcp\",\"name\":\"a.test\",\"allowed\":true,\"rule\":\"allow a.test\"},"
                      "{\"kind\":\"tcp\",\"name\":\"b.test\",\"allowed\":false,\"rule\":\"no rule\"},"
                      "{\"kind\":\"tcp\",\"name\":null,\"allowed\":true,\"rule\":\"allow 1.2.3.4\"}],"
                      "\"truncated\":false}";
    lb_capability_counts c = {0};
    CHECK(lb_capability_count_network(rec, strlen(rec), &c) == LB_OK);
    CHECK(c.external_conns == 2 && c.traffic == 1);
    lb_capability_counts d = {0};
    CHECK(lb_capability_count_network("{\"x\":1}", 7, &d) == LB_E_INVAL && !d.traffic);
    CHECK(lb_capability_count_network("\x00\xff", 2, &d) == LB_E_INVAL && !d.traffic);

    /* two sandbox runs with records: one fetched by python (no pattern,
     * 3 connections), one ran curl that reached nothing; one run without */
    lb_eval_result v[] = {
        mk("m1", "math", "sandbox", 0, 1, "ok", 10, 1),
        mk("m2", "math", "sandbox", 0, 1, "ok", 10, 1),
        mk("m3", "math", "sandbox", 0, 1, "ok", 10, 1),
    };
    for (int i = 0; i < 3; i++)
        v[i].has_capabilities = 1;
    v[0].capabilities = (lb_capability_counts){0, 0, 1, 2, 3, 1};
    v[1].capabilities = (lb_capability_counts){1, 0, 0, 2, 0, 1};
    v[2].capabilities = (lb_capability_counts){1, 0, 0, 2, 0, 0};
    char *line = lb_eval_result_to_json(&v[0]);
    CHECK(line && strstr(line, "\"external_connections\":3"));
    lb_eval_result b;
    CHECK(line && lb_eval_result_from_json(line, strlen(line), &b, errbuf, sizeof errbuf) == LB_OK);
    CHECK(b.capabilities.traffic == 1 && b.capabilities.external_conns == 3);
    lb_eval_result_free(&b);
    free(line);
    line = lb_eval_result_to_json(&v[2]);
    CHECK(line && !strstr(line, "external_connections"));
    free(line);
    cJSON *s = lb_eval_summary(v, 3, 0, 0);
    CHECK(s && num(s, "capabilities.traffic_rows") == 2 && num(s, "capabilities.external_connections") == 3);
    CHECK(s && num(s, "capabilities.external_runs_by_pattern") == 0.5);
    CHECK(s && num(s, "capabilities.external_runs_by_traffic") == 0.5);
    char *md = s ? lb_eval_summary_markdown(s) : NULL;
    CHECK(md && strstr(md, "## External access by traffic") && strstr(md, "| **Overall** | 50.0% | 50.0% | 3 | 2 |"));
    free(md);
    cJSON_Delete(s);
}

TEST(capability_conf_errors_name_the_line)
{
    CHECK(lb_capability_load_text("# c\nexternal  curl\nnetwork  x\n", "caps.conf", errbuf, sizeof errbuf) ==
          LB_E_INVAL);
    CHECK(err_has("caps.conf:3: unknown capability \"network\""));
    CHECK(lb_capability_load_text("file  ([a\n", "caps.conf", errbuf, sizeof errbuf) == LB_E_INVAL);
    CHECK(err_has("caps.conf:1: the pattern does not compile"));
    CHECK(lb_capability_load_text("compute\n", "caps.conf", errbuf, sizeof errbuf) == LB_E_INVAL);
    CHECK(err_has("caps.conf:1: no pattern"));
    /* a failed load keeps the patterns in use */
    CHECK(lb_capability_match("curl x") & (1u << LB_CAP_EXTERNAL));
    CHECK(lb_capability_load_text("compute  \\bzzzq\\b\n", "caps.conf", errbuf, sizeof errbuf) == LB_OK);
    CHECK(lb_capability_match("curl x") == 0 && lb_capability_match("zzzq") == (1u << LB_CAP_COMPUTE));
    CHECK(lb_capability_load_text(lb_capability_default_conf(), "x", errbuf, sizeof errbuf) == LB_OK);
}

TEST(the_example_sets_load)
{
    lb_eval_dataset d;
    CHECK(load("examples/eval/demo.jsonl", NULL, &d) == LB_OK);
    const char *domains[] = {"math", "physics", "chem", "biomed", "long_context", "instruct_follow"};
    for (size_t k = 0; k < 6; k++) {
        size_t n = 0;
        for (size_t i = 0; i < d.n; i++)
            n += !strcmp(d.rows[i].domain, domains[k]);
        CHECK(n >= 2 && n <= 3);
    }
    size_t with_files = 0, multi_doc = 0;
    for (size_t i = 0; i < d.n; i++) {
        CHECK(d.rows[i].error == NULL);
        with_files += d.rows[i].nfiles > 0;
        multi_doc += !strcmp(d.rows[i].domain, "long_context") && d.rows[i].ndocuments >= 3;
    }
    CHECK(with_files >= 4 && multi_doc == 1);
    lb_eval_dataset_free(&d);
    CHECK(load("examples/eval/folder-demo", NULL, &d) == LB_OK);
    CHECK(d.n == 2);
    if (d.n == 2) {
        CHECK_STR(d.rows[0].id, "gz-mean");
        CHECK(d.rows[0].nfiles == 1 && d.rows[0].files[0].len > 2 && d.rows[0].files[0].data[0] == 0x1f &&
              d.rows[0].files[0].data[1] == 0x8b);
        CHECK_STR(d.rows[1].id, "red-pixels");
        CHECK(d.rows[1].nfiles == 1 && d.rows[1].files[0].len > 8 && !memcmp(d.rows[1].files[0].data, "\x89PNG", 4));
        CHECK(d.rows[0].error == NULL && d.rows[1].error == NULL);
    }
    lb_eval_dataset_free(&d);
}

int main(void)
{
    if (!mkdtemp(T)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(jsonl_rows_load_with_their_fields);
    RUN(json_array_rows_load_and_errors_name_the_line);
    RUN(dataset_text_in_memory_parses_as_a_file_would);
    RUN(a_rows_image_is_kept_and_a_malformed_one_refuses_the_dataset);
    RUN(bad_rows_name_file_line_and_field);
    RUN(row_problems_mark_the_row_and_the_rest_load);
    RUN(dataset_caps_refuse_the_whole_dataset);
    RUN(folder_rows_carry_binary_files);
    RUN(default_scorers_follow_the_domain);
    RUN(result_lines_round_trip);
    RUN(summary_figures_are_exact);
    RUN(summary_markdown_escapes_domain_names);
    RUN(capability_file_matches_the_compiled_in_copy);
    RUN(capability_patterns_classify_actions);
    RUN(capability_counts_turns_of_a_trajectory);
    RUN(capability_counts_traffic_of_a_network_record);
    RUN(capability_conf_errors_name_the_line);
    RUN(the_example_sets_load);
    LB_IGNORE(lb_rmtree(T)); /* a temporary folder: a leftover is harmless */
    return testlib_done();
}
