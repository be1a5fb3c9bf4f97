/*
 * Running commands in a sandbox's persistent bash session.
 *
 * Each command is sent to the shell as one payload line:
 *
 *   unset __lbsd_w; __lbsd_c=$'<command, bytes escaped>'; trap 'return 130 2>/dev/null' INT;
 *   . /proc/self/fd/3 3<<<'exec 3<&-; eval "$__lbsd_c"' </dev/null; __lbsd_rc=$?;
 *   trap : INT; unset __lbsd_c; jobs >/dev/null 2>&1;
 *   printf '\n%s%d\n' S "$__lbsd_rc"; printf '\n%s\n' S >&2
 *
 * Bash reads its command lines from the pipe one byte per read() (so that
 * it never takes what a child should read), which made the ~450 bytes of
 * a short command's line most of its cost. A payload that fits PIPE_BUF
 * with its header goes as
 *
 *   builtin read -rN<payload length> __lbsd_w&&builtin eval "$__lbsd_w"
 *   <payload line>
 *
 * in one write: only the header is read byte by byte, `read -N` takes the
 * payload in one read() (it asks for exactly that many bytes, so it reads
 * nothing past it; the payload is ASCII, so characters are bytes; -N
 * does not split on IFS, whatever the command set it to). A longer one is
 * sent as the line itself.
 *
 * S is a fresh 128-bit random sentinel, so nothing the command prints can
 * end it early by accident or by replaying an old one.
 *
 * - The command runs in the shell itself (eval), so cd, exports, declare,
 *   functions and venvs persist.
 * - The command's stdin is /dev/null (the `. ... </dev/null`), never the
 *   shell's command pipe: nothing a command reads can eat the next line.
 *   The sandbox API's exec helper relies on it (sbxapi/sandbox_spec.c).
 * - The here-string's fd 3 is closed before the eval (bash has read the
 *   whole sourced text by then), or every process the command starts would
 *   inherit it (tests/security: inherited_fds).
 * - It is passed with $'\xHH' escapes rather than through base64: no helper
 *   binary has to exist in the sandbox, and a command that breaks PATH does
 *   not break every command after it.
 * - The eval runs inside a sourced script (a tiny here-string) so that a
 *   SIGINT can abort the whole command, not just its current child: the INT
 *   trap's `return` leaves the sourced script. At the hard timeout or an
 *   interrupt ("C-c", or the interrupt op) sandboxd first SIGINTs the
 *   shell's foreground process group, as Ctrl-C would, and gives it
 *   LBSD_INT_GRACE_MS; then it SIGKILLs every other process of the sandbox
 *   and SIGINTs the shell (repeatedly: each one unwinds one function level);
 *   a shell stuck anyway is replaced after LBSD_KILL_GRACE_MS. Between
 *   commands the trap is a no-op, so a stray SIGINT never kills the shell.
 *   `jobs` flushes the "Killed" notice of an aborted job, which bash would
 *   otherwise print in the middle of some later command's stderr.
 *
 * stdout and stderr are read apart, non-blocking, from the event loop.
 * The command is over when both sentinels arrived (or stdout's did and
 * stderr stayed silent for a moment: the command may have closed fd 2),
 * when the shell died, or after it was stopped.
 *
 * Soft timeout: when a request carries soft_timeout_ms and the command is
 * still running then, the client gets state "running" with the output so
 * far and its connection is free again; the command goes on, its output is
 * captured afresh. An exec with command "" waits again (its own soft
 * timeout; the hard one still counts from the command's start), "C-c"
 * interrupts it; any other command is refused with "busy" until the end
 * of this one has been collected.
 */
#include "sandboxd/sandbox_exec.h"

#include "sandboxd/proc_walk.h"
#include "sandboxd/reply.h"
#include "sandboxd/sandbox_create.h"

#include "common/log.h"
#include "common/status.h"
#include "common/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LBSD_READ_CHUNK 65536
#define LBSD_READ_BUDGET (128u << 10) /* per stream per loop turn: stay fair */
/* A flood: a stream past what an answer keeps (its first and last 512 KiB,
 * or the idle cap between commands) for longer than LBSD_FLOOD_GRACE_MS.
 * Everything more is read only to be dropped, so it is read one chunk at a
 * time with a rest in between: the writer then sleeps on its full pipe
 * instead of taking a core, and the loop's copying stops competing with
 * every other sandbox's commands. On 2 cores, `yes` read flat out cost
 * 2.3 CPU seconds in 3 s (sandboxd 1.6, yes 0.7) and put another
 * sandbox's exec p99 at 3-15 ms (bench/RESULTS.md); throttled, 0.3. The
 * grace keeps a short burst fast (40 MB of output in 0.09 s); after it,
 * output drains at up to one chunk per rest (64 KiB per ms, ~60 MiB/s). */
#define LBSD_FLOOD_GRACE_MS 100
#define LBSD_FLOOD_REST_MS 1

/* ---- capture ------------------------------------------------------------ */

void lbsd_capture_init(lbsd_capture *c)
{
    memset(c, 0, sizeof *c);
    lb_buf_init(&c->head, LBSD_OUT_HEAD);
}

void lbsd_capture_free(lbsd_capture *c)
{
    lb_buf_free(&c->head);
    free(c->tail);
    c->tail = NULL;
    c->tail_len = c->tail_pos = 0;
}

void lbsd_capture_add(lbsd_capture *c, const char *p, size_t n)
{
    c->total += n;
    if (c->head.len < LBSD_OUT_HEAD) {
        size_t take = LBSD_OUT_HEAD - c->head.len;
        if (take > n)
            take = n;
        if (lb_buf_append(&c->head, p, take) != LB_OK) {
            /* out of memory: count the bytes as dropped rather than fail */
            take = n;
        }
        p += take;
        n -= take;
    }
    if (!n)
        return;
    if (!c->tail) {
        c->tail = malloc(LBSD_OUT_TAIL);
        if (!c->tail)
            return;
    }
    if (n > LBSD_OUT_TAIL) {
        p += n - LBSD_OUT_TAIL;
        n = LBSD_OUT_TAIL;
    }
    while (n) {
        size_t take = LBSD_OUT_TAIL - c->tail_pos;
        if (take > n)
            take = n;
        memcpy(c->tail + c->tail_pos, p, take);
        c->tail_pos = (c->tail_pos + take) % LBSD_OUT_TAIL;
        c->tail_len += take;
        if (c->tail_len > LBSD_OUT_TAIL)
            c->tail_len = LBSD_OUT_TAIL;
        p += take;
        n -= take;
    }
}

/* Appends p as valid UTF-8: invalid bytes and NULs become U+FFFD. */
static void lbsd_utf8_append(lb_buf *o, const unsigned char *p, size_t n)
{
    static const char repl[] = LB_UTF8_REPLACEMENT;
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c >= 0x01 && c < 0x80) {
            size_t j = i;
            while (j < n && p[j] >= 0x01 && p[j] < 0x80)
                j++;
            LB_IGNORE(lb_buf_append(o, p + i, j - i)); /* o is sized for the worst case */
            i = j;
            continue;
        }
        size_t len = c ? llmbox_utf8_decode(p + i, n - i, NULL) : 0; /* a NUL is replaced too */
        if (len) {
            LB_IGNORE(lb_buf_append(o, p + i, len)); /* o is sized for the worst case */
            i += len;
        } else {
            LB_IGNORE(lb_buf_append(o, repl, 3)); /* o is sized for the worst case */
            i++;
        }
    }
}

char *lbsd_capture_text(const lbsd_capture *c, int *truncated)
{
    lb_buf o;
    /* worst case every byte becomes 3: size the cap for that */
    lb_buf_init(&o, 3 * (LBSD_OUT_HEAD + LBSD_OUT_TAIL) + 256);
    lbsd_utf8_append(&o, (const unsigned char *)c->head.data, c->head.len);
    uint64_t dropped = c->total - c->head.len - c->tail_len;
    if (dropped) {
        /* the cap has 256 bytes for this line; out of memory leaves it out */
        LB_IGNORE(lb_buf_printf(&o, "\n[... %llu bytes omitted ...]\n", (unsigned long long)dropped));
        if (truncated)
            *truncated = 1;
    }
    if (c->tail_len) {
        if (c->tail_len < LBSD_OUT_TAIL) {
            lbsd_utf8_append(&o, (const unsigned char *)c->tail, c->tail_len);
        } else {
            lbsd_utf8_append(&o, (const unsigned char *)c->tail + c->tail_pos,
                             LBSD_OUT_TAIL - c->tail_pos);
            lbsd_utf8_append(&o, (const unsigned char *)c->tail, c->tail_pos);
        }
    }
    return lb_buf_steal(&o, NULL);
}

/* ---- sentinel scanning ---------------------------------------------------- */

static void lbsd_scan_commit(lbsd_capture *cap, const char *p, size_t n)
{
    if (n)
        lbsd_capture_add(cap, p, n);
}

/* Commits comb[a..b) except its first `shown` bytes, which lbsd_scan_show
 * already put in the capture. */
static void lbsd_scan_commit_from(lbsd_capture *cap, const char *comb, size_t a, size_t b,
                                  size_t shown)
{
    if (a < shown)
        a = shown;
    if (b > a)
        lbsd_capture_add(cap, comb + a, b - a);
}

/* How many bytes at the end of p[0..n) could be the start of "\n" + sent
 * and must wait for the next read: from the last '\n' among the last slen
 * bytes, if what follows it is the sentinel so far (an earlier '\n' cannot
 * start it: the sentinel holds none). Everything else goes to the capture
 * at once, so a "running" reply shows all the output so far. */
static size_t lbsd_scan_hold(const char *p, size_t n, const char *sent, size_t slen)
{
    size_t lo = n > slen ? n - slen : 0;
    const char *nl = memrchr(p + lo, '\n', n - lo);
    if (!nl)
        return 0;
    size_t after = n - (size_t)(nl - p) - 1;
    return memcmp(nl + 1, sent, after) == 0 ? after + 1 : 0;
}

/* Returns how many bytes of p were consumed; the rest came after the
 * sentinel line and belong to whatever runs next. */
static size_t lbsd_scan_feed_n(lbsd_scan *s, lbsd_capture *cap, const char *sent, size_t slen,
                               int with_code, const char *p, size_t n)
{
    static char comb[sizeof(((lbsd_scan *)0)->pend) + LBSD_READ_CHUNK];
    if (s->found)
        return 0;
    size_t consumed = 0;
    while (consumed < n && !s->found) {
        size_t take = n - consumed;
        if (take > LBSD_READ_CHUNK)
            take = LBSD_READ_CHUNK;
        size_t old = s->pend_len;
        memcpy(comb, s->pend, old);
        memcpy(comb + old, p + consumed, take);
        size_t L = old + take;
        /* comb[0..shown) is in the capture already */
        size_t shown = s->pend_shown;
        s->pend_len = 0;
        s->pend_shown = 0;
        size_t from = 0;
        for (;;) {
            char pat[LBSD_SENTINEL_HEX + 32];
            pat[0] = '\n';
            memcpy(pat + 1, sent, slen);
            char *hit = memmem(comb + from, L - from, pat, slen + 1);
            if (!hit) {
                size_t hold = lbsd_scan_hold(comb + from, L - from, sent, slen);
                lbsd_scan_commit_from(cap, comb, from, L - hold, shown);
                memcpy(s->pend, comb + L - hold, hold);
                s->pend_len = hold;
                s->pend_shown = shown > L - hold ? shown - (L - hold) : 0;
                consumed += take;
                break;
            }
            size_t i = (size_t)(hit - comb);
            size_t j = i + 1 + slen;
            /* the rest of the sentinel line: [-]digits then '\n' */
            size_t k = j;
            if (with_code && k < L && comb[k] == '-')
                k++;
            while (with_code && k < L && k - j < 12 && comb[k] >= '0' && comb[k] <= '9')
                k++;
            if (k >= L) {
                /* line not complete yet: keep it all pending */
                lbsd_scan_commit_from(cap, comb, from, i, shown);
                size_t hold = L - i;
                if (hold > sizeof s->pend) {
                    lbsd_scan_commit_from(cap, comb, i, L, shown);
                    hold = 0;
                }
                memcpy(s->pend, comb + i, hold);
                s->pend_len = hold;
                s->pend_shown = hold && shown > i ? shown - i : 0;
                consumed += take;
                break;
            }
            if (comb[k] != '\n' || (with_code && k == j)) {
                /* not our line after all; keep looking past this '\n' */
                lbsd_scan_commit_from(cap, comb, from, i + 1, shown);
                from = i + 1;
                continue;
            }
            lbsd_scan_commit_from(cap, comb, from, i, shown);
            if (with_code)
                s->code = (int)strtol(comb + j, NULL, 10); /* [-]digits, at most 12 */
            s->found = 1;
            /* k + 1 bytes of comb used; the first `old` came from pend */
            consumed += (k + 1 > old) ? (k + 1 - old) : 0;
            break;
        }
    }
    return consumed;
}

void lbsd_scan_feed(lbsd_scan *s, lbsd_capture *cap, const char *sent, size_t slen,
                    int with_code, const char *p, size_t n)
{
    (void)lbsd_scan_feed_n(s, cap, sent, slen, with_code, p, n);
}

void lbsd_scan_flush(lbsd_scan *s, lbsd_capture *cap)
{
    lbsd_scan_commit_from(cap, s->pend, 0, s->pend_len, s->pend_shown);
    s->pend_len = 0;
    s->pend_shown = 0;
}

void lbsd_scan_show(lbsd_scan *s, lbsd_capture *cap)
{
    /* only the lone newline: anything longer may be the sentinel arriving,
     * which must never show (it waits for the next read instead) */
    if (s->found || s->pend_len != 1 || s->pend_shown)
        return;
    lbsd_scan_commit(cap, s->pend, 1);
    s->pend_shown = 1;
}

/* ---- the wrapper line ------------------------------------------------------ */

/* The longest wrapper sent in the bulk form: one write of at most
 * PIPE_BUF bytes into the shell's (idle, empty) pipe is atomic, so the
 * whole payload is there when bash reads the header, and `read -N` takes
 * it in one read() that cannot block or be cut by a signal. */
#define LBSD_BULK_MAX 4096

char *lbsd_exec_wrapper(const char *cmd, size_t len, const char *sentinel, size_t *outlen)
{
    lb_buf b;
    lb_buf_init(&b, 4 * len + 640);
    int rc = lb_buf_appends(&b, "unset __lbsd_w; __lbsd_c=$'");
    for (size_t i = 0; rc == LB_OK && i < len; i++) {
        unsigned char c = (unsigned char)cmd[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr(" _-./,:=+@%^~", c) != NULL)
            rc = lb_buf_append(&b, &cmd[i], 1);
        else
            rc = lb_buf_printf(&b, "\\x%02x", c);
    }
    if (rc == LB_OK)
        rc = lb_buf_printf(&b,
                           "'; trap 'return 130 2>/dev/null' INT; "
                           ". /proc/self/fd/3 3<<<'exec 3<&-; eval \"$__lbsd_c\"' </dev/null; "
                           "__lbsd_rc=$?; trap : INT; unset __lbsd_c; jobs >/dev/null 2>&1; "
                           /* follow-ups: the shell's cwd and exported variables, in the
                            * layer, for a saved state's restore (sandbox_restore.c) */
                           "{ builtin printf 'builtin cd -- %%q\\n' \"$PWD\"; builtin export -p; } "
                           /* stderr first: an image without /run, or a User that may
                            * not write it, must not add a line to every command */
                           "2>/dev/null >/run/.llmbox-shell || :; "
                           "printf '\\n%%s%%d\\n' '%s' \"$__lbsd_rc\"; "
                           "printf '\\n%%s\\n' '%s' >&2; unset __lbsd_rc\n",
                           sentinel, sentinel);
    if (rc != LB_OK) {
        lb_buf_free(&b);
        return NULL;
    }
    char head[96];
    int hn = snprintf(head, sizeof head, "builtin read -rN%zu __lbsd_w&&builtin eval \"$__lbsd_w\"\n", b.len);
    if (hn <= 0 || (size_t)hn >= sizeof head || (size_t)hn + b.len > LBSD_BULK_MAX)
        return lb_buf_steal(&b, outlen); /* long: the payload itself is the line */
    /* bulk: bash reads a command line from a pipe one byte per read() (it
     * must not read past the line), ~1 us each in a sandbox: only the short
     * header is read so, the payload (its newline included) in one read */
    lb_buf w;
    lb_buf_init(&w, LBSD_BULK_MAX + 1);
    rc = lb_buf_append(&w, head, (size_t)hn);
    if (rc == LB_OK)
        rc = lb_buf_append(&w, b.data, b.len);
    lb_buf_free(&b);
    if (rc != LB_OK) {
        lb_buf_free(&w);
        return NULL;
    }
    return lb_buf_steal(&w, outlen);
}

/* ---- life of one command ---------------------------------------------------- */

static void lbsd_exec_free(lbsd_exec *ex)
{
    if (!ex)
        return;
    free(ex->wbuf);
    lbsd_capture_free(&ex->out);
    lbsd_capture_free(&ex->err);
    free(ex);
}

int lbsd_exec_start(lbsd_sandbox *sb, const lbsd_req *req, char *msg, size_t msgsz)
{
    if (sb->exec) {
        snprintf(msg, msgsz, "a command is already running in this sandbox");
        return LB_E_BUSY;
    }
    if (memchr(req->command, '\0', req->command_len)) {
        snprintf(msg, msgsz, "the command holds a NUL byte");
        return LB_E_INVAL;
    }
    /* no shell, or one that closed its stdin or stdout (`exec >&-`): no
     * sentinel could ever come back, so start over with a fresh shell */
    if (sb->sh_nspid == 0 || sb->sh_in < 0 || sb->sh_out < 0) {
        int rc = lbsd_shell_spawn(sb, msg, msgsz);
        if (rc)
            return rc;
    }
    lbsd_exec *ex = calloc(1, sizeof *ex);
    if (!ex) {
        snprintf(msg, msgsz, "out of memory");
        return LB_E_NOMEM;
    }
    lbsd_capture_init(&ex->out);
    lbsd_capture_init(&ex->err);
    char hex[LBSD_SENTINEL_HEX + 1];
    if (lb_random_hex(hex, sizeof hex, LBSD_SENTINEL_HEX / 2) != LB_OK) {
        lbsd_exec_free(ex);
        snprintf(msg, msgsz, "no randomness for the sentinel");
        return LB_E_INTERNAL;
    }
    ex->sentinel_len = (size_t)snprintf(ex->sentinel, sizeof ex->sentinel, "__LBSD_%s__", hex);
    ex->wbuf = lbsd_exec_wrapper(req->command, req->command_len, ex->sentinel, &ex->wlen);
    if (!ex->wbuf) {
        lbsd_exec_free(ex);
        snprintf(msg, msgsz, "out of memory");
        return LB_E_NOMEM;
    }
    /* what background jobs printed since the last command comes first */
    lbsd_capture_add(&ex->out, sb->idle_out.data ? sb->idle_out.data : "", sb->idle_out.len);
    lbsd_capture_add(&ex->err, sb->idle_err.data ? sb->idle_err.data : "", sb->idle_err.len);
    lb_buf_reset(&sb->idle_out);
    lb_buf_reset(&sb->idle_err);
    ex->start_ms = lb_mono_ms();
    int t = req->timeout_ms > 0 ? req->timeout_ms : sb->cfg->cmd_timeout_s * 1000;
    if (t <= 0)
        t = LBSD_DEFAULT_TIMEOUT_MS;
    ex->timeout_ms = t;
    ex->deadline_ms = ex->start_ms + t;
    if (req->soft_timeout_ms > 0)
        ex->soft_ms = ex->start_ms + req->soft_timeout_ms;
    ex->oom_before = lbsd_cg_oom_kills(&sb->cg);
    sb->exec = ex;
    lbsd_exec_on_writable(sb);
    return LB_OK;
}

/* SIGINT to every process of the shell's process group, which is what
 * Ctrl-C on a terminal does (the shell leads its own session, so the group
 * is its pid). The shell's INT trap unwinds the command line once its
 * foreground child is gone; background jobs of a shell without job control
 * ignore SIGINT and live on. Each process is checked to be in the sandbox's
 * pid namespace before it is signalled, so a recycled pid never takes a
 * signal meant for the sandbox (no kill(-pgid)). */
/* One process of the walk: SIGINT when it is the sandbox's and in the
 * shell's foreground group. */
static int lbsd_sigint_if_foreground(pid_t pid, void *arg)
{
    lbsd_sandbox *sb = arg;
    if (pid == sb->init_pid || !lbsd_pid_in_sandbox(sb, pid))
        return 0;
    char buf[1024];
    if (lbsd_proc_read(pid, "stat", buf, sizeof buf) <= 0)
        return 0;
    /* "pid (comm) state ppid pgrp ...": comm may hold anything, so the
     * fields start after its last ')' */
    char *rp = strrchr(buf, ')');
    char state;
    int ppid, pgrp;
    if (rp && sscanf(rp + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == sb->sh_hostpid)
        kill(pid, SIGINT);
    return 0;
}

static void lbsd_sigint_group(lbsd_sandbox *sb)
{
    if (sb->sh_hostpid <= 1)
        return;
    /* best effort: an unreadable /proc leaves stage 2 to kill the rest */
    (void)lbsd_proc_each(lbsd_sigint_if_foreground, sb);
}

/* Stopping, stage 1: SIGINT to the foreground group; programs get
 * LBSD_INT_GRACE_MS to clean up and exit by themselves. */
static void lbsd_exec_sigint(lbsd_sandbox *sb, int64_t now)
{
    lbsd_exec *ex = sb->exec;
    lbsd_sigint_group(sb);
    ex->phase = LBSD_EX_INT;
    ex->int_ms = now;
}

/* Stopping, stage 2: SIGINT to the shell (its INT trap unwinds the
 * command) and SIGKILL to everything else of the sandbox. Repeated while
 * the shell has not answered; stage 3 (a fresh shell) is in the tick. */
static void lbsd_exec_stop(lbsd_sandbox *sb, int64_t now)
{
    lbsd_exec *ex = sb->exec;
    /* never kill(0, ...): that would be sandboxd's own process group */
    if (sb->sh_hostpid > 1)
        kill(sb->sh_hostpid, SIGINT);
    lbsd_kill_all(sb, 1);
    if (ex->phase != LBSD_EX_KILLED) {
        ex->phase = LBSD_EX_KILLED;
        ex->kill_ms = now;
    }
    ex->next_stop_ms = now + LBSD_STOP_REPEAT_MS;
}

void lbsd_exec_on_writable(lbsd_sandbox *sb)
{
    lbsd_exec *ex = sb->exec;
    if (!ex || ex->done || ex->woff >= ex->wlen || sb->sh_in < 0)
        return;
    while (ex->woff < ex->wlen) {
        ssize_t w = write(sb->sh_in, ex->wbuf + ex->woff, ex->wlen - ex->woff);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return;
            /* EPIPE: the shell is gone; init's EXIT message finishes this */
            ex->woff = ex->wlen;
            return;
        }
        ex->woff += (size_t)w;
    }
}

/* Routes bytes that arrived when no command (or no longer this command)
 * wants them. Capped: a chatty background job cannot grow our memory. */
static void lbsd_idle_add(lbsd_sandbox *sb, int is_err, const char *p, size_t n)
{
    lb_buf *b = is_err ? &sb->idle_err : &sb->idle_out;
    if (lb_buf_append_trunc(b, p, n))
        sb->idle_dropped = 1;
}

/* True when this stream floods (see LBSD_FLOOD_GRACE_MS): what it brings
 * now is dropped anyway, and it is read slowly. */
static int lbsd_flooding(lbsd_sandbox *sb, int is_err, int64_t now)
{
    lbsd_exec *ex = sb->exec;
    if (!ex || ex->done) /* between commands: once the idle cap is full */
        return (is_err ? sb->idle_err.len : sb->idle_out.len) >= LBSD_IDLE_MAX;
    const lbsd_capture *cap = is_err ? &ex->err : &ex->out;
    if (cap->total <= (uint64_t)LBSD_OUT_HEAD + LBSD_OUT_TAIL)
        return 0;
    if (!ex->flood_ms[is_err])
        ex->flood_ms[is_err] = now;
    return now - ex->flood_ms[is_err] >= LBSD_FLOOD_GRACE_MS;
}

int lbsd_exec_out_ready(const lbsd_sandbox *sb, int is_err, int64_t now, int *timeout)
{
    int64_t until = sb->out_rest_ms[is_err ? 1 : 0];
    if (until <= now)
        return 1;
    int t = (int)(until - now);
    if (*timeout < 0 || t < *timeout)
        *timeout = t;
    return 0;
}

void lbsd_exec_on_output(lbsd_sandbox *sb, int fd)
{
    static char buf[LBSD_READ_CHUNK];
    int is_err = fd == sb->sh_err;
    size_t budget = lbsd_flooding(sb, is_err, lb_mono_ms()) ? LBSD_READ_CHUNK : LBSD_READ_BUDGET;
    sb->out_rest_ms[is_err] = 0;
    while (budget) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return; /* EAGAIN */
        if (r == 0) {
            /* the shell (and every job holding the pipe) closed it */
            if (is_err) {
                close(sb->sh_err);
                sb->sh_err = -1;
            } else {
                close(sb->sh_out);
                sb->sh_out = -1;
            }
            return;
        }
        budget -= (size_t)r > budget ? budget : (size_t)r;
        lbsd_exec *ex = sb->exec;
        if (!ex || ex->done) {
            lbsd_idle_add(sb, is_err, buf, (size_t)r);
            continue;
        }
        lbsd_scan *s = is_err ? &ex->serr : &ex->sout;
        lbsd_capture *cap = is_err ? &ex->err : &ex->out;
        size_t used = 0;
        if (!s->found) {
            used = lbsd_scan_feed_n(s, cap, ex->sentinel, ex->sentinel_len, !is_err, buf, (size_t)r);
            if (s->found && !is_err)
                ex->out_done_ms = lb_mono_ms();
        }
        if (used < (size_t)r)
            lbsd_idle_add(sb, is_err, buf + used, (size_t)r - used);
    }
    /* past what is kept: the next read waits (LBSD_FLOOD_REST_MS) */
    int64_t now = lb_mono_ms();
    if (lbsd_flooding(sb, is_err, now))
        sb->out_rest_ms[is_err] = now + LBSD_FLOOD_REST_MS;
}

/* Drains whatever the pipes still hold (the shell is dead or done). */
static void lbsd_exec_drain(lbsd_sandbox *sb)
{
    if (sb->sh_out >= 0)
        lbsd_exec_on_output(sb, sb->sh_out);
    if (sb->sh_err >= 0)
        lbsd_exec_on_output(sb, sb->sh_err);
}

/* Answers the waiting client with the output captured since the last
 * answer: the command's end when it is over (then it is forgotten), else
 * state "running" (the command goes on, its capture starts afresh). */
static void lbsd_exec_reply(lbsd_sandbox *sb)
{
    lbsd_exec *ex = sb->exec;
    lbsd_conn *c = sb->owner;
    int fin = ex->done;
    int state = fin ? ex->end_state : LLMBOX_EXEC_RUNNING;
    if (!fin) {
        lbsd_scan_show(&ex->sout, &ex->out);
        lbsd_scan_show(&ex->serr, &ex->err);
    }
    int trunc = 0;
    char *out = lbsd_capture_text(&ex->out, &trunc);
    char *err = lbsd_capture_text(&ex->err, &trunc);
    int64_t dur = (fin ? ex->end_ms : lb_mono_ms()) - ex->start_ms;
    if (c && ex->waiting) {
        cJSON *r = cJSON_CreateObject();
        if (r) {
            cJSON_AddStringToObject(r, "state", lbsd_state_name(state));
            cJSON_AddNumberToObject(r, "exit_code", fin ? ex->end_code : -1);
            cJSON_AddStringToObject(r, "stdout", out ? out : "");
            cJSON_AddStringToObject(r, "stderr", err ? err : "");
            cJSON_AddBoolToObject(r, "truncated", trunc);
            cJSON_AddNumberToObject(r, "duration_ms", (double)dur);
            cJSON_AddNumberToObject(r, "timeout_ms", ex->timeout_ms);
            if (fin && (ex->shell_exited || ex->shell_restarted))
                cJSON_AddBoolToObject(r, "shell_restarted", 1);
        }
        c->busy = 0; /* so the reply goes out before what was deferred behind it */
        lbsd_reply(c, r, NULL, 0, 0);
        lbsd_conn_unbusy(c);
    }
    free(out);
    free(err);
    ex->waiting = 0;
    if (fin) {
        sb->exec = NULL;
        lbsd_exec_free(ex);
    } else {
        lbsd_capture_free(&ex->out);
        lbsd_capture_free(&ex->err);
        lbsd_capture_init(&ex->out);
        lbsd_capture_init(&ex->err);
        lb_debug("sandbox %s: command still running after %lld ms", sb->id, (long long)dur);
    }
}

/* The command is over (both sentinels, the shell or the sandbox died, or
 * the shell had to be killed): works out how it ended, starts a fresh
 * shell if needed, and answers if the client waits; else the end is kept
 * until an exec collects it. */
static void lbsd_exec_complete(lbsd_sandbox *sb)
{
    lbsd_exec *ex = sb->exec;
    lbsd_scan_flush(&ex->sout, &ex->out);
    lbsd_scan_flush(&ex->serr, &ex->err);
    int state = LLMBOX_EXEC_EXITED, code = -1;
    if (ex->sout.found)
        code = ex->sout.code;
    else if (ex->shell_exited && WIFEXITED(ex->shell_status))
        code = WEXITSTATUS(ex->shell_status);
    else if (ex->shell_exited && WIFSIGNALED(ex->shell_status))
        code = 128 + WTERMSIG(ex->shell_status);
    uint64_t oom_after = lbsd_cg_oom_kills(&sb->cg);
    if (sb->broken)
        state = LLMBOX_EXEC_ERROR;
    else if (ex->interrupted)
        state = LLMBOX_EXEC_INTERRUPTED;
    else if (ex->phase != LBSD_EX_RUNNING)
        state = LLMBOX_EXEC_TIMEOUT;
    else if (oom_after > ex->oom_before)
        state = LLMBOX_EXEC_OOM;
    if (sb->broken) {
        char m[400];
        lbsd_note_gone(sb);
        snprintf(m, sizeof m, "\n[llmbox: the sandbox died while the command ran: %s]\n",
                 sb->gone_why);
        lbsd_capture_add(&ex->err, m, strlen(m));
    } else if (ex->shell_restarted) {
        const char *m = "\n[llmbox: the command did not stop when it was interrupted; the shell "
                        "was killed and a fresh one started (cwd, environment and shell "
                        "variables were reset)]\n";
        lbsd_capture_add(&ex->err, m, strlen(m));
    }
    ex->done = 1;
    ex->end_state = state;
    ex->end_code = code;
    ex->end_ms = lb_mono_ms();
    ex->woff = ex->wlen;
    lb_debug("sandbox %s: command %s (code %d) in %lld ms", sb->id, lbsd_state_name(state), code,
             (long long)(ex->end_ms - ex->start_ms));
    if ((ex->shell_exited || ex->shell_restarted) && !sb->broken) {
        char msg[256];
        if (lbsd_shell_spawn(sb, msg, sizeof msg) != LB_OK)
            lb_warn("sandbox %s: cannot restart the shell: %s", sb->id, msg);
    }
    if (ex->waiting)
        lbsd_exec_reply(sb);
}

void lbsd_exec_shell_exited(lbsd_sandbox *sb, int status)
{
    lbsd_exec *ex = sb->exec;
    if (!ex || ex->done) {
        /* died between commands (a background `kill $$`?): next exec respawns */
        return;
    }
    ex->shell_exited = 1;
    ex->shell_status = status;
    lbsd_exec_drain(sb);
    lbsd_exec_complete(sb);
}

int lbsd_exec_tick(lbsd_sandbox *sb, int64_t now)
{
    lbsd_exec *ex = sb->exec;
    if (!ex || ex->done)
        return -1;
    if (sb->broken) {
        lbsd_exec_complete(sb);
        return -1;
    }
    if (ex->sout.found && (ex->serr.found || sb->sh_err < 0 ||
                           now - ex->out_done_ms >= LBSD_STDERR_GRACE_MS)) {
        lbsd_exec_complete(sb);
        return -1;
    }
    /* the hard limit, counted from the start whoever waits */
    if (ex->phase == LBSD_EX_RUNNING && now >= ex->deadline_ms)
        lbsd_exec_sigint(sb, now);
    if (ex->phase == LBSD_EX_INT && !ex->sout.found && now - ex->int_ms >= LBSD_INT_GRACE_MS)
        lbsd_exec_stop(sb, now); /* SIGINT was not enough */
    else if (ex->phase == LBSD_EX_KILLED && !ex->sout.found && now >= ex->next_stop_ms &&
             now - ex->kill_ms < LBSD_KILL_GRACE_MS)
        lbsd_exec_stop(sb, now); /* one more function level, or new children */
    if (ex->phase == LBSD_EX_KILLED && !ex->sout.found && now - ex->kill_ms >= LBSD_KILL_GRACE_MS) {
        /* the shell itself is stuck (a builtin loop, stdin redirected...) */
        ex->shell_restarted = 1;
        lbsd_kill_all(sb, 0);
        lbsd_exec_drain(sb);
        lbsd_exec_complete(sb);
        return -1;
    }
    /* the soft timeout: answer with the output so far, the command goes on
     * (not while it is being stopped or finishing: that answer is near) */
    if (ex->waiting && ex->soft_ms && now >= ex->soft_ms && ex->phase == LBSD_EX_RUNNING &&
        !ex->sout.found)
        lbsd_exec_reply(sb);
    int64_t next;
    if (ex->sout.found)
        next = ex->out_done_ms + LBSD_STDERR_GRACE_MS;
    else if (ex->phase == LBSD_EX_INT)
        next = ex->int_ms + LBSD_INT_GRACE_MS;
    else if (ex->phase == LBSD_EX_KILLED)
        next = ex->next_stop_ms < ex->kill_ms + LBSD_KILL_GRACE_MS ? ex->next_stop_ms
                                                                   : ex->kill_ms + LBSD_KILL_GRACE_MS;
    else if (ex->waiting && ex->soft_ms && ex->soft_ms < ex->deadline_ms)
        next = ex->soft_ms;
    else
        next = ex->deadline_ms;
    int64_t d = next - now;
    return d < 0 ? 0 : d > 60000 ? 60000 : (int)d;
}

void lbsd_exec_interrupt(lbsd_sandbox *sb)
{
    lbsd_exec *ex = sb->exec;
    if (!ex || ex->done || ex->phase != LBSD_EX_RUNNING)
        return; /* over, or already being stopped at the hard limit */
    ex->interrupted = 1;
    /* as at a timeout: SIGINT, SIGKILL, and a fresh shell if the old one
     * does not report within the grace times */
    lbsd_exec_sigint(sb, lb_mono_ms());
}

static int lbsd_is_ctrl_c(const lbsd_req *req)
{
    return req->command_len == 3 && !memcmp(req->command, "C-c", 3);
}

int lbsd_exec_request(lbsd_conn *c, lbsd_sandbox *sb, const lbsd_req *req, char *msg,
                      size_t msgsz)
{
    lbsd_exec *ex = sb->exec;
    int64_t now = lb_mono_ms();
    int wait_more = req->command_len == 0, ctrl_c = lbsd_is_ctrl_c(req);
    if (!ex) {
        if (wait_more) {
            snprintf(msg, msgsz, "no command is running in this sandbox, so there is nothing to "
                                 "wait for (an empty command waits for one that is still running)");
            return LB_E_INVAL;
        }
        if (ctrl_c) {
            snprintf(msg, msgsz, "no command is running in this sandbox, so there is nothing to "
                                 "interrupt");
            return LB_E_INVAL;
        }
        int rc = lbsd_exec_start(sb, req, msg, msgsz);
        if (rc)
            return rc;
        ex = sb->exec;
    } else if (ex->waiting) {
        /* only the owner gets here, and it is busy while it waits */
        snprintf(msg, msgsz, "the command in this sandbox is already being waited for");
        return LB_E_BUSY;
    } else if (wait_more) {
        ex->soft_ms = req->soft_timeout_ms > 0 ? now + req->soft_timeout_ms : 0;
    } else if (ctrl_c) {
        ex->soft_ms = 0;
        lbsd_exec_interrupt(sb);
    } else if (ex->done) {
        snprintf(msg, msgsz, "the previous command has ended, but its end has not been collected: "
                             "send an empty command to get its last output and exit status first");
        return LB_E_BUSY;
    } else {
        snprintf(msg, msgsz, "a command started %lld s ago is still running in this sandbox: "
                             "send an empty command to wait for it, or \"C-c\" to interrupt it",
                 (long long)((now - ex->start_ms) / 1000));
        return LB_E_BUSY;
    }
    ex->waiting = 1;
    c->busy = 1;
    if (ex->done)
        lbsd_exec_reply(sb); /* it ended meanwhile: answer at once */
    return LB_OK;
}

void lbsd_exec_abandon(lbsd_sandbox *sb)
{
    if (!sb->exec)
        return;
    if (sb->owner && sb->exec->waiting)
        sb->owner->busy = 0;
    lbsd_exec_free(sb->exec);
    sb->exec = NULL;
}
