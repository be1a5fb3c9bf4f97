/* `llmbox blob` (blob_cli.c): the artifact store from the command line. */
#ifndef LB_COMMON_BLOB_CLI_H
#define LB_COMMON_BLOB_CLI_H

struct lb_config; /* common/config.h */

/* argv[0] is "blob"; returns the exit status (2: usage, 1: failure). */
int lb_blob_main(int argc, char **argv, const struct lb_config *cfg);

#endif
