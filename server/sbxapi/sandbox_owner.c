/* Owners of the sandbox API's sandboxes and snapshots, and the per-user
 * limits on creating them (the contract is sandbox_owner.h).
 *
 * Sandboxes carry their owner in the registry (and their lease record, so
 * a restart of the web keeps it). Snapshots are sandboxd's saved states,
 * which know no user: the web keeps one small file per snapshot made with
 * a user's token, snapshot_owners/<id> beside the database, holding the user's name.
 * A snapshot without one is the shared token's only, the safe side.
 *
 * Creates per minute use the store's sliding window of the tasks' limit
 * (store_shared.h), under a name no user can have ("<user>/sandboxes"), so
 * every web on one database counts the same creates. */
#include "sbxapi/sandbox_owner.h"

#include "common/config.h"
#include "common/log.h"
#include "common/node_id.h"
#include "common/util.h"
#include "sbxapi/sandbox_registry.h"
#include "store/store_shared.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LB_OWNER_WINDOW_MS 60000
#define LB_OWNER_FILE_MAX 128 /* a user's name and a newline, with room */

const char *lb_sbx_owner_name(const lb_req *r)
{
    return r->user ? r->user->name : "";
}

int lb_sbx_owner_sees(lb_req *r, const char *id)
{
    return lb_sbx_visible(id, lb_sbx_owner_name(r));
}

/* snapshot_owners[/<id>] next to the database, where the web may write
 * (as the sandboxes' lease records: sandbox_leases.c), into out; 0 when
 * it does not fit or id is no id. */
static int lb_owner_path(const lb_req *r, const char *id, char *out, size_t outsz)
{
    if (id && !lb_node_id_valid(id))
        return 0;
    return lb_cfg_beside_db(r->cfg, "snapshot_owners", id, out, outsz);
}

int lb_snapshot_owner_sees(lb_req *r, const char *id)
{
    if (!r->user)
        return 1;
    char path[LB_CFG_PATH + 128], *data = NULL;
    size_t len = 0;
    if (!lb_owner_path(r, id, path, sizeof path) || lb_read_file(path, LB_OWNER_FILE_MAX, &data, &len) != LB_OK)
        return 0;
    size_t want = strlen(r->user->name);
    int ok = len == want && !memcmp(data, r->user->name, want);
    free(data);
    return ok;
}

void lb_snapshot_owner_save(lb_req *r, const char *id)
{
    if (!r->user)
        return;
    char dir[LB_CFG_PATH + 128], path[LB_CFG_PATH + 128];
    if (!lb_owner_path(r, NULL, dir, sizeof dir) || !lb_owner_path(r, id, path, sizeof path))
        return;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        lb_warn("web: cannot make %s: %s; snapshot %s is the shared token's only", dir, strerror(errno), id);
        return;
    }
    if (lb_write_file_atomic(path, r->user->name, strlen(r->user->name), 0600) != LB_OK)
        lb_warn("web: cannot record the owner of snapshot %s in %s; it is the shared token's only", id, path);
}

void lb_snapshot_owner_forget(lb_req *r, const char *id)
{
    char path[LB_CFG_PATH + 128];
    if (lb_owner_path(r, id, path, sizeof path) && unlink(path) != 0 && errno != ENOENT)
        lb_warn("web: cannot remove %s: %s", path, strerror(errno));
}

int lb_sbx_owner_quota(lb_req *r, lb_sbx_spec *sp, lb_sbx_quota_ticket *t, char *msg, size_t msgsz, int *retry_s)
{
    const lb_user_cfg *u = r->user;
    *retry_s = 0;
    t->slot = -1;
    snprintf(sp->owner, sizeof sp->owner, "%s", lb_sbx_owner_name(r));
    sp->owner_max = u ? u->max_sandboxes : 0;
    if (!u)
        return 0;
    if (sp->snapshot[0] && !lb_snapshot_owner_sees(r, sp->snapshot)) {
        snprintf(msg, msgsz, "There is no snapshot %s (deleted, expired by age, or never made).",
                 sp->snapshot);
        return 404;
    }
    /* early, so a create refused for this takes none of the minute's; the
     * registry counts again as it adds one (lb_sbx_reserve_owned) */
    if (u->max_sandboxes > 0) {
        cJSON *mine = lb_sbx_list_json_of(u->name);
        int held = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(mine, "sandboxes"));
        cJSON_Delete(mine);
        if (held >= u->max_sandboxes) {
            snprintf(msg, msgsz, "You already hold %d sandbox%s, your limit (max_sandboxes); kill one or wait for "
                     "one to expire.", held, held == 1 ? "" : "es");
            return 429;
        }
    }
    if (u->sandboxes_per_minute <= 0)
        return 0;
    char key[LB_CFG_USER_NAME + 16];
    snprintf(key, sizeof key, "%s/sandboxes", u->name);
    int64_t now = lb_now_ms(), oldest = now, old = 0;
    int slot = -1;
    int rc = lb_store_rate_take(r->store, key, u->sandboxes_per_minute, now, LB_OWNER_WINDOW_MS, &slot, &old, &oldest);
    if (rc == LB_OK) {
        t->slot = slot;
        t->at = now;
        t->old = old;
        return 0;
    }
    if (rc != LB_E_BUSY) {
        snprintf(msg, msgsz, "Could not count your sandbox creates: the store answered: %s.", lb_strerror(rc));
        return 503;
    }
    long long wait_s = (oldest + LB_OWNER_WINDOW_MS - now + 999) / 1000;
    if (wait_s < 1)
        wait_s = 1;
    if (wait_s > LB_OWNER_WINDOW_MS / 1000)
        wait_s = LB_OWNER_WINDOW_MS / 1000; /* a slot time from a clock ahead of ours */
    *retry_s = (int)wait_s;
    snprintf(msg, msgsz, "You created %d sandbox%s in the last minute, your limit (sandboxes_per_minute); the next "
             "can start in %lld s.", u->sandboxes_per_minute, u->sandboxes_per_minute == 1 ? "" : "es", wait_s);
    return 429;
}

void lb_sbx_owner_refund(lb_req *r, lb_sbx_quota_ticket *t)
{
    if (t->slot < 0 || !r->user)
        return;
    char key[LB_CFG_USER_NAME + 16];
    snprintf(key, sizeof key, "%s/sandboxes", r->user->name);
    /* one that fails leaves the create counted until the minute is over: the safe side */
    if (lb_store_rate_refund(r->store, key, t->slot, t->at, t->old) != LB_OK)
        lb_warn("web: could not give a sandbox create of %s back", r->user->name);
    t->slot = -1;
}
