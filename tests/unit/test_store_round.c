/* Unit tests for the rounds, kept sandboxes and shares of the task store
 * (server/store/store_round.h, schema v9). */
#include "store_down_api_sandboxes.h"
#include "store_down_claims.h"
#include "store_v1.h"
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_round.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char db_path[4096];

static lb_store *open_fresh(const char *name)
{
    tw_fresh(name, db_path, sizeof db_path);
    if (!tw_pg())
        unlink(db_path);
    lb_store *s = NULL;
    if (lb_store_open(db_path, &s) != LB_OK)
        return NULL;
    return s;
}

static int insert_task(lb_store *s, char id[33], const char *owner)
{
    CHECK(lb_random_hex(id, 33, 16) == LB_OK);
    lb_task_new t = {.id = id, .prompt = "plot the trend", .model = "m", .max_turns = 10,
                     .inputs_json = "[{\"path\":\"data.csv\",\"size\":3}]", .owner = owner};
    return lb_store_task_insert(s, &t);
}

/* the data of event seq of task id, parsed (caller frees) */
typedef struct ev_find {
    int64_t seq;
    cJSON *data;
    char type[16];
} ev_find;

static int ev_cb(void *arg, int64_t seq, int64_t ts_ms, const char *type, const char *data_json)
{
    ev_find *f = arg;
    (void)ts_ms;
    if (seq == f->seq) {
        f->data = cJSON_Parse(data_json);
        snprintf(f->type, sizeof f->type, "%s", type);
    }
    return 0;
}

static cJSON *event_data(lb_store *s, const char *id, int64_t seq, char *type)
{
    ev_find f = {.seq = seq};
    CHECK(lb_store_events_after(s, id, 0, 1000, ev_cb, &f) == LB_OK);
    if (type)
        snprintf(type, 16, "%s", f.type);
    return f.data;
}

static int json_round(const cJSON *d)
{
    const cJSON *r = cJSON_GetObjectItem(d, "round");
    return cJSON_IsNumber(r) ? r->valueint : -1;
}

TEST(a_round_begins_only_after_the_task_ended)
{
    lb_store *s = open_fresh("begin");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_task(s, id, NULL) == LB_OK);
    int n = 0;
    lb_round_new m = {.task_id = id, .prompt = "now add a legend", .inputs_json = "[{\"path\":\"b.csv\",\"size\":5}]"};
    /* queued: a round runs */
    CHECK(lb_store_round_begin(s, &m, &n) == LB_E_EXISTS);
    CHECK(lb_store_task_set_running(s, id, 123) == LB_OK);
    CHECK(lb_store_round_begin(s, &m, &n) == LB_E_EXISTS);
    int64_t seq = 0;
    CHECK(lb_store_event_append(s, id, "status", "{\"status\":\"running\"}", &seq) == LB_OK);
    cJSON *d = event_data(s, id, seq, NULL);
    CHECK(json_round(d) == 1);
    cJSON_Delete(d);
    lb_task_usage u = {.turns = 3, .prompt_tokens = 100, .completion_tokens = 10};
    CHECK(lb_store_task_set_usage(s, id, &u) == LB_OK);
    CHECK(lb_store_task_end(s, id, LB_TASK_SUCCEEDED, NULL, "first answer") == LB_OK);

    CHECK(lb_store_round_begin(s, &m, &n) == LB_OK);
    CHECK(n == 2);
    lb_task t;
    CHECK(lb_store_task_load(s, id, &t) == LB_OK);
    CHECK(t.status == LB_TASK_QUEUED);
    CHECK(t.round == 2);
    CHECK(t.answer == NULL && t.finished_ms == -1);
    CHECK_STR(t.prompt, "plot the trend"); /* the task's prompt stays the first */
    CHECK(strstr(t.inputs_json, "data.csv") && strstr(t.inputs_json, "b.csv"));
    lb_task_free(&t);
    /* the round event is round 2's, and so is the next event */
    char type[16];
    d = event_data(s, id, seq + 2, type);
    CHECK_STR(type, "round");
    CHECK(json_round(d) == 2);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(d, "prompt")), "now add a legend");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(d, "inputs")) == 1);
    cJSON_Delete(d);
    CHECK(lb_store_task_set_running(s, id, 124) == LB_OK);
    lb_task_usage u2 = {.turns = 2, .prompt_tokens = 50, .completion_tokens = 5};
    CHECK(lb_store_task_set_usage(s, id, &u2) == LB_OK);
    CHECK(lb_store_task_end(s, id, LB_TASK_FAILED, "the model gave up", NULL) == LB_OK);
    d = event_data(s, id, seq + 3, type);
    CHECK_STR(type, "done");
    CHECK(json_round(d) == 2);
    cJSON_Delete(d);

    /* each round keeps its own; the task sums them */
    lb_round *rv = NULL;
    size_t nr = 0;
    CHECK(lb_store_rounds(s, id, &rv, &nr) == LB_OK);
    CHECK(nr == 2);
    CHECK(rv[0].n == 1 && !strcmp(rv[0].status, "succeeded") && !strcmp(rv[0].answer, "first answer"));
    CHECK(rv[0].turns == 3 && rv[0].prompt_tokens == 100);
    CHECK(rv[1].n == 2 && !strcmp(rv[1].status, "failed") && !strcmp(rv[1].reason, "the model gave up"));
    CHECK(rv[1].turns == 2 && rv[1].answer == NULL);
    CHECK_STR(rv[1].prompt, "now add a legend");
    lb_rounds_free(rv, nr);
    CHECK(lb_store_task_load(s, id, &t) == LB_OK);
    CHECK(t.turns == 5 && t.prompt_tokens == 150 && t.completion_tokens == 15);
    lb_task_free(&t);
    lb_round one;
    CHECK(lb_store_round_get(s, id, 1, &one) == LB_OK && one.n == 1);
    lb_round_free(&one);
    CHECK(lb_store_round_get(s, id, 3, &one) == LB_E_NOTFOUND);
    lb_store_close(s);
}

TEST(a_round_counts_in_the_owners_limit)
{
    lb_store *s = open_fresh("owner");
    CHECK(s != NULL);
    char a[33], b[33];
    CHECK(insert_task(s, a, "ann") == LB_OK);
    CHECK(insert_task(s, b, "ann") == LB_OK);
    CHECK(lb_store_task_end(s, a, LB_TASK_CANCELLED, "cancelled by the user", NULL) == LB_OK);
    lb_round_new m = {.task_id = a, .prompt = "go on", .owner = "ann", .owner_max_active = 1};
    int n = 0;
    /* b is queued: ann is at her limit of one */
    CHECK(lb_store_round_begin(s, &m, &n) == LB_E_BUSY);
    m.owner_max_active = 2;
    CHECK(lb_store_round_begin(s, &m, &n) == LB_OK && n == 2);
    char nid[33] = "0123456789abcdef0123456789abcdef";
    m.task_id = nid;
    CHECK(lb_store_round_begin(s, &m, &n) == LB_E_NOTFOUND);
    lb_store_close(s);
}

TEST(kept_sandboxes_are_capped_across_tasks)
{
    lb_store *s = open_fresh("kept");
    CHECK(s != NULL);
    char a[33], b[33];
    CHECK(insert_task(s, a, NULL) == LB_OK);
    CHECK(insert_task(s, b, NULL) == LB_OK);
    lb_kept k;
    CHECK(lb_store_kept_get(s, a, &k) == LB_E_NOTFOUND);
    CHECK(lb_store_kept_keep(s, a, 1000, 2000, 1) == LB_E_NOTFOUND);
    CHECK(lb_store_kept_set(s, a, "sb-a", "0123456789abcdef0123456789abcdef") == LB_OK);
    CHECK(lb_store_kept_set(s, b, "sb-b", "0123456789abcdef0123456789abcdef") == LB_OK);
    CHECK(lb_store_kept_get(s, a, &k) == LB_OK);
    CHECK_STR(k.sandbox_id, "sb-a");
    CHECK(k.kept_until_ms == -1);
    CHECK(lb_store_kept_keep(s, a, 1000, 2000, 1) == LB_OK);
    /* one is kept: b may not be while a's time runs */
    CHECK(lb_store_kept_keep(s, b, 1500, 2500, 1) == LB_E_BUSY);
    CHECK(lb_store_kept_get(s, b, &k) == LB_OK && k.kept_until_ms == -1);
    /* once a's time has passed, it no longer counts */
    CHECK(lb_store_kept_keep(s, b, 2001, 3000, 1) == LB_OK);
    CHECK(lb_store_kept_keep(s, a, 2001, 3000, 0) == LB_OK); /* 0: no cap */
    CHECK(lb_store_kept_clear(s, a) == LB_OK);
    CHECK(lb_store_kept_clear(s, a) == LB_OK);
    CHECK(lb_store_kept_get(s, a, &k) == LB_E_NOTFOUND);
    /* deleting the task forgets its sandbox */
    CHECK(lb_store_task_delete(s, b) == LB_OK);
    CHECK(lb_store_kept_get(s, b, &k) == LB_E_NOTFOUND);
    lb_store_close(s);
}

TEST(shares_expire_and_go_with_their_task)
{
    lb_store *s = open_fresh("shares");
    CHECK(s != NULL);
    char a[33];
    CHECK(insert_task(s, a, NULL) == LB_OK);
    lb_share sh = {.created_ms = 1000, .expires_ms = 5000};
    snprintf(sh.task_id, sizeof sh.task_id, "%s", a);
    CHECK(lb_random_hex(sh.id, sizeof sh.id, 16) == LB_OK);
    CHECK(lb_store_share_add(s, &sh) == LB_OK);
    lb_share got;
    CHECK(lb_store_share_get(s, sh.id, 4999, &got) == LB_OK);
    CHECK_STR(got.task_id, a);
    CHECK(lb_store_share_get(s, sh.id, 5000, &got) == LB_E_NOTFOUND);
    lb_share *v = NULL;
    size_t n = 0;
    CHECK(lb_store_shares_of(s, a, 2000, &v, &n) == LB_OK && n == 1);
    free(v);
    char other[33] = "0123456789abcdef0123456789abcdef";
    CHECK(lb_store_share_delete(s, other, sh.id) == LB_E_NOTFOUND); /* not that task's */
    CHECK(lb_store_share_delete(s, a, sh.id) == LB_OK);
    CHECK(lb_store_share_get(s, sh.id, 2000, &got) == LB_E_NOTFOUND);
    CHECK(lb_random_hex(sh.id, sizeof sh.id, 16) == LB_OK);
    CHECK(lb_store_share_add(s, &sh) == LB_OK);
    CHECK(lb_store_task_delete(s, a) == LB_OK);
    CHECK(lb_store_share_get(s, sh.id, 2000, &got) == LB_E_NOTFOUND);
    lb_store_close(s);
}

TEST(a_fork_copies_the_conversation_up_to_its_round)
{
    lb_store *s = open_fresh("fork");
    CHECK(s != NULL);
    char src[33], dst[33], dst2[33];
    CHECK(insert_task(s, src, "ann") == LB_OK);
    int64_t seq = 0;
    CHECK(lb_store_event_append(s, src, "status", "{\"status\":\"running\"}", &seq) == LB_OK);
    CHECK(lb_store_task_end(s, src, LB_TASK_SUCCEEDED, NULL, "one") == LB_OK);
    CHECK(lb_store_round_set_state(s, src, "tsrc-r1", 99) == LB_OK);
    lb_round_new m = {.task_id = src, .prompt = "two", .inputs_json = "[{\"path\":\"b.csv\",\"size\":1}]"};
    int n = 0;
    CHECK(lb_store_round_begin(s, &m, &n) == LB_OK && n == 2);
    CHECK(lb_random_hex(dst, sizeof dst, 16) == LB_OK);
    lb_fork f = {.src_id = src, .round = 2, .new_id = dst, .owner = "bob"};
    /* round 2 runs: not yet */
    CHECK(lb_store_task_fork(s, &f) == LB_E_NOTFOUND);
    f.round = 3;
    CHECK(lb_store_task_fork(s, &f) == LB_E_NOTFOUND);
    f.round = 1;
    CHECK(lb_store_task_fork(s, &f) == LB_OK);
    lb_task t;
    CHECK(lb_store_task_load(s, dst, &t) == LB_OK);
    CHECK(t.status == LB_TASK_SUCCEEDED && t.round == 1 && t.answer && !strcmp(t.answer, "one"));
    CHECK(t.owner && !strcmp(t.owner, "bob"));
    CHECK(strstr(t.inputs_json, "data.csv") && !strstr(t.inputs_json, "b.csv"));
    lb_task_free(&t);
    lb_round *rv = NULL;
    size_t nr = 0;
    CHECK(lb_store_rounds(s, dst, &rv, &nr) == LB_OK && nr == 1);
    CHECK(nr == 1 && rv[0].state && !strcmp(rv[0].state, "tsrc-r1") && !strcmp(rv[0].prompt, "plot the trend"));
    lb_rounds_free(rv, nr);
    char of[33];
    int ofr = 0;
    CHECK(lb_store_task_fork_of(s, dst, of, sizeof of, &ofr) == LB_OK && !strcmp(of, src) && ofr == 1);
    CHECK(lb_store_task_fork_of(s, src, of, sizeof of, &ofr) == LB_OK && of[0] == '\0' && ofr == 0);
    /* its events are round 1's, and it takes its own next round */
    char type[16];
    cJSON *d = event_data(s, dst, seq, type);
    CHECK_STR(type, "status");
    cJSON_Delete(d);
    d = event_data(s, dst, seq + 2, type);
    CHECK(d == NULL); /* round 2's event stayed with the source */
    lb_round_new m2 = {.task_id = dst, .prompt = "other two"};
    CHECK(lb_store_round_begin(s, &m2, &n) == LB_OK && n == 2);
    /* a fork of a fork */
    CHECK(lb_random_hex(dst2, sizeof dst2, 16) == LB_OK);
    lb_fork f2 = {.src_id = dst, .round = 1, .new_id = dst2};
    CHECK(lb_store_task_fork(s, &f2) == LB_OK);
    lb_store_close(s);
}

/* A database of schema v8 (written before rounds) becomes v9: each task
 * a one-round conversation with its answer, usage and outputs; its
 * events round 1's. The v8 database is made by this build's own
 * migrations up to v8 (the v9 step undone by hand is not possible), so
 * the test builds the v8 tables as release v8 had them. */
TEST(v8_database_migrates_to_rounds)
{
    lb_store *s = open_fresh("v8");
    lb_store_close(s);
    unlink(db_path);
    sqlite3 *db;
    CHECK(sqlite3_open(db_path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       LB_TEST_STORE_V1_TABLES,
                       0, 0, 0) == SQLITE_OK);
    sqlite3_close(db);
    /* up to v8 through the released migrations, then the rows a v8
     * service wrote, then the v9 migration */
    CHECK(lb_store_open(db_path, &s) == LB_OK);
    lb_store_close(s);
    CHECK(sqlite3_open(db_path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       /* several nodes: v14's API sandboxes, v13's tombstones, v12's claims, v11's sandbox node, then v10's queue */
                       LB_DOWN_V14_API_SANDBOXES "DROP TRIGGER tasks_tombstone; DROP TABLE task_tombstones;" LB_DOWN_V12_CLAIMS "ALTER TABLE tasks DROP COLUMN sandbox_node;"
                       "DROP TABLE web_secrets; DROP TABLE rate_slots; DROP TABLE nodes; DROP INDEX tasks_claimable; DROP INDEX tasks_node;"
                       "ALTER TABLE tasks DROP COLUMN claimable; ALTER TABLE tasks DROP COLUMN node;"
                       "ALTER TABLE tasks DROP COLUMN attempt; ALTER TABLE tasks DROP COLUMN claimed_ms;"
                       "DROP TRIGGER tasks_round_first; DROP TRIGGER tasks_round_copy;"
                       "DROP TABLE rounds; DROP TABLE task_sandboxes; DROP TABLE shares;"
                       "ALTER TABLE tasks DROP COLUMN round; ALTER TABLE events DROP COLUMN round;"
                       "ALTER TABLE tasks DROP COLUMN fork_of; ALTER TABLE tasks DROP COLUMN fork_round;"
                       "UPDATE meta SET value = '8' WHERE key = 'schema_version';"
                       "INSERT INTO tasks(id,status,prompt,model,max_turns,created_ms,finished_ms,turns,prompt_tokens,answer)"
                       " VALUES('0123456789abcdef0123456789abcdef','succeeded','old','m',5,1,9,4,40,'42');"
                       "INSERT INTO events VALUES('0123456789abcdef0123456789abcdef',1,2,'done','{\"status\":\"succeeded\"}');"
                       "INSERT INTO artifacts VALUES('0123456789abcdef0123456789abcdef','plot.png',7,'image/png','ab');",
                       0, 0, 0) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(lb_store_open(db_path, &s) == LB_OK);
    const char *id = "0123456789abcdef0123456789abcdef";
    lb_round *rv = NULL;
    size_t n = 0;
    CHECK(s && lb_store_rounds(s, id, &rv, &n) == LB_OK);
    CHECK(n == 1);
    CHECK(n == 1 && rv[0].n == 1 && !strcmp(rv[0].status, "succeeded") && !strcmp(rv[0].answer, "42"));
    CHECK(n == 1 && rv[0].turns == 4 && rv[0].prompt_tokens == 40 && rv[0].finished_ms == 9);
    CHECK(n == 1 && rv[0].artifacts_json && strstr(rv[0].artifacts_json, "plot.png"));
    lb_rounds_free(rv, n);
    lb_task t;
    CHECK(lb_store_task_load(s, id, &t) == LB_OK && t.round == 1 && t.turns == 4);
    lb_task_free(&t);
    /* the old task takes a second round like a new one */
    lb_round_new m = {.task_id = id, .prompt = "again"};
    int r = 0;
    CHECK(lb_store_round_begin(s, &m, &r) == LB_OK && r == 2);
    lb_store_close(s);
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(a_round_begins_only_after_the_task_ended);
    RUN(a_round_counts_in_the_owners_limit);
    RUN(kept_sandboxes_are_capped_across_tasks);
    RUN(shares_expire_and_go_with_their_task);
    RUN(a_fork_copies_the_conversation_up_to_its_round);
    /* SQLite's older schemas: PostgreSQL starts at version 9 */
    if (!tw_pg())
        RUN(v8_database_migrates_to_rounds);
    if (tw_done())
        return 1;
    return testlib_done();
}
