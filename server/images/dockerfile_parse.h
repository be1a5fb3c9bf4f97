/* A Dockerfile, parsed: the instructions agents' images use (FROM, RUN,
 * COPY, ADD from the build context, ENV, ARG, WORKDIR, USER, LABEL,
 * SHELL), each with its line, its flags and its arguments, for
 * `llmbox image build -f`. A Dockerfile is a user's bytes: the file, a
 * logical line, the steps and the arguments are capped, and anything
 * else (another instruction, ADD of a URL, a source outside the context)
 * is refused with "Dockerfile:LINE:" and the instruction's name.
 *
 * Multi-stage: each FROM starts a stage (`FROM ref AS name`); a later
 * `FROM name` builds on an earlier stage's result and `COPY --from=name`
 * (or the stage's number, or an image reference) copies out of it. A stage
 * is named at most once, and --from and FROM may only name an EARLIER
 * stage: naming the stage itself, a later one or an unknown one is
 * refused here, so the stages never form a cycle. Only the last stage
 * becomes the image. Variables ($X, ${X}, ${X:-d}, ${X:+a}) are left in
 * the arguments: the builder expands them with lb_df_expand as it runs,
 * when ARG and ENV values are known. */
#ifndef LB_IMAGES_DOCKERFILE_PARSE_H
#define LB_IMAGES_DOCKERFILE_PARSE_H

#include <stddef.h>

#include "common/status.h"

#define LB_DF_FILE_MAX (1 << 20)   /* a Dockerfile: the largest agents' ones are a few KiB */
#define LB_DF_LINE_MAX 65536       /* one logical line, continuations joined */
#define LB_DF_STEPS_MAX 1000       /* instructions */
#define LB_DF_ARGS_MAX 256         /* words of one instruction */
#define LB_DF_EXPAND_MAX 65536     /* an argument once variables are expanded */
#define LB_DF_STAGES_MAX 16        /* FROMs of one Dockerfile */
#define LB_DF_FROM_MAX 255         /* COPY --from=: a stage's name or number, or an image reference */
#define LB_DF_STAGE_NAME_MAX 64    /* AS name: [a-z][a-z0-9._-]*, compared without case */

typedef enum lb_df_kind {
    LB_DF_FROM = 1,
    LB_DF_RUN,
    LB_DF_COPY,
    LB_DF_ADD,
    LB_DF_ENV,
    LB_DF_ARG,
    LB_DF_WORKDIR,
    LB_DF_USER,
    LB_DF_LABEL,
    LB_DF_SHELL,
} lb_df_kind;

typedef struct lb_df_step {
    lb_df_kind kind;
    int line;                /* the instruction's first line, from 1 */
    int exec_form;           /* RUN/COPY/ADD/SHELL given as a JSON array */
    int argc;
    char **argv;             /* FROM: image [AS name]; RUN shell form: one word, the command;
                                COPY/ADD: sources then destination; ENV/LABEL/ARG: "k=v" (or "k" for
                                an ARG without default); WORKDIR/USER: one word; SHELL: the argv */
    char *chown;             /* COPY/ADD --chown=, or NULL */
    char *chmod;             /* COPY/ADD --chmod= (octal), or NULL */
    int stage;               /* the stage the step belongs to, from 0; -1 for an ARG before the first FROM */
    int from_stage;          /* FROM of an earlier stage's name, COPY --from= an earlier stage: its index;
                                else -1 */
    char *from;              /* COPY --from= as given (a stage's name or number, or an image reference when
                                from_stage is -1), or NULL */
} lb_df_step;

typedef struct lb_dockerfile {
    lb_df_step *steps;
    int n;
    int from_index;          /* the first FROM step; ARG steps before it are the build's global ARGs */
    int nstages;             /* FROM steps, 1 to LB_DF_STAGES_MAX */
    char *stage_names[LB_DF_STAGES_MAX]; /* each stage's AS name, lowercase, or NULL */
} lb_dockerfile;

/* Parses n bytes of a Dockerfile into *out (owned by the caller: free
 * with lb_dockerfile_free, also after a failure). On failure msg gets
 * "Dockerfile:LINE: <sentence>" and the status is LB_E_INVAL (or
 * LB_E_TOOBIG past a cap). */
LB_MUST_CHECK int lb_dockerfile_parse(const char *text, size_t n, lb_dockerfile *out, char *msg, size_t msgsz);

void lb_dockerfile_free(lb_dockerfile *df);

/* The instruction's name ("RUN"). Never NULL. */
const char *lb_df_kind_name(lb_df_kind k);

/* Expands $NAME, ${NAME}, ${NAME:-default} and ${NAME:+alt} in s with
 * lookup (NULL for an unset name; ctx is passed through); "\$" is a
 * literal '$'. The result (malloc'd) into *out. LB_E_INVAL for a bad
 * ${...}, LB_E_TOOBIG past LB_DF_EXPAND_MAX, with a sentence. Pure. */
LB_MUST_CHECK int lb_df_expand(const char *s, const char *(*lookup)(void *ctx, const char *name), void *ctx,
                               char **out, char *msg, size_t msgsz);

#endif
