/* llmbox: one multi-call binary. Each subcommand lives in its own folder. */
#include "common/blob_cli.h" /* several nodes: llmbox blob */
#include "images/build_cli.h" /* llmbox image build -f */
#include "images/registry_cli.h" /* llmbox image pull|push */
#include "web/shared_secrets.h" /* several nodes: llmbox secrets */
#include "common/config.h"
#include "common/status.h"
#include "images/image_cli.h" /* llmbox image import|ls|rm|gc */
#include "entry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* `llmbox sandboxd ...` and `llmbox image ...` run build/llmbox-sandboxd,
 * the root daemon's own executable, found next to this one: root code is
 * not linked into this binary (docs/ARCHITECTURE.md, "Layout of the code").
 * The same pid goes on (exec), so scripts and service files that start
 * `llmbox sandboxd` keep their pid and signals. sub: the first argument to
 * pass ("image"), or NULL to pass only what follows the subcommand. */
static int exec_sandboxd(const lb_config *cfg, const char *sub, int argc, char **argv)
{
    char path[LB_CFG_PATH + 32];
    const char *slash = strrchr(cfg->self_exe, '/');
    int dirlen = slash ? (int)(slash - cfg->self_exe) : 1;
    if ((size_t)snprintf(path, sizeof path, "%.*s/llmbox-sandboxd", dirlen, slash ? cfg->self_exe : ".") >=
        sizeof path) {
        fprintf(stderr, "llmbox: the path of llmbox-sandboxd is too long\n");
        return 1;
    }
    char **av = calloc((size_t)argc + 2, sizeof *av);
    if (!av) {
        fprintf(stderr, "llmbox: out of memory\n");
        return 1;
    }
    int n = 0;
    av[n++] = path;
    if (sub)
        av[n++] = (char *)sub;
    for (int i = 1; i < argc; i++)
        av[n++] = argv[i];
    av[n] = NULL;
    execv(path, av);
    fprintf(stderr, "llmbox: cannot run %s: %s (it is built by `make all`, next to llmbox)\n", path,
            strerror(errno));
    free(av);
    return 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: llmbox <command> [options]\n"
            "\n"
            "commands:\n"
            "  web                 FastCGI backend on a unix socket (behind nginx)\n"
            "  sandboxd            the sandbox daemon (root): runs llmbox-sandboxd\n"
            "  agent --task ID     run one stored task (spawned by web)\n"
            "  run [-i FILE]... [-o DIR] \"prompt\"\n"
            "                      run one task from the terminal\n"
            "  eval --data FILE --mode sandbox|llm|both [--model NAME] [--out DIR] ...\n"
            "                      run an evaluation on the service (docs/EVAL.md)\n"
            "  plugin check FILE.so\n"
            "                      load a tool plugin as an agent would; print its tools or why not\n"
            "  image build [NAME]  build a sandbox image with debootstrap\n"
            "  image list          the images, their state and size\n"
            "  image pull REF [--oci DIR] | image push (NAME | --oci DIR) REF\n"
            "                      an image from or to a registry (docs/IMAGES.md)\n"
            "  image build -f Dockerfile [--build-arg K=V]... [--network nat] [--check] NAME [CONTEXT]\n"
            "                      build a layered image from a Dockerfile, RUN in sandboxes (docs/IMAGES.md)\n"
            "  image import FILE [NAME] | ls | rm NAME | gc\n"
            "                      layered images: docker-archive, oci-archive or OCI layout (docs/IMAGES.md)\n"
            "  user add NAME       a new API token and the llmbox.conf lines for it\n"
            "  user hash | list    the token_sha256 of a token on stdin; the users\n"
            "  score < REQUEST     score one answer (eval scorers; JSON in, one JSON line out)\n"
            "  node                claim and run queued tasks on this host (task_runner = queue)\n"
            "  blob where|put|get|head|rm|ls|push|pull|mkbucket ...\n"
            "                      the artifact store: local folder or S3 bucket (docs/OPERATIONS.md)\n"
            "  secrets rotate download|preview\n"
            "                      a new generation of a secret every web shares (docs/OPERATIONS.md)\n"
            "  config check        loads the configuration and says what is wrong\n"
            "  config listen       the address nginx listens on\n"
            "  netgw --dir DIR     a sandbox's network gateway (sandboxd starts it: docs/NETWORK.md)\n"
            "  version             print the version\n"
            "\n"
            "Configuration comes from llmbox.conf (LLMBOX_CONF, default $LLMBOX_HOME/llmbox.conf)\n"
            "and the environment, which wins; see README.md and llmbox.conf.example.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("llmbox %s\n", LLMBOX_VERSION);
        return 0;
    }
    /* the gateway reads no configuration: sandboxd hands it all it needs,
     * and as an unprivileged user it may not read llmbox.conf */
    if (!strcmp(cmd, "netgw"))
        return lb_netgw_main(argc - 1, argv + 1);
    int rc = lb_config_load(lb_cfg_mut());
    if (!strcmp(cmd, "user")) /* makes the first user even while the file does not load yet */
        return lb_user_main(argc - 1, argv + 1, rc == LB_OK);
    if (rc != LB_OK) {
        /* a bad llmbox.conf or variable stops every subcommand: a service
         * that starts with half its settings is worse than one that does not */
        fprintf(stderr, "llmbox: cannot load the configuration: %s\n",
                lb_config_error()[0] ? lb_config_error() : lb_strerror(rc));
        return 1;
    }
    argc--;
    argv++;
    if (!strcmp(cmd, "web"))
        return lb_web_main(argc, argv);
    if (!strcmp(cmd, "sandboxd"))
        return exec_sandboxd(lb_cfg(), NULL, argc, argv);
    if (!strcmp(cmd, "agent"))
        return lb_agent_main(argc, argv);
    if (!strcmp(cmd, "eval"))
        return lb_eval_main(argc, argv);
    if (!strcmp(cmd, "run"))
        return lb_run_main(argc, argv);
    if (!strcmp(cmd, "plugin"))
        return lb_plugin_main(argc, argv);
    if (!strcmp(cmd, "image") && lb_registry_cli_handles(argc, argv)) /* the registry client */
        return lb_registry_cli_main(argc, argv, lb_cfg());
    if (!strcmp(cmd, "image") && lb_build_cli_handles(argc, argv)) /* a Dockerfile; without -f: sandboxd */
        return lb_build_cli_main(argc, argv, lb_cfg());
    if (!strcmp(cmd, "image") && argc > 1 && lb_image_cli_handles(argv[1]))
        return lb_image_main(argc, argv, lb_cfg()); /* the layered store: build/llmbox's own */
    if (!strcmp(cmd, "image"))
        return exec_sandboxd(lb_cfg(), "image", argc, argv);
    if (!strcmp(cmd, "config"))
        return lb_config_main(argc, argv);
    if (!strcmp(cmd, "node")) /* several nodes: the queue's runner */
        return lb_node_main(argc, argv, lb_cfg());
    if (!strcmp(cmd, "blob")) /* several nodes: object storage */
        return lb_blob_main(argc, argv, lb_cfg());
    if (!strcmp(cmd, "secrets")) /* several nodes: shared signing secrets */
        return lb_secrets_cmd(argc, argv, lb_cfg());
    if (!strcmp(cmd, "score"))
        return lb_score_main(argc, argv, lb_cfg());
    fprintf(stderr, "llmbox: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
