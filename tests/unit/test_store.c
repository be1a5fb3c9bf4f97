/* Unit tests for the task store (server/store/store.h), on SQLite or, under
 * tests/integration/test_store_pg.py, on PostgreSQL (store_where.h). */
#include "store_v1.h"
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "web/task_json.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char db_path[4096];

static void new_id(char id[33]) { CHECK(lb_random_hex(id, 33, 16) == LB_OK); }

static lb_store *open_fresh(const char *name) { return tw_store_fresh(name, db_path, sizeof db_path); }

static int insert_task(lb_store *s, char id[33])
{
    new_id(id);
    lb_task_new t = {.id = id, .prompt = "plot the trend", .model = "m", .max_turns = 10,
                     .token_budget = 5000, .timeout_s = 60,
                     .inputs_json = "[{\"path\":\"data.csv\",\"size\":3}]"};
    return lb_store_task_insert(s, &t);
}

TEST(open_creates_schema_and_reopens)
{
    lb_store *s = open_fresh("schema");
    CHECK(s != NULL);
    lb_store_close(s);
    /* reopening an existing database must not re-run the migration */
    lb_store *s2 = NULL;
    CHECK(lb_store_open(db_path, &s2) == LB_OK);
    lb_db *db = NULL;
    CHECK(lb_db_open(db_path, &db) == LB_OK);
    lb_db_stmt *st = NULL;
    CHECK(db && lb_db_prepare(db, "SELECT value FROM meta WHERE key='schema_version'", 0, &st) == LB_OK);
    CHECK(st && lb_db_step(st) == LB_DB_ROW);
    CHECK(st && lb_db_col_int(st, 0) == LB_STORE_SCHEMA_VERSION);
    lb_db_finalize(st);
    st = NULL;
    if (!tw_pg()) {
        CHECK(lb_db_prepare(db, "PRAGMA journal_mode", 0, &st) == LB_OK);
        CHECK(st && lb_db_step(st) == LB_DB_ROW);
        CHECK_STR(lb_db_col_text(st, 0), "wal");
        lb_db_finalize(st);
    }
    lb_db_close(db);
    lb_store_close(s2);
}

/* a database of schema v1 (before per-task limits and the detailed usage)
 * is migrated in place; its tasks read back with null limits */
TEST(migrates_v1_database)
{
    lb_store *s = open_fresh("v1");
    lb_store_close(s);
    unlink(db_path);
    sqlite3 *db;
    CHECK(sqlite3_open(db_path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       LB_TEST_STORE_V1_TABLES
                       "INSERT INTO tasks(id,status,prompt,model,max_turns,created_ms,prompt_tokens)"
                       " VALUES('0123456789abcdef0123456789abcdef','succeeded','old','m',5,1,40);",
                       0, 0, 0) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(lb_store_open(db_path, &s) == LB_OK);
    cJSON *t = NULL;
    CHECK(s && lb_store_task_get(s, "0123456789abcdef0123456789abcdef", &t) == LB_OK);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(t, "token_budget")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(t, "timeout_s")));
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "usage"), "prompt_tokens")->valueint == 40);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "usage"), "environment_tokens") == NULL);
    cJSON_Delete(t);
    lb_store_close(s);
}

TEST(refuses_newer_schema)
{
    lb_store *s = open_fresh("newer");
    CHECK(s != NULL);
    lb_store_close(s);
    CHECK(tw_exec(db_path, "UPDATE meta SET value='999' WHERE key='schema_version'") == LB_OK);
    s = NULL;
    CHECK(lb_store_open(db_path, &s) != LB_OK);
    CHECK(s == NULL);
}

TEST(task_lifecycle)
{
    lb_store *s = open_fresh("life");
    char id[33], st[16];
    int pid = -1;
    CHECK(insert_task(s, id) == LB_OK);
    CHECK(lb_store_task_state(s, id, st, sizeof st, &pid) == LB_OK);
    CHECK_STR(st, "queued");
    CHECK(pid == 0);
    CHECK(lb_store_task_set_pid(s, id, 4242) == LB_OK);
    CHECK(lb_store_task_set_running(s, id, 4243) == LB_OK);
    CHECK(lb_store_task_state(s, id, st, sizeof st, &pid) == LB_OK);
    CHECK_STR(st, "running");
    CHECK(pid == 4243);
    lb_task_usage u = {.turns = 3, .prompt_tokens = 100, .completion_tokens = 20, .environment_tokens = 7,
                       .environment_estimated = 1, .context_tokens = 60, .model_ms = 1500, .tools_ms = 250,
                       .sandbox_ms = 12};
    CHECK(lb_store_task_set_usage(s, id, &u) == LB_OK);

    char **ids;
    int *pids;
    size_t n;
    CHECK(lb_store_tasks_active(s, &ids, &pids, &n) == LB_OK);
    CHECK(n == 1 && !strcmp(ids[0], id) && pids[0] == 4243);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    free(pids);

    CHECK(lb_store_task_finish(s, id, "succeeded", NULL, "42") == LB_OK);
    CHECK(lb_store_task_finish(s, id, "failed", "late", NULL) == LB_E_EXISTS);
    CHECK(lb_store_task_set_running(s, id, 1) == LB_E_EXISTS);
    CHECK(lb_store_event_append(s, id, "model", "{}", NULL) == LB_E_EXISTS);

    cJSON *t = NULL;
    CHECK(lb_store_task_get(s, id, &t) == LB_OK);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(t, "status")), "succeeded");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(t, "answer")), "42");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(t, "reason")));
    CHECK(cJSON_GetObjectItem(t, "turns")->valueint == 3);
    const cJSON *usage = cJSON_GetObjectItem(t, "usage");
    CHECK(cJSON_GetObjectItem(usage, "prompt_tokens")->valueint == 100);
    CHECK(cJSON_GetObjectItem(usage, "total_tokens")->valueint == 120);
    CHECK(cJSON_GetObjectItem(usage, "environment_tokens")->valueint == 7);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(usage, "environment_estimated")));
    CHECK(cJSON_GetObjectItem(usage, "model_ms")->valueint == 1500);
    CHECK(cJSON_GetObjectItem(usage, "tools_ms")->valueint == 250);
    CHECK(cJSON_GetObjectItem(t, "token_budget")->valueint == 5000);
    CHECK(cJSON_GetObjectItem(t, "timeout_s")->valueint == 60);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(t, "inputs")) == 1);
    CHECK(cJSON_IsArray(cJSON_GetObjectItem(t, "artifacts")));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(t, "finished_ms")));
    cJSON_Delete(t);

    CHECK(lb_store_tasks_active(s, &ids, &pids, &n) == LB_OK);
    CHECK(n == 0);
    free(ids);
    free(pids);
    lb_store_close(s);
}

static int last_type_cb(void *arg, int64_t seq, int64_t ts, const char *type, const char *data)
{
    (void)seq;
    (void)ts;
    snprintf(arg, 64, "%s %s", type, data);
    return 0;
}

TEST(finish_appends_done_event_atomically)
{
    lb_store *s = open_fresh("done");
    char id[33];
    CHECK(insert_task(s, id) == LB_OK);
    int64_t seq = 0;
    CHECK(lb_store_event_append(s, id, "status", "{\"status\":\"running\"}", &seq) == LB_OK);
    CHECK(seq == 1);
    CHECK(lb_store_task_finish(s, id, "failed", "boom", NULL) == LB_OK);
    char last[64] = "";
    CHECK(lb_store_events_after(s, id, 1, 10, last_type_cb, last) == LB_OK);
    CHECK_STR(last, "done {\"status\":\"failed\",\"reason\":\"boom\",\"round\":1}"); /* tagged with its round (v9) */
    CHECK(lb_store_task_finish(s, id, "cancelled", NULL, NULL) == LB_E_EXISTS);
    lb_store_close(s);
}

static int again_count_cb(void *arg, int64_t seq, int64_t ts, const char *type, const char *data)
{
    (void)seq;
    (void)ts;
    (void)type;
    (void)data;
    (*(int *)arg)++;
    return 0;
}

/* several nodes: a writer that tries again after an unanswered try (the
 * server went away, maybe after its commit) does not store the event twice */
TEST(event_again_is_stored_once)
{
    lb_store *s = open_fresh("again");
    char id[33];
    CHECK(insert_task(s, id) == LB_OK);
    int64_t seq = 0, seq2 = 0;
    CHECK(lb_store_event_append_at(s, id, 1000, "tool", "{\"n\":1}", 0, &seq) == LB_OK);
    CHECK(seq == 1);
    /* the same event again: the one stored */
    CHECK(lb_store_event_append_at(s, id, 1000, "tool", "{\"n\":1}", 1, &seq2) == LB_OK);
    CHECK(seq2 == 1);
    /* not the same (time, type, data): a new one, also when told "again" */
    CHECK(lb_store_event_append_at(s, id, 1001, "tool", "{\"n\":1}", 1, &seq2) == LB_OK && seq2 == 2);
    CHECK(lb_store_event_append_at(s, id, 1001, "model", "{\"n\":1}", 1, &seq2) == LB_OK && seq2 == 3);
    CHECK(lb_store_event_append_at(s, id, 1001, "model", "{\"n\":2}", 1, &seq2) == LB_OK && seq2 == 4);
    /* a first try of an equal event is stored: two equal events may be real */
    CHECK(lb_store_event_append_at(s, id, 1000, "tool", "{\"n\":1}", 0, &seq2) == LB_OK && seq2 == 5);
    /* a text that is not an object is compared as it is stored too */
    CHECK(lb_store_event_append_at(s, id, 1002, "note", "[1]", 0, &seq2) == LB_OK && seq2 == 6);
    CHECK(lb_store_event_append_at(s, id, 1002, "note", "[1]", 1, &seq2) == LB_OK && seq2 == 6);
    int n = 0;
    CHECK(lb_store_events_after(s, id, 0, 100, again_count_cb, &n) == LB_OK);
    CHECK(n == 6);
    CHECK(lb_store_event_append_at(s, id, -1, "tool", "{}", 1, &seq2) == LB_E_INVAL);
    lb_store_close(s);
}

TEST(invalid_arguments)
{
    lb_store *s = open_fresh("inval");
    char id[33], st[16];
    CHECK(lb_store_task_state(s, "nope", st, sizeof st, NULL) == LB_E_INVAL);
    CHECK(lb_store_task_state(s, "0123456789abcdef0123456789ABCDEF", st, sizeof st, NULL) == LB_E_INVAL);
    new_id(id);
    CHECK(lb_store_task_state(s, id, st, sizeof st, NULL) == LB_E_NOTFOUND);
    CHECK(lb_store_task_finish(s, id, "failed", NULL, NULL) == LB_E_NOTFOUND);
    CHECK(lb_store_event_append(s, id, "status", "{}", NULL) == LB_E_NOTFOUND);
    CHECK(insert_task(s, id) == LB_OK);
    CHECK(lb_store_task_finish(s, id, "running", NULL, NULL) == LB_E_INVAL);
    CHECK(lb_store_event_append(s, id, "Bad Type", "{}", NULL) == LB_E_INVAL);
    lb_task_new dup = {.id = id, .prompt = "x"};
    CHECK(lb_store_task_insert(s, &dup) == LB_E_EXISTS);
    cJSON *t = NULL;
    CHECK(lb_store_task_get(s, "../etc", &t) == LB_E_INVAL && t == NULL);
    lb_store_close(s);
}

/* ---- events paging ---- */

struct collect {
    int64_t seqs[64];
    int n;
    int stop_at;
};

static int collect_cb(void *arg, int64_t seq, int64_t ts, const char *type, const char *data)
{
    (void)ts;
    (void)type;
    (void)data;
    struct collect *c = arg;
    c->seqs[c->n++] = seq;
    return c->stop_at && seq == c->stop_at ? 77 : 0;
}

TEST(events_after_pages)
{
    lb_store *s = open_fresh("paging");
    char id[33];
    CHECK(insert_task(s, id) == LB_OK);
    for (int i = 1; i <= 25; i++) {
        int64_t seq;
        CHECK(lb_store_event_append(s, id, "tool", "{\"n\":1}", &seq) == LB_OK);
        CHECK(seq == i);
    }
    struct collect c = {0};
    int64_t after = 0;
    int pages = 0;
    for (;;) {
        int before = c.n;
        CHECK(lb_store_events_after(s, id, after, 10, collect_cb, &c) == LB_OK);
        if (c.n == before)
            break;
        after = c.seqs[c.n - 1];
        pages++;
    }
    CHECK(pages == 3);
    CHECK(c.n == 25);
    for (int i = 0; i < c.n; i++)
        CHECK(c.seqs[i] == i + 1);
    struct collect c2 = {.stop_at = 5};
    CHECK(lb_store_events_after(s, id, 2, 100, collect_cb, &c2) == 77);
    CHECK(c2.n == 3 && c2.seqs[0] == 3);
    lb_store_close(s);
}

/* ---- two connections, two threads ---- */

#define PER_THREAD 300

struct writer {
    const char *id;
    int ok;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    lb_store *s = NULL;
    if (lb_store_open(db_path, &s) != LB_OK)
        return NULL;
    for (int i = 0; i < PER_THREAD; i++)
        if (lb_store_event_append(s, w->id, "tool", "{\"x\":1}", NULL) == LB_OK)
            w->ok++;
    lb_store_close(s);
    return NULL;
}

static int count_cb(void *arg, int64_t seq, int64_t ts, const char *type, const char *data)
{
    (void)ts;
    (void)type;
    (void)data;
    int64_t *expect = arg;
    if (seq != *expect + 1)
        return 1; /* a gap or a duplicate */
    *expect = seq;
    return 0;
}

TEST(concurrent_writers_lose_nothing)
{
    lb_store *s = open_fresh("concurrent");
    char id[33];
    CHECK(insert_task(s, id) == LB_OK);
    struct writer a = {.id = id}, b = {.id = id};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, writer_main, &a);
    pthread_create(&tb, NULL, writer_main, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.ok == PER_THREAD);
    CHECK(b.ok == PER_THREAD);
    int64_t last = 0;
    CHECK(lb_store_events_after(s, id, 0, 10000, count_cb, &last) == LB_OK);
    CHECK(last == 2 * PER_THREAD);
    lb_store_close(s);
}

/* ---- the owner's limit with writers at once ---- */

#define OWNER_RACERS 8
#define OWNER_MAX 3

static void *owner_racer(void *arg)
{
    int *rc = arg;
    lb_store *s = NULL;
    *rc = -1;
    if (lb_store_open(db_path, &s) != LB_OK)
        return NULL;
    char id[33];
    new_id(id);
    lb_task_new t = {.id = id, .prompt = "p", .model = "m", .max_turns = 1, .owner = "ann",
                     .owner_max_active = OWNER_MAX};
    *rc = lb_store_task_insert(s, &t);
    lb_store_close(s);
    return NULL;
}

/* Eight inserts at once for an owner allowed three: exactly three get in
 * (SQLite's write lock; PostgreSQL's lock of the owner's tasks) */
TEST(owner_limit_holds_under_concurrent_inserts)
{
    lb_store *s = open_fresh("owner-race");
    CHECK(s != NULL);
    pthread_t th[OWNER_RACERS];
    int rc[OWNER_RACERS];
    for (int i = 0; i < OWNER_RACERS; i++)
        pthread_create(&th[i], NULL, owner_racer, &rc[i]);
    int ok = 0, busy = 0;
    for (int i = 0; i < OWNER_RACERS; i++) {
        pthread_join(th[i], NULL);
        ok += rc[i] == LB_OK;
        busy += rc[i] == LB_E_BUSY;
    }
    CHECK(ok == OWNER_MAX);
    CHECK(busy == OWNER_RACERS - OWNER_MAX);
    lb_store_close(s);
}

/* Five tasks with one created_ms: paging by (created_ms, id) walks all of
 * them, two at a time, none twice. */
TEST(page_cursor_keeps_same_millisecond_tasks)
{
    lb_store *s = open_fresh("page");
    char ids[5][33];
    for (int i = 0; i < 5; i++)
        CHECK(insert_task(s, ids[i]) == LB_OK);
    CHECK(tw_exec(db_path, "UPDATE tasks SET created_ms = 1700000000000") == LB_OK);
    int seen = 0, pages = 0;
    int64_t before = 0;
    char before_id[33] = "";
    char got[5][33];
    for (;;) {
        cJSON *arr = NULL;
        CHECK(lb_store_task_page(s, 2, before, before_id, &arr) == LB_OK);
        int n = cJSON_GetArraySize(arr);
        for (int i = 0; i < n && seen < 5; i++) {
            cJSON *t = cJSON_GetArrayItem(arr, i);
            snprintf(got[seen++], 33, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(t, "id")));
            before = (int64_t)cJSON_GetObjectItem(t, "created_ms")->valuedouble;
            snprintf(before_id, sizeof before_id, "%s", got[seen - 1]);
        }
        cJSON_Delete(arr);
        if (n < 2 || ++pages > 5)
            break;
    }
    CHECK(seen == 5);
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            CHECK(strcmp(got[i], got[j]) > 0); /* strictly descending ids: no repeats */
    lb_store_close(s);
}

TEST(task_options_round_trip)
{
    lb_store *s = open_fresh("options");
    char a[33], b[33];
    CHECK(insert_task(s, a) == LB_OK);
    new_id(b);
    lb_task_new t = {.id = b, .prompt = "again", .model = "m", .max_turns = 5, .network = "nat",
                     .image = "default", .rerun_of = a};
    CHECK(lb_store_task_insert(s, &t) == LB_OK);
    cJSON *o = NULL;
    CHECK(lb_store_task_get(s, b, &o) == LB_OK);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "network")), "nat");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "image")), "default");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "rerun_of")), a);
    cJSON_Delete(o);
    CHECK(lb_store_task_get(s, a, &o) == LB_OK);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(o, "network")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(o, "rerun_of")));
    cJSON_Delete(o);
    lb_store_close(s);
}

/* Schema v6: the run options are kept as given, loaded into lb_task and
 * shown as an object; a task without them shows null; a value that is
 * not an object (never written by the service) shows null too; more than
 * 4 KiB is refused. */
TEST(task_run_options_round_trip)
{
    lb_store *s = open_fresh("runopts");
    char a[33], b[33], c[33], d[33];
    CHECK(insert_task(s, a) == LB_OK);
    new_id(b);
    lb_task_new t = {.id = b, .prompt = "p", .model = "m", .max_turns = 5,
                     .options_json = "{\"mode\":\"llm\",\"max_tokens\":64}"};
    CHECK(lb_store_task_insert(s, &t) == LB_OK);
    lb_task got;
    CHECK(lb_store_task_load(s, b, &got) == LB_OK);
    CHECK_STR(got.options_json, "{\"mode\":\"llm\",\"max_tokens\":64}");
    lb_task_free(&got);
    CHECK(got.options_json == NULL);
    CHECK(lb_store_task_load(s, a, &got) == LB_OK);
    CHECK(got.options_json == NULL);
    lb_task_free(&got);
    cJSON *o = NULL;
    CHECK(lb_store_task_get(s, b, &o) == LB_OK);
    cJSON *opts = cJSON_GetObjectItem(o, "options");
    CHECK(cJSON_IsObject(opts));
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(opts, "mode")), "llm");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(opts, "max_tokens")) == 64);
    cJSON_Delete(o);
    CHECK(lb_store_task_get(s, a, &o) == LB_OK);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(o, "options")));
    cJSON_Delete(o);
    new_id(c);
    lb_task_new bad = {.id = c, .prompt = "p", .options_json = "[1,2]"};
    CHECK(lb_store_task_insert(s, &bad) == LB_OK);
    CHECK(lb_store_task_get(s, c, &o) == LB_OK);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(o, "options")));
    cJSON_Delete(o);
    static char big[5000];
    memset(big, ' ', sizeof big - 3);
    big[0] = '{';
    big[sizeof big - 3] = '}';
    new_id(d);
    lb_task_new huge = {.id = d, .prompt = "p", .options_json = big};
    CHECK(lb_store_task_insert(s, &huge) == LB_E_INVAL);
    lb_store_close(s);
}

/* A database written by the first release (schema 1) opens, gains the
 * new columns and keeps its tasks. */
TEST(v1_database_migrates_to_v3)
{
    snprintf(db_path, sizeof db_path, "%s/v1-h.db", tw_dir);
    sqlite3 *db;
    CHECK(sqlite3_open(db_path, &db) == SQLITE_OK);
    const char *v1 =
        "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES('schema_version','1');"
        "CREATE TABLE tasks(id TEXT PRIMARY KEY NOT NULL, status TEXT NOT NULL, reason TEXT, prompt TEXT NOT NULL,"
        " model TEXT, max_turns INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL, started_ms INTEGER,"
        " finished_ms INTEGER, pid INTEGER, turns INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL"
        " DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0, answer TEXT, inputs TEXT NOT NULL DEFAULT '[]');"
        "CREATE TABLE events(task_id TEXT NOT NULL, seq INTEGER NOT NULL, ts_ms INTEGER NOT NULL, type TEXT NOT NULL,"
        " data TEXT NOT NULL, PRIMARY KEY(task_id, seq)) WITHOUT ROWID;"
        "CREATE TABLE artifacts(task_id TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, mime TEXT NOT"
        " NULL, sha256 TEXT NOT NULL, PRIMARY KEY(task_id, path)) WITHOUT ROWID;"
        "INSERT INTO tasks(id, status, prompt, created_ms) VALUES('0123456789abcdef0123456789abcdef','succeeded',"
        "'old',1);";
    CHECK(sqlite3_exec(db, v1, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    lb_store *s = NULL;
    CHECK(lb_store_open(db_path, &s) == LB_OK);
    cJSON *o = NULL;
    CHECK(s && lb_store_task_get(s, "0123456789abcdef0123456789abcdef", &o) == LB_OK);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "prompt")), "old");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(o, "image")));
    cJSON_Delete(o);
    /* v5: the task already there is counted from the start */
    lb_metric_row *rows = NULL;
    size_t n = 0;
    CHECK(s && lb_store_metrics_all(s, &rows, &n) == LB_OK);
    int created = 0, succeeded = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(rows[i].name, "llmbox_tasks_created_total") && rows[i].value == 1)
            created = 1;
        if (!strcmp(rows[i].name, "llmbox_tasks_finished_total") &&
            !strcmp(rows[i].labels, "status=\"succeeded\"") && rows[i].value == 1)
            succeeded = 1;
    }
    CHECK(created && succeeded && n == 2);
    free(rows);
    lb_store_close(s);
}

TEST(list_newest_first_and_delete_cascades)
{
    lb_store *s = open_fresh("list");
    char ids[3][33];
    for (int i = 0; i < 3; i++) {
        CHECK(insert_task(s, ids[i]) == LB_OK);
        usleep(3000); /* distinct created_ms */
    }
    cJSON *arr = NULL;
    CHECK(lb_store_task_list(s, 2, 0, &arr) == LB_OK);
    CHECK(cJSON_GetArraySize(arr) == 2);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "id")), ids[2]);
    int64_t before = (int64_t)cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 1), "created_ms")->valuedouble;
    cJSON_Delete(arr);
    CHECK(lb_store_task_list(s, 2, before, &arr) == LB_OK);
    CHECK(cJSON_GetArraySize(arr) == 1);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "id")), ids[0]);
    cJSON_Delete(arr);

    lb_artifact art[2] = {0};
    snprintf(art[0].path, sizeof art[0].path, "plots/b.png");
    art[0].size = 10;
    snprintf(art[0].mime, sizeof art[0].mime, "image/png");
    snprintf(art[1].path, sizeof art[1].path, "a.txt");
    snprintf(art[1].mime, sizeof art[1].mime, "text/plain");
    CHECK(lb_store_artifacts_set(s, ids[0], art, 2) == LB_OK);
    lb_artifact *rows = NULL;
    size_t nrows = 0;
    CHECK(lb_store_artifacts_rows(s, ids[0], &rows, &nrows) == LB_OK);
    CHECK(nrows == 2);
    CHECK_STR(nrows ? rows[0].path : "", "a.txt");
    free(rows);
    lb_artifact f;
    CHECK(lb_store_artifact_find(s, ids[0], "plots/b.png", &f) == LB_OK);
    CHECK(f.size == 10 && !strcmp(f.mime, "image/png"));
    CHECK(lb_store_artifact_find(s, ids[0], "nope", &f) == LB_E_NOTFOUND);
    lb_artifact bad = {0};
    snprintf(bad.path, sizeof bad.path, "../x");
    CHECK(lb_store_artifacts_set(s, ids[0], &bad, 1) == LB_E_INVAL);

    CHECK(lb_store_event_append(s, ids[0], "status", "{}", NULL) == LB_OK);
    CHECK(lb_store_task_delete(s, ids[0]) == LB_OK);
    CHECK(lb_store_task_delete(s, ids[0]) == LB_E_NOTFOUND);
    CHECK(lb_store_artifact_find(s, ids[0], "a.txt", &f) == LB_E_NOTFOUND);
    struct collect c = {0};
    CHECK(lb_store_events_after(s, ids[0], 0, 10, collect_cb, &c) == LB_OK);
    CHECK(c.n == 0);
    lb_store_close(s);
}

/* Looks a series up in rows; -1 when absent. */
static double metric_value(const lb_metric_row *rows, size_t n, const char *name, const char *labels, const char *le)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].name, name) && !strcmp(rows[i].labels, labels) && !strcmp(rows[i].le, le))
            return rows[i].value;
    return -1;
}

/* the task counters are kept by triggers: insert counts once, the first
 * final status once, a second finish nothing, a delete takes nothing back */
TEST(metrics_task_counters_survive_delete)
{
    lb_store *s = open_fresh("metrics_tasks");
    CHECK(s != NULL);
    char a[33], b[33], c[33];
    CHECK(insert_task(s, a) == LB_OK && insert_task(s, b) == LB_OK && insert_task(s, c) == LB_OK);
    CHECK(lb_store_task_set_running(s, a, 1) == LB_OK);
    CHECK(lb_store_task_finish(s, a, "succeeded", NULL, "42") == LB_OK);
    CHECK(lb_store_task_finish(s, a, "failed", "again", NULL) == LB_E_EXISTS);
    CHECK(lb_store_task_finish(s, b, "cancelled", "stop", NULL) == LB_OK);
    int64_t counts[LB_STORE_N_STATUS];
    CHECK(lb_store_task_counts(s, counts) == LB_OK);
    CHECK(counts[0] == 1 && counts[1] == 0 && counts[2] == 1 && counts[3] == 0 && counts[4] == 1);
    CHECK(lb_store_task_delete(s, a) == LB_OK);
    CHECK(lb_store_task_counts(s, counts) == LB_OK);
    CHECK(counts[2] == 0);
    lb_metric_row *rows = NULL;
    size_t n = 0;
    CHECK(lb_store_metrics_all(s, &rows, &n) == LB_OK);
    CHECK(metric_value(rows, n, "llmbox_tasks_created_total", "", "") == 3);
    CHECK(metric_value(rows, n, "llmbox_tasks_finished_total", "status=\"succeeded\"", "") == 1);
    CHECK(metric_value(rows, n, "llmbox_tasks_finished_total", "status=\"cancelled\"", "") == 1);
    CHECK(metric_value(rows, n, "llmbox_tasks_finished_total", "status=\"failed\"", "") == -1);
    free(rows);
    lb_store_close(s);
}

/* what an agent moves into the store adds up with what is there */
TEST(metrics_add_accumulates)
{
    lb_store *s = open_fresh("metrics_add");
    CHECK(s != NULL);
    lb_metrics *m = lb_metrics_proc();
    lb_metric_row *rows = NULL;
    size_t n = 0;
    CHECK(lb_metrics_snapshot(m, &rows, &n, 1) == 0); /* start empty */
    free(rows);
    lb_metrics_observe(m, &lb_hist_tool, "tool=\"bash\"", 0.2);
    lb_metrics_observe(m, &lb_hist_tool, "tool=\"bash\"", 0.25); /* on a bound: that bucket */
    lb_metrics_observe(m, &lb_hist_tool, "tool=\"bash\"", 5000); /* above every bound */
    lb_metrics_add(m, "llmbox_model_errors_total", "model=\"m\",kind=\"http_429\"", "", 1);
    CHECK(lb_metrics_snapshot(m, &rows, &n, 1) == 0);
    CHECK(n == 4);
    CHECK(lb_store_metrics_add(s, rows, n) == LB_OK);
    CHECK(lb_store_metrics_add(s, rows, n) == LB_OK);
    free(rows);
    CHECK(lb_metrics_snapshot(m, &rows, &n, 0) == 0 && n == 0 && rows == NULL);
    CHECK(lb_store_metrics_all(s, &rows, &n) == LB_OK);
    CHECK(metric_value(rows, n, "llmbox_tool_duration_seconds", "tool=\"bash\"", "0.25") == 4);
    CHECK(metric_value(rows, n, "llmbox_tool_duration_seconds", "tool=\"bash\"", "+Inf") == 2);
    CHECK(metric_value(rows, n, "llmbox_tool_duration_seconds", "tool=\"bash\"", "") == 2 * 5000.45);
    CHECK(metric_value(rows, n, "llmbox_model_errors_total", "model=\"m\",kind=\"http_429\"", "") == 2);
    free(rows);
    lb_store_close(s);
}

TEST(metrics_label_escapes_and_caps)
{
    char l[LB_METRIC_LABELS_MAX] = "";
    CHECK(lb_metrics_label(l, sizeof l, "a", "x\"y\\z\nw") == 0);
    CHECK(lb_metrics_label(l, sizeof l, "b", "") == 0);
    CHECK_STR(l, "a=\"x\\\"y\\\\z\\nw\",b=\"\"");
    char small[12] = "";
    CHECK(lb_metrics_label(small, sizeof small, "key", "long value") == -1);
    CHECK_STR(small, "");
    char le[24];
    lb_metrics_le_text(0.0025, le, sizeof le);
    CHECK_STR(le, "0.0025");
    lb_metrics_le_text(600, le, sizeof le);
    CHECK_STR(le, "600");
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(open_creates_schema_and_reopens);
    /* SQLite's older schemas: PostgreSQL starts at version 9 */
    if (!tw_pg())
        RUN(migrates_v1_database);
    RUN(refuses_newer_schema);
    RUN(task_lifecycle);
    RUN(finish_appends_done_event_atomically);
    RUN(event_again_is_stored_once);
    RUN(invalid_arguments);
    RUN(events_after_pages);
    RUN(concurrent_writers_lose_nothing);
    RUN(owner_limit_holds_under_concurrent_inserts);
    RUN(list_newest_first_and_delete_cascades);
    RUN(page_cursor_keeps_same_millisecond_tasks);
    RUN(task_options_round_trip);
    RUN(task_run_options_round_trip);
    if (!tw_pg())
        RUN(v1_database_migrates_to_v3);
    RUN(metrics_task_counters_survive_delete);
    RUN(metrics_add_accumulates);
    RUN(metrics_label_escapes_and_caps);
    if (tw_done())
        return 1;
    return testlib_done();
}
