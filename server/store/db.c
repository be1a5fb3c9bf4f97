/* The store's database layer: one API over SQLite and PostgreSQL; the
 * contract is db.h, the engines are db_sqlite.c and db_pg.c. */
#include "store/db.h"

#include "store/db_priv.h"

#include "common/log.h"
#include "common/status.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void lb_db_set_err(lb_db *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(db->errmsg, sizeof db->errmsg, fmt, ap);
    va_end(ap);
}

int lb_db_open(const char *where, lb_db **out)
{
    *out = NULL;
    if (!where || !*where)
        return LB_E_INVAL;
    lb_db *db = calloc(1, sizeof *db);
    if (!db)
        return LB_E_NOMEM;
    int rc;
    if (lb_db_where_is_url(where)) {
        db->pg = 1;
        rc = lb_dbp_open(db, where);
        if (rc) {
            char shown[512];
            lb_db_where_redact(where, shown, sizeof shown);
            lb_error("store: cannot open the database %s: %s", shown, db->errmsg);
        }
    } else {
        rc = lb_dbl_open(db, where);
    }
    if (rc) {
        lb_db_close(db);
        return rc;
    }
    *out = db;
    return LB_OK;
}

void lb_db_close(lb_db *db)
{
    if (!db)
        return;
    if (db->lite)
        sqlite3_close_v2(db->lite);
    if (db->conn)
        PQfinish(db->conn);
    free(db->url);
    free(db);
}

int lb_db_is_pg(const lb_db *db) { return db->pg; }

const char *lb_db_file(const lb_db *db)
{
    return db->pg ? NULL : sqlite3_db_filename(db->lite, "main");
}

int lb_db_exec(lb_db *db, const char *sql)
{
    return db->pg ? lb_dbp_exec(db, sql, 0) : lb_dbl_exec(db, sql);
}

int lb_db_begin(lb_db *db)
{
    int rc = db->pg ? lb_dbp_exec(db, "BEGIN", 1) : lb_dbl_exec(db, "BEGIN IMMEDIATE");
    if (rc == LB_OK)
        db->in_tx = 1;
    return rc;
}

int lb_db_commit(lb_db *db)
{
    int rc = db->pg ? lb_dbp_exec(db, "COMMIT", 0) : lb_dbl_exec(db, "COMMIT");
    if (rc == LB_OK)
        db->in_tx = 0;
    return rc;
}

void lb_db_rollback(lb_db *db)
{
    if (db->pg) {
        if (db->in_tx && PQstatus(db->conn) == CONNECTION_OK)
            LB_IGNORE(lb_dbp_exec(db, "ROLLBACK", 0)); /* a dropped connection rolled back already */
    } else if (!sqlite3_get_autocommit(db->lite)) {
        /* harmless when SQLite already rolled back on its own */
        sqlite3_exec(db->lite, "ROLLBACK", NULL, NULL, NULL);
    }
    db->in_tx = 0;
}

int lb_db_in_tx(const lb_db *db)
{
    return db->pg ? db->in_tx : !sqlite3_get_autocommit(db->lite);
}

/* A statement that only reads: SELECT, or VALUES */
static int sql_is_read(const char *sql)
{
    while (isspace((unsigned char)*sql))
        sql++;
    return !strncasecmp(sql, "SELECT", 6);
}

/* PostgreSQL: the type of parameter i+1 while it is NULL: inferred from
 * the text (0), or text for a number the text skips (SQLite allows gaps,
 * PostgreSQL must type every one) */
static Oid pg_unbound_type(const lb_db_stmt *st, int i)
{
    return st->used & ((uint64_t)1 << i) ? 0 : LB_OID_TEXT;
}

int lb_db_prepare(lb_db *db, const char *sql, int keep, lb_db_stmt **out)
{
    *out = NULL;
    lb_db_stmt *st = calloc(1, sizeof *st);
    if (!st)
        return LB_E_NOMEM;
    st->db = db;
    int rc = LB_OK;
    if (db->pg) {
        rc = lb_db_sql_to_pg(sql, &st->sql, &st->nparams, &st->used);
        if (rc)
            lb_db_set_err(db, "a statement over the caps (%d bytes, %d parameters)", LB_DB_SQL_MAX,
                          LB_DB_PARAMS_MAX);
        st->is_read = sql_is_read(sql);
        st->keep = keep;
        st->row = -1;
        for (int i = 0; i < st->nparams; i++)
            st->types[i] = pg_unbound_type(st, i);
    } else {
        int src = sqlite3_prepare_v3(db->lite, sql, -1, keep ? SQLITE_PREPARE_PERSISTENT : 0, &st->lite, NULL);
        rc = lb_dbl_map(db, src);
    }
    if (rc) {
        lb_db_finalize(st);
        return rc;
    }
    *out = st;
    return LB_OK;
}

void lb_db_finalize(lb_db_stmt *st)
{
    if (!st)
        return;
    sqlite3_finalize(st->lite);
    PQclear(st->res);
    for (int i = 0; i < st->nparams; i++)
        free(st->vals[i]);
    free(st->sql);
    free(st);
}

void lb_db_reset(lb_db_stmt *st)
{
    if (st->lite) {
        sqlite3_reset(st->lite);
        return;
    }
    PQclear(st->res);
    st->res = NULL;
    st->ran = 0;
    st->row = -1;
}

void lb_db_clear_bindings(lb_db_stmt *st)
{
    if (st->lite) {
        sqlite3_clear_bindings(st->lite);
        return;
    }
    for (int i = 0; i < st->nparams; i++) {
        free(st->vals[i]);
        st->vals[i] = NULL;
        st->types[i] = pg_unbound_type(st, i);
    }
}

int lb_db_bind_text(lb_db_stmt *st, int i, const char *v)
{
    if (st->lite) {
        int src = v ? sqlite3_bind_text(st->lite, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st->lite, i);
        return src == SQLITE_OK ? LB_OK : src == SQLITE_RANGE ? LB_E_INVAL : LB_E_NOMEM;
    }
    return lb_dbp_bind(st, i, v, LB_OID_TEXT);
}

int lb_db_bind_int64(lb_db_stmt *st, int i, int64_t v)
{
    if (st->lite)
        return sqlite3_bind_int64(st->lite, i, v) == SQLITE_OK ? LB_OK : LB_E_INVAL;
    char t[32];
    snprintf(t, sizeof t, "%" PRId64, v);
    return lb_dbp_bind(st, i, t, LB_OID_INT8);
}

int lb_db_bind_int(lb_db_stmt *st, int i, int v) { return lb_db_bind_int64(st, i, v); }

int lb_db_bind_double(lb_db_stmt *st, int i, double v)
{
    if (st->lite)
        return sqlite3_bind_double(st->lite, i, v) == SQLITE_OK ? LB_OK : LB_E_INVAL;
    char t[64];
    snprintf(t, sizeof t, "%.17g", v);
    return lb_dbp_bind(st, i, t, LB_OID_FLOAT8);
}

int lb_db_bind_null(lb_db_stmt *st, int i)
{
    if (st->lite)
        return sqlite3_bind_null(st->lite, i) == SQLITE_OK ? LB_OK : LB_E_INVAL;
    return lb_dbp_bind(st, i, NULL, 0);
}

int lb_db_listen(lb_db *db, const char *channel)
{
    size_t n = strlen(channel);
    if (!db->pg || !n || n >= sizeof db->listen || strspn(channel, "abcdefghijklmnopqrstuvwxyz_") != n)
        return LB_E_INVAL;
    return lb_dbp_listen(db, channel);
}

int lb_db_wait_notify(lb_db *db, int timeout_ms, int *woke)
{
    *woke = 0;
    if (!db->pg || !db->listen[0])
        return LB_E_INVAL;
    return lb_dbp_wait_notify(db, timeout_ms, woke);
}

int lb_db_param_count(lb_db_stmt *st)
{
    return st->lite ? sqlite3_bind_parameter_count(st->lite) : st->nparams;
}

int lb_db_step(lb_db_stmt *st)
{
    if (!st->lite)
        return lb_dbp_step(st);
    int src = sqlite3_step(st->lite);
    if (src == SQLITE_ROW)
        return LB_DB_ROW;
    if (src == SQLITE_DONE) {
        st->db->changes = sqlite3_changes(st->db->lite);
        return LB_DB_DONE;
    }
    return lb_dbl_map(st->db, src);
}

/* PostgreSQL's value of column i in the current row, NULL for SQL NULL or
 * no such row or column */
static const char *pg_val(lb_db_stmt *st, int i)
{
    if (!st->res || st->row < 0 || st->row >= PQntuples(st->res) || i < 0 || i >= PQnfields(st->res) ||
        PQgetisnull(st->res, st->row, i))
        return NULL;
    return PQgetvalue(st->res, st->row, i);
}

const char *lb_db_col_text(lb_db_stmt *st, int i)
{
    const char *t = st->lite ? (const char *)sqlite3_column_text(st->lite, i) : pg_val(st, i);
    return t ? t : "";
}

int64_t lb_db_col_int64(lb_db_stmt *st, int i)
{
    if (st->lite)
        return sqlite3_column_int64(st->lite, i);
    const char *t = pg_val(st, i);
    if (!t)
        return 0;
    if (t[0] == 't' && !t[1])
        return 1; /* a boolean */
    return strtoll(t, NULL, 10);
}

int lb_db_col_int(lb_db_stmt *st, int i) { return (int)lb_db_col_int64(st, i); }

double lb_db_col_double(lb_db_stmt *st, int i)
{
    if (st->lite)
        return sqlite3_column_double(st->lite, i);
    const char *t = pg_val(st, i);
    return t ? strtod(t, NULL) : 0;
}

int lb_db_col_is_null(lb_db_stmt *st, int i)
{
    if (st->lite)
        return sqlite3_column_type(st->lite, i) == SQLITE_NULL;
    return pg_val(st, i) == NULL;
}

int lb_db_col_bytes(lb_db_stmt *st, int i)
{
    if (st->lite)
        return sqlite3_column_bytes(st->lite, i);
    const char *t = pg_val(st, i);
    return t ? PQgetlength(st->res, st->row, i) : 0;
}

int64_t lb_db_changes(lb_db *db) { return db->changes; }

const char *lb_db_errmsg(lb_db *db) { return db->errmsg; }
