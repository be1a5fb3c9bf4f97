/* Starting build/llmbox-stateio (server/stateio/stateio.h), which packs
 * and unpacks saved states inside a sandbox's user namespace (follow-ups). */
#ifndef LBSD_SANDBOX_STATEIO_H
#define LBSD_SANDBOX_STATEIO_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/status.h"

#define LBSD_STATEIO_TIMEOUT_S 900     /* one save or restore; a GiB at zstd's pace is ~10 s */

/* Runs build/llmbox-stateio `mode` (save or restore) for a sandbox of
 * image (saved in the state; a restore refuses a state of another image,
 * LB_E_INVAL) in the user namespace userns_fd as its root, with state_fd, upper_fd (-1: none) and root_fd as
 * stateio.h says, and waits for it (a worker's call: it blocks). result
 * gets its line of JSON. LB_OK; LB_E_TOOBIG over a cap; LB_E_INVAL for a
 * damaged state; LB_E_SANDBOX otherwise; msg says why. */
LB_MUST_CHECK int lbsd_stateio_run(const lb_config *cfg, const char *mode, const char *image, int userns_fd,
                                   int state_fd, int upper_fd, int root_fd, uint64_t max_bytes,
                                   uint64_t max_entries, char *result, size_t resultsz, char *msg, size_t msgsz);

#endif
