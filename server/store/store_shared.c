/* What webs behind a balancer share through the store; the contract is
 * store_shared.h.
 *
 * The two tables are part of schema v10 (store_queue.c).
 *
 * Every write here is one statement outside a transaction that is right
 * whichever web runs it first: insert-if-absent for a secret's first
 * generation (ON CONFLICT DO NOTHING, then read what won), a primary key
 * for a rotation, and compare-and-swap on a slot's time for a start. No
 * lock is held across a round trip, so a web that dies mid-way leaves
 * nothing locked. */
#include "store/store_shared.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store_priv.h"
#include "store/store_sql.h"

#include <stdio.h>
#include <string.h>

/* name: [a-z_], 1..31; a value: lowercase hex, 32..127 */
static int lb_secret_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n >= 1 && n < 32 && strspn(name, "abcdefghijklmnopqrstuvwxyz_") == n;
}

static int lb_secret_value_ok(const char *v)
{
    size_t n = v ? strlen(v) : 0;
    return n >= 32 && n < LB_SECRET_MAX && strspn(v, "0123456789abcdef") == n;
}

static int lb_secret_read(lb_store *s, const char *name, char cur[LB_SECRET_MAX], char prev[LB_SECRET_MAX],
                          int *gen)
{
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "SELECT gen, value FROM web_secrets WHERE name = ?1 ORDER BY gen DESC LIMIT 2", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, name);
    int n = 0, src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        char *out = n == 0 ? cur : prev;
        if (n == 0)
            *gen = lb_db_col_int(st, 0);
        lb_sql_col_copy(st, 1, out, LB_SECRET_MAX);
        /* a row someone wrote by hand is refused rather than used */
        if (!lb_secret_value_ok(out)) {
            lb_sql_done(s, st);
            cur[0] = prev[0] = '\0';
            return LB_E_INVAL;
        }
        n++;
    }
    lb_sql_done(s, st);
    if (src != LB_DB_DONE)
        return lb_store_sql_err(s, src, "read a shared secret");
    return n ? LB_OK : LB_E_NOTFOUND;
}

/* Runs sql, an insert of (?1 name, ?2 value, ?3 now); none_rc when it
 * inserted nothing. */
static int lb_secret_insert(lb_store *s, const char *sql, const char *name, const char *value, const char *what,
                            int none_rc)
{
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, sql, &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, name);
    lb_sql_bind_text(st, 2, value);
    lb_db_bind_int64(st, 3, lb_now_ms());
    return lb_sql_run_write(s, st, what, none_rc);
}

int lb_store_secret_get(lb_store *s, const char *name, const char *candidate, char cur[LB_SECRET_MAX],
                        char prev[LB_SECRET_MAX], int *gen)
{
    cur[0] = prev[0] = '\0';
    *gen = 0;
    if (!s || !lb_secret_name_ok(name) || (candidate && !lb_secret_value_ok(candidate)))
        return LB_E_INVAL;
    int rc = lb_secret_read(s, name, cur, prev, gen);
    if (rc != LB_E_NOTFOUND || !candidate)
        return rc;
    rc = lb_secret_insert(s,
                          "INSERT INTO web_secrets(name, gen, value, created_ms)"
                          " SELECT ?1, 1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM web_secrets WHERE name = ?1)"
                          " ON CONFLICT DO NOTHING",
                          name, candidate, "store a shared secret", LB_OK);
    if (rc)
        return rc;
    /* ours or the one that won */
    return lb_secret_read(s, name, cur, prev, gen);
}

int lb_store_secret_rotate(lb_store *s, const char *name, const char *fresh, int *gen)
{
    *gen = 0;
    if (!s || !lb_secret_name_ok(name) || !lb_secret_value_ok(fresh))
        return LB_E_INVAL;
    int rc = lb_secret_insert(s,
                              "INSERT INTO web_secrets(name, gen, value, created_ms)"
                              " SELECT ?1, COALESCE(MAX(gen), 0) + 1, ?2, ?3 FROM web_secrets WHERE name = ?1",
                              name, fresh, "rotate a shared secret", LB_E_INTERNAL);
    if (rc)
        return rc; /* LB_E_EXISTS: a rotation at the same moment took the generation */
    char cur[LB_SECRET_MAX], prev[LB_SECRET_MAX];
    rc = lb_secret_read(s, name, cur, prev, gen);
    if (rc)
        return rc;
    lb_db_stmt *st = NULL;
    rc = lb_sql_prep(s, "DELETE FROM web_secrets WHERE name = ?1 AND gen < ?2", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, name);
    lb_db_bind_int(st, 2, *gen - 1);
    return lb_sql_run_write(s, st, "forget old generations of a shared secret", LB_OK);
}

#define LB_RATE_TRIES 16 /* compare-and-swaps lost to other webs before giving up */

/* The slot's time from `from` to `to`, only if it still is `from` (the
 * compare-and-swap every start and refund is): LB_OK, LB_E_NOTFOUND when
 * another web changed it first, or the store's status. */
static int lb_rate_cas(lb_store *s, const char *user, int slot, int64_t from, int64_t to, const char *what)
{
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, "UPDATE rate_slots SET at_ms = ?4 WHERE owner = ?1 AND slot = ?2 AND at_ms = ?3", &st);
    if (rc)
        return rc;
    lb_sql_bind_text(st, 1, user);
    lb_db_bind_int(st, 2, slot);
    lb_db_bind_int64(st, 3, from);
    lb_db_bind_int64(st, 4, to);
    return lb_sql_run_write(s, st, what, LB_E_NOTFOUND);
}

/* One try: reads the slots and takes the first free one with a single
 * conditional write. 1 taken, 0 lost a race (read again), -1 none free
 * or the store failed (*err set). */
static int lb_rate_try(lb_store *s, const char *user, int limit, int64_t now_ms, int64_t window_ms, int *slot,
                       int64_t *old, int64_t *oldest, int *err)
{
    lb_db_stmt *st = NULL;
    *err = lb_sql_prep(s, "SELECT slot, at_ms FROM rate_slots WHERE owner = ?1 AND slot < ?2 ORDER BY slot", &st);
    if (*err)
        return -1;
    lb_sql_bind_text(st, 1, user);
    lb_db_bind_int(st, 2, limit);
    int want = -1, expect = 0, missing = -1, src;
    int64_t want_at = 0;
    *oldest = INT64_MAX;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        int sl = lb_db_col_int(st, 0);
        int64_t at = lb_db_col_int64(st, 1);
        if (missing < 0 && sl != expect)
            missing = expect; /* a slot never used yet: no row */
        expect = sl + 1;
        if (want < 0 && now_ms - at >= window_ms) {
            want = sl;
            want_at = at;
        }
        if (at < *oldest)
            *oldest = at;
    }
    lb_sql_done(s, st);
    if (src != LB_DB_DONE) {
        *err = lb_store_sql_err(s, src, "read a start window");
        return -1;
    }
    if (missing < 0 && expect < limit)
        missing = expect;
    if (want < 0 && missing >= 0) {
        /* the slot's row first, free (time 0; another web may make it at
         * the same moment), then taken like any other */
        *err = lb_sql_prep(s, "INSERT INTO rate_slots(owner, slot, at_ms) VALUES(?1, ?2, 0) ON CONFLICT DO NOTHING",
                           &st);
        if (*err)
            return -1;
        lb_sql_bind_text(st, 1, user);
        lb_db_bind_int(st, 2, missing);
        if ((*err = lb_sql_run_write(s, st, "make a start slot", LB_OK)))
            return -1;
        want = missing;
        want_at = 0;
    }
    if (want < 0)
        return -1;
    *err = lb_rate_cas(s, user, want, want_at, now_ms, "take a start");
    if (*err == LB_E_NOTFOUND) {
        *err = LB_OK;
        return 0;
    }
    *slot = want;
    *old = want_at;
    return *err ? -1 : 1;
}

int lb_store_rate_take(lb_store *s, const char *user, int limit, int64_t now_ms, int64_t window_ms, int *slot,
                       int64_t *old, int64_t *oldest)
{
    *slot = -1;
    *old = 0;
    *oldest = now_ms;
    if (!s || !user || !*user || limit <= 0 || window_ms <= 0)
        return LB_E_INVAL;
    for (int i = 0; i < LB_RATE_TRIES; i++) {
        int err = LB_OK;
        int got = lb_rate_try(s, user, limit, now_ms, window_ms, slot, old, oldest, &err);
        if (err)
            return err;
        if (got == 1)
            return LB_OK;
        if (got < 0)
            return LB_E_BUSY;
    }
    /* every try lost to another web: as good as full right now */
    *oldest = now_ms;
    return LB_E_BUSY;
}

int lb_store_rate_refund(lb_store *s, const char *user, int slot, int64_t at, int64_t old)
{
    if (!s || !user || slot < 0)
        return LB_E_INVAL;
    int rc = lb_rate_cas(s, user, slot, at, old, "give a start back");
    return rc == LB_E_NOTFOUND ? LB_OK : rc; /* a later start took it: nothing to give back */
}
