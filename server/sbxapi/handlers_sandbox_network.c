/* A sandbox's network through the sandbox API; the contract is
 * handlers_sandbox_network.h. The files are the gateway's
 * (common/netrecord.h): the web reads the record and replaces the policy,
 * and never talks to the sandbox's traffic. */
#include "sbxapi/handlers_sandbox_network.h"

#include "common/config.h"
#include "common/netpolicy.h"
#include "common/netrecord.h"
#include "common/status.h"
#include "sbxapi/sandbox_registry.h"
#include "web/http.h"
#include "web/req_body.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sandboxd id of the API sandbox of the path into out; 0 and the
 * answer (404) sent when there is none. */
static int sandboxd_id(lb_req *r, char *out, size_t outsz)
{
    char msg[400];
    lb_sbx *s = lb_sbx_get(r->sandbox, msg, sizeof msg);
    if (!s) {
        lb_http_error(r, 404, "not_found", "%s", msg);
        return 0;
    }
    pthread_mutex_lock(&s->op_mu);
    snprintf(out, outsz, "%s", s->sbx_id);
    pthread_mutex_unlock(&s->op_mu);
    lb_sbx_put(s);
    if (!out[0]) {
        lb_http_error(r, 409, NULL, "The sandbox %s is still starting.", r->sandbox);
        return 0;
    }
    return 1;
}

void lb_h_sbx_network_get(lb_req *r)
{
    char sid[33], err[300];
    if (!sandboxd_id(r, sid, sizeof sid))
        return;
    cJSON *o = NULL;
    const lb_config *cfg = r->cfg;
    int rc = lb_netrecord_read(cfg->var_dir, sid, &o, err, sizeof err);
    if (rc != LB_OK) {
        lb_http_error(r, rc == LB_E_NOTFOUND ? 404 : 500, NULL, "%s", err);
        return;
    }
    cJSON_AddStringToObject(o, "id", r->sandbox);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

int lb_sbx_network_apply(const lb_req *r, const char *sbx_id, const cJSON *v, char *text, char *err, size_t errsz,
                         int *status)
{
    const lb_config *cfg = r->cfg;
    lb_netpolicy *p = malloc(sizeof *p);
    if (!p) {
        snprintf(err, errsz, "Out of memory.");
        *status = 500;
        return LB_E_NOMEM;
    }
    int rc = lb_netpolicy_from_json(v, p, err, errsz);
    if (rc == LB_OK && p->mode != LB_NETPOL_RULES) {
        snprintf(err, errsz, "A running sandbox's network changes only between policies of rules "
                             "({\"allow\": [...], \"deny\": [...]}); \"none\" is {\"allow\": []}.");
        rc = LB_E_INVAL;
    }
    if (rc == LB_OK)
        rc = lb_netpolicy_admit(p, cfg->network_egress_max, r->user ? r->user->network_egress_max : NULL, err,
                                errsz);
    if (rc == LB_OK)
        rc = lb_netpolicy_admit_bytes(p, cfg->network_max_bytes, r->user ? r->user->network_max_bytes : 0, err,
                                      errsz);
    if (rc == LB_OK && lb_netpolicy_text(p, text, LB_NETPOL_TEXT_MAX + 1) != LB_OK) {
        snprintf(err, errsz, "The network policy is longer than %d bytes as text.", LB_NETPOL_TEXT_MAX);
        rc = LB_E_TOOBIG;
    }
    if (rc == LB_OK)
        rc = lb_netrecord_set_policy(cfg->var_dir, sbx_id, text, err, errsz);
    free(p);
    *status = rc == LB_OK            ? 200
              : rc == LB_E_DENIED    ? 403
              : rc == LB_E_NOTFOUND  ? 404
              : rc == LB_E_IO || rc == LB_E_NOMEM ? 500
                                     : 400;
    return rc;
}

void lb_h_sbx_network_patch(lb_req *r)
{
    char sid[33], err[400];
    char *text = NULL;
    cJSON *body = lb_req_json(r, LB_NETPOL_TEXT_MAX * 2, "network policy");
    if (!body)
        return;
    if (!sandboxd_id(r, sid, sizeof sid))
        goto out;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "network");
    if (!v)
        v = body;
    text = malloc(LB_NETPOL_TEXT_MAX + 1);
    if (!text) {
        lb_http_error(r, 500, NULL, "Out of memory.");
        goto out;
    }
    int st = 0;
    if (lb_sbx_network_apply(r, sid, v, text, err, sizeof err, &st) != LB_OK) {
        lb_http_error(r, st, NULL, "%s", err);
        goto out;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *pv = cJSON_Parse(text);
    if (o) {
        cJSON_AddStringToObject(o, "id", r->sandbox);
        cJSON_AddItemToObject(o, "network", pv);
        pv = NULL;
    }
    cJSON_Delete(pv);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
out:
    free(text);
    cJSON_Delete(body);
}
