/* The artifacts cache's trim; the contract is cache_trim.h. */
#include "web/cache_trim.h"

#include "common/blob_task.h"
#include "common/config.h"
#include "common/log.h"
#include "common/task.h"
#include "common/util.h"
#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define LB_TRIM_FOLDERS_MAX 1000000 /* task folders measured in one pass */

typedef struct trim_ent {
    char id[33];
    uint64_t bytes;
    struct timespec newest; /* to the nanosecond: folders written in one second still have an order */
} trim_ent;

/* Files with more than one name, seen in the folder being measured: a
 * follow-up keeps each round's outputs as hard links to output/ (agent's
 * followup.c), and one inode counted once per name made a task look twice
 * its size on disk, so a folder alone under the cap was trimmed. An open
 * addressing set of inode numbers, per folder; past its cap a further
 * linked file counts again (over-counting only trims sooner). */
#define LB_TR_LINKED_MAX 4096 /* a power of two */
static __thread ino_t *lb_tr_linked; /* LB_TR_LINKED_MAX, the pass's (not static TLS: every thread would carry it) */
static __thread size_t lb_tr_nlinked;

/* 1 when ino was seen already in this folder (and remembers it if not) */
static int lb_tr_linked_seen(ino_t ino)
{
    if (!lb_tr_linked)
        return 0; /* no set (out of memory): counted again */
    size_t h = (size_t)(ino * 0x9E3779B97F4A7C15ull) & (LB_TR_LINKED_MAX - 1);
    for (size_t k = 0; k < LB_TR_LINKED_MAX; k++, h = (h + 1) & (LB_TR_LINKED_MAX - 1)) {
        if (lb_tr_linked[h] == ino)
            return 1;
        if (lb_tr_linked[h] == 0) {
            if (lb_tr_nlinked >= LB_TR_LINKED_MAX / 2)
                return 0; /* full enough: probes stay short */
            lb_tr_linked[h] = ino;
            lb_tr_nlinked++;
            return 0;
        }
    }
    return 0;
}

/* what nftw's callback adds up (one pass at a time: the thread's) */
static __thread uint64_t lb_tr_bytes;
static __thread struct timespec lb_tr_newest;

static int lb_tr_visit(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)path;
    (void)flag;
    (void)f;
    /* a folder's files share its device: the inode number alone names one (0 is no inode) */
    if (!(S_ISREG(st->st_mode) && st->st_nlink > 1 && st->st_ino != 0 && lb_tr_linked_seen(st->st_ino)))
        lb_tr_bytes += (uint64_t)st->st_blocks * 512;
    if (st->st_mtim.tv_sec > lb_tr_newest.tv_sec ||
        (st->st_mtim.tv_sec == lb_tr_newest.tv_sec && st->st_mtim.tv_nsec > lb_tr_newest.tv_nsec))
        lb_tr_newest = st->st_mtim;
    return 0;
}

static int lb_tr_oldest_first(const void *a, const void *b)
{
    const trim_ent *x = a, *y = b;
    if (x->newest.tv_sec != y->newest.tv_sec)
        return x->newest.tv_sec < y->newest.tv_sec ? -1 : 1;
    if (x->newest.tv_nsec != y->newest.tv_nsec)
        return x->newest.tv_nsec < y->newest.tv_nsec ? -1 : 1;
    return strcmp(x->id, y->id); /* a stable order, whatever qsort does with ties */
}

/* The task folders of dir, measured: *out (malloc'd), *n, *total. */
static int lb_tr_measure(const char *dir, trim_ent **out, size_t *n, uint64_t *total)
{
    *out = NULL;
    *n = 0;
    *total = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? LB_OK : LB_E_IO;
    size_t cap = 0;
    int rc = LB_OK;
    lb_tr_linked = calloc(LB_TR_LINKED_MAX, sizeof *lb_tr_linked);
    lb_tr_nlinked = 0;
    struct dirent *e;
    while ((e = readdir(d)) && *n < LB_TRIM_FOLDERS_MAX) {
        if (!lb_id_valid(e->d_name))
            continue;
        char p[LB_CFG_PATH + 40];
        snprintf(p, sizeof p, "%s/%.32s", dir, e->d_name); /* a task id: 32 characters */
        lb_tr_bytes = 0;
        lb_tr_newest.tv_sec = 0;
        lb_tr_newest.tv_nsec = 0;
        if (lb_tr_nlinked && lb_tr_linked) { /* most folders have no linked file: no 32 KiB to clear */
            memset(lb_tr_linked, 0, LB_TR_LINKED_MAX * sizeof *lb_tr_linked);
            lb_tr_nlinked = 0;
        }
        if (nftw(p, lb_tr_visit, 16, FTW_PHYS) != 0)
            continue; /* gone meanwhile, or unreadable: not ours to judge */
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            trim_ent *ne = realloc(*out, nc * sizeof *ne);
            if (!ne) {
                rc = LB_E_NOMEM;
                break;
            }
            *out = ne;
            cap = nc;
        }
        trim_ent *t = &(*out)[(*n)++];
        snprintf(t->id, sizeof t->id, "%.32s", e->d_name);
        t->bytes = lb_tr_bytes;
        t->newest = lb_tr_newest;
        *total += lb_tr_bytes;
    }
    closedir(d);
    free(lb_tr_linked);
    lb_tr_linked = NULL;
    return rc;
}

/* 1 when the task's folder may go: final (or deleted), and nothing in it
 * the bucket lacks; -1 when the store cannot say (the pass stops). */
static int lb_tr_may_go(lb_store *s, const char *dir, const char *id)
{
    lb_task t;
    memset(&t, 0, sizeof t);
    int rc = lb_store_task_load(s, id, &t);
    if (rc == LB_E_NOTFOUND)
        return 1; /* deleted: its tombstone removes it anyway */
    if (rc != LB_OK)
        return -1;
    int ok = lb_task_status_is_final(t.status) && lb_blob_task_dir_in_store(dir, t.round);
    lb_task_free(&t);
    return ok;
}

int lb_cache_trim_once(const lb_config *cfg, size_t *removed, uint64_t *freed)
{
    *removed = 0;
    *freed = 0;
    if (!cfg->s3_bucket[0] || cfg->artifacts_cache_max_mb <= 0)
        return LB_OK;
    trim_ent *v = NULL;
    size_t n = 0;
    uint64_t total = 0, max = (uint64_t)cfg->artifacts_cache_max_mb << 20;
    int rc = lb_tr_measure(cfg->artifacts_dir, &v, &n, &total);
    if (rc != LB_OK || total <= max) {
        free(v);
        return rc;
    }
    qsort(v, n, sizeof *v, lb_tr_oldest_first);
    lb_store *s = NULL;
    if ((rc = lb_store_open(lb_cfg_store_where(cfg), &s)) != LB_OK) {
        lb_store_close(s);
        free(v);
        return rc;
    }
    time_t now = time(NULL);
    size_t kept = 0;
    for (size_t i = 0; i < n && total > max / 10 * 9; i++) {
        if (now - v[i].newest.tv_sec < cfg->artifacts_cache_min_age_s)
            break; /* the rest is younger still */
        char dir[LB_CFG_PATH + 40];
        snprintf(dir, sizeof dir, "%s/%s", cfg->artifacts_dir, v[i].id);
        int go = lb_tr_may_go(s, dir, v[i].id);
        if (go < 0) {
            rc = LB_E_UNAVAILABLE;
            break;
        }
        if (!go) {
            kept++;
            continue;
        }
        if (lb_rmtree(dir) != LB_OK) {
            lb_warn("web: the artifacts cache: cannot remove %s: %s", dir, strerror(errno));
            continue;
        }
        lb_info("web: the artifacts cache: removed %s (%llu KiB, last written %lld)", v[i].id,
                (unsigned long long)(v[i].bytes >> 10), (long long)v[i].newest.tv_sec);
        total -= v[i].bytes < total ? v[i].bytes : total;
        *freed += v[i].bytes;
        (*removed)++;
    }
    lb_store_close(s);
    free(v);
    if (*removed)
        lb_info("web: the artifacts cache: %zu task folders removed (%llu MiB; they are in the object store), "
                "%llu MiB left of artifacts_cache_max_mb %d",
                *removed, (unsigned long long)(*freed >> 20), (unsigned long long)(total >> 20),
                cfg->artifacts_cache_max_mb);
    if (total > max && kept)
        lb_warn("web: the artifacts cache holds %llu MiB, over artifacts_cache_max_mb %d: %zu task folders hold "
                "files the object store does not (their outputs could not be stored) and are kept",
                (unsigned long long)(total >> 20), cfg->artifacts_cache_max_mb, kept);
    return rc;
}

static const lb_config *lb_tr_cfg;

static void *lb_tr_main(void *arg)
{
    (void)arg;
    int failing = 0;
    for (;;) {
        struct timespec ts = {lb_tr_cfg->artifacts_cache_trim_s, 0};
        nanosleep(&ts, NULL);
        size_t removed = 0;
        uint64_t freed = 0;
        int rc = lb_cache_trim_once(lb_tr_cfg, &removed, &freed);
        if (rc != LB_OK && !failing++)
            lb_warn("web: the artifacts cache could not be trimmed (%s); trying again every %d s", lb_strerror(rc),
                    lb_tr_cfg->artifacts_cache_trim_s);
        else if (rc == LB_OK)
            failing = 0;
    }
    return NULL;
}

int lb_cache_trim_start(const lb_config *cfg)
{
    if (!cfg->s3_bucket[0] || cfg->artifacts_cache_max_mb <= 0)
        return LB_OK;
    lb_tr_cfg = cfg;
    int e = lb_thread_detached(lb_tr_main, NULL);
    if (e)
        return LB_E_NOMEM;
    lb_info("web: the artifacts cache is kept under %d MiB (artifacts_cache_max_mb), looked at every %d s",
            cfg->artifacts_cache_max_mb, cfg->artifacts_cache_trim_s);
    return LB_OK;
}
