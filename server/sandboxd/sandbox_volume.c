/* E2B's volumes in sandboxd (sandbox_volume.h). */
#include "sandboxd/sandbox_volume.h"

#include "sandboxd/mounts.h"
#include "sandboxd/reply.h"
#include "sandboxd/uidslot.h"
#include "volumes/volume_fs.h"
#include "volumes/volume_store.h"

#include "common/log.h"
#include "common/path.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static lbvol_store g_store = {.root_fd = -1};

/* The store, opened at the first volume request (the loop's thread only),
 * with the leftovers of deletes a crash cut short removed. */
static lbvol_store *lbsd_vol_store(const lb_config *cfg, char *msg, size_t msgsz)
{
    if (g_store.root_fd >= 0)
        return &g_store;
    if (lbvol_store_open(cfg->var_dir, cfg->sandbox_uid_base, &g_store, msg, msgsz) != LB_OK)
        return NULL;
    lbvol_store_sweep(&g_store, lbsd_rmtree_force);
    return &g_store;
}

int lbsd_volume_store_ready(const lb_config *cfg)
{
    char msg[512];
    return lbsd_vol_store(cfg, msg, sizeof msg) != NULL;
}

static const char *lbsd_vol_str(const lbsd_req *req, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req->json, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A number field in [lo, hi], or def when absent; -2 when out of range. */
static int64_t lbsd_vol_num(const lbsd_req *req, const char *key, int64_t lo, int64_t hi, int64_t def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req->json, key);
    if (!v || cJSON_IsNull(v))
        return def;
    if (!cJSON_IsNumber(v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return -2;
    return (int64_t)v->valuedouble;
}

static cJSON *lbsd_vol_json(const lbvol_meta *m)
{
    cJSON *o = cJSON_CreateObject();
    if (o && (!cJSON_AddStringToObject(o, "id", m->id) || !cJSON_AddStringToObject(o, "name", m->name) ||
              !cJSON_AddStringToObject(o, "owner", m->owner) ||
              !cJSON_AddNumberToObject(o, "created_ms", (double)m->created_ms))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* create, list, get, delete: the store */
static void lbsd_vol_admin(lbsd_conn *c, const lb_config *cfg, lbvol_store *st, const lbsd_req *req, const char *act)
{
    char msg[512] = "";
    lbvol_meta m;
    const char *vid = lbsd_vol_str(req, "volume");
    if (!strcmp(act, "create")) {
        const char *owner = lbsd_vol_str(req, "owner"), *name = lbsd_vol_str(req, "name");
        int rc = lbvol_store_create(st, owner ? owner : "", name ? name : "", cfg->volume_max_per_owner, &m, msg,
                                    sizeof msg);
        if (rc != LB_OK) {
            lbsd_reply_error(c, rc, "%s", msg);
            return;
        }
        lb_info("volume %s made (%s)", m.id, m.name);
        cJSON *r = cJSON_CreateObject();
        if (r && !cJSON_AddItemToObject(r, "volume", lbsd_vol_json(&m))) {
            cJSON_Delete(r);
            r = NULL;
        }
        lbsd_reply(c, r, NULL, 0, 0);
    } else if (!strcmp(act, "list")) {
        lbvol_meta *all = NULL;
        size_t n = 0;
        if (lbvol_store_list(st, &all, &n) != LB_OK) {
            lbsd_reply_error(c, LB_E_IO, "cannot list the volume store: %s", strerror(errno));
            return;
        }
        cJSON *r = cJSON_CreateObject(), *arr = r ? cJSON_AddArrayToObject(r, "volumes") : NULL;
        for (size_t i = 0; arr && i < n; i++) {
            cJSON *o = lbsd_vol_json(&all[i]);
            if (!o || !cJSON_AddItemToArray(arr, o)) {
                cJSON_Delete(o);
                cJSON_Delete(r);
                r = arr = NULL;
            }
        }
        free(all);
        lbsd_reply(c, r, NULL, 0, 0);
    } else if (!strcmp(act, "get")) {
        int rc = lbvol_store_get(st, vid, &m);
        if (rc != LB_OK) {
            lbsd_reply_error(c, rc, rc == LB_E_NOTFOUND ? "There is no volume %s." : "The record of volume %s is damaged.",
                             vid ? vid : "");
            return;
        }
        /* no byte count here: every connect asks, and a walk of a full volume holds the loop */
        cJSON *r = cJSON_CreateObject();
        if (r && !cJSON_AddItemToObject(r, "volume", lbsd_vol_json(&m))) {
            cJSON_Delete(r);
            r = NULL;
        }
        lbsd_reply(c, r, NULL, 0, 0);
    } else { /* delete */
        char gone[1400];
        int rc = lbvol_store_unlink(st, vid, gone, sizeof gone);
        if (rc != LB_OK) {
            lbsd_reply_error(c, rc, rc == LB_E_NOTFOUND ? "There is no volume %s." : "cannot delete volume %s",
                             vid ? vid : "");
            return;
        }
        /* gone for every request now; a sandbox that has it mounted keeps its open folder */
        if (lbsd_rmtree_force(gone) != LB_OK)
            lb_warn("volume %s: %s is left (removed at the next start)", vid, gone);
        lb_info("volume %s deleted", vid);
        lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
    }
}

/* The bytes owner's volumes hold, and whether adding grow - shrink keeps them
 * within volume_max_mb_per_owner (0 with a sentence when not). */
static int lbsd_vol_room(const lb_config *cfg, lbvol_store *st, const char *owner, uint64_t grow, uint64_t shrink,
                         char *msg, size_t msgsz)
{
    uint64_t used = 0;
    if (lbvol_store_owner_usage(st, owner, &used) != LB_OK)
        return 1; /* the store cannot be listed: the write's own error says more */
    used = used > shrink ? used - shrink : 0;
    if (used + grow <= cfg->volume_max_bytes_per_owner)
        return 1;
    snprintf(msg, msgsz, "Over this key's room for volumes: they hold %llu bytes, and volume_max_mb_per_owner is %llu "
             "MiB.", (unsigned long long)used, (unsigned long long)(cfg->volume_max_bytes_per_owner >> 20));
    return 0;
}

static void lbsd_vol_entry_reply(lbsd_conn *c, const char *key, cJSON *e)
{
    cJSON *r = cJSON_CreateObject();
    if (r && !cJSON_AddItemToObject(r, key, e)) {
        cJSON_Delete(r);
        r = NULL;
    } else if (!r) {
        cJSON_Delete(e);
    }
    lbsd_reply(c, r, NULL, 0, 0);
}

void lbsd_volume_request(lbsd_conn *c, const lb_config *cfg, const lbsd_req *req, const char *data, size_t dlen)
{
    char msg[1400] = "";
    lbvol_store *st = lbsd_vol_store(cfg, msg, sizeof msg);
    if (!st) {
        lbsd_reply_error(c, LB_E_IO, "%s", msg);
        return;
    }
    const char *act = lbsd_vol_str(req, "action");
    if (!act) {
        lbsd_reply_error(c, LB_E_INVAL, "a volume request needs an action");
        return;
    }
    int has = req->has_data;
    if (has != !strcmp(act, "write")) {
        lbsd_reply_error(c, LB_E_INVAL, "only a volume write carries a data frame, and it must");
        return;
    }
    if (!strcmp(act, "create") || !strcmp(act, "list") || !strcmp(act, "get") || !strcmp(act, "delete")) {
        lbsd_vol_admin(c, cfg, st, req, act);
        return;
    }
    const char *vid = lbsd_vol_str(req, "volume"), *path = lbsd_vol_str(req, "path");
    lbvol_meta m;
    if (lbvol_store_get(st, vid, &m) != LB_OK) {
        lbsd_reply_error(c, LB_E_NOTFOUND, "There is no volume %s.", vid && lb_id_valid(vid) ? vid : "with that id");
        return;
    }
    if (!path || strlen(path) > LB_PATH_MAX) {
        lbsd_reply_error(c, LB_E_INVAL, "a volume path of at most %d bytes is needed", LB_PATH_MAX);
        return;
    }
    lbvol_attrs a = {lbsd_vol_num(req, "uid", 0, 65535, -1), lbsd_vol_num(req, "gid", 0, 65535, -1),
                     lbsd_vol_num(req, "mode", 0, 07777, -1)};
    int64_t depth = lbsd_vol_num(req, "depth", 1, LBVOL_LIST_DEPTH, 1);
    int force = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req->json, "force"));
    if (a.uid == -2 || a.gid == -2 || a.mode == -2 || depth == -2) {
        lbsd_reply_error(c, LB_E_INVAL, "uid and gid are 0 to 65535, mode 0 to 07777, depth 1 to %d", LBVOL_LIST_DEPTH);
        return;
    }
    lbvol_fs v = {lbvol_store_data(st, m.id), st->id_base};
    if (v.data_fd < 0) {
        lbsd_reply_error(c, LB_E_NOTFOUND, "There is no volume %s.", m.id);
        return;
    }
    cJSON *e = NULL;
    int rc;
    if (!strcmp(act, "stat")) {
        if ((rc = lbvol_fs_stat(&v, path, &e, msg, sizeof msg)) == LB_OK)
            lbsd_vol_entry_reply(c, "entry", e);
    } else if (!strcmp(act, "list_dir")) {
        if ((rc = lbvol_fs_list(&v, path, (int)depth, &e, msg, sizeof msg)) == LB_OK)
            lbsd_vol_entry_reply(c, "entries", e);
    } else if (!strcmp(act, "mkdir")) {
        if ((rc = lbvol_fs_mkdir(&v, path, &a, force, &e, msg, sizeof msg)) == LB_OK)
            lbsd_vol_entry_reply(c, "entry", e);
    } else if (!strcmp(act, "chmeta")) {
        if ((rc = lbvol_fs_chmeta(&v, path, &a, &e, msg, sizeof msg)) == LB_OK)
            lbsd_vol_entry_reply(c, "entry", e);
    } else if (!strcmp(act, "remove")) {
        if ((rc = lbvol_fs_remove(&v, path, msg, sizeof msg)) == LB_OK)
            lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
    } else if (!strcmp(act, "read")) {
        char *buf = NULL;
        size_t n = 0;
        if ((rc = lbvol_fs_read(&v, path, LBVOL_FILE_MAX, &buf, &n, msg, sizeof msg)) == LB_OK) {
            cJSON *r = cJSON_CreateObject();
            if (r && !cJSON_AddNumberToObject(r, "size", (double)n)) {
                cJSON_Delete(r);
                r = NULL;
            }
            lbsd_reply(c, r, buf, n, 1);
            free(buf);
        }
    } else if (!strcmp(act, "write")) {
        /* the owner's room first: what the file replaces is given back */
        rc = LB_OK;
        if (!lbsd_vol_room(cfg, st, m.owner, dlen, lbvol_fs_size_of(&v, path), msg, sizeof msg))
            rc = LB_E_NOSPACE;
        else if ((rc = lbvol_fs_write(&v, path, data, dlen, &a, force, &e, msg, sizeof msg)) == LB_OK)
            lbsd_vol_entry_reply(c, "entry", e);
    } else {
        rc = LB_E_INVAL;
        snprintf(msg, sizeof msg, "unknown volume action");
    }
    close(v.data_fd);
    if (rc != LB_OK)
        lbsd_reply_error(c, rc, "%s", msg);
}

int lbsd_volume_path_ok(const char *path, char *rel, size_t relsz, char *msg, size_t msgsz)
{
    if (!path || path[0] != '/' || strlen(path) > LB_PATH_MAX || relsz < LB_PATH_MAX + 1) {
        snprintf(msg, msgsz, "A volume's mount path must be absolute (at most %d bytes).", LB_PATH_MAX);
        return 0;
    }
    /* ".." is refused by the cleaning, not resolved */
    if (strstr(path, "/../") || (strlen(path) >= 3 && !strcmp(path + strlen(path) - 3, "/..")) ||
        lbvol_fs_clean(path, rel, relsz) != LB_OK || !rel[0]) {
        snprintf(msg, msgsz, "A volume's mount path must be a folder below / without \"..\".");
        return 0;
    }
    static const char *const sys[] = {"proc", "sys", "dev"};
    for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++) {
        size_t n = strlen(sys[i]);
        if (!strncmp(rel, sys[i], n) && (rel[n] == '\0' || rel[n] == '/')) {
            snprintf(msg, msgsz, "A volume cannot be mounted over /%s.", sys[i]);
            return 0;
        }
    }
    return 1;
}

/* The child that enters sb's mount namespace: makes rel's folders from its
 * root, never through a link, with the file rights of the sandbox's own
 * root (its host ids as the fsuid: what the sandbox's root may not make
 * there, this does not make either), and moves the tree onto the last.
 * Only system calls: it is a fork of a threaded process. */
static void lbsd_vol_mount_child(int nsfd, int root_fd, char *rel, uint32_t root_id, int tree)
{
    if (setns(nsfd, CLONE_NEWNS) != 0)
        _exit(10);
    int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        _exit(11);
    if (root_id) {
        syscall(SYS_setfsgid, root_id);
        syscall(SYS_setfsuid, root_id);
    }
    char *p = rel;
    while (*p) {
        char *s = strchr(p, '/');
        if (s)
            *s = '\0';
        if (mkdirat(fd, p, 0755) != 0 && errno != EEXIST)
            _exit(13);
        int sub = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
            _exit(errno == ELOOP ? 12 : 13);
        close(fd);
        fd = sub;
        if (!s)
            break;
        p = s + 1;
    }
    syscall(SYS_setfsuid, 0);
    syscall(SYS_setfsgid, 0);
    if (move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        _exit(14);
    _exit(0);
}

/* Binds data_fd's folder at rel in sb; LB_OK or a sentence in msg. */
static int lbsd_vol_bind(const lb_config *cfg, lbsd_sandbox *sb, int data_fd, char *rel, char *msg, size_t msgsz)
{
    int tree = open_tree(data_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    if (tree < 0) {
        snprintf(msg, msgsz, "cannot clone the volume's folder: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    /* the volume's ids on disk are the images' (slot 0); the sandbox sees its own */
    int userns = -1, made = 0;
    if (sb->uid_slot > 0) {
        made = sb->uid_slot > LBSD_SLOT_NS_CACHED;
        userns = made ? lbsd_userns_make(cfg->sandbox_uid_base, sb->uid_root, msg, msgsz)
                      : lbsd_slot_userns(sb->uid_slot, msg, msgsz);
        if (userns < 0) {
            close(tree);
            return LB_E_SANDBOX;
        }
    }
    struct mount_attr at;
    memset(&at, 0, sizeof at);
    at.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (userns >= 0 ? MOUNT_ATTR_IDMAP : 0);
    at.userns_fd = userns >= 0 ? (uint64_t)userns : 0;
    int rc = mount_setattr(tree, "", AT_EMPTY_PATH, &at, sizeof at);
    int e = errno;
    if (made)
        close(userns);
    if (rc != 0) {
        close(tree);
        snprintf(msg, msgsz, "cannot map the volume's ids for the sandbox: %s", strerror(e));
        return LB_E_SANDBOX;
    }
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/ns/mnt", (int)sb->init_pid);
    int nsfd = open(p, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0) {
        close(tree);
        snprintf(msg, msgsz, "cannot reach the sandbox's mounts: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    pid_t pid = fork();
    if (pid == 0)
        lbsd_vol_mount_child(nsfd, sb->root_fd, rel, sb->uid_root, tree);
    close(nsfd);
    close(tree);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        snprintf(msg, msgsz, "cannot start the mount: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return LB_OK;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 12 || code == 13) {
        snprintf(msg, msgsz, "/%s: a part of the mount path is %s in the sandbox.", rel,
                 code == 12 ? "a link" : "not a folder, or a folder its root may not make");
        return LB_E_INVAL;
    }
    snprintf(msg, msgsz, "the volume could not be mounted at /%s (step %d).", rel, code);
    return LB_E_SANDBOX;
}

void lbsd_volume_mount(lbsd_conn *c, const lb_config *cfg, lbsd_sandbox *sb, const lbsd_req *req)
{
    char msg[1400] = "", rel[LB_PATH_MAX + 1];
    lbvol_store *st = lbsd_vol_store(cfg, msg, sizeof msg);
    if (!st) {
        lbsd_reply_error(c, LB_E_IO, "%s", msg);
        return;
    }
    const char *vid = lbsd_vol_str(req, "volume"), *path = lbsd_vol_str(req, "path");
    if (!lbsd_volume_path_ok(path, rel, sizeof rel, msg, sizeof msg)) {
        lbsd_reply_error(c, LB_E_INVAL, "%s", msg);
        return;
    }
    lbvol_meta m;
    if (lbvol_store_get(st, vid, &m) != LB_OK) {
        lbsd_reply_error(c, LB_E_NOTFOUND, "There is no volume %s.", vid && lb_id_valid(vid) ? vid : "with that id");
        return;
    }
    /* an owner over their room mounts nothing more to write into */
    if (!lbsd_vol_room(cfg, st, m.owner, 1, 0, msg, sizeof msg)) {
        lbsd_reply_error(c, LB_E_NOSPACE, "%s", msg);
        return;
    }
    int fd = lbvol_store_data(st, m.id);
    if (fd < 0) {
        lbsd_reply_error(c, LB_E_NOTFOUND, "There is no volume %s.", m.id);
        return;
    }
    int rc = lbsd_vol_bind(cfg, sb, fd, rel, msg, sizeof msg);
    close(fd);
    if (rc != LB_OK) {
        lbsd_reply_error(c, rc, "%s", msg);
        return;
    }
    lb_info("sandbox %s: volume %s mounted at /%s", sb->id, m.id, rel);
    lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
}
