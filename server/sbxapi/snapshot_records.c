/* Sweeps the snapshot records whose snapshot is gone (the contract is
 * snapshot_records.h). The folders lie where an operator may touch them:
 * every name is checked as an id, nothing is followed (the folder is
 * opened O_NOFOLLOW, entries are looked at without following and only
 * plain files are removed), and another node's records are left to it. */
#include "sbxapi/snapshot_records.h"

#include "common/log.h"
#include "common/node_id.h"
#include "llmbox/sandbox.h"
#include "sbxapi/handlers_sandbox_pause.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* sandboxd answers at most this many states in one list: a list this long
 * may leave snapshots out, so nothing is swept after it */
#define LB_SNAP_REC_LIST_CUT 10000
/* A record is written just after its snapshot is saved; one younger than
 * the list (with this room for the clock's second) may be of a snapshot
 * saved after sandboxd answered, so it is left alone. */
#define LB_SNAP_REC_SLACK_S 2

static const char *const lb_snap_rec_dirs[] = {"snapshot_owners", "e2b_snapshots"};

/* Whether snapshot id (this node's) is among sandboxd's states. */
static int lb_snap_rec_listed(const char *id, const lbsb_state *st, size_t n)
{
    char state[LB_SNAPSHOT_STATE_MAX];
    lb_snapshot_state_name(id, state, sizeof state);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(st[i].name, state))
            return 1;
    return 0;
}

static void lb_snap_rec_sweep_dir(const lb_config *cfg, const char *base, const char *sub, const lbsb_state *st,
                                  size_t n, time_t asked)
{
    char dir[LB_CFG_PATH + 64];
    if ((size_t)snprintf(dir, sizeof dir, "%s/%s", base, sub) >= sizeof dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return; /* none made yet (or not a plain folder: never ours to sweep) */
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        char node[LB_NODE_ID_NAME_MAX + 1];
        struct stat sb;
        if (!lb_node_id_node(de->d_name, node, sizeof node) || strcmp(node, cfg->node_name))
            continue; /* not an id, or another node's snapshot */
        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode) ||
            sb.st_mtime + LB_SNAP_REC_SLACK_S > asked || lb_snap_rec_listed(de->d_name, st, n))
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
            lb_info("web: removed %s/%s: its snapshot is gone (expired by age or deleted)", dir, de->d_name);
        else if (errno != ENOENT)
            lb_warn("web: cannot remove %s/%s, the record of a snapshot that is gone: %s", dir, de->d_name,
                    strerror(errno));
    }
    closedir(d);
}

void lb_snapshot_records_drop_unlisted(const lb_config *cfg, const lbsb_state *st, size_t n, time_t asked)
{
    if (n >= LB_SNAP_REC_LIST_CUT)
        return;
    char base[LB_CFG_PATH];
    if (!lb_cfg_beside_db(cfg, NULL, NULL, base, sizeof base))
        return;
    for (size_t i = 0; i < sizeof lb_snap_rec_dirs / sizeof lb_snap_rec_dirs[0]; i++)
        lb_snap_rec_sweep_dir(cfg, base, lb_snap_rec_dirs[i], st, n, asked);
}

void lb_snapshot_records_sweep(const lb_config *cfg)
{
    char err[512] = "";
    time_t asked = time(NULL);
    lbsb_conn *c = NULL;
    lbsb_state *st = NULL;
    size_t n = 0;
    if (lbsb_connect(cfg->sandboxd_socket, NULL, &c, err, sizeof err) != LB_OK)
        return; /* sandboxd not up: the next list sweeps */
    int rc = lbsb_state_list(c, &st, &n, err, sizeof err);
    lbsb_close(c);
    if (rc == LB_OK)
        lb_snapshot_records_drop_unlisted(cfg, st, n, asked);
    free(st);
}
