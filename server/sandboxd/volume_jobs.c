/*
 * E2B's volume requests on sandboxd's worker threads (volume_jobs.h).
 *
 * The request's own code (sandbox_volume.c) answers on a connection; on a
 * worker it answers on a stand-in that holds only an output buffer (the
 * loop owns the real connection and writes it meanwhile), and the loop
 * appends what it holds to the real one when the job comes back. Volume
 * jobs go to the workers one at a time, oldest first (a loop-side queue):
 * the owner's caps (volumes per owner, bytes per owner) are checked and
 * spent by one request at a time as on the loop, and one volume's writes
 * land in the order they came. A "volume_mount" still runs on the loop
 * beside a running job: it reads a volume's record and binds its folder,
 * both made atomically by the job's side (a record is written by rename,
 * a deleted volume's folder renamed away first). The store is opened on
 * the loop (lbsd_volume_store_ready) before any job touches it.
 */
#include "sandboxd/volume_jobs.h"

#include "sandboxd/reply.h"
#include "sandboxd/sandbox_volume.h"
#include "sandboxd/sandboxd.h"

#include "common/buf.h"
#include "common/status.h"

#include <stdlib.h>
#include <string.h>

#define VJ_OUT_MAX ((size_t)LLMBOX_RPC_MAX_FRAME * 2 + 64) /* a read's answer and its data, as a connection's */

typedef struct vj_state {
    char *data;                 /* a write's bytes, copied: the frame is the loop's */
    size_t dlen;
    lbsd_conn cap;              /* the stand-in: only out (and dead) are used */
} vj_state;

static lbsd_job *vj_head, *vj_tail; /* waiting, oldest first (the loop's only) */
static int vj_running;              /* a volume job with the workers */

static void vj_run(lbsd_job *j)
{
    vj_state *v = j->state;
    lbsd_volume_request(&v->cap, j->cfg, &j->req, v->data, v->dlen);
}

static void vj_free(void *p)
{
    vj_state *v = p;
    if (!v)
        return;
    free(v->data);
    lb_buf_free(&v->cap.out);
    lb_buf_free(&v->cap.deferred);
    free(v);
}

int lbsd_volume_job_is(const lbsd_job *j)
{
    return j->kind == LBSD_JOB_STATE && j->run == vj_run;
}

static void vj_next(void)
{
    if (vj_running || !vj_head)
        return;
    lbsd_job *j = vj_head;
    vj_head = j->next;
    if (!vj_head)
        vj_tail = NULL;
    j->next = NULL;
    vj_running = 1;
    lbsd_workers_submit(j);
}

void lbsd_volume_submit(lbsd_conn *c, const lb_config *cfg, lbsd_req *req, const char *data, size_t dlen)
{
    /* the store opened here, on the loop, so a job and a volume_mount
     * never race to open it; when it cannot be, the request says why */
    if (!lbsd_volume_store_ready(cfg)) {
        lbsd_volume_request(c, cfg, req, data, dlen);
        return;
    }
    vj_state *v = calloc(1, sizeof *v);
    /* the loop's frame itself, not a copy of its 64 MiB made on the loop */
    char *own = v ? lbsd_frame_take(data) : NULL;
    if (own) {
        v->data = own;
    } else if (!v || (dlen && !(v->data = malloc(dlen)))) {
        vj_free(v);
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        return;
    } else if (dlen) {
        memcpy(v->data, data, dlen);
    }
    v->dlen = dlen;
    v->cap.fd = -1;
    lb_buf_init(&v->cap.out, VJ_OUT_MAX);
    lb_buf_init(&v->cap.deferred, 0);
    lbsd_job *j = lbsd_job_new(LBSD_JOB_STATE, cfg, req);
    if (!j) {
        vj_free(v);
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        return;
    }
    j->run = vj_run;
    j->state = v;
    j->state_free = vj_free;
    j->conn_serial = c->serial;
    c->creating = 1; /* not read until answered: one request at a time per connection */
    if (vj_tail)
        vj_tail->next = j;
    else
        vj_head = j;
    vj_tail = j;
    vj_next();
}

void lbsd_volume_job_done(lbsd_job *j, lbsd_conn *c)
{
    vj_state *v = j->state;
    vj_running = 0;
    if (c && !c->dead) {
        c->creating = 0;
        if (v->cap.dead || lb_buf_append(&c->out, v->cap.out.data, v->cap.out.len) != LB_OK)
            c->dead = 1; /* an answer that could not be queued: the stream is out of step */
    }
    vj_next();
}
