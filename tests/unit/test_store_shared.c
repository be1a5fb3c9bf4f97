/* Unit tests for what webs share through the store (several nodes, stateless
 * webs; server/store/store_shared.h): secrets made once by whichever web
 * comes first, rotated with one generation of overlap, and per-user start
 * windows that two connections (two webs) count together, also when they
 * race. Run on SQLite here and on PostgreSQL by test_store_pg.py. */
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "store/store.h"
#include "store/store_shared.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char db_path[4096];

static lb_store *open_at(void)
{
    lb_store *s = NULL;
    if (lb_store_open(db_path, &s) != LB_OK) {
        lb_store_close(s);
        return NULL;
    }
    return s;
}

static lb_store *open_fresh(const char *name)
{
    tw_fresh(name, db_path, sizeof db_path);
    if (!tw_pg())
        unlink(db_path);
    return open_at();
}

#define KEY_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define KEY_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define KEY_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define KEY_D "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

TEST(the_first_web_makes_a_secret_and_the_second_reads_it)
{
    lb_store *w1 = open_fresh("secret_first"), *w2 = open_at();
    CHECK(w1 && w2);
    char cur[LB_SECRET_MAX], prev[LB_SECRET_MAX];
    int gen = -1;
    /* nothing stored and nothing offered: not found */
    CHECK(lb_store_secret_get(w1, "download", NULL, cur, prev, &gen) == LB_E_NOTFOUND && !cur[0]);
    CHECK(lb_store_secret_get(w1, "download", KEY_A, cur, prev, &gen) == LB_OK);
    CHECK_STR(cur, KEY_A);
    CHECK(!prev[0] && gen == 1);
    /* the second web offers its own and gets the first's */
    CHECK(lb_store_secret_get(w2, "download", KEY_B, cur, prev, &gen) == LB_OK);
    CHECK_STR(cur, KEY_A);
    CHECK(gen == 1);
    /* secrets are separate by name */
    CHECK(lb_store_secret_get(w2, "preview", KEY_B, cur, prev, &gen) == LB_OK);
    CHECK_STR(cur, KEY_B);
    lb_store_close(w1);
    lb_store_close(w2);
}

TEST(bad_names_and_values_are_refused)
{
    lb_store *s = open_fresh("secret_bad");
    CHECK(s != NULL);
    char cur[LB_SECRET_MAX], prev[LB_SECRET_MAX];
    int gen = 0;
    CHECK(lb_store_secret_get(s, "Download", KEY_A, cur, prev, &gen) == LB_E_INVAL);
    CHECK(lb_store_secret_get(s, "", KEY_A, cur, prev, &gen) == LB_E_INVAL);
    CHECK(lb_store_secret_get(s, "download", "abc", cur, prev, &gen) == LB_E_INVAL);
    CHECK(lb_store_secret_get(s, "download", "ABCDEF0123456789ABCDEF0123456789", cur, prev, &gen) == LB_E_INVAL);
    CHECK(lb_store_secret_rotate(s, "download", "not hex at all, not hex at all!!", &gen) == LB_E_INVAL);
    /* a value someone wrote by hand that is not hex is never used */
    CHECK(tw_exec(db_path, "INSERT INTO web_secrets(name, gen, value, created_ms) VALUES('preview', 1, "
                           "'short', 0)") == LB_OK);
    CHECK(lb_store_secret_get(s, "preview", KEY_A, cur, prev, &gen) == LB_E_INVAL && !cur[0]);
    lb_store_close(s);
}

TEST(a_rotation_keeps_one_generation_of_overlap)
{
    lb_store *w1 = open_fresh("secret_rotate"), *w2 = open_at();
    CHECK(w1 && w2);
    char cur[LB_SECRET_MAX], prev[LB_SECRET_MAX];
    int gen = 0;
    CHECK(lb_store_secret_get(w1, "preview", KEY_A, cur, prev, &gen) == LB_OK);
    CHECK(lb_store_secret_rotate(w2, "preview", KEY_B, &gen) == LB_OK && gen == 2);
    CHECK(lb_store_secret_get(w1, "preview", KEY_D, cur, prev, &gen) == LB_OK && gen == 2);
    CHECK_STR(cur, KEY_B);
    CHECK_STR(prev, KEY_A);
    CHECK(lb_store_secret_rotate(w1, "preview", KEY_C, &gen) == LB_OK && gen == 3);
    CHECK(lb_store_secret_get(w2, "preview", NULL, cur, prev, &gen) == LB_OK && gen == 3);
    CHECK_STR(cur, KEY_C);
    CHECK_STR(prev, KEY_B);
    /* the oldest is gone from the table, not only from the answer */
    lb_db *db = NULL;
    CHECK(lb_db_open(db_path, &db) == LB_OK);
    lb_db_stmt *st = NULL;
    CHECK(lb_db_prepare(db, "SELECT COUNT(*) FROM web_secrets WHERE name = 'preview'", 0, &st) == LB_OK);
    CHECK(lb_db_step(st) == LB_DB_ROW && lb_db_col_int(st, 0) == 2);
    lb_db_finalize(st);
    lb_db_close(db);
    lb_store_close(w1);
    lb_store_close(w2);
}

TEST(two_webs_count_one_users_starts_together)
{
    lb_store *w1 = open_fresh("rate_two"), *w2 = open_at();
    CHECK(w1 && w2);
    int slot, n = 0;
    int64_t old, oldest, now = 1000000;
    /* a limit of 3 a minute: web 1 takes two, web 2 one, then both refuse */
    CHECK(lb_store_rate_take(w1, "ann", 3, now, 60000, &slot, &old, &oldest) == LB_OK && old == 0);
    CHECK(lb_store_rate_take(w2, "ann", 3, now + 1, 60000, &slot, &old, &oldest) == LB_OK);
    CHECK(lb_store_rate_take(w1, "ann", 3, now + 2, 60000, &slot, &old, &oldest) == LB_OK);
    CHECK(lb_store_rate_take(w2, "ann", 3, now + 3, 60000, &slot, &old, &oldest) == LB_E_BUSY);
    CHECK(oldest == now); /* the next start: a minute after the first */
    CHECK(lb_store_rate_take(w1, "ann", 3, now + 4, 60000, &slot, &old, &oldest) == LB_E_BUSY);
    /* another user is not counted with ann */
    CHECK(lb_store_rate_take(w2, "bob", 3, now + 5, 60000, &slot, &old, &oldest) == LB_OK);
    /* a refund on web 2 frees a start web 1 took */
    int s2;
    int64_t o2, oldest2;
    CHECK(lb_store_rate_take(w1, "cy", 1, now, 60000, &s2, &o2, &oldest2) == LB_OK);
    CHECK(lb_store_rate_take(w2, "cy", 1, now + 1, 60000, &slot, &old, &oldest) == LB_E_BUSY);
    CHECK(lb_store_rate_refund(w2, "cy", s2, now, o2) == LB_OK);
    CHECK(lb_store_rate_take(w2, "cy", 1, now + 2, 60000, &slot, &old, &oldest) == LB_OK);
    /* a refund of a slot taken again meanwhile changes nothing */
    CHECK(lb_store_rate_refund(w1, "cy", s2, now, o2) == LB_OK);
    CHECK(lb_store_rate_take(w1, "cy", 1, now + 3, 60000, &slot, &old, &oldest) == LB_E_BUSY);
    /* a minute later ann's first slot is free again, on either web */
    CHECK(lb_store_rate_take(w2, "ann", 3, now + 60000, 60000, &slot, &old, &oldest) == LB_OK && old == now);
    for (int i = 0; i < 5; i++)
        n += lb_store_rate_take(w1, "ann", 3, now + 60000, 60000, &slot, &old, &oldest) == LB_OK;
    CHECK(n == 0);
    lb_store_close(w1);
    lb_store_close(w2);
}

#define RACERS 4
#define TRIES 10

typedef struct racer {
    int taken, errors;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    lb_store *s = open_at();
    if (!s) {
        r->errors++;
        return NULL;
    }
    for (int i = 0; i < TRIES; i++) {
        int slot;
        int64_t old, oldest;
        int rc = lb_store_rate_take(s, "dee", 7, 5000000, 60000, &slot, &old, &oldest);
        if (rc == LB_OK)
            r->taken++;
        else if (rc != LB_E_BUSY && rc != LB_E_TIMEOUT)
            r->errors++;
    }
    lb_store_close(s);
    return NULL;
}

TEST(webs_racing_for_starts_take_no_more_than_the_limit)
{
    lb_store *s = open_fresh("rate_race");
    CHECK(s != NULL);
    lb_store_close(s);
    pthread_t t[RACERS];
    racer r[RACERS];
    memset(r, 0, sizeof r);
    for (int i = 0; i < RACERS; i++)
        CHECK(pthread_create(&t[i], NULL, race, &r[i]) == 0);
    int taken = 0, errors = 0;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(t[i], NULL);
        taken += r[i].taken;
        errors += r[i].errors;
    }
    CHECK(errors == 0);
    /* 40 tries at once, 7 a minute: exactly 7 (a try that lost every
     * race is a refusal, never an eighth start) */
    CHECK(taken == 7);
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(the_first_web_makes_a_secret_and_the_second_reads_it);
    RUN(bad_names_and_values_are_refused);
    RUN(a_rotation_keeps_one_generation_of_overlap);
    RUN(two_webs_count_one_users_starts_together);
    RUN(webs_racing_for_starts_take_no_more_than_the_limit);
    if (tw_done())
        return 1;
    return testlib_done();
}
