/*
 * A sandbox's retirement: what the loop does at once (its command
 * abandoned, its processes' watchers told, its network helper stopped)
 * and the teardown handed to a worker (workers.h), with the answer its
 * connection waits for, if any. The loop, the TTL reaper and the warm
 * pool all retire sandboxes this one way.
 */
#include "sandboxd/retire.h"

#include "sandboxd/reply.h"
#include "sandboxd/sandbox_create.h"
#include "sandboxd/sandbox_exec.h"
#include "sandboxd/sandbox_net.h"
#include "sandboxd/sandbox_proc.h"
#include "sandboxd/workers.h"

#include "common/status.h"

#include <stdio.h>

static const lb_config *g_retire_cfg; /* the daemon's, for the workers' jobs */

void lbsd_retire_init(const lb_config *cfg)
{
    g_retire_cfg = cfg;
}

void lbsd_retire(lbsd_sandbox *sb, lbsd_conn *c, int answer, const char *msg)
{
    /* on the loop: what touches its connection or sandboxd's children
     * other than init (the slirp4netns helper is waited for here) */
    lbsd_exec_abandon(sb);
    /* E2B's protocol: its processes' watchers learn why (sandbox_proc.h) */
    lbsd_proc_sandbox_gone(sb, answer == LBSD_ANSWER_EXPIRED && msg ? msg : "the sandbox was destroyed");
    lbsd_net_detach(sb);
    lbsd_job *j = lbsd_job_new(LBSD_JOB_DESTROY, g_retire_cfg, NULL);
    if (j && c) {
        j->answer = answer;
        j->conn_serial = c->serial;
        snprintf(j->msg, sizeof j->msg, "%s", msg ? msg : "");
        c->creating = 1;
    }
    if (!j) {
        lbsd_sandbox_destroy(sb); /* no memory for a job: on the loop, as before */
        if (c && answer == LBSD_ANSWER_OK) {
            lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
        } else if (c) {
            lbsd_reply_error(c, LB_E_SANDBOX, "%s", msg);
            lbsd_conn_unbusy(c);
        }
        return;
    }
    j->sb = sb;
    lbsd_workers_submit(j);
}

void lbsd_sandbox_retire(lbsd_sandbox *sb)
{
    lbsd_retire(sb, NULL, 0, NULL);
}
