/* `llmbox image build -f`: the Dockerfile checked against its context,
 * then run by the builder (build_cli.h, build_run.h). */
#include "images/build_cli.h"

#include "common/image_ref.h"
#include "common/util.h"
#include "images/build_run.h"
#include "images/dockerfile_parse.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUILD_ARGS_MAX 64
#define VARS_MAX 4096 /* ARG and ENV values in one Dockerfile */

typedef struct vars {
    const char *names[VARS_MAX];
    const char *values[VARS_MAX];
    int n;
} vars;

static const char *lookup(void *ctx, const char *name)
{
    vars *v = ctx;
    for (int i = v->n - 1; i >= 0; i--)
        if (!strcmp(v->names[i], name))
            return v->values[i];
    return NULL;
}

int lb_build_cli_handles(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "build"))
        return 0;
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "-f") || !strncmp(argv[i], "--file", 6))
            return 1;
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: llmbox image build -f Dockerfile [--build-arg K=V]... [--network none|nat] [--no-cache]\n"
                    "                          [--timeout S] [--check] NAME [CONTEXT]\n"
                    "       llmbox image build NAME   (a debootstrap image from images/NAME/packages)\n");
    return 2;
}

/* Whether the source (expanded) names something inside the context:
 * resolved with realpath, it must stay under the context's own realpath. */
static int source_in_context(const char *ctxreal, const char *src)
{
    if (strpbrk(src, "*?["))
        return 1; /* a pattern: matched when the step runs */
    while (*src == '/')
        src++;
    char path[PATH_MAX * 2], real[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", ctxreal, src) >= sizeof path || !realpath(path, real))
        return 0;
    size_t n = strlen(ctxreal);
    return !strncmp(real, ctxreal, n) && (real[n] == '/' || real[n] == '\0');
}

int lb_build_cli_main(int argc, char **argv, const lb_config *cfg)
{
    const char *file = NULL, *name = NULL, *context = ".";
    const char *bargs[BUILD_ARGS_MAX];
    int nb = 0, check = 0, have_ctx = 0, no_cache = 0;
    long long timeout_s = 0;
    const char *network = "none";
    for (int i = 2; i < argc; i++) {
        if ((!strcmp(argv[i], "-f") || !strcmp(argv[i], "--file")) && i + 1 < argc) {
            file = argv[++i];
        } else if (!strcmp(argv[i], "--build-arg") && i + 1 < argc) {
            if (nb >= BUILD_ARGS_MAX || !strchr(argv[i + 1], '=')) {
                fprintf(stderr, "llmbox: image build: --build-arg takes NAME=value, at most %d times\n",
                        BUILD_ARGS_MAX);
                return 2;
            }
            bargs[nb++] = argv[++i];
        } else if (!strcmp(argv[i], "--check")) {
            check = 1;
        } else if (!strcmp(argv[i], "--no-cache")) {
            no_cache = 1;
        } else if (!strcmp(argv[i], "--network") && i + 1 < argc) {
            network = argv[++i];
            if (strcmp(network, "none") && strcmp(network, "nat")) {
                fprintf(stderr, "llmbox: image build: --network takes none or nat\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            if (lb_parse_ll(argv[++i], 1, 86400, &timeout_s) != LB_OK) {
                fprintf(stderr, "llmbox: image build: --timeout takes seconds, 1 to 86400\n");
                return 2;
            }
        } else if (argv[i][0] == '-') {
            return usage();
        } else if (!name) {
            name = argv[i];
        } else if (!have_ctx) {
            context = argv[i];
            have_ctx = 1;
        } else {
            return usage();
        }
    }
    if (!file || !name)
        return usage();
    lb_image_ref nref;
    char msg[1024];
    if (lb_image_ref_parse(name, LB_IMAGE_REF_LOCAL, &nref, msg, sizeof msg) != LB_OK) {
        fprintf(stderr, "llmbox: image build: the name %s: %s\n", name, msg);
        return 1;
    }
    char ctxreal[PATH_MAX];
    struct stat st;
    if (!realpath(context, ctxreal) || stat(ctxreal, &st) || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "llmbox: image build: the build context %s is not a folder\n", context);
        return 1;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = lb_read_file(file, LB_DF_FILE_MAX + 1, &text, &len);
    if (rc) {
        fprintf(stderr, "llmbox: image build: cannot read %s: %s\n", file,
                rc == LB_E_TOOBIG ? "it is larger than 1 MiB" : strerror(errno));
        return 1;
    }
    lb_dockerfile df;
    rc = lb_dockerfile_parse(text, len, &df, msg, sizeof msg);
    free(text);
    int status = 1;
    vars *v = calloc(1, sizeof *v);
    char **owned = calloc(2 * VARS_MAX, sizeof *owned);
    int nowned = 0;
    if (rc || !v || !owned) {
        fprintf(stderr, "llmbox: image build: %s\n", rc ? msg : "out of memory");
        goto out;
    }
    for (int i = 0; i < df.n; i++) {
        const lb_df_step *s = &df.steps[i];
        if (check)
            fprintf(stderr, "llmbox: build: step %d/%d Dockerfile:%d: %s %s%s\n", i + 1, df.n, s->line,
                    lb_df_kind_name(s->kind), s->argv[0], s->argc > 1 ? " ..." : "");
        if (s->kind == LB_DF_ARG || s->kind == LB_DF_ENV) {
            for (int j = 0; j < s->argc; j++) {
                char *val = NULL;
                const char *eq = strchr(s->argv[j], '=');
                size_t nl = eq ? (size_t)(eq - s->argv[j]) : strlen(s->argv[j]);
                /* a --build-arg wins over an ARG's default */
                const char *given = NULL;
                for (int b = 0; s->kind == LB_DF_ARG && b < nb; b++)
                    if (!strncmp(bargs[b], s->argv[j], nl) && bargs[b][nl] == '=')
                        given = bargs[b] + nl + 1;
                if (given) {
                    val = strdup(given);
                } else if (eq && lb_df_expand(eq + 1, lookup, v, &val, msg, sizeof msg) != LB_OK) {
                    fprintf(stderr, "llmbox: image build: Dockerfile:%d: %s\n", s->line, msg);
                    goto out;
                }
                if (!val && !eq)
                    continue; /* an ARG without a value: unset */
                if (v->n >= VARS_MAX) {
                    free(val);
                    fprintf(stderr, "llmbox: image build: Dockerfile:%d: more than %d ARG and ENV values\n",
                            s->line, VARS_MAX);
                    goto out;
                }
                if (!val || !(owned[nowned] = strndup(s->argv[j], nl))) {
                    free(val);
                    fprintf(stderr, "llmbox: image build: out of memory\n");
                    goto out;
                }
                v->names[v->n] = owned[nowned++];
                v->values[v->n++] = owned[nowned++] = val;
            }
            continue;
        }
        if (s->kind == LB_DF_FROM) {
            char *ref = NULL;
            lb_image_ref r;
            if (lb_df_expand(s->argv[0], lookup, v, &ref, msg, sizeof msg) != LB_OK ||
                lb_image_ref_parse(ref, LB_IMAGE_REF_LOCAL, &r, msg, sizeof msg) != LB_OK) {
                fprintf(stderr, "llmbox: image build: Dockerfile:%d: FROM %s: %s\n", s->line, ref ? ref : s->argv[0],
                        msg);
                free(ref);
                goto out;
            }
            free(ref);
        }
        if (s->kind == LB_DF_COPY && s->from && s->from_stage < 0) {
            lb_image_ref r; /* COPY --from= an image: a reference, pulled when the step runs */
            if (lb_image_ref_parse(s->from, LB_IMAGE_REF_LOCAL, &r, msg, sizeof msg) != LB_OK) {
                fprintf(stderr, "llmbox: image build: Dockerfile:%d: COPY --from=%s: %s\n", s->line, s->from, msg);
                goto out;
            }
        }
        /* COPY --from's sources are a stage's or an image's, checked in its tree when the step runs */
        if ((s->kind == LB_DF_COPY || s->kind == LB_DF_ADD) && !s->from) {
            for (int j = 0; j < s->argc - 1; j++) {
                char *src = NULL;
                if (lb_df_expand(s->argv[j], lookup, v, &src, msg, sizeof msg) != LB_OK) {
                    fprintf(stderr, "llmbox: image build: Dockerfile:%d: %s\n", s->line, msg);
                    goto out;
                }
                int ok = !strstr(src, "://") && source_in_context(ctxreal, src);
                if (!ok)
                    fprintf(stderr, "llmbox: image build: Dockerfile:%d: %s's source %.200s is not in the build "
                                    "context %s\n", s->line, lb_df_kind_name(s->kind), src, context);
                free(src);
                if (!ok)
                    goto out;
            }
        }
    }
    if (check) {
        fprintf(stderr, "llmbox: build: %s: %d steps checked\n", file, df.n);
        status = 0;
    } else if (geteuid() != 0) {
        fprintf(stderr, "llmbox: image build: building needs root (it writes the image store)\n");
    } else {
        /* every source was checked above, before any sandbox starts */
        lb_build_opts o = {.bargs = bargs, .nb = nb, .network = network, .no_cache = no_cache,
                           .timeout_s = (int)timeout_s};
        lb_build_result res;
        if (lb_build_run(cfg, &df, ctxreal, name, &o, &res, msg, sizeof msg) != LB_OK) {
            fprintf(stderr, "llmbox: image build: %s\nllmbox: image build: failed; nothing was registered\n", msg);
        } else {
            printf("built %s: %d steps, %d run in a sandbox, %d from the cache, %d new layers\n", res.canon,
                   res.steps, res.run, res.cached, res.layers);
            status = 0;
        }
    }
out:
    for (int i = 0; owned && i < nowned; i++)
        free(owned[i]);
    free(owned);
    free(v);
    lb_dockerfile_free(&df);
    return status;
}
