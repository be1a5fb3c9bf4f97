/*
 * Sandbox life cycle on the sandboxd side: create (scratch dir, cgroups,
 * input copy, clone of init, first shell), shell restarts, killing and
 * teardown. The child side is insandbox/sandbox_init.c.
 */
#include "sandboxd/sandbox_create.h"

#include "insandbox/sandbox_init.h"
#include "sandboxd/fdpark.h"
#include "sandboxd/fdpass.h"
#include "sandboxd/hostlimits.h"
#include "sandboxd/idmap.h"
#include "sandboxd/image_layers.h"
#include "sandboxd/input_copy.h"
#include "sandboxd/mounts.h"
#include "sandboxd/proc_walk.h"
#include "sandboxd/sandbox_exec.h"
#include "sandboxd/sandbox_freeze.h"
#include "sandboxd/sandbox_net.h"
#include "sandboxd/stale.h"
#include "sandboxd/uidslot.h"
#include "sandboxd/zygote.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LBSD_INIT_TIMEOUT_MS 20000
#define LBSD_CTL_TIMEOUT_MS 5000

static void sb_msg(char *msg, size_t msgsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sb_msg(char *msg, size_t msgsz, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msgsz, fmt, ap);
    va_end(ap);
}

static void sb_close(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* A path that overlayfs options or our layout could misread. */
static int sb_path_ok(const char *p)
{
    return p[0] == '/' && !strpbrk(p, ",:\\\n");
}

/* Receives one message from init, waiting at most timeout_ms.
 * Returns its length, 0 on timeout, -1 on EOF/error. */
static ssize_t sb_ctl_recv(lbsd_sandbox *sb, char *buf, size_t bufsz, int timeout_ms)
{
    int64_t end = lb_mono_ms() + timeout_ms;
    for (;;) {
        int64_t left = end - lb_mono_ms();
        if (left < 0)
            return 0;
        struct pollfd p = {.fd = sb->ctl_fd, .events = POLLIN};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
        ssize_t n = recv(sb->ctl_fd, buf, bufsz - 1, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return -1;
        buf[n] = '\0';
        return n;
    }
}

int lbsd_pid_in_sandbox(const lbsd_sandbox *sb, pid_t pid)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/ns/pid", (long)pid);
    struct stat st;
    return stat(p, &st) == 0 && (uint64_t)st.st_ino == sb->pidns_ino &&
           (uint64_t)st.st_dev == sb->pidns_dev;
}

/* Host pid of the process whose pid inside the sandbox is nspid. */
/* Whether host pid's innermost pid (the last field of "NSpid:") is nspid. */
static int sb_nspid_is(long pid, int nspid)
{
    char buf[2048];
    if (lbsd_proc_read((pid_t)pid, "status", buf, sizeof buf) <= 0)
        return 0;
    /* "NSpid:\t<host>\t<ns>": the last field is the innermost pid */
    char *ns = strstr(buf, "\nNSpid:");
    if (!ns)
        return 0;
    char *eol = strchr(ns + 1, '\n');
    if (eol)
        *eol = '\0';
    char *last = strrchr(ns, '\t');
    long long v;
    return last && lb_parse_ll(last + 1, 1, INT_MAX, &v) == LB_OK && v == nspid;
}

/* The shell is a child of the sandbox's init: its host pid is among the
 * few in /proc/<init>/task/<init>/children (CONFIG_PROC_CHILDREN). Scanning
 * all of /proc instead costs O(host processes): 0.6 ms on a quiet host,
 * 17 ms with 1000 sandboxes (bench/RESULTS.md); it stays as the fallback
 * for kernels without that file. */
static pid_t sb_host_pid(lbsd_sandbox *sb, int nspid)
{
    char p[96], kids[4096];
    snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)sb->init_pid, (int)sb->init_pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, kids, sizeof kids - 1);
        close(fd);
        if (n > 0) {
            kids[n] = '\0';
            char *save = NULL;
            for (char *w = strtok_r(kids, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
                long pid = strtol(w, NULL, 10);
                if (pid > 0 && sb_nspid_is(pid, nspid))
                    return (pid_t)pid;
            }
        }
    }
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    pid_t found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        if (lbsd_pid_in_sandbox(sb, (pid_t)pid) && sb_nspid_is(pid, nspid))
            found = (pid_t)pid;
    }
    closedir(d);
    return found;
}

int lbsd_kill_all(lbsd_sandbox *sb, int keep_shell)
{
    int total = 0;
    /* a fork bomb keeps making new processes while we kill; the pids limit
     * bounds it, and a few rounds catch the children born during a round */
    for (int round = 0; round < 20; round++) {
        int killed = 0;
        DIR *d = opendir("/proc");
        if (!d)
            return total;
        struct dirent *de;
        while ((de = readdir(d))) {
            char *end;
            long pid = strtol(de->d_name, &end, 10);
            if (*end || pid <= 0 || pid == sb->init_pid)
                continue;
            if (keep_shell && sb->sh_hostpid > 0 && pid == sb->sh_hostpid)
                continue;
            if (!lbsd_pid_in_sandbox(sb, (pid_t)pid))
                continue;
            if (kill((pid_t)pid, SIGKILL) == 0)
                killed++;
        }
        closedir(d);
        total += killed;
        if (!killed)
            break;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return total;
}

int lbsd_ctl_handle(lbsd_sandbox *sb)
{
    char buf[256];
    ssize_t n = recv(sb->ctl_fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    if (lbsd_park_note(sb, buf))
        return 0;
    int pid, st;
    if (sscanf(buf, "EXIT %d %d", &pid, &st) == 2 && pid == sb->sh_nspid) {
        sb->sh_nspid = 0;
        sb->sh_hostpid = 0;
        lbsd_exec_shell_exited(sb, st);
    }
    return 0;
}

static void sb_shell_close(lbsd_sandbox *sb)
{
    sb_close(&sb->sh_in);
    sb_close(&sb->sh_out);
    sb_close(&sb->sh_err);
}

static int sb_write_file(const char *path, const char *val)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, val, strlen(val));
    close(fd);
    return w == (ssize_t)strlen(val) ? 0 : -1;
}

/* The shell's three pipes: sandboxd keeps in[1], out[0] and err[0]; init
 * gets the other ends (stdin, stdout, stderr of the shell it forks). */
typedef struct sb_pipes {
    int in[2], out[2], err[2];
} sb_pipes;

static void sb_pipes_close(sb_pipes *pp)
{
    for (int i = 0; i < 2; i++) {
        sb_close(&pp->in[i]);
        sb_close(&pp->out[i]);
        sb_close(&pp->err[i]);
    }
}

static int sb_pipes_open(sb_pipes *pp, char *msg, size_t msgsz)
{
    for (int i = 0; i < 2; i++)
        pp->in[i] = pp->out[i] = pp->err[i] = -1;
    if (pipe2(pp->in, O_CLOEXEC) || pipe2(pp->out, O_CLOEXEC) || pipe2(pp->err, O_CLOEXEC)) {
        sb_msg(msg, msgsz, "pipe: %s", strerror(errno));
        sb_pipes_close(pp);
        return LB_E_SANDBOX;
    }
    return LB_OK;
}

/* Takes our ends of pp for the shell init started as nspid (inside). */
static void sb_shell_adopt(lbsd_sandbox *sb, sb_pipes *pp, int nspid)
{
    sb->sh_nspid = nspid;
    sb->sh_in = pp->in[1];
    sb->sh_out = pp->out[0];
    sb->sh_err = pp->err[0];
    pp->in[1] = pp->out[0] = pp->err[0] = -1;
    sb_pipes_close(pp); /* init has its copies of the others */
    fcntl(sb->sh_in, F_SETFL, O_NONBLOCK);
    fcntl(sb->sh_out, F_SETFL, O_NONBLOCK);
    fcntl(sb->sh_err, F_SETFL, O_NONBLOCK);
    sb->sh_hostpid = sb_host_pid(sb, sb->sh_nspid);
    /* The shell and all it starts inherit this score: 0 where init is
     * shielded at -1000 (it would inherit -1000 otherwise), 1000 where it
     * cannot be, so that the OOM killer takes any of them before init.
     * Set before the first command reaches the shell. */
    char adj[64];
    snprintf(adj, sizeof adj, "/proc/%d/oom_score_adj", (int)sb->sh_hostpid);
    if (sb->sh_hostpid <= 0 ||
        sb_write_file(adj, lbsd_host_get()->oom_shield ? "0" : "1000") != 0)
        lb_warn("sandbox %s: cannot set the shell's oom_score_adj: %s", sb->id,
                sb->sh_hostpid > 0 ? strerror(errno) : "its host pid is unknown");
    /* From the first moment on, a SIGINT (how commands are stopped) must
     * not kill the shell itself: each command's wrapper sets its own trap
     * and puts this no-op back (sandbox_exec.c). A fresh pipe has room. */
    static const char first[] = "trap : INT\n";
    if (write(sb->sh_in, first, sizeof first - 1) != (ssize_t)(sizeof first - 1))
        lb_warn("sandbox %s: cannot prime the new shell", sb->id);
    lb_buf_reset(&sb->idle_out);
    lb_buf_reset(&sb->idle_err);
}

/* A new shell for a sandbox that is up (the first one comes with GO, see
 * sb_start_init): SPAWN with the shell's ends, then init's "PID n". */
int lbsd_shell_spawn(lbsd_sandbox *sb, char *msg, size_t msgsz)
{
    sb_pipes pp;
    int rc = LB_E_SANDBOX;
    sb_shell_close(sb);
    if (sb->broken) {
        sb_msg(msg, msgsz, "the sandbox is gone (its init died)");
        return LB_E_SANDBOX;
    }
    if (sb_pipes_open(&pp, msg, msgsz) != LB_OK)
        return LB_E_SANDBOX;
    int fds[3] = {pp.in[0], pp.out[1], pp.err[1]};
    ssize_t w = lbsd_fds_send(sb->ctl_fd, "SPAWN", 5, fds, 3, 0);
    if (w != 5) {
        sb_msg(msg, msgsz, "cannot reach the sandbox init: %s", strerror(errno));
        goto out;
    }
    /* until "PID n" arrives, an "EXIT" of the previous shell may come first */
    int64_t end = lb_mono_ms() + LBSD_CTL_TIMEOUT_MS;
    for (;;) {
        char buf[256];
        int left = (int)(end - lb_mono_ms());
        ssize_t n = left > 0 ? sb_ctl_recv(sb, buf, sizeof buf, left) : 0;
        if (n <= 0) {
            sb_msg(msg, msgsz, "the sandbox init did not start a shell");
            goto out;
        }
        int pid, st;
        if (sscanf(buf, "PID %d", &pid) == 1 && pid > 1) {
            sb_shell_adopt(sb, &pp, pid);
            rc = LB_OK;
            goto out;
        }
        if (sscanf(buf, "EXIT %d %d", &pid, &st) == 2)
            continue; /* the old shell, already replaced */
        if (!strncmp(buf, "ERR ", 4)) {
            sb_msg(msg, msgsz, "sandbox init: %s", buf + 4);
            goto out;
        }
    }
out:
    sb_pipes_close(&pp);
    return rc;
}

/* Creates var/sandboxes/<id>: only a mount point on the host. Init mounts
 * the sandbox's tmpfs on it inside its own mount namespace and builds the
 * writable layer there, owned by the sandbox's root. */
static int sb_prepare_dirs(lbsd_sandbox *sb, char *msg, size_t msgsz)
{
    /* var/sandboxes exists but for the first create (a walk of mkdirs of
     * every component each time showed up in perf) */
    if (mkdir(sb->dir, 0700) == 0)
        return LB_OK;
    if (errno != ENOENT) {
        sb_msg(msg, msgsz, "cannot create %s: %s", sb->dir, strerror(errno));
        return LB_E_SANDBOX;
    }
    char p[LB_CFG_PATH + 128];
    snprintf(p, sizeof p, "%s/sandboxes", sb->cfg->var_dir);
    if (lb_mkdirs(p, 0700) != LB_OK) {
        sb_msg(msg, msgsz, "cannot create %s: %s", p, strerror(errno));
        return LB_E_SANDBOX;
    }
    if (mkdir(sb->dir, 0700) != 0) {
        sb_msg(msg, msgsz, "cannot create %s: %s", sb->dir, strerror(errno));
        return LB_E_SANDBOX;
    }
    return LB_OK;
}

int lbsd_sandbox_load_input(lbsd_sandbox *sb, const char *input_dir, uid_t uid, gid_t gid,
                            char *msg, size_t msgsz)
{
    if (!input_dir)
        return LB_OK;
    /* Through the sandbox's own root, one component at a time and never
     * following a symlink: this also works for a sandbox from the pool, whose
     * writable layer exists only inside its mount namespace. */
    int tfd = openat(sb->root_fd, "testbed", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int dfd = tfd < 0 ? -1
                      : openat(tfd, "input", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (tfd >= 0)
        close(tfd);
    if (dfd < 0) {
        sb_msg(msg, msgsz, "cannot open /testbed/input in the sandbox: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    int rc = lbsd_copy_input(input_dir, dfd, uid, gid, (uid_t)sb->uid_root, msg, msgsz);
    close(dfd);
    return rc;
}

/* Init's setup, from GO to "READY <shell's pid inside>": it asks once for
 * its id maps (after its mounts, before it drops privileges). */
static int sb_wait_ready(lbsd_sandbox *sb, int *nspid, char *msg, size_t msgsz)
{
    int64_t end = lb_mono_ms() + LBSD_INIT_TIMEOUT_MS;
    for (;;) {
        char buf[512];
        int left = (int)(end - lb_mono_ms());
        ssize_t n = left > 0 ? sb_ctl_recv(sb, buf, sizeof buf, left) : 0;
        if (n > 0 && sscanf(buf, "READY %d", nspid) == 1 && *nspid > 1)
            return LB_OK;
        if (n > 0 && !strcmp(buf, "USERNS")) {
            if (lbsd_idmap_write_maps(sb->init_pid, sb->uid_root, msg, msgsz) != LB_OK)
                return LB_E_SANDBOX; /* init exits when it reads EOF at destroy */
            if (send(sb->ctl_fd, "MAPPED", 6, MSG_NOSIGNAL) != 6) {
                sb_msg(msg, msgsz, "the sandbox init died at start");
                return LB_E_SANDBOX;
            }
            continue;
        }
        if (n > 4 && !strncmp(buf, "ERR ", 4))
            sb_msg(msg, msgsz, "sandbox setup failed: %s", buf + 4);
        else
            sb_msg(msg, msgsz, "sandbox setup failed: init %s", n == 0 ? "timed out" : "died");
        return LB_E_SANDBOX;
    }
}

static int sb_start_init(lbsd_sandbox *sb, char *msg, size_t msgsz)
{
    const lb_config *cfg = sb->cfg;
    char p[128];
    const lbsd_image *img = sb->img;
    /* its own range: the image through an idmapped mount (uidslot.h: the
     * namespace for it is made once per slot and kept, up to a bound) */
    int idmap_fd = -1, idmap_make = sb->uid_slot > LBSD_SLOT_NS_CACHED;
    if (sb->uid_slot > 0 && !idmap_make &&
        (idmap_fd = lbsd_slot_userns(sb->uid_slot, msg, msgsz)) < 0)
        return LB_E_SANDBOX;
    lbsd_init_cfg ic = {
        .scratch = sb->dir, .lower = img->lower, .tag = lbsd_install_tag(),
        .lowerdirs = img->layered ? img->lowerdirs : NULL, .hold = img->layered ? img->hold : NULL,
        .workdir = img->workdir, .env = img->env, .envlen = img->envlen, .uid = img->uid, .gid = img->gid,
        .idmap_fd = idmap_fd,
        .idmap_make = idmap_make,
        .idmap_base = cfg->sandbox_uid_base,
        .disk_mib = sb->disk_mib,
        .uid_root = sb->uid_root,
        .rlimit_mode = lbsd_cg_detect() == LBSD_CG_RLIMIT,
        .memory_bytes = (uint64_t)sb->memory_mib << 20,
        .pids = sb->pids,
        .nofile = lbsd_nofile_for(sb->files_budget, sb->pids, lbsd_host_get()->nofile_hard),
        .ptys = cfg->sandbox_ptys,
    };
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        sb_msg(msg, msgsz, "socketpair: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    /* cloned by the zygote, as sandboxd's child (zygote.h) */
    pid_t pid = lbsd_zygote_clone(&ic, sv[1], msg, msgsz);
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return LB_E_SANDBOX;
    }
    close(sv[1]);
    sb->ctl_fd = sv[0];
    sb->init_pid = pid;
    if (lbsd_cg_attach(&sb->cg, pid) != LB_OK) {
        sb_msg(msg, msgsz, "cannot put the sandbox into its cgroups");
        return LB_E_SANDBOX;
    }
    /* init itself must survive the OOM killer; its children reset this.
     * Where sandboxd may not (no CAP_SYS_RESOURCE, found at start) init
     * keeps sandboxd's score and the shell raises its own to 1000 instead
     * (hostlimits.c says which at start). */
    if (lbsd_host_get()->oom_shield) {
        snprintf(p, sizeof p, "/proc/%d/oom_score_adj", (int)pid);
        if (sb_write_file(p, "-1000") != 0)
            lb_warn("sandbox %s: cannot shield init from the OOM killer: %s", sb->id,
                    strerror(errno));
    }
    /* GO carries the first shell's ends of its pipes: init forks the shell
     * as soon as it has dropped its privileges, so bash starts while we
     * finish here and answer, and no SPAWN round trip follows READY */
    sb_pipes pp;
    if (sb_pipes_open(&pp, msg, msgsz) != LB_OK)
        return LB_E_SANDBOX;
    int fds[3] = {pp.in[0], pp.out[1], pp.err[1]}, nspid = 0;
    if (lbsd_fds_send(sb->ctl_fd, "GO", 2, fds, 3, 0) != 2) {
        sb_msg(msg, msgsz, "the sandbox init died at start");
        sb_pipes_close(&pp);
        return LB_E_SANDBOX;
    }
    sb_close(&pp.in[0]); /* init's now: the shell must see EOF when we close ours */
    sb_close(&pp.out[1]);
    sb_close(&pp.err[1]);
    if (sb_wait_ready(sb, &nspid, msg, msgsz) != LB_OK) {
        sb_pipes_close(&pp);
        return LB_E_SANDBOX;
    }
    snprintf(p, sizeof p, "/proc/%d/ns/pid", (int)pid);
    struct stat st;
    if (stat(p, &st) != 0) {
        sb_msg(msg, msgsz, "cannot identify the sandbox pid namespace");
        sb_pipes_close(&pp);
        return LB_E_SANDBOX;
    }
    sb->pidns_dev = (uint64_t)st.st_dev;
    sb->pidns_ino = (uint64_t)st.st_ino;
    /* after pivot_root, init's root is the sandbox's "/": every host-side
     * file operation walks down from this fd and nowhere else */
    snprintf(p, sizeof p, "/proc/%d/root", (int)pid);
    sb->root_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sb->root_fd < 0) {
        sb_msg(msg, msgsz, "cannot open the sandbox root: %s", strerror(errno));
        sb_pipes_close(&pp);
        return LB_E_SANDBOX;
    }
    sb_shell_adopt(sb, &pp, nspid); /* needs pidns_* (sb_host_pid's fallback) */
    return LB_OK;
}

int lbsd_sandbox_make(const lb_config *cfg, const lbsd_req *req, lbsd_sandbox **out, char *msg,
                      size_t msgsz)
{
    *out = NULL;
    int rc = LB_E_SANDBOX;
    lbsd_sandbox *sb = calloc(1, sizeof *sb);
    if (!sb) {
        sb_msg(msg, msgsz, "out of memory");
        return LB_E_NOMEM;
    }
    sb->cfg = cfg;
    sb->ctl_fd = sb->root_fd = sb->sh_in = sb->sh_out = sb->sh_err = -1;
    sb->created_ms = lb_mono_ms();
    lb_buf_init(&sb->idle_out, LBSD_IDLE_MAX);
    lb_buf_init(&sb->idle_err, LBSD_IDLE_MAX);
    const char *img = req->image[0] ? req->image : cfg->default_image;
    if (strlen(img) >= sizeof sb->image) {
        sb_msg(msg, msgsz, "image name too long");
        rc = LB_E_INVAL;
        goto fail;
    }
    memcpy(sb->image, img, strlen(img) + 1);
    sb->memory_mib = req->memory_mib ? req->memory_mib : cfg->sandbox_memory_mib;
    sb->pids = req->pids ? req->pids : cfg->sandbox_pids;
    sb->cpu_milli = req->cpu_milli ? req->cpu_milli : cfg->sandbox_cpu_milli;
    sb->disk_mib = req->disk_mib ? req->disk_mib : cfg->sandbox_disk_mib;
    /* the disk is RAM of the sandbox's own: leave room to run the `rm`
     * that empties it (hostlimits.h); said in the created line */
    int disk_asked = sb->disk_mib;
    sb->disk_mib = lbsd_disk_fit(sb->memory_mib, sb->disk_mib);
    sb->files_budget = lbsd_host_get()->files_budget;

    /* a debootstrap root or a layered image's record (image_layers.h) */
    if (!(sb->img = malloc(sizeof *sb->img))) {
        sb_msg(msg, msgsz, "out of memory");
        rc = LB_E_NOMEM;
        goto fail;
    }
    if ((rc = lbsd_image_resolve(cfg, sb->image, sb->img, msg, msgsz)) != LB_OK)
        goto fail;
    /* its own host uid range, so that the kernel's per-uid counters are
     * its own (uidslot.h) */
    if ((rc = lbsd_slot_take(&sb->uid_slot, msg, msgsz)) != LB_OK)
        goto fail;
    sb->slot_held = 1;
    sb->uid_root = lbsd_slot_root(sb->uid_slot);
    rc = LB_E_SANDBOX;
    if (lb_random_hex(sb->id, sizeof sb->id, LB_ID_HEX_LEN / 2) != LB_OK) {
        sb_msg(msg, msgsz, "no randomness for the sandbox id");
        goto fail;
    }
    snprintf(sb->dir, sizeof sb->dir, "%s/sandboxes/%s", cfg->var_dir, sb->id);
    if (lbsd_cg_create(&sb->cg, sb->id, (uint64_t)sb->memory_mib << 20, sb->pids,
                       sb->cpu_milli) != LB_OK) {
        sb_msg(msg, msgsz, "cannot create the sandbox cgroups");
        goto fail;
    }
    if ((rc = sb_prepare_dirs(sb, msg, msgsz)) != LB_OK)
        goto fail;
    rc = LB_E_SANDBOX;
    if (sb_start_init(sb, msg, msgsz) != LB_OK)
        goto fail;
    char lowered[160] = "";
    if (sb->disk_mib < disk_asked)
        snprintf(lowered, sizeof lowered, " (of %d asked: its tmpfs pages leave %d MiB of the memory "
                 "free, so a full disk answers ENOSPC, not an OOM kill)",
                 disk_asked, LBSD_HEADROOM_MIB(sb->memory_mib));
    lb_info("sandbox %s created (image %s, %d MiB, %d pids, %d milli-cpu, %d MiB disk%s, uid slot "
            "%d, %lld ms)",
            sb->id, sb->image, sb->memory_mib, sb->pids, sb->cpu_milli, sb->disk_mib, lowered,
            sb->uid_slot, (long long)(lb_mono_ms() - sb->created_ms));
    *out = sb;
    return LB_OK;
fail:
    lb_warn("sandbox create failed: %s", msg);
    lbsd_sandbox_destroy(sb);
    return rc;
}

int lbsd_sandbox_create(const lb_config *cfg, const lbsd_req *req, lbsd_conn *owner,
                        lbsd_sandbox **out, char *msg, size_t msgsz)
{
    lbsd_sandbox *sb;
    int rc = lbsd_sandbox_make(cfg, req, &sb, msg, msgsz);
    if (rc)
        return rc;
    sb->owner = owner;
    rc = lbsd_sandbox_load_input(sb, req->input_dir, owner->uid, owner->gid, msg, msgsz);
    if (rc) {
        lb_warn("sandbox %s: input copy failed: %s", sb->id, msg);
        lbsd_sandbox_destroy(sb);
        return rc;
    }
    *out = sb;
    return LB_OK;
}

/* Reaps init, waiting up to timeout_ms. The kernel only lets pid 1 of a
 * namespace finish dying once every other process in it is gone, so a
 * reaped init means an empty sandbox. Waits on a pidfd (readable when init
 * has exited) instead of sleeping in 1 ms steps: init usually goes within
 * a millisecond of its SIGKILL, and the steps were most of the wait. */
static int sb_reap_init(lbsd_sandbox *sb, int timeout_ms)
{
    if (sb->init_pid <= 0 || sb->init_reaped)
        return 1;
    /* ESRCH: the loop has reaped it already (lbsd_reap) */
    int pfd = (int)syscall(SYS_pidfd_open, sb->init_pid, 0);
    if (pfd < 0 && errno == ESRCH) {
        sb->init_reaped = 1;
        return 1;
    }
    int64_t end = lb_mono_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t r = waitpid(sb->init_pid, &st, WNOHANG);
        if (r == sb->init_pid || (r < 0 && errno == ECHILD)) {
            sb->init_reaped = 1;
            break;
        }
        int64_t left = end - lb_mono_ms();
        if (left <= 0)
            break;
        if (pfd >= 0) {
            struct pollfd p = {.fd = pfd, .events = POLLIN};
            if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
                sb_close(&pfd); /* the sleeps below, then */
        } else {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (pfd >= 0)
        close(pfd);
    return sb->init_reaped;
}

void lbsd_sandbox_destroy(lbsd_sandbox *sb)
{
    if (!sb)
        return;
    lbsd_exec_abandon(sb);
    sb_shell_close(sb);
    sb_close(&sb->root_fd); /* holds the overlay mount alive otherwise */
    if (sb->init_pid > 0 && !sb->init_reaped) {
        /* Killing init takes the whole sandbox down: every process of the
         * sandbox is in init's pid namespace (nothing enters it from
         * outside, and a nested one is inside it), and when its pid 1 dies
         * the kernel first stops all pid allocation in it (a fork there
         * fails from then on, so a fork bomb cannot outrun it) and then
         * SIGKILLs every member (zap_pid_ns_processes). v2's cgroup.kill
         * does the same at once and costs nothing to wait for, so it stays;
         * v1's freeze + kill + thaw waited for the freezer (1 ms steps) for
         * no more than that, and is gone from this path (sandboxd v2, part 4):
         * v1 kills what its groups list once instead, without a wait.
         * A cgroup-frozen sandbox is thawed after the kill: its members die
         * as they thaw. */
        if (sb->cg.v2[0])
            LB_IGNORE(lbsd_cg_kill(&sb->cg)); /* init's SIGKILL below is what counts */
        kill(sb->init_pid, SIGKILL);
        /* v1: and whatever the groups list besides, should anything of the
         * sandbox ever live outside its pid namespace (one read, no wait) */
        if (!sb->cg.v2[0])
            lbsd_cg_kill_members(&sb->cg);
        if (sb->frozen == LBSD_FROZEN_CGROUP)
            LB_IGNORE(lbsd_cg_freeze(&sb->cg, 0)); /* a refusal leaves init unreaped: logged below */
        if (!sb_reap_init(sb, 10000))
            lb_error("sandbox %s: init %d did not die within 10 s", sb->id, (int)sb->init_pid);
    }
    sb_close(&sb->ctl_fd);
    /* A reaped init means no process of the sandbox is left (see
     * sb_reap_init): its host ids are free for the next sandbox. Otherwise
     * the slot stays taken for the life of sandboxd rather than be shared. */
    if (sb->slot_held) {
        if (sb->init_pid <= 0 || sb->init_reaped)
            lbsd_slot_release(sb->uid_slot);
        else
            lb_error("sandbox %s: uid slot %d stays taken: its init %d is still alive", sb->id,
                     sb->uid_slot, (int)sb->init_pid);
        sb->slot_held = 0;
    }
    lbsd_net_detach(sb); /* its slirp4netns, before the cgroups it sits in */
    /* with init reaped nothing of the sandbox is left in its groups: they
     * may serve the next create (cgroup.h, lbsd_cg_retire) */
    int cg_rc = !sb->cg.made ? LB_OK
                : sb->init_pid > 0 && sb->init_reaped
                    ? lbsd_cg_retire(&sb->cg, (uint64_t)sb->memory_mib << 20)
                    : lbsd_cg_remove(&sb->cg);
    if (cg_rc != LB_OK)
        lb_warn("sandbox %s: cannot remove its cgroups (the next start removes them): %s",
                sb->id, strerror(errno));
    /* The dir is only a mount point on the host (init mounts on it in its
     * own namespace), so it is empty but for the nat helper's log: one
     * rmdir, and the full removal (which first reads the host's whole
     * mountinfo for mounts under it) only when that is refused. */
    if (sb->dir[0] && rmdir(sb->dir) != 0 && errno != ENOENT &&
        lbsd_rmtree_force(sb->dir) != LB_OK)
        lb_warn("sandbox %s: cannot remove %s: %s", sb->id, sb->dir, strerror(errno));
    if (sb->init_pid > 0)
        lb_info("sandbox %s destroyed", sb->id);
    lb_buf_free(&sb->idle_out);
    lb_buf_free(&sb->idle_err);
    free(sb->img);
    free(sb);
}

void lbsd_cleanup_stale(const lb_config *cfg)
{
    char p[LB_CFG_PATH + 32];
    snprintf(p, sizeof p, "%s/sandboxes", cfg->var_dir);
    DIR *d = opendir(p);
    int n = 0;
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            char q[LB_CFG_PATH + 300];
            snprintf(q, sizeof q, "%s/%s", p, de->d_name);
            if (lbsd_rmtree_force(q) == LB_OK)
                n++;
            else
                lb_warn("cannot remove stale %s: %s", q, strerror(errno));
        }
        closedir(d);
    }
    if (n)
        lb_info("removed %d stale sandbox dir(s) under %s", n, p);
    lbsd_cg_cleanup_stale();
}

int lbsd_paths_ok(const lb_config *cfg)
{
    return sb_path_ok(cfg->var_dir) && sb_path_ok(cfg->image_store);
}

void lbsd_note_gone(lbsd_sandbox *sb)
{
    if (sb->gone_why[0])
        return;
    if (lbsd_cg_oom_kills(&sb->cg) > 0)
        snprintf(sb->gone_why, sizeof sb->gone_why,
                 "its init was killed by the OOM killer (memory limit %d MiB reached; %s)",
                 sb->memory_mib,
                 lbsd_host_get()->oom_shield
                     ? "init is shielded here, so the kernel had nothing else to kill"
                     : "this host cannot shield init, and nothing else was left to kill");
    else
        snprintf(sb->gone_why, sizeof sb->gone_why, "its init died");
}
