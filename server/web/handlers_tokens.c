/* The compact form of a task's exact tokens; the contract is
 * handlers_tokens.h. nginx serves the bytes (sendfile, ranges): the file
 * can be hundreds of megabytes for a long run and never passes through
 * the backend. */
#include "web/handlers_tokens.h"

#include "web/blob_ready.h"
#include "web/http.h"
#include "common/config.h"
#include "common/status.h"
#include "common/task.h"
#include "store/store.h"

#include <stdio.h>
#include <sys/stat.h>

void lb_h_tokens(lb_req *r)
{
    char status[16];
    int rc = lb_store_task_state(r->store, r->id, status, sizeof status, NULL);
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the task");
        return;
    }
    if (!lb_blob_record_ready(r, "tokens.jsonl")) /* several nodes: another node's round; answered */
        return;
    char file[LB_CFG_PATH + 128];
    snprintf(file, sizeof file, "%s/%s/tokens.jsonl", r->cfg->artifacts_dir, r->id);
    struct stat st;
    if (lstat(file, &st) != 0 || !S_ISREG(st.st_mode)) {
        /* written with trajectory.json when the run ends, and only by a
         * run that captured tokens */
        if (lb_task_status_is_final(lb_task_status_parse(status)))
            lb_http_error(r, 404, "not_found",
                          "The task %s without exact tokens: it did not capture them (capture_tokens is off "
                          "for its model and task), or its agent stopped before writing them.", status);
        else
            lb_http_error(r, 404, "not_found",
                          "The task has no tokens.jsonl yet (status: %s): it is written when the task ends.", status);
        return;
    }
    char name[64], disp[256], uri[128];
    snprintf(name, sizeof name, "tokens-%.8s.jsonl", r->id);
    if (lb_content_disposition("inline", name, disp, sizeof disp) != LB_OK) {
        lb_http_error(r, 500, NULL, "Could not name the tokens file.");
        return;
    }
    snprintf(uri, sizeof uri, "/_artifacts/%s/tokens.jsonl", r->id);
    lb_http_accel(r, uri, "application/x-ndjson", disp);
}
