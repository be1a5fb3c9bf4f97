/* The trash of deleted tasks' folders; the contract is task_trash.h.
 *
 * A task's folder can hold max_upload_mb of inputs and its outputs: tens
 * of thousands of files, seconds of unlink()s. A user deleting many such
 * tasks at once took that many web threads. The rename into .trash is
 * atomic, so a crash leaves each folder either in place (the task's row
 * is gone: the folder is an orphan as before) or whole in .trash, which
 * the thread empties when the next web starts. .trash is no task id, so
 * nothing that lists task folders (cache_trim.c, bundles) sees it. */
#include "web/task_trash.h"

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define LB_TRASH_DIR ".trash"
#define LB_TRASH_LOOK_S 60 /* looks again this often even unwoken (a rename by another web) */

static pthread_mutex_t lb_trash_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lb_trash_cv = PTHREAD_COND_INITIALIZER;
static int lb_trash_pending; /* folders put since the thread last looked; guarded by lb_trash_mu */
static int lb_trash_started; /* guarded by lb_trash_mu */
static const lb_config *lb_trash_cfg;

/* Removes every entry of the trash folder; the names are ours. */
static void lb_trash_empty(const char *trash)
{
    DIR *d = opendir(trash);
    if (!d) {
        if (errno != ENOENT)
            lb_warn("web: cannot read %s to remove deleted tasks' files: %s", trash, strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[LB_CFG_PATH + 320];
        snprintf(p, sizeof p, "%s/%s", trash, e->d_name);
        if (lb_rmtree(p) != LB_OK && errno != ENOENT)
            lb_warn("web: cannot remove a deleted task's files %s: %s (tried again later)", p, strerror(errno));
    }
    closedir(d);
}

static void *lb_trash_main(void *arg)
{
    (void)arg;
    char trash[LB_CFG_PATH + 16];
    snprintf(trash, sizeof trash, "%s/%s", lb_trash_cfg->artifacts_dir, LB_TRASH_DIR);
    for (;;) {
        lb_trash_empty(trash);
        pthread_mutex_lock(&lb_trash_mu);
        if (!lb_trash_pending) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += LB_TRASH_LOOK_S;
            (void)pthread_cond_timedwait(&lb_trash_cv, &lb_trash_mu, &until); /* a timeout looks again too */
        }
        lb_trash_pending = 0;
        pthread_mutex_unlock(&lb_trash_mu);
    }
    return NULL;
}

int lb_task_trash_start(const lb_config *cfg)
{
    pthread_mutex_lock(&lb_trash_mu);
    int rc = LB_OK;
    if (!lb_trash_started) {
        lb_trash_cfg = cfg;
        rc = lb_thread_detached(lb_trash_main, NULL) ? LB_E_NOMEM : LB_OK;
        lb_trash_started = rc == LB_OK;
    }
    pthread_mutex_unlock(&lb_trash_mu);
    return rc;
}

int lb_task_trash_put(const lb_config *cfg, const char *path, const char *id)
{
    char trash[LB_CFG_PATH + 16], to[LB_CFG_PATH + 96], tag[17];
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? LB_OK : LB_E_IO;
    snprintf(trash, sizeof trash, "%s/%s", cfg->artifacts_dir, LB_TRASH_DIR);
    if (mkdir(trash, 0750) != 0 && errno != EEXIST)
        return LB_E_IO;
    /* a random tag: the same id deleted twice (a restore, a race of two
     * webs) never meets an earlier folder still being removed */
    if (lb_random_hex(tag, sizeof tag, 8) != LB_OK) {
        errno = EIO;
        return LB_E_IO;
    }
    snprintf(to, sizeof to, "%s/%s-%s", trash, id, tag);
    if (rename(path, to) != 0)
        return errno == ENOENT ? LB_OK : LB_E_IO;
    if (lb_task_trash_start(cfg) != LB_OK) {
        /* no thread: removed here rather than left */
        if (lb_rmtree(to) != LB_OK)
            return LB_E_IO;
        return LB_OK;
    }
    pthread_mutex_lock(&lb_trash_mu);
    lb_trash_pending = 1;
    pthread_cond_signal(&lb_trash_cv);
    pthread_mutex_unlock(&lb_trash_mu);
    return LB_OK;
}
