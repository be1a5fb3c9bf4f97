/*
 * Where a run's events go (lb_sink): the task store (sink_store.h) for
 * `llmbox agent`, the terminal (sink_term.h) for `llmbox run`, so both modes
 * run exactly the same loop.
 */
#ifndef LB_SINK_H
#define LB_SINK_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "store/store.h"

/* Where a task's steps go. Every callback may be NULL. */
typedef struct lb_sink {
    void *arg;
    /* type and data as documented in store/store.h */
    void (*event)(void *arg, const char *type, const cJSON *data);
    void (*artifacts)(void *arg, const lb_artifact *a, size_t n);
    void (*usage)(void *arg, const lb_task_usage *u);
    /* The final status; called exactly once, last. Returns an lb_status. */
    int (*finish)(void *arg, const char *status, const char *reason, const char *answer);
} lb_sink;

#endif
