/* Unit tests for the task queue, the nodes' leases, the sweep and the
 * fence of the task store (server/store/store_queue.h, schemas v10 and v11:
 * a round goes back to the node that holds its sandbox). Run on
 * SQLite here and on PostgreSQL by tests/integration/test_store_pg.py. */
#include "store_down_claims.h"
#include "store_down_fork_shares.h"
#include "store_down_api_sandboxes.h"
#include "store_down_tombstones.h"
#include "store_where.h"
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "store/store.h"
#include "store/store_queue.h"
#include "store/store_round.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char db_path[4096];

static lb_store *open_fresh(const char *name) { return tw_store_fresh(name, db_path, sizeof db_path); }

static lb_store *open_again(void)
{
    lb_store *s = NULL;
    return lb_store_open(db_path, &s) == LB_OK ? s : NULL;
}

/* a new queued task, created_ms apart so the queue's order is known */
static int insert_task(lb_store *s, char id[33], int64_t created_ms)
{
    if (lb_random_hex(id, 33, 16) != LB_OK)
        return LB_E_INTERNAL;
    lb_task_new t = {.id = id, .prompt = "count the rows", .model = "m", .max_turns = 3};
    (void)created_ms;
    int rc = lb_store_task_insert(s, &t);
    if (rc == LB_OK) {
        char sql[200];
        snprintf(sql, sizeof sql, "UPDATE tasks SET created_ms = %lld WHERE id = '%s'", (long long)created_ms, id);
        rc = tw_exec(db_path, sql);
    }
    return rc;
}

/* the one number sql answers, -1 on error */
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

static int renew(lb_store *s, const char *node, int64_t run)
{
    lb_node_lease l;
    int rc = lb_store_node_renew(s, node, run, 15000, 4, &l);
    free(l.left);
    return rc;
}

static void expire(const char *node)
{
    char sql[200];
    snprintf(sql, sizeof sql, "UPDATE nodes SET lease_expires_ms = 1000, seen_ms = 1000 WHERE name = '%s'", node);
    CHECK(tw_exec(db_path, sql) == LB_OK);
}

static int has_id(const lb_claim *c, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(c[i].id, id))
            return 1;
    return 0;
}

/* the task's status and reason */
static void task_status(lb_store *s, const char *id, char *status, size_t sz, char *reason, size_t rsz)
{
    lb_task t;
    status[0] = reason[0] = '\0';
    if (lb_store_task_load(s, id, &t) == LB_OK) {
        snprintf(status, sz, "%s", lb_task_status_name(t.status));
        snprintf(reason, rsz, "%s", t.reason ? t.reason : "");
        lb_task_free(&t);
    }
}

TEST(claims_take_each_pushed_task_once_oldest_first)
{
    lb_store *s = open_fresh("claim");
    CHECK(s != NULL);
    char ids[10][33];
    for (int i = 0; i < 10; i++)
        CHECK(insert_task(s, ids[i], 1000 + i) == LB_OK);
    /* 8 pushed; the last two are a local web's (never claimable) */
    for (int i = 0; i < 8; i++)
        CHECK(lb_store_queue_push(s, ids[i]) == LB_OK);
    CHECK(renew(s, "a", 1) == LB_OK && renew(s, "b", 1) == LB_OK);
    lb_claim c[16];
    size_t n = 0;
    CHECK(lb_store_queue_claim(s, "a", 3, c, &n) == LB_OK && n == 3);
    CHECK(n == 3 && has_id(c, n, ids[0]) && has_id(c, n, ids[1]) && has_id(c, n, ids[2]));
    CHECK(n == 3 && c[0].attempt == 1 && c[1].attempt == 1 && c[2].attempt == 1);
    lb_claim d[16];
    size_t m = 0;
    CHECK(lb_store_queue_claim(s, "b", 16, d, &m) == LB_OK && m == 5);
    for (size_t i = 0; i < m; i++)
        CHECK(!has_id(c, n, d[i].id) && strcmp(d[i].id, ids[8]) && strcmp(d[i].id, ids[9]));
    CHECK(lb_store_queue_claim(s, "a", 16, d, &m) == LB_OK && m == 0);
    /* a claimed task is not pushed again; a final one neither */
    CHECK(lb_store_task_end(s, ids[9], LB_TASK_CANCELLED, NULL, NULL) == LB_OK);
    CHECK(lb_store_queue_push(s, ids[9]) == LB_E_NOTFOUND);
    /* a pushed task cancelled before any claim leaves the queue */
    char extra[33];
    CHECK(insert_task(s, extra, 2000) == LB_OK && lb_store_queue_push(s, extra) == LB_OK);
    CHECK(lb_store_task_end(s, extra, LB_TASK_CANCELLED, "cancelled by the user", NULL) == LB_OK);
    CHECK(lb_store_queue_claim(s, "a", 16, d, &m) == LB_OK && m == 0);
    CHECK(count_of("SELECT COUNT(*) FROM tasks WHERE claimable = 1") == 0);
    CHECK(lb_store_queue_push(s, "0123456789abcdef0123456789abcdef") == LB_E_NOTFOUND);
    lb_store_close(s);
}

TEST(no_claim_without_a_live_lease)
{
    lb_store *s = open_fresh("lease");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_task(s, id, 5) == LB_OK && lb_store_queue_push(s, id) == LB_OK);
    lb_claim c[4];
    size_t n = 9;
    CHECK(lb_store_queue_claim(s, "ghost", 4, c, &n) == LB_OK && n == 0); /* never registered */
    CHECK(renew(s, "a", 1) == LB_OK);
    expire("a");
    CHECK(lb_store_queue_claim(s, "a", 4, c, &n) == LB_OK && n == 0);
    CHECK(renew(s, "a", 1) == LB_OK);
    CHECK(lb_store_queue_claim(s, "a", 4, c, &n) == LB_OK && n == 1 && !strcmp(c[0].id, id));
    /* the arguments are checked */
    CHECK(lb_store_queue_claim(s, "A", 4, c, &n) == LB_E_INVAL);
    CHECK(lb_store_queue_claim(s, "a.b", 4, c, &n) == LB_E_INVAL);
    CHECK(lb_store_queue_claim(s, "a", 0, c, &n) == LB_E_INVAL);
    CHECK(lb_store_queue_claim(s, "a", LB_QUEUE_CLAIM_MAX + 1, c, &n) == LB_E_INVAL);
    lb_node_lease l;
    CHECK(lb_store_node_renew(s, "a", 1, 999, 4, &l) == LB_E_INVAL);
    CHECK(lb_store_node_renew(s, "-a", 1, 15000, 4, &l) == LB_E_INVAL);
    CHECK(lb_node_name_valid("n1") && lb_node_name_valid("node-7") && !lb_node_name_valid(""));
    lb_store_close(s);
}

TEST(the_fence_refuses_a_stale_attempt_or_an_expired_lease)
{
    lb_store *s = open_fresh("fence");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_task(s, id, 5) == LB_OK && lb_store_queue_push(s, id) == LB_OK);
    CHECK(renew(s, "a", 1) == LB_OK);
    lb_claim c[1];
    size_t n = 0;
    CHECK(lb_store_queue_claim(s, "a", 1, c, &n) == LB_OK && n == 1);
    lb_store *agent = open_again();
    CHECK(agent && lb_store_set_fence(agent, "a", c[0].attempt) == LB_OK);
    CHECK(lb_store_set_fence(agent, "a", 0) == LB_E_INVAL);
    CHECK(lb_store_task_set_running(agent, id, 42) == LB_OK);
    int64_t seq = 0;
    CHECK(lb_store_event_append(agent, id, "model", "{\"turn\":1}", &seq) == LB_OK && seq > 0);
    lb_task_usage u0;
    memset(&u0, 0, sizeof u0);
    CHECK(lb_store_task_set_usage(agent, id, &u0) == LB_OK);
    /* the task was claimed again meanwhile (attempt 2): refused */
    CHECK(tw_exec(db_path, "UPDATE tasks SET attempt = attempt + 1") == LB_OK);
    CHECK(lb_store_event_append(agent, id, "model", "{\"turn\":2}", &seq) == LB_E_DENIED && seq == 0);
    CHECK(tw_exec(db_path, "UPDATE tasks SET attempt = attempt - 1") == LB_OK);
    CHECK(lb_store_event_append(agent, id, "model", "{\"turn\":2}", &seq) == LB_OK);
    /* another node's name is refused just the same */
    lb_store *other = open_again();
    CHECK(other && lb_store_set_fence(other, "b", c[0].attempt) == LB_OK);
    CHECK(lb_store_event_append(other, id, "model", "{}", &seq) == LB_E_DENIED);
    /* the node's lease expires: nothing more is written, not even the end */
    expire("a");
    CHECK(lb_store_event_append(agent, id, "model", "{\"turn\":3}", &seq) == LB_E_DENIED && seq == 0);
    CHECK(lb_store_task_end(agent, id, LB_TASK_SUCCEEDED, NULL, "42") == LB_E_DENIED);
    lb_task_usage u;
    memset(&u, 0, sizeof u);
    u.turns = 3;
    CHECK(lb_store_task_set_usage(agent, id, &u) == LB_E_DENIED);
    lb_artifact art = {.path = "out.txt", .size = 1, .mime = "text/plain", .sha256 = "ab"};
    CHECK(lb_store_artifacts_set(agent, id, &art, 1) == LB_E_DENIED);
    CHECK(lb_store_task_set_running(agent, id, 43) == LB_E_DENIED);
    /* the node renews after its lapse: its tasks end failed first, and
     * the agent's writes meet a final task */
    CHECK(renew(s, "a", 1) == LB_OK);
    CHECK(lb_store_event_append(agent, id, "model", "{\"turn\":3}", &seq) == LB_E_EXISTS);
    CHECK(lb_store_task_end(s, id, LB_TASK_CANCELLED, "stopped", NULL) == LB_E_EXISTS);
    lb_store_close(other);
    lb_store_close(agent);
    lb_store_close(s);
}

TEST(the_sweep_ends_a_lapsed_nodes_tasks_once)
{
    lb_store *s = open_fresh("sweep");
    CHECK(s != NULL);
    char ids[3][33];
    for (int i = 0; i < 3; i++)
        CHECK(insert_task(s, ids[i], 10 + i) == LB_OK && lb_store_queue_push(s, ids[i]) == LB_OK);
    CHECK(renew(s, "a", 1) == LB_OK && renew(s, "b", 1) == LB_OK);
    lb_claim c[3];
    size_t n = 0;
    CHECK(lb_store_queue_claim(s, "a", 2, c, &n) == LB_OK && n == 2);
    CHECK(lb_store_task_set_running(s, ids[0], 7) == LB_OK);
    char swept[LB_NODE_NAME_MAX + 1];
    size_t ended = 9;
    CHECK(lb_store_node_sweep(s, "b", swept, &ended) == LB_OK && !swept[0] && ended == 0); /* a is alive */
    expire("a");
    CHECK(lb_store_node_sweep(s, "a", swept, &ended) == LB_OK && !swept[0]); /* never itself */
    lb_store *s2 = open_again();
    CHECK(s2 && lb_store_node_sweep(s2, "b", swept, &ended) == LB_OK);
    CHECK_STR(swept, "a");
    CHECK(ended == 2);
    CHECK(lb_store_node_sweep(s, "c", swept, &ended) == LB_OK && !swept[0] && ended == 0); /* once */
    char st[16], reason[300];
    for (int i = 0; i < 2; i++) {
        task_status(s, ids[i], st, sizeof st, reason, sizeof reason);
        CHECK_STR(st, "failed");
        CHECK(strstr(reason, "node a stopped renewing its lease (last seen at 1970-01-01 00:00:01 UTC)") != NULL);
        CHECK(strstr(reason, "not run again") != NULL);
    }
    task_status(s, ids[2], st, sizeof st, reason, sizeof reason);
    CHECK_STR(st, "queued"); /* unclaimed: still waits for a node */
    /* a renewal makes the node live again; it is swept again only after
     * its next lapse */
    CHECK(renew(s, "a", 1) == LB_OK);
    CHECK(lb_store_node_sweep(s, "b", swept, &ended) == LB_OK && !swept[0]);
    lb_store_close(s2);
    lb_store_close(s);
}

TEST(a_restarted_node_ends_what_its_last_run_left)
{
    lb_store *s = open_fresh("restart");
    CHECK(s != NULL);
    char ids[2][33];
    for (int i = 0; i < 2; i++)
        CHECK(insert_task(s, ids[i], 10 + i) == LB_OK && lb_store_queue_push(s, ids[i]) == LB_OK);
    lb_node_lease l;
    CHECK(lb_store_node_renew(s, "a", 100, 15000, 4, &l) == LB_OK && !l.lapsed && l.expires_ms > lb_now_ms());
    free(l.left);
    lb_claim c[2];
    size_t n = 0;
    CHECK(lb_store_queue_claim(s, "a", 1, c, &n) == LB_OK && n == 1);
    CHECK(lb_store_task_set_pid(s, c[0].id, 4242) == LB_OK);
    CHECK(lb_store_node_renew(s, "a", 100, 15000, 4, &l) == LB_OK && !l.lapsed && l.nleft == 0); /* same run */
    free(l.left);
    CHECK(lb_store_node_renew(s, "a", 200, 15000, 4, &l) == LB_OK && l.lapsed); /* a new run */
    CHECK(l.nleft == 1 && !strcmp(l.left[0].id, c[0].id) && l.left[0].pid == 4242);
    free(l.left);
    char st[16], reason[300];
    task_status(s, c[0].id, st, sizeof st, reason, sizeof reason);
    CHECK_STR(st, "failed");
    CHECK(strstr(reason, "node a stopped renewing its lease") != NULL);
    /* its own lapse, seen at its next renewal, ends them too */
    CHECK(lb_store_queue_claim(s, "a", 1, c, &n) == LB_OK && n == 1);
    expire("a");
    CHECK(lb_store_node_renew(s, "a", 200, 15000, 4, &l) == LB_OK && l.lapsed && l.nleft == 1);
    free(l.left);
    CHECK(lb_store_node_remove(s, "a") == LB_OK && lb_store_node_remove(s, "a") == LB_E_NOTFOUND);
    /* the node's word on an exited agent ends only that claim's task */
    char t3[33];
    CHECK(insert_task(s, t3, 50) == LB_OK && lb_store_queue_push(s, t3) == LB_OK);
    CHECK(lb_store_node_renew(s, "a", 300, 15000, 4, &l) == LB_OK);
    free(l.left);
    CHECK(lb_store_queue_claim(s, "a", 1, c, &n) == LB_OK && n == 1 && !strcmp(c[0].id, t3));
    CHECK(lb_store_queue_end_attempt(s, t3, "a", c[0].attempt + 1, "gone") == LB_E_EXISTS);
    CHECK(lb_store_queue_end_attempt(s, t3, "b", c[0].attempt, "gone") == LB_E_EXISTS);
    task_status(s, t3, st, sizeof st, reason, sizeof reason);
    CHECK_STR(st, "queued");
    CHECK(lb_store_queue_end_attempt(s, t3, "a", c[0].attempt, "the agent process ended") == LB_OK);
    task_status(s, t3, st, sizeof st, reason, sizeof reason);
    CHECK_STR(st, "failed");
    CHECK_STR(reason, "the agent process ended");
    CHECK(lb_store_queue_end_attempt(s, t3, "a", c[0].attempt, "again") == LB_E_EXISTS);
    lb_store_close(s);
}

/* several nodes: the ended tasks of a node whose round still held its kept
 * sandbox (the agent died in it), for the node's start-up cleanup */
TEST(orphans_are_a_nodes_ended_tasks_with_a_sandbox_in_use)
{
    lb_store *s = open_fresh("orphans");
    CHECK(s != NULL);
    char ids[4][33];
    for (int i = 0; i < 4; i++)
        CHECK(insert_task(s, ids[i], 10 + i) == LB_OK && lb_store_queue_push(s, ids[i]) == LB_OK);
    CHECK(renew(s, "a", 100) == LB_OK && renew(s, "b", 100) == LB_OK);
    lb_claim c[4];
    size_t n = 0;
    CHECK(lb_store_queue_claim(s, "a", 3, c, &n) == LB_OK && n == 3);
    CHECK(lb_store_queue_claim(s, "b", 1, c + 3, &n) == LB_OK && n == 1);
    for (int i = 0; i < 4; i++)
        CHECK(lb_store_kept_set(s, c[i].id, "0123456789abcdef0123456789abcdef", "k") == LB_OK);
    lb_node_lease l;
    CHECK(lb_store_node_orphans(s, "a", &l) == LB_OK && l.nleft == 0); /* all still running */
    free(l.left);
    /* c0 ended in its round (dead agent); c1 ended after keeping it; c2 runs; c3 is b's */
    CHECK(lb_store_queue_end_attempt(s, c[0].id, "a", c[0].attempt, "gone") == LB_OK);
    CHECK(lb_store_kept_keep(s, c[1].id, lb_now_ms(), lb_now_ms() + 60000, 0) == LB_OK);
    CHECK(lb_store_queue_end_attempt(s, c[1].id, "a", c[1].attempt, "gone") == LB_OK);
    CHECK(lb_store_queue_end_attempt(s, c[3].id, "b", c[3].attempt, "gone") == LB_OK);
    CHECK(lb_store_node_orphans(s, "a", &l) == LB_OK && l.nleft == 1 && !strcmp(l.left[0].id, c[0].id) &&
          l.left[0].pid == 0);
    free(l.left);
    CHECK(lb_store_node_orphans(s, "b", &l) == LB_OK && l.nleft == 1 && !strcmp(l.left[0].id, c[3].id));
    free(l.left);
    CHECK(lb_store_kept_clear(s, c[0].id) == LB_OK);
    CHECK(lb_store_node_orphans(s, "a", &l) == LB_OK && l.nleft == 0); /* destroyed and forgotten */
    free(l.left);
    CHECK(lb_store_node_orphans(s, "-a", &l) == LB_E_INVAL && lb_store_node_orphans(NULL, "a", &l) == LB_E_INVAL);
    lb_store_close(s);
}

/* A v9 database (either engine) migrates to v10: its tasks keep their
 * rows, are not claimable, and the queue works. */
TEST(v9_database_migrates_to_the_queue)
{
    lb_store *s = open_fresh("v9");
    CHECK(s != NULL);
    char id[33];
    CHECK(insert_task(s, id, 5) == LB_OK);
    lb_store_close(s);
    /* v12's claims (store_down_claims.h) and v11's column first, then v10 */
    CHECK(tw_exec(db_path, lb_down_v15_fork_shares()) == LB_OK);
    CHECK(tw_exec(db_path, LB_DOWN_V14_API_SANDBOXES) == LB_OK);
    CHECK(tw_exec(db_path, lb_down_v13_tombstones()) == LB_OK);
    CHECK(tw_exec(db_path, LB_DOWN_V12_CLAIMS "ALTER TABLE tasks DROP COLUMN sandbox_node") == LB_OK);
    const char *down = tw_pg() ? "DROP TRIGGER tasks_queue_notify ON tasks; DROP FUNCTION lb_queue_notify();"
                                 "DROP TABLE web_secrets; DROP TABLE rate_slots; DROP TABLE nodes; DROP INDEX tasks_claimable; DROP INDEX tasks_node;"
                                 "ALTER TABLE tasks DROP COLUMN claimable; ALTER TABLE tasks DROP COLUMN node;"
                                 "ALTER TABLE tasks DROP COLUMN attempt; ALTER TABLE tasks DROP COLUMN claimed_ms;"
                                 "UPDATE meta SET value = '9' WHERE key = 'schema_version'"
                               : "DROP TABLE web_secrets; DROP TABLE rate_slots; DROP TABLE nodes; DROP INDEX tasks_claimable; DROP INDEX tasks_node;"
                                 "ALTER TABLE tasks DROP COLUMN claimable; ALTER TABLE tasks DROP COLUMN node;"
                                 "ALTER TABLE tasks DROP COLUMN attempt; ALTER TABLE tasks DROP COLUMN claimed_ms;"
                                 "UPDATE meta SET value = '9' WHERE key = 'schema_version'";
    CHECK(tw_exec(db_path, down) == LB_OK);
    s = open_again();
    CHECK(s != NULL);
    CHECK(renew(s, "a", 1) == LB_OK);
    lb_claim c[2];
    size_t n = 9;
    CHECK(lb_store_queue_claim(s, "a", 2, c, &n) == LB_OK && n == 0); /* the old task is not claimable */
    CHECK(lb_store_queue_push(s, id) == LB_OK);
    CHECK(lb_store_queue_claim(s, "a", 2, c, &n) == LB_OK && n == 1 && !strcmp(c[0].id, id) && c[0].attempt == 1);
    lb_store_close(s);
}

/* Ends task id (claimed by node as attempt) with the agent of that claim
 * having made its sandbox there, then begins its next round and queues it:
 * the round a web's message makes in queue mode. */
static void next_round(lb_store *s, const char *id, const char *node, int attempt)
{
    lb_store *agent = open_again();
    CHECK(agent && lb_store_set_fence(agent, node, attempt) == LB_OK);
    CHECK(lb_store_queue_set_home(agent, id) == LB_OK);
    CHECK(lb_store_task_end(agent, id, LB_TASK_SUCCEEDED, NULL, "done") == LB_OK);
    lb_store_close(agent);
    lb_round_new m = {.task_id = id, .prompt = "and now the columns"};
    int r = 0;
    CHECK(lb_store_round_begin(s, &m, &r) == LB_OK && r > 1);
    CHECK(lb_store_queue_push(s, id) == LB_OK);
}

/* several nodes (v11): a round is claimed by the node that holds its sandbox
 * while that node is live, even with another node idle; tasks behind it
 * are not held up; once the node is not live (lease lapsed, swept,
 * draining with capacity 0, gone) any node takes it, and the sentence
 * for the user says which way the node went. */
TEST(a_round_goes_back_to_the_node_of_its_sandbox)
{
    lb_store *s = open_fresh("home");
    CHECK(s != NULL);
    char id[33], other[33];
    CHECK(insert_task(s, id, 10) == LB_OK && lb_store_queue_push(s, id) == LB_OK);
    CHECK(renew(s, "a", 1) == LB_OK && renew(s, "b", 1) == LB_OK);
    lb_claim c[4];
    size_t n = 0;
    CHECK(lb_store_queue_claim(s, "a", 4, c, &n) == LB_OK && n == 1 && c[0].attempt == 1);
    char home[LB_NODE_NAME_MAX + 1];
    CHECK(lb_store_queue_home(s, id, home, sizeof home) == LB_OK && home[0] == '\0'); /* no sandbox yet */
    /* round 2: b asks first and gets only the task queued after it */
    next_round(s, id, "a", 1);
    CHECK(lb_store_queue_home(s, id, home, sizeof home) == LB_OK);
    CHECK_STR(home, "a");
    CHECK(insert_task(s, other, 20) == LB_OK && lb_store_queue_push(s, other) == LB_OK);
    CHECK(lb_store_queue_claim(s, "b", 4, c, &n) == LB_OK && n == 1 && !strcmp(c[0].id, other));
    CHECK(lb_store_queue_claim(s, "b", 4, c, &n) == LB_OK && n == 0);
    CHECK(lb_store_queue_claim(s, "a", 4, c, &n) == LB_OK && n == 1 && !strcmp(c[0].id, id) && c[0].attempt == 2);
    /* a stale agent (b's fence on a's claim) moves nothing; an unfenced one records nothing */
    lb_store *stale = open_again();
    CHECK(stale && lb_store_set_fence(stale, "b", 2) == LB_OK);
    CHECK(lb_store_queue_set_home(stale, id) == LB_E_DENIED);
    lb_store_close(stale);
    CHECK(lb_store_queue_set_home(s, id) == LB_OK);
    CHECK(lb_store_queue_home(s, id, home, sizeof home) == LB_OK);
    CHECK_STR(home, "a");
    /* round 3: a's lease lapsed (not swept yet): b takes it */
    next_round(s, id, "a", 2);
    expire("a");
    CHECK(lb_store_queue_claim(s, "b", 4, c, &n) == LB_OK && n == 1 && !strcmp(c[0].id, id) && c[0].attempt == 3);
    char why[200];
    CHECK(lb_store_node_gone_why(s, "a", why, sizeof why) == LB_OK);
    CHECK_STR(why, "it stopped renewing its lease; last seen at 1970-01-01 00:00:01 UTC");
    /* its agent made the sandbox on b: round 4 is b's; b drains (capacity
     * 0, lease held): a, back, takes it */
    next_round(s, id, "b", 3);
    CHECK(renew(s, "a", 2) == LB_OK);
    CHECK(lb_store_queue_claim(s, "a", 4, c, &n) == LB_OK && n == 0);
    lb_node_lease l;
    CHECK(lb_store_node_renew(s, "b", 1, 15000, 0, &l) == LB_OK);
    free(l.left);
    CHECK(lb_store_node_gone_why(s, "b", why, sizeof why) == LB_OK);
    CHECK_STR(why, "it is shutting down and takes no more work");
    CHECK(lb_store_queue_claim(s, "a", 4, c, &n) == LB_OK && n == 1 && c[0].attempt == 4);
    /* round 5, a's again: a swept, then gone from the table */
    next_round(s, id, "a", 4);
    CHECK(renew(s, "b", 1) == LB_OK);
    expire("a");
    char swept[LB_NODE_NAME_MAX + 1];
    size_t ended = 0;
    CHECK(lb_store_node_sweep(s, "b", swept, &ended) == LB_OK && !strcmp(swept, "a") && ended == 0);
    CHECK(tw_exec(db_path, "UPDATE nodes SET lease_expires_ms = lease_expires_ms + 999999999999 WHERE name = 'a'") ==
          LB_OK); /* swept but its lease looks held: still not live */
    CHECK(lb_store_node_gone_why(s, "a", why, sizeof why) == LB_OK);
    CHECK(strstr(why, "it stopped renewing its lease") == why);
    CHECK(lb_store_queue_claim(s, "b", 4, c, &n) == LB_OK && n == 1 && !strcmp(c[0].id, id) && c[0].attempt == 5);
    CHECK(lb_store_node_remove(s, "a") == LB_OK);
    CHECK(lb_store_node_gone_why(s, "a", why, sizeof why) == LB_OK);
    CHECK_STR(why, "it has stopped and left the cluster");
    /* the arguments are checked */
    CHECK(lb_store_queue_home(s, "nope", home, sizeof home) == LB_E_INVAL);
    CHECK(lb_store_queue_home(s, id, home, 8) == LB_E_INVAL);
    CHECK(lb_store_queue_home(s, "0123456789abcdef0123456789abcdef", home, sizeof home) == LB_E_NOTFOUND);
    CHECK(lb_store_node_gone_why(s, "-a", why, sizeof why) == LB_E_INVAL);
    CHECK(lb_store_queue_set_home(s, "nope") == LB_E_INVAL);
    lb_store_close(s);
}

/* A fork restores the source's saved states: it goes to the same node. */
TEST(a_fork_keeps_the_node_of_its_states)
{
    lb_store *s = open_fresh("forkhome");
    CHECK(s != NULL);
    char id[33], fork[33];
    CHECK(insert_task(s, id, 10) == LB_OK && lb_store_queue_push(s, id) == LB_OK);
    CHECK(renew(s, "a", 1) == LB_OK);
    lb_claim c[1];
    size_t n = 0;
    CHECK(lb_store_queue_claim(s, "a", 1, c, &n) == LB_OK && n == 1);
    next_round(s, id, "a", 1);
    CHECK(lb_store_task_end(s, id, LB_TASK_CANCELLED, "stopped", NULL) == LB_OK);
    CHECK(lb_random_hex(fork, sizeof fork, 16) == LB_OK);
    lb_fork f = {.src_id = id, .new_id = fork, .round = 1};
    CHECK(lb_store_task_fork(s, &f) == LB_OK);
    char home[LB_NODE_NAME_MAX + 1];
    CHECK(lb_store_queue_home(s, fork, home, sizeof home) == LB_OK);
    CHECK_STR(home, "a");
    lb_store_close(s);
}

/* A v10 database (either engine) migrates to v11: a task's last claim
 * becomes the node of its sandbox; a task no node ran has none. */
TEST(v10_database_migrates_to_sandbox_nodes)
{
    lb_store *s = open_fresh("v10");
    CHECK(s != NULL);
    char ran[33], local[33];
    CHECK(insert_task(s, ran, 5) == LB_OK && insert_task(s, local, 6) == LB_OK);
    lb_store_close(s);
    CHECK(tw_exec(db_path, lb_down_v15_fork_shares()) == LB_OK);
    CHECK(tw_exec(db_path, LB_DOWN_V14_API_SANDBOXES) == LB_OK);
    CHECK(tw_exec(db_path, lb_down_v13_tombstones()) == LB_OK);
    CHECK(tw_exec(db_path, LB_DOWN_V12_CLAIMS "ALTER TABLE tasks DROP COLUMN sandbox_node;"
                           "UPDATE meta SET value = '10' WHERE key = 'schema_version'") == LB_OK);
    char sql[200];
    snprintf(sql, sizeof sql, "UPDATE tasks SET node = 'n7', status = 'succeeded' WHERE id = '%s'", ran);
    CHECK(tw_exec(db_path, sql) == LB_OK);
    s = open_again();
    CHECK(s != NULL);
    CHECK(count_of("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'") == LB_STORE_SCHEMA_VERSION);
    char home[LB_NODE_NAME_MAX + 1];
    CHECK(lb_store_queue_home(s, ran, home, sizeof home) == LB_OK);
    CHECK_STR(home, "n7");
    CHECK(lb_store_queue_home(s, local, home, sizeof home) == LB_OK && home[0] == '\0');
    lb_store_close(s);
}

int main(void)
{
    if (tw_init())
        return 1;
    RUN(claims_take_each_pushed_task_once_oldest_first);
    RUN(no_claim_without_a_live_lease);
    RUN(the_fence_refuses_a_stale_attempt_or_an_expired_lease);
    RUN(the_sweep_ends_a_lapsed_nodes_tasks_once);
    RUN(a_restarted_node_ends_what_its_last_run_left);
    RUN(orphans_are_a_nodes_ended_tasks_with_a_sandbox_in_use);
    RUN(v9_database_migrates_to_the_queue);
    RUN(a_round_goes_back_to_the_node_of_its_sandbox);
    RUN(a_fork_keeps_the_node_of_its_states);
    RUN(v10_database_migrates_to_sandbox_nodes);
    if (tw_done())
        return 1;
    return testlib_done();
}
