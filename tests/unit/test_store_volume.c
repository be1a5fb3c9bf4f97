/* Unit tests of the store's rows of E2B's volumes (several nodes, schema
 * v17; server/store/store_volume.h): written, replaced by id, deleted;
 * one name per owner across every node (the second is LB_E_EXISTS, another
 * owner may take it); listed by owner and by name, oldest first; rows that
 * do not name their node refused; a v16 store migrates to an empty table.
 * Run on SQLite here and on PostgreSQL by test_store_pg.py. */
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "store/store.h"
#include "store/store_volume.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char db_path[4096];

static lb_store *open_fresh(const char *name) { return tw_store_fresh(name, db_path, sizeof db_path); }

typedef struct seen {
    int n;
    char ids[8][100], owners[8][64], names[8][65], nodes[8][64];
} seen;

static int collect(void *arg, const lb_vol_row *row)
{
    seen *v = arg;
    if (v->n < 8) {
        snprintf(v->ids[v->n], sizeof v->ids[0], "%s", row->id);
        snprintf(v->owners[v->n], sizeof v->owners[0], "%s", row->owner);
        snprintf(v->names[v->n], sizeof v->names[0], "%s", row->name);
        snprintf(v->nodes[v->n], sizeof v->nodes[0], "%s", row->node);
    }
    v->n++;
    return 0;
}

static int list(lb_store *s, const char *owner, const char *name, seen *v)
{
    memset(v, 0, sizeof *v);
    return lb_store_vol_list(s, owner, name, collect, v);
}

#define A "n1.0123456789abcdef0123456789abcdef"
#define B "n2.fedcba9876543210fedcba9876543210"
#define C "n2.00000000000000000000000000000001"

TEST(rows_are_written_listed_and_deleted)
{
    lb_store *s = open_fresh("vol");
    CHECK(s != NULL);
    lb_vol_row a = {A, "alice", "data", "n1", 20}, b = {B, "alice", "cache", "n2", 10}, c = {C, "", "data", "n2", 30};
    CHECK(lb_store_vol_put(s, &a) == LB_OK && lb_store_vol_put(s, &b) == LB_OK && lb_store_vol_put(s, &c) == LB_OK);
    seen v;
    /* a key's own of every node, oldest first */
    CHECK(list(s, "alice", NULL, &v) == LB_OK && v.n == 2);
    CHECK(!strcmp(v.ids[0], B) && !strcmp(v.nodes[0], "n2") && !strcmp(v.names[0], "cache"));
    CHECK(!strcmp(v.ids[1], A) && !strcmp(v.nodes[1], "n1") && !strcmp(v.owners[1], "alice"));
    /* the shared token's own ("") and every owner's (NULL) */
    CHECK(list(s, "", NULL, &v) == LB_OK && v.n == 1 && !strcmp(v.ids[0], C));
    CHECK(list(s, NULL, NULL, &v) == LB_OK && v.n == 3);
    /* by name: that owner's one */
    CHECK(list(s, "alice", "data", &v) == LB_OK && v.n == 1 && !strcmp(v.ids[0], A));
    CHECK(list(s, NULL, "data", &v) == LB_OK && v.n == 2);
    CHECK(list(s, "bob", "data", &v) == LB_OK && v.n == 0);
    /* a put of the same id replaces it (a web mending its rows) */
    CHECK(lb_store_vol_put(s, &a) == LB_OK && list(s, "alice", NULL, &v) == LB_OK && v.n == 2);
    CHECK(lb_store_vol_delete(s, A) == LB_OK && lb_store_vol_delete(s, A) == LB_OK);
    CHECK(list(s, "alice", NULL, &v) == LB_OK && v.n == 1 && !strcmp(v.ids[0], B));
    lb_store_close(s);
}

TEST(a_name_is_one_per_owner_across_nodes)
{
    lb_store *s = open_fresh("volname");
    CHECK(s != NULL);
    lb_vol_row a = {A, "alice", "data", "n1", 1}, b = {B, "alice", "data", "n2", 2}, c = {B, "bob", "data", "n2", 2};
    CHECK(lb_store_vol_put(s, &a) == LB_OK);
    CHECK(lb_store_vol_put(s, &b) == LB_E_EXISTS); /* alice's "data" is on n1 */
    CHECK(lb_store_vol_put(s, &c) == LB_OK);       /* bob's may be called so */
    seen v;
    CHECK(list(s, NULL, "data", &v) == LB_OK && v.n == 2);
    /* deleted, the name is free again */
    CHECK(lb_store_vol_delete(s, A) == LB_OK);
    b.id = "n2.11111111111111111111111111111111";
    CHECK(lb_store_vol_put(s, &b) == LB_OK);
    lb_store_close(s);
}

TEST(invalid_rows_are_refused)
{
    lb_store *s = open_fresh("volbad");
    CHECK(s != NULL);
    char longname[80];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    lb_vol_row bad[] = {
        {"0123456789abcdef0123456789abcdef", "alice", "data", "n1", 1}, /* no node in the id */
        {A, "alice", "data", "n2", 1},                                   /* another node than its id's */
        {"N1.0123456789abcdef0123456789abcdef", "alice", "data", "N1", 1},
        {A, longname, "data", "n1", 1},
        {A, "alice", longname, "n1", 1},
        {A, "alice", "", "n1", 1},
        {A, NULL, "data", "n1", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(lb_store_vol_put(s, &bad[i]) == LB_E_INVAL);
    CHECK(lb_store_vol_delete(s, "n1.xyz") == LB_E_INVAL);
    CHECK(lb_store_vol_list(s, longname, NULL, collect, NULL) == LB_E_INVAL);
    seen v;
    CHECK(list(s, NULL, NULL, &v) == LB_OK && v.n == 0);
    lb_store_close(s);
}

/* a v16 store (before volumes had rows) migrates to v17 with the table */
TEST(v16_store_migrates)
{
    lb_store *s = open_fresh("volv16");
    CHECK(s != NULL);
    lb_store_close(s);
    CHECK(tw_exec(db_path, "DROP TABLE e2b_volumes; UPDATE meta SET value = '16' WHERE key = 'schema_version';") ==
          LB_OK);
    s = NULL;
    CHECK(lb_store_open(db_path, &s) == LB_OK);
    lb_vol_row a = {A, "alice", "data", "n1", 1};
    seen v;
    CHECK(s && lb_store_vol_put(s, &a) == LB_OK && list(s, "alice", NULL, &v) == LB_OK && v.n == 1);
    lb_store_close(s);
    /* the step runs again over a table that is there (a store taken back
     * to an older version by a test, without undoing v17) */
    CHECK(tw_exec(db_path, "UPDATE meta SET value = '16' WHERE key = 'schema_version';") == LB_OK);
    s = NULL;
    CHECK(lb_store_open(db_path, &s) == LB_OK);
    CHECK(s && list(s, "alice", NULL, &v) == LB_OK && v.n == 1);
    lb_store_close(s);
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(rows_are_written_listed_and_deleted);
    RUN(a_name_is_one_per_owner_across_nodes);
    RUN(invalid_rows_are_refused);
    RUN(v16_store_migrates);
    return testlib_done();
}
