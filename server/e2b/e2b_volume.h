/* E2B's volumes (docs/E2B.md "Volumes"): the control plane (`POST
 * /volumes`, `GET /volumes`, `GET` and `DELETE /volumes/{id}`, X-API-KEY),
 * the content API (`/volumecontent/{id}/dir|path|file`, Authorization:
 * Bearer <the volume's token>) and `volumeMounts` at Sandbox.create.
 *
 * The volumes themselves are sandboxd's (sandboxd/sandbox_volume.h: the
 * web cannot write what sandboxes own, and never names a host path to
 * sandboxd, only a volume id). Here: who may reach which volume, E2B's
 * shapes, and the token: an HMAC of the volume's id under the sandbox API
 * token, as the sandboxes' envd tokens, so it survives restarts and opens
 * that volume's content only.
 *
 * Several nodes (node_name set): a volume id is "<node>.<32 hex>" (the
 * web adds its node to sandboxd's id) so the balancer routes its calls to
 * the holder, and another node's id is a 421 naming it; the store keeps a
 * row per volume (store/store_volume.h) for lists and names across the
 * nodes; a create mounting another node's volumes is forwarded there
 * (lb_e2b_mounts_elsewhere). */
#ifndef LB_E2B_VOLUME_H
#define LB_E2B_VOLUME_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/node_id.h"
#include "common/path.h"
#include "web/request.h"

struct lb_sbx;

#define LB_E2B_MOUNTS_MAX 8     /* volumeMounts of one sandbox */
#define LB_E2B_MOUNTS_KEPT 1024 /* sandboxes whose mounts getInfo shows */

/* GET, POST /e2b/volumes; GET, DELETE /e2b/volumes/{id} (router.c, LB_WHO_E2B). */
void lb_h_e2b_volumes(lb_req *r);
void lb_h_e2b_volume(lb_req *r);
/* /e2b/volumecontent/{id}/dir|path|file (router.c, LB_WHO_E2B_VOLUME). */
void lb_h_e2b_volume_content(lb_req *r);

/* LB_WHO_E2B_VOLUME: the Bearer token of the path's volume (401 otherwise,
 * answered). */
int lb_e2b_volume_auth_ok(lb_req *r);
/* Whether r's key may reach volume id (its owner's key or the shared
 * token); 1 also when there is none (the handler says so). */
int lb_e2b_volume_owner_sees(lb_req *r, const char *id);

/* The volumes a create mounts: volume ids and absolute paths. */
typedef struct lb_e2b_mounts {
    size_t n;
    char id[LB_E2B_MOUNTS_MAX][33];
    char name[LB_E2B_MOUNTS_MAX][65];
    char path[LB_E2B_MOUNTS_MAX][LB_PATH_MAX + 2];
    char holder[LB_NODE_ID_NAME_MAX + 1]; /* several nodes: "" this node's; else the node holding them all */
} lb_e2b_mounts;
/* A create body's volumeMounts ([{name, path}]), each name one of r's key's
 * volumes: 0, or the HTTP status with a sentence in msg. Several nodes:
 * a name this node's sandboxd lacks is looked up in the store's rows
 * (store/store_volume.h); volumes all of another node set m->holder (the
 * caller then answers with lb_e2b_mounts_elsewhere), volumes of two nodes
 * are a 400. */
int lb_e2b_mounts_parse(lb_req *r, const cJSON *body, lb_e2b_mounts *m, char *msg, size_t msgsz);
/* Several nodes: answers a create whose volumes m->holder holds. The same
 * request (method, path and query, body, the caller's X-API-KEY and
 * Authorization, nothing else) goes to the balancer (cluster_url) with
 * X-Llmbox-Node: <holder>, which routes it to that node's web, and its
 * answer is relayed (status, Content-Type, body; capped). Without
 * cluster_url, or for a request that came so already (it carries
 * X-Llmbox-Node: never forwarded twice), the answer is a 421 naming the
 * holder. */
void lb_e2b_mounts_elsewhere(lb_req *r, const cJSON *body, const lb_e2b_mounts *m);
/* Binds them into s (sandboxd's volume_mount): 0, or the HTTP status. */
int lb_e2b_mounts_apply(lb_req *r, struct lb_sbx *s, const lb_e2b_mounts *m, char *msg, size_t msgsz);
/* Keeps the mounts of sandbox id for getInfo (the web's memory: the last
 * LB_E2B_MOUNTS_KEPT sandboxes made with mounts; a restart forgets them). */
void lb_e2b_mounts_remember(const char *id, const lb_e2b_mounts *m);
/* Adds getInfo's "volumeMounts": [{name, path}] of sandbox id to o ([]
 * when none is kept). 0 when out of memory. */
int lb_e2b_mounts_shape(const char *id, cJSON *o);

#endif
