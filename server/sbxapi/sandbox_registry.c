/* The table of API sandboxes, their life cycle and the TTL reaper
 * (see sandbox_registry.h for the locking rules). */
#include "sbxapi/sandbox_registry.h"

#include "sbxapi/handlers_sandbox_pause.h"

#include "sbxapi/sandbox_leases.h"
#include "sbxapi/sandbox_rows.h" /* several nodes */
#include "sbxapi/tool_hosts.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LB_SBX_TOMBSTONES 1024     /* ids remembered after they left, for the 404 sentence */
#define LB_SBX_REAP_TICK_MS 250

static pthread_mutex_t lb_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static lb_sbx **lb_tab;            /* registry lock; holds one reference per entry */
static int lb_tab_n, lb_tab_cap;

typedef struct lb_tomb {
    char id[LB_NODE_ID_MAX + 1];
    int why;                       /* lb_sbx_gone */
    int64_t at_ms;
} lb_tomb;
static lb_tomb lb_tombs[LB_SBX_TOMBSTONES];
static unsigned lb_tomb_next;

/* ---- small helpers (registry lock held where it says so) ---- */

static void lb_iso_time(int64_t ms, char *out, size_t outsz)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, outsz, "%s.%03dZ", base, (int)(ms % 1000));
}

static int lb_find_locked(const char *id)
{
    for (int i = 0; i < lb_tab_n; i++)
        if (!strcmp(lb_tab[i]->id, id))
            return i;
    return -1;
}

static void lb_tomb_add_locked(const char *id, int why)
{
    lb_tomb *t = &lb_tombs[lb_tomb_next++ % LB_SBX_TOMBSTONES];
    memcpy(t->id, id, sizeof t->id);
    t->why = why;
    t->at_ms = lb_now_ms();
}

/* The 404 sentence for an id that is not (or no longer) in the table. */
static void lb_gone_msg_locked(const char *id, char *msg, size_t msgsz)
{
    if (!msg || !msgsz)
        return;
    /* newest first: an id is never reused, but be exact anyway */
    for (unsigned k = 1; k <= LB_SBX_TOMBSTONES; k++) {
        const lb_tomb *t = &lb_tombs[(lb_tomb_next - k) % LB_SBX_TOMBSTONES];
        if (!t->id[0] || strcmp(t->id, id) != 0)
            continue;
        char when[40];
        lb_iso_time(t->at_ms, when, sizeof when);
        if (t->why == LB_SBX_GONE_EXPIRED)
            snprintf(msg, msgsz, "The sandbox %s expired at %s (its ttl_s had passed) and was destroyed; "
                     "create a new one.", id, when);
        else if (t->why == LB_SBX_GONE_FAILED)
            snprintf(msg, msgsz, "The sandbox %s could not be created.", id);
        else
            snprintf(msg, msgsz, "The sandbox %s was deleted at %s.", id, when);
        return;
    }
    snprintf(msg, msgsz, "There is no sandbox with id \"%s\" (it may have been deleted or expired a while ago, "
             "or the service restarted).", id);
}

static void lb_sbx_free(lb_sbx *s)
{
    lb_tool_host_stop(s->tool_host); /* removed entries have none left; a failed create's never had one */
    cJSON_Delete(s->spec);
    cJSON_Delete(s->metadata);
    cJSON_Delete(s->env);
    pthread_mutex_destroy(&s->op_mu);
    free(s);
}

/* ---- the reaper ---- */

#define LB_SBX_AUTOPAUSE_TICK 16 /* autoPauses one tick does (each a sandboxd freeze) */

/* E2B's autoPause (lb_sbx_set_auto_pause): at its timeout, before its
 * hard end, s is paused instead of destroyed. Registry lock held. */
static int lb_sbx_autopause_due_locked(const lb_sbx *s)
{
    return s->auto_pause && s->expires_ms < s->hard_end_ms - 1000;
}

/* Pauses s (a reference the caller took) and moves its end to the hard
 * end; destroyed as expired (at the next tick) if the pause fails. */
static void *lb_sbx_autopause(void *arg)
{
    lb_sbx *s = arg;
    char err[512] = "";
    pthread_mutex_lock(&lb_reg_mu);
    int drop = s->auto_pause_drop;
    pthread_mutex_unlock(&lb_reg_mu);
    int same = 0, rc = drop ? lb_sbx_pause_drop(s, &same, err, sizeof err) : lb_sbx_pause_set(s, 1, &same, err, sizeof err);
    if (rc == LB_OK) {
        pthread_mutex_lock(&lb_reg_mu);
        int64_t now = lb_now_ms();
        s->deadline_mono = lb_mono_ms() + (s->hard_end_ms - now);
        s->expires_ms = s->hard_end_ms;
        s->ttl_s = (int)((s->expires_ms - s->created_ms + 999) / 1000);
        s->auto_paused = 1;
        pthread_mutex_unlock(&lb_reg_mu);
        lb_sbx_row_update(s);
        lb_sbx_lease_save(s);
        lb_info("web: sandbox API: %s reached its timeout and was paused (autoPause)", s->id);
    } else if (rc != LB_E_NOTFOUND) {
        lb_warn("web: sandbox API: %s: the autoPause failed (%s); destroyed as expired", s->id, err);
        pthread_mutex_lock(&lb_reg_mu);
        s->auto_pause = 0;
        pthread_mutex_unlock(&lb_reg_mu);
    }
    pthread_mutex_lock(&lb_reg_mu);
    s->auto_pausing = 0;
    pthread_mutex_unlock(&lb_reg_mu);
    lb_sbx_put(s);
    return NULL;
}

static void *lb_reaper(void *arg)
{
    (void)arg;
    char (*ids)[LB_NODE_ID_MAX + 1] = calloc((size_t)lb_tab_cap, sizeof *ids);
    if (!ids) {
        lb_error("web: sandbox API: no memory for the TTL reaper; expired sandboxes stay until deleted");
        return NULL;
    }
    for (;;) {
        struct timespec ts = {0, LB_SBX_REAP_TICK_MS * 1000000L};
        nanosleep(&ts, NULL);
        int n = 0, np = 0;
        int64_t now = lb_mono_ms();
        lb_sbx *to_pause[LB_SBX_AUTOPAUSE_TICK];
        pthread_mutex_lock(&lb_reg_mu);
        for (int i = 0; i < lb_tab_n && n < lb_tab_cap; i++) {
            /* a sandbox still being created is reaped once it runs */
            if (lb_tab[i]->state == LB_SBX_STARTING || now < lb_tab[i]->deadline_mono)
                continue;
            if (lb_sbx_autopause_due_locked(lb_tab[i])) {
                if (!lb_tab[i]->auto_pausing && np < LB_SBX_AUTOPAUSE_TICK) { /* the rest at the next tick */
                    lb_tab[i]->refs++;
                    lb_tab[i]->auto_pausing = 1;
                    to_pause[np++] = lb_tab[i];
                }
            } else {
                memcpy(ids[n++], lb_tab[i]->id, sizeof ids[0]);
            }
        }
        pthread_mutex_unlock(&lb_reg_mu);
        /* each on a thread of its own: a freeze waits for the sandbox's op
         * lock, which a long native exec may hold, and the reaper must not */
        for (int i = 0; i < np; i++)
            if (lb_thread_detached(lb_sbx_autopause, to_pause[i]))
                lb_sbx_autopause(to_pause[i]); /* no thread: here, then */
        for (int i = 0; i < n; i++)
            if (lb_sbx_remove(ids[i], LB_SBX_GONE_EXPIRED) == LB_OK)
                lb_info("web: sandbox API: %s expired and was destroyed", ids[i]);
    }
    return NULL;
}

int lb_sbx_registry_init(int max)
{
    lb_tab_cap = max;
    lb_tab = calloc((size_t)lb_tab_cap, sizeof *lb_tab);
    if (!lb_tab)
        return LB_E_NOMEM;
    int e = lb_thread_detached(lb_reaper, NULL);
    return e ? LB_E_INTERNAL : LB_OK;
}

/* ---- entries ---- */

int lb_sbx_reserve(const char *node, int ttl_s, cJSON *spec, cJSON *metadata, cJSON *env, const char *workdir,
                   lb_sbx **out)
{
    char id[LB_NODE_ID_MAX + 1];
    if (lb_node_id_new(node, id, sizeof id) != LB_OK)
        return LB_E_INTERNAL;
    int64_t now = lb_now_ms();
    return lb_sbx_reserve_as(id, now, now + (int64_t)ttl_s * 1000, ttl_s, spec, metadata, env, workdir, out);
}

static int lb_reserve(const char *id, const char *owner, int owner_max, int64_t created_ms, int64_t expires_ms,
                      int ttl_s, cJSON *spec, cJSON *metadata, cJSON *env, const char *workdir, lb_sbx **out);

int lb_sbx_reserve_owned(const char *node, const char *owner, int owner_max, int ttl_s, cJSON *spec,
                         cJSON *metadata, cJSON *env, const char *workdir, lb_sbx **out)
{
    char id[LB_NODE_ID_MAX + 1];
    if (lb_node_id_new(node, id, sizeof id) != LB_OK)
        return LB_E_INTERNAL;
    int64_t now = lb_now_ms();
    return lb_reserve(id, owner, owner_max, now, now + (int64_t)ttl_s * 1000, ttl_s, spec, metadata, env, workdir,
                      out);
}

void lb_sbx_set_owner(lb_sbx *s, const char *owner)
{
    pthread_mutex_lock(&lb_reg_mu);
    snprintf(s->owner, sizeof s->owner, "%s", owner ? owner : "");
    pthread_mutex_unlock(&lb_reg_mu);
}

int lb_sbx_visible(const char *id, const char *owner)
{
    if (!owner || !owner[0])
        return 1;
    pthread_mutex_lock(&lb_reg_mu);
    int i = lb_find_locked(id);
    int ok = i < 0 || !strcmp(lb_tab[i]->owner, owner);
    pthread_mutex_unlock(&lb_reg_mu);
    return ok;
}

int lb_sbx_reserve_as(const char *id, int64_t created_ms, int64_t expires_ms, int ttl_s, cJSON *spec,
                      cJSON *metadata, cJSON *env, const char *workdir, lb_sbx **out)
{
    return lb_reserve(id, "", 0, created_ms, expires_ms, ttl_s, spec, metadata, env, workdir, out);
}

static int lb_reserve(const char *id, const char *owner, int owner_max, int64_t created_ms, int64_t expires_ms,
                      int ttl_s, cJSON *spec, cJSON *metadata, cJSON *env, const char *workdir, lb_sbx **out)
{
    *out = NULL;
    lb_sbx *s = calloc(1, sizeof *s);
    if (!s)
        return LB_E_NOMEM;
    snprintf(s->id, sizeof s->id, "%s", id);
    pthread_mutex_init(&s->op_mu, NULL);
    s->refs = 2; /* the table's and the caller's */
    s->state = LB_SBX_STARTING;
    s->ttl_s = ttl_s;
    s->created_ms = created_ms;
    s->expires_ms = expires_ms;
    /* the TTL on the monotonic clock, from what is left of it now */
    s->deadline_mono = lb_mono_ms() + (expires_ms - lb_now_ms());
    snprintf(s->workdir, sizeof s->workdir, "%s", workdir ? workdir : "/testbed");
    snprintf(s->owner, sizeof s->owner, "%s", owner ? owner : "");
    pthread_mutex_lock(&lb_reg_mu);
    int held = 0;
    for (int i = 0; owner_max > 0 && s->owner[0] && i < lb_tab_n; i++)
        held += !strcmp(lb_tab[i]->owner, s->owner);
    if (owner_max > 0 && held >= owner_max) {
        pthread_mutex_unlock(&lb_reg_mu);
        pthread_mutex_destroy(&s->op_mu);
        free(s);
        return LB_E_BUSY;
    }
    if (!lb_tab || lb_tab_n >= lb_tab_cap || lb_find_locked(s->id) >= 0) {
        int full = !lb_tab || lb_tab_n >= lb_tab_cap;
        pthread_mutex_unlock(&lb_reg_mu);
        pthread_mutex_destroy(&s->op_mu);
        free(s);
        return full ? LB_E_TOOBIG : LB_E_EXISTS;
    }
    s->spec = spec;
    s->metadata = metadata;
    s->env = env;
    lb_tab[lb_tab_n++] = s;
    pthread_mutex_unlock(&lb_reg_mu);
    *out = s;
    return LB_OK;
}

lb_sbx *lb_sbx_get(const char *id, char *msg, size_t msgsz)
{
    lb_sbx *s = NULL;
    pthread_mutex_lock(&lb_reg_mu);
    int i = lb_find_locked(id);
    if (i >= 0 && lb_tab[i]->state != LB_SBX_STARTING && lb_mono_ms() >= lb_tab[i]->deadline_mono &&
        !lb_sbx_autopause_due_locked(lb_tab[i])) { /* one the reaper pauses within a tick is kept */
        /* past its TTL: gone for clients now, the reaper destroys it within a tick */
        char when[40];
        lb_iso_time(lb_tab[i]->expires_ms, when, sizeof when);
        if (msg && msgsz)
            snprintf(msg, msgsz, "The sandbox %s expired at %s (its ttl_s had passed) and was destroyed; "
                     "create a new one.", id, when);
    } else if (i >= 0) {
        s = lb_tab[i];
        s->refs++;
    } else {
        lb_gone_msg_locked(id, msg, msgsz);
    }
    pthread_mutex_unlock(&lb_reg_mu);
    return s;
}

void lb_sbx_put(lb_sbx *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&lb_reg_mu);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&lb_reg_mu);
    if (last)
        lb_sbx_free(s);
}

int lb_sbx_lock(lb_sbx *s, char *msg, size_t msgsz)
{
    pthread_mutex_lock(&s->op_mu);
    pthread_mutex_lock(&lb_reg_mu);
    int removed = s->removed;
    if (removed)
        lb_gone_msg_locked(s->id, msg, msgsz);
    pthread_mutex_unlock(&lb_reg_mu);
    if (removed) {
        pthread_mutex_unlock(&s->op_mu);
        return LB_E_NOTFOUND;
    }
    return LB_OK;
}

void lb_sbx_unlock(lb_sbx *s)
{
    pthread_mutex_unlock(&s->op_mu);
}

int lb_sbx_tool_claim(lb_sbx *s)
{
    pthread_mutex_lock(&lb_reg_mu);
    int ok = !s->tool_busy;
    s->tool_busy = 1;
    pthread_mutex_unlock(&lb_reg_mu);
    return ok;
}

void lb_sbx_tool_release(lb_sbx *s)
{
    pthread_mutex_lock(&lb_reg_mu);
    s->tool_busy = 0;
    pthread_mutex_unlock(&lb_reg_mu);
}

void lb_sbx_set_running(lb_sbx *s)
{
    pthread_mutex_lock(&lb_reg_mu);
    int running = !s->removed;
    if (running)
        s->state = LB_SBX_RUNNING;
    pthread_mutex_unlock(&lb_reg_mu);
    if (running) /* created or adopted: listed by every web of a cluster */
        lb_sbx_row_put(s);
}

/* follow-ups: pause and resume (handlers_sandbox_pause.c) */
void lb_sbx_set_paused(lb_sbx *s, int paused)
{
    pthread_mutex_lock(&lb_reg_mu);
    s->paused = paused;
    pthread_mutex_unlock(&lb_reg_mu);
    lb_sbx_row_update(s);
}

void lb_sbx_set_auto_pause(lb_sbx *s, int64_t hard_end_ms)
{
    pthread_mutex_lock(&lb_reg_mu);
    s->auto_pause = 1;
    s->hard_end_ms = hard_end_ms;
    pthread_mutex_unlock(&lb_reg_mu);
}

void lb_sbx_set_auto_pause_drop(lb_sbx *s, int64_t hard_end_ms)
{
    pthread_mutex_lock(&lb_reg_mu);
    s->auto_pause = 1;
    s->auto_pause_drop = 1;
    s->hard_end_ms = hard_end_ms;
    pthread_mutex_unlock(&lb_reg_mu);
}

void lb_sbx_set_auto_resume(lb_sbx *s)
{
    pthread_mutex_lock(&lb_reg_mu);
    s->auto_resume = 1;
    pthread_mutex_unlock(&lb_reg_mu);
}

int lb_sbx_auto_resume_of(lb_sbx *s)
{
    pthread_mutex_lock(&lb_reg_mu);
    int a = s->auto_resume;
    pthread_mutex_unlock(&lb_reg_mu);
    return a;
}

void lb_sbx_set_public_ports(lb_sbx *s)
{
    pthread_mutex_lock(&lb_reg_mu);
    s->public_ports = 1;
    pthread_mutex_unlock(&lb_reg_mu);
}

int lb_sbx_public_ports_of(lb_sbx *s)
{
    pthread_mutex_lock(&lb_reg_mu);
    int a = s->public_ports;
    pthread_mutex_unlock(&lb_reg_mu);
    return a;
}

void lb_sbx_set_mask_host(lb_sbx *s, const char *mask)
{
    pthread_mutex_lock(&lb_reg_mu);
    snprintf(s->mask_host, sizeof s->mask_host, "%s", mask ? mask : "");
    pthread_mutex_unlock(&lb_reg_mu);
}

void lb_sbx_mask_host_of(lb_sbx *s, char *out, size_t outsz)
{
    pthread_mutex_lock(&lb_reg_mu);
    snprintf(out, outsz, "%s", s->mask_host);
    pthread_mutex_unlock(&lb_reg_mu);
}

cJSON *lb_sbx_e2b_flags(lb_sbx *s)
{
    char mask[LB_SBX_MASK_HOST_MAX];
    pthread_mutex_lock(&lb_reg_mu);
    int pause = s->auto_pause, drop = s->auto_pause_drop, paused = s->auto_paused, resume = s->auto_resume;
    int pub = s->public_ports;
    int64_t end = s->hard_end_ms;
    memcpy(mask, s->mask_host, sizeof mask);
    pthread_mutex_unlock(&lb_reg_mu);
    if (!pause && !resume && !pub && !mask[0])
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddBoolToObject(o, "auto_pause", pause) || !cJSON_AddBoolToObject(o, "auto_pause_drop", drop) ||
        !cJSON_AddBoolToObject(o, "auto_paused", paused) || !cJSON_AddNumberToObject(o, "hard_end_ms", (double)end) ||
        !cJSON_AddBoolToObject(o, "auto_resume", resume) || !cJSON_AddBoolToObject(o, "public_ports", pub) ||
        !cJSON_AddStringToObject(o, "mask_host", mask)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* 1 when o[key] is true */
static int lb_flag(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

void lb_sbx_e2b_flags_restore(lb_sbx *s, const cJSON *o)
{
    if (!cJSON_IsObject(o))
        return;
    const cJSON *end = cJSON_GetObjectItemCaseSensitive(o, "hard_end_ms");
    const char *mask = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "mask_host"));
    int mask_ok = mask && strlen(mask) < LB_SBX_MASK_HOST_MAX;
    for (const char *p = mask_ok ? mask : ""; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            mask_ok = 0; /* a Host line of its own: no space, no control character */
    pthread_mutex_lock(&lb_reg_mu);
    if (lb_flag(o, "auto_pause") && cJSON_IsNumber(end) && end->valuedouble > 0 && end->valuedouble < 9.0e15) {
        s->auto_pause = 1;
        s->hard_end_ms = (int64_t)end->valuedouble;
        s->auto_pause_drop = lb_flag(o, "auto_pause_drop");
        s->auto_paused = lb_flag(o, "auto_paused");
        s->auto_resume = lb_flag(o, "auto_resume");
    }
    s->public_ports = lb_flag(o, "public_ports");
    if (mask_ok)
        snprintf(s->mask_host, sizeof s->mask_host, "%s", mask);
    pthread_mutex_unlock(&lb_reg_mu);
}

int lb_sbx_take_auto_paused(lb_sbx *s)
{
    pthread_mutex_lock(&lb_reg_mu);
    int p = s->auto_paused && s->paused;
    s->auto_paused = 0;
    pthread_mutex_unlock(&lb_reg_mu);
    return p;
}

int lb_sbx_is_paused(lb_sbx *s)
{
    pthread_mutex_lock(&lb_reg_mu);
    int p = s->paused;
    pthread_mutex_unlock(&lb_reg_mu);
    return p;
}

void lb_sbx_set_error(lb_sbx *s, const char *why)
{
    pthread_mutex_lock(&lb_reg_mu);
    if (!s->removed) {
        s->state = LB_SBX_ERROR;
        snprintf(s->error, sizeof s->error, "%s", why ? why : "the sandbox failed");
    }
    pthread_mutex_unlock(&lb_reg_mu);
}

lb_sbx_state lb_sbx_state_of(lb_sbx *s, char *why, size_t whysz)
{
    pthread_mutex_lock(&lb_reg_mu);
    lb_sbx_state st = s->state;
    if (why && whysz)
        snprintf(why, whysz, "%s", s->error);
    pthread_mutex_unlock(&lb_reg_mu);
    return st;
}

int lb_sbx_remove(const char *id, lb_sbx_gone why)
{
    pthread_mutex_lock(&lb_reg_mu);
    int i = lb_find_locked(id);
    if (i < 0) {
        pthread_mutex_unlock(&lb_reg_mu);
        return LB_E_NOTFOUND;
    }
    lb_sbx *s = lb_tab[i];
    lb_tab[i] = lb_tab[--lb_tab_n];
    lb_tab[lb_tab_n] = NULL;
    s->removed = 1;
    s->state = LB_SBX_STOPPED;
    lb_tomb_add_locked(s->id, why);
    pthread_mutex_unlock(&lb_reg_mu);
    lb_sbx_lease_drop(s->id); /* a restarted web must not adopt it */
    lb_sbx_row_drop(s->id);   /* no web lists it from now on */

    /* A call in progress (an exec up to its timeout) notices the flag
     * within the client's poll tick, asks sandboxd to stop the command and
     * returns; the answers it leaves owed are dropped by the destroy below. */
    s->cancel = 1;
    pthread_mutex_lock(&s->op_mu);
    s->cancel = 0;
    lb_tool_host_stop(s->tool_host); /* it dies with its sandbox */
    s->tool_host = NULL;
    if (s->conn) {
        char err[256] = "";
        /* explicit destroy, so sandboxd is done with it when we answer;
         * closing the connection would also destroy it, but later */
        if (s->sbx_id[0] && lbsb_destroy(s->conn, s->sbx_id, err, sizeof err) != LB_OK)
            lb_warn("web: sandbox API: destroying %s (sandboxd %s): %s; closing its connection instead", s->id,
                    s->sbx_id, err);
        lbsb_close(s->conn);
        s->conn = NULL;
    }
    pthread_mutex_unlock(&s->op_mu);
    lb_sbx_put(s); /* the table's reference */
    return LB_OK;
}

/* ---- JSON views ---- */

static const char *lb_state_name(lb_sbx_state st)
{
    switch (st) {
    case LB_SBX_STARTING: return "starting";
    case LB_SBX_RUNNING: return "running";
    case LB_SBX_STOPPED: return "stopped";
    default: return "error";
    }
}

static cJSON *lb_sbx_json_locked(lb_sbx *s, int with_spec)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    char created[40], expires[40];
    lb_iso_time(s->created_ms, created, sizeof created);
    lb_iso_time(s->expires_ms, expires, sizeof expires);
    int ok = cJSON_AddStringToObject(o, "id", s->id) && cJSON_AddStringToObject(o, "status", lb_state_name(s->state)) &&
             cJSON_AddStringToObject(o, "created_at", created) && cJSON_AddStringToObject(o, "expires_at", expires) &&
             cJSON_AddNumberToObject(o, "ttl_s", s->ttl_s);
    if (ok && s->state == LB_SBX_ERROR)
        ok = cJSON_AddStringToObject(o, "error", s->error) != NULL;
    if (ok) /* follow-ups */
        ok = cJSON_AddBoolToObject(o, "paused", s->paused) != NULL;
    if (ok) {
        cJSON *m = s->metadata ? cJSON_Duplicate(s->metadata, 1) : cJSON_CreateObject();
        ok = m && cJSON_AddItemToObject(o, "metadata", m);
        if (!ok)
            cJSON_Delete(m);
    }
    if (ok && with_spec && s->spec) {
        cJSON *sp = cJSON_Duplicate(s->spec, 1);
        ok = sp && cJSON_AddItemToObject(o, "spec", sp);
        if (!ok)
            cJSON_Delete(sp);
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void lb_sbx_set_expiry(lb_sbx *s, int ttl_s)
{
    pthread_mutex_lock(&lb_reg_mu);
    s->expires_ms = lb_now_ms() + (int64_t)ttl_s * 1000;
    s->deadline_mono = lb_mono_ms() + (int64_t)ttl_s * 1000;
    s->ttl_s = (int)((s->expires_ms - s->created_ms + 999) / 1000);
    pthread_mutex_unlock(&lb_reg_mu);
    lb_sbx_row_update(s);
}

cJSON *lb_sbx_json(lb_sbx *s)
{
    pthread_mutex_lock(&lb_reg_mu);
    cJSON *o = lb_sbx_json_locked(s, 1);
    pthread_mutex_unlock(&lb_reg_mu);
    return o;
}

cJSON *lb_sbx_list_json(void)
{
    return lb_sbx_list_json_of(NULL);
}

cJSON *lb_sbx_list_json_of(const char *owner)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "sandboxes") : NULL;
    if (!arr) {
        cJSON_Delete(o);
        return NULL;
    }
    int64_t now = lb_mono_ms();
    int count = 0;
    pthread_mutex_lock(&lb_reg_mu);
    for (int i = 0; i < lb_tab_n; i++) {
        lb_sbx *s = lb_tab[i];
        if (s->state != LB_SBX_STARTING && now >= s->deadline_mono)
            continue; /* expired: about to be reaped */
        if (owner && owner[0] && strcmp(s->owner, owner))
            continue; /* another user's: as if absent */
        cJSON *it = lb_sbx_json_locked(s, 0);
        if (!it || !cJSON_AddItemToArray(arr, it)) {
            cJSON_Delete(it);
            pthread_mutex_unlock(&lb_reg_mu);
            cJSON_Delete(o);
            return NULL;
        }
        count++;
    }
    pthread_mutex_unlock(&lb_reg_mu);
    cJSON_AddNumberToObject(o, "count", count);
    cJSON_AddNumberToObject(o, "max", lb_tab_cap);
    return o;
}

int lb_sbx_running_ids(char (*ids)[33], int max)
{
    int n = 0;
    pthread_mutex_lock(&lb_reg_mu);
    for (int i = 0; i < lb_tab_n && n < max; i++)
        if (lb_tab[i]->state == LB_SBX_RUNNING && lb_tab[i]->sbx_id[0])
            memcpy(ids[n++], lb_tab[i]->sbx_id, 33);
    pthread_mutex_unlock(&lb_reg_mu);
    return n;
}

int lb_sbx_running_api_ids(char (*ids)[LB_NODE_ID_MAX + 1], int max)
{
    int n = 0;
    pthread_mutex_lock(&lb_reg_mu);
    for (int i = 0; i < lb_tab_n && n < max; i++)
        if (lb_tab[i]->state == LB_SBX_RUNNING)
            memcpy(ids[n++], lb_tab[i]->id, sizeof ids[0]);
    pthread_mutex_unlock(&lb_reg_mu);
    return n;
}

void lb_sbx_times(lb_sbx *s, int64_t *created_ms, int64_t *expires_ms)
{
    pthread_mutex_lock(&lb_reg_mu);
    *created_ms = s->created_ms;
    *expires_ms = s->expires_ms;
    pthread_mutex_unlock(&lb_reg_mu);
}

int lb_sbx_count(void)
{
    pthread_mutex_lock(&lb_reg_mu);
    int n = lb_tab_n;
    pthread_mutex_unlock(&lb_reg_mu);
    return n;
}
