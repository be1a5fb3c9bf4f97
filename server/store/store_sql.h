/* Helpers every file of the store shares for its statements: the one way
 * to prepare them (kept per connection, one per SQL text, and handed back
 * after each use), bind, run a write, read a column. Not for anyone
 * outside server/store/. */
#ifndef LB_STORE_SQL_H
#define LB_STORE_SQL_H

#include <stddef.h>
#include <stdint.h>

#define LB_SQL_CACHE_MAX 256

#include "common/status.h"
#include "store/db.h"
#include "store/store.h"

/* lite on SQLite, pg on PostgreSQL: a statement the dialects write
 * differently (db.h). */
const char *lb_sql_pick(lb_store *s, const char *lite, const char *pg);
/* The statements a connection keeps, one per SQL text (lb_sql_prep). */
typedef struct lb_sql_cache lb_sql_cache;
/* An empty cache; NULL when out of memory. */
lb_sql_cache *lb_sql_cache_new(void);
/* Finalizes every statement kept and frees the cache (NULL: no-op). */
void lb_sql_cache_free(lb_sql_cache *c);

/* The statement for sql on s's connection, reset and with no bindings:
 * the one kept for the same text, else prepared now and kept (up to
 * LB_SQL_CACHE_MAX texts; past that prepared for this use only). *st NULL
 * on failure, logged. Hand it back with lb_sql_done. */
LB_MUST_CHECK int lb_sql_prep(lb_store *s, const char *sql, lb_db_stmt **st);
/* Hands st back after its use: reset (its read ends, its bindings go) when
 * it is kept, finalized when it is not. NULL: no-op. */
void lb_sql_done(lb_store *s, lb_db_stmt *st);
/* Binds v as text, or NULL when v is NULL; an lb_status. */
int lb_sql_bind_text(lb_db_stmt *st, int i, const char *v);
/* Runs st (no rows) and hands it back (lb_sql_done); none_rc when it
 * changed nothing. */
LB_MUST_CHECK int lb_sql_run_write(lb_store *s, lb_db_stmt *st, const char *what, int none_rc);
/* The first column of every row of sql (no parameters), in order, as
 * strings: *ids malloc'd, each string too (caller frees both); nothing on
 * failure (what names the query in the log). */
LB_MUST_CHECK int lb_sql_ids(lb_store *s, const char *sql, const char *what, char ***ids, size_t *n);
/* Column i as a malloc'd string, NULL for SQL NULL. */
char *lb_sql_col_dup(lb_db_stmt *st, int i);
/* Column i as milliseconds, -1 for SQL NULL. */
int64_t lb_sql_col_ms(lb_db_stmt *st, int i);
/* Column i copied into out ("" for NULL), cut to outsz. */
void lb_sql_col_copy(lb_db_stmt *st, int i, char *out, size_t outsz);

#endif
