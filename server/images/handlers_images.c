/* GET /api/images (handlers_images.h). The web runs unprivileged: it reads
 * the records (refs/ is world-readable, the layers are not) and probes the
 * sandboxes' holds on them; each layer's disk use is in the records. */
#include "images/handlers_images.h"

#include "images/image_admin.h"
#include "web/http.h"

void lb_h_images(lb_req *r)
{
    uint64_t total = 0;
    cJSON *list = lb_image_list_json(r->cfg, &total);
    cJSON *o = list ? cJSON_CreateObject() : NULL;
    if (!o || !cJSON_AddItemToObject(o, "images", list)) {
        if (!o)
            cJSON_Delete(list);
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    cJSON_AddNumberToObject(o, "layers_bytes", (double)total);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}
