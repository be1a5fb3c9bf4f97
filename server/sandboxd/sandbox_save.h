/* A sandbox's saved states (follow-ups): the store under
 * <var>/sandboxd/states/u<uid>/<name>.state (one name space per client
 * uid), the freeze / thaw / save / state_delete / state_list requests, and
 * the start of build/llmbox-stateio, which does the packing and unpacking
 * inside the sandbox's user namespace (server/stateio/stateio.h): the root
 * daemon links no archive library and never parses a state. */
#ifndef LBSD_SANDBOX_SAVE_H
#define LBSD_SANDBOX_SAVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/status.h"
#include "sandbox/rpc.h"

struct lbsd_conn;
struct lbsd_sandbox;
struct lbsd_job;

#define LBSD_STATE_MAX_ENTRIES 200000u /* entries of one state: a Python venv is ~20,000 */

/* Startup: makes the store, removes what a save cut short (a crash of
 * sandboxd, kill -9) left (temporary files, never a saved state) and
 * sweeps the old states. */
void lbsd_state_startup(const lb_config *cfg);
/* Removes states older than sandbox_state_max_age_s; at most once a
 * minute whatever the calls (now: lb_mono_ms()). The loop calls it on
 * every pass and wakes at least once a minute. */
void lbsd_state_sweep(const lb_config *cfg, int64_t now);
/* The file of uid's state name into out. LB_E_INVAL when it does not fit. */
LB_MUST_CHECK int lbsd_state_path(const lb_config *cfg, uid_t uid, const char *name, char *out, size_t outsz);

/* state_delete and state_list of c (no sandbox involved). */
void lbsd_state_store_request(const lb_config *cfg, struct lbsd_conn *c, const lbsd_req *req);
/* freeze, thaw and save of c's sandbox sb; while sb is frozen or being
 * saved, also refuses exec, read, write, list and stat with "busy". Returns
 * 1 when it answered (or handed the request to a worker), 0 when the
 * request is not its business. */
int lbsd_state_sandbox_request(const lb_config *cfg, struct lbsd_conn *c, struct lbsd_sandbox *sb,
                               const lbsd_req *req);
/* A STATE job is back on the loop (c: its connection, NULL when gone).
 * Answers a save and returns 0 (the caller frees the job); returns 1 for a
 * restore, which the caller finishes as the create it is. */
int lbsd_state_job_done(struct lbsd_job *j, struct lbsd_conn *c);

#endif
