/* Scoring apart from the episodes; the contract is score_pool.h. */
#include "jobs/score_pool.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "web/spawn.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LB_SCORE_OUT_MAX (1u << 20) /* the scorer prints one line; a judge's replies fit */
#define LB_SCORE_GRACE_S                                                                                               \
    30 /* then it is killed: its sandbox start and exit   \
                             */
#define LB_SCORE_JOBS_MAX 8192 /* queued or running: the runners' active runs fit */

typedef struct lb_sp_job {
    struct lb_sp_job *next;
    char key[LB_SCORE_KEY_MAX];
    void (*fn)(lb_store *s, void *arg);
    void (*done)(void *arg);
    void *arg;
} lb_sp_job;

static const lb_config *lb_sp_cfg;
static pthread_mutex_t lb_sp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lb_sp_cv = PTHREAD_COND_INITIALIZER;
static lb_sp_job *lb_sp_head, *lb_sp_tail;
/* keys queued or being scored: a run is not queued twice */
static char (*lb_sp_keys)[LB_SCORE_KEY_MAX];
static int lb_sp_nkeys;

static int key_at(const char *key)
{
    for (int i = 0; i < lb_sp_nkeys; i++)
        if (!strcmp(lb_sp_keys[i], key))
            return i;
    return -1;
}

int lb_score_pool_has(const char *key)
{
    pthread_mutex_lock(&lb_sp_mu);
    int have = lb_sp_keys && key_at(key) >= 0;
    pthread_mutex_unlock(&lb_sp_mu);
    return have;
}

int lb_score_pool_submit(const char *key, void (*fn)(lb_store *s, void *arg), void (*done)(void *arg), void *arg)
{
    int rc = LB_OK;
    lb_sp_job *j = NULL;
    pthread_mutex_lock(&lb_sp_mu);
    if (!lb_sp_keys)
        rc = LB_E_INTERNAL; /* not started */
    else if (key_at(key) >= 0)
        rc = LB_E_EXISTS;
    else if (lb_sp_nkeys == LB_SCORE_JOBS_MAX)
        rc = LB_E_BUSY;
    else if (!(j = calloc(1, sizeof *j)))
        rc = LB_E_NOMEM;
    if (rc == LB_OK) {
        snprintf(j->key, sizeof j->key, "%s", key);
        snprintf(lb_sp_keys[lb_sp_nkeys++], LB_SCORE_KEY_MAX, "%s", key);
        j->fn = fn;
        j->done = done;
        j->arg = arg;
        if (lb_sp_tail)
            lb_sp_tail->next = j;
        else
            lb_sp_head = j;
        lb_sp_tail = j;
        pthread_cond_signal(&lb_sp_cv);
    }
    pthread_mutex_unlock(&lb_sp_mu);
    return rc;
}

static void *scorer_main(void *unused)
{
    (void)unused;
    lb_store *s = NULL;
    for (;;) {
        pthread_mutex_lock(&lb_sp_mu);
        while (!lb_sp_head)
            pthread_cond_wait(&lb_sp_cv, &lb_sp_mu);
        lb_sp_job *j = lb_sp_head;
        lb_sp_head = j->next;
        if (!lb_sp_head)
            lb_sp_tail = NULL;
        pthread_mutex_unlock(&lb_sp_mu);
        if (!s && lb_store_open(lb_cfg_store_where(lb_sp_cfg), &s) != LB_OK)
            lb_error("scorer: cannot open the database; the run is scored again later");
        else
            j->fn(s, j->arg);
        pthread_mutex_lock(&lb_sp_mu);
        int i = key_at(j->key);
        if (i >= 0)
            memcpy(lb_sp_keys[i], lb_sp_keys[--lb_sp_nkeys], LB_SCORE_KEY_MAX);
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
    pthread_mutex_lock(&lb_sp_mu);
    if (!lb_sp_keys)
        lb_sp_keys = calloc(LB_SCORE_JOBS_MAX, LB_SCORE_KEY_MAX);
    int ok = lb_sp_keys != NULL;
    pthread_mutex_unlock(&lb_sp_mu);
    if (!ok)
        return LB_E_NOMEM;
    for (int i = 0; i < threads; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, scorer_main, NULL) != 0)
            return LB_E_INTERNAL;
        pthread_detach(t);
    }
    return LB_OK;
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
    rc = lb_spawn_capture_in(argv, q->req_path, LB_SCORE_OUT_MAX, (q->timeout_s + LB_SCORE_GRACE_S) * 1000, &out,
                             &outlen, &st);
    unlink(q->req_path);
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
