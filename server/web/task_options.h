/* What a task may ask for besides its prompt (task_options.c): the
 * network and the image. */
#ifndef LB_WEB_TASK_OPTIONS_H
#define LB_WEB_TASK_OPTIONS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"

struct lb_config;   /* common/config.h */
struct lb_user_cfg; /* common/config.h */

/* network "none" or "nat" (nat only when cfg's network_allow has it), or
 * a policy {"allow": [...], "deny": [...]} as JSON text within the
 * service's network_egress_max: LB_OK, LB_E_DENIED (not allowed here) or
 * LB_E_INVAL, with a sentence in err. */
LB_MUST_CHECK int lb_network_check(const struct lb_config *cfg, const char *v, char *err, size_t errsz);
/* The same for a user (NULL: none), whose own network_egress_max also
 * applies; canon (may be NULL) gets the policy's canonical text, the form
 * a task stores. */
LB_MUST_CHECK int lb_network_check_for(const struct lb_config *cfg, const struct lb_user_cfg *user, const char *v,
                                       char *canon, size_t canonsz, char *err, size_t errsz);
/* A built image of that name in cfg's image store: LB_OK, LB_E_INVAL or
 * LB_E_NOTFOUND. */
LB_MUST_CHECK int lb_image_check(const struct lb_config *cfg, const char *v, char *err, size_t errsz);
/* [{name, default}] of the built images of cfg's image store, sorted;
 * NULL when out of memory. */
cJSON *lb_images_list(const struct lb_config *cfg);

#endif
