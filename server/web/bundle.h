/* Bundles of a finished task's results, .zip or .tar.gz (bundle.c). */
#ifndef LB_WEB_BUNDLE_H
#define LB_WEB_BUNDLE_H

#include <stddef.h>

#include "common/status.h"
#include "store/store.h"
#include "web/request.h"

/* The kept whole-task bundle's file, relative to artifacts/<id>/:
 * "bundle.<format>". */
LB_MUST_CHECK int lb_bundle_name(const char *format, char *out, size_t outsz);
/* Builds (once) the whole-task bundle of a finished task: the output with
 * answer.txt and trajectory.json, kept for nginx to serve (under cfg's
 * artifacts_dir, within its output caps). LB_E_TOOBIG over the caps, LB_E_NOTFOUND when the task's files are gone, LB_E_NOSPACE on
 * a full disk; err gets a sentence. */
LB_MUST_CHECK int lb_bundle_build(const struct lb_config *cfg, lb_store *s, const char *id, const char *format, char *err,
                    size_t errsz);
/* Answers r (task r->id, finished) with its bundle: of the output folder
 * `folder` (clean, relative), or of the whole task when folder is "".
 * Built once into a file under artifacts/<id>/ (within bounds: bundle.c)
 * that nginx serves (X-Accel-Redirect, with disposition). A build takes a
 * place of cfg's bundle_max_building, bundle_max_per_user per user (or
 * client address): none free is 503 or 429 with Retry-After, at once. 404
 * for no such folder, 413 over the caps, 507 on a full disk. */
void lb_bundle_serve(lb_req *r, const char *format, const char *folder, const char *disposition);

#endif
