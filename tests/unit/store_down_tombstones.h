/* The SQL that takes a store back from the tombstones of deleted tasks
 * (schema v13, store/store_tombstone.h) to v12, on the engine the test
 * runs on: the tests that migrate an older database build it from a
 * current one and undo the newest versions first. */
#ifndef LB_TEST_STORE_DOWN_TOMBSTONES_H
#define LB_TEST_STORE_DOWN_TOMBSTONES_H

#include "store_where.h"

static inline const char *lb_down_v13_tombstones(void)
{
    return tw_pg() ? "DROP TRIGGER tasks_tombstone ON tasks; DROP FUNCTION lb_task_tombstone();"
                     " DROP TABLE task_tombstones;"
                   : "DROP TRIGGER tasks_tombstone; DROP TABLE task_tombstones;";
}

#endif
