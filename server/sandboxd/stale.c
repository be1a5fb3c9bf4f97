/*
 * What a previous sandboxd left behind, found after a restart (even after
 * kill -9) and killed before its scratch dirs and cgroups are removed
 * (lbsd_cleanup_stale in sandbox_create.c).
 *
 * Normally nothing is left: every sandbox init has PR_SET_PDEATHSIG and
 * exits when its control socket to sandboxd closes (the kernel then kills
 * the rest of its pid namespace), and every slirp4netns has
 * PR_SET_PDEATHSIG and an --exit-fd whose other end was sandboxd's. This is
 * the belt to those braces, and the only way to find processes when there
 * are no cgroups (rlimit mode):
 *
 *  - a sandbox process is recognised by its mount table: an overlay whose
 *    source is this installation's tag (sandbox_init.c mounts it so; the
 *    layer paths are relative and name nothing of the host);
 *  - a slirp4netns of ours by its argv[0], "slirp4netns:<install tag>".
 */
#include "sandboxd/stale.h"

#include "sandboxd/proc_walk.h"

#include "common/log.h"
#include "common/config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static char g_tag[32];

/* FNV-1a of var_dir, as the cgroup names (cgroup.c) */
static void tag_make(const char *var_dir)
{
    uint32_t h = 2166136261u;
    for (const char *c = var_dir; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    snprintf(g_tag, sizeof g_tag, "llmbox-%08x", h);
}

void lbsd_install_tag_init(const char *var_dir)
{
    tag_make(var_dir);
}

const char *lbsd_install_tag(void)
{
    if (!g_tag[0])
        tag_make(""); /* not set: the tag of an empty var dir, as before any config */
    return g_tag;
}

int lbsd_lock_var(const char *var_dir, char *msg, size_t msgsz)
{
    char p[LB_CFG_PATH + 32];
    snprintf(p, sizeof p, "%s/sandboxd.lock", var_dir);
    /* kept open (close-on-exec) for the life of the process; sandbox inits
     * close their copy first thing */
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(msg, msgsz, "cannot open %s: %s", p, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(msg, msgsz,
                 "another sandboxd already uses %s (%s is locked); two daemons on one var dir "
                 "would destroy each other's sandboxes",
                 var_dir, p);
        close(fd);
        return -1;
    }
    return fd;
}

/* True when pid's mount table holds an overlay named after this
 * installation: a process of one of our sandboxes. */
static int stale_is_sandbox(long pid, const char *needle, char *buf, size_t bufsz)
{
    ssize_t n = lbsd_proc_read((pid_t)pid, "mountinfo", buf, bufsz);
    return n > 0 && strstr(buf, needle) != NULL;
}

static int stale_is_our_slirp(long pid, const char *argv0, char *buf, size_t bufsz)
{
    ssize_t n = lbsd_proc_read((pid_t)pid, "cmdline", buf, bufsz);
    return n > 0 && !strcmp(buf, argv0); /* argv[0] ends at the first NUL */
}

/* What the sweep looks for and what it killed, through the walks. */
typedef struct stale_sweep {
    char needle[LB_CFG_PATH + 64], argv0[64];
    char *buf;
    size_t bufsz;
    pid_t self;
    int sandbox, slirp, killed;
} stale_sweep;

static int stale_kill_if_ours(pid_t pid, void *arg)
{
    stale_sweep *w = arg;
    if (pid == w->self)
        return 0;
    if (stale_is_our_slirp(pid, w->argv0, w->buf, w->bufsz)) {
        if (kill(pid, SIGKILL) == 0)
            w->slirp++, w->killed++;
    } else if (stale_is_sandbox(pid, w->needle, w->buf, w->bufsz)) {
        if (kill(pid, SIGKILL) == 0)
            w->sandbox++, w->killed++;
    }
    return 0;
}

void lbsd_kill_stale_procs(void)
{
    stale_sweep w = {.self = getpid()};
    /* mountinfo: "... - overlay <source> <options>" */
    snprintf(w.needle, sizeof w.needle, " - overlay %s ", lbsd_install_tag());
    snprintf(w.argv0, sizeof w.argv0, "slirp4netns:%s", lbsd_install_tag());
    /* mountinfo of a sandbox is short; 256 KiB covers any sane process */
    w.bufsz = 256u << 10;
    w.buf = malloc(w.bufsz);
    if (!w.buf)
        return;
    /* a few rounds: a sandbox process may fork while we scan */
    for (int round = 0; round < 5; round++) {
        w.killed = 0;
        if (lbsd_proc_each(stale_kill_if_ours, &w) < 0 || !w.killed)
            break;
        usleep(20 * 1000);
    }
    free(w.buf);
    if (w.sandbox || w.slirp)
        lb_warn("killed %d process(es) of old sandboxes and %d slirp4netns left by a previous "
                "sandboxd", w.sandbox, w.slirp);
}
