/* The SQL that takes a store back from shared fork events (schema v15,
 * store/store_round.c) to v14, on the engine the test runs on: the tests
 * that migrate an older database build it from a current one and undo
 * the newest versions first. A test's database holds no fork then, so
 * every event row is its task's own. */
#ifndef LB_TEST_STORE_DOWN_FORK_SHARES_H
#define LB_TEST_STORE_DOWN_FORK_SHARES_H

#include "store_where.h"

static inline const char *lb_down_v15_fork_shares(void)
{
    return tw_pg() ? "DROP TRIGGER tasks_events_handover ON tasks; DROP FUNCTION lb_events_handover();"
                     " DROP TRIGGER tasks_events_own ON tasks; DROP FUNCTION lb_events_own();"
                     " DROP VIEW events; DROP FUNCTION lb_events_insert(); DROP TABLE event_shares;"
                     " DROP INDEX event_rows_round; ALTER TABLE event_rows RENAME TO events;"
                   : "DROP TRIGGER tasks_events_handover; DROP TRIGGER tasks_events_own; DROP VIEW events;"
                     " DROP TABLE event_shares; DROP INDEX event_rows_round; ALTER TABLE event_rows RENAME TO events;";
}

#endif
