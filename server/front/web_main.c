/* `llmbox web`: the FastCGI backend behind nginx.
 *
 * Start-up order matters for privilege separation: as root we only create
 * the runtime folders and the listening socket (owned by the service user,
 * mode 0660, so nginx workers running as that user can connect), then drop
 * to the service user before reading a single request byte or opening the
 * database. After that: crash recovery, the reaper thread, and N worker
 * threads that each accept FastCGI requests with their own store
 * connection.
 */
#include "front/web_main.h"

#include "web/access.h"
#include "web/download_link.h"
#include "jobs/eval_runner.h"
#include "jobs/handlers_rollouts.h"
#include "jobs/rollout_runner.h"
#include "web/http.h"
#include "front/router.h"
#include "web/spawn.h"
#include "web/user_limits.h"
#include "store/store.h"
#include "web/shared_secrets.h" /* several nodes */

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"
#include "entry.h"
#include "web/req_body.h"
#include "sbxapi/sandbox_leases.h"
#include "sbxapi/snapshot_records.h"
#include "sbxapi/sandbox_registry.h"
#include "sbxapi/sandbox_rows.h" /* several nodes */
#include "web/sse_admit.h"
#include "web/sse_watch.h"
#include "web/task_trash.h"
#include "web/tombstones.h"
#include "web/cache_trim.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcgiapp.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lb_accept_mu = PTHREAD_MUTEX_INITIALIZER;
static int lb_listen_fd = -1;

/* ---- crash recovery ---- */

void lb_web_recover(lb_store *s)
{
    char **ids = NULL;
    int *pids = NULL;
    size_t n = 0;
    int rc = lb_store_tasks_active(s, &ids, &pids, &n);
    if (rc != LB_OK) {
        lb_error("web: recovery: cannot list active tasks: %s", lb_strerror(rc));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (lb_agent_alive(pids[i], ids[i])) {
            /* its agent outlived the old web process; it finishes the task itself */
            lb_info("web: recovery: task %s still has its agent (pid %d)", ids[i], pids[i]);
        } else {
            rc = lb_store_task_end(s, ids[i], LB_TASK_FAILED, "the service restarted while this task ran", NULL);
            if (rc == LB_OK)
                lb_warn("web: recovery: task %s marked failed: its agent is gone", ids[i]);
            else if (rc != LB_E_EXISTS && rc != LB_E_NOTFOUND) /* the reaper's orphan scan tries again */
                lb_error("web: recovery: task %s: cannot record its end: %s", ids[i], lb_strerror(rc));
        }
        free(ids[i]);
    }
    free(ids);
    free(pids);
}

/* ---- requests ---- */

/* Returns the request, for its log line once answered (lb_worker). */
static lb_req *lb_handle(const lb_config *cfg, FCGX_Request *fr, lb_store *s)
{
    static _Thread_local lb_req r; /* large path buffer: not on the stack */
    memset(&r, 0, sizeof r);
    int64_t t0 = lb_mono_ms();
    r.cfg = cfg;
    r.fcgi = fr;
    r.store = s;
    r.status = 0;
    r.route = "unknown";
    lb_access_begin(&r);
    const char *method = FCGX_GetParam("REQUEST_METHOD", fr->envp);
    r.method = method ? method : "GET";
    r.is_head = !strcmp(r.method, "HEAD");
    const char *ct = FCGX_GetParam("CONTENT_TYPE", fr->envp);
    r.content_type = ct ? ct : "";
    const char *cl = FCGX_GetParam("CONTENT_LENGTH", fr->envp);
    r.content_length = -1;
    if (cl && *cl) {
        char *end;
        long long v = strtoll(cl, &end, 10);
        if (!*end && v >= 0)
            r.content_length = v;
    }
    /* REQUEST_URI is what the client sent, still percent-encoded; nginx's
     * decoded and merged DOCUMENT_URI would hide %2F and "..". */
    const char *uri = FCGX_GetParam("REQUEST_URI", fr->envp);
    if (!uri)
        uri = "";
    const char *qm = strchr(uri, '?');
    size_t plen = qm ? (size_t)(qm - uri) : strlen(uri);
    r.query = qm ? qm + 1 : "";
    if (plen >= sizeof r.path) {
        lb_http_drain(&r);
        lb_http_error(&r, 404, "not_found", "The request URI is too long.");
    } else if (!s) {
        lb_http_drain(&r);
        /* several nodes: a database server that is restarting comes back; this
         * thread connects again at its next request */
        lb_http_error_hdr(&r, 503, NULL, "Retry-After: 2\r\n", "The task database cannot be opened; see the web log.");
    } else {
        memcpy(r.path, uri, plen);
        r.path[plen] = '\0';
        lb_route(&r);
    }
    if (!r.responded) {
        lb_error("web: %s %s: handler sent no response", r.method, r.path);
        lb_http_error(&r, 500, NULL, "The server failed to answer this request.");
    }
    lb_access_close(&r, t0);
    return &r;
}

/* arg: the configuration, handed to every request (read only) */
static void *lb_worker(void *arg)
{
    const lb_config *cfg = arg;
    FCGX_Request req;
    if (FCGX_InitRequest(&req, lb_listen_fd, 0) != 0) {
        lb_error("web: FCGX_InitRequest failed");
        return NULL;
    }
    lb_store *s = NULL;
    for (;;) {
        /* A connection nginx keeps (fastcgi_keep_conn, nginx.conf) stays
         * with this thread: its next request is read without the accept
         * lock, which would otherwise hold every other thread back while
         * this one waits on an idle connection. (When nginx closes it,
         * libfcgi accepts a new one unlocked: concurrent accept() on one
         * socket is safe on Linux; the lock only spreads the waiters.) */
        int kept = req.ipcFd >= 0;
        if (!kept)
            pthread_mutex_lock(&lb_accept_mu);
        int rc = FCGX_Accept_r(&req);
        if (!kept)
            pthread_mutex_unlock(&lb_accept_mu);
        if (rc < 0) {
            lb_warn("web: accept failed (%d); retrying", rc);
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        if (!s && lb_store_open(lb_cfg_store_where(cfg), &s) != LB_OK)
            s = NULL;
        lb_req *r = lb_handle(cfg, &req, s);
        FCGX_Finish_r(&req);
        /* the answer is with nginx now: the access line, the metrics and
         * the heap's trim are no part of the client's wait */
        lb_access_log(r);
        lb_req_trim(r);
    }
    return NULL;
}

/* ---- stopping ----
 *
 * A stop must end the process within seconds whatever the other threads
 * are doing: a web that logged "stopping" and had not exited 10 s later
 * failed a restore, and whoever stops it (a test, `make run`, systemd)
 * kills it or gives up on it. The steps that wait on other threads (the
 * runner handing back its claims, the event-stream watcher's join, which
 * waits as long as a store call of that thread: up to SQLite's busy
 * timeout, or a PostgreSQL server that stopped answering) run in a thread
 * of their own, and the main thread leaves when they are done or
 * LB_WEB_STOP_MS has passed, saying which step it left behind. Worker
 * threads may be inside a request; the database is WAL, so leaving
 * without closing it loses nothing that was committed. */
#define LB_WEB_STOP_MS 3000 /* every step, together: the runner's own wait is 2 s */
#define LB_WEB_STOP_HARD_S 8 /* SIGALRM's default action ends the process should even the wait not */

static pthread_mutex_t lb_stop_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lb_stop_cv = PTHREAD_COND_INITIALIZER;
static const char *lb_stop_step = "starting"; /* under lb_stop_mu; NULL: done */

static void lb_stop_at(const char *step)
{
    pthread_mutex_lock(&lb_stop_mu);
    lb_stop_step = step;
    if (!step)
        pthread_cond_broadcast(&lb_stop_cv);
    pthread_mutex_unlock(&lb_stop_mu);
}

static void *lb_stopper(void *arg)
{
    (void)arg;
    lb_stop_at("handing back the runner's claims");
    lb_eval_runner_stop(2000); /* several nodes: its claims back, so another web goes on at once */
    lb_stop_at("stopping the event-stream watcher");
    lb_sse_watch_stop(); /* its connection closed */
    lb_stop_at(NULL);
    return NULL;
}

/* Never returns: the process exits within LB_WEB_STOP_MS. */
_Noreturn static void lb_web_stop(const lb_config *cfg)
{
    alarm(LB_WEB_STOP_HARD_S);
    unlink(cfg->web_socket);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += LB_WEB_STOP_MS / 1000;
    ts.tv_nsec += (long)(LB_WEB_STOP_MS % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_t t;
    const char *left = "starting the stop's thread";
    if (pthread_create(&t, NULL, lb_stopper, NULL) == 0) {
        pthread_detach(t);
        pthread_mutex_lock(&lb_stop_mu);
        while (lb_stop_step && pthread_cond_timedwait(&lb_stop_cv, &lb_stop_mu, &ts) == 0)
            ;
        left = lb_stop_step;
        pthread_mutex_unlock(&lb_stop_mu);
    }
    if (left)
        lb_warn("web: stopping: %s took more than %d ms; exiting without waiting for it", left, LB_WEB_STOP_MS);
    lb_info("web: stopped");
    _exit(0);
}

/* ---- start-up ---- */

/* Creates path if missing; with pw, gives it to that user. Folders we keep
 * (pw NULL) are 0755 so nginx workers can reach the socket through them. */
static int lb_prepare_dir(const char *path, const struct passwd *pw)
{
    if (lb_mkdirs(path, pw ? 0750 : 0755) != LB_OK) {
        fprintf(stderr, "llmbox web: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (pw && lchown(path, pw->pw_uid, pw->pw_gid) != 0) {
        fprintf(stderr, "llmbox web: cannot give %s to %s: %s\n", path, pw->pw_name, strerror(errno));
        return -1;
    }
    return 0;
}

/* Refuses to steal the socket of a web that is still running. */
static int lb_socket_in_use(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    if (n >= sizeof sa.sun_path)
        return 0;
    memcpy(sa.sun_path, path, n + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int used = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return used;
}

static int lb_open_socket(const lb_config *cfg, const struct passwd *pw)
{
    const char *path = cfg->web_socket;
    struct sockaddr_un sa;
    if (strlen(path) >= sizeof sa.sun_path) {
        fprintf(stderr, "llmbox web: the socket path %s is longer than %zu bytes; set LLMBOX_WEB_SOCKET\n", path,
                sizeof sa.sun_path - 1);
        return -1;
    }
    char dir[LB_CFG_PATH];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (lb_prepare_dir(dir, NULL) != 0)
            return -1;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            fprintf(stderr, "llmbox web: %s exists and is not a socket; remove it\n", path);
            return -1;
        }
        if (lb_socket_in_use(path)) {
            fprintf(stderr, "llmbox web: another llmbox web already listens on %s\n", path);
            return -1;
        }
        unlink(path);
    }
    if (FCGX_Init() != 0) {
        fprintf(stderr, "llmbox web: FCGX_Init failed\n");
        return -1;
    }
    /* nginx connects without blocking and answers 502 at once when the
     * backlog is full: a burst of page loads (hundreds of event streams
     * opening together) must fit while the threads catch up. The kernel
     * caps it at net.core.somaxconn (4096 by default). */
    int backlog = cfg->web_threads > 1024 ? cfg->web_threads : 1024;
    mode_t old = umask(0117); /* the socket is born 0660: no window where others may connect */
    int fd = FCGX_OpenSocket(path, backlog);
    umask(old);
    if (fd < 0) {
        fprintf(stderr, "llmbox web: cannot listen on %s: %s\n", path, strerror(errno));
        return -1;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (chmod(path, 0660) != 0 || (pw && lchown(path, pw->pw_uid, pw->pw_gid) != 0)) {
        fprintf(stderr, "llmbox web: cannot set the owner and mode of %s: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Each worker thread holds its request's connection and, once it has served
 * one, its own SQLite connection (database, -wal and -shm: three fds) and,
 * once it has served an event stream, the eventfd it sleeps on; a bundle
 * being built opens a few more. With web_threads in the hundreds
 * (one per open event stream) the usual soft limit of 1024 runs out, and
 * accept() or sqlite3_open() would fail with EMFILE under load, so the
 * limit is raised to fit before the privilege drop (root may raise the hard
 * limit as well). */
#define LB_WEB_FDS_PER_THREAD 6

static void lb_web_raise_nofile(const lb_config *cfg)
{
    unsigned long long need = (unsigned long long)cfg->web_threads * LB_WEB_FDS_PER_THREAD + 256;
    unsigned long long have = lb_raise_nofile(need);
    if (have < need)
        lb_warn("web: open-file limit %llu is below the %llu that LLMBOX_WEB_THREADS=%d needs: requests may "
                "fail with 'too many open files' under load",
                have, need, cfg->web_threads);
}

static void lb_usage(FILE *f)
{
    fprintf(f, "usage: llmbox web\n"
               "\n"
               "Serves the HTTP API over FastCGI on $LLMBOX_WEB_SOCKET (default var/web/web.sock)\n"
               "for nginx (see nginx.conf). Started as root with LLMBOX_WEB_USER set, it creates\n"
               "var/ and artifacts/ for that user and drops to it before serving.\n"
               "Settings: llmbox.conf (LLMBOX_CONF) and the environment (LLMBOX_HOME,\n"
               "LLMBOX_WEB_THREADS, LLMBOX_MAX_TASKS, LLMBOX_LLM_URL ...); see README.md.\n");
}

int lb_web_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            lb_usage(stdout);
            return 0;
        }
        fprintf(stderr, "llmbox web: unknown option %s\n", argv[i]);
        lb_usage(stderr);
        return 2;
    }
    lb_log_init("web");
    const lb_config *cfg = lb_cfg();
    /* the token stays in the config only: agents and helpers spawned with
     * our environment never see it */
    unsetenv("LLMBOX_SANDBOX_API_TOKEN");
    if (cfg->sandbox_api_token[0] && strlen(cfg->sandbox_api_token) < 16)
        lb_warn("web: LLMBOX_SANDBOX_API_TOKEN is shorter than 16 characters; use a long random token");
    umask(027);
    signal(SIGPIPE, SIG_IGN); /* a client that went away is an error return, not a death */
    /* Request bodies and their copies (up to tens of MiB) are mmapped and
     * go back to the system when freed: a fixed threshold, since glibc's
     * moving one would rise after the first large free and then keep
     * such blocks in the arenas (the rest goes back with lb_req_trim). */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);

    struct passwd *pw = NULL, pwbuf;
    char pwstore[1024];
    if (geteuid() == 0 && cfg->web_user[0]) {
        if (getpwnam_r(cfg->web_user, &pwbuf, pwstore, sizeof pwstore, &pw) != 0 || !pw) {
            fprintf(stderr, "llmbox web: the user \"%s\" (LLMBOX_WEB_USER) does not exist; run `make deps`\n",
                    cfg->web_user);
            return 1;
        }
    } else if (geteuid() == 0) {
        lb_warn("web: running as root; set LLMBOX_WEB_USER to run as an unprivileged user");
    }
    /* The service user owns what it writes: the database folder (the
     * database and its -wal/-shm files are created next to each other),
     * the agent logs and artifacts/. The socket folder may stay root's:
     * the socket is made before the privilege drop. */
    char dbdir[LB_CFG_PATH], logdir[LB_CFG_PATH];
    snprintf(dbdir, sizeof dbdir, "%s", cfg->db_path);
    char *dslash = strrchr(dbdir, '/');
    if (dslash && dslash != dbdir)
        *dslash = '\0';
    lb_cfg_logdir(cfg, logdir, sizeof logdir);
    if (lb_prepare_dir(cfg->var_dir, NULL) || lb_prepare_dir(dbdir, pw) || lb_prepare_dir(logdir, pw) ||
        lb_prepare_dir(cfg->artifacts_dir, pw))
        return 1;
    if (pw) {
        /* a database created by an earlier run as root must stay writable */
        const char *sfx[] = {"", "-wal", "-shm"};
        for (int i = 0; i < 3; i++) {
            char p[LB_CFG_PATH + 8];
            snprintf(p, sizeof p, "%s%s", cfg->db_path, sfx[i]);
            if (lchown(p, pw->pw_uid, pw->pw_gid) != 0 && errno != ENOENT)
                lb_warn("web: cannot give %s to %s: %s", p, pw->pw_name, strerror(errno));
        }
    }
    lb_web_raise_nofile(cfg);
    /* bundle builders lower their thread's priority and restore it after
     * (bundle.c): restoring needs RLIMIT_NICE 20, which only root may
     * grant; without it they build at the usual priority */
    struct rlimit nice_rl = {20, 20};
    if (geteuid() == 0 && setrlimit(RLIMIT_NICE, &nice_rl) != 0)
        lb_warn("web: cannot raise RLIMIT_NICE: bundles are built at the API's priority");
    lb_listen_fd = lb_open_socket(cfg, pw);
    if (lb_listen_fd < 0)
        return 1;
    if (pw) {
        int rc = lb_drop_privileges(cfg->web_user);
        if (rc != LB_OK) {
            fprintf(stderr, "llmbox web: cannot switch to the user %s: %s\n", cfg->web_user, lb_strerror(rc));
            return 1;
        }
    }
    /* each agent reads the configuration again, as this user: find out now
     * rather than with every task failing */
    if (cfg->conf_path[0] && access(cfg->conf_path, R_OK) != 0) {
        fprintf(stderr, "llmbox web: %s is not readable by the service user%s%s (uid %d): %s\n", cfg->conf_path,
                pw ? " " : "", pw ? cfg->web_user : "", (int)getuid(), strerror(errno));
        return 1;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "llmbox web: libcurl failed to initialise\n");
        return 1;
    }

    lb_store *s = NULL;
    int rc = lb_store_open(lb_cfg_store_where(cfg), &s);
    if (rc != LB_OK) {
        char shown[LB_CFG_PATH];
        lb_store_where_shown(lb_cfg_store_where(cfg), shown, sizeof shown);
        fprintf(stderr, "llmbox web: cannot open the task database %s: %s\n", shown, lb_strerror(rc));
        return 1;
    }
    lb_web_recover(s);
    /* several nodes: the signing secrets and start windows every web on this
     * store shares (shared_secrets.c) */
    rc = lb_secrets_start(cfg, s);
    lb_store_close(s);
    if (rc != LB_OK) {
        fprintf(stderr, "llmbox web: cannot read or make the shared secrets in the task database: %s\n",
                lb_strerror(rc));
        return 1;
    }

    /* Signals that stop the service are taken by the main thread only
     * (sigwait); every other thread, and so every child, starts with them
     * blocked, and spawn.c resets the mask for children. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    if (lb_spawn_init(cfg) != LB_OK) {
        fprintf(stderr, "llmbox web: cannot start the reaper thread\n");
        return 1;
    }
    /* after the spawner: the runner makes tasks; it resumes the evals an
     * earlier web process left running */
    if (lb_rollout_runner_init(cfg) != LB_OK) {
        lb_error("web: cannot add the rollout runner");
        return 1;
    }
    if (lb_eval_runner_start(cfg) != LB_OK) {
        fprintf(stderr, "llmbox web: cannot start the evaluations' runner\n");
        return 1;
    }
    lb_download_links_init(cfg);
    if (lb_sbx_registry_init(cfg->sandbox_api_max) != LB_OK) {
        fprintf(stderr, "llmbox web: cannot start the sandbox API (no memory or no thread)\n");
        return 1;
    }
    /* several nodes: in a cluster the store holds a row per API sandbox, so any
     * web lists every node's; cleared first, the adoption writes them again */
    if (lb_sbx_rows_start(cfg) != LB_OK)
        lb_warn("web: sandbox API: cannot start refreshing this node's sandboxes in the store: other webs stop "
                "listing them after node_lease_s");
    /* the API sandboxes of the web before this one, and their leases */
    if (lb_sbx_leases_start(cfg) != LB_OK)
        lb_warn("web: sandbox API: sandboxes will not survive a restart of the web (see above)");
    /* records of snapshots that expired by age while no web listed them */
    lb_snapshot_records_sweep(cfg);
    /* several nodes: this host's copies of the bucket under their cap */
    if (lb_cache_trim_start(cfg) != LB_OK)
        lb_warn("web: cannot start the artifacts cache's trim: artifacts/ grows without bound");
    /* deleted tasks' folders, removed off the request threads; first what a
     * web before this one left in artifacts/.trash */
    if (lb_task_trash_start(cfg) != LB_OK)
        lb_warn("web: cannot start the thread that removes deleted tasks' files: each delete removes them itself");
    /* several nodes: copies here of tasks deleted through another web */
    if (lb_tombstones_start(cfg) != LB_OK)
        lb_warn("web: cannot start the thread that removes the copies of tasks deleted through other webs: their "
                "links go on working here until download_link_ttl_s");
    /* one slot per task with an open stream; a stream holds a thread, so
     * web_threads is the most there can be */
    rc = lb_sse_watch_start(lb_cfg_store_where(cfg), cfg->web_threads);
    if (rc != LB_OK)
        lb_warn("web: cannot start the event-stream watcher (%s): each event stream polls the database itself",
                lb_strerror(rc));
    /* streams never take the reserve: requests always find a thread */
    int reserve = lb_sse_reserve_for(cfg->web_threads, cfg->sse_reserve_threads);
    lb_rollout_waiters_init(cfg->rollout_max_waiters, cfg->web_threads);
    if (lb_sse_admit_init(cfg->web_threads - reserve, cfg->sse_max_per_client) != LB_OK) {
        fprintf(stderr, "llmbox web: out of memory\n");
        return 1;
    }
    lb_info("web: event streams: at most %d open (web_threads %d minus a reserve of %d), %d per %s "
            "(LLMBOX_SSE_MAX_PER_CLIENT)", cfg->web_threads - reserve, cfg->web_threads, reserve,
            cfg->sse_max_per_client, cfg->n_users ? "user" : "client address");
    if (reserve < cfg->sse_reserve_threads)
        lb_warn("web: sse_reserve_threads %d is more than a quarter of web_threads %d: the reserve is %d",
                cfg->sse_reserve_threads, cfg->web_threads, reserve);
    int started = 0;
    for (int i = 0; i < cfg->web_threads; i++) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstacksize(&at, 1u << 20);
        if (pthread_create(&t, &at, lb_worker, (void *)cfg) == 0) {
            pthread_detach(t);
            started++;
        }
        pthread_attr_destroy(&at);
    }
    if (!started) {
        fprintf(stderr, "llmbox web: cannot start worker threads\n");
        return 1;
    }
    char shown_db[LB_CFG_PATH];
    lb_store_where_shown(lb_cfg_store_where(cfg), shown_db, sizeof shown_db);
    lb_info("web: llmbox %s listening on %s with %d threads (uid %d), database %s", LLMBOX_VERSION,
            cfg->web_socket, started, (int)getuid(), shown_db);
    /* every running agent and every API sandbox holds one connection to
     * sandboxd: past its cap, creates fail (sandbox_error) rather than wait */
    if (cfg->max_concurrent_tasks + cfg->sandbox_api_max + 8 > cfg->sandboxd_max_conns)
        lb_warn("web: max_tasks %d + sandbox_api_max %d can hold more sandboxd connections than "
                "sandboxd_max_conns %d allows: raise sandboxd_max_conns (and sandbox_max) to fit, or tasks "
                "and API sandboxes past it fail to get a sandbox",
                cfg->max_concurrent_tasks, cfg->sandbox_api_max, cfg->sandboxd_max_conns);
    if (!cfg->n_users)
        lb_info("web: no users configured: serving on 127.0.0.1 only, without login");
    else
        lb_info("web: %d user%s configured: every API request needs a login or an API token (listen = %s, "
                "session %d s, per user: %d tasks at once, %d a minute, uploads up to %llu MiB by default)",
                cfg->n_users, cfg->n_users == 1 ? "" : "s", cfg->listen, cfg->session_ttl_s, cfg->user_max_tasks,
                cfg->user_tasks_per_minute,
                (unsigned long long)((cfg->user_max_upload_bytes ? cfg->user_max_upload_bytes : cfg->max_upload_bytes) >> 20));
    if (cfg->sandbox_api_token[0])
        lb_info("web: sandbox API on: up to %d sandboxes, ttl %d s (max %d s), exec timeout up to %d s",
                cfg->sandbox_api_max, cfg->sandbox_api_ttl_s, cfg->sandbox_api_ttl_max_s, cfg->sandbox_api_exec_max_s);
    else
        lb_info("web: sandbox API off (set LLMBOX_SANDBOX_API_TOKEN to turn it on)");

    int sig = 0;
    sigwait(&stop, &sig);
    lb_info("web: signal %d: stopping; running agents go on and finish their tasks", sig);
    lb_web_stop(cfg);
}
