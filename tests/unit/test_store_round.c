/* Unit tests for the rounds, kept sandboxes and shares of the task store
 * (server/store/store_round.h, schema v9). */
#include "store_down_api_sandboxes.h"
#include "store_down_claims.h"
#include "store_down_fork_shares.h"
#include "store_v1.h"
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "store/db.h"
#include "store/store.h"
#include "store/store_round.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char db_path[4096];

static lb_store *open_fresh(const char *name) { return tw_store_fresh(name, db_path, sizeof db_path); }

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

/* a single number SQL gives on this test's database (-1: none) */
static int64_t count_of(const char *sql)
{
    lb_db *db = NULL;
    lb_db_stmt *st = NULL;
    int64_t v = -1;
    if (lb_db_open(db_path, &db) == LB_OK && lb_db_prepare(db, sql, 0, &st) == LB_OK && lb_db_step(st) == LB_DB_ROW)
        v = lb_db_col_int64(st, 0);
    lb_db_finalize(st);
    lb_db_close(db);
    return v;
}

/* the types of task id's events in order, "," after each, and their seqs */
typedef struct ev_list {
    char types[512];
    int64_t seqs[64];
    int n;
} ev_list;

static int ev_list_cb(void *arg, int64_t seq, int64_t ts_ms, const char *type, const char *data_json)
{
    ev_list *l = arg;
    (void)ts_ms;
    (void)data_json;
    size_t k = strlen(l->types);
    snprintf(l->types + k, sizeof l->types - k, "%s,", type);
    if (l->n < 64)
        l->seqs[l->n++] = seq;
    return 0;
}

static const char *ev_types(lb_store *s, const char *id, ev_list *l)
{
    memset(l, 0, sizeof *l);
    CHECK(lb_store_events_after(s, id, 0, 1000, ev_list_cb, l) == LB_OK);
    for (int i = 1; i < l->n; i++)
        CHECK(l->seqs[i] > l->seqs[i - 1]); /* in order, each once */
    return l->types;
}

static void end_round(lb_store *s, const char *id, const char *type, const char *answer)
{
    int64_t seq = 0;
    CHECK(lb_store_event_append(s, id, type, "{\"out\":\"a tool's output\"}", &seq) == LB_OK);
    CHECK(lb_store_task_end(s, id, LB_TASK_SUCCEEDED, NULL, answer) == LB_OK);
}

static void next_round(lb_store *s, const char *id, int want)
{
    lb_round_new m = {.task_id = id, .prompt = "more"};
    int n = 0;
    CHECK(lb_store_round_begin(s, &m, &n) == LB_OK && n == want);
}

/* A fork stores no event of its source's: it reads them (the store grows
 * by no event row per fork), appends its own after them, and keeps them
 * when the source, or a fork between, is deleted. */
TEST(a_fork_shares_its_sources_events)
{
    lb_store *s = open_fresh("forkshare");
    CHECK(s != NULL);
    char src[33], a[33], b[33], c[33];
    ev_list l;
    CHECK(insert_task(s, src, "ann") == LB_OK);
    end_round(s, src, "t1", "one");
    next_round(s, src, 2);
    end_round(s, src, "t2", "two");
    const char *want_src = "t1,done,round,t2,done,";
    CHECK_STR(ev_types(s, src, &l), want_src);
    int64_t rows = count_of("SELECT COUNT(*) FROM event_rows");
    CHECK(rows == 5); /* each round: its event and the end's */
    /* a at round 1, b at round 2, c of a after a's own round 2 */
    CHECK(lb_random_hex(a, sizeof a, 16) == LB_OK && lb_random_hex(b, sizeof b, 16) == LB_OK);
    lb_fork fa = {.src_id = src, .round = 1, .new_id = a, .owner = "bob"};
    lb_fork fb = {.src_id = src, .round = 2, .new_id = b, .owner = "bob"};
    CHECK(lb_store_task_fork(s, &fa) == LB_OK && lb_store_task_fork(s, &fb) == LB_OK);
    CHECK(count_of("SELECT COUNT(*) FROM event_rows") == rows); /* no row copied */
    CHECK_STR(ev_types(s, a, &l), "t1,done,");
    CHECK_STR(ev_types(s, b, &l), want_src);
    next_round(s, a, 2);
    end_round(s, a, "a2", "a-two");
    CHECK_STR(ev_types(s, a, &l), "t1,done,round,a2,done,");
    CHECK(l.n == 5 && l.seqs[1] == 2 && l.seqs[2] == 3); /* its own after the shared ones */
    CHECK_STR(ev_types(s, src, &l), want_src);          /* the source does not see the fork's */
    CHECK(lb_random_hex(c, sizeof c, 16) == LB_OK);
    lb_fork fc = {.src_id = a, .round = 2, .new_id = c};
    CHECK(lb_store_task_fork(s, &fc) == LB_OK);
    CHECK_STR(ev_types(s, c, &l), "t1,done,round,a2,done,");
    rows = count_of("SELECT COUNT(*) FROM event_rows");
    /* the source goes: b (round 2, the most) takes its rows, a and c keep reading them */
    CHECK(lb_store_task_delete(s, src) == LB_OK);
    CHECK_STR(ev_types(s, b, &l), want_src);
    CHECK_STR(ev_types(s, a, &l), "t1,done,round,a2,done,");
    CHECK_STR(ev_types(s, c, &l), "t1,done,round,a2,done,");
    CHECK(count_of("SELECT COUNT(*) FROM event_rows") == rows);
    /* then a, between b and c */
    CHECK(lb_store_task_delete(s, a) == LB_OK);
    CHECK_STR(ev_types(s, c, &l), "t1,done,round,a2,done,");
    CHECK_STR(ev_types(s, b, &l), want_src);
    /* b's round 2 rows, only b reads them: with b gone, c keeps what it reads */
    CHECK(lb_store_task_delete(s, b) == LB_OK);
    CHECK_STR(ev_types(s, c, &l), "t1,done,round,a2,done,");
    CHECK(count_of("SELECT COUNT(*) FROM event_rows") == 5);
    CHECK(lb_store_task_delete(s, c) == LB_OK);
    CHECK(count_of("SELECT COUNT(*) FROM event_rows") == 0);
    CHECK(count_of("SELECT COUNT(*) FROM event_shares") == 0);
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
    CHECK(tw_exec(db_path, lb_down_v15_fork_shares()) == LB_OK);
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
    RUN(a_fork_shares_its_sources_events);
    /* SQLite's older schemas: PostgreSQL starts at version 9 */
    if (!tw_pg())
        RUN(v8_database_migrates_to_rounds);
    if (tw_done())
        return 1;
    return testlib_done();
}
