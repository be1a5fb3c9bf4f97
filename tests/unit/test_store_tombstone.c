/* Unit tests of the tombstones of deleted tasks (several nodes;
 * server/store/store_tombstone.h): a deleted task leaves one, in the same
 * statement, whichever way its row goes; they are read from a time on and
 * trimmed by age. Run on SQLite here and on PostgreSQL by test_store_pg.py. */
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_tombstone.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char db_path[4096];

static lb_store *open_fresh(const char *name) { return tw_store_fresh(name, db_path, sizeof db_path); }

static int insert_task(lb_store *s, char id[33])
{
    if (lb_random_hex(id, 33, 16) != LB_OK)
        return LB_E_INTERNAL;
    lb_task_new t = {.id = id, .prompt = "p", .model = "m", .max_turns = 1, .token_budget = 10, .timeout_s = 60};
    return lb_store_task_insert(s, &t);
}

typedef struct seen {
    int n;
    char ids[8][33];
    int64_t ms[8];
} seen;

static int collect(void *arg, const char *id, int64_t ms)
{
    seen *v = arg;
    if (v->n < 8) {
        snprintf(v->ids[v->n], 33, "%s", id);
        v->ms[v->n] = ms;
    }
    v->n++;
    return 0;
}

TEST(a_deleted_task_leaves_a_tombstone)
{
    lb_store *s = open_fresh("tomb");
    CHECK(s != NULL);
    char a[33], b[33];
    CHECK(insert_task(s, a) == LB_OK && insert_task(s, b) == LB_OK);
    seen v = {0};
    int64_t newest = 0;
    CHECK(lb_store_tombstones_since(s, 0, 100, collect, &v, &newest) == LB_OK && v.n == 0 && newest == 0);
    int64_t before = lb_now_ms();
    CHECK(lb_store_task_delete(s, a) == LB_OK);
    CHECK(lb_store_tombstones_since(s, 0, 100, collect, &v, &newest) == LB_OK);
    CHECK(v.n == 1 && !strcmp(v.ids[0], a) && newest == v.ms[0]);
    /* the database's clock: this host's, here */
    CHECK(v.ms[0] >= before - 5000 && v.ms[0] <= lb_now_ms() + 5000);
    /* from after it: none; the one still there has none */
    seen w = {0};
    int64_t n2 = newest;
    CHECK(lb_store_tombstones_since(s, newest + 1, 100, collect, &w, &n2) == LB_OK && w.n == 0 && n2 == newest);
    CHECK(lb_store_task_delete(s, b) == LB_OK);
    seen x = {0};
    CHECK(lb_store_tombstones_since(s, 0, 1, collect, &x, &n2) == LB_OK && x.n == 1); /* the limit */
    seen y = {0};
    CHECK(lb_store_tombstones_since(s, 0, 100, collect, &y, &n2) == LB_OK && y.n == 2);
    lb_store_close(s);
}

TEST(trimmed_by_age)
{
    lb_store *s = open_fresh("trim");
    CHECK(s != NULL);
    char a[33], b[33];
    CHECK(insert_task(s, a) == LB_OK && insert_task(s, b) == LB_OK);
    CHECK(lb_store_task_delete(s, a) == LB_OK && lb_store_task_delete(s, b) == LB_OK);
    size_t removed = 9;
    CHECK(lb_store_tombstones_trim(s, 3600, &removed) == LB_OK && removed == 0);
    char sql[200];
    snprintf(sql, sizeof sql, "UPDATE task_tombstones SET deleted_ms = deleted_ms - 7200000 WHERE id = '%s'", a);
    CHECK(tw_exec(db_path, sql) == LB_OK);
    CHECK(lb_store_tombstones_trim(s, 3600, &removed) == LB_OK && removed == 1);
    seen v = {0};
    int64_t newest = 0;
    CHECK(lb_store_tombstones_since(s, 0, 100, collect, &v, &newest) == LB_OK && v.n == 1 && !strcmp(v.ids[0], b));
    lb_store_close(s);
}

TEST(invalid_arguments)
{
    lb_store *s = open_fresh("tinval");
    CHECK(s != NULL);
    seen v = {0};
    int64_t newest = 0;
    size_t removed = 0;
    CHECK(lb_store_tombstones_since(s, 0, 0, collect, &v, &newest) == LB_E_INVAL);
    CHECK(lb_store_tombstones_since(s, 0, 100, NULL, &v, &newest) == LB_E_INVAL);
    CHECK(lb_store_tombstones_since(NULL, 0, 100, collect, &v, &newest) == LB_E_INVAL);
    CHECK(lb_store_tombstones_trim(s, -1, &removed) == LB_E_INVAL);
    lb_store_close(s);
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(a_deleted_task_leaves_a_tombstone);
    RUN(trimmed_by_age);
    RUN(invalid_arguments);
    return testlib_done();
}
