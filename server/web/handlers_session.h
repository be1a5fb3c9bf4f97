/* /api/login, /api/logout, /api/session (handlers_session.c). */
#ifndef LB_WEB_HANDLERS_SESSION_H
#define LB_WEB_HANDLERS_SESSION_H

#include "web/request.h"

void lb_h_login(lb_req *r);
void lb_h_logout(lb_req *r);
void lb_h_session(lb_req *r);

#endif
