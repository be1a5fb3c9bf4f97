/* GET /api/images (handlers_images.c): the images of this host, their
 * disk use, and which are in use (images/image_admin.h). */
#ifndef LB_IMAGES_HANDLERS_IMAGES_H
#define LB_IMAGES_HANDLERS_IMAGES_H

#include "web/request.h"

/* {"images":[...lb_image_list_json...],"layers_bytes":N}: the layers'
 * disk use, each layer counted once. */
void lb_h_images(lb_req *r);

#endif
