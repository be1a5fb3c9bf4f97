/* Scoring apart from the episodes; the contract is score_pool.h. */
#include "jobs/score_pool.h"

#include "common/agent_spawn.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/status.h"
#include "common/utf8.h"
#include "common/util.h"
#include "eval/score_request.h"
#include "store/store.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LB_SCORE_OUT_MAX (1u << 20) /* the scorer prints one line; a judge's replies fit */
#define LB_SCORE_GRACE_S 30 /* then it is killed: its sandbox start and exit */
#define LB_SCORE_JOBS_MAX 8192 /* queued or running: the runners' active runs fit */
#define LB_SCORE_OWNERS_MAX 256 /* owners remembered for "served least recently"; one forgotten starts afresh */
#define LB_SCORE_OWNER_MAX 64

enum { LANE_SLOW, LANE_FAST, LANES };

typedef struct lb_sp_job {
    struct lb_sp_job *next;
    char key[LB_SCORE_KEY_MAX];
    char group[LB_SCORE_KEY_MAX];
    char owner[LB_SCORE_OWNER_MAX];
    int lane;
    int cancelled;              /* its group was cancelled: lb_score_exec answers at once */
    int running;                /* a thread has it */
    pid_t pid;                  /* its `llmbox score` while one runs (a session of its own), else 0 */
    void (*fn)(lb_store *s, void *arg);
    void (*done)(void *arg);
    void *arg;
} lb_sp_job;

/* An owner's jobs running in each lane, and when it was last served. */
typedef struct lb_sp_owner {
    char name[LB_SCORE_OWNER_MAX];
    int running[LANES];
    uint64_t served;
} lb_sp_owner;

static const lb_config *lb_sp_cfg;
static pthread_mutex_t lb_sp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lb_sp_cv[LANES] = {PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};
/* every job queued or running, in the order submitted; guarded by lb_sp_mu */
static lb_sp_job *lb_sp_head, *lb_sp_tail;
static int lb_sp_njobs, lb_sp_started;
static lb_sp_owner lb_sp_owners[LB_SCORE_OWNERS_MAX];
static int lb_sp_nowners;
static uint64_t lb_sp_serial;
static int lb_sp_share = 1;     /* slow-lane threads one owner's jobs may hold */
/* the job of this scorer thread (NULL elsewhere): lb_score_exec records its
 * process there, for lb_score_pool_cancel */
static __thread lb_sp_job *lb_sp_cur;

int lb_score_is_fast(const char *scorer)
{
    return !scorer || !strcmp(scorer, "exact") || !strcmp(scorer, "numeric") || !strcmp(scorer, "choice");
}

/* The job of key, or NULL. Under lb_sp_mu. */
static lb_sp_job *job_of(const char *key)
{
    for (lb_sp_job *j = lb_sp_head; j; j = j->next)
        if (!strcmp(j->key, key))
            return j;
    return NULL;
}

/* The entry of owner name (made, or one idle forgotten, when new), or
 * NULL when every entry has work running. Under lb_sp_mu. */
static lb_sp_owner *owner_of(const char *name, int make)
{
    int idle = -1;
    for (int i = 0; i < lb_sp_nowners; i++) {
        lb_sp_owner *o = &lb_sp_owners[i];
        if (!strcmp(o->name, name))
            return o;
        if (!o->running[LANE_SLOW] && !o->running[LANE_FAST] &&
            (idle < 0 || o->served < lb_sp_owners[idle].served))
            idle = i;
    }
    if (!make)
        return NULL;
    lb_sp_owner *o = lb_sp_nowners < LB_SCORE_OWNERS_MAX ? &lb_sp_owners[lb_sp_nowners++]
                     : idle >= 0                         ? &lb_sp_owners[idle]
                                                         : NULL;
    if (o) {
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%s", name);
    }
    return o;
}

int lb_score_pool_has(const char *key)
{
    pthread_mutex_lock(&lb_sp_mu);
    int have = job_of(key) != NULL;
    pthread_mutex_unlock(&lb_sp_mu);
    return have;
}

int lb_score_pool_submit_job(const lb_score_job_info *info, void (*fn)(lb_store *s, void *arg),
                             void (*done)(void *arg), void *arg)
{
    int rc = LB_OK;
    lb_sp_job *j = NULL;
    pthread_mutex_lock(&lb_sp_mu);
    if (!lb_sp_started)
        rc = LB_E_INTERNAL; /* not started */
    else if (job_of(info->key))
        rc = LB_E_EXISTS;
    else if (lb_sp_njobs == LB_SCORE_JOBS_MAX)
        rc = LB_E_BUSY;
    else if (!(j = calloc(1, sizeof *j)))
        rc = LB_E_NOMEM;
    if (rc == LB_OK) {
        snprintf(j->key, sizeof j->key, "%s", info->key);
        snprintf(j->group, sizeof j->group, "%s", info->group ? info->group : info->key);
        snprintf(j->owner, sizeof j->owner, "%s", info->owner ? info->owner : "");
        j->lane = lb_score_is_fast(info->scorer) ? LANE_FAST : LANE_SLOW;
        j->fn = fn;
        j->done = done;
        j->arg = arg;
        if (lb_sp_tail)
            lb_sp_tail->next = j;
        else
            lb_sp_head = j;
        lb_sp_tail = j;
        lb_sp_njobs++;
        pthread_cond_broadcast(&lb_sp_cv[j->lane]);
    }
    pthread_mutex_unlock(&lb_sp_mu);
    return rc;
}

int lb_score_pool_submit(const char *key, void (*fn)(lb_store *s, void *arg), void (*done)(void *arg), void *arg)
{
    lb_score_job_info info = {.key = key, .group = key, .owner = "", .scorer = "script"};
    return lb_score_pool_submit_job(&info, fn, done, arg);
}

int lb_score_pool_cancel(const char *group)
{
    int n = 0;
    pthread_mutex_lock(&lb_sp_mu);
    for (lb_sp_job *j = lb_sp_head; j; j = j->next) {
        if (strcmp(j->group, group))
            continue;
        n++;
        if (!j->cancelled)
            pthread_cond_broadcast(&lb_sp_cv[j->lane]); /* a cancelled job may go past the shares */
        j->cancelled = 1;
        /* the pid is not reaped before it is cleared under this lock
         * (run_capture), so it is still our child's session here */
        if (j->pid > 0)
            kill(-j->pid, SIGKILL);
    }
    pthread_mutex_unlock(&lb_sp_mu);
    return n;
}

/* The next job of lane for a free thread, or NULL. Under lb_sp_mu. */
static lb_sp_job *pick(int lane)
{
    lb_sp_job *best = NULL;
    int best_run = 0;
    uint64_t best_served = 0;
    /* a group's jobs come one after another: their owner is looked up once */
    const char *last = NULL;
    lb_sp_owner *o = NULL;
    for (lb_sp_job *j = lb_sp_head; j; j = j->next) {
        if (j->running || j->lane != lane)
            continue;
        if (j->cancelled)
            return j; /* it only records that it was cancelled */
        if (!last || strcmp(last, j->owner))
            o = owner_of(j->owner, 0);
        last = j->owner;
        int run = o ? o->running[lane] : 0;
        uint64_t served = o ? o->served : 0;
        if (lane == LANE_SLOW && run >= lb_sp_share)
            continue; /* its owner holds its share: another's job goes first */
        if (!best || run < best_run || (run == best_run && served < best_served)) {
            best = j;
            best_run = run;
            best_served = served;
        }
    }
    return best;
}

typedef struct lb_sp_thread {
    int lane;
} lb_sp_thread;

/* This thread's store, opened at its first job: a few tries 200 ms apart
 * (a database another connection is creating or migrating can answer
 * "locked" for a moment; lb_store_open closes what it half opened). */
static int scorer_store(lb_store **s)
{
    for (int i = 0; !*s && i < 5; i++) {
        if (i)
            usleep(200000);
        lb_store *n = NULL;
        if (lb_store_open(lb_cfg_store_where(lb_sp_cfg), &n) == LB_OK)
            *s = n;
    }
    return *s ? LB_OK : LB_E_IO;
}

static void *scorer_main(void *argp)
{
    int lane = ((lb_sp_thread *)argp)->lane;
    free(argp);
    lb_store *s = NULL;
    for (;;) {
        pthread_mutex_lock(&lb_sp_mu);
        lb_sp_job *j;
        lb_sp_owner *o = NULL;
        for (;;) {
            j = pick(lane);
            /* an owner no entry can be made for (every one busy) waits */
            if (j && (j->cancelled || (o = owner_of(j->owner, 1))))
                break;
            pthread_cond_wait(&lb_sp_cv[lane], &lb_sp_mu);
        }
        j->running = 1;
        if (!j->cancelled || (o = owner_of(j->owner, 1))) {
            o->running[lane]++;
            o->served = ++lb_sp_serial;
        }
        lb_sp_cur = j;
        pthread_mutex_unlock(&lb_sp_mu);
        if (scorer_store(&s) != LB_OK)
            lb_error("scorer: cannot open the database; the run is scored again later");
        else
            j->fn(s, j->arg);
        pthread_mutex_lock(&lb_sp_mu);
        lb_sp_cur = NULL;
        if (o)
            o->running[lane]--;
        lb_sp_job **pp = &lb_sp_head;
        lb_sp_job *prev = NULL;
        while (*pp != j) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        *pp = j->next;
        if (lb_sp_tail == j)
            lb_sp_tail = prev;
        lb_sp_njobs--;
        pthread_cond_broadcast(&lb_sp_cv[lane]); /* its owner's share has room again */
        pthread_mutex_unlock(&lb_sp_mu);
        if (j->done)
            j->done(j->arg);
        free(j);
    }
    return NULL;
}

int lb_score_pool_start(const lb_config *cfg, int threads)
{
    lb_sp_cfg = cfg;
    int fast = cfg->score_fast_threads > 0 ? cfg->score_fast_threads : 1;
    pthread_mutex_lock(&lb_sp_mu);
    lb_sp_share = cfg->score_user_share > 0 ? cfg->score_user_share : threads / 2;
    if (lb_sp_share < 1)
        lb_sp_share = 1;
    lb_sp_started = 1;
    pthread_mutex_unlock(&lb_sp_mu);
    for (int i = 0; i < threads + fast; i++) {
        pthread_t t;
        lb_sp_thread *a = malloc(sizeof *a);
        if (!a)
            return LB_E_NOMEM;
        a->lane = i < threads ? LANE_SLOW : LANE_FAST;
        if (pthread_create(&t, NULL, scorer_main, a) != 0) {
            free(a);
            return LB_E_INTERNAL;
        }
        pthread_detach(t);
    }
    return LB_OK;
}

/* Whether this thread's job was cancelled. */
static int cur_cancelled(void)
{
    if (!lb_sp_cur)
        return 0;
    pthread_mutex_lock(&lb_sp_mu);
    int c = lb_sp_cur->cancelled;
    pthread_mutex_unlock(&lb_sp_mu);
    return c;
}

/* lb_spawn_capture_in's steps (web/spawn.c), with the child in a session
 * of its own whose id this thread's job keeps while it runs, so that
 * lb_score_pool_cancel can kill it (and whatever it started). */
static int run_capture(char *const argv[], const char *stdin_path, size_t max, int timeout_ms, char **out,
                       size_t *outlen, int *exit_status)
{
    *out = NULL;
    *outlen = 0;
    *exit_status = -1;
    int p[2] = {-1, -1}, rc = LB_OK, fa_ok = 0, at_ok = 0;
    pid_t pid = 0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    lb_buf b;
    lb_buf_init(&b, max);
    if (pipe2(p, O_CLOEXEC) != 0) {
        rc = LB_E_IO;
        goto out;
    }
    if (posix_spawn_file_actions_init(&fa) != 0) {
        rc = LB_E_NOMEM;
        goto out;
    }
    fa_ok = 1;
    /* stderr stays ours: whatever the scorer complains about lands in the web log */
    if (posix_spawn_file_actions_addopen(&fa, 0, stdin_path, O_RDONLY | O_NOFOLLOW, 0) ||
        posix_spawn_file_actions_adddup2(&fa, p[1], 1) || posix_spawn_file_actions_addclosefrom_np(&fa, 3)) {
        rc = LB_E_NOMEM;
        goto out;
    }
    if ((rc = lb_spawn_attr(&at, 1)) != LB_OK)
        goto out;
    at_ok = 1;
    /* spawned and recorded under the lock: a cancel either came before
     * (and is seen here) or finds the pid */
    pthread_mutex_lock(&lb_sp_mu);
    int e = lb_sp_cur && lb_sp_cur->cancelled ? ECANCELED : posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
    if (e == 0 && lb_sp_cur)
        lb_sp_cur->pid = pid;
    pthread_mutex_unlock(&lb_sp_mu);
    if (e != 0) {
        pid = 0;
        errno = e;
        rc = e == ECANCELED ? LB_E_CANCELLED : LB_E_IO;
        goto out;
    }
    close(p[1]);
    p[1] = -1;
    rc = lb_buf_read_fd(&b, p[0], timeout_ms);
out:
    if (pid > 0) {
        if (rc != LB_OK)
            kill(-pid, SIGKILL);
        /* cleared before it is reaped: a cancel never signals a reused id */
        pthread_mutex_lock(&lb_sp_mu);
        if (lb_sp_cur)
            lb_sp_cur->pid = 0;
        pthread_mutex_unlock(&lb_sp_mu);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        *exit_status = st;
    }
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    if (at_ok)
        posix_spawnattr_destroy(&at);
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    if (rc == LB_OK) {
        if (!b.data && lb_buf_append(&b, "", 0) != LB_OK)
            rc = LB_E_NOMEM;
        else
            *out = lb_buf_steal(&b, outlen);
    }
    lb_buf_free(&b);
    return rc;
}

/* The request as JSON text (caller frees), or NULL. */
static char *request_text(const lb_score_req *q)
{
    char *text = NULL;
    cJSON *req = cJSON_CreateObject();
    /* each part belongs to req once added; until then to us */
    cJSON *gt = q->gt_json ? cJSON_Parse(q->gt_json) : cJSON_CreateNull();
    if (!gt || !req || !cJSON_AddItemToObject(req, "ground_truth", gt)) {
        cJSON_Delete(gt);
        goto out;
    }
    cJSON *row = q->row_json ? cJSON_Parse(q->row_json) : cJSON_CreateObject();
    if (!row || !cJSON_AddItemToObject(req, "row", row)) {
        cJSON_Delete(row);
        goto out;
    }
    cJSON *judge = cJSON_AddObjectToObject(req, "judge");
    if (!judge || !cJSON_AddStringToObject(req, "scorer", q->scorer) ||
        !cJSON_AddStringToObject(req, "answer", q->answer ? q->answer : "") ||
        (q->script && !cJSON_AddStringToObject(req, "script", q->script)) ||
        !cJSON_AddStringToObject(judge, "model", q->judge_model ? q->judge_model : "") ||
        !cJSON_AddNumberToObject(judge, "votes", q->judge_votes > 0 ? q->judge_votes : 1) ||
        !cJSON_AddNumberToObject(req, "timeout_s", q->timeout_s))
        goto out;
    text = cJSON_PrintUnformatted(req);
out:
    cJSON_Delete(req);
    return text;
}

/* The text scorers (exact, numeric, choice) here, with the checks and
 * the answer `llmbox score` would give (score_main.c's run and emit):
 * pure string work on capped text, where a process of its own cost ~15
 * ms of loading for microseconds of scoring (bench/RESULTS.md). */
static int score_text_here(const lb_score_req *q, lb_score_out *o)
{
    int rc = LB_OK;
    char *truths[LB_SCORE_TRUTHS_MAX];
    size_t lens[LB_SCORE_TRUTHS_MAX], nt = 0;
    cJSON *gt = q->gt_json ? cJSON_Parse(q->gt_json) : NULL;
    cJSON *row = q->row_json ? cJSON_Parse(q->row_json) : NULL;
    lb_score s;
    memset(&s, 0, sizeof s);
    if ((q->gt_json && !gt) || (q->row_json && !row)) {
        snprintf(o->error_class, sizeof o->error_class, "scorer_error");
        o->detail = strdup("out of memory making the scorer's request");
        rc = LB_E_NOMEM;
        goto out;
    }
    if (row && !cJSON_IsObject(row) && !cJSON_IsNull(row)) {
        s.error_class = "bad_request";
        snprintf(s.detail, sizeof s.detail, "field `row`: not an object");
    } else if (!gt || cJSON_IsNull(gt)) {
        s.error_class = "bad_request";
        snprintf(s.detail, sizeof s.detail, "field `ground_truth`: missing (the %s scorer compares with it)",
                 q->scorer);
    } else {
        const char *answer = q->answer ? q->answer : "";
        nt = lb_score_truth_texts(gt, truths, lens, LB_SCORE_TRUTHS_MAX);
        lb_score_text_run(q->scorer, answer, strlen(answer), (const char *const *)truths, lens, nt, NULL, row, &s);
    }
    size_t dl = 0;
    o->detail = lb_utf8_sanitize(s.detail, strlen(s.detail), &dl);
    if (!o->detail) {
        snprintf(o->error_class, sizeof o->error_class, "scorer_error");
        rc = LB_E_NOMEM;
        goto out;
    }
    /* no verdict, no number: a failed scorer must not read as a wrong answer */
    o->score = s.error_class || s.score > 1 || s.score < 0 ? -1 : s.score;
    if (s.error_class)
        snprintf(o->error_class, sizeof o->error_class, "%s", s.error_class);
out:
    lb_score_truths_free(truths, nt);
    cJSON_Delete(gt);
    cJSON_Delete(row);
    return rc;
}

int lb_score_exec(const lb_config *cfg, const lb_score_req *q, lb_score_out *o)
{
    o->score = -1;
    o->detail = NULL;
    o->error_class[0] = '\0';
    snprintf(o->scorer, sizeof o->scorer, "%s", q->scorer ? q->scorer : "");
    int rc;
    char *out = NULL;
    size_t outlen = 0;
    cJSON *line = NULL;
    if (cur_cancelled()) {
        snprintf(o->error_class, sizeof o->error_class, "cancelled");
        o->detail = strdup("not scored: its rollout group or evaluation was cancelled");
        return LB_E_CANCELLED;
    }
    if (lb_score_is_text(q->scorer))
        return score_text_here(q, o);
    char *text = request_text(q);
    if (!text) {
        snprintf(o->error_class, sizeof o->error_class, "scorer_error");
        o->detail = strdup("out of memory making the scorer's request");
        return LB_E_NOMEM;
    }
    rc = lb_write_file_atomic(q->req_path, text, strlen(text), 0600);
    free(text);
    if (rc != LB_OK) {
        snprintf(o->error_class, sizeof o->error_class, "scorer_error");
        o->detail = strdup("could not write the scorer's request");
        return rc;
    }
    char *argv[] = {(char *)cfg->self_exe, "score", NULL};
    int st = 0;
    rc = run_capture(argv, q->req_path, LB_SCORE_OUT_MAX, (q->timeout_s + LB_SCORE_GRACE_S) * 1000, &out, &outlen,
                     &st);
    unlink(q->req_path);
    /* killed by a cancel: its pipe just ends, so the signal tells */
    if (rc == LB_E_CANCELLED || ((rc != LB_OK || WIFSIGNALED(st)) && cur_cancelled())) {
        snprintf(o->error_class, sizeof o->error_class, "cancelled");
        o->detail = strdup("the scorer was stopped: its rollout group or evaluation was cancelled");
        rc = LB_E_CANCELLED;
        goto out;
    }
    if (rc == LB_E_TIMEOUT) {
        snprintf(o->error_class, sizeof o->error_class, "scorer_timeout");
        o->detail = strdup("the scorer did not answer in time");
        goto out;
    }
    line = rc == LB_OK ? cJSON_ParseWithLength(out, outlen) : NULL;
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(line, "score");
    if (!cJSON_IsObject(line) || !(cJSON_IsNumber(sv) || cJSON_IsNull(sv))) {
        snprintf(o->error_class, sizeof o->error_class, "scorer_error");
        char why[160];
        snprintf(why, sizeof why, "the scorer failed (%s)",
                 rc != LB_OK       ? lb_strerror(rc)
                 : WIFSIGNALED(st) ? "killed by a signal"
                                   : "no result line");
        o->detail = strdup(why);
        rc = LB_E_INVAL;
        goto out;
    }
    o->score = cJSON_IsNumber(sv) ? sv->valuedouble : -1;
    if (o->score > 1 || o->score < -1)
        o->score = -1;
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "scorer"));
    if (v)
        snprintf(o->scorer, sizeof o->scorer, "%s", v);
    v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "error_class"));
    if (v)
        snprintf(o->error_class, sizeof o->error_class, "%s", v);
    v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "detail"));
    o->detail = strdup(v ? v : "");
    rc = LB_OK;
out:
    cJSON_Delete(line);
    free(out);
    return rc;
}
