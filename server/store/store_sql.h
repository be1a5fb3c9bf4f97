/* Helpers the store's table files (store_eval.c, store_rollout.c) share
 * for statements prepared per call: prepare, bind, run a write, read a
 * column. Not for anyone outside server/store/. */
#ifndef LB_STORE_SQL_H
#define LB_STORE_SQL_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/db.h"
#include "store/store.h"

/* lite on SQLite, pg on PostgreSQL: a statement the dialects write
 * differently (db.h). */
const char *lb_sql_pick(lb_store *s, const char *lite, const char *pg);
/* Prepares sql on s's connection (*st NULL on failure, logged). */
LB_MUST_CHECK int lb_sql_prep(lb_store *s, const char *sql, lb_db_stmt **st);
/* Binds v as text, or NULL when v is NULL; an lb_status. */
int lb_sql_bind_text(lb_db_stmt *st, int i, const char *v);
/* Runs st (no rows) and finalizes it; none_rc when it changed nothing. */
LB_MUST_CHECK int lb_sql_run_write(lb_store *s, lb_db_stmt *st, const char *what, int none_rc);
/* Column i as a malloc'd string, NULL for SQL NULL. */
char *lb_sql_col_dup(lb_db_stmt *st, int i);
/* Column i as milliseconds, -1 for SQL NULL. */
int64_t lb_sql_col_ms(lb_db_stmt *st, int i);
/* Column i copied into out ("" for NULL), cut to outsz. */
void lb_sql_col_copy(lb_db_stmt *st, int i, char *out, size_t outsz);

#endif
