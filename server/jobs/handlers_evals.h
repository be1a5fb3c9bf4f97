/* Evaluation routes (handlers_evals.c): create (a dataset upload, checked
 * whole before anything runs), list, get (progress, summary, a page of
 * runs), results.jsonl, summary.md, cancel, delete. An eval is shown to
 * its owner only: anyone else gets a 404, as for tasks. docs/API.md,
 * "Evaluations". */
#ifndef LB_WEB_HANDLERS_EVALS_H
#define LB_WEB_HANDLERS_EVALS_H

#include "web/request.h"

void lb_h_eval_create(lb_req *r);
void lb_h_eval_list(lb_req *r);
void lb_h_eval_get(lb_req *r);
void lb_h_eval_delete(lb_req *r);
void lb_h_eval_results(lb_req *r);
void lb_h_eval_summary_md(lb_req *r);
void lb_h_eval_cancel(lb_req *r);

#endif
