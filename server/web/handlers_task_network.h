/* GET /api/tasks/{id}/network (handlers_task_network.c): the record of
 * the connections of a task's sandbox, when its network was a policy of
 * rules (docs/NETWORK.md). */
#ifndef LB_WEB_HANDLERS_TASK_NETWORK_H
#define LB_WEB_HANDLERS_TASK_NETWORK_H

#include "web/request.h"

/* 200 {task, network, connections: [...], truncated}; 404 when the task's
 * sandbox had no gateway (its network was none or nat, or it has not
 * started one yet). */
void lb_h_task_network(lb_req *r);

#endif
