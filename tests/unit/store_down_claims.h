/* The SQL that takes a store back from the runners' claims (schema v12,
 * store/store_claim.h) to the version before, on either engine: the tests
 * that migrate an older database build it from a current one and undo the
 * newest versions first. */
#ifndef LB_TEST_STORE_DOWN_CLAIMS_H
#define LB_TEST_STORE_DOWN_CLAIMS_H

#define LB_DOWN_V12_CLAIMS                                                                                             \
    "ALTER TABLE evals DROP COLUMN runner; ALTER TABLE evals DROP COLUMN runner_gen;"                                  \
    "ALTER TABLE evals DROP COLUMN runner_expires_ms; ALTER TABLE eval_runs DROP COLUMN start_task;"                   \
    "ALTER TABLE rollouts DROP COLUMN runner; ALTER TABLE rollouts DROP COLUMN runner_gen;"                            \
    "ALTER TABLE rollouts DROP COLUMN runner_expires_ms; ALTER TABLE rollout_samples DROP COLUMN start_task;"

#endif
