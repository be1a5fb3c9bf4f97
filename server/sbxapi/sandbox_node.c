/* several nodes: sandbox ids of this node or another (sandbox_node.h). */
#include "sbxapi/sandbox_node.h"

#include "common/config.h" /* checksrc: allow unused-include (r->cfg->node_name needs lb_config whole) */
#include "common/node_id.h"
#include "web/http.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

int lb_sbx_id_mine(const char *own, const char *id, char *node, size_t nodesz)
{
    char n[LB_NODE_ID_NAME_MAX + 1];
    if (!lb_node_id_node(id, n, sizeof n) || !n[0] || (own && !strcmp(own, n))) {
        if (nodesz)
            node[0] = '\0';
        return 1;
    }
    snprintf(node, nodesz, "%s", n);
    return 0;
}

void lb_sbx_id_elsewhere_msg(const char *own, const char *id, const char *node, char *msg, size_t msgsz)
{
    if (own && own[0])
        snprintf(msg, msgsz,
                 "The sandbox %s is held by node %s, not by this web (node %s): send the call through the "
                 "balancer, which routes by the id's node prefix, or to node %s's web.",
                 id, node, own, node);
    else
        snprintf(msg, msgsz,
                 "The sandbox %s is held by node %s, and this web is no node of a cluster (node_name is not "
                 "set): send the call through the balancer, which routes by the id's node prefix.",
                 id, node);
}

/* The 421 JSON answer naming the holder (sandbox_node.h) */
static void lb_misdirected(lb_req *r, const char *node, const char *msg)
{
    char hdr[96];
    snprintf(hdr, sizeof hdr, "X-Llmbox-Node: %s\r\n", node);
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    if (e) {
        cJSON_AddStringToObject(e, "code", "misdirected");
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddStringToObject(e, "node", node);
    }
    lb_http_drain(r);
    if (e)
        lb_http_json(r, 421, o, hdr);
    else
        lb_http_error_hdr(r, 421, "misdirected", hdr, "%s", msg);
    cJSON_Delete(o);
}

int lb_sbx_id_here(lb_req *r, const char *id)
{
    char node[LB_NODE_ID_NAME_MAX + 1], msg[512];
    if (lb_sbx_id_mine(r->cfg->node_name, id, node, sizeof node))
        return 1;
    lb_sbx_id_elsewhere_msg(r->cfg->node_name, id, node, msg, sizeof msg);
    lb_misdirected(r, node, msg);
    return 0;
}

int lb_snapshot_id_here(lb_req *r, const char *id)
{
    char node[LB_NODE_ID_NAME_MAX + 1], msg[600];
    if (lb_sbx_id_mine(r->cfg->node_name, id, node, sizeof node))
        return 1;
    snprintf(msg, sizeof msg,
             "The snapshot %s is kept by node %s, not by this web%s%s%s: send the call through the balancer "
             "(it routes /api/snapshots/{id} by the id's node prefix, and a create by the X-Llmbox-Node: %s "
             "header), or to node %s's web.",
             id, node, r->cfg->node_name[0] ? " (node " : "", r->cfg->node_name,
             r->cfg->node_name[0] ? ")" : "", node, node);
    lb_misdirected(r, node, msg);
    return 0;
}
