/* Unit tests for the Dockerfile parser and its variable expansion
 * (server/images/dockerfile_parse.c): the instructions agents' images
 * use, the refusals with Dockerfile:LINE and the instruction's name, the
 * caps. */
#include "testlib.h"

#include "common/status.h"
#include "images/dockerfile_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(const char *s, lb_dockerfile *df, char *msg, size_t msgsz)
{
    return lb_dockerfile_parse(s, strlen(s), df, msg, msgsz);
}

/* The parse's refusal sentence, or "OK". */
static const char *refusal(const char *s)
{
    static char msg[512];
    lb_dockerfile df;
    int rc = parse(s, &df, msg, sizeof msg);
    lb_dockerfile_free(&df);
    return rc ? msg : "OK";
}

TEST(the_papers_dockerfile)
{
    const char *text = "# syntax=docker/dockerfile:1\n"
                       "ARG PY=3.11\n"
                       "FROM python:${PY}-slim AS base\n"
                       "\n"
                       "# tools\n"
                       "RUN apt-get update && \\\n"
                       "    # a comment inside\n"
                       "    apt-get install -y git \\\n"
                       "    && rm -rf /var/lib/apt/lists/*\n"
                       "RUN [\"pip\", \"install\", \"numpy\"]\n"
                       "ENV LANG=C.UTF-8 MSG=\"hello world\" LIT='$HOME'\n"
                       "ENV OLD form with spaces\n"
                       "WORKDIR /testbed\n"
                       "COPY --chown=1000:1000 --chmod=755 src/ run.sh /testbed/\n"
                       "ADD [\"a b.txt\", \"/opt/\"]\n"
                       "USER agent\n"
                       "label org.example.k=v\n"
                       "SHELL [\"/bin/bash\", \"-lc\"]\n";
    lb_dockerfile df;
    char msg[256] = "";
    CHECK(parse(text, &df, msg, sizeof msg) == LB_OK);
    if (msg[0])
        printf("  %s\n", msg);
    CHECK(df.n == 12 && df.from_index == 1);
    if (df.n == 12) {
        CHECK(df.steps[0].kind == LB_DF_ARG && !strcmp(df.steps[0].argv[0], "PY=3.11") && df.steps[0].line == 2);
        CHECK(df.steps[1].kind == LB_DF_FROM && df.steps[1].argc == 3 && !strcmp(df.steps[1].argv[0], "python:${PY}-slim"));
        CHECK(df.steps[2].kind == LB_DF_RUN && df.steps[2].line == 6 && !df.steps[2].exec_form);
        CHECK_STR(df.steps[2].argv[0], "apt-get update && apt-get install -y git && rm -rf /var/lib/apt/lists/*");
        CHECK(df.steps[3].exec_form && df.steps[3].argc == 3 && !strcmp(df.steps[3].argv[2], "numpy"));
        CHECK(df.steps[4].argc == 3);
        CHECK_STR(df.steps[4].argv[1], "MSG=hello world");
        CHECK_STR(df.steps[4].argv[2], "LIT=\\$HOME"); /* kept literal for lb_df_expand */
        CHECK_STR(df.steps[5].argv[0], "OLD=form with spaces");
        CHECK(df.steps[6].kind == LB_DF_WORKDIR && !strcmp(df.steps[6].argv[0], "/testbed"));
        CHECK(df.steps[7].kind == LB_DF_COPY && df.steps[7].argc == 3 && !strcmp(df.steps[7].chown, "1000:1000") &&
              !strcmp(df.steps[7].chmod, "755"));
        CHECK(df.steps[8].kind == LB_DF_ADD && df.steps[8].exec_form && !strcmp(df.steps[8].argv[0], "a b.txt"));
        CHECK(df.steps[9].kind == LB_DF_USER && df.steps[10].kind == LB_DF_LABEL);
        CHECK(df.steps[11].kind == LB_DF_SHELL && df.steps[11].argc == 2);
    }
    lb_dockerfile_free(&df);
}

TEST(other_instructions_are_refused_with_line_and_name)
{
    CHECK_STR(refusal("FROM debian\nRUN true\nCMD [\"bash\"]\n"),
              "Dockerfile:3: CMD is not supported by llmbox's builder (it takes FROM, RUN, COPY, ADD, ENV, ARG, "
              "WORKDIR, USER, LABEL and SHELL).");
    CHECK(strstr(refusal("FROM debian\nexpose 80\n"), "Dockerfile:2: EXPOSE is not supported") != NULL);
    CHECK(strstr(refusal("FROM debian\nENTRYPOINT x\n"), "Dockerfile:2: ENTRYPOINT") != NULL);
    CHECK(strstr(refusal("FROM debian\nHEALTHCHECK NONE\n"), "Dockerfile:2: HEALTHCHECK") != NULL);
    CHECK_STR(refusal("FROM debian\nFROBNICATE x\n"), "Dockerfile:2: unknown instruction FROBNICATE.");
    CHECK_STR(refusal("FROM debian\n  = x\n"), "Dockerfile:2: a line must start with an instruction.");
}

TEST(what_the_builder_cannot_do_is_refused)
{
    CHECK(strstr(refusal("FROM debian\nADD https://example.com/x.tgz /opt/\n"),
                 "Dockerfile:2: ADD takes files from the build context only, not from a URL") != NULL);
    CHECK(strstr(refusal("FROM debian\nADD git@github.com:a/b.git /opt/\n"), "not from a URL") != NULL);
    CHECK(strstr(refusal("FROM debian\nCOPY ../secret /x\n"), "Dockerfile:2: COPY's source ../secret is not a path "
                                                              "inside the build context") != NULL);
    CHECK(strstr(refusal("FROM debian\nCOPY a/../../b /x\n"), "not a path inside") != NULL);
    CHECK_STR(refusal("FROM debian\nCOPY /etc/hosts /x\n"), "OK"); /* absolute means the context's */
    CHECK(strstr(refusal("FROM debian\nADD --from=a /x /y\n"), "Dockerfile:2: ADD --from is not supported "
                                                                "(COPY takes --from)") != NULL);
    CHECK(strstr(refusal("FROM debian\nRUN --mount=type=cache,target=/x true\n"),
                 "Dockerfile:2: RUN --mount is not supported") != NULL);
    CHECK(strstr(refusal("FROM --platform=linux/arm64 debian\n"), "Dockerfile:1: FROM --platform") != NULL);
    CHECK_STR(refusal("FROM --platform=linux/amd64 debian\n"), "OK");
    CHECK(strstr(refusal("RUN true\nFROM debian\n"), "Dockerfile:1: RUN before FROM") != NULL);
    CHECK(strstr(refusal("# just a comment\n"), "there is no FROM") != NULL);
    CHECK(strstr(refusal("FROM debian\nSHELL bash -c\n"), "Dockerfile:2: SHELL takes a JSON array") != NULL);
    CHECK(strstr(refusal("FROM debian\nENV =x\n"), "Dockerfile:2: ENV takes NAME=value") != NULL);
    CHECK(strstr(refusal("FROM debian\nENV A=\"open\n"), "Dockerfile:2: ENV has an unclosed quote") != NULL);
    CHECK(strstr(refusal("FROM debian\nARG 9x\n"), "Dockerfile:2: ARG takes NAME") != NULL);
    CHECK(strstr(refusal("FROM debian\nWORKDIR\n"), "Dockerfile:2: WORKDIR needs arguments") != NULL);
    CHECK(strstr(refusal("FROM debian\nCOPY onlyone\n"), "Dockerfile:2: COPY takes one or more sources") != NULL);
    CHECK(strstr(refusal("FROM debian x y z\n"), "Dockerfile:1: FROM takes an image") != NULL);
}

TEST(multi_stage_builds_name_earlier_stages)
{
    lb_dockerfile df;
    char msg[512];
    const char *ok = "ARG V=1\nFROM debian AS Build\nRUN make\nFROM build AS test\nCOPY --from=0 /a /b\n"
                     "FROM alpine:3\nCOPY --from=BUILD /out /usr/bin/\nCOPY --from=team/img:1 /x /y\n"
                     "COPY --from=1 /t /t\n";
    CHECK(parse(ok, &df, msg, sizeof msg) == LB_OK);
    CHECK(df.nstages == 3 && df.from_index == 1 && !strcmp(df.stage_names[0], "build") &&
          !strcmp(df.stage_names[1], "test") && df.stage_names[2] == NULL);
    CHECK(df.steps[0].stage == -1 && df.steps[1].stage == 0 && df.steps[1].from_stage == -1);
    CHECK(df.steps[3].stage == 1 && df.steps[3].from_stage == 0); /* FROM build: the stage, not an image */
    CHECK(df.steps[4].from_stage == 0 && df.steps[5].from_stage == -1 && df.steps[6].from_stage == 0);
    CHECK(df.steps[7].from_stage == -1 && !strcmp(df.steps[7].from, "team/img:1"));
    CHECK(df.steps[8].stage == 2 && df.steps[8].from_stage == 1);
    lb_dockerfile_free(&df);
    /* hostile: itself, later stages (a cycle), unknown names, twice the same name, too many stages */
    CHECK(strstr(refusal("FROM debian AS a\nCOPY --from=a /x /y\n"), "Dockerfile:2: COPY --from=a names its own "
                                                                      "stage") != NULL);
    CHECK(strstr(refusal("FROM debian AS a\nCOPY --from=0 /x /y\n"), "names its own stage") != NULL);
    CHECK(strstr(refusal("FROM debian AS a\nCOPY --from=1 /x /y\nFROM debian AS b\n"),
                 "Dockerfile:2: COPY --from=1 names a later stage") != NULL);
    CHECK(strstr(refusal("FROM debian AS a\nCOPY --from=b /x /y\nFROM debian AS b\nCOPY --from=a /y /z\n"),
                 "Dockerfile:2: COPY --from b names a later stage") != NULL);
    CHECK(strstr(refusal("FROM b AS a\nFROM a AS b\n"), "Dockerfile:1: FROM b names a later stage") != NULL);
    CHECK(strstr(refusal("FROM a AS a\n"), "Dockerfile:1: FROM a names its own stage") != NULL);
    CHECK(strstr(refusal("FROM debian AS a\nCOPY --from=nosuch /x /y\n"),
                 "Dockerfile:2: COPY --from=nosuch names no stage of this Dockerfile") != NULL);
    CHECK(strstr(refusal("FROM debian AS a\nFROM debian AS A\n"), "Dockerfile:2: the stage name \"A\" is used "
                                                                      "twice") != NULL);
    CHECK(strstr(refusal("FROM debian AS 1a\n"), "Dockerfile:1: FROM takes an image and optionally AS") != NULL);
    CHECK(strstr(refusal("FROM debian\nCOPY --from=$X /x /y\n"), "without variables") != NULL);
    CHECK(strstr(refusal("FROM debian\nCOPY --from=a --from=b /x /y\n"), "COPY --from is not supported") != NULL);
    char big[4096] = "";
    for (int i = 0; i <= LB_DF_STAGES_MAX; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "FROM debian AS s%d\n", i);
    CHECK(strstr(refusal(big), "Dockerfile:17: more than 16 stages") != NULL);
    /* COPY --from's sources are checked as the context's are: no way out of the stage's root */
    CHECK(strstr(refusal("FROM debian AS a\nFROM debian\nCOPY --from=a ../../etc/shadow /x\n"),
                 "Dockerfile:3: COPY's source ../../etc/shadow is not a path inside") != NULL);
}

TEST(escape_directive_and_line_numbers)
{
    lb_dockerfile df;
    char msg[256];
    const char *text = "# escape=`\nFROM mcr.microsoft.com/x\nRUN echo a `\n  b\\c\nRUN x\n";
    CHECK(parse(text, &df, msg, sizeof msg) == LB_OK);
    CHECK(df.n == 3 && !strcmp(df.steps[1].argv[0], "echo a b\\c") && df.steps[2].line == 5);
    lb_dockerfile_free(&df);
    CHECK(strstr(refusal("# escape=x\nFROM a\n"), "Dockerfile:1: the escape directive") != NULL);
    /* CRLF lines, a continuation at the end of the file */
    CHECK(parse("FROM a\r\nRUN one \\\r\n two \\", &df, msg, sizeof msg) == LB_OK);
    CHECK(df.n == 2 && !strcmp(df.steps[1].argv[0], "one two "));
    lb_dockerfile_free(&df);
}

TEST(caps)
{
    size_t n = LB_DF_FILE_MAX + 1;
    char *big = malloc(n + 1);
    lb_dockerfile df;
    char msg[256];
    CHECK(big != NULL);
    if (!big)
        return;
    memset(big, ' ', n);
    big[n] = '\0';
    CHECK(lb_dockerfile_parse(big, n, &df, msg, sizeof msg) == LB_E_TOOBIG);
    lb_dockerfile_free(&df);
    /* an instruction past 64 KiB */
    memcpy(big, "FROM a\nRUN ", 11);
    memset(big + 11, 'x', LB_DF_LINE_MAX + 10);
    CHECK(lb_dockerfile_parse(big, 11 + LB_DF_LINE_MAX + 10, &df, msg, sizeof msg) == LB_E_TOOBIG);
    CHECK(strstr(msg, "Dockerfile:2: an instruction longer than") != NULL);
    lb_dockerfile_free(&df);
    /* 1001 instructions */
    size_t off = (size_t)snprintf(big, n, "FROM a\n");
    for (int i = 0; i < LB_DF_STEPS_MAX; i++)
        off += (size_t)snprintf(big + off, n - off, "RUN x\n");
    CHECK(lb_dockerfile_parse(big, off, &df, msg, sizeof msg) == LB_E_TOOBIG);
    CHECK(strstr(msg, "Dockerfile:1001: more than 1000 instructions") != NULL);
    lb_dockerfile_free(&df);
    /* 257 words */
    off = (size_t)snprintf(big, n, "FROM a\nCOPY");
    for (int i = 0; i < LB_DF_ARGS_MAX + 1; i++)
        off += (size_t)snprintf(big + off, n - off, " f%d", i);
    CHECK(lb_dockerfile_parse(big, off, &df, msg, sizeof msg) == LB_E_TOOBIG);
    CHECK(strstr(msg, "Dockerfile:2: COPY has more than 256 arguments") != NULL);
    lb_dockerfile_free(&df);
    CHECK(lb_dockerfile_parse("FROM a\0", 7, &df, msg, sizeof msg) == LB_E_INVAL);
    lb_dockerfile_free(&df);
    free(big);
}

static const char *vars(void *ctx, const char *name)
{
    (void)ctx;
    if (!strcmp(name, "PY"))
        return "3.11";
    if (!strcmp(name, "EMPTY"))
        return "";
    return NULL;
}

static const char *expand(const char *s)
{
    static char keep[512];
    char *out = NULL, msg[256];
    if (lb_df_expand(s, vars, NULL, &out, msg, sizeof msg) != LB_OK)
        return "ERR";
    snprintf(keep, sizeof keep, "%s", out);
    free(out);
    return keep;
}

TEST(variables_expand)
{
    CHECK_STR(expand("python:${PY}-slim"), "python:3.11-slim");
    CHECK_STR(expand("$PY/$NOPE/x"), "3.11//x");
    CHECK_STR(expand("${NOPE:-dflt} ${PY:-dflt} ${EMPTY:-e}"), "dflt 3.11 e");
    CHECK_STR(expand("${PY:+set}${NOPE:+no}"), "set");
    CHECK_STR(expand("\\$PY \\\\ $ x$"), "$PY \\ $ x$");
    CHECK_STR(expand(""), "");
    CHECK_STR(expand("${PY"), "ERR");
    CHECK_STR(expand("${}"), "ERR");
    CHECK_STR(expand("${PY:?x}"), "ERR");
}

int main(void)
{
    RUN(the_papers_dockerfile);
    RUN(other_instructions_are_refused_with_line_and_name);
    RUN(what_the_builder_cannot_do_is_refused);
    RUN(multi_stage_builds_name_earlier_stages);
    RUN(escape_directive_and_line_numbers);
    RUN(caps);
    RUN(variables_expand);
    return testlib_done();
}
