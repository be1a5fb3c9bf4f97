/* several nodes: a signed download link whose file is not on this machine
 * (handlers_dl_fetch.c). */
#ifndef LB_WEB_HANDLERS_DL_FETCH_H
#define LB_WEB_HANDLERS_DL_FETCH_H

#include "web/request.h"

/* GET /dl/{task}/{path}?e=&s= (the route "/dl/" + anything), reached only through nginx's @dl_fetch
 * (the link's location when its file is missing). */
void lb_h_dl_fetch(lb_req *r);

#endif
