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
#include "sandbox/sandboxd.h"

#include "common/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

/* Reads up to bufsz-1 bytes of /proc/<pid>/<file>; length or -1. */
static ssize_t stale_read(long pid, const char *file, char *buf, size_t bufsz)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/%s", pid, file);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < bufsz) {
        ssize_t r = read(fd, buf + got, bufsz - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

/* True when pid's mount table holds an overlay named after this
 * installation: a process of one of our sandboxes. */
static int stale_is_sandbox(long pid, const char *needle, char *buf, size_t bufsz)
{
    ssize_t n = stale_read(pid, "mountinfo", buf, bufsz);
    return n > 0 && strstr(buf, needle) != NULL;
}

static int stale_is_our_slirp(long pid, const char *argv0, char *buf, size_t bufsz)
{
    ssize_t n = stale_read(pid, "cmdline", buf, bufsz);
    return n > 0 && !strcmp(buf, argv0); /* argv[0] ends at the first NUL */
}

void lbsd_kill_stale_procs(void)
{
    char needle[LB_CFG_PATH + 64], argv0[64];
    /* mountinfo: "... - overlay <source> <options>" */
    snprintf(needle, sizeof needle, " - overlay %s ", lbsd_install_tag());
    snprintf(argv0, sizeof argv0, "slirp4netns:%s", lbsd_install_tag());
    /* mountinfo of a sandbox is short; 256 KiB covers any sane process */
    size_t bufsz = 256u << 10;
    char *buf = malloc(bufsz);
    if (!buf)
        return;
    pid_t self = getpid();
    int sandbox = 0, slirp = 0;
    /* a few rounds: a sandbox process may fork while we scan */
    for (int round = 0; round < 5; round++) {
        int killed = 0;
        DIR *d = opendir("/proc");
        if (!d)
            break;
        struct dirent *de;
        while ((de = readdir(d))) {
            char *end;
            long pid = strtol(de->d_name, &end, 10);
            if (*end || pid <= 1 || pid == self)
                continue;
            if (stale_is_our_slirp(pid, argv0, buf, bufsz)) {
                if (kill((pid_t)pid, SIGKILL) == 0)
                    slirp++, killed++;
            } else if (stale_is_sandbox(pid, needle, buf, bufsz)) {
                if (kill((pid_t)pid, SIGKILL) == 0)
                    sandbox++, killed++;
            }
        }
        closedir(d);
        if (!killed)
            break;
        usleep(20 * 1000);
    }
    free(buf);
    if (sandbox || slirp)
        lb_warn("killed %d process(es) of old sandboxes and %d slirp4netns left by a previous "
                "sandboxd", sandbox, slirp);
}
