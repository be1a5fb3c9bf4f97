/* The web's side of the artifact store: the artifacts folder is the
 * store's cache on this machine (common/blob_task.c), so once a file is
 * fetched every existing way of serving it (X-Accel-Redirect, signed
 * links, bundles) works unchanged, ranges and sendfile included. */
#include "web/blob_ready.h"

#include "common/blob_task.h"
#include "common/log.h"
#include "common/status.h"
#include "web/http.h"

int lb_blob_ready(lb_req *r, const char *path, int tree)
{
    char why[1024] = "";
    int rc = tree ? lb_blob_task_fetch_outputs(r->cfg, r->id, path, why, sizeof why)
                  : lb_blob_task_fetch_output(r->cfg, r->id, path, why, sizeof why);
    if (rc == LB_OK)
        return 1;
    lb_error("web: task %s: fetching from the object store: %s", r->id, why);
    if (rc == LB_E_NOTFOUND)
        lb_http_error(r, 404, "not_found", "The file is listed but gone from the object store: %s", why);
    else
        lb_http_error_hdr(r, 503, NULL, "Retry-After: 5\r\n", "The object store cannot be read right now: %s", why);
    return 0;
}

int lb_blob_record_ready(lb_req *r, const char *name)
{
    char why[1024] = "";
    int rc = lb_blob_task_fetch_record(r->cfg, r->id, name, why, sizeof why);
    if (rc == LB_OK || rc == LB_E_NOTFOUND)
        return 1;
    lb_error("web: task %s: fetching its %s from the object store: %s", r->id, name, why);
    lb_http_error_hdr(r, 503, NULL, "Retry-After: 5\r\n", "The object store cannot be read right now: %s", why);
    return 0;
}
