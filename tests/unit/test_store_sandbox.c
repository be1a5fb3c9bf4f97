/* Unit tests of the store's rows of the nodes' API sandboxes (several nodes;
 * server/store/store_sandbox.h): written, rewritten only while there,
 * deleted; listed every node's together, oldest first, only while fresh
 * and unexpired; refreshed by node, forgotten by node, swept by age; each
 * row's owner (v16) filters a user's list, and v15 rows migrate as the
 * shared token's. Run
 * on SQLite here and on PostgreSQL by test_store_pg.py. */
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOUR_MS 3600000

static char db_path[4096];

static lb_store *open_fresh(const char *name) { return tw_store_fresh(name, db_path, sizeof db_path); }

typedef struct seen {
    int n;
    char ids[8][100];
    char nodes[8][64];
    int paused[8];
    char info[8][200];
} seen;

static int collect(void *arg, const lb_sbx_row *row)
{
    seen *v = arg;
    if (v->n < 8) {
        snprintf(v->ids[v->n], sizeof v->ids[0], "%s", row->id);
        snprintf(v->nodes[v->n], sizeof v->nodes[0], "%s", row->node);
        snprintf(v->info[v->n], sizeof v->info[0], "%s", row->info);
        v->paused[v->n] = row->paused;
    }
    v->n++;
    return 0;
}

/* every node's fresh ones (within a minute) into v */
static int list_all(lb_store *s, seen *v)
{
    memset(v, 0, sizeof *v);
    return lb_store_sbx_list(s, "", 60000, 100, collect, v);
}

static lb_sbx_row row_of(const char *id, const char *node, int64_t created, const char *info)
{
    return (lb_sbx_row){.id = id, .node = node, .created_ms = created, .expires_ms = lb_now_ms() + HOUR_MS,
                        .paused = 0, .info = info};
}

#define A "n1.0123456789abcdef0123456789abcdef"
#define B "n2.fedcba9876543210fedcba9876543210"
#define C "n1.00000000000000000000000000000001"

TEST(rows_are_written_rewritten_and_deleted)
{
    lb_store *s = open_fresh("sbx");
    CHECK(s != NULL);
    int64_t now = lb_now_ms();
    lb_sbx_row a = row_of(A, "n1", now - 10, "{\"id\":\"" A "\"}"), b = row_of(B, "n2", now - 20, "{\"id\":\"" B "\"}");
    CHECK(lb_store_sbx_put(s, &a) == LB_OK && lb_store_sbx_put(s, &b) == LB_OK);
    seen v;
    /* every node's, the oldest first, each with its node */
    CHECK(list_all(s, &v) == LB_OK && v.n == 2);
    CHECK(!strcmp(v.ids[0], B) && !strcmp(v.nodes[0], "n2") && !strcmp(v.ids[1], A) && !strcmp(v.nodes[1], "n1"));
    CHECK(!strcmp(v.info[1], "{\"id\":\"" A "\"}") && !v.paused[1]);
    /* a rewrite (paused) shows; a put of the same id replaces, never doubles */
    a.paused = 1;
    a.info = "{\"paused\":true}";
    CHECK(lb_store_sbx_update(s, &a) == LB_OK);
    CHECK(lb_store_sbx_put(s, &a) == LB_OK);
    CHECK(list_all(s, &v) == LB_OK && v.n == 2 && v.paused[1] && !strcmp(v.info[1], "{\"paused\":true}"));
    /* deleted: gone at once; a rewrite after it does not bring it back */
    CHECK(lb_store_sbx_delete(s, A) == LB_OK);
    CHECK(lb_store_sbx_update(s, &a) == LB_E_NOTFOUND);
    CHECK(lb_store_sbx_delete(s, A) == LB_OK); /* deleted twice: the same end */
    CHECK(list_all(s, &v) == LB_OK && v.n == 1 && !strcmp(v.ids[0], B));
    lb_store_close(s);
}

TEST(stale_or_expired_rows_are_not_listed_and_are_swept)
{
    lb_store *s = open_fresh("sbxfresh");
    CHECK(s != NULL);
    int64_t now = lb_now_ms();
    lb_sbx_row a = row_of(A, "n1", now - 30, "{}"), b = row_of(B, "n2", now - 20, "{}"),
               c = row_of(C, "n1", now - 10, "{}");
    c.expires_ms = now - 1000; /* past its TTL: the reaper is on its way */
    CHECK(lb_store_sbx_put(s, &a) == LB_OK && lb_store_sbx_put(s, &b) == LB_OK && lb_store_sbx_put(s, &c) == LB_OK);
    seen v;
    CHECK(list_all(s, &v) == LB_OK && v.n == 2 && !strcmp(v.ids[0], A) && !strcmp(v.ids[1], B));
    /* n1's web stops refreshing: its rows leave every list after the bound */
    CHECK(tw_exec(db_path, "UPDATE api_sandboxes SET seen_ms = seen_ms - 120000 WHERE node = 'n1'") == LB_OK);
    CHECK(list_all(s, &v) == LB_OK && v.n == 1 && !strcmp(v.ids[0], B));
    /* the node's own look sees all of its rows, however old or expired */
    memset(&v, 0, sizeof v);
    CHECK(lb_store_sbx_list(s, "n1", 0, 100, collect, &v) == LB_OK && v.n == 2);
    /* a refresh brings them back (the expired one stays out) */
    CHECK(lb_store_sbx_touch(s, "n1") == LB_OK);
    CHECK(list_all(s, &v) == LB_OK && v.n == 2);
    /* the sweep deletes only the stale */
    CHECK(tw_exec(db_path, "UPDATE api_sandboxes SET seen_ms = seen_ms - 120000 WHERE node = 'n2'") == LB_OK);
    size_t removed = 9;
    CHECK(lb_store_sbx_sweep(s, 60000, &removed) == LB_OK && removed == 1);
    memset(&v, 0, sizeof v);
    CHECK(lb_store_sbx_list(s, "n2", 0, 100, collect, &v) == LB_OK && v.n == 0);
    /* a node's rows forgotten together (its web restarted) */
    CHECK(lb_store_sbx_forget_node(s, "n1", &removed) == LB_OK && removed == 2);
    memset(&v, 0, sizeof v);
    CHECK(lb_store_sbx_list(s, "n1", 0, 100, collect, &v) == LB_OK && v.n == 0);
    lb_store_close(s);
}

TEST(invalid_rows_are_refused)
{
    lb_store *s = open_fresh("sbxinval");
    CHECK(s != NULL);
    int64_t now = lb_now_ms();
    lb_sbx_row bad = row_of(A, "n2", now, "{}"); /* the id names another node */
    CHECK(lb_store_sbx_put(s, &bad) == LB_E_INVAL);
    bad = row_of("0123456789abcdef0123456789abcdef", "", now, "{}"); /* no node: a single machine's */
    CHECK(lb_store_sbx_put(s, &bad) == LB_E_INVAL);
    bad = row_of(A, "n1", now, NULL);
    CHECK(lb_store_sbx_put(s, &bad) == LB_E_INVAL);
    char *big = malloc(LB_SBX_ROW_INFO_MAX + 2);
    CHECK(big != NULL);
    if (big) {
        memset(big, 'x', LB_SBX_ROW_INFO_MAX + 1);
        big[LB_SBX_ROW_INFO_MAX + 1] = '\0';
        bad = row_of(A, "n1", now, big);
        CHECK(lb_store_sbx_put(s, &bad) == LB_E_TOOBIG);
        free(big);
    }
    seen v;
    size_t removed = 0;
    CHECK(lb_store_sbx_list(s, "", 60000, 0, collect, &v) == LB_E_INVAL);
    CHECK(lb_store_sbx_list(s, "Bad Node", 0, 10, collect, &v) == LB_E_INVAL);
    CHECK(lb_store_sbx_delete(s, "../x") == LB_E_INVAL);
    CHECK(lb_store_sbx_touch(s, "") == LB_E_INVAL);
    CHECK(lb_store_sbx_sweep(s, 0, &removed) == LB_E_INVAL);
    CHECK(list_all(s, &v) == LB_OK && v.n == 0);
    lb_store_close(s);
}

/* v16: the owner of each row; a user's list has that user's rows of every node only */
TEST(owners_are_recorded_and_filter_the_list)
{
    lb_store *s = open_fresh("sbxowner");
    CHECK(s != NULL);
    int64_t now = lb_now_ms();
    lb_sbx_row a = row_of(A, "n1", now - 30, "{}"), b = row_of(B, "n2", now - 20, "{}"), c = row_of(C, "n1", now - 10, "{}");
    a.owner = "alice";
    b.owner = "alice";
    c.owner = NULL; /* the shared token's */
    CHECK(lb_store_sbx_put(s, &a) == LB_OK && lb_store_sbx_put(s, &b) == LB_OK && lb_store_sbx_put(s, &c) == LB_OK);
    seen v;
    memset(&v, 0, sizeof v);
    CHECK(lb_store_sbx_list_of(s, "", "alice", 60000, 100, collect, &v) == LB_OK && v.n == 2 &&
          !strcmp(v.ids[0], A) && !strcmp(v.ids[1], B)); /* both nodes' */
    memset(&v, 0, sizeof v);
    CHECK(lb_store_sbx_list_of(s, "", "bob", 60000, 100, collect, &v) == LB_OK && v.n == 0);
    memset(&v, 0, sizeof v);
    CHECK(lb_store_sbx_list_of(s, "", "", 60000, 100, collect, &v) == LB_OK && v.n == 1 && !strcmp(v.ids[0], C));
    CHECK(list_all(s, &v) == LB_OK && v.n == 3);
    /* an update (pause, timeout) writes the owner it is given */
    b.owner = "bob";
    CHECK(lb_store_sbx_update(s, &b) == LB_OK);
    memset(&v, 0, sizeof v);
    CHECK(lb_store_sbx_list_of(s, "", "bob", 60000, 100, collect, &v) == LB_OK && v.n == 1 && !strcmp(v.ids[0], B));
    char longname[80];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    a.owner = longname;
    CHECK(lb_store_sbx_put(s, &a) == LB_E_INVAL);
    CHECK(lb_store_sbx_list_of(s, "", longname, 60000, 100, collect, &v) == LB_E_INVAL);
    lb_store_close(s);
}

/* a v15 store's rows (written by a web before owners) are the shared token's after the migration */
TEST(v15_rows_migrate_as_the_shared_tokens)
{
    lb_store *s = open_fresh("sbxv15");
    CHECK(s != NULL);
    lb_store_close(s);
    CHECK(tw_exec(db_path, "DROP INDEX api_sandboxes_owner; ALTER TABLE api_sandboxes DROP COLUMN owner;"
                           "UPDATE meta SET value = '15' WHERE key = 'schema_version';") == LB_OK);
    char ins[400];
    snprintf(ins, sizeof ins, "INSERT INTO api_sandboxes(id, node, created_ms, expires_ms, paused, info, seen_ms)"
                              " VALUES('%s', 'n1', 1, %lld, 0, '{}', %lld)", A, (long long)(lb_now_ms() + HOUR_MS),
             (long long)lb_now_ms());
    CHECK(tw_exec(db_path, ins) == LB_OK);
    s = NULL;
    CHECK(lb_store_open(db_path, &s) == LB_OK);
    seen v;
    memset(&v, 0, sizeof v);
    CHECK(s && lb_store_sbx_list_of(s, "", "", 60000, 100, collect, &v) == LB_OK && v.n == 1 && !strcmp(v.ids[0], A));
    memset(&v, 0, sizeof v);
    CHECK(s && lb_store_sbx_list_of(s, "", "alice", 60000, 100, collect, &v) == LB_OK && v.n == 0);
    lb_store_close(s);
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(rows_are_written_rewritten_and_deleted);
    RUN(stale_or_expired_rows_are_not_listed_and_are_swept);
    RUN(invalid_rows_are_refused);
    RUN(owners_are_recorded_and_filter_the_list);
    RUN(v15_rows_migrate_as_the_shared_tokens);
    return testlib_done();
}
