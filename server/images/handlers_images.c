/* GET /api/images (handlers_images.h). The web runs unprivileged: it reads
 * the records (refs/ is world-readable, the layers are not) and probes the
 * sandboxes' holds on them; each layer's disk use is in the records. */
#include "images/handlers_images.h"

#include "common/status.h"
#include "common/utf8.h"
#include "common/util.h"
#include "images/image_admin.h"
#include "images/registry_cli.h"
#include "llmbox/sandbox.h"
#include "web/http.h"
#include "web/req_body.h"

#include <stdlib.h>
#include <string.h>

void lb_h_images(lb_req *r)
{
    uint64_t total = 0;
    cJSON *list = lb_image_list_json(r->cfg, &total, 0);
    cJSON *o = list ? cJSON_CreateObject() : NULL;
    if (!o || !cJSON_AddItemToObject(o, "images", list)) {
        if (!o)
            cJSON_Delete(list);
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    cJSON_AddNumberToObject(o, "layers_bytes", (double)total);
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}

/* ---- pulls sandboxd runs for the web (sandboxd/image_jobs.h) ---- */

#define JOB_LOG_MAX (256u << 10) /* log bytes one GET answers */

static lbsb_conn *sandboxd(lb_req *r)
{
    lbsb_conn *c = NULL;
    char err[512];
    if (lbsb_connect(r->cfg->sandboxd_socket, NULL, &c, err, sizeof err) != LB_OK) {
        lb_http_error(r, 503, "unavailable", "sandboxd cannot be reached: %s.", err);
        return NULL;
    }
    return c;
}

void lb_h_image_pull(lb_req *r)
{
    cJSON *body = lb_req_json(r, 4096, "pull request");
    if (!body)
        return;
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(body, "ref");
    if (!cJSON_IsString(ref) || !lb_image_is_registry_ref(ref->valuestring)) {
        cJSON_Delete(body);
        lb_http_error(r, 400, "invalid", "\"ref\" must be an image reference with a registry "
                                         "(host[:port]/repo[:tag][@sha256:...]).");
        return;
    }
    lbsb_conn *c = sandboxd(r);
    char job[33], err[1024];
    lbsb_image_job_spec spec = {.kind = "pull", .ref = ref->valuestring};
    int rc = c ? lbsb_image_job_start(c, &spec, job, err, sizeof err) : LB_E_UNAVAILABLE;
    lbsb_close(c);
    if (c && rc != LB_OK) {
        cJSON_Delete(body);
        lb_http_error(r, rc == LB_E_BUSY ? 429 : rc == LB_E_INVAL ? 400 : 502, NULL, "sandboxd cannot pull it: %s.",
                      err);
        return;
    }
    if (!c) {
        cJSON_Delete(body);
        return; /* answered */
    }
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "job", job);
        cJSON_AddStringToObject(o, "ref", ref->valuestring);
    }
    cJSON_Delete(body);
    if (!o) {
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    lb_http_json(r, 202, o, NULL);
    cJSON_Delete(o);
}

void lb_h_image_job(lb_req *r)
{
    const char *id = r->rest ? r->rest : "";
    char q[32];
    long long off = 0;
    if (!lb_id_valid(id)) {
        lb_http_error(r, 404, "notfound", "There is no image job \"%.64s\".", id);
        return;
    }
    if (lb_query_get(r->query, "offset", q, sizeof q) == LB_OK &&
        lb_parse_ll(q, 0, 9007199254740992LL, &off) != LB_OK) {
        lb_http_error(r, 400, "invalid", "\"offset\" must be a number of bytes (0 or more).");
        return;
    }
    lbsb_conn *c = sandboxd(r);
    if (!c)
        return;
    lbsb_image_job_status st;
    char err[1024];
    int rc = lbsb_image_job_poll(c, id, off, JOB_LOG_MAX, &st, err, sizeof err);
    lbsb_close(c);
    if (rc != LB_OK) {
        lb_http_error(r, rc == LB_E_NOTFOUND ? 404 : 502, rc == LB_E_NOTFOUND ? "notfound" : NULL, "%s.", err);
        return;
    }
    size_t tlen = 0;
    char *text = lb_utf8_sanitize(st.log ? st.log : "", st.log_len, &tlen);
    cJSON *o = cJSON_CreateObject();
    if (o && text) {
        cJSON_AddStringToObject(o, "job", id);
        cJSON_AddStringToObject(o, "state", st.state);
        if (strcmp(st.state, "running"))
            cJSON_AddNumberToObject(o, "exit_code", st.exit_code);
        if (!strcmp(st.state, "failed"))
            cJSON_AddStringToObject(o, "error", st.error);
        cJSON_AddStringToObject(o, "log", text);
        cJSON_AddNumberToObject(o, "next_offset", (double)st.next_offset);
    }
    free(text);
    lbsb_image_job_status_free(&st);
    if (!o || !cJSON_GetObjectItemCaseSensitive(o, "log")) {
        cJSON_Delete(o);
        lb_http_error(r, 500, NULL, "Out of memory.");
        return;
    }
    lb_http_json(r, 200, o, NULL);
    cJSON_Delete(o);
}
