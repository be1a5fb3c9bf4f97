/* What store.c lends the store's other files (store_eval.c): the
 * connection, its write transactions and its error mapping, so that every
 * table of the one database is written the same way, and the schema of
 * the evaluations' tables for store.c's migration list. Not for anyone
 * outside server/store/. */
#ifndef LB_STORE_PRIV_H
#define LB_STORE_PRIV_H

#include "store/db.h"
#include "store/store.h"

/* The connection of s (store.c). */
lb_db *lb_store_db(lb_store *s);
/* The statements kept on that connection (store_sql.h), made at the first
 * use; NULL when out of memory (then nothing is kept). */
struct lb_sql_cache *lb_store_sql_cache(lb_store *s);
/* BEGIN IMMEDIATE; then the work, each failure going to one label, and
 * there lb_store_tx_end(s, rc): COMMIT when rc is LB_OK, else ROLLBACK;
 * returns the outcome (store.c). */
LB_MUST_CHECK int lb_store_tx_begin(lb_store *s);
LB_MUST_CHECK int lb_store_tx_end(lb_store *s, int rc);
/* Inside a write transaction: on PostgreSQL, waits for (and holds until
 * the end) the lock of owner's tasks, so that counting them and adding one
 * are a single step as under SQLite's write lock; nothing on SQLite or
 * for a NULL owner (store.c). */
LB_MUST_CHECK int lb_store_owner_lock(lb_store *s, const char *owner);
/* The database layer's answer src (db.h) as an lb_status (LB_OK for a row
 * or done), logged with what when it is an error (store.c). */
LB_MUST_CHECK int lb_store_sql_err(lb_store *s, int src, const char *what);

/* several nodes: ends task id (not final yet) as status with reason, and its
 * "done" event, inside the caller's write transaction (the sweep of a
 * lapsed node ends all its tasks in one): LB_E_EXISTS when it was final
 * already, LB_E_NOTFOUND; LB_E_INVAL outside a transaction (store.c). */
LB_MUST_CHECK int lb_store_task_end_in_tx(lb_store *s, const char *id, lb_task_status status, const char *reason);

/* Schema v7: the evaluations' tables (store_eval.c). */
extern const char lb_schema_v7_evals[];
/* Schema v8: the rollout groups' tables (store_rollout.c). */
extern const char lb_schema_v8_rollouts[];
/* Schema v9: rounds, kept sandboxes, shares (store_round.c). */
extern const char lb_schema_v9_rounds[];
/* PostgreSQL's schema, starting at version 9 (store_schema_pg.c). */
extern const char lb_schema_pg_v9[];
/* v15: forks share their source's events (store_round.c) */
extern const char lb_schema_v15_fork_shares[];
extern const char lb_schema_pg_v15_fork_shares[];

#endif
