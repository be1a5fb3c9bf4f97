/* `llmbox web` itself (web_main.c): the socket, the worker threads,
 * crash recovery, and where agent logs go. */
#ifndef LB_WEB_WEB_MAIN_H
#define LB_WEB_WEB_MAIN_H

#include <stddef.h>

#include "store/store.h"

/* Crash recovery: finishes active tasks whose agent is gone. */
void lb_web_recover(lb_store *s);
/* True when pid is an `llmbox agent` process running task id (checked by
 * its command line, since a recorded pid may have been reused). */
int lb_agent_alive(int pid, const char *id);

#endif
