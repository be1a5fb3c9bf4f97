/* E2B's getMetrics (GET /sandboxes/{id}/metrics): the web samples every
 * E2B-reachable sandbox's CPU, memory and disk through sandboxd's metrics
 * request every few seconds and keeps a short ring of samples per sandbox. */
#ifndef LB_E2B_METRICS_H
#define LB_E2B_METRICS_H

#include "sbxapi/sandbox_registry.h"
#include "web/request.h"

/* Starts the sampler once (the first E2B request calls it); later calls
 * do nothing. */
void lb_e2b_metrics_start(void);

/* Answers s's samples as E2B's array of {timestamp, timestampUnix,
 * cpuUsedPct, cpuCount, memUsed, memTotal, memCache, diskUsed, diskTotal},
 * oldest first, within the query's start and end (unix seconds). */
void lb_e2b_metrics(lb_req *r, lb_sbx *s);

/* E2B's many-sandbox form, GET /sandboxes/metrics?sandbox_ids=a,b (E2B's
 * own cap: at most LB_E2B_METRICS_IDS_MAX ids, else 400; a malformed id
 * 400): {"sandboxes": {id: the newest sample}} of the listed sandboxes
 * that r's key sees (a user's key: its own), on this node and running;
 * the others are left out, as an absent one. */
#define LB_E2B_METRICS_IDS_MAX 100
void lb_e2b_metrics_many(lb_req *r);

#endif
