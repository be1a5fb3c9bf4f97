/* The PostgreSQL engine of the store's database layer (libpq); the
 * contract is db.h.
 *
 * The store's kept statements (store.c's table) are prepared on the
 * server once per connection and run with PQexecPrepared; a connection
 * made again prepares them again at their next use (db->gen). Others run
 * with PQexecParams. Values go as text with their type (text, int8,
 * float8; NULL as unknown), results come back as text.
 *
 * A dropped connection: when nothing was sent (the connection was already
 * bad), the next statement reconnects first. When a statement fails
 * because the server went away, it runs once more after a reconnect only
 * if that is safe: a SELECT, a BEGIN, or any statement the server refused
 * with "shutting down" (57P01-57P03: it did not run). A write whose outcome
 * is unknown, and anything inside a transaction (lost with the
 * connection), answers LB_E_UNAVAILABLE: the caller sees it, nothing is
 * silently dropped or done twice. */
#include "store/db_priv.h"

#include "common/log.h"
#include "common/status.h"

#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every statement gives up after this long (the web answers 503) rather
 * than holding a worker thread; a lock is waited for at most as long. The
 * URL may set its own (options=-c statement_timeout=...). */
#define LB_PG_OPTIONS "-c statement_timeout=30000 -c lock_timeout=10000 -c client_min_messages=warning"
#define LB_PG_CONNECT_TIMEOUT "5"

static void pg_quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg; /* notices (e.g. "relation already exists, skipping") are not errors */
}

static int pg_connect(lb_db *db)
{
    const char *const keys[] = {"connect_timeout", "options", "application_name", "dbname", NULL};
    const char *const vals[] = {LB_PG_CONNECT_TIMEOUT, LB_PG_OPTIONS, "llmbox", db->url, NULL};
    if (db->conn)
        PQfinish(db->conn);
    /* expand_dbname: the URL is read as a whole connection string; its
     * settings win over the defaults before it */
    db->conn = PQconnectdbParams(keys, vals, 1);
    if (!db->conn) {
        lb_db_set_err(db, "out of memory");
        return LB_E_NOMEM;
    }
    if (PQstatus(db->conn) != CONNECTION_OK) {
        const char *m = PQerrorMessage(db->conn);
        lb_db_set_err(db, "%.*s", (int)strcspn(m, "\n"), m);
        if (strstr(m, "authentication") || strstr(m, "password") || strstr(m, "role") ||
            strstr(m, "permission denied"))
            return LB_E_DENIED;
        if (strstr(m, "does not exist"))
            return LB_E_NOTFOUND;
        return LB_E_UNAVAILABLE;
    }
    PQsetNoticeProcessor(db->conn, pg_quiet, NULL);
    db->in_tx = 0;
    db->gen++;
    if (db->listen[0]) {
        /* the channel is checked (lb_db_listen): no quoting needed */
        char sql[96];
        snprintf(sql, sizeof sql, "LISTEN %s", db->listen);
        PGresult *r = PQexec(db->conn, sql);
        int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok) {
            lb_db_set_err(db, "LISTEN failed: %s", PQerrorMessage(db->conn));
            return LB_E_UNAVAILABLE;
        }
    }
    return LB_OK;
}

int lb_dbp_open(lb_db *db, const char *url)
{
    char *err = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &err);
    if (!opts) {
        lb_db_set_err(db, "not a PostgreSQL URL: %.*s", err ? (int)strcspn(err, "\n") : 0, err ? err : "");
        PQfreemem(err);
        return LB_E_INVAL;
    }
    PQconninfoFree(opts);
    db->url = strdup(url);
    if (!db->url)
        return LB_E_NOMEM;
    return pg_connect(db);
}

/* The connection broke (or is broken): no SQLSTATE, or class 08, or the
 * server shutting down. */
static int pg_conn_lost(lb_db *db, const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (PQstatus(db->conn) == CONNECTION_BAD)
        return 1;
    return state && (!strncmp(state, "08", 2) || !strncmp(state, "57P0", 4));
}

/* The server said it did not run the statement (it is shutting down). */
static int pg_not_run(const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return state && !strncmp(state, "57P0", 4);
}

static int pg_map(lb_db *db, const PGresult *res)
{
    const char *m = res ? PQresultErrorMessage(res) : PQerrorMessage(db->conn);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    lb_db_set_err(db, "%.*s", (int)strcspn(m ? m : "", "\n"), m ? m : "");
    if (pg_conn_lost(db, res))
        return LB_E_UNAVAILABLE;
    if (!state)
        return LB_E_INTERNAL;
    if (!strcmp(state, "23505"))
        return LB_E_EXISTS;
    if (!strcmp(state, "23503"))
        return LB_E_NOTFOUND;
    if (!strncmp(state, "23", 2) || !strncmp(state, "22", 2))
        return LB_E_INVAL;
    if (!strcmp(state, "57014") || !strcmp(state, "55P03") || !strncmp(state, "40", 2))
        return LB_E_TIMEOUT; /* statement timeout, lock timeout, serialization: try again */
    if (!strcmp(state, "53100"))
        return LB_E_NOSPACE;
    if (!strcmp(state, "53200"))
        return LB_E_NOMEM;
    if (!strcmp(state, "54000"))
        return LB_E_TOOBIG;
    if (!strncmp(state, "53", 2))
        return LB_E_UNAVAILABLE; /* too many connections */
    return LB_E_INTERNAL;
}

/* Before sending: a connection known to be broken is made again, which is
 * safe (nothing was sent) unless a transaction was open on it. */
static int pg_ready(lb_db *db)
{
    /* An idle connection that does not LISTEN has nothing to read. When
     * it has, the server spoke first: it is closing the connection (a
     * restart, an administrator) and said so. Noticing that now, before
     * anything is sent, turns an unknown outcome later into a safe
     * reconnect now. One poll(2) per statement. */
    struct pollfd p = {.fd = PQsocket(db->conn), .events = POLLIN};
    if (PQstatus(db->conn) == CONNECTION_OK && p.fd >= 0 && poll(&p, 1, 0) > 0) {
        /* a listening connection is sent notifications while idle: they
         * wait in libpq (lb_db_wait_notify) and the connection goes on */
        if (PQconsumeInput(db->conn) && db->listen[0] && PQstatus(db->conn) == CONNECTION_OK)
            return LB_OK;
        if (!db->in_tx) {
            lb_warn("store: PostgreSQL closed an idle connection; connecting again");
            return pg_connect(db);
        }
        PQfinish(db->conn);
        db->conn = NULL;
    }
    if (db->conn && PQstatus(db->conn) == CONNECTION_OK)
        return LB_OK;
    if (db->in_tx) {
        db->in_tx = 0;
        lb_db_set_err(db, "the connection to PostgreSQL was lost inside a transaction");
        return LB_E_UNAVAILABLE;
    }
    return pg_connect(db);
}

/* Runs once, and once more after a reconnect when retry_safe (or the
 * server said it did not run it) and no transaction was lost. The result
 * is *out on success. */
static int pg_run(lb_db *db, int retry_safe, PGresult *(*send)(void *), void *arg, PGresult **out)
{
    *out = NULL;
    for (int attempt = 0;; attempt++) {
        int rc = pg_ready(db);
        if (rc)
            return rc;
        PGresult *res = send(arg);
        ExecStatusType es = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
        if (es == PGRES_COMMAND_OK || es == PGRES_TUPLES_OK) {
            *out = res;
            return LB_OK;
        }
        rc = pg_map(db, res);
        int lost = rc == LB_E_UNAVAILABLE && pg_conn_lost(db, res);
        int not_run = pg_not_run(res);
        PQclear(res);
        if (!lost)
            return rc;
        int tx_lost = db->in_tx;
        db->in_tx = 0;
        if (attempt > 0 || tx_lost || !(retry_safe || not_run))
            return rc;
        lb_warn("store: the connection to PostgreSQL was lost (%s); connecting again", db->errmsg);
        int rc2 = pg_connect(db);
        if (rc2)
            return rc2;
    }
}

struct pg_exec_arg {
    lb_db *db;
    const char *sql;
};

static PGresult *pg_send_exec(void *p)
{
    struct pg_exec_arg *a = p;
    return PQexec(a->db->conn, a->sql);
}

int lb_dbp_exec(lb_db *db, const char *sql, int retry_safe)
{
    struct pg_exec_arg a = {db, sql};
    PGresult *res = NULL;
    int rc = pg_run(db, retry_safe, pg_send_exec, &a, &res);
    if (rc == LB_OK) {
        db->changes = strtoll(PQcmdTuples(res), NULL, 10);
        PQclear(res);
    }
    return rc;
}

/* A kept statement is prepared on the server once per connection, with
 * the types of its values as bound then, and prepared again (a new name)
 * when a later use binds a value of another type (NULLs fit any type). */
static int pg_needs_prepare(const lb_db_stmt *st)
{
    if (st->prepared_gen != st->db->gen)
        return 1;
    for (int i = 0; i < st->nparams; i++)
        if (st->vals[i] && st->types[i] != st->prepared_types[i])
            return 1;
    return 0;
}

static PGresult *pg_send_stmt(void *p)
{
    lb_db_stmt *st = p;
    PGconn *c = st->db->conn;
    if (!st->keep)
        return PQexecParams(c, st->sql, st->nparams, st->types, (const char *const *)st->vals, NULL, NULL, 0);
    if (pg_needs_prepare(st)) {
        snprintf(st->name, sizeof st->name, "lb%u", ++st->db->next_name);
        PGresult *r = PQprepare(c, st->name, st->sql, st->nparams, st->types);
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
            return r;
        PQclear(r);
        st->prepared_gen = st->db->gen;
        memcpy(st->prepared_types, st->types, sizeof st->types);
    }
    return PQexecPrepared(c, st->name, st->nparams, (const char *const *)st->vals, NULL, NULL, 0);
}

int lb_dbp_step(lb_db_stmt *st)
{
    if (!st->ran) {
        PQclear(st->res);
        st->res = NULL;
        int rc = pg_run(st->db, st->is_read, pg_send_stmt, st, &st->res);
        if (rc)
            return rc;
        st->ran = 1;
        st->row = -1;
        if (PQresultStatus(st->res) == PGRES_COMMAND_OK) {
            st->db->changes = strtoll(PQcmdTuples(st->res), NULL, 10);
            return LB_DB_DONE;
        }
        /* a write with RETURNING: the rows it changed */
        st->db->changes = PQntuples(st->res);
    }
    if (st->res && st->row + 1 < PQntuples(st->res)) {
        st->row++;
        return LB_DB_ROW;
    }
    return LB_DB_DONE;
}

int lb_dbp_bind(lb_db_stmt *st, int i, const char *text, Oid type)
{
    if (i < 1 || i > st->nparams)
        return LB_E_INVAL;
    free(st->vals[i - 1]);
    st->vals[i - 1] = NULL;
    /* a number the text skips (SQLite allows it) still needs a type */
    st->types[i - 1] = st->used & ((uint64_t)1 << (i - 1)) ? 0 : LB_OID_TEXT;
    if (text) {
        st->vals[i - 1] = strdup(text);
        if (!st->vals[i - 1])
            return LB_E_NOMEM;
        st->types[i - 1] = type;
    }
    return LB_OK;
}

int lb_dbp_listen(lb_db *db, const char *channel)
{
    snprintf(db->listen, sizeof db->listen, "%s", channel);
    char sql[96];
    snprintf(sql, sizeof sql, "LISTEN %s", channel);
    int rc = lb_dbp_exec(db, sql, 1);
    if (rc)
        db->listen[0] = '\0';
    return rc;
}

/* Takes every notification libpq holds; 1 when there was one. */
static int pg_drain_notifies(lb_db *db)
{
    int any = 0;
    PGnotify *n;
    while ((n = PQnotifies(db->conn))) {
        PQfreemem(n);
        any = 1;
    }
    return any;
}

int lb_dbp_wait_notify(lb_db *db, int timeout_ms, int *woke)
{
    if (PQstatus(db->conn) != CONNECTION_OK) {
        /* down: made again (it listens again); what came meanwhile is unknown */
        int rc = pg_connect(db);
        *woke = rc == LB_OK;
        return rc;
    }
    if (pg_drain_notifies(db)) { /* read during an earlier statement */
        *woke = 1;
        return LB_OK;
    }
    /* the second look (no wait) finds the end of a connection whose
     * server said goodbye in the first read: libpq takes that sentence
     * as a notice and only the next read sees the connection closed */
    for (int i = 0; i < 2; i++) {
        struct pollfd p = {.fd = PQsocket(db->conn), .events = POLLIN};
        if (p.fd < 0 || poll(&p, 1, i ? 0 : timeout_ms) <= 0)
            return LB_OK;
        if (!PQconsumeInput(db->conn) || PQstatus(db->conn) != CONNECTION_OK) {
            lb_warn("store: the listening connection to PostgreSQL was lost; connecting again");
            int rc = pg_connect(db);
            *woke = rc == LB_OK;
            return rc;
        }
        if ((*woke = pg_drain_notifies(db)))
            return LB_OK;
    }
    return LB_OK;
}
