/*
 * Image work sandboxd runs for an unprivileged client (image_jobs.c): the
 * layered image store (<image_store>/oci, docs/IMAGES.md) is root's, and
 * the web runs as its own user, so a pull or a Dockerfile build the web
 * asks for runs here as a child process: `llmbox image pull --if-missing
 * REF` or `llmbox image build -f ... NAME CONTEXT`, the CLI binary beside
 * build/llmbox-sandboxd (it links libcurl and libarchive; sandboxd never
 * does). The child's stdout and stderr come through a pipe the event loop
 * reads into a capped log file under <var_dir>/sandboxd/image-jobs/; its
 * end is taken by the loop's waitpid(-1) (lbsd_image_jobs_child_exited).
 * Nothing here blocks: a spawn is a fork and an exec.
 */
#ifndef LBSD_IMAGE_JOBS_H
#define LBSD_IMAGE_JOBS_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"
#include "sandbox/rpc.h"
#include "sandboxd/objects.h"

#define LBSD_IMGJOB_REMEMBER 64           /* jobs remembered, running or ended */
#define LBSD_IMGJOB_KEEP_MS (3600 * 1000) /* an ended job is forgotten this long after its end */
#define LBSD_IMGJOB_LOG_MAX (8u << 20)    /* log bytes kept per job; past it, only the last line */
#define LBSD_IMGJOB_POLL_MAX (1u << 20)   /* log bytes one poll answers */
#define LBSD_IMGJOB_RUN_MAX_MS (6LL * 3600 * 1000) /* a job running longer is killed */
#define LBSD_IMGJOB_ARGS_MAX 64           /* build args of one build */
#define LBSD_IMGJOB_ARG_MAX 4096          /* bytes of one build arg */
#define LBSD_IMGJOB_CONTEXT_MAX 64        /* context folder names: [a-z0-9-]{1,64} */

/* At start, before the loop: what an earlier run left (its jobs' logs and
 * contexts; their children died with it, PR_SET_PDEATHSIG) goes, and the
 * folder the web writes build contexts into exists. */
void lbsd_image_jobs_init(const lb_config *cfg);
/* image_job_start and image_job_poll: answered on c. */
void lbsd_image_job_request(lbsd_conn *c, const lbsd_req *req);
/* How many descriptors lbsd_image_jobs_fds may add. */
size_t lbsd_image_jobs_fd_count(void);
/* Adds the running jobs' pipes to pfd (at most room); returns how many. */
size_t lbsd_image_jobs_fds(struct pollfd *pfd, size_t room);
/* fd (one lbsd_image_jobs_fds gave) is readable or hung up. */
void lbsd_image_jobs_on_ready(int fd);
/* A child the loop reaped: 1 when it was one of ours (a job or the removal
 * of a context), 0 otherwise. */
int lbsd_image_jobs_child_exited(pid_t pid, int status);
/* Jobs over their time are killed, ended ones past their keep time
 * forgotten. Returns the ms until it wants to run again, or -1. */
int lbsd_image_jobs_tick(int64_t now);
/* sandboxd stops: running jobs are killed (their partial work is no
 * image: the puller and the builder register an image only whole). */
void lbsd_image_jobs_shutdown(void);

#endif
