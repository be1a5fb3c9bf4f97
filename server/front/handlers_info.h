/* GET /api/health, /api/info, /api/models, /api/tools (handlers_info.c). */
#ifndef LB_WEB_HANDLERS_INFO_H
#define LB_WEB_HANDLERS_INFO_H

#include <cjson/cJSON.h>

#include "web/request.h"

void lb_h_health(lb_req *r);
void lb_h_info(lb_req *r);
void lb_h_models(lb_req *r);
void lb_h_tools(lb_req *r);
/* sandboxd's ping answer with "ok":true, or {"ok":false,"message"} when it
 * cannot be reached (at cfg's sandboxd_socket); cached 3 s, waits at most
 * 2 s. Caller frees. */
cJSON *lb_sandboxd_info(const struct lb_config *cfg);

#endif
