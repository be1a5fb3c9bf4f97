/* The SQL that takes a store back from the nodes' API sandboxes (schema
 * v14, store/store_sandbox.h) to v13, the same on both engines: the tests
 * that migrate an older database build it from a current one and undo the
 * newest versions first. */
#ifndef LB_TEST_STORE_DOWN_API_SANDBOXES_H
#define LB_TEST_STORE_DOWN_API_SANDBOXES_H

#define LB_DOWN_V14_API_SANDBOXES "DROP TABLE api_sandboxes;"

#endif
