/*
 * One run's state as both agent loops keep it: the first final status
 * wins, a cancel means "cancelled" unless the task timer caused it, and
 * events go to the run's sink. See run_state.h.
 */
#include "agent/run_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lb_run_state_init(lb_run_state *s, const lb_loop_opts *o, const lb_sink *sink,
                       lb_loop_result *res)
{
    memset(s, 0, sizeof *s);
    s->o = o;
    s->sink = sink;
    s->res = res;
}

void lb_run_emit(lb_run_state *s, const char *type, cJSON *data)
{
    if (data && s->sink->event)
        s->sink->event(s->sink->arg, type, data);
    cJSON_Delete(data);
}

void lb_run_emit_status(lb_run_state *s, const char *status, const char *reason)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "status", status);
    if (reason)
        cJSON_AddStringToObject(d, "reason", reason);
    lb_run_emit(s, "status", d);
}

void lb_run_emit_error(lb_run_state *s, const char *msg)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "message", msg);
    lb_run_emit(s, "error", d);
}

void lb_run_final(lb_run_state *s, lb_task_status status, const char *fmt, ...)
{
    if (s->final)
        return;
    s->final = 1;
    va_list ap;
    va_start(ap, fmt);
    lb_loop_result_vset(s->res, status, fmt, ap);
    va_end(ap);
}

int lb_run_cancelled(lb_run_state *s)
{
    if (!s->o->cancel || !*s->o->cancel)
        return 0;
    if (s->o->timed_out && *s->o->timed_out)
        lb_run_final(s, LB_TASK_FAILED, "reached the task time limit (%d s)", s->o->timeout_s);
    else
        lb_run_final(s, LB_TASK_CANCELLED, "cancelled by the user");
    return 1;
}

void lb_loop_result_vset(lb_loop_result *r, int status, const char *fmt, va_list ap)
{
    snprintf(r->status, sizeof r->status, "%s", lb_task_status_name((lb_task_status)status));
    r->reason[0] = '\0';
    if (fmt)
        vsnprintf(r->reason, sizeof r->reason, fmt, ap);
}

void lb_loop_result_free(lb_loop_result *r)
{
    free(r->answer);
    r->answer = NULL;
}
