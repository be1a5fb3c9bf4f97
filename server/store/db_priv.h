/* What db.c shares with its two engines, db_sqlite.c and db_pg.c: the
 * connection and statement structs and each engine's entry points. Not
 * for anyone outside db*.c. */
#ifndef LB_STORE_DB_PRIV_H
#define LB_STORE_DB_PRIV_H

#include <libpq-fe.h>
#include <stdint.h>
#include <sqlite3.h>

#include "store/db.h"

/* pg_type.h's OIDs, stable since PostgreSQL 7 */
#define LB_OID_INT8 20
#define LB_OID_TEXT 25
#define LB_OID_FLOAT8 701

struct lb_db {
    int pg;
    sqlite3 *lite;
    PGconn *conn;
    char *url;     /* kept to reconnect (never logged as is) */
    int in_tx;
    char listen[64];    /* PostgreSQL: the channel listened to ("" none) */
    unsigned gen;       /* PostgreSQL: +1 per connection made (statements prepared on an older one are gone) */
    unsigned next_name; /* PostgreSQL: the next prepared statement's number */
    int64_t changes;
    char errmsg[512];
};

struct lb_db_stmt {
    lb_db *db;
    sqlite3_stmt *lite;
    /* PostgreSQL: the rewritten text, the bound values as text, the result
     * of the last run read row by row */
    char *sql;
    int is_read;   /* a SELECT: safe to run again after a reconnect */
    int keep;      /* prepared on the server once per connection (lb_db_prepare's keep) */
    unsigned prepared_gen; /* the connection it was prepared on (0: none) */
    char name[24];
    Oid prepared_types[LB_DB_PARAMS_MAX];
    int nparams;
    uint64_t used; /* the $n the text holds (bit n-1) */
    char *vals[LB_DB_PARAMS_MAX];
    Oid types[LB_DB_PARAMS_MAX];
    PGresult *res;
    int row;       /* the current row; -1 before the first step */
    int ran;
};

/* Keeps a sentence for lb_db_errmsg. */
void lb_db_set_err(lb_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* db_sqlite.c */
LB_MUST_CHECK int lb_dbl_open(lb_db *db, const char *path);
int lb_dbl_map(lb_db *db, int src);
LB_MUST_CHECK int lb_dbl_exec(lb_db *db, const char *sql);

/* db_pg.c */
LB_MUST_CHECK int lb_dbp_open(lb_db *db, const char *url);
LB_MUST_CHECK int lb_dbp_exec(lb_db *db, const char *sql, int retry_safe);
int lb_dbp_step(lb_db_stmt *st);
int lb_dbp_bind(lb_db_stmt *st, int i, const char *text, Oid type);
LB_MUST_CHECK int lb_dbp_listen(lb_db *db, const char *channel);
LB_MUST_CHECK int lb_dbp_wait_notify(lb_db *db, int timeout_ms, int *woke);

/* db_sql.c: SQLite's ?N and ? as PostgreSQL's $n, outside quotes; at most
 * LB_DB_SQL_MAX bytes and LB_DB_PARAMS_MAX parameters. *nparams: the
 * highest number used; *used: bit n-1 set for each $n the text holds
 * (SQLite lets a statement skip numbers, PostgreSQL needs their types).
 * LB_E_TOOBIG over a cap, LB_E_INVAL for ?0. */
LB_MUST_CHECK int lb_db_sql_to_pg(const char *sql, char **out, int *nparams, uint64_t *used);

#endif
