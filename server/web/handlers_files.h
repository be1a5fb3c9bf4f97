/* File routes (handlers_files.c): one artifact, the trajectory, the
 * bundles, each answered by an X-Accel-Redirect into nginx. */
#ifndef LB_WEB_HANDLERS_FILES_H
#define LB_WEB_HANDLERS_FILES_H

#include "web/request.h"

/* GET /api/tasks/{id}/artifacts/{path}, and the preview route */
void lb_h_artifact(lb_req *r);
/* GET /api/tasks/{id}/trajectory */
void lb_h_trajectory(lb_req *r);
/* GET /api/tasks/{id}/bundle.zip and bundle.tar.gz [?path=folder] */
void lb_h_bundle_zip(lb_req *r);
void lb_h_bundle_tgz(lb_req *r);

#endif
