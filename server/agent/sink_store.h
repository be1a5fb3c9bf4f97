/*
 * A run's events into the task store (sink_store.c).
 */
#ifndef LB_SINK_STORE_H
#define LB_SINK_STORE_H

#include "agent/sink.h"
#include "store/store.h"

/* Events of task_id into st. */
void lb_sink_store_init(lb_sink *s, lb_store *st, const char *task_id);
/* several nodes: 1 once the store refused an event of this agent's (its node's
 * claim on the task is gone): the agent then exits 1, having written
 * nothing more. */
int lb_sink_store_fenced_out(void);

#endif
