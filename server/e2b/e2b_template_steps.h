/* E2B's template (the JSON body of `Template.build`'s
 * POST /v2/templates/{id}/builds/{build}: fromImage, steps, startCmd...)
 * translated into a Dockerfile for llmbox's builder (server/images/,
 * docs/IMAGES.md "Building from a Dockerfile"). The body is a client's
 * bytes: every word is checked (no control characters, so nothing can
 * start a second instruction), the steps are capped, and a step the
 * builder cannot do is refused with a sentence and the step it came from,
 * which the build's status shows (the SDK points at the user's line). */
#ifndef LB_E2B_TEMPLATE_STEPS_H
#define LB_E2B_TEMPLATE_STEPS_H

#include <cjson/cJSON.h>

#include "common/buf.h"
#include "common/status.h"

#define LB_E2B_TPL_STEPS_MAX 200     /* steps of one template: E2B's own are a few dozen at most */
#define LB_E2B_TPL_WORD_MAX 16384    /* one command, path or value, before escaping */
#define LB_E2B_TPL_FILES_DIR "files" /* the context's folder of uploads: files/<sha256 hex>/... */

/* Writes the Dockerfile of tpl into out (its max bounds it). COPY steps
 * name their files as files/<filesHash>/<src> in the build context; each
 * hash (64 lowercase hex) goes into hashes (up to max_hashes, which the
 * steps cap bounds) so the caller can check that it was uploaded.
 * Returns LB_OK, or LB_E_INVAL / LB_E_TOOBIG with a sentence in msg and
 * in step the SDK's name of the step it came from: "base" (fromImage and
 * its kin), "finalize" (startCmd, readyCmd) or the 1-based step number as
 * a string (the SDK's stack trace index). line_steps (may be NULL) gets,
 * for each Dockerfile line l < max_lines, the step it came from (0: the
 * FROM), so the builder's "Dockerfile:LINE:" can name the user's step.
 * Pure. */
LB_MUST_CHECK int lb_e2b_tpl_dockerfile(const cJSON *tpl, lb_buf *out, char (*hashes)[65], int max_hashes,
                                        int *n_hashes, int *line_steps, int max_lines, char *msg, size_t msgsz,
                                        char step[16]);

#endif
