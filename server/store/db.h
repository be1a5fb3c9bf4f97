/* The store's database layer: one small API over two engines, SQLite (the
 * embedded default, a file) and PostgreSQL through libpq (when the store's
 * location is a postgresql:// URL). The store's files write their SQL once
 * where the dialects agree, with SQLite's `?N` / `?` placeholders (rewritten
 * to `$n` for PostgreSQL, db_sql.c), and ask lb_db_is_pg where they do not.
 *
 * Steps answer LB_DB_ROW, LB_DB_DONE or an lb_status; every error is mapped
 * to the stable codes here, once: busy or locked → LB_E_TIMEOUT, the server
 * gone or restarting → LB_E_UNAVAILABLE (the web answers both with 503 and
 * Retry-After), a unique or primary key → LB_E_EXISTS, a foreign key →
 * LB_E_NOTFOUND, another constraint → LB_E_INVAL, a full disk →
 * LB_E_NOSPACE. The engine's sentence is kept for lb_db_errmsg.
 *
 * A connection is one thread's (as SQLite's were): the web opens one per
 * worker thread, each agent its own. Not thread-safe. */
#ifndef LB_STORE_DB_H
#define LB_STORE_DB_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

typedef struct lb_db lb_db;
typedef struct lb_db_stmt lb_db_stmt;

/* lb_db_step's answers besides an lb_status (all below 100) */
#define LB_DB_ROW 100
#define LB_DB_DONE 101

#define LB_DB_SQL_MAX 65536 /* one statement's text, for the placeholder rewrite */
#define LB_DB_PARAMS_MAX 64 /* parameters of one statement */

/* 1 when where names a PostgreSQL database (postgresql:// or postgres://). */
int lb_db_where_is_url(const char *where);
/* where with any password (user:PASSWORD@ or password=) replaced by "***",
 * for messages: credentials are never logged. */
void lb_db_where_redact(const char *where, char *out, size_t outsz);

/* Opens where: a SQLite file (created if missing; WAL, foreign keys) or a
 * PostgreSQL URL (connected, statement_timeout set). A failure is logged
 * with the location redacted: LB_E_INVAL (a malformed URL), LB_E_IO (a
 * file that cannot be opened), LB_E_UNAVAILABLE (no server answers),
 * LB_E_DENIED (the server refused the role or password). */
LB_MUST_CHECK int lb_db_open(const char *where, lb_db **out);
void lb_db_close(lb_db *db);
/* 1 for PostgreSQL, 0 for SQLite. */
int lb_db_is_pg(const lb_db *db);
/* The SQLite file's path; NULL for PostgreSQL. */
const char *lb_db_file(const lb_db *db);

/* Runs sql (several statements separated by ';', no parameters). */
LB_MUST_CHECK int lb_db_exec(lb_db *db, const char *sql);
/* Write transactions. SQLite takes the write lock up front (BEGIN
 * IMMEDIATE); PostgreSQL begins READ COMMITTED and the store locks the
 * rows it changes. A BEGIN that finds the connection dropped reconnects
 * and begins again (nothing was lost). */
LB_MUST_CHECK int lb_db_begin(lb_db *db);
LB_MUST_CHECK int lb_db_commit(lb_db *db);
/* Harmless when no transaction is open. */
void lb_db_rollback(lb_db *db);
/* 1 while a transaction is open. */
int lb_db_in_tx(const lb_db *db);

/* Prepares sql (placeholders ?N or ?). keep: the statement is kept and
 * reused (reset between uses). */
LB_MUST_CHECK int lb_db_prepare(lb_db *db, const char *sql, int keep, lb_db_stmt **out);
void lb_db_finalize(lb_db_stmt *st);
/* Back to before the first step, bindings kept. */
void lb_db_reset(lb_db_stmt *st);
void lb_db_clear_bindings(lb_db_stmt *st);
/* Binds parameter i (1-based); v NULL binds SQL NULL. The value is copied.
 * An lb_status (LB_E_INVAL for an index out of range). */
int lb_db_bind_text(lb_db_stmt *st, int i, const char *v);
int lb_db_bind_int64(lb_db_stmt *st, int i, int64_t v);
int lb_db_bind_int(lb_db_stmt *st, int i, int v);
int lb_db_bind_double(lb_db_stmt *st, int i, double v);
int lb_db_bind_null(lb_db_stmt *st, int i);
/* PostgreSQL's LISTEN on this connection (channel: [a-z_], at most 63),
 * made again with every reconnect; LB_E_INVAL on SQLite, which has no
 * notifications. */
LB_MUST_CHECK int lb_db_listen(lb_db *db, const char *channel);
/* Waits up to timeout_ms for a notification of the channel listened to;
 * *woke 1 when one came (or the connection was made again: what was
 * missed meanwhile is unknown), else 0. An lb_status. */
LB_MUST_CHECK int lb_db_wait_notify(lb_db *db, int timeout_ms, int *woke);
/* The highest parameter number of st's text. */
int lb_db_param_count(lb_db_stmt *st);
/* Runs the statement (the first call) and moves to its next row:
 * LB_DB_ROW, LB_DB_DONE or an lb_status. A read that finds the connection
 * dropped reconnects and runs once more; a write outside a transaction
 * whose outcome is unknown answers LB_E_UNAVAILABLE, never retried. */
int lb_db_step(lb_db_stmt *st);
/* The current row's column i: NULL reads as "" / 0. */
const char *lb_db_col_text(lb_db_stmt *st, int i);
int64_t lb_db_col_int64(lb_db_stmt *st, int i);
int lb_db_col_int(lb_db_stmt *st, int i);
double lb_db_col_double(lb_db_stmt *st, int i);
int lb_db_col_is_null(lb_db_stmt *st, int i);
int lb_db_col_bytes(lb_db_stmt *st, int i);
/* Rows the last write of db changed. */
int64_t lb_db_changes(lb_db *db);
/* The engine's sentence for the last error ("" when none). */
const char *lb_db_errmsg(lb_db *db);

#endif
