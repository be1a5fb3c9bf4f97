/*
 * The tables of schema v1 as release v1 wrote them: the starting point of
 * the store's migration tests (test_store.c from v1, test_store_round.c
 * from v8), which build an old database by hand and open it.
 */
#ifndef LB_TEST_STORE_V1_H
#define LB_TEST_STORE_V1_H

#define LB_TEST_STORE_V1_TABLES \
    "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);" \
    "INSERT INTO meta VALUES('schema_version','1');" \
    "CREATE TABLE tasks(id TEXT PRIMARY KEY NOT NULL, status TEXT NOT NULL, reason TEXT," \
    " prompt TEXT NOT NULL, model TEXT, max_turns INTEGER NOT NULL DEFAULT 0," \
    " created_ms INTEGER NOT NULL, started_ms INTEGER, finished_ms INTEGER, pid INTEGER," \
    " turns INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0," \
    " completion_tokens INTEGER NOT NULL DEFAULT 0, answer TEXT, inputs TEXT NOT NULL DEFAULT '[]');" \
    "CREATE TABLE events(task_id TEXT NOT NULL, seq INTEGER NOT NULL, ts_ms INTEGER NOT NULL," \
    " type TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY(task_id, seq)) WITHOUT ROWID;" \
    "CREATE TABLE artifacts(task_id TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL," \
    " mime TEXT NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY(task_id, path)) WITHOUT ROWID;"

#endif
