/* Unit tests for the store's database layer (server/store/db.h): the
 * placeholder rewrite and its caps, the URL shown without its password,
 * the error codes, and on PostgreSQL (LLMBOX_TEST_DB_URL, run by
 * tests/integration/test_store_pg.py) a connection the server dropped:
 * reads and statements the server never ran go again on a new one, a
 * transaction lost with it is reported, never half kept. */
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "store/db.h"
#include "store/db_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char where[4096];

static int to_pg(const char *sql, char *out, size_t outsz, int *n)
{
    char *o = NULL;
    uint64_t used = 0;
    int rc = lb_db_sql_to_pg(sql, &o, n, &used);
    if (rc == LB_OK && *n > 0 && !(used & ((uint64_t)1 << (*n - 1))))
        rc = -1; /* the highest number is always one the text holds */
    snprintf(out, outsz, "%s", o ? o : "");
    free(o);
    return rc;
}

TEST(placeholders_become_numbered_outside_quotes)
{
    char o[256];
    int n = -1;
    CHECK(to_pg("SELECT ?1, ?2 WHERE a = ?1", o, sizeof o, &n) == LB_OK);
    CHECK_STR(o, "SELECT $1, $2 WHERE a = $1");
    CHECK(n == 2);
    CHECK(to_pg("INSERT INTO t VALUES(?, ?, ?)", o, sizeof o, &n) == LB_OK);
    CHECK_STR(o, "INSERT INTO t VALUES($1, $2, $3)");
    CHECK(n == 3);
    CHECK(to_pg("SELECT '?', \"a?b\", 'it''s ?', ?3", o, sizeof o, &n) == LB_OK);
    CHECK_STR(o, "SELECT '?', \"a?b\", 'it''s ?', $3");
    CHECK(n == 3);
    CHECK(to_pg("SELECT 1", o, sizeof o, &n) == LB_OK && n == 0);
    /* a number skipped (?2): the bitmap says which ones are there */
    char *t = NULL;
    uint64_t used = 0;
    CHECK(lb_db_sql_to_pg("SELECT ?1 LIMIT ?3", &t, &n, &used) == LB_OK && n == 3 && used == 5);
    free(t);
}

TEST(placeholders_have_caps)
{
    char o[256];
    int n;
    CHECK(to_pg("SELECT ?0", o, sizeof o, &n) == LB_E_INVAL);
    CHECK(to_pg("SELECT ?65", o, sizeof o, &n) == LB_E_TOOBIG);
    CHECK(to_pg("SELECT ?99999999999999999999", o, sizeof o, &n) == LB_E_TOOBIG);
    CHECK(to_pg("SELECT ?64", o, sizeof o, &n) == LB_OK && n == 64);
    /* 65 bare ones */
    char many[400] = "SELECT ";
    for (int i = 0; i < 65; i++)
        strcat(many, i ? ",?" : "?");
    CHECK(to_pg(many, o, sizeof o, &n) == LB_E_TOOBIG);
    size_t big = LB_DB_SQL_MAX + 1;
    char *huge = malloc(big + 1);
    CHECK(huge != NULL);
    if (huge) {
        memset(huge, ' ', big);
        huge[big] = '\0';
        char *out = NULL;
        uint64_t used;
        CHECK(lb_db_sql_to_pg(huge, &out, &n, &used) == LB_E_TOOBIG && out == NULL);
        free(huge);
    }
}

TEST(the_password_is_never_shown)
{
    char o[512];
    lb_db_where_redact("postgresql://ann:s3cret@db:5432/llmbox?sslmode=require", o, sizeof o);
    CHECK_STR(o, "postgresql://ann:***@db:5432/llmbox?sslmode=require");
    lb_db_where_redact("postgresql://ann@/llmbox?host=/run/pg&password=s3cret&x=1", o, sizeof o);
    CHECK_STR(o, "postgresql://ann@/llmbox?host=/run/pg&password=***&x=1");
    lb_db_where_redact("postgres://ann:p@ss@host/db", o, sizeof o);
    CHECK(strstr(o, "p@ss") == NULL && strstr(o, "ss@host") == NULL);
    CHECK_STR(o, "postgres://ann:***@host/db");
    lb_db_where_redact("/var/lib/llmbox/web/llmbox.db", o, sizeof o);
    CHECK_STR(o, "/var/lib/llmbox/web/llmbox.db");
    char small[12];
    lb_db_where_redact("postgresql://ann:s3cret@db/x", small, sizeof small);
    CHECK(strlen(small) == sizeof small - 1 && strstr(small, "s3c") == NULL);
    CHECK(lb_db_where_is_url("postgresql://x") && lb_db_where_is_url("postgres://x"));
    CHECK(!lb_db_where_is_url("/tmp/postgresql://x") && !lb_db_where_is_url("mysql://x"));
}

static lb_db *fresh(const char *name)
{
    tw_fresh(name, where, sizeof where);
    lb_db *db = NULL;
    if (lb_db_open(where, &db) != LB_OK)
        return NULL;
    if (lb_db_exec(db, "CREATE TABLE p(id TEXT PRIMARY KEY NOT NULL, n BIGINT CHECK(n >= 0));"
                       "CREATE TABLE c(p TEXT NOT NULL REFERENCES p(id), x TEXT)") != LB_OK) {
        lb_db_close(db);
        return NULL;
    }
    return db;
}

static int run(lb_db *db, const char *sql, const char *a, int64_t n)
{
    lb_db_stmt *st = NULL;
    int rc = lb_db_prepare(db, sql, 0, &st);
    if (rc)
        return rc;
    LB_IGNORE(lb_db_bind_text(st, 1, a)); /* a statement without ?1 only fails in step */
    if (lb_db_param_count(st) >= 2)
        LB_IGNORE(lb_db_bind_int64(st, 2, n)); /* as above */
    rc = lb_db_step(st);
    lb_db_finalize(st);
    return rc;
}

static int64_t count(lb_db *db, const char *sql)
{
    lb_db_stmt *st = NULL;
    int64_t v = -1;
    if (lb_db_prepare(db, sql, 0, &st) == LB_OK && lb_db_step(st) == LB_DB_ROW)
        v = lb_db_col_int64(st, 0);
    lb_db_finalize(st);
    return v;
}

TEST(errors_map_to_the_stable_codes)
{
    lb_db *db = fresh("errors");
    CHECK(db != NULL);
    if (!db)
        return;
    CHECK(run(db, "INSERT INTO p(id, n) VALUES(?1, ?2)", "a", 1) == LB_DB_DONE);
    CHECK(lb_db_changes(db) == 1);
    CHECK(run(db, "INSERT INTO p(id, n) VALUES(?1, ?2)", "a", 2) == LB_E_EXISTS);
    CHECK(run(db, "INSERT INTO p(id, n) VALUES(?1, ?2)", "b", -1) == LB_E_INVAL);
    CHECK(run(db, "INSERT INTO c(p, x) VALUES(?1, 'x')", "nobody", 0) == LB_E_NOTFOUND);
    CHECK(strlen(lb_db_errmsg(db)) > 0);
    CHECK(run(db, "UPDATE p SET n = ?2 WHERE id = ?1", "a", 5) == LB_DB_DONE && lb_db_changes(db) == 1);
    CHECK(run(db, "UPDATE p SET n = ?2 WHERE id = ?1", "zz", 5) == LB_DB_DONE && lb_db_changes(db) == 0);
    lb_db_stmt *st = NULL;
    /* numbers a statement skips (?2, ?3) are fine on both engines */
    CHECK(lb_db_prepare(db, "SELECT id FROM p WHERE id = ?1 LIMIT ?4", 0, &st) == LB_OK);
    CHECK(st && lb_db_bind_text(st, 1, "a") == LB_OK && lb_db_bind_int64(st, 4, 5) == LB_OK);
    CHECK(st && lb_db_step(st) == LB_DB_ROW);
    lb_db_finalize(st);
    st = NULL;
    CHECK(lb_db_prepare(db, "SELECT id, n, NULL FROM p WHERE id = ?1", 0, &st) == LB_OK);
    CHECK(st && lb_db_bind_text(st, 2, "x") == LB_E_INVAL); /* no ?2 */
    CHECK(st && lb_db_bind_text(st, 1, "a") == LB_OK);
    CHECK(st && lb_db_step(st) == LB_DB_ROW);
    CHECK(st && lb_db_col_int64(st, 1) == 5 && lb_db_col_is_null(st, 2) && !lb_db_col_is_null(st, 0));
    CHECK_STR(st ? lb_db_col_text(st, 0) : NULL, "a");
    CHECK(st && lb_db_step(st) == LB_DB_DONE);
    /* reset runs it again */
    if (st)
        lb_db_reset(st);
    CHECK(st && lb_db_step(st) == LB_DB_ROW);
    lb_db_finalize(st);
    /* a transaction rolled back keeps nothing */
    CHECK(lb_db_begin(db) == LB_OK && lb_db_in_tx(db));
    CHECK(run(db, "INSERT INTO p(id, n) VALUES(?1, ?2)", "t", 1) == LB_DB_DONE);
    lb_db_rollback(db);
    CHECK(!lb_db_in_tx(db));
    CHECK(count(db, "SELECT COUNT(*) FROM p WHERE id = 't'") == 0);
    CHECK(lb_db_exec(db, "SELECT nonsense FROM nowhere") != LB_OK);
    lb_db_close(db);
}

TEST(a_bad_location_says_why)
{
    lb_db *db = NULL;
    CHECK(lb_db_open("/nonexistent-dir-13/x.db", &db) == LB_E_IO && db == NULL);
    CHECK(lb_db_open("postgresql://ann@/x?host=/nonexistent-dir-13", &db) == LB_E_UNAVAILABLE && db == NULL);
    CHECK(lb_db_open("postgresql://ann@/x?bogus_option=1", &db) == LB_E_INVAL && db == NULL);
    CHECK(lb_db_open("", &db) == LB_E_INVAL);
}

TEST(sqlite_has_no_notifications)
{
    lb_db *db = fresh("nolisten");
    CHECK(db != NULL);
    int woke = -1;
    CHECK(db && lb_db_listen(db, "llmbox_test") == LB_E_INVAL);
    CHECK(db && lb_db_wait_notify(db, 10, &woke) == LB_E_INVAL && woke == 0);
    lb_db_close(db);
}

/* PostgreSQL only: another connection ends this one's server process, as
 * a restart does to every connection */
static int kill_backend(lb_db *db)
{
    int64_t pid = count(db, "SELECT pg_backend_pid()");
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%lld)", (long long)pid);
    int rc = tw_exec(where, sql);
    /* pg_terminate_backend only signals: wait until that process is gone,
     * as after a restart */
    lb_db *other = NULL;
    if (rc == LB_OK && (rc = lb_db_open(where, &other)) == LB_OK) {
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = %lld", (long long)pid);
        for (int i = 0; i < 200 && count(other, sql) != 0; i++) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    lb_db_close(other);
    return rc;
}

TEST(a_dropped_connection_is_made_again)
{
    lb_db *db = fresh("dropped");
    CHECK(db != NULL);
    if (!db)
        return;
    CHECK(run(db, "INSERT INTO p(id, n) VALUES(?1, ?2)", "a", 1) == LB_DB_DONE);
    /* a read: run again on a new connection */
    CHECK(kill_backend(db) == LB_OK);
    CHECK(count(db, "SELECT COUNT(*) FROM p") == 1);
    /* a write the server refused because it was shutting the connection
     * (57P01): it never ran, so it runs once on the new connection */
    CHECK(kill_backend(db) == LB_OK);
    CHECK(run(db, "INSERT INTO p(id, n) VALUES(?1, ?2)", "b", 1) == LB_DB_DONE);
    CHECK(count(db, "SELECT COUNT(*) FROM p WHERE id = 'b'") == 1);
    /* a transaction is lost with its connection: reported, nothing kept */
    CHECK(lb_db_begin(db) == LB_OK);
    CHECK(run(db, "INSERT INTO p(id, n) VALUES(?1, ?2)", "c", 1) == LB_DB_DONE);
    CHECK(kill_backend(db) == LB_OK);
    CHECK(run(db, "INSERT INTO p(id, n) VALUES(?1, ?2)", "d", 1) == LB_E_UNAVAILABLE);
    CHECK(!lb_db_in_tx(db));
    lb_db_rollback(db);
    CHECK(count(db, "SELECT COUNT(*) FROM p WHERE id IN ('c', 'd')") == 0);
    /* and the next one works */
    CHECK(lb_db_begin(db) == LB_OK);
    CHECK(run(db, "INSERT INTO p(id, n) VALUES(?1, ?2)", "e", 1) == LB_DB_DONE);
    CHECK(lb_db_commit(db) == LB_OK);
    CHECK(count(db, "SELECT COUNT(*) FROM p") == 3);
    lb_db_close(db);
}

/* PostgreSQL only: LISTEN, a NOTIFY from another connection wakes the
 * wait at once, none lets it time out; a listener whose connection was
 * ended is made again, listens again and says it woke (what came
 * meanwhile is unknown) */
TEST(a_notification_wakes_a_listener)
{
    lb_db *db = fresh("listen");
    CHECK(db != NULL);
    if (!db)
        return;
    int woke = -1;
    CHECK(lb_db_listen(db, "Bad-Name") == LB_E_INVAL);
    CHECK(lb_db_wait_notify(db, 10, &woke) == LB_E_INVAL && woke == 0);
    CHECK(lb_db_listen(db, "llmbox_test") == LB_OK);
    CHECK(lb_db_wait_notify(db, 50, &woke) == LB_OK && woke == 0);
    CHECK(tw_exec(where, "NOTIFY llmbox_test") == LB_OK);
    CHECK(lb_db_wait_notify(db, 5000, &woke) == LB_OK && woke == 1);
    CHECK(lb_db_wait_notify(db, 50, &woke) == LB_OK && woke == 0);
    /* a notification that came during a statement is not lost */
    CHECK(tw_exec(where, "NOTIFY llmbox_test") == LB_OK);
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    CHECK(count(db, "SELECT 1") == 1);
    CHECK(lb_db_wait_notify(db, 0, &woke) == LB_OK && woke == 1);
    CHECK(kill_backend(db) == LB_OK);
    /* the new connection: a bound on a hang, room for a loaded machine */
    CHECK(lb_db_wait_notify(db, 6000, &woke) == LB_OK && woke == 1);
    CHECK(tw_exec(where, "NOTIFY llmbox_test") == LB_OK);
    CHECK(lb_db_wait_notify(db, 5000, &woke) == LB_OK && woke == 1);
    lb_db_close(db);
}

/* PostgreSQL only: a statement past statement_timeout (30 s by default,
 * 50 ms here) is cancelled and reads as busy (the web's 503), and the
 * connection goes on */
TEST(a_statement_over_its_time_is_busy)
{
    lb_db *db = fresh("timeout");
    CHECK(db != NULL);
    if (!db)
        return;
    CHECK(count(db, "SELECT COUNT(*) FROM pg_settings WHERE name = 'statement_timeout' AND setting = '30000'") == 1);
    CHECK(lb_db_exec(db, "SET statement_timeout = 50") == LB_OK);
    CHECK(lb_db_exec(db, "SELECT pg_sleep(2)") == LB_E_TIMEOUT);
    CHECK(strstr(lb_db_errmsg(db), "statement timeout") != NULL);
    CHECK(count(db, "SELECT 7") == 7);
    lb_db_close(db);
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(placeholders_become_numbered_outside_quotes);
    RUN(placeholders_have_caps);
    RUN(the_password_is_never_shown);
    RUN(errors_map_to_the_stable_codes);
    RUN(a_bad_location_says_why);
    if (tw_pg()) {
        RUN(a_dropped_connection_is_made_again);
        RUN(a_notification_wakes_a_listener);
        RUN(a_statement_over_its_time_is_busy);
    } else {
        RUN(sqlite_has_no_notifications);
    }
    if (tw_done())
        return 1;
    return testlib_done();
}
