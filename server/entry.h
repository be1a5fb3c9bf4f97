/* Entry points of the subcommands of build/llmbox. argv[0] is the
 * subcommand name. Each returns the process exit status. `sandboxd` and
 * `image` are not here: they are build/llmbox-sandboxd (server/sandboxd/),
 * which main.c execs. LLMBOX_VERSION is both executables' version. */
#ifndef LB_ENTRY_H
#define LB_ENTRY_H

#define LLMBOX_VERSION "0.1.0"

int lb_web_main(int argc, char **argv);      /* server/web/ */
int lb_agent_main(int argc, char **argv);    /* server/agent/ */
int lb_run_main(int argc, char **argv);      /* server/agent/ */
int lb_plugin_main(int argc, char **argv);   /* server/agent/plugin_check.c */
int lb_eval_main(int argc, char **argv);     /* server/eval/eval_cli.c */
int lb_netgw_main(int argc, char **argv);    /* server/netgw/netgw_main.c: a sandbox's network gateway */
struct lb_config;
/* server/web/cmd_user.c; have_cfg: whether the configuration loaded */
int lb_user_main(int argc, char **argv, int have_cfg);
int lb_config_main(int argc, char **argv);   /* server/web/cmd_user.c */
/* `llmbox score` (server/eval/score_main.c): one answer scored, JSON in
 * on stdin, one JSON line out */
int lb_score_main(int argc, char **argv, const struct lb_config *cfg);
/* `llmbox node` (server/node/node_main.c, several nodes): claims and runs
 * queued tasks on this host */
int lb_node_main(int argc, char **argv, const struct lb_config *cfg);

#endif
