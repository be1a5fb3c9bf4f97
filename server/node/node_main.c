/* `llmbox node` (several nodes): one per sandbox host, beside its sandboxd.
 *
 * It holds a lease in the store's nodes table (renewed every third of
 * node_lease_s), claims queued tasks up to node_capacity, runs each one's
 * agent the web's way with the claim as the agent's fence, and sweeps the
 * tasks of nodes whose lease expired. It never runs a task twice: a task
 * whose node died ends failed, saying which node and when it was last
 * seen (docs/ARCHITECTURE.md, "The queue and the nodes").
 *
 * The one loop, on the main thread: renew when due; when the lease could
 * not be renewed before it ran out, kill every agent (their writes are
 * refused from then on anyway) and claim nothing until renewed; reap;
 * stop the agents of tasks cancelled elsewhere; sweep; claim; then wait
 * for the queue's NOTIFY (PostgreSQL) or a short poll (SQLite), never
 * past the next renewal. SIGTERM: claim no more, let the running agents
 * finish, leave. */
#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"
#include "entry.h"
#include "node/node_agents.h"
#include "node/node_cleanup.h"
#include "node/node_health.h"
#include "store/store.h"
#include "store/store_queue.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LB_NODE_POLL_MS 1000      /* the backstop poll (and SQLite's only way) */
#define LB_NODE_BUSY_POLL_MS 200  /* while agents run: how soon an exit is reaped */
#define LB_NODE_CANCEL_CHECK_MS 1000

static volatile sig_atomic_t lb_node_stop;
/* The lease as the watchdog sees it: monotonic ms until which it is held
 * (0: not held). Written by the main thread after each renewal. */
static int64_t lb_node_held_until;

/* The lease watchdog: a store call that never returns (a database server
 * stopped, a network cut without a reset) must not keep agents running
 * past the lease, when another node may sweep their tasks. */
static void *lb_node_watchdog(void *arg)
{
    const char *name = arg;
    int fired = 0;
    for (;;) {
        int64_t until = __atomic_load_n(&lb_node_held_until, __ATOMIC_ACQUIRE);
        if (until && lb_mono_ms() >= until) {
            if (!fired && lb_node_agents_count_locked() > 0)
                lb_error("node %s: its lease expired unrenewed (the store does not answer): killing its agents",
                         name);
            lb_node_agents_kill_now();
            fired = 1;
        } else {
            fired = 0;
        }
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void lb_node_on_term(int sig)
{
    (void)sig;
    lb_node_stop = 1;
}

/* node_name, or the host name's first label lowercased */
static int lb_node_resolve_name(const lb_config *cfg, char *out, size_t outsz)
{
    if (cfg->node_name[0]) {
        snprintf(out, outsz, "%s", cfg->node_name);
        return LB_OK;
    }
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        return LB_E_IO;
    host[strcspn(host, ".")] = '\0';
    for (char *p = host; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    snprintf(out, outsz, "%s", host);
    return lb_node_name_valid(out) ? LB_OK : LB_E_INVAL;
}

typedef struct lb_node {
    const lb_config *cfg;
    lb_store *s;
    char name[64];
    int64_t run_ms;           /* this run's id: its start (wall clock) */
    int lease_ms, capacity;
    int held;                 /* the lease is ours (renewed, not run out) */
    int64_t held_until_mono;  /* monotonic: the renewal's start + the lease */
    int64_t lease_expires_ms; /* the database's clock, for /healthz */
    int orphans_done;         /* several nodes: the earlier runs' kept sandboxes were destroyed (node_cleanup.h) */
} lb_node;

static void lb_node_publish(const lb_node *n)
{
    lb_node_health h;
    memset(&h, 0, sizeof h);
    snprintf(h.name, sizeof h.name, "%s", n->name);
    snprintf(h.state, sizeof h.state, "%s",
             !n->held ? (n->lease_expires_ms ? "lapsed" : "starting") : lb_node_stop ? "draining" : "running");
    h.tasks = lb_node_agents_count();
    h.capacity = n->capacity;
    h.lease_expires_ms = n->lease_expires_ms;
    lb_node_health_set(&h);
}

/* One renewal. A lapse the store saw (our tasks were ended) kills what is
 * left of them here: this run's agents and an earlier run's. */
static void lb_node_renew(lb_node *n)
{
    int64_t start = lb_mono_ms();
    lb_node_lease l;
    /* a draining node takes no work: capacity 0 tells the claimers that the
     * rounds whose sandboxes it holds will not come back to it */
    int rc = lb_store_node_renew(n->s, n->name, n->run_ms, n->lease_ms, lb_node_stop ? 0 : n->capacity, &l);
    if (rc != LB_OK) {
        lb_warn("node %s: cannot renew its lease: %s", n->name, lb_strerror(rc));
        return;
    }
    if (l.lapsed) {
        if (l.nleft)
            lb_warn("node %s: its lease had lapsed or it restarted: %zu unfinished tasks of it ended failed",
                    n->name, l.nleft);
        lb_node_agents_kill_all("the node's lease had lapsed; their tasks were ended");
        lb_node_agents_kill_left(&l);
        /* several nodes: and the sandboxes they kept (leased, so not gone with them) */
        LB_IGNORE(lb_node_cleanup_left(n->cfg, n->s, n->name, &l));
    }
    free(l.left);
    /* several nodes: once, before this run starts any agent (a task of this run
     * may end a moment before its agent records the sandbox as kept) */
    if (!n->orphans_done) {
        LB_IGNORE(lb_node_cleanup_orphans(n->cfg, n->s, n->name)); /* each is logged; never fails the node */
        n->orphans_done = 1;
    }
    if (!n->held)
        lb_info("node %s: holds its lease (%d s), capacity %d", n->name, n->lease_ms / 1000, n->capacity);
    n->held = 1;
    n->held_until_mono = start + n->lease_ms;
    __atomic_store_n(&lb_node_held_until, n->held_until_mono, __ATOMIC_RELEASE);
    n->lease_expires_ms = l.expires_ms;
}

static void lb_node_sweep(lb_node *n)
{
    for (int i = 0; i < 16; i++) { /* a bounded round: the rest at the next sweep */
        char swept[LB_NODE_NAME_MAX + 1];
        size_t ended = 0;
        if (lb_store_node_sweep(n->s, n->name, swept, &ended) != LB_OK || !swept[0])
            return;
        lb_warn("node %s: swept node %s, whose lease expired: %zu of its tasks ended failed", n->name, swept, ended);
    }
}

static void lb_node_claim(lb_node *n)
{
    int free_slots = n->capacity - lb_node_agents_count();
    if (free_slots <= 0 || !n->held || lb_node_stop)
        return;
    lb_claim c[LB_NODE_AGENTS_MAX];
    size_t got = 0;
    if (lb_store_queue_claim(n->s, n->name, free_slots, c, &got) != LB_OK)
        return;
    for (size_t i = 0; i < got; i++)
        LB_IGNORE(lb_node_agent_start(n->cfg, n->s, n->name, &c[i])); /* a failure ended the task */
}

static int lb_node_run(lb_node *n)
{
    int listening = lb_store_queue_listen(n->s) == LB_OK; /* SQLite: polls */
    int64_t next_renew = 0, next_sweep = 0, next_cancel = 0;
    int every = n->lease_ms / 3;
    int told_stop = 0;
    for (;;) {
        int64_t now = lb_mono_ms();
        if (lb_node_stop && !told_stop) {
            next_renew = now; /* at once: its rounds go elsewhere now (capacity 0), not at the drain's end */
            told_stop = 1;
        }
        if (now >= next_renew) {
            lb_node_renew(n);
            next_renew = now + every;
        }
        if (n->held && lb_mono_ms() >= n->held_until_mono) {
            /* the lease ran out unrenewed: another node may sweep our
             * tasks any moment, and their agents' writes are refused */
            lb_error("node %s: could not renew its lease before it expired: killing its agents and claiming nothing"
                     " until it has renewed", n->name);
            n->held = 0;
            __atomic_store_n(&lb_node_held_until, 0, __ATOMIC_RELEASE);
            lb_node_agents_kill_all("the node's lease expired");
        }
        lb_node_agents_check_deadlines();
        LB_IGNORE(lb_node_agents_reap(n->s)); /* how many exited: only the table matters here */
        if (n->held && now >= next_cancel) {
            lb_node_agents_check_cancel(n->s);
            next_cancel = now + LB_NODE_CANCEL_CHECK_MS;
        }
        if (n->held && now >= next_sweep) {
            lb_node_sweep(n);
            next_sweep = now + every;
        }
        lb_node_claim(n);
        lb_node_publish(n);
        if (lb_node_stop && lb_node_agents_count() == 0)
            break;
        int wait = lb_node_agents_count() ? LB_NODE_BUSY_POLL_MS : LB_NODE_POLL_MS;
        int64_t until = next_renew - lb_mono_ms();
        if (until < wait)
            wait = until < 10 ? 10 : (int)until;
        int woke = 0;
        if (!listening || lb_node_stop || lb_store_queue_wait(n->s, wait, &woke) != LB_OK) {
            struct timespec ts = {wait / 1000, (long)(wait % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    /* stopped with nothing running: the row goes, so no one sweeps it */
    if (lb_store_node_remove(n->s, n->name) != LB_OK)
        lb_warn("node %s: could not remove its row; it expires in %d s", n->name, n->lease_ms / 1000);
    lb_info("node %s: stopped", n->name);
    return 0;
}

/* Started as root with web_user set (LLMBOX_WEB_USER), the node runs as
 * that user, as the web does: only sandboxd needs root, and the task
 * folders a node's agents make must be the web's to write (a web on the
 * same host fetches a record into them). The folders the agents write
 * are made and given to the user first. 0, or 1 with a sentence. */
static int node_drop_root(const lb_config *cfg)
{
    if (geteuid() != 0)
        return 0;
    if (!cfg->web_user[0]) {
        lb_warn("node: running as root; set LLMBOX_WEB_USER to run it and its agents as an unprivileged user");
        return 0;
    }
    struct passwd *pw = NULL, pwbuf;
    char pwstore[1024], logdir[LB_CFG_PATH];
    if (getpwnam_r(cfg->web_user, &pwbuf, pwstore, sizeof pwstore, &pw) != 0 || !pw) {
        fprintf(stderr, "llmbox node: the user \"%s\" (LLMBOX_WEB_USER) does not exist; run `make deps`\n",
                cfg->web_user);
        return 1;
    }
    lb_cfg_logdir(cfg, logdir, sizeof logdir);
    const char *dirs[] = {cfg->artifacts_dir, logdir};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (lb_mkdirs(dirs[i], 0750) != LB_OK || lchown(dirs[i], pw->pw_uid, pw->pw_gid) != 0) {
            fprintf(stderr, "llmbox node: cannot make %s %s's: %s\n", dirs[i], pw->pw_name, strerror(errno));
            return 1;
        }
    }
    int rc = lb_drop_privileges(cfg->web_user);
    if (rc != LB_OK) {
        fprintf(stderr, "llmbox node: cannot switch to the user %s: %s\n", cfg->web_user, lb_strerror(rc));
        return 1;
    }
    return 0;
}

int lb_node_main(int argc, char **argv, const lb_config *cfg)
{
    (void)argv;
    lb_log_init("node");
    if (argc > 1) {
        fprintf(stderr, "usage: llmbox node (configured by llmbox.conf and LLMBOX_*: node_name, node_capacity,"
                        " node_lease_s, node_listen, db_url)\n");
        return 2;
    }
    lb_node n;
    memset(&n, 0, sizeof n);
    n.cfg = cfg;
    n.lease_ms = cfg->node_lease_s * 1000;
    n.capacity = cfg->node_capacity > LB_NODE_AGENTS_MAX ? LB_NODE_AGENTS_MAX : cfg->node_capacity;
    n.run_ms = lb_now_ms();
    if (lb_node_resolve_name(cfg, n.name, sizeof n.name) != LB_OK) {
        fprintf(stderr, "llmbox node: the host name is not a valid node name ([a-z0-9-], at most 63): set node_name"
                        " (LLMBOX_NODE_NAME)\n");
        return 1;
    }
    char err[512];
    if (lb_node_health_start(cfg->node_listen, err, sizeof err) != LB_OK) {
        fprintf(stderr, "llmbox node: %s\n", err);
        return 1;
    }
    umask(027); /* what its agents write, as the web's agents do */
    if (node_drop_root(cfg) != 0)
        return 1;
    int rc = lb_store_open(lb_cfg_store_where(cfg), &n.s);
    if (rc != LB_OK) {
        char shown[LB_CFG_PATH];
        lb_store_where_shown(lb_cfg_store_where(cfg), shown, sizeof shown);
        fprintf(stderr, "llmbox node: cannot open the task store %s: %s\n", shown, lb_strerror(rc));
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lb_node_on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_t wd;
    if (pthread_create(&wd, NULL, lb_node_watchdog, n.name) != 0) {
        fprintf(stderr, "llmbox node: cannot start the lease watchdog\n");
        lb_store_close(n.s);
        return 1;
    }
    pthread_detach(wd);
    lb_info("node %s: starting: capacity %d, lease %d s, /healthz on %s", n.name, n.capacity, n.lease_ms / 1000,
            cfg->node_listen);
    int ret = lb_node_run(&n);
    lb_store_close(n.s);
    return ret;
}
