/*
 * The warm pool: ready sandboxes (namespaces made, overlay mounted, shell
 * started), LLMBOX_POOL_SIZE per image of LLMBOX_POOL_IMAGES, made with the
 * daemon's default limits, so that a create takes one in microseconds
 * instead of making one in tens of milliseconds.
 *
 * Rules:
 *  - a pooled sandbox has no owner and runs nothing; it lives on a list of
 *    its own, outside the event loop's (its fds are not polled: whatever
 *    happened to it is checked when it is taken);
 *  - it is handed out at most once: a sandbox taken is its client's, and
 *    is destroyed when the client is done with it, never returned — so no
 *    task ever sees anything of an earlier one;
 *  - a refill is made by a worker thread (workers.h), one at a time and
 *    only while no create waits for a worker, so it never delays a client;
 *    with a backoff after failures (an image that is not built, no room);
 *  - a rebuilt image (new .complete) flushes the sandboxes made on the old
 *    one.
 *
 * What a pooled sandbox can become on the way out: memory and pids limits
 * are cgroup writes, applied when it is taken; the network is attached by
 * the caller (sandbox_net.c). A spec with its own CPU or disk quota, or
 * other limits in rlimit mode (they are set in init), is made fresh.
 */
#include "sandboxd/sandboxd.h"
#include "sandboxd/image_layers.h"
#include "sandboxd/hostlimits.h"

#include "common/log.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define POOL_IMAGES_MAX 8
#define POOL_BACKOFF_MIN_MS 1000
#define POOL_BACKOFF_MAX_MS 60000

typedef struct pool_img {
    char image[LBSD_IMAGE_REF_MAX + 1];
    lbsd_sandbox *ready;        /* linked through ->next, newest first */
    int nready;
    int64_t next_try_ms;        /* after a failed make */
    int fails;                  /* failed makes in a row */
    struct timespec stamp;      /* mtime of the image's .complete when they were made */
    ino_t stamp_ino;
} pool_img;

static pool_img g_img[POOL_IMAGES_MAX];
static int g_nimg, g_size;
static uint64_t g_hits, g_misses, g_other;
static const lb_config *g_cfg;  /* the daemon's, from lbsd_pool_init: defaults, image store */

void lbsd_pool_init(const lb_config *cfg)
{
    g_cfg = cfg;
    g_size = cfg->pool_size;
    g_nimg = 0;
    char list[sizeof cfg->pool_images];
    snprintf(list, sizeof list, "%s", cfg->pool_images);
    char *save = NULL;
    for (char *w = strtok_r(list, ", \t", &save); w && g_size > 0;
         w = strtok_r(NULL, ", \t", &save)) {
        if (!lbsd_image_spec_valid(w)) {
            lb_warn("LLMBOX_POOL_IMAGES: '%s' is not an image name; not pooled", w);
            continue;
        }
        int dup = 0;
        for (int i = 0; i < g_nimg; i++)
            dup |= !strcmp(g_img[i].image, w);
        if (dup)
            continue;
        if (g_nimg == POOL_IMAGES_MAX) {
            lb_warn("LLMBOX_POOL_IMAGES: only the first %d images are pooled", POOL_IMAGES_MAX);
            break;
        }
        pool_img *p = &g_img[g_nimg++];
        memset(p, 0, sizeof *p);
        snprintf(p->image, sizeof p->image, "%s", w);
    }
    if (g_size > 0 && g_nimg > 0)
        lb_info("warm pool: %d ready sandbox(es) for each of %d image(s)", g_size, g_nimg);
}

/* Identifies the current build of an image: its .complete file. */
static int pool_stamp(const char *image, struct timespec *ts, ino_t *ino)
{
    char p[LB_CFG_PATH + 96];
    snprintf(p, sizeof p, "%s/%s/.complete", g_cfg->image_store, image);
    struct stat st;
    /* a layered image: its record, which a new import replaces
     * (image_layers.h) */
    lbsd_image *img = NULL;
    char why[256];
    if (stat(p, &st) != 0) {
        img = malloc(sizeof *img);
        int got = img && lbsd_image_resolve(g_cfg, image, img, why, sizeof why) == LB_OK && img->layered &&
                  stat(img->hold, &st) == 0;
        free(img);
        if (!got)
            return -1;
    }
    *ts = st.st_mtim;
    *ino = st.st_ino;
    return 0;
}

static void pool_flush(pool_img *p, const char *why)
{
    if (p->nready)
        lb_info("warm pool: dropping %d sandbox(es) of image %s (%s)", p->nready, p->image, why);
    while (p->ready) {
        lbsd_sandbox *sb = p->ready;
        p->ready = sb->next;
        sb->next = NULL;
        lbsd_sandbox_retire(sb);
    }
    p->nready = 0;
}

/* False when the image was rebuilt (or removed) since p's sandboxes were made. */
static int pool_current(pool_img *p)
{
    struct timespec ts;
    ino_t ino;
    if (pool_stamp(p->image, &ts, &ino) != 0)
        return 0;
    return ino == p->stamp_ino && ts.tv_sec == p->stamp.tv_sec && ts.tv_nsec == p->stamp.tv_nsec;
}

/* Nothing may have happened to a pooled sandbox: init alive and silent (a
 * message would be its shell's death), the shell's pipes quiet and open. */
static int pool_healthy(const lbsd_sandbox *sb)
{
    if (sb->broken || sb->init_reaped || sb->ctl_fd < 0 || sb->sh_in < 0 || sb->sh_out < 0 ||
        sb->sh_err < 0)
        return 0;
    struct pollfd pf[3] = {{.fd = sb->ctl_fd, .events = POLLIN},
                           {.fd = sb->sh_out, .events = POLLIN},
                           {.fd = sb->sh_err, .events = POLLIN}};
    return poll(pf, 3, 0) == 0;
}

/* Re-limits a pooled sandbox to the request's memory and pids (it was made
 * with the defaults). */
static int pool_set_limits(lbsd_sandbox *sb, int memory_mib, int pids)
{
    if (memory_mib != sb->memory_mib) {
        if (lbsd_cg_set_memory(&sb->cg, (uint64_t)sb->memory_mib << 20, (uint64_t)memory_mib << 20) != LB_OK)
            return -1;
        sb->memory_mib = memory_mib;
    }
    if (pids != sb->pids) {
        if (lbsd_cg_set_pids(&sb->cg, pids) != LB_OK)
            return -1;
        sb->pids = pids;
    }
    return 0;
}

static pool_img *pool_find(const char *image)
{
    for (int i = 0; i < g_nimg; i++)
        if (!strcmp(g_img[i].image, image))
            return &g_img[i];
    return NULL;
}

lbsd_sandbox *lbsd_pool_take(const lbsd_req *req)
{
    if (g_size <= 0 || g_nimg == 0)
        return NULL;
    const lb_config *cfg = g_cfg;
    pool_img *p = pool_find(req->image[0] ? req->image : cfg->default_image);
    int memory_mib = req->memory_mib ? req->memory_mib : cfg->sandbox_memory_mib;
    int pids = req->pids ? req->pids : cfg->sandbox_pids;
    /* CPU and disk quotas are set when a sandbox is made (sandbox_init.c,
     * cgroup.c); a spec with its own is made fresh. So are other limits in
     * rlimit mode, where init sets them. */
    int limits_differ = memory_mib != cfg->sandbox_memory_mib || pids != cfg->sandbox_pids;
    /* RLIMIT_NOFILE follows from pids (hostlimits.h) and is set by init:
     * raising it later would need CAP_SYS_RESOURCE */
    uint64_t budget = lbsd_host_get()->files_budget, hard = lbsd_host_get()->nofile_hard;
    int nofile_differs = lbsd_nofile_for(budget, pids, hard) !=
                         lbsd_nofile_for(budget, cfg->sandbox_pids, hard);
    if (!p || req->cpu_milli || req->disk_mib || nofile_differs ||
        (limits_differ && lbsd_cg_detect() == LBSD_CG_RLIMIT)) {
        g_other++;
        return NULL;
    }
    if (p->ready && !pool_current(p))
        pool_flush(p, "the image was rebuilt");
    while (p->ready) {
        lbsd_sandbox *sb = p->ready;
        p->ready = sb->next;
        sb->next = NULL;
        p->nready--;
        if (!pool_healthy(sb)) {
            lb_warn("warm pool: sandbox %s was no longer intact; dropped", sb->id);
            lbsd_sandbox_retire(sb);
            continue;
        }
        if (pool_set_limits(sb, memory_mib, pids) != 0) {
            lb_warn("warm pool: cannot set the limits of sandbox %s (%s); dropped", sb->id,
                    strerror(errno));
            lbsd_sandbox_retire(sb);
            continue;
        }
        g_hits++;
        sb->pooled = 1;
        sb->created_ms = lb_mono_ms();
        return sb;
    }
    g_misses++;
    return NULL;
}

int lbsd_pool_refill_due(int64_t now, int room)
{
    if (g_size <= 0 || room <= 0)
        return -1;
    int64_t best = -1;
    for (int i = 0; i < g_nimg; i++) {
        if (g_img[i].nready >= g_size)
            continue;
        int64_t d = g_img[i].next_try_ms - now;
        if (d < 0)
            d = 0;
        if (best < 0 || d < best)
            best = d;
    }
    return best < 0 ? -1 : best > 60000 ? 60000 : (int)best;
}

/* A failed make: the image backs off (1 s, doubling up to 60 s). */
static void pool_backoff(pool_img *p, const char *msg)
{
    int back = POOL_BACKOFF_MIN_MS << (p->fails < 6 ? p->fails : 6);
    if (back > POOL_BACKOFF_MAX_MS)
        back = POOL_BACKOFF_MAX_MS;
    p->next_try_ms = lb_mono_ms() + back;
    if (p->fails++ == 0)
        lb_warn("warm pool: cannot make a sandbox of image %s: %s (retrying, at most every "
                "%d s)", p->image, msg, POOL_BACKOFF_MAX_MS / 1000);
}

int lbsd_pool_refill_begin(lbsd_req *req)
{
    int64_t now = lb_mono_ms();
    pool_img *p = NULL;
    /* the emptiest image that is due */
    for (int i = 0; i < g_nimg; i++) {
        pool_img *q = &g_img[i];
        if (q->nready < g_size && q->next_try_ms <= now && (!p || q->nready < p->nready))
            p = q;
    }
    if (!p)
        return -1;
    struct timespec ts;
    ino_t ino;
    if (pool_stamp(p->image, &ts, &ino) != 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "image '%.100s' is not built", p->image);
        pool_backoff(p, msg);
        return -1;
    }
    if (ino != p->stamp_ino || ts.tv_sec != p->stamp.tv_sec || ts.tv_nsec != p->stamp.tv_nsec) {
        pool_flush(p, "the image was rebuilt");
        p->stamp = ts;
        p->stamp_ino = ino;
    }
    memset(req, 0, sizeof *req);
    snprintf(req->image, sizeof req->image, "%s", p->image);
    return (int)(p - g_img);
}

void lbsd_pool_refill_done(int idx, lbsd_sandbox *sb, int rc, const char *msg)
{
    if (idx < 0 || idx >= g_nimg) {
        if (sb)
            lbsd_sandbox_retire(sb);
        return;
    }
    pool_img *p = &g_img[idx];
    if (rc != LB_OK || !sb) {
        pool_backoff(p, msg);
        return;
    }
    if (!pool_current(p) || p->nready >= g_size) {
        /* made on the image of before a rebuild, or the pool filled meanwhile */
        lbsd_sandbox_retire(sb);
        return;
    }
    if (p->fails)
        lb_info("warm pool: image %s works again", p->image);
    p->fails = 0;
    p->next_try_ms = 0;
    sb->next = p->ready;
    p->ready = sb;
    p->nready++;
    lb_debug("warm pool: %d/%d ready for image %s", p->nready, g_size, p->image);
}

int lbsd_pool_child_exited(pid_t pid)
{
    for (int i = 0; i < g_nimg; i++) {
        for (lbsd_sandbox **pp = &g_img[i].ready; *pp; pp = &(*pp)->next) {
            lbsd_sandbox *sb = *pp;
            if (sb->init_pid != pid)
                continue;
            lb_warn("warm pool: sandbox %s died while waiting (its init exited); dropped", sb->id);
            sb->init_reaped = 1;
            sb->broken = 1;
            *pp = sb->next;
            sb->next = NULL;
            g_img[i].nready--;
            lbsd_sandbox_retire(sb);
            return 1;
        }
    }
    return 0;
}

int lbsd_pool_ready(void)
{
    int n = 0;
    for (int i = 0; i < g_nimg; i++)
        n += g_img[i].nready;
    return n;
}

cJSON *lbsd_pool_json(void)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "size", g_size > 0 ? g_size * g_nimg : 0);
    cJSON_AddNumberToObject(o, "ready", lbsd_pool_ready());
    cJSON_AddNumberToObject(o, "hits", (double)g_hits);
    cJSON_AddNumberToObject(o, "misses", (double)g_misses);
    cJSON_AddNumberToObject(o, "other", (double)g_other);
    cJSON *imgs = cJSON_AddArrayToObject(o, "images");
    for (int i = 0; imgs && g_size > 0 && i < g_nimg; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e)
            break;
        cJSON_AddStringToObject(e, "image", g_img[i].image);
        cJSON_AddNumberToObject(e, "size", g_size);
        cJSON_AddNumberToObject(e, "ready", g_img[i].nready);
        if (g_img[i].fails)
            cJSON_AddStringToObject(e, "error", "the last attempts to make a sandbox failed (see the log)");
        cJSON_AddItemToArray(imgs, e);
    }
    return o;
}

void lbsd_pool_shutdown(void)
{
    for (int i = 0; i < g_nimg; i++)
        pool_flush(&g_img[i], "shutting down");
}
