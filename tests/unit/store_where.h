/* Where the store's unit tests keep their databases: a SQLite file in a
 * fresh temporary folder (the default), or the PostgreSQL database that
 * LLMBOX_TEST_DB_URL names (tests/integration/test_store_pg.py starts one
 * and runs these same tests against it), emptied before each test. The
 * assertions are the same for both; a test about SQLite's own files or
 * its older schemas asks tw_pg() and says so. */
#ifndef LB_TEST_STORE_WHERE_H
#define LB_TEST_STORE_WHERE_H

#include "store/db.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tw_dir[] = "/tmp/llmbox-test-store-XXXXXX";

/* 1 when the tests run against PostgreSQL */
static inline int tw_pg(void)
{
    const char *u = getenv("LLMBOX_TEST_DB_URL");
    return u && *u;
}

/* Runs sql on the database at where (a test's own changes behind the
 * store's back); an lb_status. */
static inline int tw_exec(const char *where, const char *sql)
{
    lb_db *db = NULL;
    int rc = lb_db_open(where, &db);
    if (rc == LB_OK)
        rc = lb_db_exec(db, sql);
    lb_db_close(db);
    return rc;
}

/* Makes the folder; 0 on success. */
static inline int tw_init(void)
{
    if (!mkdtemp(tw_dir)) {
        perror("mkdtemp");
        return -1;
    }
    return 0;
}

/* out: where a test named name keeps its store: a new file, or the
 * PostgreSQL database with nothing in it. */
static inline void tw_fresh(const char *name, char *out, size_t outsz)
{
    if (tw_pg()) {
        snprintf(out, outsz, "%s", getenv("LLMBOX_TEST_DB_URL"));
        if (tw_exec(out, "DROP SCHEMA public CASCADE; CREATE SCHEMA public") != LB_OK)
            fprintf(stderr, "store_where: could not empty %s\n", name);
        return;
    }
    snprintf(out, outsz, "%s/%s.db", tw_dir, name);
}

/* A store opened on a fresh database for a test named name (tw_fresh;
 * a SQLite file left by an earlier run of the same name removed first),
 * its path or URL in path; NULL when it does not open. */
static inline lb_store *tw_store_fresh(const char *name, char *path, size_t pathsz)
{
    tw_fresh(name, path, pathsz);
    if (!tw_pg())
        unlink(path);
    lb_store *s = NULL;
    if (lb_store_open(path, &s) != LB_OK) {
        lb_store_close(s);
        return NULL;
    }
    return s;
}

/* Removes the folder; 0 on success. */
static inline int tw_done(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tw_dir);
    return system(cmd) != 0 ? -1 : 0;
}

#endif
