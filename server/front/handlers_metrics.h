/* GET /metrics, Prometheus text format 0.0.4 (handlers_metrics.c). */
#ifndef LB_WEB_HANDLERS_METRICS_H
#define LB_WEB_HANDLERS_METRICS_H

#include "web/request.h"

void lb_h_metrics(lb_req *r);

#endif
