/* A web's copies of tasks deleted elsewhere; the contract is tombstones.h. */
#include "web/tombstones.h"

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_tombstone.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* A tombstone's time is the deleting transaction's clock; one that commits
 * later than another may carry an earlier time, so each look starts this
 * much before the newest seen (removing a folder twice costs nothing). */
#define LB_TOMBSTONES_SLACK_MS 10000
/* the trim: about once an hour, of those older than a link can live, and a day */
#define LB_TOMBSTONES_TRIM_EVERY (3600 * 1000 / LB_TOMBSTONES_LOOK_MS)

static const lb_config *lb_tb_cfg;

/* removes artifacts/<id> when it is here */
static int lb_tb_remove(void *arg, const char *id, int64_t ms)
{
    (void)ms;
    int *removed = arg;
    char dir[LB_CFG_PATH + 40];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/%s", lb_tb_cfg->artifacts_dir, id);
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    if (lb_rmtree(dir) != LB_OK)
        lb_warn("web: task %s was deleted through another web; its copy here (%s) could not be removed: %s", id,
                dir, strerror(errno));
    else {
        lb_info("web: task %s was deleted through another web: its copy here is removed", id);
        (*removed)++;
    }
    return 0;
}

static void *lb_tb_main(void *arg)
{
    (void)arg;
    lb_store *s = NULL;
    int64_t since = 0, newest = 0;
    long looks = 0;
    int failing = 0;
    for (;; looks++) {
        if (!s && lb_store_open(lb_cfg_store_where(lb_tb_cfg), &s) != LB_OK) {
            lb_store_close(s);
            s = NULL;
        }
        int removed = 0, rc = s ? lb_store_tombstones_since(s, since, 10000, lb_tb_remove, &removed, &newest)
                                : LB_E_UNAVAILABLE;
        if (rc == LB_OK) {
            if (failing)
                lb_info("web: the tombstones of deleted tasks can be read again");
            failing = 0;
            since = newest > LB_TOMBSTONES_SLACK_MS ? newest - LB_TOMBSTONES_SLACK_MS : 0;
        } else if (!failing++) {
            lb_warn("web: cannot read the tombstones of deleted tasks (%s): the copies here of tasks deleted "
                    "through other webs stay until it can", lb_strerror(rc));
        }
        if (s && looks % LB_TOMBSTONES_TRIM_EVERY == LB_TOMBSTONES_TRIM_EVERY - 1) {
            size_t n = 0;
            int64_t keep = (int64_t)lb_tb_cfg->download_link_ttl_s + 86400;
            if (lb_store_tombstones_trim(s, keep, &n) == LB_OK && n)
                lb_info("web: %zu tombstones of tasks deleted more than %lld s ago trimmed", n, (long long)keep);
        }
        struct timespec ts = {LB_TOMBSTONES_LOOK_MS / 1000, (LB_TOMBSTONES_LOOK_MS % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int lb_tombstones_start(const lb_config *cfg)
{
    if (!cfg->s3_bucket[0])
        return LB_OK;
    lb_tb_cfg = cfg;
    int e = lb_thread_detached(lb_tb_main, NULL);
    return e ? LB_E_NOMEM : LB_OK;
}
