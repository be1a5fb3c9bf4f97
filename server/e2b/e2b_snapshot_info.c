/* E2B's snapshot records (sandbox and name); the contract is
 * e2b_snapshot_info.h. The file is this service's own, but it lies in a
 * folder an operator may touch: it is read with a cap and every field is
 * checked again before it is used. */
#include "e2b/e2b_snapshot_info.h"

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LB_SNAP_INFO_FILE_MAX 1024 /* {"sandbox": <id>, "name": <64>} with room */

int lb_e2b_snap_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n < 1 || n > LB_E2B_SNAP_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return 0;
    }
    return 1;
}

/* e2b_snapshots[/<id>] beside the database into out; 0 when it does not
 * fit or id is no snapshot id. */
static int lb_snap_info_path(const lb_req *r, const char *id, char *out, size_t outsz)
{
    if (id && !lb_node_id_valid(id))
        return 0;
    return lb_cfg_beside_db(r->cfg, "e2b_snapshots", id, out, outsz);
}

void lb_e2b_snap_info_save(lb_req *r, const char *id, const lb_e2b_snap_info *in)
{
    char dir[LB_CFG_PATH + 128], path[LB_CFG_PATH + 128];
    if (!lb_snap_info_path(r, NULL, dir, sizeof dir) || !lb_snap_info_path(r, id, path, sizeof path))
        return;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        lb_warn("web: e2b: cannot make %s: %s; snapshot %s has no name or sandbox", dir, strerror(errno), id);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    if (o && (!in->sandbox[0] || cJSON_AddStringToObject(o, "sandbox", in->sandbox)) &&
        (!in->name[0] || cJSON_AddStringToObject(o, "name", in->name)))
        text = cJSON_PrintUnformatted(o);
    if (!text || lb_write_file_atomic(path, text, strlen(text), 0600) != LB_OK)
        lb_warn("web: e2b: cannot record snapshot %s in %s; it has no name or sandbox", id, path);
    free(text);
    cJSON_Delete(o);
}

int lb_e2b_snap_info_load(lb_req *r, const char *id, lb_e2b_snap_info *out)
{
    memset(out, 0, sizeof *out);
    char path[LB_CFG_PATH + 128], *data = NULL;
    size_t len = 0;
    if (!lb_snap_info_path(r, id, path, sizeof path))
        return LB_E_INVAL;
    int rc = lb_read_file(path, LB_SNAP_INFO_FILE_MAX, &data, &len);
    if (rc != LB_OK)
        return rc == LB_E_NOTFOUND ? LB_E_NOTFOUND : LB_E_INVAL;
    cJSON *o = cJSON_ParseWithLength(data, len);
    free(data);
    const cJSON *sb = cJSON_GetObjectItemCaseSensitive(o, "sandbox");
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
    rc = cJSON_IsObject(o) && (!sb || (cJSON_IsString(sb) && lb_node_id_valid(sb->valuestring))) &&
                 (!nm || (cJSON_IsString(nm) && lb_e2b_snap_name_ok(nm->valuestring)))
             ? LB_OK
             : LB_E_INVAL;
    if (rc == LB_OK) {
        snprintf(out->sandbox, sizeof out->sandbox, "%s", sb ? sb->valuestring : "");
        snprintf(out->name, sizeof out->name, "%s", nm ? nm->valuestring : "");
    }
    cJSON_Delete(o);
    return rc;
}

void lb_e2b_snap_info_forget(lb_req *r, const char *id)
{
    char path[LB_CFG_PATH + 128];
    if (lb_snap_info_path(r, id, path, sizeof path) && unlink(path) != 0 && errno != ENOENT)
        lb_warn("web: e2b: cannot remove %s: %s", path, strerror(errno));
}
