/* process.Process: supervised processes beside the shell (e2b_process.h). */
#include "web/e2b_process.h"

#include "web/e2b_connect.h"
#include "web/handlers_sandboxes.h"
#include "web/http.h"
#include "web/sandbox_spec.h"

#include "common/buf.h"
#include "common/status.h"
#include "common/util.h"
#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LB_E2B_PROCS_MAX 4096      /* processes the web follows, all sandboxes */
#define LB_E2B_PROCS_PER_SBX 1024  /* of one sandbox (its pids limit bounds it too) */
#define LB_E2B_POLL_FIRST_MS 2     /* how often a stream looks for output in its first 50 ms, */
#define LB_E2B_POLL_FAST_MS 10     /* until half a second, */
#define LB_E2B_POLL_MS 100         /* and after */
#define LB_E2B_KEEPALIVE_MS 10000  /* a keepalive event when nothing else was sent this long (SDK: 50 s) */
#define LB_E2B_CHUNK (1u << 20)    /* output bytes one read takes of a stream */
#define LB_E2B_ARGS_MAX 4096       /* arguments of one process */
#define LB_E2B_TAG_MAX 256
#define LB_E2B_CTL_MS 30000        /* the shell's short commands: start, signal, stdin */
/* A process's files are LB_E2B_DIR<run>.<n>.out, .err, .status ...: in
 * /var/tmp itself, which every image has, so a fresh sandbox's first
 * start runs no mkdir (an exec of its own, 1 ms); <run> names this web's
 * run (its start time and pid), so a restarted web, counting n from 1
 * again, never appends to or reads a file an earlier run left. */
#define LB_E2B_DIR "/var/tmp/.llmbox-e2b-"
static char lb_run[48];

/* The supervisor is a subshell the sandbox's shell forks for the start
 * command (a fork costs a fraction of a millisecond, a new bash several):
 * a process substitution, whose first line, the command's pid, the start
 * command reads and prints, so one exec answers the pid; and its exit
 * status too when it ends within 30 ms (most short commands: then no
 * stream has to poll for it), with "-" when it wrote nothing (then there
 * is nothing to read either). It keeps nothing of the shell's: its
 * stdout is that pipe, read only by the start command, its stderr
 * /dev/null, SIGINT ignored (how the shell's own commands are stopped).
 * It starts the command as a job of its own process group (set -m: a
 * signal goes to the whole group), waits and records the status.
 * What a short command does not need stays off its path (bench/RESULTS.md:
 * each file made or loop turned cost the round trip a fraction of a ms):
 * the status goes to the pipe first and to its file after (SIGPIPE
 * ignored once the job is forked, so a start that stopped reading does not
 * stop the file's write); the output files are made by the job's own
 * redirections, and only a start that did not see the end makes sure they
 * exist before a stream reads them. With stdin, it records its own pid
 * (closeStdin signals it), keeps the FIFO open for writing so the command
 * sees no EOF until closeStdin (USR1) closes it, and waits again after a
 * USR1 interrupts the wait. Each file is one echo, one write(): a reader
 * finds it empty or whole, and takes an empty one as not there yet. */
static const char lb_sup_head[] = "exec 5< <(exec 2>/dev/null; trap '' INT\n";
static const char lb_sup_stdin[] = "echo $BASHPID >\"$D.wpid\"; exec 3<>\"$D.in\"; trap 'exec 3>&-' USR1\n";
static const char lb_sup_tail_stdin[] = "p=$!; trap '' PIPE; echo $p\n"
                                        "while kill -0 $p 2>/dev/null; do wait $p; done; ";
static const char lb_sup_tail_plain[] = "p=$!; trap '' PIPE; echo $p\n";
static const char lb_sup_tail[] =
    "wait $p; s=$?; echo $s; echo $s >\"$D.status\")\n"
    "read -r p <&5; o=x; if read -t 0.03 -r s <&5; then o=-; [ -s \"$D.out\" ] || [ -s \"$D.err\" ] && o=x;"
    " else : >>\"$D.out\"; : >>\"$D.err\"; fi\n"
    "exec 5<&-; echo \"$p $s $o\"\n";

/* The processes this web started: what List shows and the other calls
 * find. Guarded by lb_procs_mu. */
typedef struct lb_e2b_proc {
    int used;
    char sbx[33];
    uint32_t pid;                  /* in the sandbox */
    unsigned dir;                  /* LB_E2B_DIR<run>.<dir> */
    char tag[LB_E2B_TAG_MAX + 1];
    cJSON *config;                 /* {cmd, args, envs, cwd} as the client sent it */
    int has_stdin;
    int streams;                   /* Start and Connect streams following it now */
    int ended;                     /* a stream saw its status: it is gone */
} lb_e2b_proc;

static pthread_mutex_t lb_procs_mu = PTHREAD_MUTEX_INITIALIZER;
static lb_e2b_proc lb_procs[LB_E2B_PROCS_MAX];
static unsigned lb_next_dir = 1;

/* Frees the entries of sandboxes that are gone (lock held). */
static void lb_procs_sweep_locked(void)
{
    for (int i = 0; i < LB_E2B_PROCS_MAX; i++) {
        lb_e2b_proc *p = &lb_procs[i];
        if (!p->used || p->streams)
            continue;
        lb_sbx *s = lb_sbx_get(p->sbx, NULL, 0);
        if (s) {
            lb_sbx_put(s);
            continue;
        }
        cJSON_Delete(p->config);
        memset(p, 0, sizeof *p);
    }
}

/* A slot and a folder number for a new process of sbx; -1 when full. */
static int lb_proc_reserve(const char *sbx, unsigned *dir)
{
    pthread_mutex_lock(&lb_procs_mu);
    int at = -1, mine = 0;
    for (int pass = 0; pass < 2 && at < 0; pass++) {
        if (pass)
            lb_procs_sweep_locked();
        mine = 0;
        for (int i = 0; i < LB_E2B_PROCS_MAX; i++) {
            if (lb_procs[i].used && !strcmp(lb_procs[i].sbx, sbx))
                mine++;
            else if (!lb_procs[i].used && at < 0)
                at = i;
        }
    }
    if (at >= 0 && mine < LB_E2B_PROCS_PER_SBX) {
        lb_e2b_proc *p = &lb_procs[at];
        memset(p, 0, sizeof *p);
        p->used = 1;
        p->streams = 1; /* the Start that reserves it */
        memcpy(p->sbx, sbx, sizeof p->sbx);
        if (!lb_run[0])
            snprintf(lb_run, sizeof lb_run, "%lld-%ld", (long long)time(NULL), (long)getpid());
        p->dir = *dir = lb_next_dir++;
    } else {
        at = -1;
    }
    pthread_mutex_unlock(&lb_procs_mu);
    return at;
}

/* The process a ProcessSelector ({pid} or {tag}) names in sandbox sbx and
 * not ended: its index with the lock held (caller unlocks), or -1. */
static int lb_proc_find_locked(const char *sbx, const cJSON *sel)
{
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(sel, "pid");
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(sel, "tag");
    pthread_mutex_lock(&lb_procs_mu);
    for (int i = 0; i < LB_E2B_PROCS_MAX; i++) {
        const lb_e2b_proc *p = &lb_procs[i];
        if (!p->used || p->ended || !p->pid || strcmp(p->sbx, sbx))
            continue;
        if ((cJSON_IsNumber(pid) && pid->valuedouble == (double)p->pid) ||
            (cJSON_IsString(tag) && p->tag[0] && !strcmp(tag->valuestring, p->tag)))
            return i;
    }
    pthread_mutex_unlock(&lb_procs_mu);
    return -1;
}

/* ---- the shell's short commands ---- */

/* Runs line in the sandbox's shell (under its lock); LB_OK when it exited
 * 0, with its stdout in *out when out is not NULL (caller frees). Else a
 * Connect code and a sentence. */
static int lb_shell(lb_sbx *s, const char *line, char **out, const char **code, char *msg, size_t msgsz)
{
    char err[512] = "";
    lbsb_exec_out eo;
    memset(&eo, 0, sizeof eo);
    if (lb_sbx_lock(s, msg, msgsz) != LB_OK) {
        *code = "unavailable";
        return LB_E_NOTFOUND;
    }
    int rc = lbsb_exec(s->conn, s->sbx_id, line, LB_E2B_CTL_MS, &eo, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        int st = lb_sbx_rpc_fail(s, rc, "control a process", err, msg, msgsz);
        *code = st == 404 || st == 503 ? "unavailable" : "internal";
        return rc;
    }
    if (eo.state != LLMBOX_EXEC_EXITED || eo.exit_code != 0) {
        size_t n = eo.err_len;
        while (n && (eo.err[n - 1] == '\n' || eo.err[n - 1] == '\r'))
            n--;
        snprintf(msg, msgsz, "%.*s", (int)(n > 400 ? 400 : n), n ? eo.err : "the control command failed");
        *code = "internal";
        lbsb_exec_out_free(&eo);
        return LB_E_SANDBOX;
    }
    if (out) {
        *out = eo.out;
        eo.out = NULL;
    }
    lbsb_exec_out_free(&eo);
    return LB_OK;
}

/* kill -SIG -- -PID in the sandbox: the process's whole group. */
static int lb_proc_signal(lb_sbx *s, uint32_t pid, const char *sig, const char **code, char *msg, size_t msgsz)
{
    char line[96];
    snprintf(line, sizeof line, "kill -%s -- -%u 2>/dev/null || kill -%s %u 2>/dev/null; true", sig, pid, sig, pid);
    return lb_shell(s, line, NULL, code, msg, msgsz);
}

/* ---- Start: the request ---- */

typedef struct lb_e2b_start {
    lb_buf script;                 /* what the shell runs to start it */
    lb_sbx_exec_req er;
    const char *tag;
    int has_stdin;
    cJSON *config;                 /* a copy for List */
} lb_e2b_start;

/* Validates a StartRequest and writes the shell's start script for folder
 * dir, after prefix (the removal of ended processes' folders); 0, or a
 * sentence in msg (invalid_argument). */
static int lb_start_parse(const cJSON *req, const lb_sbx *s, unsigned dir, const char *prefix, lb_e2b_start *st,
                          char *msg, size_t msgsz)
{
    const cJSON *proc = cJSON_GetObjectItemCaseSensitive(req, "process");
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(proc, "cmd");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(proc, "args");
    const cJSON *envs = cJSON_GetObjectItemCaseSensitive(proc, "envs");
    const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(proc, "cwd");
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(req, "tag");
    lb_buf_init(&st->script, LB_SBX_COMMAND_MAX);
    if (!cJSON_IsObject(proc) || !cJSON_IsString(cmd) || !cmd->valuestring[0]) {
        snprintf(msg, msgsz, "process.cmd must be a non-empty string");
        return -1;
    }
    if (cJSON_GetObjectItemCaseSensitive(req, "pty")) {
        snprintf(msg, msgsz, "a pty is not supported by llmbox's sandboxes (docs/E2B.md); run the command without one");
        return -1;
    }
    if (args && (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > LB_E2B_ARGS_MAX)) {
        snprintf(msg, msgsz, "process.args must be an array of at most %d strings", LB_E2B_ARGS_MAX);
        return -1;
    }
    if (tag && (!cJSON_IsString(tag) || strlen(tag->valuestring) > LB_E2B_TAG_MAX)) {
        snprintf(msg, msgsz, "tag must be a string of at most %d bytes", LB_E2B_TAG_MAX);
        return -1;
    }
    st->tag = tag ? tag->valuestring : NULL;
    st->has_stdin = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "stdin"));
    if (envs && !cJSON_IsNull(envs)) {
        if (!cJSON_IsObject(envs) || cJSON_GetArraySize(envs) > LB_SBX_ENV_MAX) {
            snprintf(msg, msgsz, "process.envs must be an object of at most %d strings", LB_SBX_ENV_MAX);
            return -1;
        }
        const cJSON *kv;
        cJSON_ArrayForEach(kv, envs)
        {
            if (!lb_sbx_env_name_ok(kv->string) || !cJSON_IsString(kv) ||
                strlen(kv->valuestring) > LB_SBX_ENV_VALUE_MAX) {
                snprintf(msg, msgsz, "process.envs: each name must match [A-Za-z_][A-Za-z0-9_]* (at most %d bytes) "
                         "and each value be a string of at most %u bytes", LB_SBX_ENV_NAME_MAX,
                         (unsigned)LB_SBX_ENV_VALUE_MAX);
                return -1;
            }
        }
        st->er.env = envs;
    }
    if (cwd && !cJSON_IsNull(cwd)) {
        if (!cJSON_IsString(cwd) || lb_sbx_path(cwd->valuestring, strlen(cwd->valuestring), s->workdir, 1, st->er.cwd,
                                                sizeof st->er.cwd) != LB_OK) {
            snprintf(msg, msgsz, "process.cwd must be a path in the sandbox without \"..\" or control characters");
            return -1;
        }
    } else {
        snprintf(st->er.cwd, sizeof st->er.cwd, "%s", s->workdir);
    }
    /* D=<prefix><run>.<n>, its files D.out, D.err, D.wpid ...;
     * its FIFO; the supervisor, detached */
    lb_buf *b = &st->script;
    int rc = lb_buf_printf(b, "%sD=%s%s.%u\n%s%s%sset -m\n", prefix, LB_E2B_DIR, lb_run, dir,
                           st->has_stdin ? "mkfifo -m 600 \"$D.in\" || exit 1\n" : "", lb_sup_head,
                           st->has_stdin ? lb_sup_stdin : "");
    if (!rc)
        rc = lb_sh_quote(b, cmd->valuestring);
    const cJSON *a;
    cJSON_ArrayForEach(a, args)
    {
        if (!cJSON_IsString(a)) {
            snprintf(msg, msgsz, "process.args must hold strings only");
            return -1;
        }
        if (!rc)
            rc = lb_buf_appends(b, " ");
        if (!rc)
            rc = lb_sh_quote(b, a->valuestring);
    }
    if (!rc)
        rc = lb_buf_printf(b, " %s >>\"$D.out\" 2>>\"$D.err\"%s &\n%s%s", st->has_stdin ? "<\"$D.in\"" : "</dev/null",
                           st->has_stdin ? " 3>&-" : "", st->has_stdin ? lb_sup_tail_stdin : lb_sup_tail_plain,
                           lb_sup_tail);
    if (rc) {
        snprintf(msg, msgsz, "the command with its arguments is over %u bytes", (unsigned)LB_SBX_COMMAND_MAX);
        return -1;
    }
    st->er.command = b->data;
    st->config = cJSON_CreateObject();
    if (!st->config || !cJSON_AddStringToObject(st->config, "cmd", cmd->valuestring) ||
        !cJSON_AddItemToObject(st->config, "args", args ? cJSON_Duplicate(args, 1) : cJSON_CreateArray()) ||
        !cJSON_AddItemToObject(st->config, "envs", st->er.env ? cJSON_Duplicate(st->er.env, 1) : cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(st->config, "cwd", st->er.cwd)) {
        snprintf(msg, msgsz, "out of memory");
        return -1;
    }
    return 0;
}

/* The deadline the client set (Connect-Timeout-Ms) on the monotonic clock;
 * 0 when none. */
static int64_t lb_connect_deadline(lb_req *r)
{
    const char *h = lb_http_param(r, "HTTP_CONNECT_TIMEOUT_MS");
    long long v = 0;
    if (!h || lb_parse_ll(h, 1, 7LL * 24 * 3600 * 1000, &v) != LB_OK)
        return 0;
    return lb_mono_ms() + v;
}

/* ---- the events ---- */

/* One event; queued without a flush when more follows at once (the end). */
static int lb_send_event_q(lb_req *r, const char *kind, cJSON *value, int queue)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *ev = o ? cJSON_AddObjectToObject(o, "event") : NULL;
    if (!ev || !value || !cJSON_AddItemToObject(ev, kind, value)) {
        cJSON_Delete(value);
        cJSON_Delete(o);
        return LB_E_NOMEM;
    }
    int rc = queue ? lb_e2b_stream_queue(r, o) : lb_e2b_stream_send(r, o);
    cJSON_Delete(o);
    return rc;
}

static int lb_send_event(lb_req *r, const char *kind, cJSON *value)
{
    return lb_send_event_q(r, kind, value, 0);
}

/* A data event with n bytes of one stream ("stdout", "stderr"), base64. */
static int lb_send_data(lb_req *r, const char *stream, const char *p, size_t n, int queue)
{
    if (!n)
        return LB_OK;
    char *b64 = malloc(4 * ((n + 2) / 3) + 1);
    if (!b64)
        return LB_E_NOMEM;
    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)p, (int)n);
    cJSON *d = cJSON_CreateObject();
    if (d && !cJSON_AddStringToObject(d, stream, b64)) {
        cJSON_Delete(d);
        d = NULL;
    }
    free(b64);
    return lb_send_event_q(r, "data", d, queue);
}

static int lb_send_start(lb_req *r, uint32_t pid, int queue)
{
    cJSON *sv = cJSON_CreateObject();
    if (sv && !cJSON_AddNumberToObject(sv, "pid", pid)) {
        cJSON_Delete(sv);
        sv = NULL;
    }
    return lb_send_event_q(r, "start", sv, queue);
}

/* The end event of a supervisor status: an exit code, or 128+N for signal N. */
static int lb_send_end(lb_req *r, int status)
{
    char text[64];
    const char *err = NULL;
    int code = status, exited = 1;
    if (status > 128 && status < 128 + 65) {
        int sig = status - 128;
        code = -1;
        exited = 0;
        snprintf(text, sizeof text, "signal: %s", sig == 9 ? "killed" : sig == 15 ? "terminated" : sig == 2 ? "interrupt"
                                                                                                             : "other");
        err = text;
    } else {
        snprintf(text, sizeof text, "exit status %d", status);
        err = status ? text : NULL;
    }
    cJSON *e = cJSON_CreateObject();
    if (e && (!cJSON_AddNumberToObject(e, "exitCode", code) || !cJSON_AddBoolToObject(e, "exited", exited) ||
              !cJSON_AddStringToObject(e, "status", text) || (err && !cJSON_AddStringToObject(e, "error", err)))) {
        cJSON_Delete(e);
        e = NULL;
    }
    return lb_send_event_q(r, "end", e, 1); /* the end of the stream follows at once */
}

/* ---- following a process ---- */

typedef struct lb_follow {
    char out[160], err[160], status[160];
    uint64_t off_out, off_err;
} lb_follow;

/* Reads what is new of one output file under the lock; LB_OK. */
static int lb_read_more(lb_sbx *s, const char *path, uint64_t *off, char **data, size_t *len, char *err, size_t errsz)
{
    uint64_t size = 0;
    int rc = lbsb_read_range(s->conn, s->sbx_id, path, *off, LB_E2B_CHUNK, data, len, &size, err, errsz);
    if (!rc)
        *off += *len;
    return rc;
}

/* Streams the process in slot (pid, folder) to r until it ends, the
 * deadline passes (it is killed: deadline_exceeded), its sandbox goes
 * (unavailable) or the client leaves (it runs on). known_status: its exit
 * status when the start saw it end, else -1. Ends the stream. */
static void lb_follow_run(lb_req *r, lb_sbx *s, int slot, uint32_t pid, unsigned dir, int64_t deadline, int from_now,
                          int known_status)
{
    lb_follow f;
    char err[512] = "", msg[1400];
    snprintf(f.out, sizeof f.out, "%s%s.%u.out", LB_E2B_DIR, lb_run, dir);
    snprintf(f.err, sizeof f.err, "%s%s.%u.err", LB_E2B_DIR, lb_run, dir);
    snprintf(f.status, sizeof f.status, "%s%s.%u.status", LB_E2B_DIR, lb_run, dir);
    f.off_out = f.off_err = 0;
    int64_t t0 = lb_mono_ms(), last_sent = t0;
    /* the status is known (the output may still hold a tail) */
    int seen = known_status >= 0, status = known_status >= 0 ? known_status : 0;
    if (from_now) {
        /* Connect: what the process writes from now on */
        char *d = NULL;
        size_t n = 0;
        uint64_t size = 0;
        if (lb_sbx_lock(s, msg, sizeof msg) == LB_OK) {
            if (!lbsb_read_range(s->conn, s->sbx_id, f.out, UINT32_MAX, 1, &d, &n, &size, err, sizeof err))
                f.off_out = size;
            free(d);
            d = NULL;
            if (!lbsb_read_range(s->conn, s->sbx_id, f.err, UINT32_MAX, 1, &d, &n, &size, err, sizeof err))
                f.off_err = size;
            free(d);
            lb_sbx_unlock(s);
        }
    }
    for (;;) {
        char *dout = NULL, *derr = NULL;
        size_t nout = 0, nerr = 0;
        int type = 0, seen_before = seen;
        uint64_t ssize = 0;
        if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
            lb_e2b_stream_end(r, "unavailable", "%s", msg);
            return;
        }
        int rc = lb_read_more(s, f.out, &f.off_out, &dout, &nout, err, sizeof err);
        if (!rc)
            rc = lb_read_more(s, f.err, &f.off_err, &derr, &nerr, err, sizeof err);
        if (!rc && !nout && !nerr && !seen)
            rc = lbsb_stat(s->conn, s->sbx_id, f.status, &type, &ssize, err, sizeof err);
        char *sdata = NULL;
        size_t slen = 0;
        if (!rc && type == 1 && !lbsb_read(s->conn, s->sbx_id, f.status, 64, &sdata, &slen, err, sizeof err)) {
            long long v = 0;
            while (slen && (sdata[slen - 1] == '\n' || sdata[slen - 1] == '\r'))
                sdata[--slen] = '\0';
            /* empty: caught between its open and its write; next time */
            if (lb_parse_ll(sdata, 0, 255, &v) == LB_OK) {
                seen = 1;
                status = (int)v;
            }
        }
        free(sdata);
        lb_sbx_unlock(s);
        if (rc) {
            free(dout);
            free(derr);
            int st = rc == LB_E_CANCELLED ? 404 : lb_sbx_rpc_fail(s, rc, "follow the process", err, msg, sizeof msg);
            lb_e2b_stream_end(r, st == 404 || st == 503 ? "unavailable" : "internal", "%s",
                              rc == LB_E_CANCELLED ? "the sandbox was killed or expired" : msg);
            return;
        }
        /* the last read: its data, the end event and the stream's end go out in one write */
        int last = seen_before && nout < LB_E2B_CHUNK && nerr < LB_E2B_CHUNK;
        int gone = lb_send_data(r, "stdout", dout, nout, last) != LB_OK ||
                   lb_send_data(r, "stderr", derr, nerr, last) != LB_OK;
        free(dout);
        free(derr);
        if (nout || nerr)
            last_sent = lb_mono_ms();
        if (gone)
            return; /* the client left; the process runs on (connect to it again) */
        /* the end once a read after the status took what was left (less
         * than a full chunk of each): what the process wrote just before
         * it ended is never lost */
        if (last) {
            pthread_mutex_lock(&lb_procs_mu);
            lb_procs[slot].ended = 1;
            pthread_mutex_unlock(&lb_procs_mu);
            LB_IGNORE(lb_send_end(r, status)); /* the end of the stream follows */
            lb_e2b_stream_end(r, NULL, "%s", "");
            return;
        }
        int64_t now = lb_mono_ms();
        if (deadline && now >= deadline) {
            const char *code;
            LB_IGNORE(lb_proc_signal(s, pid, "KILL", &code, msg, sizeof msg)); /* the answer says why it ended */
            lb_e2b_stream_end(r, "deadline_exceeded", "the process ran past its timeout and was killed");
            return;
        }
        if (now - last_sent >= LB_E2B_KEEPALIVE_MS) {
            if (lb_send_event(r, "keepalive", cJSON_CreateObject()) != LB_OK)
                return;
            last_sent = now;
        }
        if (nout == LB_E2B_CHUNK || nerr == LB_E2B_CHUNK || seen)
            continue; /* more is waiting, or the last read after the end */
        int ms = now - t0 < 50 ? LB_E2B_POLL_FIRST_MS : now - t0 < 500 ? LB_E2B_POLL_FAST_MS : LB_E2B_POLL_MS;
        struct timespec ts = {0, ms * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Folders of ended processes, removed by the next start in their sandbox
 * (in the background of its shell command: no command of its own, which
 * would cost a round trip through the shell per process). */
#define LB_E2B_REAP_MAX 512
#define LB_E2B_REAP_BATCH 32
static struct {
    char sbx[33];
    unsigned dir;
} lb_reap[LB_E2B_REAP_MAX];
static int lb_reap_n;

/* "rm -f -- D1.* D2.* ... >/dev/null 2>&1 &\n" for up to 64 processes of sbx
 * (lock held), taken off the list; "" when none. */
static void lb_reap_line_locked(const char *sbx, lb_buf *b)
{
    int taken = 0, mine = 0;
    for (int i = 0; i < lb_reap_n; i++)
        mine += !strcmp(lb_reap[i].sbx, sbx);
    /* in batches: one rm per start would cost every start a fork and an exec */
    if (mine < LB_E2B_REAP_BATCH && lb_reap_n < LB_E2B_REAP_MAX / 2)
        return;
    for (int i = 0; i < lb_reap_n && taken < 64;) {
        if (strcmp(lb_reap[i].sbx, sbx)) {
            i++;
            continue;
        }
        if (lb_buf_printf(b, "%s %s%s.%u.*", taken ? "" : "rm -f --", LB_E2B_DIR, lb_run, lb_reap[i].dir) != LB_OK)
            break;
        taken++;
        lb_reap[i] = lb_reap[--lb_reap_n];
    }
    if (taken && lb_buf_appends(b, " >/dev/null 2>&1 &\n") != LB_OK)
        lb_buf_reset(b);
}

/* A stream stopped following slot: the last one after its end forgets it
 * and leaves its folder to be removed. */
static void lb_follow_done(lb_sbx *s, int slot)
{
    pthread_mutex_lock(&lb_procs_mu);
    lb_e2b_proc *p = &lb_procs[slot];
    int last = --p->streams == 0 && p->ended;
    unsigned dir = p->dir;
    int queued = 0;
    if (last) {
        cJSON_Delete(p->config);
        memset(p, 0, sizeof *p);
        if (lb_reap_n < LB_E2B_REAP_MAX) {
            memcpy(lb_reap[lb_reap_n].sbx, s->id, 33);
            lb_reap[lb_reap_n++].dir = dir;
            queued = 1;
        }
    }
    pthread_mutex_unlock(&lb_procs_mu);
    if (last && !queued) {
        char line[160], msg[400];
        const char *code;
        snprintf(line, sizeof line, "rm -f -- %s%s.%u.*", LB_E2B_DIR, lb_run, dir);
        LB_IGNORE(lb_shell(s, line, NULL, &code, msg, sizeof msg)); /* a folder left in /var/tmp is harmless */
    }
}

static void lb_e2b_start_run(lb_req *r, lb_sbx *s)
{
    char msg[1400] = "";
    lb_e2b_start st;
    memset(&st, 0, sizeof st);
    lb_buf line, reap;
    lb_buf_init(&line, LB_SBX_LINE_MAX);
    lb_buf_init(&reap, 64 * 64);
    char *out = NULL;
    unsigned dir = 0;
    cJSON *req = lb_e2b_request(r, 1);
    if (!req)
        goto done;
    int slot = lb_proc_reserve(s->id, &dir);
    if (slot < 0) {
        lb_e2b_stream_end(r, "resource_exhausted", "This sandbox has %d processes already (or the server %d).",
                          LB_E2B_PROCS_PER_SBX, LB_E2B_PROCS_MAX);
        goto done;
    }
    int ok = 0;
    const char *code = "invalid_argument";
    uint32_t pid = 0;
    int early = -1; /* the status, when it ended within the start's wait */
    int silent = 0; /* and it wrote nothing */
    pthread_mutex_lock(&lb_procs_mu);
    lb_reap_line_locked(s->id, &reap);
    pthread_mutex_unlock(&lb_procs_mu);
    if (lb_start_parse(req, s, dir, reap.data ? reap.data : "", &st, msg, sizeof msg) != 0) {
        /* msg says why */
    } else if (lb_sbx_exec_line(&st.er, s->env, NULL, &line) != LB_OK) {
        snprintf(msg, sizeof msg, "The command with its env and cwd is over %u bytes.", (unsigned)LB_SBX_LINE_MAX);
    } else if (lb_shell(s, line.data, &out, &code, msg, sizeof msg) == LB_OK) {
        long long v = 0, sv = -1;
        if (out)
            out[strcspn(out, "\n")] = '\0';
        char *sp = out ? strchr(out, ' ') : NULL;
        if (sp) {
            *sp++ = '\0';
            char *fl = strchr(sp, ' ');
            if (fl)
                *fl++ = '\0';
            if (*sp && lb_parse_ll(sp, 0, 255, &sv) != LB_OK)
                sv = -1;
            silent = sv >= 0 && fl && !strcmp(fl, "-");
        }
        ok = out && lb_parse_ll(out, 1, UINT32_MAX, &v) == LB_OK;
        pid = (uint32_t)v;
        early = (int)sv;
        code = "internal";
        if (!ok)
            snprintf(msg, sizeof msg, "The process did not start (its supervisor gave no pid).");
    }
    if (!ok) {
        pthread_mutex_lock(&lb_procs_mu);
        lb_procs[slot].ended = 1;
        pthread_mutex_unlock(&lb_procs_mu);
        lb_e2b_stream_end(r, code, "%s", msg);
        lb_follow_done(s, slot);
        goto done;
    }
    pthread_mutex_lock(&lb_procs_mu);
    lb_e2b_proc *p = &lb_procs[slot];
    p->pid = pid;
    p->has_stdin = st.has_stdin;
    p->config = st.config;
    snprintf(p->tag, sizeof p->tag, "%s", st.tag ? st.tag : "");
    st.config = NULL;
    pthread_mutex_unlock(&lb_procs_mu);
    if (silent) {
        pthread_mutex_lock(&lb_procs_mu);
        lb_procs[slot].ended = 1;
        pthread_mutex_unlock(&lb_procs_mu);
        if (lb_send_start(r, pid, 1) == LB_OK && lb_send_end(r, early) == LB_OK)
            lb_e2b_stream_end(r, NULL, "%s", "");
    } else if (lb_send_start(r, pid, 0) == LB_OK) {
        lb_follow_run(r, s, slot, pid, dir, lb_connect_deadline(r), 0, early);
    }
    lb_follow_done(s, slot);
done:
    free(out);
    lb_buf_free(&reap);
    lb_buf_free(&line);
    lb_buf_free(&st.script);
    cJSON_Delete(st.config);
    cJSON_Delete(req);
}

/* ---- Connect, List, SendSignal, SendInput, CloseStdin ---- */

/* The process of the request's {process: selector}: its slot with the lock
 * held, or -1 after answering not_found (stream: as its end). */
static int lb_req_proc_locked(lb_req *r, lb_sbx *s, const cJSON *req, int streaming)
{
    int i = lb_proc_find_locked(s->id, cJSON_GetObjectItemCaseSensitive(req, "process"));
    if (i < 0) {
        if (streaming)
            lb_e2b_stream_end(r, "not_found", "There is no running process with that pid or tag in this sandbox.");
        else
            lb_e2b_unary_error(r, "not_found", "There is no running process with that pid or tag in this sandbox.");
    }
    return i;
}

static void lb_e2b_connect(lb_req *r, lb_sbx *s)
{
    cJSON *req = lb_e2b_request(r, 1);
    if (!req)
        return;
    int i = lb_req_proc_locked(r, s, req, 1);
    if (i >= 0) {
        lb_procs[i].streams++;
        uint32_t pid = lb_procs[i].pid;
        unsigned dir = lb_procs[i].dir;
        pthread_mutex_unlock(&lb_procs_mu);
        if (lb_send_start(r, pid, 0) == LB_OK)
            lb_follow_run(r, s, i, pid, dir, lb_connect_deadline(r), 1, -1);
        lb_follow_done(s, i);
    }
    cJSON_Delete(req);
}

/* Processes no stream follows (their client left) may have ended since:
 * their status file says so; such ones are forgotten and their folders
 * removed, so List shows only what runs. */
static void lb_procs_refresh(lb_sbx *s)
{
    int slots[64], n = 0;
    unsigned dirs[64];
    pthread_mutex_lock(&lb_procs_mu);
    for (int i = 0; i < LB_E2B_PROCS_MAX && n < 64; i++) {
        const lb_e2b_proc *p = &lb_procs[i];
        if (p->used && !p->ended && !p->streams && p->pid && !strcmp(p->sbx, s->id)) {
            slots[n] = i;
            dirs[n++] = p->dir;
        }
    }
    pthread_mutex_unlock(&lb_procs_mu);
    for (int k = 0; k < n; k++) {
        char path[160], err[256], msg[400];
        int type = 0;
        uint64_t size = 0;
        snprintf(path, sizeof path, "%s%s.%u.status", LB_E2B_DIR, lb_run, dirs[k]);
        if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK)
            return;
        int rc = lbsb_stat(s->conn, s->sbx_id, path, &type, &size, err, sizeof err);
        lb_sbx_unlock(s);
        if (rc || type != 1)
            continue;
        pthread_mutex_lock(&lb_procs_mu);
        int mine = lb_procs[slots[k]].used && lb_procs[slots[k]].dir == dirs[k] && !lb_procs[slots[k]].streams;
        if (mine) {
            lb_procs[slots[k]].ended = 1;
            lb_procs[slots[k]].streams = 1; /* lb_follow_done's to drop */
        }
        pthread_mutex_unlock(&lb_procs_mu);
        if (mine)
            lb_follow_done(s, slots[k]);
    }
}

static void lb_e2b_list(lb_req *r, lb_sbx *s)
{
    cJSON *req = lb_e2b_request(r, 0);
    if (!req)
        return;
    lb_procs_refresh(s);
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "processes") : NULL;
    int ok = arr != NULL;
    pthread_mutex_lock(&lb_procs_mu);
    for (int i = 0; ok && i < LB_E2B_PROCS_MAX; i++) {
        const lb_e2b_proc *p = &lb_procs[i];
        if (!p->used || p->ended || !p->pid || strcmp(p->sbx, s->id))
            continue;
        cJSON *it = cJSON_CreateObject();
        ok = it && cJSON_AddItemToArray(arr, it) && cJSON_AddItemToObject(it, "config", cJSON_Duplicate(p->config, 1)) &&
             cJSON_AddNumberToObject(it, "pid", p->pid) && (!p->tag[0] || cJSON_AddStringToObject(it, "tag", p->tag));
    }
    pthread_mutex_unlock(&lb_procs_mu);
    if (ok)
        lb_e2b_unary(r, o);
    else
        lb_e2b_unary_error(r, "internal", "Out of memory.");
    cJSON_Delete(o);
    cJSON_Delete(req);
}

static void lb_answer_empty(lb_req *r, int rc, const char *code, const char *msg)
{
    if (rc) {
        lb_e2b_unary_error(r, code, "%s", msg);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    lb_e2b_unary(r, o);
    cJSON_Delete(o);
}

static void lb_e2b_signal(lb_req *r, lb_sbx *s)
{
    cJSON *req = lb_e2b_request(r, 0);
    if (!req)
        return;
    const cJSON *sg = cJSON_GetObjectItemCaseSensitive(req, "signal");
    /* the enum by name (the JSON codec's) or by number */
    int term = (cJSON_IsString(sg) && !strcmp(sg->valuestring, "SIGNAL_SIGTERM")) ||
               (cJSON_IsNumber(sg) && sg->valuedouble == 15);
    int i = lb_req_proc_locked(r, s, req, 0);
    if (i >= 0) {
        uint32_t pid = lb_procs[i].pid;
        pthread_mutex_unlock(&lb_procs_mu);
        char msg[1400];
        const char *code = "internal";
        int rc = lb_proc_signal(s, pid, term ? "TERM" : "KILL", &code, msg, sizeof msg);
        lb_answer_empty(r, rc, code, msg);
    }
    cJSON_Delete(req);
}

/* SendInput: the bytes go into a file of the process's folder by the
 * path-safe write op, then into its FIFO by cat (at most LB_E2B_CTL_MS:
 * a process that never reads makes SendInput fail, never hang). */
static void lb_e2b_input(lb_req *r, lb_sbx *s, int close_it)
{
    char msg[1400] = "", err[512] = "";
    char *data = NULL;
    size_t len = 0;
    cJSON *req = lb_e2b_request(r, 0);
    if (!req)
        return;
    int i = lb_req_proc_locked(r, s, req, 0);
    if (i < 0)
        goto out;
    uint32_t pid = lb_procs[i].pid;
    unsigned dir = lb_procs[i].dir;
    int has_stdin = lb_procs[i].has_stdin;
    pthread_mutex_unlock(&lb_procs_mu);
    (void)pid;
    if (!has_stdin) {
        lb_e2b_unary_error(r, "failed_precondition", "The process was started without stdin (stdin: false).");
        goto out;
    }
    char line[512];
    const char *code = "internal";
    if (close_it) {
        snprintf(line, sizeof line, "read -r w <%s%s.%u.wpid && kill -USR1 \"$w\"", LB_E2B_DIR, lb_run, dir);
        int rc = lb_shell(s, line, NULL, &code, msg, sizeof msg);
        lb_answer_empty(r, rc, code, msg);
        goto out;
    }
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(req, "input"), "stdin");
    if (!cJSON_IsString(in) || lb_base64_decode(in->valuestring, strlen(in->valuestring), LB_E2B_CHUNK, &data, &len)) {
        lb_e2b_unary_error(r, "invalid_argument", "input.stdin must be base64 bytes, at most %u of them",
                           (unsigned)LB_E2B_CHUNK);
        goto out;
    }
    char path[160];
    unsigned k = (unsigned)lb_mono_ms() ^ (unsigned)(uintptr_t)r;
    snprintf(path, sizeof path, "%s%s.%u.stdin.%u", LB_E2B_DIR, lb_run, dir, k);
    if (lb_sbx_lock(s, msg, sizeof msg) != LB_OK) {
        lb_e2b_unary_error(r, "unavailable", "%s", msg);
        goto out;
    }
    int rc = lbsb_write(s->conn, s->sbx_id, path, data ? data : "", len, 1, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        int st = lb_sbx_rpc_fail(s, rc, "pass stdin", err, msg, sizeof msg);
        lb_e2b_unary_error(r, st == 503 ? "unavailable" : "internal", "%s", msg);
        goto out;
    }
    snprintf(line, sizeof line, "timeout 10 cat %s >%s%s.%u.in; r=$?; rm -f %s; exit $r", path, LB_E2B_DIR, lb_run, dir,
             path);
    rc = lb_shell(s, line, NULL, &code, msg, sizeof msg);
    if (rc)
        snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (the process did not take its stdin within 10 s)");
    lb_answer_empty(r, rc, code, msg);
out:
    free(data);
    cJSON_Delete(req);
}

void lb_e2b_process(lb_req *r, lb_sbx *s, const char *method)
{
    if (strcmp(r->method, "POST")) {
        lb_http_drain(r);
        lb_http_method_not_allowed(r, "POST");
        return;
    }
    if (!strcmp(method, "Start")) {
        lb_e2b_start_run(r, s);
    } else if (!strcmp(method, "Connect")) {
        lb_e2b_connect(r, s);
    } else if (!strcmp(method, "List")) {
        lb_e2b_list(r, s);
    } else if (!strcmp(method, "SendSignal")) {
        lb_e2b_signal(r, s);
    } else if (!strcmp(method, "SendInput")) {
        lb_e2b_input(r, s, 0);
    } else if (!strcmp(method, "CloseStdin")) {
        lb_e2b_input(r, s, 1);
    } else if (!strcmp(method, "StreamInput") || !strcmp(method, "Update")) {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "unimplemented",
                           "process.Process/%s is not supported by llmbox: there is no pty (docs/E2B.md).", method);
    } else {
        lb_http_drain(r);
        lb_e2b_unary_error(r, "unimplemented", "process.Process has no method %.64s.", method);
    }
}
