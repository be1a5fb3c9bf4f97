/* `llmbox image build -f Dockerfile [--build-arg K=V]... [--check] NAME
 * [CONTEXT]`: reads and checks a Dockerfile against its build context
 * (the instructions, the ARGs with the --build-args, FROM's reference,
 * every COPY/ADD source inside the context). `llmbox image build NAME`
 * without -f is the debootstrap build in build/llmbox-sandboxd and does
 * not come here. Running the steps in sandboxes is not built yet: without
 * --check the command says so after the check. */
#ifndef LB_IMAGES_BUILD_CLI_H
#define LB_IMAGES_BUILD_CLI_H

#include "common/config.h"

/* Whether argv (argv[0] "image") is `image build` with -f. */
int lb_build_cli_handles(int argc, char **argv);

/* Runs it; the exit status (0 checked, 1 refused, 2 usage). */
int lb_build_cli_main(int argc, char **argv, const lb_config *cfg);

#endif
