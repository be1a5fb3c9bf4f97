/* Small helpers for the store's statements; the contract is store_sql.h. */
#include "store/store_sql.h"

#include "common/status.h"
#include "store/store_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lb_sql_pick(lb_store *s, const char *lite, const char *pg)
{
    return lb_db_is_pg(lb_store_db(s)) ? pg : lite;
}

int lb_sql_prep(lb_store *s, const char *sql, lb_db_stmt **st)
{
    int rc = lb_db_prepare(lb_store_db(s), sql, 0, st);
    if (rc != LB_OK) {
        *st = NULL;
        return lb_store_sql_err(s, rc, "prepare a statement");
    }
    return LB_OK;
}

int lb_sql_bind_text(lb_db_stmt *st, int i, const char *v)
{
    return lb_db_bind_text(st, i, v);
}

/* Runs st (no rows), finalizes it; none_rc when it changed nothing. */
int lb_sql_run_write(lb_store *s, lb_db_stmt *st, const char *what, int none_rc)
{
    int src = lb_db_step(st);
    int rc = src == LB_DB_DONE ? LB_OK : lb_store_sql_err(s, src == LB_DB_ROW ? LB_E_INTERNAL : src, what);
    if (rc == LB_OK && lb_db_changes(lb_store_db(s)) == 0)
        rc = none_rc;
    lb_db_finalize(st);
    return rc;
}

char *lb_sql_col_dup(lb_db_stmt *st, int i)
{
    if (lb_db_col_is_null(st, i))
        return NULL;
    return strdup(lb_db_col_text(st, i));
}

int64_t lb_sql_col_ms(lb_db_stmt *st, int i)
{
    return lb_db_col_is_null(st, i) ? -1 : lb_db_col_int64(st, i);
}

void lb_sql_col_copy(lb_db_stmt *st, int i, char *out, size_t outsz)
{
    snprintf(out, outsz, "%s", lb_db_col_text(st, i));
}
