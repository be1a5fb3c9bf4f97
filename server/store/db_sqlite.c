/* The SQLite engine of the store's database layer; the contract is db.h. */
#include "store/db_priv.h"

#include "common/log.h"
#include "common/status.h"

#include <errno.h>
#include <sqlite3.h>

#define LB_DB_BUSY_MS 10000

/* SQLite's result src as an lb_status (LB_OK for OK, ROW, DONE), the
 * sentence kept for lb_db_errmsg. */
int lb_dbl_map(lb_db *db, int src)
{
    int ext = sqlite3_extended_errcode(db->lite);
    switch (src & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return LB_OK;
    default:
        break;
    }
    lb_db_set_err(db, "%s", sqlite3_errmsg(db->lite));
    switch (src & 0xff) {
    case SQLITE_NOMEM:
        return LB_E_NOMEM;
    case SQLITE_TOOBIG:
        return LB_E_TOOBIG;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        lb_db_set_err(db, "database busy for %d ms", LB_DB_BUSY_MS);
        return LB_E_TIMEOUT;
    case SQLITE_CONSTRAINT:
        if (ext == SQLITE_CONSTRAINT_PRIMARYKEY || ext == SQLITE_CONSTRAINT_UNIQUE)
            return LB_E_EXISTS;
        if (ext == SQLITE_CONSTRAINT_FOREIGNKEY)
            return LB_E_NOTFOUND;
        return LB_E_INVAL;
    case SQLITE_FULL:
        return LB_E_NOSPACE;
    case SQLITE_IOERR:
        if (sqlite3_system_errno(db->lite) == ENOSPC || sqlite3_system_errno(db->lite) == EDQUOT) {
            lb_db_set_err(db, "%s (the disk is full)", sqlite3_errmsg(db->lite));
            return LB_E_NOSPACE;
        }
        return LB_E_IO;
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
        return LB_E_IO;
    default:
        return LB_E_INTERNAL;
    }
}

int lb_dbl_exec(lb_db *db, const char *sql)
{
    char *msg = NULL;
    int src = sqlite3_exec(db->lite, sql, NULL, NULL, &msg);
    if (src == SQLITE_OK)
        return LB_OK;
    int rc = lb_dbl_map(db, src);
    if (msg && (src & 0xff) != SQLITE_BUSY && (src & 0xff) != SQLITE_LOCKED)
        lb_db_set_err(db, "'%.60s': %s", sql, msg);
    sqlite3_free(msg);
    return rc;
}

int lb_dbl_open(lb_db *db, const char *path)
{
    int src = sqlite3_open_v2(path, &db->lite,
                              SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW, NULL);
    if (src != SQLITE_OK) {
        lb_error("store: cannot open the database %s: %s", path,
                 db->lite ? sqlite3_errmsg(db->lite) : sqlite3_errstr(src));
        return LB_E_IO;
    }
    sqlite3_extended_result_codes(db->lite, 1);
    /* set before anything that may need a lock, including journal_mode */
    sqlite3_busy_timeout(db->lite, LB_DB_BUSY_MS);
    /* WAL: readers (SSE streams) never block writers (agents).
     * synchronous=NORMAL is crash-safe in WAL mode; only the last commits
     * before a power loss may be lost, never consistency. */
    const char *const pragmas[] = {"PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL",
                                   "PRAGMA foreign_keys = ON"};
    for (size_t i = 0; i < sizeof pragmas / sizeof pragmas[0]; i++) {
        int rc = lb_dbl_exec(db, pragmas[i]);
        if (rc) {
            lb_error("store: %s: %s", path, db->errmsg);
            return rc;
        }
    }
    return LB_OK;
}
