/* What a fork adds to the store, on whichever engine the location names
 * (a SQLite file or a postgresql:// URL): bench/fork.py builds this
 * against build/'s objects and runs it on both engines. One source task
 * of TURNS turns (an event of EVENT_BYTES each, a tool output's size),
 * then FORKS forks of it through lb_store_task_fork (its events shared),
 * then FORKS more made as a fork was made before shared events: the same
 * fork, its events then copied from the source (the statement the old
 * fork ran). Prints one JSON line: the store's bytes per fork of each. */
#include "common/status.h"
#include "common/task.h"
#include "common/util.h"
#include "store/db.h"
#include "store/store.h"
#include "store/store_round.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the bytes the database's rows and indexes take now */
static long long store_bytes(const char *where)
{
    lb_db *db = NULL;
    lb_db_stmt *st = NULL;
    long long v = -1;
    int pg = lb_db_where_is_url(where);
    const char *sql = pg ? "SELECT pg_database_size(current_database())"
                         : "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM "
                           "pragma_freelist_count())";
    if (lb_db_open(where, &db) == LB_OK && (pg || lb_db_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)") == LB_OK) &&
        lb_db_prepare(db, sql, 0, &st) == LB_OK && lb_db_step(st) == LB_DB_ROW)
        v = lb_db_col_int64(st, 0);
    lb_db_finalize(st);
    st = NULL;
    if (!pg && v >= 0 && lb_db_prepare(db, "PRAGMA page_size", 0, &st) == LB_OK && lb_db_step(st) == LB_DB_ROW)
        v *= lb_db_col_int64(st, 0);
    lb_db_finalize(st);
    lb_db_close(db);
    return v;
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "fork_bench: %s: %s\n", what, lb_strerror(rc));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: fork_bench WHERE TURNS EVENT_BYTES FORKS\n");
        return 2;
    }
    const char *where = argv[1];
    int turns = atoi(argv[2]), evb = atoi(argv[3]), forks = atoi(argv[4]);
    lb_store *s = NULL;
    int rc = lb_store_open(where, &s);
    if (rc)
        return fail("open", rc);
    char src[33];
    if ((rc = lb_random_hex(src, sizeof src, 16)))
        return fail("id", rc);
    lb_task_new t = {.id = src, .prompt = "a long conversation", .model = "m", .max_turns = turns + 1};
    if ((rc = lb_store_task_insert(s, &t)))
        return fail("insert", rc);
    char *data = malloc((size_t)evb + 64);
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < turns; i++) {
        /* a tool's output (random letters: PostgreSQL's TOAST compresses
         * a repeating text, which would hide what a copy costs) */
        int n = snprintf(data, 64, "{\"turn\":%d,\"out\":\"", i);
        for (int k = 0; k < evb; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data[n + k] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ."[x % 64];
        }
        snprintf(data + n + evb, 8, "\"}");
        int64_t seq;
        if ((rc = lb_store_event_append(s, src, "tool", data, &seq)))
            return fail("event", rc);
    }
    free(data);
    if ((rc = lb_store_task_end(s, src, LB_TASK_SUCCEEDED, NULL, "done")))
        return fail("end", rc);
    long long b0 = store_bytes(where);
    for (int i = 0; i < forks; i++) {
        char id[33];
        lb_fork f = {.src_id = src, .round = 1, .new_id = id, .owner = "bench"};
        if ((rc = lb_random_hex(id, sizeof id, 16)) || (rc = lb_store_task_fork(s, &f)))
            return fail("fork", rc);
    }
    long long b1 = store_bytes(where);
    /* the peer: the same forks, with the copy the old fork made */
    lb_db *db = NULL;
    if ((rc = lb_db_open(where, &db)))
        return fail("open the database", rc);
    for (int i = 0; i < forks; i++) {
        char id[33], sql[600];
        lb_fork f = {.src_id = src, .round = 1, .new_id = id, .owner = "bench"};
        if ((rc = lb_random_hex(id, sizeof id, 16)) || (rc = lb_store_task_fork(s, &f)))
            return fail("fork", rc);
        snprintf(sql, sizeof sql,
                 "DELETE FROM event_shares WHERE task_id = '%s';"
                 "INSERT INTO event_rows(task_id, seq, ts_ms, type, data, round)"
                 " SELECT '%s', seq, ts_ms, type, data, round FROM event_rows WHERE task_id = '%s' AND round <= 1",
                 id, id, src);
        if ((rc = lb_db_exec(db, sql)))
            return fail("copy", rc);
    }
    lb_db_close(db);
    long long b2 = store_bytes(where);
    lb_store_close(s);
    printf("{\"source_bytes\":%lld,\"shared_fork_bytes\":%.0f,\"copy_fork_bytes\":%.0f}\n", b0,
           (double)(b1 - b0) / forks, (double)(b2 - b1) / forks);
    return 0;
}
