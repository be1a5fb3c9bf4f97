/* sandboxd's own processes: the loop's side (sandbox_proc.h). */
#include "sandboxd/sandbox_proc.h"

#include "sandboxd/image_layers.h"
#include "sandboxd/image_user.h"

#include "sandboxd/egress_secrets.h"
#include "sandboxd/fdpass.h"
#include "sandboxd/hostlimits.h"

#include "common/log.h"
#include "common/status.h"
#include "sandboxd/sandbox_set.h"
#include "sandboxd/sandbox_create.h"
#include "sandboxd/reply.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* A message to init not sent yet (its channel was full). */
typedef struct lbsd_pmsg {
    struct lbsd_pmsg *next;
    char *buf;
    size_t len;
    int fds[3];
    int nfds;
} lbsd_pmsg;

typedef struct lbsd_proc {
    struct lbsd_proc *next;
    uint32_t seq;                  /* its START's */
    int pid;                       /* in the sandbox; 0 until init says */
    char tag[LBSD_PROC_TAG_MAX + 1];
    char *meta;                    /* the client's note, or NULL */
    int out_fd, err_fd, in_fd;     /* our ends, -1 when closed */
    int has_stdin;
    lb_buf in;                     /* stdin bytes the process has not taken yet */
    size_t in_off;
    int in_eof;                    /* close stdin once in is written */
    lbsd_conn *watch[LBSD_PROC_WATCHERS];
    int nwatch;
    lbsd_conn *starter;            /* waits for the start's answer */
    uint64_t dropped;              /* output read while nobody was attached */
    int64_t start_ms;
} lbsd_proc;

typedef struct lbsd_procs {
    struct lbsd_procs *next;       /* g_sets */
    lbsd_sandbox *sb;
    int sock;                      /* our end of the channel to the spawner */
    int ready;                     /* its HELLO came and its oom score is set */
    pid_t spawner_pid;             /* its host pid (from HELLO's credentials), 0 until then */
    int64_t checked_ms;            /* the watchdog's last look at a late spawner */
    lbsd_proc *list;
    int n;
    uint32_t seq;
    lbsd_pmsg *q, *q_tail;         /* to init, in order */
} lbsd_procs;

/* the sandboxes that have a channel: the sets the loop polls */
static lbsd_procs *g_sets;

static lbsd_procs *lp_set(const lbsd_sandbox *sb)
{
    for (lbsd_procs *p = g_sets; p; p = p->next)
        if (p->sb == sb)
            return p;
    return NULL;
}

static void lp_close(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* ---- events ------------------------------------------------------------- */

static void lp_event(lbsd_conn *c, lbsd_proc *p, const char *kind, cJSON *extra, const void *data, size_t n,
                     int with_data)
{
    cJSON *r = extra ? extra : cJSON_CreateObject();
    if (r) {
        cJSON_AddStringToObject(r, "event", kind);
        cJSON_AddNumberToObject(r, "pid", p->pid);
    }
    lbsd_reply(c, r, data, n, with_data);
}

static void lp_out(lbsd_proc *p, int fd_no, const char *data, size_t n)
{
    if (!p->nwatch) {
        p->dropped += n;
        return;
    }
    for (int i = 0; i < p->nwatch; i++) {
        cJSON *x = cJSON_CreateObject();
        if (x)
            cJSON_AddNumberToObject(x, "fd", fd_no);
        lp_event(p->watch[i], p, "out", x, data, n, 1);
    }
}

/* Whether c has taken enough for now: over the backlog, or waiting for
 * an exec of its own (its events would queue behind that answer, in a
 * buffer of 64 KiB). */
static int lp_unsent(const lbsd_conn *c)
{
    return c->busy || c->out.len - c->out_off + c->deferred.len > LBSD_PROC_BACKLOG;
}

/* ---- life of a process -------------------------------------------------- */

static void lp_free(lbsd_proc *p)
{
    lp_close(&p->out_fd);
    lp_close(&p->err_fd);
    lp_close(&p->in_fd);
    lb_buf_free(&p->in);
    free(p->meta);
    free(p);
}

static void lp_unlink(lbsd_procs *set, lbsd_proc *p)
{
    for (lbsd_proc **pp = &set->list; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            set->n--;
            return;
        }
}

/* Reads one pipe once (or, at the exit, until it is empty or max bytes);
 * returns the bytes read. Closes it at EOF. */
static size_t lp_read(lbsd_proc *p, int *fd, int fd_no, size_t max)
{
    static char buf[LBSD_PROC_READ];
    size_t got = 0;
    while (*fd >= 0 && got < max) {
        ssize_t r = read(*fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            break;
        if (r <= 0) {
            lp_close(fd);
            break;
        }
        lp_out(p, fd_no, buf, (size_t)r);
        got += (size_t)r;
        if (max == LBSD_PROC_READ)
            break; /* one read per turn: the loop stays fair */
    }
    return got;
}

/* The process ended (init reaped it): what it wrote before is in its
 * pipes, so they are emptied (up to a cap: a child it left behind may
 * go on writing) before the exit event. */
static void lp_exited(lbsd_procs *set, lbsd_proc *p, int status)
{
    lp_read(p, &p->out_fd, 1, LBSD_PROC_DRAIN_MAX);
    lp_read(p, &p->err_fd, 2, LBSD_PROC_DRAIN_MAX);
    for (int i = 0; i < p->nwatch; i++) {
        cJSON *x = cJSON_CreateObject();
        if (x && WIFEXITED(status))
            cJSON_AddNumberToObject(x, "exit_code", WEXITSTATUS(status));
        else if (x && WIFSIGNALED(status))
            cJSON_AddNumberToObject(x, "signal", WTERMSIG(status));
        lp_event(p->watch[i], p, "exit", x, NULL, 0, 0);
    }
    lb_debug("sandbox %s: process %d ended (status %d)", set->sb->id, p->pid, status);
    lp_unlink(set, p);
    lp_free(p);
}

/* ---- the channel to init ------------------------------------------------ */

static void lp_flush(lbsd_procs *set)
{
    while (set->ready && set->q) {
        lbsd_pmsg *m = set->q;
        ssize_t w = m->nfds ? lbsd_fds_send(set->sock, m->buf, m->len, m->fds, m->nfds, MSG_DONTWAIT)
                            : send(set->sock, m->buf, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w < 0)
            lb_warn("sandbox %s: cannot reach init about a process: %s", set->sb->id, strerror(errno));
        /* sent (init has its copies) or lost (the sandbox is going: its
         * EOF tells the rest) */
        set->q = m->next;
        if (!set->q)
            set->q_tail = NULL;
        for (int i = 0; i < m->nfds; i++)
            close(m->fds[i]);
        free(m->buf);
        free(m);
    }
}

/* Queues buf (taken) with fds (taken) for init. */
static void lp_queue(lbsd_procs *set, char *buf, size_t len, const int *fds, int nfds)
{
    lbsd_pmsg *m = calloc(1, sizeof *m);
    if (!m) {
        free(buf);
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        return;
    }
    m->buf = buf;
    m->len = len;
    m->nfds = nfds;
    for (int i = 0; i < nfds; i++)
        m->fds[i] = fds[i];
    if (set->q_tail)
        set->q_tail->next = m;
    else
        set->q = m;
    set->q_tail = m;
    lp_flush(set);
}

/* The set of sb, with its channel made and handed to init on first use. */
static lbsd_procs *lp_open(lbsd_sandbox *sb, char *msg, size_t msgsz)
{
    lbsd_procs *set = lp_set(sb);
    if (set)
        return set;
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) != 0) {
        snprintf(msg, msgsz, "cannot make a channel to the sandbox's init: %s", strerror(errno));
        return NULL;
    }
    /* big enough for one START (the spec is capped below it) */
    int sz = (int)(LBSD_PROC_SPEC_MAX + 8192), one = 1;
    (void)setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz); /* the default holds it too */
    if (setsockopt(sp[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof one) != 0) { /* the spawner's host pid */
        snprintf(msg, msgsz, "cannot make a channel to the sandbox's init: SO_PASSCRED: %s", strerror(errno));
        close(sp[0]);
        close(sp[1]);
        return NULL;
    }
    if (lbsd_fds_send(sb->ctl_fd, "PROCSOCK", 8, &sp[1], 1, 0) != 8) {
        snprintf(msg, msgsz, "cannot reach the sandbox's init: %s", strerror(errno));
        close(sp[0]);
        close(sp[1]);
        return NULL;
    }
    close(sp[1]);
    set = calloc(1, sizeof *set);
    if (!set) {
        close(sp[0]);
        snprintf(msg, msgsz, "out of memory");
        return NULL;
    }
    set->sb = sb;
    set->sock = sp[0];
    set->next = g_sets;
    g_sets = set;
    return set;
}

static lbsd_proc *lp_by_seq(lbsd_procs *set, uint32_t seq)
{
    for (lbsd_proc *p = set->list; p; p = p->next)
        if (!p->pid && p->seq == seq)
            return p;
    return NULL;
}

static lbsd_proc *lp_by_pid(lbsd_procs *set, int pid)
{
    for (lbsd_proc *p = set->list; p; p = p->next)
        if (p->pid == pid)
            return p;
    return NULL;
}

static void lp_starter_done(lbsd_proc *p)
{
    if (p->starter)
        p->starter->creating = 0;
    p->starter = NULL;
}

/* HELLO: the spawner's host pid (from the credentials the kernel put on
 * the message) gets the shell's oom_score_adj, written from the host so
 * that neither it nor what it forks can set a lower one. */
static int lp_hello(lbsd_procs *set, const struct ucred *cr)
{
    if (!cr || cr->pid <= 1 || !lbsd_pid_in_sandbox(set->sb, cr->pid)) {
        lb_warn("sandbox %s: a HELLO on the process channel not from the sandbox", set->sb->id);
        return -1;
    }
    char p[64];
    const char *v = lbsd_host_get()->oom_shield ? "0" : "1000";
    snprintf(p, sizeof p, "/proc/%d/oom_score_adj", (int)cr->pid);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    ssize_t w = fd >= 0 ? write(fd, v, strlen(v)) : -1;
    if (fd >= 0)
        close(fd);
    if (w != (ssize_t)strlen(v)) {
        lb_warn("sandbox %s: cannot set the process spawner's oom_score_adj: %s", set->sb->id, strerror(errno));
        return -1;
    }
    set->ready = 1;
    set->spawner_pid = cr->pid;
    lp_flush(set);
    return 1;
}

/* One message from the spawner; -1 when the channel is gone. */
static int lp_from_init(lbsd_procs *set)
{
    char m[128];
    union {
        char b[CMSG_SPACE(sizeof(struct ucred))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = m, .iov_len = sizeof m - 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b};
    ssize_t n = recvmsg(set->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    if (n <= 0)
        return -1;
    m[n] = '\0';
    const struct ucred *cr = NULL;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h))
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS)
            cr = (const struct ucred *)CMSG_DATA(h);
    unsigned seq;
    int pid, st;
    if (!strcmp(m, "HELLO")) {
        return set->ready ? -1 : lp_hello(set, cr);
    } else if (sscanf(m, "STARTED %u %d", &seq, &pid) == 2) {
        lbsd_proc *p = lp_by_seq(set, seq);
        if (!p)
            return 1;
        p->pid = pid;
        if (p->starter) {
            cJSON *r = cJSON_CreateObject();
            if (r)
                cJSON_AddNumberToObject(r, "pid", pid);
            lbsd_conn *c = p->starter;
            lp_starter_done(p);
            lbsd_reply(c, r, NULL, 0, 0);
        }
    } else if (sscanf(m, "FAILED %u %d", &seq, &st) == 2) {
        lbsd_proc *p = lp_by_seq(set, seq);
        if (!p)
            return 1;
        if (p->starter) {
            lbsd_conn *c = p->starter;
            lp_starter_done(p);
            lbsd_reply_error(c, st == ENOENT || st == ENOTDIR ? LB_E_NOTFOUND : st == EAGAIN ? LB_E_BUSY : LB_E_INVAL,
                             "cannot start the process: %s", strerror(st));
        }
        lp_unlink(set, p);
        lp_free(p);
    } else if (sscanf(m, "PEXIT %d %d", &pid, &st) == 2) {
        lbsd_proc *p = lp_by_pid(set, pid);
        if (p)
            lp_exited(set, p, st);
    }
    return 1;
}

/* ---- requests ----------------------------------------------------------- */

lbsd_sandbox *lbsd_proc_sandbox(lbsd_conn *c, const lbsd_req *req)
{
    lbsd_sandbox *sb = lbsd_sandbox_by_id(req->id);
    if (!sb || (sb->owner != c && sb->creator_uid != c->uid)) {
        lbsd_reply_error(c, LB_E_NOTFOUND, "no sandbox %s", req->id);
        return NULL;
    }
    if (sb->broken) {
        lbsd_note_gone(sb);
        lbsd_reply_error(c, LB_E_SANDBOX, "sandbox %s is gone: %s", sb->id, sb->gone_why);
        return NULL;
    }
    return sb;
}

/* The process req names by "pid" or "tag", answering notfound if none. */
static lbsd_proc *lp_select(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(req->json, "pid");
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(req->json, "tag");
    lbsd_procs *set = lp_set(sb);
    for (lbsd_proc *p = set ? set->list : NULL; p; p = p->next) {
        if (!p->pid)
            continue;
        if ((cJSON_IsNumber(pid) && pid->valuedouble == (double)p->pid) ||
            (!pid && cJSON_IsString(tag) && p->tag[0] && !strcmp(tag->valuestring, p->tag)))
            return p;
    }
    lbsd_reply_error(c, LB_E_NOTFOUND, "no running process with that %s in sandbox %s", pid ? "pid" : "tag", sb->id);
    return NULL;
}

static int lp_add_watcher(lbsd_proc *p, lbsd_conn *c)
{
    for (int i = 0; i < p->nwatch; i++)
        if (p->watch[i] == c)
            return 0;
    if (p->nwatch >= LBSD_PROC_WATCHERS)
        return -1;
    p->watch[p->nwatch++] = c;
    return 0;
}

static int lp_env_name_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 128 || (*s >= '0' && *s <= '9'))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

/* The shell's environment (sandbox_init.c), under the request's. */
static const char *const lp_base_env[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root", "LANG=C.UTF-8", "TERM=dumb", "USER=root", "LOGNAME=root", "SHELL=/bin/bash",
};

/* The START message for req into b; LB_OK or a code and msg. */
/* True when env (an object) or the image's Env sets the variable of
 * "NAME=..." kv (nl: the name's length). */
static int lp_env_over(const cJSON *env, const lbsd_image *img, const char *kv, size_t nl)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, env) {
        if (e->string && strlen(e->string) == nl && !memcmp(e->string, kv, nl))
            return 1;
    }
    for (size_t at = 0; img && at < img->envlen; at += strlen(img->env + at) + 1)
        if (strcspn(img->env + at, "=") == nl && !memcmp(img->env + at, kv, nl))
            return 1;
    return 0;
}

/* A named user's ids for the spawner: "uid:gid:g1,g2,..." ("" for the
 * image's own user, as the shell's). */
static int lp_ids(lb_buf *b, const lbsd_user_ids *u)
{
    int rc = u ? lb_buf_printf(b, "%u:%u:", u->uid, u->gid) : 0;
    for (int i = 0; u && !rc && i < u->ngroups; i++)
        rc = lb_buf_printf(b, "%s%u", i ? "," : "", u->groups[i]);
    return rc ? rc : lb_buf_append(b, "", 1);
}

/* The variable of the base environment that u (a named user) sets itself. */
static int lp_user_var(const lbsd_user_ids *u, const char *kv)
{
    return u && (!strncmp(kv, "HOME=", 5) || !strncmp(kv, "USER=", 5) || !strncmp(kv, "LOGNAME=", 8));
}

static int lp_spec(const lbsd_sandbox *sb, const lbsd_req *req, uint32_t seq, int has_stdin,
                   const lbsd_user_ids *u, lb_buf *b, char *msg, size_t msgsz)
{
    const lbsd_image *img = sb->img;
    const cJSON *o = req->json;
    const cJSON *argv = cJSON_GetObjectItemCaseSensitive(o, "argv");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(o, "env");
    const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(o, "cwd");
    int argc = cJSON_GetArraySize(argv);
    if (!cJSON_IsArray(argv) || argc < 1 || argc > LBSD_PROC_ARGS_MAX) {
        snprintf(msg, msgsz, "\"argv\" must be an array of 1 to %d strings", LBSD_PROC_ARGS_MAX);
        return LB_E_INVAL;
    }
    if (env && (!cJSON_IsObject(env) || cJSON_GetArraySize(env) > LBSD_PROC_ENV_MAX - 8)) {
        snprintf(msg, msgsz, "\"env\" must be an object of at most %d strings", LBSD_PROC_ENV_MAX - 8);
        return LB_E_INVAL;
    }
    if (cwd && (!cJSON_IsString(cwd) || cwd->valuestring[0] != '/' || strlen(cwd->valuestring) > 4096)) {
        snprintf(msg, msgsz, "\"cwd\" must be an absolute path of at most 4096 bytes");
        return LB_E_INVAL;
    }
    /* no cwd: the image's WorkingDir, if it names one */
    const char *dir = cwd ? cwd->valuestring : img && img->workdir[0] ? img->workdir : "";
    int rc = lb_buf_printf(b, "START%c%u%c%d%c%s%c", 0, seq, 0, has_stdin, 0, dir, 0);
    if (!rc)
        rc = lp_ids(b, u);
    if (!rc)
        rc = lb_buf_printf(b, "%d%c", argc, 0);
    const cJSON *a;
    cJSON_ArrayForEach(a, argv)
    {
        if (!cJSON_IsString(a) || (a == argv->child && !a->valuestring[0])) {
            snprintf(msg, msgsz, "\"argv\" must hold strings, the first not empty");
            return LB_E_INVAL;
        }
        if (!rc)
            rc = lb_buf_append(b, a->valuestring, strlen(a->valuestring) + 1);
    }
    for (size_t i = 0; i < sizeof lp_base_env / sizeof lp_base_env[0]; i++) {
        size_t nl = (size_t)(strchr(lp_base_env[i], '=') - lp_base_env[i]);
        if (!lp_env_over(env, img, lp_base_env[i], nl) && !lp_user_var(u, lp_base_env[i]) && !rc)
            rc = lb_buf_append(b, lp_base_env[i], strlen(lp_base_env[i]) + 1);
    }
    /* a gateway that adds secrets: its CA in the bundle (egress_secrets.h) */
    int has_ca = lbsd_egsec_has_ca(sb);
    for (int i = 0; has_ca && lbsd_egsec_env[i]; i++) {
        const char *kv = lbsd_egsec_env[i];
        if (!lp_env_over(env, img, kv, strcspn(kv, "=")) && !rc)
            rc = lb_buf_append(b, kv, strlen(kv) + 1);
    }
    /* a named user's own HOME, USER and LOGNAME (as login sets them) */
    if (u && !lp_env_over(env, img, "HOME=", 4) && !rc)
        rc = lb_buf_printf(b, "HOME=%s%c", u->home, 0);
    if (u && !lp_env_over(env, img, "USER=", 4) && !rc)
        rc = lb_buf_printf(b, "USER=%s%c", u->name, 0);
    if (u && !lp_env_over(env, img, "LOGNAME=", 7) && !rc)
        rc = lb_buf_printf(b, "LOGNAME=%s%c", u->name, 0);
    /* the image's Env, under the request's */
    for (size_t at = 0; img && at < img->envlen; at += strlen(img->env + at) + 1) {
        const char *kv = img->env + at;
        if (!lp_env_over(env, NULL, kv, strcspn(kv, "=")) && !rc)
            rc = lb_buf_append(b, kv, strlen(kv) + 1);
    }
    const cJSON *kv;
    cJSON_ArrayForEach(kv, env)
    {
        if (!lp_env_name_ok(kv->string) || !cJSON_IsString(kv)) {
            snprintf(msg, msgsz, "\"env\": names must match [A-Za-z_][A-Za-z0-9_]* (at most 128 bytes), "
                                 "values be strings");
            return LB_E_INVAL;
        }
        if (!rc)
            rc = lb_buf_printf(b, "%s=%s%c", kv->string, kv->valuestring, 0);
    }
    if (rc) {
        snprintf(msg, msgsz, "the process's argv, env and cwd are over %u bytes", (unsigned)LBSD_PROC_SPEC_MAX);
        return LB_E_TOOBIG;
    }
    return LB_OK;
}

/* SIGCONT to the spawner from the host: the sandbox's code may have
 * stopped it (it is root of the spawner's user namespace). Sent with each
 * start, so that a spawner stopped again and again still starts what it
 * is asked to; harmless to a running one. */
static void lp_continue(lbsd_procs *set)
{
    pid_t pid = set->spawner_pid;
    if (pid > 1 && lbsd_pid_in_sandbox(set->sb, pid))
        kill(pid, SIGCONT);
}

static void lp_start(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req)
{
    char msg[512] = "";
    const cJSON *o = req->json;
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(o, "tag");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "meta");
    int has_stdin = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "stdin"));
    int attach = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "attach"));
    if (tag && (!cJSON_IsString(tag) || strlen(tag->valuestring) > LBSD_PROC_TAG_MAX)) {
        lbsd_reply_error(c, LB_E_INVAL, "\"tag\" must be a string of at most %d bytes", LBSD_PROC_TAG_MAX);
        return;
    }
    if (meta && (!cJSON_IsString(meta) || strlen(meta->valuestring) > LBSD_PROC_META_MAX)) {
        lbsd_reply_error(c, LB_E_INVAL, "\"meta\" must be a string of at most %u bytes", (unsigned)LBSD_PROC_META_MAX);
        return;
    }
    if (sb->frozen) {
        lbsd_reply_error(c, LB_E_BUSY, "sandbox is frozen: thaw it (resume) first");
        return;
    }
    lbsd_procs *set = lp_set(sb);
    if (set && set->n >= LBSD_PROC_MAX) {
        lbsd_reply_error(c, LB_E_BUSY, "sandbox %s runs %d processes already, the most it may", sb->id, LBSD_PROC_MAX);
        return;
    }
    /* a named user (E2B's `user`): its ids from the sandbox's own
     * /etc/passwd and /etc/group, read from here (image_user.h) */
    const cJSON *user = cJSON_GetObjectItemCaseSensitive(o, "user");
    lbsd_user_ids ids;
    if (user && !cJSON_IsString(user)) {
        lbsd_reply_error(c, LB_E_INVAL, "\"user\" must be a user's name");
        return;
    }
    if (user) {
        int urc = lbsd_user_lookup(sb->root_fd, user->valuestring, &ids, msg, sizeof msg);
        if (urc) {
            lbsd_reply_error(c, urc, "%s", msg);
            return;
        }
    }
    lb_buf spec;
    lb_buf_init(&spec, LBSD_PROC_SPEC_MAX);
    uint32_t seq = set ? set->seq + 1 : 1;
    int rc = lp_spec(sb, req, seq, has_stdin, user ? &ids : NULL, &spec, msg, sizeof msg);
    if (rc) {
        lb_buf_free(&spec);
        lbsd_reply_error(c, rc, "%s", msg);
        return;
    }
    if (!set && !(set = lp_open(sb, msg, sizeof msg))) {
        lb_buf_free(&spec);
        lbsd_reply_error(c, LB_E_SANDBOX, "%s", msg);
        return;
    }
    int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1};
    lbsd_proc *p = calloc(1, sizeof *p);
    if (!p || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || (has_stdin && pipe2(in, O_CLOEXEC))) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            lp_close(&out[i]);
            lp_close(&err[i]);
            lp_close(&in[i]);
        }
        free(p);
        lb_buf_free(&spec);
        lbsd_reply_error(c, LB_E_BUSY, "cannot make the process's pipes: %s", p ? strerror(e) : "out of memory");
        return;
    }
    set->seq = seq;
    p->seq = seq;
    p->out_fd = out[0];
    p->err_fd = err[0];
    p->in_fd = in[1];
    p->has_stdin = has_stdin;
    fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
    if (p->in_fd >= 0)
        fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
    lb_buf_init(&p->in, LBSD_PROC_INPUT_MAX);
    snprintf(p->tag, sizeof p->tag, "%s", tag ? tag->valuestring : "");
    p->meta = meta ? strdup(meta->valuestring) : NULL;
    p->start_ms = lb_mono_ms();
    p->starter = c;
    c->creating = 1; /* not read until the start is answered: answers stay in order */
    if (attach)
        p->watch[p->nwatch++] = c;
    p->next = set->list;
    set->list = p;
    set->n++;
    int fds[3] = {out[1], err[1], in[0]};
    size_t len = spec.len;
    lp_queue(set, lb_buf_steal(&spec, NULL), len, fds, has_stdin ? 3 : 2);
    lp_continue(set);
}

/* stdin bytes sandboxd holds for the set's processes (not yet taken) */
static size_t lp_in_held(const lbsd_procs *set)
{
    size_t n = 0;
    for (const lbsd_proc *p = set->list; p; p = p->next)
        n += p->in.len; /* what is allocated: the written part goes once the rest is */
    return n;
}

size_t lbsd_proc_input_cap(const lbsd_sandbox *sb)
{
    uint64_t mib = sb->memory_mib > 0 ? (uint64_t)sb->memory_mib
                   : sb->cfg && sb->cfg->sandbox_memory_mib > 0 ? (uint64_t)sb->cfg->sandbox_memory_mib : 2048;
    uint64_t cap = (mib << 20) / LBSD_PROC_INPUT_SHARE;
    if (cap < LBSD_PROC_INPUT_MAX)
        cap = LBSD_PROC_INPUT_MAX;
    if (cap > LBSD_PROC_INPUT_SB_MAX)
        cap = LBSD_PROC_INPUT_SB_MAX;
    return (size_t)cap;
}

static void lp_input(lbsd_conn *c, lbsd_sandbox *sb, lbsd_proc *p, const lbsd_req *req, const char *data,
                     size_t dlen)
{
    if (!p->has_stdin) {
        lbsd_reply_error(c, LB_E_INVAL, "process %d was started without stdin", p->pid);
        return;
    }
    if (p->in_eof || p->in_fd < 0) {
        lbsd_reply_error(c, LB_E_INVAL, "the stdin of process %d is closed", p->pid);
        return;
    }
    lbsd_procs *set = lp_set(sb);
    size_t held = set ? lp_in_held(set) : 0, cap = lbsd_proc_input_cap(sb);
    if (dlen && held + dlen > cap) {
        /* what sandboxd holds for the sandbox is root's memory, outside its
         * cgroup: bounded by the sandbox's own budget, the sender waits */
        lbsd_reply_error(c, LB_E_BUSY, "the processes of sandbox %s have not read the %zu bytes of stdin sent "
                                       "before these, the most sandboxd holds for it (%zu, from its memory "
                                       "limit): try again later", sb->id, held, cap);
        return;
    }
    if (dlen && lb_buf_append(&p->in, data, dlen) != LB_OK) {
        lbsd_reply_error(c, LB_E_BUSY, "process %d has not read the %zu bytes of stdin before these: try again later",
                         p->pid, p->in.len - p->in_off);
        return;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req->json, "eof"))) {
        p->in_eof = 1;
        if (p->in_off >= p->in.len)
            lp_close(&p->in_fd);
    }
    lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
}

static void lp_list(lbsd_conn *c, lbsd_sandbox *sb)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *arr = r ? cJSON_AddArrayToObject(r, "procs") : NULL;
    lbsd_procs *set = lp_set(sb);
    int64_t now = lb_mono_ms();
    for (lbsd_proc *p = set ? set->list : NULL; arr && p; p = p->next) {
        if (!p->pid)
            continue;
        cJSON *it = cJSON_CreateObject();
        if (!it || !cJSON_AddItemToArray(arr, it))
            break;
        cJSON_AddNumberToObject(it, "pid", p->pid);
        if (p->tag[0])
            cJSON_AddStringToObject(it, "tag", p->tag);
        if (p->meta)
            cJSON_AddStringToObject(it, "meta", p->meta);
        cJSON_AddBoolToObject(it, "stdin", p->has_stdin && p->in_fd >= 0);
        cJSON_AddNumberToObject(it, "attached", p->nwatch);
        cJSON_AddNumberToObject(it, "dropped", (double)p->dropped);
        cJSON_AddNumberToObject(it, "age_ms", (double)(now - p->start_ms));
    }
    lbsd_reply(c, r, NULL, 0, 0);
}

void lbsd_proc_request(lbsd_conn *c, const lbsd_req *req, const char *data, size_t dlen)
{
    lbsd_sandbox *sb = lbsd_proc_sandbox(c, req);
    if (!sb)
        return;
    if (req->op == LBSD_OP_PROC_START) {
        lp_start(c, sb, req);
        return;
    }
    if (req->op == LBSD_OP_PROC_LIST) {
        lp_list(c, sb);
        return;
    }
    lbsd_proc *p = lp_select(c, sb, req);
    if (!p)
        return;
    if (req->op == LBSD_OP_PROC_ATTACH) {
        if (lp_add_watcher(p, c) != 0) {
            lbsd_reply_error(c, LB_E_BUSY, "process %d has %d connections attached already", p->pid,
                             LBSD_PROC_WATCHERS);
            return;
        }
        cJSON *r = cJSON_CreateObject();
        if (r)
            cJSON_AddNumberToObject(r, "pid", p->pid);
        lbsd_reply(c, r, NULL, 0, 0);
    } else if (req->op == LBSD_OP_PROC_INPUT) {
        lp_input(c, sb, p, req, data, dlen);
    } else if (req->op == LBSD_OP_PROC_SIGNAL) {
        const cJSON *sig = cJSON_GetObjectItemCaseSensitive(req->json, "signal");
        if (!cJSON_IsNumber(sig) || sig->valuedouble < 1 || sig->valuedouble > 64 ||
            sig->valuedouble != (double)(int)sig->valuedouble) {
            lbsd_reply_error(c, LB_E_INVAL, "\"signal\" must be a signal number from 1 to 64");
            return;
        }
        char *m = malloc(48);
        if (m) {
            int n = snprintf(m, 48, "KILL %d %d", p->pid, (int)sig->valuedouble);
            lp_queue(lp_set(sb), m, (size_t)n, NULL, 0);
        }
        lbsd_reply(c, cJSON_CreateObject(), NULL, 0, 0);
    }
}

/* ---- the loop's hooks --------------------------------------------------- */

static void lp_set_free(lbsd_procs *set)
{
    for (lbsd_procs **pp = &g_sets; *pp; pp = &(*pp)->next)
        if (*pp == set) {
            *pp = set->next;
            break;
        }
    while (set->q) {
        lbsd_pmsg *m = set->q;
        set->q = m->next;
        for (int i = 0; i < m->nfds; i++)
            close(m->fds[i]);
        free(m->buf);
        free(m);
    }
    lp_close(&set->sock);
    free(set);
}

/* The set of sb goes (the sandbox, or only its spawner): every stream and
 * waiting start hears why. */
static void lp_gone(lbsd_sandbox *sb, const char *why)
{
    lbsd_procs *set = lp_set(sb);
    if (!set)
        return;
    while (set->list) {
        lbsd_proc *p = set->list;
        set->list = p->next;
        if (p->starter) {
            lbsd_conn *c = p->starter;
            lp_starter_done(p);
            p->nwatch = 0;
            lbsd_reply_error(c, LB_E_SANDBOX, "sandbox %s is gone: %s", sb->id, why);
        }
        for (int i = 0; i < p->nwatch; i++) {
            cJSON *x = cJSON_CreateObject();
            if (x)
                cJSON_AddStringToObject(x, "message", why);
            lp_event(p->watch[i], p, "gone", x, NULL, 0, 0);
        }
        lp_free(p);
    }
    lp_set_free(set);
}

void lbsd_proc_sandbox_gone(lbsd_sandbox *sb, const char *why)
{
    lbsd_port_sandbox_gone(sb, why);
    lp_gone(sb, why);
}

void lbsd_proc_conn_closed(lbsd_conn *c)
{
    lbsd_port_conn_closed(c);
    for (lbsd_procs *set = g_sets; set; set = set->next)
        for (lbsd_proc *p = set->list; p; p = p->next) {
            if (p->starter == c)
                p->starter = NULL;
            for (int i = 0; i < p->nwatch; i++)
                if (p->watch[i] == c)
                    p->watch[i--] = p->watch[--p->nwatch];
        }
}

size_t lbsd_proc_fd_count(void)
{
    size_t n = 0;
    for (lbsd_procs *set = g_sets; set; set = set->next)
        n += 1 + 3 * (size_t)set->n;
    return n + lbsd_port_fd_count();
}

void lbsd_proc_poll(void (*add)(void *arg, int fd, short events, lbsd_sandbox *sb), void *arg)
{
    lbsd_port_poll(add, arg);
    for (lbsd_procs *set = g_sets, *next; set; set = next) {
        next = set->next;
        lbsd_sandbox *sb = set->sb;
        if (sb->broken) {
            lbsd_note_gone(sb);
            lbsd_proc_sandbox_gone(sb, sb->gone_why);
            continue;
        }
        add(arg, set->sock, (short)(POLLIN | (set->ready && set->q ? POLLOUT : 0)), sb);
        for (lbsd_proc *p = set->list; p; p = p->next) {
            if (!p->pid)
                continue;
            if (p->in_fd >= 0 && p->in_off < p->in.len)
                add(arg, p->in_fd, POLLOUT, sb);
            int wait = 0;
            for (int i = 0; i < p->nwatch && !wait; i++)
                wait = lp_unsent(p->watch[i]);
            if (wait)
                continue; /* backpressure: the process blocks on its full pipe */
            if (p->out_fd >= 0)
                add(arg, p->out_fd, POLLIN, sb);
            if (p->err_fd >= 0)
                add(arg, p->err_fd, POLLIN, sb);
        }
    }
}

static void lp_write_stdin(lbsd_proc *p)
{
    while (p->in_fd >= 0 && p->in_off < p->in.len) {
        ssize_t w = write(p->in_fd, p->in.data + p->in_off, p->in.len - p->in_off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            return;
        if (w < 0) {
            lp_close(&p->in_fd); /* EPIPE: it closed its stdin; what is left is dropped */
            break;
        }
        p->in_off += (size_t)w;
    }
    /* drained: its memory goes back too (a reset would keep up to 1 MiB) */
    lb_buf_free(&p->in);
    lb_buf_init(&p->in, LBSD_PROC_INPUT_MAX);
    p->in_off = 0;
    if (p->in_eof)
        lp_close(&p->in_fd);
}

void lbsd_proc_on_ready(lbsd_sandbox *sb, int fd, short revents)
{
    if (lbsd_port_on_ready(fd))
        return;
    lbsd_procs *set = lp_set(sb);
    if (!set)
        return;
    if (fd == set->sock) {
        if (revents & POLLOUT)
            lp_flush(set);
        for (int k = 0; k < 64; k++) {
            int r = lp_from_init(set);
            if (r < 0) {
                /* the spawner is gone (killed from inside the sandbox, or
                 * the sandbox is ending): the next start makes a new one */
                lp_gone(sb, "the sandbox's process spawner ended (killed from inside the sandbox, or "
                            "the sandbox is ending): its processes are no longer followed");
                return;
            }
            if (r == 0)
                break;
        }
        return;
    }
    for (lbsd_proc *p = set->list; p; p = p->next) {
        if (fd == p->out_fd)
            lp_read(p, &p->out_fd, 1, LBSD_PROC_READ);
        else if (fd == p->err_fd)
            lp_read(p, &p->err_fd, 2, LBSD_PROC_READ);
        else if (fd == p->in_fd)
            lp_write_stdin(p);
        else
            continue;
        return;
    }
}

/* ---- the spawner's watchdog --------------------------------------------- */

/* When the oldest start the spawner has not answered was asked (0: none). */
static int64_t lp_oldest_start(const lbsd_procs *set)
{
    int64_t t = 0;
    for (const lbsd_proc *p = set->list; p; p = p->next)
        if (!p->pid && (!t || p->start_ms < t))
            t = p->start_ms;
    return t;
}

/* Whether the host process pid is stopped by a signal ("T" in its stat). */
static int lp_is_stopped(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *e = strrchr(buf, ')'); /* the name may hold anything, even ')' */
    return e && e[1] == ' ' && e[2] == 'T';
}

/* The spawner has not answered a start for LBSD_SPAWNER_DEADLINE_MS: every
 * waiting start is answered, the spawner is killed from the host (it may
 * be stopped, or wait on a child the sandbox's code stopped) and the set
 * goes; the next start makes a new spawner. */
static void lp_replace(lbsd_procs *set)
{
    lbsd_sandbox *sb = set->sb;
    lb_warn("sandbox %s: its process spawner did not answer a start for %d ms: replacing it", sb->id,
            LBSD_SPAWNER_DEADLINE_MS);
    for (lbsd_proc *p = set->list; p; p = p->next) {
        if (p->pid || !p->starter)
            continue;
        lbsd_conn *c = p->starter;
        lp_starter_done(p);
        p->nwatch = 0;
        lbsd_reply_error(c, LB_E_BUSY, "the process spawner of sandbox %s did not start the process within %d ms "
                                       "(stopped or held from inside the sandbox): it was replaced, try again",
                         sb->id, LBSD_SPAWNER_DEADLINE_MS);
    }
    if (set->spawner_pid > 1 && lbsd_pid_in_sandbox(sb, set->spawner_pid))
        kill(set->spawner_pid, SIGKILL);
    lp_gone(sb, "the sandbox's process spawner stopped answering and was replaced: the processes it started "
                "are no longer followed");
}

/* ms until the set wants another look (-1: none). While a start waits,
 * the spawner gets a SIGCONT from the host every LBSD_SPAWNER_CHECK_MS
 * (the sandbox's code may have stopped it; SIGCONT is harmless
 * otherwise), and at LBSD_SPAWNER_DEADLINE_MS it is replaced. While only
 * started processes are followed, it is looked at every
 * LBSD_SPAWNER_IDLE_CHECK_MS and continued if stopped: it reports their
 * exits. */
static int lp_watchdog(lbsd_procs *set, int64_t now)
{
    int64_t oldest = lp_oldest_start(set);
    if (oldest && now - oldest >= LBSD_SPAWNER_DEADLINE_MS) {
        lp_replace(set);
        return -1;
    }
    if (!oldest && !set->n)
        return -1;
    int every = oldest ? LBSD_SPAWNER_CHECK_MS : LBSD_SPAWNER_IDLE_CHECK_MS;
    int64_t first = oldest ? oldest + LBSD_SPAWNER_CHECK_MS : 0;
    if (now >= first && now - set->checked_ms >= every) {
        set->checked_ms = now;
        int stopped = set->spawner_pid > 1 && lp_is_stopped(set->spawner_pid);
        if (stopped)
            lb_debug("sandbox %s: its process spawner was stopped (from inside the sandbox): continuing it",
                     set->sb->id);
        if (stopped || oldest)
            lp_continue(set);
    }
    int64_t due = set->checked_ms + every;
    if (oldest) {
        if (due < first)
            due = first;
        if (oldest + LBSD_SPAWNER_DEADLINE_MS < due)
            due = oldest + LBSD_SPAWNER_DEADLINE_MS;
    }
    return due > now ? (int)(due - now) : 0;
}

int lbsd_proc_tick(int64_t now)
{
    int t = lbsd_port_tick(now);
    for (lbsd_procs *set = g_sets, *next; set; set = next) {
        next = set->next; /* the watchdog may free set */
        int w = lp_watchdog(set, now);
        if (w >= 0 && (t < 0 || w < t))
            t = w;
    }
    return t;
}
