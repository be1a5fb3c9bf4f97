/* A task's network record; the contract is handlers_task_network.h. The
 * agent notes which sandbox runs the task (common/netrecord.c) and the
 * gateway's record of that sandbox is the answer: the latest round's,
 * live while the sandbox is there, else the copy the agent kept in the
 * task's files when the round ended. */
#include "web/handlers_task_network.h"

#include "common/config.h"
#include "common/netrecord.h"
#include "common/status.h"
#include "web/http.h"

#include <cjson/cJSON.h>

void lb_h_task_network(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    char err[300];
    cJSON *o = NULL;
    int rc = lb_netrecord_task_read(cfg, r->id, &o, err, sizeof err);
    if (rc != LB_OK) {
        lb_http_error(r, rc == LB_E_NOTFOUND ? 404 : 500, NULL, "%s", err);
        return;
    }
    cJSON_AddStringToObject(o, "task", r->id);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}
