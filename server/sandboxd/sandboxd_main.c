/*
 * `llmbox-sandboxd [--socket PATH]` (also `llmbox sandboxd`, which execs
 * it): the sandbox daemon, the only process of llmbox that runs as root. Sets up the listening socket so that the
 * unprivileged web/agent user can connect, removes what a previous run
 * left behind, then runs the event loop (sandboxd.c).
 */
#include "sandboxd/sandboxd_main.h"

#include "entry.h"
#include "sandboxd/filewatch.h"
#include "sandboxd/hostlimits.h"
#include "sandboxd/sandbox_egress.h"
#include "sandboxd/idmap.h"
#include "sandboxd/sandbox_save.h"
#include "sandboxd/uidslot.h"
#include "sandboxd/objects.h"
#include "sandboxd/sandboxd.h"
#include "sandboxd/sandbox_create.h"
#include "sandboxd/pool.h"
#include "sandboxd/sandbox_net.h"
#include "sandboxd/stale.h"
#include "sandboxd/zygote.h"

#include "common/log.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void sd_usage(const lb_config *cfg, FILE *f)
{
    fprintf(f, "usage: llmbox sandboxd [--socket PATH]\n"
               "  Serves the sandbox RPC on a unix socket (default %s).\n"
               "  Must run as root. The socket is mode 0660, group of LLMBOX_WEB_USER.\n",
            cfg->sandboxd_socket);
}

/* Binds the socket; refuses to steal it from a running sandboxd. */
static int sd_listen(const char *path, const char *web_user)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        lb_error("socket path too long: %s", path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    char dir[LB_CFG_PATH];
    snprintf(dir, sizeof dir, "%s", path);
    char *d = dirname(dir);
    if (lb_mkdirs(d, 0755) != LB_OK) {
        lb_error("cannot create %s: %s", d, strerror(errno));
        return -1;
    }
    /* the dir must be traversable by the web user; it usually is var/run */
    chmod(d, 0755);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            lb_error("%s exists and is not a socket; refusing to replace it", path);
            close(fd);
            return -1;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
            lb_error("another sandboxd is already listening on %s", path);
            close(probe);
            close(fd);
            return -1;
        }
        if (probe >= 0)
            close(probe);
        unlink(path); /* stale, from a run that died */
    }
    mode_t old = umask(0177);
    int r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (r != 0 || listen(fd, 64) != 0) {
        lb_error("cannot listen on %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    gid_t gid = 0;
    const char *user = web_user;
    if (user[0]) {
        struct passwd *pw = getpwnam(user);
        if (pw)
            gid = pw->pw_gid;
        else
            lb_warn("LLMBOX_WEB_USER '%s' does not exist; the socket stays root-only", user);
    } else {
        lb_warn("LLMBOX_WEB_USER is not set: only root can connect to %s", path);
    }
    if (chown(path, 0, gid) != 0 || chmod(path, 0660) != 0) {
        lb_error("cannot set the owner/mode of %s: %s", path, strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    return fd;
}

/* Each sandbox holds LBSD_FDS_PER_SANDBOX fds here, each connection one,
 * and creating or destroying a sandbox opens a few more for a moment: with
 * the usual soft limit of 1024 sandboxd would fail near 200 sandboxes with
 * EMFILE. So it takes as many as the kernel allows a process (fs.nr_open),
 * the hard limit too where it has CAP_SYS_RESOURCE, and says what it got. */
static void sd_raise_nofile(int sandbox_max, int max_conns)
{
    unsigned long long need =
        (unsigned long long)sandbox_max * LBSD_FDS_PER_SANDBOX + (unsigned long long)max_conns + 256;
    unsigned long long nr_open = 0;
    FILE *f = fopen("/proc/sys/fs/nr_open", "re");
    if (f) {
        if (fscanf(f, "%llu", &nr_open) != 1)
            nr_open = 0;
        fclose(f);
    }
    unsigned long long want = nr_open > need ? nr_open : need;
    unsigned long long have = lb_raise_nofile(want);
    lb_info("open-file limit %llu (fs.nr_open %llu; LLMBOX_SANDBOX_MAX=%d needs %llu)", have,
            nr_open, sandbox_max, need);
    if (have < need)
        lb_warn("open-file limit %llu is below the %llu that LLMBOX_SANDBOX_MAX=%d needs: "
                "creates may fail with 'too many open files' before that many sandboxes",
                have, need, sandbox_max);
}

int lbsd_serve_main(int argc, char **argv)
{
    lb_config *cfg = lb_cfg_mut();
    lb_log_init("sandboxd");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
            if ((size_t)snprintf(cfg->sandboxd_socket, sizeof cfg->sandboxd_socket, "%s",
                                 argv[++i]) >= sizeof cfg->sandboxd_socket) {
                fprintf(stderr, "llmbox sandboxd: --socket path too long\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            sd_usage(cfg, stdout);
            return 0;
        } else {
            sd_usage(cfg, stderr);
            return 2;
        }
    }
    if (geteuid() != 0) {
        fprintf(stderr, "llmbox sandboxd: must run as root (it creates namespaces, mounts and "
                        "cgroups)\n");
        return 1;
    }
    /* names this installation's cgroups and helpers from here on */
    lbsd_install_tag_init(cfg->var_dir);
    if (!lbsd_paths_ok(cfg)) {
        fprintf(stderr, "llmbox sandboxd: var dir (%s) and image store (%s) must be absolute "
                        "paths without ',', ':' or '\\' (overlayfs options cannot carry them)\n",
                cfg->var_dir, cfg->image_store);
        return 1;
    }
    /* Supplementary groups would count in the client-rights checks of the
     * input copy (setfsuid does not touch them); root needs none. */
    if (setgroups(0, NULL) != 0)
        lb_warn("setgroups: %s", strerror(errno));
    signal(SIGPIPE, SIG_IGN);
    umask(022);
    sd_raise_nofile(cfg->sandbox_max, cfg->sandboxd_max_conns);

    char p[LB_CFG_PATH + 32];
    snprintf(p, sizeof p, "%s/sandboxes", cfg->var_dir);
    if (lb_mkdirs(p, 0700) != LB_OK || chmod(p, 0700) != 0) {
        lb_error("cannot create %s: %s", p, strerror(errno));
        return 1;
    }
    char msg[512];
    if (lbsd_net_check_config(cfg->network_allow, msg, sizeof msg) != LB_OK) {
        fprintf(stderr, "llmbox sandboxd: %s\n", msg);
        return 1;
    }
    lbsd_egress_configure(cfg); /* network rules: refused with a reason when this host cannot */
    /* the lock and the socket first: a second sandboxd on the same var dir
     * must be refused before it cleans up the live sandboxes of the first */
    if (lbsd_lock_var(cfg->var_dir, msg, sizeof msg) < 0) {
        fprintf(stderr, "llmbox sandboxd: %s\n", msg);
        return 1;
    }
    int lfd = sd_listen(cfg->sandboxd_socket, cfg->web_user);
    if (lfd < 0)
        return 1;
    lbsd_cg_detect();
    /* the host pools one sandbox could drain: what is assumed, logged */
    lbsd_host_init(cfg);
    lbsd_filewatch_init();
    /* what a previous run left (even after kill -9): its processes, then
     * its scratch dirs and cgroups */
    lbsd_kill_stale_procs();
    lbsd_cleanup_stale(cfg);
    lbsd_egress_cleanup_stale(); /* gateway folders of sandboxes that died with it */
    lbsd_state_startup(cfg); /* follow-ups: saved states' store; saves cut short go */
    /* once per image (and after a change of LLMBOX_SANDBOX_UID_BASE) */
    lbsd_idmap_startup(cfg->image_store, cfg->sandbox_uid_base);
    /* one host uid range per sandbox, or the shared one (and why) */
    lbsd_slot_init(cfg);
    /* before lbsd_serve starts the worker threads (zygote.h) */
    if (lbsd_zygote_start(msg, sizeof msg) != LB_OK) {
        fprintf(stderr, "llmbox sandboxd: %s\n", msg);
        close(lfd);
        unlink(cfg->sandboxd_socket);
        return 1;
    }
    lbsd_pool_init(cfg);
    lb_info("sandboxd %s listening on %s (images in %s, cgroup %s)", LLMBOX_VERSION,
            cfg->sandboxd_socket, cfg->image_store, lbsd_cg_mode_name(lbsd_cg_detect()));
    int rc = lbsd_serve(cfg, lfd);
    lbsd_zygote_stop();
    close(lfd);
    unlink(cfg->sandboxd_socket);
    lb_info("sandboxd stopped");
    return rc;
}
