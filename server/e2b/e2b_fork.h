/* E2B's fork (e2b_fork.c): POST /sandboxes/{id}/fork {count?, timeout?},
 * the SDK's sbx.fork() / Sandbox.fork(id), mapped onto llmbox's saved
 * states. The source's files (its writable layer: the same save as
 * createSnapshot) are saved once into a state of its own, and each of
 * count new sandboxes starts from it with the source's image (template),
 * resources, env, workdir, metadata and current network policy, owned by
 * the same key, each create counted by that key's quotas. Every fork gets
 * its own copy of the files; the source keeps running. Processes and
 * memory are not forked. The state is deleted once the forks started.
 * The answer is E2B's: 201 with one {sandbox} or {error: {code, message}}
 * per fork; a failure before any fork (the save) is a plain error. */
#ifndef LB_E2B_FORK_H
#define LB_E2B_FORK_H

#include "sbxapi/sandbox_registry.h"
#include "web/request.h"

#define LB_E2B_FORK_MAX 16            /* forks one call may ask for */
#define LB_E2B_FORK_DEFAULT_TIMEOUT_S 15 /* E2B's default timeout of a fork (its API's SandboxForkRequest) */

/* Answers POST /sandboxes/{id}/fork for the API sandbox s (found and held
 * by the caller). */
void lb_e2b_fork(lb_req *r, lb_sbx *s);

#endif
