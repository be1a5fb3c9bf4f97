/*
 * The state both agent loops keep of one run (run_state.c): where its
 * events go, its result, and whether its final status is decided. The
 * sandbox loop (loop.c) and the llm mode (llm_run.c) decide, cancel and
 * report the same way through it, so neither copies the other.
 */
#ifndef LB_RUN_STATE_H
#define LB_RUN_STATE_H

#include <stdarg.h>

#include <cjson/cJSON.h>

#include "agent/loop.h"
#include "agent/sink.h"
#include "common/task.h"

typedef struct lb_run_state {
    const lb_loop_opts *o;
    const lb_sink *sink;
    lb_loop_result *res;
    int final;                  /* the final status is decided */
} lb_run_state;

/* A run of o reporting to sink, its result in res (which the caller cleared). */
void lb_run_state_init(lb_run_state *s, const lb_loop_opts *o, const lb_sink *sink,
                       lb_loop_result *res);
/* Hands an event to the sink (data is consumed; NULL: nothing sent). */
void lb_run_emit(lb_run_state *s, const char *type, cJSON *data);
/* A "status" event {status, reason?}. */
void lb_run_emit_status(lb_run_state *s, const char *status, const char *reason);
/* An "error" event {message}. */
void lb_run_emit_error(lb_run_state *s, const char *msg);
/* Decides the final status and its reason (fmt NULL: none); the first
 * decision wins, later ones are ignored. */
void lb_run_final(lb_run_state *s, lb_task_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Whether the run was cancelled (a user's cancel or the task timer) and,
 * if so, its final status decided: failed at the time limit, else
 * cancelled. */
int lb_run_cancelled(lb_run_state *s);

/* Sets r's final status (an lb_task_status) and its reason, formatted
 * from fmt (NULL: none). */
void lb_loop_result_vset(lb_loop_result *r, int status, const char *fmt, va_list ap);
void lb_loop_result_free(lb_loop_result *r);

#endif
