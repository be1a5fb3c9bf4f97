/* The store's statements: kept per connection, one per SQL text, and the
 * small helpers around them; the contract is store_sql.h. */
#include "store/store_sql.h"

#include "common/status.h"
#include "store/store_priv.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lb_sql_pick(lb_store *s, const char *lite, const char *pg)
{
    return lb_db_is_pg(lb_store_db(s)) ? pg : lite;
}

/* Kept statements, found by their SQL's hash and then its text. */
struct lb_sql_cache {
    size_t n;
    uint64_t hash[LB_SQL_CACHE_MAX];
    char *sql[LB_SQL_CACHE_MAX];
    lb_db_stmt *st[LB_SQL_CACHE_MAX];
};

static uint64_t sql_hash(const char *sql)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)sql; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

lb_sql_cache *lb_sql_cache_new(void)
{
    return calloc(1, sizeof(lb_sql_cache));
}

void lb_sql_cache_free(lb_sql_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        lb_db_finalize(c->st[i]);
        free(c->sql[i]);
    }
    free(c);
}

int lb_sql_prep(lb_store *s, const char *sql, lb_db_stmt **st)
{
    *st = NULL;
    lb_sql_cache *c = lb_store_sql_cache(s);
    uint64_t h = sql_hash(sql);
    for (size_t i = 0; c && i < c->n; i++) {
        if (c->hash[i] == h && !strcmp(c->sql[i], sql)) {
            lb_db_reset(c->st[i]);
            lb_db_clear_bindings(c->st[i]);
            *st = c->st[i];
            return LB_OK;
        }
    }
    /* a new text: kept while there is room (and memory for its copy) */
    char *copy = c && c->n < LB_SQL_CACHE_MAX ? strdup(sql) : NULL;
    int rc = lb_db_prepare(lb_store_db(s), sql, copy != NULL, st);
    if (rc != LB_OK) {
        free(copy);
        *st = NULL;
        return lb_store_sql_err(s, rc, "prepare a statement");
    }
    if (copy) {
        c->hash[c->n] = h;
        c->sql[c->n] = copy;
        c->st[c->n] = *st;
        c->n++;
    }
    return LB_OK;
}

void lb_sql_done(lb_store *s, lb_db_stmt *st)
{
    if (!st)
        return;
    lb_sql_cache *c = lb_store_sql_cache(s);
    for (size_t i = 0; c && i < c->n; i++) {
        if (c->st[i] == st) {
            lb_db_reset(st);
            lb_db_clear_bindings(st);
            return;
        }
    }
    lb_db_finalize(st);
}

int lb_sql_bind_text(lb_db_stmt *st, int i, const char *v)
{
    return lb_db_bind_text(st, i, v);
}

/* Runs st (no rows), hands it back; none_rc when it changed nothing. */
int lb_sql_run_write(lb_store *s, lb_db_stmt *st, const char *what, int none_rc)
{
    int src = lb_db_step(st);
    int rc = src == LB_DB_DONE ? LB_OK : lb_store_sql_err(s, src == LB_DB_ROW ? LB_E_INTERNAL : src, what);
    if (rc == LB_OK && lb_db_changes(lb_store_db(s)) == 0)
        rc = none_rc;
    lb_sql_done(s, st);
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

int lb_sql_ids(lb_store *s, const char *sql, const char *what, char ***ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    lb_db_stmt *st = NULL;
    int rc = lb_sql_prep(s, sql, &st);
    if (rc)
        return rc;
    char **v = NULL;
    size_t k = 0, cap = 0;
    int src;
    while ((src = lb_db_step(st)) == LB_DB_ROW) {
        if (k == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = LB_E_NOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        if (!(v[k] = lb_sql_col_dup(st, 0))) {
            rc = LB_E_NOMEM;
            break;
        }
        k++;
    }
    if (!rc && src != LB_DB_DONE)
        rc = lb_store_sql_err(s, src, what);
    lb_sql_done(s, st);
    if (rc) {
        for (size_t i = 0; i < k; i++)
            free(v[i]);
        free(v);
        return rc;
    }
    *ids = v;
    *n = k;
    return LB_OK;
}
