/* nginx serves a signed link (/dl/) from artifacts/ without the backend;
 * when the file is not there it hands the request here (@dl_fetch in
 * nginx.conf), and several nodes: a link nginx's key does not verify (signed
 * with the store's key before this host's nginx read it, or after a
 * rotation). No client reaches this route otherwise: every /dl/ URI is
 * served by nginx's own locations. The signature is checked here with the
 * store's keys (download_link.c), then the artifact index, then the file is
 * fetched from the object store into artifacts/ and handed back to
 * nginx's internal /_artifacts/ as a download. With no object store, or
 * no such file in it, the answer is the link's usual JSON 404. */
#include "web/handlers_dl_fetch.h"

#include "web/blob_ready.h"
#include "web/download_link.h"
#include "web/http.h"

#include "common/config.h"
#include "common/path.h"
#include "common/status.h"
#include "common/util.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void gone(lb_req *r)
{
    lb_http_error(r, 404, "not_found", "The file of this download link is no longer there (the task was deleted?).");
}

void lb_h_dl_fetch(lb_req *r)
{
    char decoded[LB_PATH_MAX * 3 + 1], path[LB_PATH_MAX + 1], e[24], sig[64];
    size_t dlen;
    long long expires = 0;
    /* rest: {task}/{path}, as nginx's link location matched it */
    const char *slash = strchr(r->rest, '/');
    if (!slash || slash - r->rest != 32) {
        gone(r);
        return;
    }
    memcpy(r->id, r->rest, 32);
    r->id[32] = '\0';
    const char *rest = slash + 1;
    if (!lb_id_valid(r->id) || lb_url_decode(rest, strlen(rest), decoded, sizeof decoded, &dlen, 0) != LB_OK ||
        lb_path_clean_rel(decoded, dlen, path, sizeof path) != LB_OK || lb_query_get(r->query, "e", e, sizeof e) ||
        lb_query_get(r->query, "s", sig, sizeof sig) || lb_parse_ll(e, 0, (long long)1 << 40, &expires) ||
        !lb_download_link_check(r->store, expires, r->id, path, sig)) {
        /* the words of nginx's own answers (nginx.conf /_errors/link_*) */
        if (expires && expires < (long long)time(NULL))
            lb_http_error_hdr(r, 410, "link_expired", "Cache-Control: no-store\r\n",
                              "This download link has expired. Open the task again for a fresh link.");
        else
            lb_http_error(r, 403, "forbidden", "This download link is not valid: it was changed or cut short. "
                          "Open the task again for a fresh link.");
        return;
    }
    lb_artifact a;
    int rc = lb_store_artifact_find(r->store, r->id, path, &a);
    if (rc == LB_E_NOTFOUND) {
        gone(r);
        return;
    }
    if (rc != LB_OK) {
        lb_http_store_error(r, rc, "read the artifact index");
        return;
    }
    if (!lb_blob_ready(r, path, 0)) /* answered: 404 or a JSON 503 */
        return;
    char file[LB_CFG_PATH + LB_PATH_MAX + 80], enc[LB_PATH_MAX * 3 + 1], uri[sizeof enc + 128];
    struct stat st;
    snprintf(file, sizeof file, "%s/%s/output/%s", r->cfg->artifacts_dir, r->id, path);
    if (lstat(file, &st) != 0 || !S_ISREG(st.st_mode) || lb_url_encode_path(path, enc, sizeof enc) != LB_OK) {
        gone(r);
        return;
    }
    snprintf(uri, sizeof uri, "/_artifacts/%s/output/%s", r->id, enc);
    lb_http_accel(r, uri, "application/octet-stream", "attachment");
}
