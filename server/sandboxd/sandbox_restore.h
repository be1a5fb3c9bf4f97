/* create's "restore" (follow-ups): a fresh sandbox takes a saved state's
 * files (build/llmbox-stateio applies them through the sandbox's own root,
 * with its own rights) and its shell the saved cwd and exported variables. */
#ifndef LBSD_SANDBOX_RESTORE_H
#define LBSD_SANDBOX_RESTORE_H

#include <stddef.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/status.h"

struct lbsd_job;

/* Before any sandbox is made: LB_OK when uid has the state name, else
 * LB_E_NOTFOUND and a sentence in msg. */
LB_MUST_CHECK int lbsd_restore_check(const lb_config *cfg, uid_t uid, const char *name, char *msg, size_t msgsz);
/* Makes j (whose sb is made and not yet anyone's; req.state names the
 * state; uid is the client's; state, when not NULL, the create's input_dir,
 * copied after the restore) the restore that follows, and hands it to a
 * worker. Its end comes back as an LBSD_JOB_STATE job whose sb is the
 * restored sandbox, or NULL (destroyed) with rc and msg. */
void lbsd_restore_submit(struct lbsd_job *j);
/* Restores handed to a worker and not yet back (they count as sandboxes
 * being made), and the loop's note that one came back. */
int lbsd_restores_inflight(void);
void lbsd_restore_done(void);

#endif
