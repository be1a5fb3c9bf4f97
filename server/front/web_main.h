/* `llmbox web` itself (web_main.c): the socket, the worker threads,
 * crash recovery, and where agent logs go. */
#ifndef LB_WEB_WEB_MAIN_H
#define LB_WEB_WEB_MAIN_H

#include <stddef.h>

#include "store/store.h"

/* Crash recovery: finishes active tasks whose agent is gone. */
void lb_web_recover(lb_store *s);

#endif
