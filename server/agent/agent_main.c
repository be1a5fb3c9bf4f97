/* placeholder until this subcommand lands */
#include "entry.h"
#include <stdio.h>
int lb_agent_main(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "llmbox %s: not built yet\n", argv[0]);
    return 1;
}
