/* Image pulls and builds sandboxd runs for an unprivileged client: the
 * `llmbox` CLI as a child, its output into a capped log (image_jobs.h). */
#include "sandboxd/image_jobs.h"

#include "sandboxd/reply.h"

#include "common/image_ref.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { IJ_FREE = 0, IJ_RUNNING, IJ_SUCCEEDED, IJ_FAILED };
enum { IJ_PULL = 0, IJ_BUILD };

typedef struct ij_job {
    int state;                       /* IJ_*; IJ_FREE: the slot is unused */
    int kind;                        /* IJ_PULL or IJ_BUILD */
    char id[LB_ID_HEX_LEN + 1];
    char ref[LBSD_IMAGE_REF_MAX + 1];
    pid_t pid;                       /* > 0 until reaped */
    int status;                      /* its wait status, once reaped */
    int out_fd;                      /* the read end of its stdout+stderr; -1 after EOF */
    int log_fd;                      /* the log file; -1 when it could not be made */
    int64_t log_len;                 /* bytes in the log file */
    int64_t dropped;                 /* bytes past LBSD_IMGJOB_LOG_MAX, not kept */
    int64_t started_ms, ended_ms;
    int killed_slow;                 /* killed for running past LBSD_IMGJOB_RUN_MAX_MS */
    int has_ctx;                     /* build: its context folder is <jobs dir>/<id>.ctx */
    char line[512];                  /* the line being printed */
    size_t line_len;
    char last[512];                  /* the last whole line printed */
} ij_job;

static ij_job g_jobs[LBSD_IMGJOB_REMEMBER];
static const lb_config *g_cfg;
static char g_dir[LB_CFG_PATH + 64];  /* <var_dir>/sandboxd/image-jobs */
static char g_ctxroot[LB_CFG_PATH + 64]; /* <var_dir>/image-contexts: what the web writes */

/* ---- start and shutdown --------------------------------------------------------- */

void lbsd_image_jobs_init(const lb_config *cfg)
{
    g_cfg = cfg;
    for (size_t i = 0; i < LBSD_IMGJOB_REMEMBER; i++)
        g_jobs[i] = (ij_job){.out_fd = -1, .log_fd = -1};
    snprintf(g_dir, sizeof g_dir, "%s/sandboxd/image-jobs", cfg->var_dir);
    snprintf(g_ctxroot, sizeof g_ctxroot, "%s/image-contexts", cfg->var_dir);
    /* an earlier run's logs and taken contexts: its jobs died with it
     * (PR_SET_PDEATHSIG), and nothing of theirs is registered half */
    if (lb_rmtree(g_dir) != LB_OK)
        lb_warn("cannot remove %s: %s", g_dir, strerror(errno));
    if (lb_mkdirs(g_dir, 0700) != LB_OK || chmod(g_dir, 0700) != 0)
        lb_warn("cannot make %s (image jobs will fail): %s", g_dir, strerror(errno));
    /* the web (its own user) writes build contexts here; var_dir is root's,
     * so the web cannot move the folder itself */
    struct stat st;
    if (lstat(g_ctxroot, &st) != 0 && lb_mkdirs(g_ctxroot, 0700) != LB_OK) {
        lb_warn("cannot make %s (builds from the web will fail): %s", g_ctxroot, strerror(errno));
        return;
    }
    if (lstat(g_ctxroot, &st) != 0 || !S_ISDIR(st.st_mode)) {
        lb_warn("%s is not a folder: builds from the web will fail", g_ctxroot);
        return;
    }
    struct passwd *pw = cfg->web_user[0] ? getpwnam(cfg->web_user) : NULL;
    if (pw && (chown(g_ctxroot, pw->pw_uid, pw->pw_gid) != 0 || chmod(g_ctxroot, 0700) != 0))
        lb_warn("cannot give %s to %s: %s", g_ctxroot, cfg->web_user, strerror(errno));
}

void lbsd_image_jobs_shutdown(void)
{
    for (size_t i = 0; i < LBSD_IMGJOB_REMEMBER; i++)
        if (g_jobs[i].state == IJ_RUNNING && g_jobs[i].pid > 0)
            kill(-g_jobs[i].pid, SIGKILL); /* its process group: the CLI and its helpers */
}

/* ---- the child ------------------------------------------------------------------ */

/* In the child of fork (sandboxd has threads): system calls only until the
 * exec. Its own process group, so a kill reaches the helpers it starts. */
__attribute__((noreturn)) static void ij_child(pid_t parent, int nul, int out, const char *exe, char *const argv[],
                                               char *const envp[])
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
    if (setpgid(0, 0) != 0 || dup2(nul, 0) != 0 || dup2(out, 1) != 1 || dup2(out, 2) != 2)
        _exit(127);
    if (syscall(SYS_close_range, 3, ~0U, 0) != 0)
        _exit(127);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGPIPE, &dfl, NULL); /* sandboxd ignores it; an exec keeps that */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(exe, argv, envp);
    _exit(127);
}

/* sandboxd's environment (the configuration comes from it), with the
 * socket it listens on: `--socket` may have set it, and a build's RUN
 * steps connect back to this sandboxd. Caller frees the array and [0]. */
static char **ij_env(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **e = calloc(n + 2, sizeof *e);
    size_t sl = strlen(g_cfg->sandboxd_socket) + sizeof "LLMBOX_SANDBOXD_SOCKET=";
    char *sock = malloc(sl);
    if (!e || !sock) {
        free(e);
        free(sock);
        return NULL;
    }
    snprintf(sock, sl, "LLMBOX_SANDBOXD_SOCKET=%s", g_cfg->sandboxd_socket);
    size_t k = 0;
    e[k++] = sock;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LLMBOX_SANDBOXD_SOCKET=", 23))
            e[k++] = environ[i];
    e[k] = NULL;
    return e;
}

/* Forks and execs argv (never through a shell); *pid and *out_fd (the
 * read end, non-blocking) on success. */
static int ij_spawn(const char *exe, char *const argv[], pid_t *pid, int *out_fd, char *msg, size_t msgsz)
{
    int p[2] = {-1, -1}, nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nul < 0 || pipe2(p, O_CLOEXEC) != 0) {
        snprintf(msg, msgsz, "cannot start the image job: %s", strerror(errno));
        if (nul >= 0)
            close(nul);
        return LB_E_INTERNAL;
    }
    char **envp = ij_env();
    if (!envp) {
        snprintf(msg, msgsz, "cannot start the image job: out of memory");
        close(nul);
        close(p[0]);
        close(p[1]);
        return LB_E_NOMEM;
    }
    pid_t self = getpid();
    fflush(NULL);
    pid_t c = fork();
    if (c == 0)
        ij_child(self, nul, p[1], exe, argv, envp);
    int e = errno;
    free(envp[0]);
    free(envp);
    close(nul);
    close(p[1]);
    if (c < 0) {
        close(p[0]);
        snprintf(msg, msgsz, "cannot start the image job: %s", strerror(e));
        return LB_E_INTERNAL;
    }
    (void)fcntl(p[0], F_SETFL, O_NONBLOCK); /* a pipe: cannot fail */
    *pid = c;
    *out_fd = p[0];
    return LB_OK;
}

/* rm -rf of a job's context, as a child: a big context must not hold up
 * the loop. Its end comes to lbsd_image_jobs_child_exited like a job's. */
static pid_t g_rm[16];

static void ij_remove_ctx(const ij_job *j)
{
    char path[sizeof g_dir + 64];
    snprintf(path, sizeof path, "%s/%s.ctx", g_dir, j->id);
    char *argv[] = {"rm", "-rf", "--", path, NULL};
    pid_t pid;
    int fd;
    char msg[256];
    if (ij_spawn("/bin/rm", argv, &pid, &fd, msg, sizeof msg) != LB_OK) {
        lb_warn("image job %s: %s; %s stays until sandboxd restarts", j->id, msg, path);
        return;
    }
    close(fd); /* rm -f prints nothing worth keeping */
    for (size_t i = 0; i < sizeof g_rm / sizeof g_rm[0]; i++) {
        if (!g_rm[i]) {
            g_rm[i] = pid;
            break;
        }
    }
}

/* ---- jobs ----------------------------------------------------------------------- */

static ij_job *ij_find(const char *id)
{
    for (size_t i = 0; i < LBSD_IMGJOB_REMEMBER; i++)
        if (g_jobs[i].state != IJ_FREE && !strcmp(g_jobs[i].id, id))
            return &g_jobs[i];
    return NULL;
}

static void ij_forget(ij_job *j)
{
    char path[sizeof g_dir + 64];
    if (j->log_fd >= 0)
        close(j->log_fd);
    if (j->out_fd >= 0)
        close(j->out_fd);
    snprintf(path, sizeof path, "%s/%s.log", g_dir, j->id);
    unlink(path);
    if (j->has_ctx)
        ij_remove_ctx(j);
    *j = (ij_job){.out_fd = -1, .log_fd = -1};
}

/* A free slot, forgetting the job that ended first when none is free. */
static ij_job *ij_slot(void)
{
    ij_job *oldest = NULL;
    for (size_t i = 0; i < LBSD_IMGJOB_REMEMBER; i++) {
        ij_job *j = &g_jobs[i];
        if (j->state == IJ_FREE)
            return j;
        if (j->state != IJ_RUNNING && (!oldest || j->ended_ms < oldest->ended_ms))
            oldest = j;
    }
    if (oldest)
        ij_forget(oldest);
    return oldest;
}

static int ij_running(void)
{
    int n = 0;
    for (size_t i = 0; i < LBSD_IMGJOB_REMEMBER; i++)
        n += g_jobs[i].state == IJ_RUNNING;
    return n;
}

/* Printable ASCII only: the sentence goes into JSON answers and logs. */
static void ij_printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            *s = '?';
}

static void ij_line_end(ij_job *j)
{
    while (j->line_len && (j->line[j->line_len - 1] == '\r' || j->line[j->line_len - 1] == ' '))
        j->line_len--;
    if (!j->line_len)
        return;
    memcpy(j->last, j->line, j->line_len);
    j->last[j->line_len] = '\0';
    j->line_len = 0;
}

/* Bytes of the child's output: into the log (up to its cap) and the line
 * tracker (the failure sentence is the last line, also past the cap). */
static void ij_take(ij_job *j, const char *p, size_t n)
{
    size_t keep = 0;
    if (j->log_len < (int64_t)LBSD_IMGJOB_LOG_MAX)
        keep = (size_t)((int64_t)LBSD_IMGJOB_LOG_MAX - j->log_len) < n
                   ? (size_t)((int64_t)LBSD_IMGJOB_LOG_MAX - j->log_len) : n;
    if (keep && j->log_fd >= 0 && lb_write_all(j->log_fd, p, keep) == LB_OK)
        j->log_len += (int64_t)keep;
    else
        keep = 0;
    j->dropped += (int64_t)(n - keep);
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n')
            ij_line_end(j);
        else if (j->line_len < sizeof j->line - 1)
            j->line[j->line_len++] = p[i];
    }
}

/* Reads what the pipe has (bounded per call, so one chatty job cannot hold
 * the loop); at EOF the pipe is closed. */
static void ij_drain(ij_job *j, size_t budget)
{
    char buf[65536];
    while (j->out_fd >= 0 && budget) {
        ssize_t r = read(j->out_fd, buf, sizeof buf < budget ? sizeof buf : budget);
        if (r > 0) {
            ij_take(j, buf, (size_t)r);
            budget -= (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return;
        close(j->out_fd); /* EOF, or an error no retry mends */
        j->out_fd = -1;
    }
}

/* Ends j once its process is reaped and its output read. */
static void ij_finish_maybe(ij_job *j)
{
    if (j->state != IJ_RUNNING || j->pid > 0 || j->out_fd >= 0)
        return;
    ij_line_end(j);
    j->ended_ms = lb_mono_ms();
    int ok = WIFEXITED(j->status) && WEXITSTATUS(j->status) == 0;
    j->state = ok ? IJ_SUCCEEDED : IJ_FAILED;
    const char *what = j->kind == IJ_PULL ? "pull" : "build";
    if (!ok) {
        /* the CLI's "llmbox: image pull: <sentence>": the sentence */
        char pre[32];
        snprintf(pre, sizeof pre, "llmbox: image %s: ", what);
        if (!strncmp(j->last, pre, strlen(pre)))
            memmove(j->last, j->last + strlen(pre), strlen(j->last + strlen(pre)) + 1);
        if (j->killed_slow)
            snprintf(j->last, sizeof j->last, "The image %s of %.255s took longer than %lld s and was stopped.",
                     what, j->ref, LBSD_IMGJOB_RUN_MAX_MS / 1000);
        else if (!j->last[0] && WIFSIGNALED(j->status))
            snprintf(j->last, sizeof j->last, "The image %s of %.255s was killed by signal %d.", what, j->ref,
                     WTERMSIG(j->status));
        else if (!j->last[0])
            snprintf(j->last, sizeof j->last, "The image %s of %.255s failed with exit status %d.", what, j->ref,
                     WIFEXITED(j->status) ? WEXITSTATUS(j->status) : -1);
        ij_printable(j->last);
    }
    lb_info("image job %s (%s %s) %s", j->id, what, j->ref, ok ? "succeeded" : "failed");
    if (j->has_ctx) {
        ij_remove_ctx(j); /* the build is done with it */
        j->has_ctx = 0;
    }
}

size_t lbsd_image_jobs_fd_count(void)
{
    size_t n = 0;
    for (size_t i = 0; i < LBSD_IMGJOB_REMEMBER; i++)
        n += g_jobs[i].out_fd >= 0;
    return n;
}

size_t lbsd_image_jobs_fds(struct pollfd *pfd, size_t room)
{
    size_t n = 0;
    for (size_t i = 0; i < LBSD_IMGJOB_REMEMBER && n < room; i++)
        if (g_jobs[i].out_fd >= 0)
            pfd[n++] = (struct pollfd){.fd = g_jobs[i].out_fd, .events = POLLIN};
    return n;
}

void lbsd_image_jobs_on_ready(int fd)
{
    for (size_t i = 0; i < LBSD_IMGJOB_REMEMBER; i++) {
        ij_job *j = &g_jobs[i];
        if (j->out_fd == fd && fd >= 0) {
            ij_drain(j, 256u << 10);
            ij_finish_maybe(j);
            return;
        }
    }
}

int lbsd_image_jobs_child_exited(pid_t pid, int status)
{
    for (size_t i = 0; i < sizeof g_rm / sizeof g_rm[0]; i++) {
        if (g_rm[i] == pid) {
            g_rm[i] = 0;
            return 1;
        }
    }
    for (size_t i = 0; i < LBSD_IMGJOB_REMEMBER; i++) {
        ij_job *j = &g_jobs[i];
        if (j->state != IJ_RUNNING || j->pid != pid)
            continue;
        j->pid = 0;
        j->status = status;
        /* what it wrote before it ended; a helper it left behind that still
         * holds the pipe is not waited for */
        ij_drain(j, LBSD_IMGJOB_LOG_MAX);
        if (j->out_fd >= 0) {
            close(j->out_fd);
            j->out_fd = -1;
        }
        ij_finish_maybe(j);
        return 1;
    }
    return 0;
}

int lbsd_image_jobs_tick(int64_t now)
{
    int64_t next = -1;
    for (size_t i = 0; i < LBSD_IMGJOB_REMEMBER; i++) {
        ij_job *j = &g_jobs[i];
        int64_t due;
        if (j->state == IJ_RUNNING && j->pid > 0) {
            due = j->started_ms + LBSD_IMGJOB_RUN_MAX_MS;
            if (due <= now && !j->killed_slow) {
                lb_warn("image job %s ran longer than %lld s: killed", j->id, LBSD_IMGJOB_RUN_MAX_MS / 1000);
                j->killed_slow = 1;
                kill(-j->pid, SIGKILL);
                continue;
            }
        } else if (j->state == IJ_SUCCEEDED || j->state == IJ_FAILED) {
            due = j->ended_ms + LBSD_IMGJOB_KEEP_MS;
            if (due <= now) {
                ij_forget(j);
                continue;
            }
        } else {
            continue;
        }
        if (due > now && (next < 0 || due - now < next))
            next = due - now;
    }
    return next < 0 || next > 60000 ? (next < 0 ? -1 : 60000) : (int)next;
}

/* ---- requests ------------------------------------------------------------------- */

/* [a-z0-9-]{1,64}: a context folder's name */
static int ij_ctx_name_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= LBSD_IMGJOB_CONTEXT_MAX && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* [A-Za-z0-9._-]{1,128}, not starting with '.' or '-': a file name in the context */
static int ij_file_name_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 128 && s[0] != '.' && s[0] != '-' &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* K=V with K [A-Za-z_][A-Za-z0-9_]*, no control characters */
static int ij_build_arg_ok(const char *s)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s || strlen(s) > LBSD_IMGJOB_ARG_MAX || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (const char *p = s; p < eq; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    for (const char *p = eq + 1; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static const char *ij_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Moves the web's context folder into the jobs' folder (root's, 0700) as
 * <id>.ctx: from then on the web cannot change what the build reads. The
 * folder itself must not be a symlink; the builder follows none inside
 * (images/build_copy.c). */
static int ij_take_context(const char *name, const char *dockerfile, const char *id, char *msg, size_t msgsz)
{
    int root = open(g_ctxroot, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int jobs = open(g_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char to[64];
    snprintf(to, sizeof to, "%s.ctx", id);
    struct stat st;
    int rc = LB_E_INVAL;
    if (root < 0 || jobs < 0) {
        snprintf(msg, msgsz, "The build contexts' folder %.300s cannot be opened: %s.", g_ctxroot, strerror(errno));
        rc = LB_E_INTERNAL;
    } else if (fstatat(root, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        snprintf(msg, msgsz, "There is no build context \"%s\" in %.300s.", name, g_ctxroot);
        rc = LB_E_NOTFOUND;
    } else if (!S_ISDIR(st.st_mode)) {
        snprintf(msg, msgsz, "The build context \"%s\" is not a folder%s.", name,
                 S_ISLNK(st.st_mode) ? " (it is a symlink)" : "");
    } else if (renameat(root, name, jobs, to) != 0) {
        snprintf(msg, msgsz, "The build context \"%s\" cannot be taken: %s.", name, strerror(errno));
        rc = LB_E_INTERNAL;
    } else if (fstatat(jobs, to, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
        /* swapped for something else between the look and the move */
        snprintf(msg, msgsz, "The build context \"%s\" is not a folder.", name);
        if (unlinkat(jobs, to, 0) != 0 && errno != ENOENT)
            lb_warn("cannot remove %s/%s: %s", g_dir, to, strerror(errno));
    } else {
        int d = openat(jobs, to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d >= 0 && fstatat(d, dockerfile, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
            rc = LB_OK;
        } else {
            snprintf(msg, msgsz, "The build context \"%s\" has no file %s (a symlink is not taken).", name,
                     dockerfile);
            rc = LB_E_INVAL;
        }
        if (d >= 0)
            close(d);
    }
    if (root >= 0)
        close(root);
    if (jobs >= 0)
        close(jobs);
    return rc;
}

static void ij_start(lbsd_conn *c, const lbsd_req *req)
{
    const cJSON *o = req->json;
    const char *kind = ij_str(o, "kind"), *ref = ij_str(o, "ref");
    const char *ctx = ij_str(o, "context"), *df = ij_str(o, "dockerfile");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "build_args");
    const cJSON *netv = cJSON_GetObjectItemCaseSensitive(o, "network");
    char why[256] = "";
    lb_image_ref r;
    int build = kind && !strcmp(kind, "build");
    if (!kind || (!build && strcmp(kind, "pull"))) {
        lbsd_reply_error(c, LB_E_INVAL, "\"kind\" must be \"pull\" or \"build\"");
        return;
    }
    if (!ref || strlen(ref) > LBSD_IMAGE_REF_MAX || ref[0] == '-' ||
        lb_image_ref_parse(ref, LB_IMAGE_REF_LOCAL, &r, why, sizeof why) != LB_OK) {
        lbsd_reply_error(c, LB_E_INVAL, "\"ref\" must be an image reference%s%s", why[0] ? ": " : "", why);
        return;
    }
    if (!build && lb_image_ref_is_local(&r)) {
        lbsd_reply_error(c, LB_E_INVAL, "\"ref\" must name a registry (host[:port]/repo[:tag]) to pull from");
        return;
    }
    int nargs = 0;
    if (build) {
        if (!ctx || !ij_ctx_name_ok(ctx)) {
            lbsd_reply_error(c, LB_E_INVAL, "\"context\" must be a folder name ([a-z0-9-]{1,64}) under %s",
                             g_ctxroot);
            return;
        }
        if (df && !ij_file_name_ok(df)) {
            lbsd_reply_error(c, LB_E_INVAL, "\"dockerfile\" must be a file name ([A-Za-z0-9._-]{1,128}, "
                                            "not starting with '.' or '-')");
            return;
        }
        if (args && !cJSON_IsArray(args)) {
            lbsd_reply_error(c, LB_E_INVAL, "\"build_args\" must be an array of \"K=V\" strings");
            return;
        }
        const cJSON *a;
        cJSON_ArrayForEach(a, args) {
            if (++nargs > LBSD_IMGJOB_ARGS_MAX || !cJSON_IsString(a) || !ij_build_arg_ok(a->valuestring)) {
                lbsd_reply_error(c, LB_E_INVAL, "\"build_args\" must be at most %d strings \"K=V\" (K a name, "
                                                "at most %d bytes each, no control characters)",
                                 LBSD_IMGJOB_ARGS_MAX, LBSD_IMGJOB_ARG_MAX);
                return;
            }
        }
        /* the build's network (the builder's --network): never more than
         * the operator lets any sandbox have (network_allow), since the
         * build's RUN sandboxes are sandboxes of sandboxd's own */
        if (netv && (!cJSON_IsString(netv) || (strcmp(netv->valuestring, "none") && strcmp(netv->valuestring, "nat")))) {
            lbsd_reply_error(c, LB_E_INVAL, "\"network\" of a build must be \"none\" or \"nat\"");
            return;
        }
        if (netv && strcmp(netv->valuestring, "none") && !lb_cfg_network_allowed(g_cfg, netv->valuestring)) {
            lbsd_reply_error(c, LB_E_INVAL, "a build with network \"%s\" is not allowed here: the operator's "
                                             "network_allow is \"%s\"", netv->valuestring, g_cfg->network_allow);
            return;
        }
    } else if (ctx || df || args || netv) {
        lbsd_reply_error(c, LB_E_INVAL, "a pull takes no context, dockerfile, build_args nor network");
        return;
    }
    /* one pull per reference: the same one running is the answer */
    for (size_t i = 0; !build && i < LBSD_IMGJOB_REMEMBER; i++) {
        ij_job *j = &g_jobs[i];
        if (j->state == IJ_RUNNING && j->kind == IJ_PULL && !strcmp(j->ref, ref)) {
            cJSON *resp = cJSON_CreateObject();
            if (resp)
                cJSON_AddStringToObject(resp, "job", j->id);
            lbsd_reply(c, resp, NULL, 0, 0);
            return;
        }
    }
    if (ij_running() >= g_cfg->image_jobs_max) {
        lbsd_reply_error(c, LB_E_BUSY, "sandboxd runs %d image jobs already (image_jobs_max); try again when one "
                                       "ends", g_cfg->image_jobs_max);
        return;
    }
    ij_job *j = ij_slot();
    if (!j) {
        lbsd_reply_error(c, LB_E_BUSY, "sandboxd remembers %d image jobs already; try again when one ends",
                         LBSD_IMGJOB_REMEMBER);
        return;
    }
    char id[LB_ID_HEX_LEN + 1], msg[512];
    if (lb_random_hex(id, sizeof id, LB_ID_HEX_LEN / 2) != LB_OK) {
        lbsd_reply_error(c, LB_E_INTERNAL, "no random bytes for an image job id");
        return;
    }
    const char *dockerfile = df ? df : "Dockerfile";
    int rc;
    if (build && (rc = ij_take_context(ctx, dockerfile, id, msg, sizeof msg)) != LB_OK) {
        /* a folder already moved (its Dockerfile missing) goes */
        char taken[sizeof g_dir + 64];
        snprintf(taken, sizeof taken, "%s/%s.ctx", g_dir, id);
        struct stat st;
        if (lstat(taken, &st) == 0) {
            ij_job tmp = {0};
            snprintf(tmp.id, sizeof tmp.id, "%s", id);
            ij_remove_ctx(&tmp);
        }
        lbsd_reply_error(c, rc, "%s", msg);
        return;
    }
    /* argv only, never a shell: every field was checked above */
    char exe[LB_CFG_PATH + 16], ctxpath[sizeof g_dir + 64], dfpath[sizeof ctxpath + 140], logp[sizeof g_dir + 64];
    const char *slash = strrchr(g_cfg->self_exe, '/');
    snprintf(exe, sizeof exe, "%.*s/llmbox", slash ? (int)(slash - g_cfg->self_exe) : 1,
             slash ? g_cfg->self_exe : ".");
    snprintf(ctxpath, sizeof ctxpath, "%s/%s.ctx", g_dir, id);
    snprintf(dfpath, sizeof dfpath, "%s/%s", ctxpath, dockerfile);
    char *argv[10 + 2 * LBSD_IMGJOB_ARGS_MAX];
    int n = 0;
    argv[n++] = "llmbox";
    argv[n++] = "image";
    if (build) {
        argv[n++] = "build";
        argv[n++] = "-f";
        argv[n++] = dfpath;
        const cJSON *a;
        cJSON_ArrayForEach(a, args) {
            argv[n++] = "--build-arg";
            argv[n++] = a->valuestring;
        }
        if (netv) {
            argv[n++] = "--network";
            argv[n++] = netv->valuestring;
        }
        argv[n++] = (char *)ref;
        argv[n++] = ctxpath;
    } else {
        argv[n++] = "pull";
        argv[n++] = "--if-missing";
        argv[n++] = (char *)ref;
    }
    argv[n] = NULL;
    *j = (ij_job){.state = IJ_RUNNING, .kind = build ? IJ_BUILD : IJ_PULL, .out_fd = -1, .log_fd = -1,
                  .started_ms = lb_mono_ms(), .has_ctx = build};
    snprintf(j->id, sizeof j->id, "%s", id);
    snprintf(j->ref, sizeof j->ref, "%s", ref);
    snprintf(logp, sizeof logp, "%s/%s.log", g_dir, id);
    j->log_fd = open(logp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (j->log_fd < 0)
        lb_warn("image job %s: cannot make its log %s: %s", id, logp, strerror(errno));
    if (ij_spawn(exe, argv, &j->pid, &j->out_fd, msg, sizeof msg) != LB_OK) {
        ij_forget(j);
        lbsd_reply_error(c, LB_E_INTERNAL, "%s", msg);
        return;
    }
    lb_info("image job %s: %s %s (pid %d)", id, build ? "build" : "pull", ref, (int)j->pid);
    cJSON *resp = cJSON_CreateObject();
    if (resp)
        cJSON_AddStringToObject(resp, "job", id);
    lbsd_reply(c, resp, NULL, 0, 0);
}

static void ij_poll(lbsd_conn *c, const lbsd_req *req)
{
    const cJSON *o = req->json;
    const char *id = ij_str(o, "job");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(o, "offset"), *mx = cJSON_GetObjectItemCaseSensitive(o, "max");
    if (!id || !lb_id_valid(id)) {
        lbsd_reply_error(c, LB_E_INVAL, "\"job\" must be an image job id (32 hex characters)");
        return;
    }
    if ((off && (!cJSON_IsNumber(off) || off->valuedouble < 0 || off->valuedouble > 9007199254740992.0)) ||
        (mx && (!cJSON_IsNumber(mx) || mx->valuedouble < 0))) {
        lbsd_reply_error(c, LB_E_INVAL, "\"offset\" and \"max\" must be numbers of at least 0");
        return;
    }
    ij_job *j = ij_find(id);
    if (!j) {
        lbsd_reply_error(c, LB_E_NOTFOUND, "there is no image job %s (or it ended over %d s ago, or sandboxd "
                                           "restarted since)", id, LBSD_IMGJOB_KEEP_MS / 1000);
        return;
    }
    if (j->out_fd >= 0)
        ij_drain(j, 256u << 10); /* what it printed up to now */
    int64_t from = off ? (int64_t)off->valuedouble : 0;
    size_t max = mx && mx->valuedouble < LBSD_IMGJOB_POLL_MAX ? (size_t)mx->valuedouble : LBSD_IMGJOB_POLL_MAX;
    if (from > j->log_len)
        from = j->log_len;
    size_t want = (size_t)(j->log_len - from) < max ? (size_t)(j->log_len - from) : max, got = 0;
    char *buf = want ? malloc(want) : NULL;
    if (want && !buf) {
        lbsd_reply_error(c, LB_E_NOMEM, "out of memory");
        return;
    }
    while (got < want && j->log_fd >= 0) {
        ssize_t r = pread(j->log_fd, buf + got, want - got, from + (int64_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    cJSON *resp = cJSON_CreateObject();
    const char *state = j->state == IJ_RUNNING ? "running" : j->state == IJ_SUCCEEDED ? "succeeded" : "failed";
    if (resp) {
        cJSON_AddStringToObject(resp, "state", state);
        cJSON_AddStringToObject(resp, "kind", j->kind == IJ_PULL ? "pull" : "build");
        cJSON_AddStringToObject(resp, "ref", j->ref);
        cJSON_AddNumberToObject(resp, "next_offset", (double)(from + (int64_t)got));
        cJSON_AddNumberToObject(resp, "log_bytes", (double)j->log_len);
        cJSON_AddNumberToObject(resp, "log_dropped", (double)j->dropped);
        if (j->state != IJ_RUNNING)
            cJSON_AddNumberToObject(resp, "exit_code", WIFEXITED(j->status) ? WEXITSTATUS(j->status)
                                                                            : 128 + WTERMSIG(j->status));
        if (j->state == IJ_FAILED)
            cJSON_AddStringToObject(resp, "error", j->last);
    }
    lbsd_reply(c, resp, buf ? buf : "", got, 1);
    free(buf);
}

void lbsd_image_job_request(lbsd_conn *c, const lbsd_req *req)
{
    if (!g_cfg) {
        lbsd_reply_error(c, LB_E_INTERNAL, "image jobs are not set up");
        return;
    }
    if (req->op == LBSD_OP_IMAGE_JOB_START)
        ij_start(c, req);
    else
        ij_poll(c, req);
}
