/* Saved states (sandbox_save.h): the store, state_delete / state_list,
 * freeze / thaw, and save. A save runs on a worker: the loop freezes the
 * sandbox (unless it is frozen already), opens what the helper needs (the
 * sandbox's user namespace, its upper dir held by init, its root) and hands
 * them over; the worker runs build/llmbox-stateio into a temporary file of
 * the store, then fsyncs and renames it: a crash at any point leaves the
 * old state or the new one, and a temporary file that the next start
 * removes. */
#include "sandboxd/sandbox_save.h"

#include "sandboxd/boot_id.h"

#include "sandboxd/sandbox_freeze.h"
#include "sandboxd/sandbox_proc.h"
#include "sandboxd/sandbox_restore.h"
#include "sandboxd/sandbox_stateio.h"
#include "sandboxd/objects.h"
#include "sandboxd/reply.h"
#include "sandboxd/sandbox_set.h"
#include "insandbox/sandbox_init.h"
#include "sandboxd/workers.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ST_SUFFIX ".state"
#define ST_TMP_PREFIX ".tmp-"
#define ST_SWEEP_EVERY_MS 60000
#define ST_LIST_MAX 10000         /* states one list answers: a JSON frame's worth */

/* ---- the store ------------------------------------------------------------ */

static int st_root(const lb_config *cfg, char *out, size_t outsz)
{
    return (size_t)snprintf(out, outsz, "%s/sandboxd/states", cfg->var_dir) < outsz ? LB_OK : LB_E_INVAL;
}

static int st_dir(const lb_config *cfg, uid_t uid, char *out, size_t outsz)
{
    return (size_t)snprintf(out, outsz, "%s/sandboxd/states/u%lu", cfg->var_dir, (unsigned long)uid) < outsz
               ? LB_OK : LB_E_INVAL;
}

int lbsd_state_path(const lb_config *cfg, uid_t uid, const char *name, char *out, size_t outsz)
{
    if (!lbsd_state_name_valid(name))
        return LB_E_INVAL;
    return (size_t)snprintf(out, outsz, "%s/sandboxd/states/u%lu/%s" ST_SUFFIX, cfg->var_dir,
                            (unsigned long)uid, name) < outsz ? LB_OK : LB_E_INVAL;
}

/* mkdir -p of the store's dirs for uid, root's alone (0700). */
static int st_make_dir(const lb_config *cfg, uid_t uid, char *dir, size_t dirsz)
{
    char p[LB_CFG_PATH + 64];
    snprintf(p, sizeof p, "%s/sandboxd", cfg->var_dir);
    if (mkdir(p, 0700) != 0 && errno != EEXIST)
        return LB_E_IO;
    if (st_root(cfg, p, sizeof p) != LB_OK || (mkdir(p, 0700) != 0 && errno != EEXIST))
        return LB_E_IO;
    if (st_dir(cfg, uid, dir, dirsz) != LB_OK)
        return LB_E_INVAL;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return LB_E_IO;
    return LB_OK;
}

/* Calls fn for every file of every uid's dir. */
static void st_each(const lb_config *cfg, void (*fn)(int dirfd, const char *name, void *arg), void *arg)
{
    char root[LB_CFG_PATH + 64];
    if (st_root(cfg, root, sizeof root) != LB_OK)
        return;
    DIR *d = opendir(root);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] != 'u')
            continue;
        int ufd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ufd < 0)
            continue;
        int fd2 = dup(ufd);
        DIR *u = fd2 >= 0 ? fdopendir(fd2) : NULL;
        if (!u && fd2 >= 0)
            close(fd2);
        struct dirent *fe;
        while (u && (fe = readdir(u)))
            if (fe->d_name[0] != '.' || !strncmp(fe->d_name, ST_TMP_PREFIX, strlen(ST_TMP_PREFIX)))
                fn(ufd, fe->d_name, arg);
        if (u)
            closedir(u);
        close(ufd);
    }
    closedir(d);
}

static void st_drop_tmp(int dirfd, const char *name, void *arg)
{
    if (!strncmp(name, ST_TMP_PREFIX, strlen(ST_TMP_PREFIX))) {
        lb_info("removing %s: a save that did not finish (sandboxd stopped during it)", name);
        if (unlinkat(dirfd, name, 0) != 0)
            lb_warn("cannot remove the unfinished save %s: %s", name, strerror(errno));
    }
}

void lbsd_state_startup(const lb_config *cfg)
{
    char dir[LB_CFG_PATH + 64];
    if (st_make_dir(cfg, 0, dir, sizeof dir) != LB_OK)
        lb_warn("cannot make the saved states' store under %s/sandboxd: %s", cfg->var_dir, strerror(errno));
    st_each(cfg, st_drop_tmp, NULL);
    lbsd_state_sweep(cfg, lb_mono_ms());
}

static void st_drop_old(int dirfd, const char *name, void *arg)
{
    const lb_config *cfg = arg;
    struct stat st;
    size_t n = strlen(name);
    if (n <= strlen(ST_SUFFIX) || strcmp(name + n - strlen(ST_SUFFIX), ST_SUFFIX) ||
        fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    if ((int64_t)time(NULL) - (int64_t)st.st_mtime <= cfg->sandbox_state_max_age_s)
        return;
    lb_info("saved state %s is older than %d s (sandbox_state_max_age_s): removing it", name,
            cfg->sandbox_state_max_age_s);
    if (unlinkat(dirfd, name, 0) != 0)
        lb_warn("cannot remove the old saved state %s: %s", name, strerror(errno));
}

void lbsd_state_sweep(const lb_config *cfg, int64_t now)
{
    static int64_t last;
    if (last && now - last < ST_SWEEP_EVERY_MS)
        return;
    last = now;
    st_each(cfg, st_drop_old, (void *)cfg);
}

static void st_list(const lb_config *cfg, lbsd_conn *c)
{
    char dir[LB_CFG_PATH + 64];
    cJSON *r = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(r, "states");
    DIR *d = st_dir(cfg, c->uid, dir, sizeof dir) == LB_OK ? opendir(dir) : NULL;
    struct dirent *de;
    int n = 0;
    while (d && arr && n < ST_LIST_MAX && (de = readdir(d))) {
        size_t len = strlen(de->d_name), sl = strlen(ST_SUFFIX);
        char name[LBSD_STATE_NAME_MAX + 1];
        struct stat st;
        if (len <= sl || len - sl > LBSD_STATE_NAME_MAX || strcmp(de->d_name + len - sl, ST_SUFFIX))
            continue;
        memcpy(name, de->d_name, len - sl);
        name[len - sl] = '\0';
        if (!lbsd_state_name_valid(name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddStringToObject(o, "state", name);
        cJSON_AddNumberToObject(o, "bytes", (double)st.st_size);
        cJSON_AddNumberToObject(o, "mtime", (double)st.st_mtime);
        cJSON_AddItemToArray(arr, o);
        n++;
    }
    if (d)
        closedir(d);
    lbsd_reply(c, r, NULL, 0, 0);
}

void lbsd_state_store_request(const lb_config *cfg, lbsd_conn *c, const lbsd_req *req)
{
    if (req->op == LBSD_OP_STATE_LIST) {
        st_list(cfg, c);
        return;
    }
    char p[LB_CFG_PATH + 160];
    if (lbsd_state_path(cfg, c->uid, req->state, p, sizeof p) != LB_OK) {
        lbsd_reply_error(c, LB_E_INVAL, "the saved state's path is too long");
        return;
    }
    if (unlink(p) != 0) {
        if (errno == ENOENT)
            lbsd_reply_error(c, LB_E_NOTFOUND, "no saved state %s", req->state);
        else
            lbsd_reply_error(c, LB_E_IO, "cannot delete the saved state %s: %s", req->state, strerror(errno));
        return;
    }
    lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
}

/* ---- save ------------------------------------------------------------------ */

typedef struct st_save {
    char id[LB_ID_HEX_LEN + 1];
    char name[LBSD_STATE_NAME_MAX + 1];
    char image[LBSD_IMAGE_REF_MAX + 1];
    char dir[LB_CFG_PATH + 64];
    char path[LB_CFG_PATH + 160];
    int userns_fd, upper_fd, root_fd;
    uint64_t max_bytes;
    int thaw_after;           /* the save froze it: thaw it when done */
    uint64_t bytes, files;
} st_save;

static void st_save_free(void *p)
{
    st_save *s = p;
    if (!s)
        return;
    if (s->userns_fd >= 0)
        close(s->userns_fd);
    if (s->upper_fd >= 0)
        close(s->upper_fd);
    if (s->root_fd >= 0)
        close(s->root_fd);
    free(s);
}

/* fsync of the store's dir: the rename is then on disk too */
static void st_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        if (fsync(fd) != 0)
            lb_warn("fsync of %s: %s", dir, strerror(errno));
        close(fd);
    }
}

/* On a worker: the helper into a temporary file, then fsync and rename. */
static void st_save_run(lbsd_job *j)
{
    st_save *s = j->state;
    char tmp[LB_CFG_PATH + 200], hex[17], result[256];
    if (lb_random_hex(hex, sizeof hex, 8) != LB_OK) {
        j->rc = LB_E_INTERNAL;
        snprintf(j->msg, sizeof j->msg, "no randomness for a temporary name");
        return;
    }
    snprintf(tmp, sizeof tmp, "%s/" ST_TMP_PREFIX "%s-%s", s->dir, s->name, hex);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        j->rc = LB_E_IO;
        snprintf(j->msg, sizeof j->msg, "cannot write into the saved states' store: %s", strerror(errno));
        return;
    }
    int64_t t0 = lb_mono_ms();
    j->rc = lbsd_stateio_run(j->cfg, "save", s->image, s->userns_fd, fd, s->upper_fd, s->root_fd,
                             s->max_bytes, LBSD_STATE_MAX_ENTRIES, result, sizeof result, j->msg, sizeof j->msg);
    struct stat st;
    if (j->rc == LB_OK && (fstat(fd, &st) != 0 || fsync(fd) != 0)) {
        j->rc = LB_E_IO;
        snprintf(j->msg, sizeof j->msg, "cannot write the saved state: %s", strerror(errno));
    }
    if (j->rc == LB_OK && (uint64_t)st.st_size > s->max_bytes) {
        j->rc = LB_E_TOOBIG;
        snprintf(j->msg, sizeof j->msg, "the saved state would be larger than its cap of %llu MiB",
                 (unsigned long long)(s->max_bytes >> 20));
    }
    close(fd);
    if (j->rc == LB_OK && rename(tmp, s->path) != 0) {
        j->rc = LB_E_IO;
        snprintf(j->msg, sizeof j->msg, "cannot keep the saved state: %s", strerror(errno));
    }
    if (j->rc != LB_OK) {
        if (unlink(tmp) != 0)
            lb_warn("cannot remove %s: %s", tmp, strerror(errno));
        if (j->rc == LB_E_TOOBIG)
            snprintf(j->msg + strlen(j->msg), sizeof j->msg - strlen(j->msg),
                     " (sandbox_state_max_mib or max_mib); nothing was kept");
        return;
    }
    st_sync_dir(s->dir);
    s->bytes = (uint64_t)st.st_size;
    const char *f = strstr(result, "\"files\":");
    s->files = f ? strtoull(f + 8, NULL, 10) : 0;
    lb_info("sandbox %s saved as %s: %llu bytes, %llu entries, %lld ms", s->id, s->name,
            (unsigned long long)s->bytes, (unsigned long long)s->files, (long long)(lb_mono_ms() - t0));
}

static int st_open_proc(pid_t pid, const char *what, int flags)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/%s", (long)pid, what);
    return open(p, flags | O_CLOEXEC);
}

static void st_save_start(const lb_config *cfg, lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    char msg[512] = "";
    st_save *s = calloc(1, sizeof *s);
    lbsd_job *j = NULL;
    if (!s) {
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        return;
    }
    s->userns_fd = s->upper_fd = s->root_fd = -1;
    snprintf(s->id, sizeof s->id, "%s", sb->id);
    snprintf(s->name, sizeof s->name, "%s", req->state);
    snprintf(s->image, sizeof s->image, "%s", sb->image);
    uint64_t cap = (uint64_t)cfg->sandbox_state_max_mib;
    if (req->max_mib > 0 && (uint64_t)req->max_mib < cap)
        cap = (uint64_t)req->max_mib;
    s->max_bytes = cap << 20;
    if (st_make_dir(cfg, c->uid, s->dir, sizeof s->dir) != LB_OK ||
        lbsd_state_path(cfg, c->uid, req->state, s->path, sizeof s->path) != LB_OK) {
        lbsd_reply_error(c, LB_E_IO, "cannot make the saved states' store: %s", strerror(errno));
        goto fail;
    }
    if (!sb->frozen) {
        /* a save sees one moment of the sandbox, not files half written */
        int rc = lbsd_sandbox_freeze(sb, msg, sizeof msg);
        if (rc != LB_OK) {
            lbsd_reply_error(c, rc, "%s", msg);
            goto fail;
        }
        s->thaw_after = 1;
    }
    s->userns_fd = st_open_proc(sb->init_pid, "ns/user", O_RDONLY);
    char up[32];
    snprintf(up, sizeof up, "fd/%d", LBSD_INIT_UPPER_FD);
    s->upper_fd = st_open_proc(sb->init_pid, up, O_RDONLY | O_DIRECTORY);
    s->root_fd = fcntl(sb->root_fd, F_DUPFD_CLOEXEC, 3);
    if (s->userns_fd < 0 || s->upper_fd < 0 || s->root_fd < 0) {
        lbsd_reply_error(c, LB_E_SANDBOX, "cannot reach the writable layer of sandbox %s: %s", sb->id,
                         strerror(errno));
        goto fail;
    }
    j = lbsd_job_new(LBSD_JOB_STATE, cfg, NULL);
    if (!j) {
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        goto fail;
    }
    j->run = st_save_run;
    j->state = s;
    j->state_free = st_save_free;
    j->conn_serial = c->serial;
    sb->saving = 1;
    c->creating = 1; /* not read until answered: answers stay in order */
    lbsd_workers_submit(j);
    return;
fail:
    if (s->thaw_after && lbsd_sandbox_thaw(sb, msg, sizeof msg) != LB_OK)
        lb_warn("%s", msg);
    st_save_free(s);
}

int lbsd_state_job_done(lbsd_job *j, lbsd_conn *c)
{
    if (j->run != st_save_run) {
        lbsd_restore_done();
        return 1; /* a restore: the create's end */
    }
    st_save *s = j->state;
    lbsd_sandbox *sb = lbsd_sandbox_by_id(s->id);
    char msg[512];
    if (sb) {
        sb->saving = 0;
        if (s->thaw_after && lbsd_sandbox_thaw(sb, msg, sizeof msg) != LB_OK)
            lb_warn("%s", msg);
    }
    if (!c)
        return 0;
    if (j->rc != LB_OK) {
        lbsd_reply_error(c, j->rc, "%s", j->msg);
        return 0;
    }
    cJSON *r = cJSON_CreateObject();
    if (r) {
        cJSON_AddStringToObject(r, "state", s->name);
        cJSON_AddNumberToObject(r, "bytes", (double)s->bytes);
        cJSON_AddNumberToObject(r, "files", (double)s->files);
    }
    lbsd_reply(c, r, NULL, 0, 0);
    return 0;
}

/* ---- freeze, thaw, and what a frozen sandbox refuses ------------------------ */

int lbsd_state_sandbox_request(const lb_config *cfg, lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    char msg[512] = "";
    int rc;
    switch (req->op) {
    case LBSD_OP_FREEZE:
    case LBSD_OP_THAW:
        if (sb->saving) {
            lbsd_reply_error(c, LB_E_BUSY, "sandbox %s is being saved: try again when the save has answered",
                             sb->id);
            return 1;
        }
        /* the pause goes on without it: the sandbox's files and state are
         * what the caller asked for, its boot id only a sign of the reboot */
        if (req->op == LBSD_OP_FREEZE && req->reboot && lbsd_boot_id_renew(sb->init_pid) != LB_OK)
            lb_warn("sandbox %s: cannot write its new boot id: %s", sb->id, strerror(errno));
        /* A reboot's caller has sent SIGKILL to every process, the spawner
         * too, but a process frozen before it took the signal dies only
         * at the thaw: its socket's end would then come after the resume
         * and take a start made in between with it ("spawner ended").
         * The spawner is dropped now, so the first start after the resume
         * makes a new one. */
        if (req->op == LBSD_OP_FREEZE && req->reboot)
            lbsd_proc_sandbox_gone(sb, "the sandbox was paused without its memory (a reboot): its processes ended");
        rc = req->op == LBSD_OP_FREEZE ? lbsd_sandbox_freeze(sb, msg, sizeof msg)
                                       : lbsd_sandbox_thaw(sb, msg, sizeof msg);
        if (rc != LB_OK)
            lbsd_reply_error(c, rc, "%s", msg);
        else
            lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
        return 1;
    case LBSD_OP_SAVE:
        if (sb->saving) {
            lbsd_reply_error(c, LB_E_BUSY, "sandbox %s is being saved already", sb->id);
            return 1;
        }
        st_save_start(cfg, c, sb, req);
        return 1;
    case LBSD_OP_EXEC:
    case LBSD_OP_READ:
    case LBSD_OP_WRITE:
    case LBSD_OP_LIST:
    case LBSD_OP_STAT:
    case LBSD_OP_FS_CHANGE:
        if (sb->frozen) {
            lbsd_reply_error(c, LB_E_BUSY, "sandbox is frozen: thaw it (resume) first");
            return 1;
        }
        return 0;
    default:
        return 0;
    }
}
