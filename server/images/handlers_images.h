/* GET /api/images (handlers_images.c): the images of this host, their
 * disk use, and which are in use (images/image_admin.h); POST
 * /api/images/pull and GET /api/images/jobs/{id}: a pull sandboxd runs for
 * the web (sandboxd/image_jobs.h) and its log. */
#ifndef LB_IMAGES_HANDLERS_IMAGES_H
#define LB_IMAGES_HANDLERS_IMAGES_H

#include "web/request.h"

/* {"images":[...lb_image_list_json...],"layers_bytes":N}: the layers'
 * disk use, each layer counted once. */
void lb_h_images(lb_req *r);
/* POST /api/images/pull {"ref"}: 202 {"job","ref"}: sandboxd pulls ref
 * (nothing when the store has it; one job per reference). */
void lb_h_image_pull(lb_req *r);
/* GET /api/images/jobs/{id}?offset=N: {"job","state","exit_code"?,
 * "error"?,"log","next_offset"}: the job's state and its log from byte N
 * (at most 256 KiB, as UTF-8 text with invalid bytes replaced). */
void lb_h_image_job(lb_req *r);

#endif
