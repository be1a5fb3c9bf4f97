/* Unit tests for E2B's template steps made a Dockerfile
 * (server/e2b/e2b_template_steps.c): what the SDK's fluent steps become,
 * that the result is a Dockerfile llmbox's own parser reads back word
 * for word (server/images/dockerfile_parse.c, the builder's), and that a
 * step llmbox cannot do is refused with a sentence and its step. */
#include "testlib.h"

#include "common/buf.h"
#include "common/status.h"
#include "e2b/e2b_template_steps.h"
#include "images/dockerfile_parse.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H1 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static char msg[1024], step[16], hashes[8][65];
static int nh, line_steps[64];

/* The Dockerfile of a template given as JSON text, or NULL (msg, step). */
static char *translate(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    lb_buf b;
    lb_buf_init(&b, 1 << 20);
    int rc = lb_e2b_tpl_dockerfile(j, &b, hashes, 8, &nh, line_steps, 64, msg, sizeof msg, step);
    cJSON_Delete(j);
    if (rc) {
        lb_buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* Word i of step k (0-based, FROM is 0) once the builder's parser and its
 * expansion (with no variables set) read it back. */
static const char *none(void *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return NULL;
}

static char *word(const char *df, int k, int i)
{
    static char got[70000];
    lb_dockerfile d;
    char m[512];
    char *e = NULL;
    got[0] = '\0';
    if (lb_dockerfile_parse(df, strlen(df), &d, m, sizeof m) == LB_OK && k < d.n && i < d.steps[k].argc &&
        lb_df_expand(d.steps[k].argv[i], none, NULL, &e, m, sizeof m) == LB_OK)
        snprintf(got, sizeof got, "%s", e);
    free(e);
    lb_dockerfile_free(&d);
    return got;
}

TEST(fluent_steps_become_a_dockerfile_the_builder_reads)
{
    char *df = translate("{\"fromImage\":\"default-layered\",\"steps\":["
                         "{\"type\":\"RUN\",\"args\":[\"echo hi > /built\"]},"
                         "{\"type\":\"ENV\",\"args\":[\"A\",\"1\",\"B\",\"two words\"]},"
                         "{\"type\":\"COPY\",\"args\":[\"hello.txt\",\"/opt/hello.txt\",\"\",\"\"],\"filesHash\":\"" H1 "\"},"
                         "{\"type\":\"WORKDIR\",\"args\":[\"/opt\"]},"
                         "{\"type\":\"USER\",\"args\":[\"user\"]}],\"force\":false}");
    CHECK(df != NULL);
    if (!df)
        return;
    lb_dockerfile d;
    char m[512];
    CHECK(lb_dockerfile_parse(df, strlen(df), &d, m, sizeof m) == LB_OK);
    CHECK(d.n == 6);
    CHECK(d.n == 6 && d.steps[0].kind == LB_DF_FROM && d.steps[1].kind == LB_DF_RUN && d.steps[2].kind == LB_DF_ENV &&
          d.steps[3].kind == LB_DF_COPY && d.steps[4].kind == LB_DF_WORKDIR && d.steps[5].kind == LB_DF_USER);
    lb_dockerfile_free(&d);
    CHECK_STR(word(df, 0, 0), "default-layered");
    CHECK_STR(word(df, 1, 0), "/bin/sh");
    CHECK_STR(word(df, 1, 2), "echo hi > /built");
    CHECK_STR(word(df, 2, 0), "A=1");
    CHECK_STR(word(df, 2, 1), "B=two words");
    CHECK_STR(word(df, 3, 0), "files/" H1 "/hello.txt");
    CHECK_STR(word(df, 3, 1), "/opt/hello.txt");
    CHECK_STR(word(df, 4, 0), "/opt");
    CHECK_STR(word(df, 5, 0), "user");
    CHECK(nh == 1 && !strcmp(hashes[0], H1));
    free(df);
}

TEST(a_command_reaches_the_shell_as_written)
{
    /* '$', '\', quotes and newlines: the builder must not expand or cut them */
    char *df = translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"RUN\",\"args\":"
                         "[\"for f in a b; do echo \\\"$f\\\" \\\\n; done\\nprintf '%s' ${HOME:-x}\"]}]}");
    CHECK(df != NULL);
    CHECK_STR(word(df, 1, 2), "for f in a b; do echo \"$f\" \\n; done\nprintf '%s' ${HOME:-x}");
    CHECK(df && !strstr(strchr(df, '\n') + 1, "\nprintf")); /* the newline stays inside the JSON string */
    free(df);
}

TEST(a_newline_cannot_start_an_instruction)
{
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"ENV\",\"args\":[\"A\",\"1\\nRUN evil\"]}]}") == NULL);
    CHECK_STR(step, "1");
    CHECK(strstr(msg, "control character") != NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"WORKDIR\",\"args\":[\"/a\\nRUN evil\"]}]}") == NULL);
    CHECK(translate("{\"fromImage\":\"x\\nRUN evil\",\"steps\":[]}") == NULL);
    CHECK(translate("{\"fromImage\":\"--platform=x\",\"steps\":[]}") == NULL); /* FROM would read a flag */
    CHECK(translate("{\"fromImage\":\"a b\",\"steps\":[]}") == NULL);
    CHECK_STR(step, "base");
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"USER\",\"args\":[\"u\\nRUN evil\"]}]}") == NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"COPY\",\"args\":[\"a\",\"/b\\nRUN x\"],"
                    "\"filesHash\":\"" H1 "\"}]}") == NULL);
}

TEST(env_values_keep_quotes_and_backslashes)
{
    char *df = translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"ENV\",\"args\":[\"Q\",\"a \\\"b\\\" c\\\\d\"]}]}");
    CHECK(df != NULL);
    CHECK_STR(word(df, 1, 0), "Q=a \"b\" c\\d");
    free(df);
}

TEST(a_run_with_a_user_switches_for_that_command_only)
{
    char *df = translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"USER\",\"args\":[\"user\"]},"
                         "{\"type\":\"RUN\",\"args\":[\"apt-get update\",\"root\"]},"
                         "{\"type\":\"RUN\",\"args\":[\"id\"]}]}");
    CHECK(df != NULL);
    CHECK_STR(word(df, 1, 0), "user");
    CHECK_STR(word(df, 2, 0), "root");
    CHECK_STR(word(df, 3, 2), "apt-get update");
    CHECK_STR(word(df, 4, 0), "user");
    CHECK_STR(word(df, 5, 2), "id");
    free(df);
    /* the builder's "Dockerfile:LINE:" names the user's step: line 1 is the
     * comment, 2 FROM, 3-5 step 2 (USER root, RUN, USER user), 6 step 3 */
    CHECK(line_steps[2] == 0 && line_steps[3] == 1 && line_steps[4] == 2 && line_steps[5] == 2 &&
          line_steps[6] == 2 && line_steps[7] == 3);
    /* no USER before it: back to root, Docker's default */
    df = translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"RUN\",\"args\":[\"id\",\"user\"]}]}");
    CHECK_STR(word(df, 1, 0), "user");
    CHECK_STR(word(df, 3, 0), "root");
    free(df);
}

TEST(copy_takes_numeric_owners_modes_and_the_whole_upload)
{
    char *df = translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"COPY\",\"args\":[\".\",\"/app/\",\"1000:1000\","
                         "\"0755\"],\"filesHash\":\"" H1 "\"},{\"type\":\"COPY\",\"args\":[\"./a/b\",\"c\",\"root\",\"\"],"
                         "\"filesHash\":\"" H1 "\"}]}");
    CHECK(df != NULL);
    CHECK(df && strstr(df, "COPY --chown=1000:1000 --chmod=0755 [") != NULL);
    CHECK(df && strstr(df, "COPY --chown=0:0 [") != NULL);
    CHECK_STR(word(df, 1, 0), "files/" H1);
    CHECK_STR(word(df, 2, 0), "files/" H1 "/a/b");
    CHECK(nh == 1); /* one upload, named once */
    free(df);
}

TEST(copy_refusals_say_why)
{
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"RUN\",\"args\":[\"true\"]},{\"type\":\"COPY\","
                    "\"args\":[\"../etc\",\"/x\"],\"filesHash\":\"" H1 "\"}]}") == NULL);
    CHECK_STR(step, "2");
    CHECK(strstr(msg, "not a relative path") != NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"COPY\",\"args\":[\"/etc/passwd\",\"/x\"],"
                    "\"filesHash\":\"" H1 "\"}]}") == NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"COPY\",\"args\":[\"a\",\"/x\"]}]}") == NULL);
    CHECK(strstr(msg, "filesHash") != NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"COPY\",\"args\":[\"a\",\"/x\",\"user\",\"\"],"
                    "\"filesHash\":\"" H1 "\"}]}") == NULL);
    CHECK(strstr(msg, "numeric owner") != NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"COPY\",\"args\":[\"a\",\"/x\",\"\",\"0999\"],"
                    "\"filesHash\":\"" H1 "\"}]}") == NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"COPY\",\"args\":[\"a\",\"/x\"],"
                    "\"filesHash\":\"../../../../aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}]}") == NULL);
}

TEST(what_llmbox_cannot_build_is_refused_with_a_sentence)
{
    CHECK(translate("{\"fromImage\":\"x\",\"startCmd\":\"npm start\",\"readyCmd\":\"sleep 1\",\"steps\":[]}") == NULL);
    CHECK_STR(step, "finalize");
    CHECK(strstr(msg, "setStartCmd") != NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"fromImageRegistry\":{\"type\":\"registry\",\"username\":\"u\","
                    "\"password\":\"p\"},\"steps\":[]}") == NULL);
    CHECK_STR(step, "base");
    CHECK(strstr(msg, "credentials") != NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"RUN\",\"args\":[\"true\"]},"
                    "{\"type\":\"HEALTHCHECK\",\"args\":[]}]}") == NULL);
    CHECK_STR(step, "2");
    CHECK(strstr(msg, "HEALTHCHECK") != NULL);
    CHECK(translate("{\"steps\":[]}") == NULL);
    CHECK(strstr(msg, "fromImage") != NULL);
    CHECK(translate("[1]") == NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"RUN\",\"args\":[1]}]}") == NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"ENV\",\"args\":[\"1A\",\"v\"]}]}") == NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"ENV\",\"args\":[\"A\"]}]}") == NULL);
    /* a ${...} the builder could not expand is refused here, with the step */
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"ENV\",\"args\":[\"A\",\"${A:\\\"-x}\"]}]}") == NULL);
    CHECK(strstr(msg, "${NAME}") != NULL);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"WORKDIR\",\"args\":[\"/a/${\"]}]}") == NULL);
    char *ok = translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"ENV\",\"args\":[\"P\",\"/o:${PATH:-/b}:$H$\"]}]}");
    CHECK(ok != NULL);
    free(ok);
    CHECK(translate("{\"fromImage\":\"x\",\"steps\":[{\"type\":\"RUN\",\"args\":[\"true\",\"-x\"]}]}") == NULL);
}

TEST(from_template_is_an_llmbox_image)
{
    char *df = translate("{\"fromTemplate\":\"my-base\",\"steps\":[]}");
    CHECK_STR(word(df, 0, 0), "my-base");
    free(df);
}

TEST(steps_and_words_are_capped)
{
    lb_buf j;
    lb_buf_init(&j, 1 << 22);
    CHECK(lb_buf_printf(&j, "%s", "{\"fromImage\":\"x\",\"steps\":[") == LB_OK);
    for (int i = 0; i <= LB_E2B_TPL_STEPS_MAX; i++)
        CHECK(lb_buf_printf(&j, "%s{\"type\":\"RUN\",\"args\":[\"true\"]}", i ? "," : "") == LB_OK);
    CHECK(lb_buf_append(&j, "]}", 2) == LB_OK);
    CHECK(translate(j.data) == NULL);
    CHECK(strstr(msg, "at most") != NULL);
    lb_buf_reset(&j);
    CHECK(lb_buf_printf(&j, "%s", "{\"fromImage\":\"x\",\"steps\":[{\"type\":\"RUN\",\"args\":[\"") == LB_OK);
    for (int i = 0; i <= LB_E2B_TPL_WORD_MAX; i++)
        CHECK(lb_buf_append(&j, "a", 1) == LB_OK);
    CHECK(lb_buf_append(&j, "\"]}]}", 5) == LB_OK);
    CHECK(translate(j.data) == NULL);
    lb_buf_free(&j);
    /* under the word cap, but escaped ('\\' becomes four bytes) past the parser's line */
    lb_buf_init(&j, 1 << 22);
    CHECK(lb_buf_printf(&j, "%s", "{\"fromImage\":\"x\",\"steps\":[{\"type\":\"RUN\",\"args\":[\"") == LB_OK);
    for (int i = 0; i < LB_E2B_TPL_WORD_MAX; i++)
        CHECK(lb_buf_append(&j, "\\\\", 2) == LB_OK);
    CHECK(lb_buf_append(&j, "\"]}]}", 5) == LB_OK);
    CHECK(translate(j.data) == NULL);
    CHECK(strstr(msg, "too long once escaped") != NULL);
    lb_buf_free(&j);
}

int main(void)
{
    RUN(fluent_steps_become_a_dockerfile_the_builder_reads);
    RUN(a_command_reaches_the_shell_as_written);
    RUN(a_newline_cannot_start_an_instruction);
    RUN(env_values_keep_quotes_and_backslashes);
    RUN(a_run_with_a_user_switches_for_that_command_only);
    RUN(copy_takes_numeric_owners_modes_and_the_whole_upload);
    RUN(copy_refusals_say_why);
    RUN(what_llmbox_cannot_build_is_refused_with_a_sentence);
    RUN(from_template_is_an_llmbox_image);
    RUN(steps_and_words_are_capped);
    return testlib_done();
}
