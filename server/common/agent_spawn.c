/* Starting agent processes, shared by the web (web/spawn.c) and the
 * nodes (node/node_agents.c, several nodes); the contract is agent_spawn.h. */
#include "common/agent_spawn.h"

#include "common/config.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Attributes every child gets: own session (optional), empty signal mask,
 * default actions for the signals we block or ignore in the web. */
int lb_spawn_attr(posix_spawnattr_t *at, int setsid)
{
    sigset_t none, defs;
    sigemptyset(&none);
    sigemptyset(&defs);
    int sigs[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&defs, sigs[i]);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (setsid ? POSIX_SPAWN_SETSID : 0);
    if (posix_spawnattr_init(at) != 0)
        return LB_E_NOMEM;
    if (posix_spawnattr_setflags(at, flags) || posix_spawnattr_setsigmask(at, &none) ||
        posix_spawnattr_setsigdefault(at, &defs)) {
        posix_spawnattr_destroy(at);
        return LB_E_INTERNAL;
    }
    return LB_OK;
}

int lb_agent_log_open(const lb_config *cfg, const char *id, char *err, size_t errsz)
{
    char logdir[LB_CFG_PATH + 16], logpath[LB_CFG_PATH + 64];
    lb_cfg_logdir(cfg, logdir, sizeof logdir);
    snprintf(logpath, sizeof logpath, "%s/agent-%s.log", logdir, id);
    if (lb_mkdirs(logdir, 0750) != LB_OK) {
        snprintf(err, errsz, "cannot create the log folder %s: %s", logdir, strerror(errno));
        return -1;
    }
    int logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (logfd < 0)
        snprintf(err, errsz, "cannot open the agent log %s: %s", logpath, strerror(errno));
    return logfd;
}

int lb_agent_spawn_files(posix_spawn_file_actions_t *fa, int logfd)
{
    if (posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0) ||
        posix_spawn_file_actions_adddup2(fa, logfd, 1) || posix_spawn_file_actions_adddup2(fa, logfd, 2) ||
        posix_spawn_file_actions_addclosefrom_np(fa, 3))
        return LB_E_NOMEM;
    return LB_OK;
}

/* True when pid is an `llmbox agent` running task id: after a restart a
 * recorded pid may belong to any process, so the command line decides. */
int lb_agent_alive(int pid, const char *id)
{
    if (pid <= 0)
        return 0;
    char path[64], cmd[4096];
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    /* /proc files report size 0, so read until EOF rather than by size */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, cmd + len, sizeof cmd - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == sizeof cmd - 1)
            break;
    }
    close(fd);
    cmd[len] = '\0';
    int agent = 0, task = 0;
    for (size_t i = 0; i < len; i += strlen(cmd + i) + 1) {
        if (!strcmp(cmd + i, "agent"))
            agent = 1;
        if (!strcmp(cmd + i, id))
            task = 1;
    }
    return agent && task;
}

