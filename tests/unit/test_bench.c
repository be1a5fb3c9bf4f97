/* llmbox eval --benchmark's readers (eval/bench_config.c, eval/bench_render.c):
 * config.yaml of an official benchmark folder with libyaml under caps
 * (anchors, aliases, tags, nesting, unknown and repeated keys refused,
 * named), the runner's directory defaults, and the official rendering:
 * str.replace of the directories, then str.format's braces and fields,
 * with Python's errors where Python raises. */
#include "testlib.h"

#include "common/status.h"
#include "eval/bench_config.h"
#include "eval/bench_render.h"

#include <stdlib.h>
#include <string.h>

static lb_bench_config c;
static char err[700];

static int parse(const char *text)
{
    err[0] = '\0';
    return lb_bench_config_parse(text, strlen(text), &c, err, sizeof err);
}

#define BASE "dataset: json\ndata_files: d/data.json\nsystem_prompt: hi\n"

TEST(official_shape)
{
    CHECK(parse("dataset: \"json\"\ndata_files: \"demo/data.json\"\nsplit: \"train\"\n"
                "system_prompt: |-\n  line one {input_dir}\n\n  \\\\boxed{{}}\n"
                "instance_prompt: |-\n  <p>\n  {problem_statement}\n  </p>\n"
                "input_dir: \"/testbed/input\"\noutput_dir: \"/testbed/output\"\nworking_dir: \"/testbed\"\n") == LB_OK);
    CHECK_STR(c.dataset, "json");
    CHECK_STR(c.data_files, "demo/data.json");
    CHECK_STR(c.split, "train");
    CHECK_STR(c.system_prompt, "line one {input_dir}\n\n\\\\boxed{{}}");
    CHECK_STR(c.instance_prompt, "<p>\n{problem_statement}\n</p>");
    CHECK_STR(c.input_dir, "/testbed/input");
    CHECK_STR(c.output_dir, "/testbed/output");
    lb_bench_config_free(&c);
    /* the runner's defaults */
    CHECK(parse("dataset: org/set\nconfig: math\nsystem_prompt: 'x'\noutput_dir: ~\n") == LB_OK);
    CHECK_STR(c.input_dir, LB_BENCH_DEFAULT_INPUT_DIR);
    CHECK_STR(c.output_dir, LB_BENCH_DEFAULT_OUTPUT_DIR);
    CHECK_STR(c.working_dir, LB_BENCH_DEFAULT_WORKING_DIR);
    CHECK(c.instance_prompt == NULL && c.data_files == NULL);
    lb_bench_config_free(&c);
}

TEST(refused_and_named)
{
    CHECK(parse(BASE "temprature: 1\n") == LB_E_INVAL && strstr(err, "unknown key `temprature`") &&
          strstr(err, ":4:"));
    CHECK(parse("dataset: &a json\n") == LB_E_INVAL && strstr(err, "anchor"));
    CHECK(parse(BASE "split: *a\n") == LB_E_INVAL && strstr(err, "alias"));
    CHECK(parse("dataset: &a [x, x]\nconfig: [*a, *a]\n") == LB_E_INVAL && strstr(err, "anchor"));
    CHECK(parse(BASE "split: !!str x\n") == LB_E_INVAL && strstr(err, "tag"));
    CHECK(parse(BASE "config: {a: 1}\n") == LB_E_INVAL && strstr(err, "nested mapping"));
    CHECK(parse(BASE "config: [1]\n") == LB_E_INVAL && strstr(err, "nested list"));
    CHECK(parse(BASE "split: a\nsplit: b\n") == LB_E_INVAL && strstr(err, "twice"));
    CHECK(parse("- a\n- b\n") == LB_E_INVAL && strstr(err, "mapping"));
    CHECK(parse("just text\n") == LB_E_INVAL && strstr(err, "mapping"));
    CHECK(parse(BASE "---\ndataset: y\n") == LB_E_INVAL && strstr(err, "second YAML document"));
    CHECK(parse(BASE "split: \"open\n") == LB_E_INVAL && strstr(err, "not valid YAML"));
    CHECK(parse("dataset: json\nsystem_prompt: x\n") == LB_E_INVAL && strstr(err, "data_files"));
    CHECK(parse("dataset: json\ndata_files: x\n") == LB_E_INVAL && strstr(err, "system_prompt"));
    CHECK(parse("system_prompt: x\n") == LB_E_INVAL && strstr(err, "dataset"));
    CHECK(parse(BASE "output_dir: /proc/1\n") == LB_E_INVAL && strstr(err, "output_dir"));
    CHECK(parse(BASE "input_dir: testbed\n") == LB_E_INVAL && strstr(err, "absolute"));
    CHECK(parse(BASE "working_dir: /testbed/../root\n") == LB_E_INVAL && strstr(err, "working_dir"));
    CHECK(lb_bench_config_parse("dataset: a\0b", 12, &c, err, sizeof err) == LB_E_INVAL && strstr(err, "NUL"));
    /* a refused file leaves nothing behind */
    CHECK(c.dataset == NULL && c.system_prompt == NULL);
}

TEST(caps)
{
    size_t n = LB_BENCH_CONFIG_MAX + 1;
    char *big = malloc(n + 1);
    CHECK(big != NULL);
    memset(big, '#', n);
    big[n] = '\0';
    CHECK(lb_bench_config_parse(big, n, &c, err, sizeof err) == LB_E_TOOBIG && strstr(err, "at most"));
    /* one value over LB_BENCH_VALUE_MAX, within the file's cap */
    int k = snprintf(big, n, BASE "split: \"");
    memset(big + k, 'x', LB_BENCH_VALUE_MAX + 1);
    snprintf(big + k + LB_BENCH_VALUE_MAX + 1, 4, "\"\n");
    CHECK(parse(big) == LB_E_TOOBIG && strstr(err, "split"));
    free(big);
}

static char *fmt(const char *t, const char *name, const char *value)
{
    lb_bench_var v[] = {{name, value}};
    char *out = NULL;
    err[0] = '\0';
    if (lb_bench_format(t, v, 1, &out, err, sizeof err) != LB_OK)
        return NULL;
    return out;
}

TEST(format_like_python)
{
    char *s;
    /* "{{" and "}}" are braces; the field is replaced once, its value not re-read */
    CHECK((s = fmt("a {{b}} {x} \\\\boxed{{}} }}{{", "x", "{x} {{")) != NULL);
    CHECK_STR(s, "a {b} {x} {{ \\\\boxed{} }{");
    free(s);
    CHECK((s = fmt("", "x", "v")) != NULL && !s[0]);
    free(s);
    CHECK(fmt("{y}", "x", "v") == NULL && strstr(err, "{y}") && strstr(err, "KeyError"));
    CHECK(fmt("a } b", "x", "v") == NULL && strstr(err, "Single '}'"));
    CHECK(fmt("a {", "x", "v") == NULL && strstr(err, "Single '{'"));
    CHECK(fmt("a {x", "x", "v") == NULL && strstr(err, "expected '}'"));
    CHECK(fmt("{}", "x", "v") == NULL && strstr(err, "positional"));
    CHECK(fmt("{0}", "x", "v") == NULL && strstr(err, "positional"));
    CHECK(fmt("{x!r}", "x", "v") == NULL && strstr(err, "conversion"));
    CHECK(fmt("{x:>4}", "x", "v") == NULL && strstr(err, "format spec"));
    CHECK(fmt("{x.y}", "x", "v") == NULL);
    CHECK(fmt("{x[0]}", "x", "v") == NULL);
    CHECK(fmt("{x{y}}", "x", "v") == NULL && strstr(err, "nested"));
}

TEST(render_the_runners_way)
{
    char *s = NULL;
    /* str.replace first: a directory's placeholder inside {{ }} is still replaced, as runner.py does */
    CHECK(lb_bench_render_system("W {working_dir} I {input_dir} O {output_dir} {{{output_dir}}} {command_docs}|{demo}",
                                 "/testbed", "/testbed/documents", "/testbed", &s, err, sizeof err) == LB_OK);
    CHECK_STR(s, "W /testbed I /testbed/documents O /testbed {/testbed} |");
    free(s);
    CHECK(lb_bench_render_instance("<p>\n{problem_statement}\n</p> {output_dir}/answer.txt", "/testbed", "/in",
                                   "/out", "x {y} }", &s, err, sizeof err) == LB_OK);
    CHECK_STR(s, "<p>\nx {y} }\n</p> /out/answer.txt");
    free(s);
    /* no instance template: the problem statement as is, braces and all */
    CHECK(lb_bench_render_instance(NULL, "/testbed", "/in", "/out", "a {b} }", &s, err, sizeof err) == LB_OK);
    CHECK_STR(s, "a {b} }");
    free(s);
    CHECK(lb_bench_render_instance("", "/testbed", "/in", "/out", "p", &s, err, sizeof err) == LB_OK);
    CHECK_STR(s, "p");
    free(s);
    /* the system prompt is formatted with command_docs and demo only */
    CHECK(lb_bench_render_system("{problem_statement}", "/t", "/i", "/o", &s, err, sizeof err) == LB_E_INVAL);
}

int main(void)
{
    RUN(official_shape);
    RUN(refused_and_named);
    RUN(caps);
    RUN(format_like_python);
    RUN(render_the_runners_way);
    return testlib_done();
}
