/* E2B's "volume" requests off sandboxd's event loop (volume_jobs.c): a
 * 60 MiB write with its fsync, or the byte count of an owner's many files,
 * runs on a worker thread (workers.h) while the loop serves every other
 * client. */
#ifndef LBSD_VOLUME_JOBS_H
#define LBSD_VOLUME_JOBS_H

#include <stddef.h>

#include "common/config.h"
#include "sandboxd/objects.h"
#include "sandboxd/workers.h"
#include "sandbox/rpc.h"

/* Serves c's volume request (sandbox_volume.h's lbsd_volume_request) on a
 * worker: req is moved into the job, data (a write's bytes) copied. c is
 * not read until the answer is queued on it (as a create's), and volume
 * requests run one at a time, in the order they came, from every
 * connection: an owner's caps and one volume's writes see each other as
 * they did on the loop. */
void lbsd_volume_submit(lbsd_conn *c, const lb_config *cfg, lbsd_req *req, const char *data, size_t dlen);
/* Whether j is a volume job (lbsd_workers_done returns it with the rest). */
int lbsd_volume_job_is(const lbsd_job *j);
/* A volume job done: its answer queued on c (NULL or dead: its client is
 * gone, the answer dropped), the next waiting one handed to a worker. */
void lbsd_volume_job_done(lbsd_job *j, lbsd_conn *c);

#endif
