/* `llmbox node`'s GET /healthz (several nodes): one thread answering on
 * node_listen with {name, state, tasks, capacity, lease_expires}; 200
 * while the node holds its lease (state "running" or "draining"), 503
 * otherwise ("starting", "lapsed"), so Kubernetes and balancers see a
 * node that cannot claim. */
#ifndef LB_NODE_HEALTH_H
#define LB_NODE_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

/* What /healthz reports; the main thread writes it (lb_node_health_set). */
typedef struct lb_node_health {
    char name[64];
    char state[16];        /* starting, running, lapsed, draining */
    int tasks, capacity;
    int64_t lease_expires_ms; /* the database's clock; 0: none yet */
} lb_node_health;

/* Binds listen ("host:port") and starts the thread. LB_OK, or a sentence
 * in err (the address is taken, malformed). */
LB_MUST_CHECK int lb_node_health_start(const char *listen, char *err, size_t errsz);
void lb_node_health_set(const lb_node_health *h);

#endif
