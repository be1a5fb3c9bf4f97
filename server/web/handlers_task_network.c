/* A task's network record; the contract is handlers_task_network.h. The
 * agent notes which sandbox runs the task (common/netrecord.c) and the
 * gateway's record of that sandbox is the answer: the latest round's. */
#include "web/handlers_task_network.h"

#include "common/config.h"
#include "common/netrecord.h"
#include "common/status.h"
#include "web/http.h"

#include <cjson/cJSON.h>

void lb_h_task_network(lb_req *r)
{
    const lb_config *cfg = r->cfg;
    char sid[33], err[300];
    if (!lb_netrecord_task_sandbox(cfg, r->id, sid, sizeof sid)) {
        lb_http_error(r, 404, NULL, "This task's sandbox has no network record: its network is not a policy of "
                                    "rules, or its sandbox has not started.");
        return;
    }
    cJSON *o = NULL;
    int rc = lb_netrecord_read(cfg->var_dir, sid, &o, err, sizeof err);
    if (rc != LB_OK) {
        lb_http_error(r, rc == LB_E_NOTFOUND ? 404 : 500, NULL, "%s", err);
        return;
    }
    cJSON_AddStringToObject(o, "task", r->id);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}
