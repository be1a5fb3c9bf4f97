/*
 * A sandbox whose network is a policy of rules: its only way out is the
 * gateway (server/netgw/), and this file builds the road to it. As root it
 *   1. makes a gateway network namespace, owned by the host's user
 *      namespace (sandbox root cannot enter or change it), and in it the
 *      two sockets the gateway will serve: TCP :15001 and UDP :53;
 *   2. makes a veth pair: gw0 (10.200.0.1/30) stays in the gateway
 *      namespace, eth0 (10.200.0.2/30, default route via gw0) goes into
 *      the sandbox's namespace;
 *   3. loads nftables rules into the gateway namespace: every TCP
 *      connection from gw0 is redirected to :15001 (the gateway reads its
 *      original destination), every UDP packet to port 53 to :53; all else
 *      (other UDP, ICMP, raw IP, forwarding) is rejected at once, so a
 *      refusal is an error in the sandbox, never a hang;
 *   4. starts `llmbox netgw` with those sockets as fds 3 and 4, in the
 *      host's network namespace (where its upstream connections go), as an
 *      unprivileged user (the creating connection's, or nobody when that is
 *      root), with no new privileges, killed when sandboxd dies.
 * The gateway namespace lives as long as sandboxd keeps its fd or any of
 * its sockets is open; detach closes both.
 *
 * Files: <var>/netgw/<sandbox id>/ belongs to the gateway's user: policy
 * (written here, replaced by the web on PATCH, then SIGHUP), record.jsonl
 * (the gateway's), netgw.log (its stderr), pid. The folder goes when the
 * sandbox ends (detach), and a restarted sandboxd removes what a killed one
 * left (lbsd_egress_cleanup_stale): a record that must outlive its sandbox
 * is copied out by whoever needs it before the end (a task's, by its agent:
 * common/netrecord.h).
 */
#include "sandboxd/sandbox_egress.h"

#include "sandboxd/egress_secrets.h"
#include "sandboxd/objects.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define EG_TCP_PORT 15001
#define EG_CMD_TIMEOUT_MS 5000
#define EG_NOBODY 65534

static const char EG_RULES[] =
    "table inet llmbox_egress {\n"
    "  chain sb_pre {\n"
    "    type nat hook prerouting priority dstnat; policy accept;\n"
    "    iifname \"gw0\" udp dport 53 redirect to :53\n"
    "    iifname \"gw0\" meta l4proto tcp redirect to :15001\n"
    "  }\n"
    "  chain sb_in {\n"
    "    type filter hook input priority filter; policy drop;\n"
    "    iifname \"lo\" accept\n"
    "    ct state established,related accept\n"
    "    iifname \"gw0\" udp dport 53 accept\n"
    "    iifname \"gw0\" tcp dport 15001 ct status dnat accept\n"
    "    meta l4proto tcp reject with tcp reset\n"
    "    reject with icmpx type admin-prohibited\n"
    "  }\n"
    "  chain sb_fwd {\n"
    "    type filter hook forward priority filter; policy drop;\n"
    "    meta l4proto tcp reject with tcp reset\n"
    "    reject with icmpx type admin-prohibited\n"
    "  }\n"
    "}\n";

typedef struct eg {
    char id[LB_ID_HEX_LEN + 1];
    const void *conn;     /* stashed: the connection whose create it is for */
    char *policy;         /* stashed policy text, until attach */
    char *values;         /* stashed transform values (egress_secrets.h), until attach; wiped when freed */
    pid_t gw;             /* the gateway, 0 when none */
    int reaped;
    int nsfd;             /* the gateway namespace */
    struct eg *next;
} eg;

static eg *g_eg;
static int g_enabled;
static char g_ip[64], g_nft[64], g_gwexe[LB_CFG_PATH + 16], g_dir[LB_CFG_PATH + 16], g_why[LB_CFG_PATH + 128];

static const char *first_exec(const char *const *cand, size_t n, char *out, size_t outsz)
{
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (access(cand[i], X_OK) == 0) {
            snprintf(out, outsz, "%s", cand[i]);
            break;
        }
    return out;
}

void lbsd_egress_configure(const lb_config *cfg)
{
    /* fixed lists, not $PATH: root runs what it finds */
    static const char *const ip[] = {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"};
    static const char *const nft[] = {"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"};
    first_exec(ip, sizeof ip / sizeof ip[0], g_ip, sizeof g_ip);
    first_exec(nft, sizeof nft / sizeof nft[0], g_nft, sizeof g_nft);
    const char *slash = strrchr(cfg->self_exe, '/');
    int dl = slash ? (int)(slash - cfg->self_exe) : 1;
    snprintf(g_gwexe, sizeof g_gwexe, "%.*s/llmbox", dl, slash ? cfg->self_exe : ".");
    snprintf(g_dir, sizeof g_dir, "%s/netgw", cfg->var_dir);
    lbsd_egsec_configure(cfg); /* secrets, bandwidth (egress_secrets.h) */
    g_enabled = 0;
    if (!cfg->network_egress_max[0])
        snprintf(g_why, sizeof g_why, "this host allows no network rules (network_egress_max is empty)");
    else if (!g_ip[0] || !g_nft[0])
        snprintf(g_why, sizeof g_why, "network rules need ip and nft on this host (apt-get install iproute2 "
                                      "nftables)");
    else if (access(g_gwexe, X_OK) != 0)
        snprintf(g_why, sizeof g_why, "the network gateway %s is missing", g_gwexe);
    else if (mkdir(g_dir, 0711) != 0 && errno != EEXIST)
        snprintf(g_why, sizeof g_why, "cannot make %s: %s", g_dir, strerror(errno));
    else
        g_enabled = 1;
    if (!g_enabled && cfg->network_egress_max[0])
        lb_warn("sandboxes with network rules will be refused: %s", g_why);
}

int lbsd_egress_enabled(void)
{
    return g_enabled;
}


int lbsd_egress_stash(const void *conn, const char *policy, const char *values)
{
    eg *e = calloc(1, sizeof *e);
    if (!e || !(e->policy = strdup(policy)) || (values && !(e->values = strdup(values)))) {
        if (e)
            free(e->policy);
        free(e);
        return LB_E_NOMEM;
    }
    for (eg **pp = &g_eg; *pp; pp = &(*pp)->next)
        if ((*pp)->conn == conn && !(*pp)->id[0]) { /* an earlier create that never attached */
            eg *old = *pp;
            *pp = old->next;
            free(old->policy);
            lb_free_wiped(old->values);
            free(old);
            break;
        }
    e->conn = conn;
    e->nsfd = -1;
    e->next = g_eg;
    g_eg = e;
    return LB_OK;
}

/* Removes <g_dir>/<id>/ and what is in it. The folder is the gateway's
 * user's, so its entries are unlinked relative to a descriptor of the
 * folder opened without following links: nothing in it can send root
 * elsewhere. The gateway makes no subfolders; an empty one is removed, a
 * full one left and logged. */
static void rm_gw_dir(const char *id)
{
    if (!lb_id_valid(id))
        return;
    char dir[LB_CFG_PATH + 64];
    snprintf(dir, sizeof dir, "%s/%s", g_dir, id);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            lb_warn("egress: cannot open %s to remove it: %s", dir, strerror(errno));
        return;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        lb_warn("egress: cannot read %s to remove it: %s", dir, strerror(errno));
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (unlinkat(fd, de->d_name, 0) != 0 && (errno != EISDIR || unlinkat(fd, de->d_name, AT_REMOVEDIR) != 0))
            lb_warn("egress: cannot remove %s/%s: %s", dir, de->d_name, strerror(errno));
    }
    closedir(d);
    if (rmdir(dir) != 0)
        lb_warn("egress: cannot remove %s: %s", dir, strerror(errno));
}

void lbsd_egress_cleanup_stale(void)
{
    DIR *d = g_dir[0] ? opendir(g_dir) : NULL;
    if (!d)
        return; /* none yet, or rules were never on here */
    /* no sandbox of an earlier sandboxd lives on (lbsd_kill_stale_procs),
     * so every gateway folder is a leftover; collected first, removed
     * after, so that readdir never walks a folder that changes under it */
    char (*ids)[LB_ID_HEX_LEN + 1] = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!lb_id_valid(de->d_name))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            void *g = realloc(ids, nc * sizeof *ids);
            if (!g)
                break; /* the rest wait for the next start */
            ids = g;
            cap = nc;
        }
        memcpy(ids[n++], de->d_name, LB_ID_HEX_LEN + 1); /* lb_id_valid: exactly that long */
    }
    closedir(d);
    for (size_t i = 0; i < n; i++)
        rm_gw_dir(ids[i]);
    if (n)
        lb_info("egress: removed %zu gateway folder(s) a previous sandboxd left in %s", n, g_dir);
    free(ids);
}

static void eg_free(eg *e)
{
    if (e->id[0])
        rm_gw_dir(e->id); /* a detach, or an attach that failed after naming it */
    for (eg **pp = &g_eg; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    if (e->nsfd >= 0)
        close(e->nsfd);
    free(e->policy);
    lb_free_wiped(e->values);
    free(e);
}

/* Runs argv in the network namespace nsfd with input on stdin; LB_OK when
 * it exits 0 within EG_CMD_TIMEOUT_MS, else its stderr in msg. */
static int run_in(int nsfd, char *const argv[], const char *input, char *msg, size_t msgsz)
{
    int in[2] = {-1, -1}, er[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(er, O_CLOEXEC) != 0) {
        snprintf(msg, msgsz, "pipe: %s", strerror(errno));
        goto fail;
    }
    pid_t pid = fork(); /* the child only joins the namespace and execs */
    if (pid < 0) {
        snprintf(msg, msgsz, "fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        if (setns(nsfd, CLONE_NEWNET) != 0 || dup2(in[0], 0) < 0 || dup2(er[1], 1) < 0 || dup2(er[1], 2) < 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(er[1]);
    in[0] = er[1] = -1;
    if (input && lb_write_all(in[1], input, strlen(input)) != LB_OK)
        lb_debug("egress: %s did not take its input", argv[0]); /* its exit status tells */
    close(in[1]);
    in[1] = -1;
    char out[512];
    size_t n = 0;
    int64_t end = lb_mono_ms() + EG_CMD_TIMEOUT_MS;
    for (;;) {
        struct pollfd p = {.fd = er[0], .events = POLLIN};
        int left = (int)(end - lb_mono_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        ssize_t r = read(er[0], out + n, sizeof out - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == sizeof out - 1)
            break;
    }
    out[n] = '\0';
    close(er[0]);
    er[0] = -1;
    int st = 0;
    pid_t w;
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 && lb_mono_ms() < end + 1000)
        usleep(2000);
    if (w != pid) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        snprintf(msg, msgsz, "%s did not finish in time", argv[0]);
        return LB_E_SANDBOX;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
            out[--n] = '\0';
        snprintf(msg, msgsz, "%s %s failed: %s", argv[0], argv[1], n ? out : "no message");
        return LB_E_SANDBOX;
    }
    return LB_OK;
fail:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (er[i] >= 0)
            close(er[i]);
    }
    return LB_E_SANDBOX;
}

/* Makes the gateway namespace (its fd into *nsfd) and the two sockets in
 * it, from this thread, which returns to the host's namespace after. */
static int make_ns(int *nsfd, int *tcp, int *udp, char *msg, size_t msgsz)
{
    *nsfd = *tcp = *udp = -1;
    int host = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (host < 0) {
        snprintf(msg, msgsz, "cannot open this thread's network namespace: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    int rc = LB_E_SANDBOX;
    if (unshare(CLONE_NEWNET) != 0) {
        snprintf(msg, msgsz, "cannot make the gateway's network namespace: %s", strerror(errno));
        close(host);
        return rc;
    }
    *nsfd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    int one = 1;
    *tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    *udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (*nsfd < 0 || *tcp < 0 || *udp < 0) {
        snprintf(msg, msgsz, "cannot make the gateway's sockets: %s", strerror(errno));
        goto out;
    }
    setsockopt(*tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    a.sin_port = htons(EG_TCP_PORT);
    if (bind(*tcp, (struct sockaddr *)&a, sizeof a) != 0 || listen(*tcp, 128) != 0) {
        snprintf(msg, msgsz, "cannot listen on the gateway's TCP port: %s", strerror(errno));
        goto out;
    }
    a.sin_port = htons(53);
    if (bind(*udp, (struct sockaddr *)&a, sizeof a) != 0) {
        snprintf(msg, msgsz, "cannot bind the gateway's DNS port: %s", strerror(errno));
        goto out;
    }
    /* forwarding on, so that what is not for the gateway meets the
     * forward chain's reject instead of silence; no redirects and no ICMP
     * rate limit, so that every refusal is an error at once (a redirect
     * would spend the rate limit's token the reject needs) */
    static const char *const knobs[][2] = {
        {"/proc/sys/net/ipv4/conf/all/send_redirects", "0\n"},
        {"/proc/sys/net/ipv4/conf/default/send_redirects", "0\n"},
        {"/proc/sys/net/ipv4/icmp_ratelimit", "0\n"},
        {"/proc/sys/net/ipv4/ip_forward", "1\n"},
    };
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        int f = open(knobs[i][0], O_WRONLY | O_CLOEXEC);
        if (f < 0 || write(f, knobs[i][1], 2) != 2) {
            snprintf(msg, msgsz, "cannot set %s in the gateway's namespace: %s", knobs[i][0], strerror(errno));
            if (f >= 0)
                close(f);
            goto out;
        }
        close(f);
    }
    rc = LB_OK;
out:
    if (setns(host, CLONE_NEWNET) != 0) {
        /* this thread would serve other sandboxes from the wrong namespace */
        lb_error("egress: cannot return to the host's network namespace: %s", strerror(errno));
        abort();
    }
    close(host);
    if (rc != LB_OK) {
        for (int *p = nsfd; p; p = p == nsfd ? tcp : p == tcp ? udp : NULL)
            if (*p >= 0) {
                close(*p);
                *p = -1;
            }
    }
    return rc;
}

/* The namespaces wired: veth, addresses, routes, rules. */
static int wire(int nsfd, pid_t init_pid, char *msg, size_t msgsz)
{
    char pidarg[16];
    snprintf(pidarg, sizeof pidarg, "%d", (int)init_pid);
    char *ip = g_ip, *nft = g_nft;
    char *const gw_cmds[][12] = {
        {ip, "link", "set", "lo", "up", NULL},
        {ip, "link", "add", "gw0", "type", "veth", "peer", "name", "eth0", "netns", pidarg, NULL},
        {ip, "addr", "add", "10.200.0.1/30", "dev", "gw0", NULL},
        {ip, "link", "set", "gw0", "up", NULL},
        /* a route for everything, back to the sandbox: what is not for the
         * gateway is forwarded, so it meets the forward chain's reject */
        {ip, "route", "add", "default", "dev", "gw0", NULL},
    };
    for (size_t i = 0; i < sizeof gw_cmds / sizeof gw_cmds[0]; i++)
        if (run_in(nsfd, gw_cmds[i], NULL, msg, msgsz) != LB_OK)
            return LB_E_SANDBOX;
    char *const nft_cmd[] = {nft, "-f", "-", NULL};
    if (run_in(nsfd, nft_cmd, EG_RULES, msg, msgsz) != LB_OK)
        return LB_E_SANDBOX;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/net", (int)init_pid);
    int sbns = open(path, O_RDONLY | O_CLOEXEC);
    if (sbns < 0) {
        snprintf(msg, msgsz, "cannot open the sandbox's network namespace: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    char *const sb_cmds[][12] = {
        {ip, "addr", "add", "10.200.0.2/30", "dev", "eth0", NULL},
        {ip, "link", "set", "eth0", "up", NULL},
        {ip, "route", "add", "default", "via", "10.200.0.1", NULL},
    };
    int rc = LB_OK;
    for (size_t i = 0; i < sizeof sb_cmds / sizeof sb_cmds[0] && rc == LB_OK; i++)
        rc = run_in(sbns, sb_cmds[i], NULL, msg, msgsz);
    close(sbns);
    return rc;
}

/* <var>/netgw/<id>/ for the gateway's user, with the policy in it. */
static int make_dir(const char *id, const char *policy, uid_t uid, gid_t gid, char *dir, size_t dirsz, char *msg,
                    size_t msgsz)
{
    snprintf(dir, dirsz, "%s/%s", g_dir, id);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(msg, msgsz, "cannot make %s: %s", dir, strerror(errno));
        return LB_E_IO;
    }
    if (chown(dir, uid, gid) != 0) {
        snprintf(msg, msgsz, "cannot give %s to the gateway's user: %s", dir, strerror(errno));
        return LB_E_IO;
    }
    char path[LB_CFG_PATH + 96], tmp[LB_CFG_PATH + 96];
    snprintf(path, sizeof path, "%s/policy", dir);
    snprintf(tmp, sizeof tmp, "%s/.policy.tmp", dir);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int ok = fd >= 0 && lb_write_all(fd, policy, strlen(policy)) == LB_OK && fchown(fd, uid, gid) == 0 &&
             fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    if (!ok || rename(tmp, path) != 0) {
        snprintf(msg, msgsz, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return LB_E_IO;
    }
    return LB_OK;
}

__attribute__((noreturn)) static void gw_child(pid_t parent, int tcp, int udp, int sec, const char *dir,
                                               uid_t uid, gid_t gid)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    char log[LB_CFG_PATH + 96];
    snprintf(log, sizeof log, "%s/netgw.log", dir);
    int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    /* fds 3 and 4 from wherever they are, through fds above them */
    int t = fcntl(tcp, F_DUPFD_CLOEXEC, 10), u = fcntl(udp, F_DUPFD_CLOEXEC, 10);
    int sc = sec >= 0 ? fcntl(sec, F_DUPFD_CLOEXEC, 10) : -1;
    if (sec >= 0 && sc < 0)
        _exit(126);
    if (t < 0 || u < 0 || lfd < 0 || dup2(t, 3) != 3 || dup2(u, 4) != 4 || dup2(lfd, 2) != 2 || dup2(lfd, 1) != 1)
        _exit(126);
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) != 0)
        _exit(126);
    /* fd 5: the secrets' pipe (egress_secrets.h), or nothing */
    if (sec >= 0 && dup2(sc, LBSD_EGSEC_FD) != LBSD_EGSEC_FD)
        _exit(126);
    syscall(SYS_close_range, sec >= 0 ? LBSD_EGSEC_FD + 1 : 5, ~0U, 0);
    if (fchown(2, uid, gid) != 0 || setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
        setresuid(uid, uid, uid) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        _exit(125);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* cleared by the uid change */
    char *argv[8 + LBSD_EGSEC_ARGS] = {g_gwexe, "netgw", "--dir", (char *)dir, "--max-conns", "64"};
    argv[lbsd_egsec_args(argv, 6, sec >= 0)] = NULL; /* --bandwidth-max, --upstream-ca, --secrets-fd */
    char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
    execve(g_gwexe, argv, envp);
    _exit(127);
}

int lbsd_egress_attach(lbsd_sandbox *sb, char *msg, size_t msgsz)
{
    const lbsd_conn *c = sb->owner;
    eg *e = NULL;
    for (eg *x = g_eg; x; x = x->next)
        if (x->conn == c && !x->id[0] && x->policy)
            e = x;
    if (!g_enabled) {
        snprintf(msg, msgsz, "%s", g_why);
        goto fail;
    }
    if (!e || !c) {
        snprintf(msg, msgsz, "a sandbox with network rules needs its policy");
        goto fail;
    }
    snprintf(e->id, sizeof e->id, "%s", sb->id);
    uid_t uid = c->uid ? c->uid : EG_NOBODY;
    gid_t gid = c->uid ? c->gid : EG_NOBODY;
    char dir[LB_CFG_PATH + 64];
    int tcp = -1, udp = -1, sec = -1;
    int64_t t0 = lb_mono_ms();
    if (make_dir(sb->id, e->policy, uid, gid, dir, sizeof dir, msg, msgsz) != LB_OK ||
        lbsd_egsec_pipe(e->policy, e->values, &sec, msg, msgsz) != LB_OK ||
        make_ns(&e->nsfd, &tcp, &udp, msg, msgsz) != LB_OK || wire(e->nsfd, sb->init_pid, msg, msgsz) != LB_OK) {
        if (sec >= 0)
            close(sec);
        if (tcp >= 0)
            close(tcp);
        if (udp >= 0)
            close(udp);
        goto fail;
    }
    pid_t self = getpid();
    pid_t pid = fork();
    if (pid == 0)
        gw_child(self, tcp, udp, sec, dir, uid, gid);
    close(tcp);
    close(udp);
    int named = sec >= 0;
    if (named)
        close(sec);
    if (pid < 0) {
        snprintf(msg, msgsz, "cannot start the network gateway: %s", strerror(errno));
        goto fail;
    }
    e->gw = pid;
    free(e->policy);
    e->policy = NULL;
    lb_free_wiped(e->values);
    e->values = NULL;
    if (named && lbsd_egsec_install_ca(sb, dir, uid, msg, msgsz) != LB_OK) { /* the secrets' CA, into its trust */
        kill(pid, SIGKILL);
        for (int i = 0; i < 500 && waitpid(pid, NULL, WNOHANG) == 0; i++)
            usleep(2000);
        goto fail;
    }
    char pidpath[LB_CFG_PATH + 96], pidtext[24];
    snprintf(pidpath, sizeof pidpath, "%s/pid", dir);
    snprintf(pidtext, sizeof pidtext, "%d\n", (int)pid);
    if (lb_write_file_atomic(pidpath, pidtext, strlen(pidtext), 0644) != LB_OK || chown(pidpath, uid, gid) != 0)
        lb_warn("sandbox %s: cannot write %s: a policy change will not reach the gateway", sb->id, pidpath);
    lb_info("sandbox %s: network by rules (gateway pid %d as uid %d, %lld ms)", sb->id, (int)pid, (int)uid,
            (long long)(lb_mono_ms() - t0));
    return LB_OK;
fail:
    if (e)
        eg_free(e);
    return LB_E_SANDBOX;
}

void lbsd_egress_detach(lbsd_sandbox *sb)
{
    for (eg *e = g_eg; e; e = e->next) {
        if (strcmp(e->id, sb->id))
            continue;
        if (e->gw > 0 && !e->reaped) {
            kill(e->gw, SIGKILL);
            int st;
            for (int i = 0; i < 500 && waitpid(e->gw, &st, WNOHANG) == 0; i++)
                usleep(2000);
        }
        eg_free(e); /* its namespace goes with the last fd and socket, its folder here */
        return;
    }
}

int lbsd_egress_child_exited(lbsd_sandbox *sb, pid_t pid, int status)
{
    for (eg *e = g_eg; e; e = e->next)
        if (e->gw == pid && !strcmp(e->id, sb->id) && !e->reaped) {
            e->reaped = 1;
            lb_warn("sandbox %s: its network gateway exited (status %d): the sandbox has no way out now", sb->id,
                    status);
            return 1;
        }
    return 0;
}
