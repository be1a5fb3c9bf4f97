/* A sandbox's network gateway as the web sees it (netrecord.c): the record
 * of its connections, and its policy replaced at run time. Both live in
 * <var_dir>/netgw/<sandboxd id>/, which sandboxd makes for the gateway's
 * user (sandboxd/sandbox_egress.c) and the gateway writes
 * (netgw/netgw_main.c). Used by the sandbox API and the task API. */
#ifndef LB_COMMON_NETRECORD_H
#define LB_COMMON_NETRECORD_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"

#define LB_NETRECORD_READ_MAX (8u << 20) /* bytes of record read for one answer */

/* {policy, connections: [...], truncated} of sandbox sbx_id into *out
 * (the caller frees it). connections are the record's lines in order, at
 * most LB_NETRECORD_READ_MAX bytes of them (truncated then true). LB_OK;
 * LB_E_NOTFOUND when the sandbox has no gateway; LB_E_NOMEM. */
LB_MUST_CHECK int lb_netrecord_read(const char *var_dir, const char *sbx_id, cJSON **out, char *err, size_t errsz);
/* Replaces the policy of sandbox sbx_id's gateway with text (canonical,
 * already checked) and tells the gateway (SIGHUP): it applies to the
 * next name and connection. LB_OK; LB_E_NOTFOUND; LB_E_IO. */
LB_MUST_CHECK int lb_netrecord_set_policy(const char *var_dir, const char *sbx_id, const char *text, char *err,
                                          size_t errsz);

/* The agent's note of which sandbox (sandboxd id) runs task task_id with
 * a gateway: <log dir>/agent-<task>.netgw, read by
 * lb_netrecord_task_sandbox. A failure is logged: the task runs on, only
 * its record cannot be found through the task. */
struct lb_config;
void lb_netrecord_note_task(const struct lb_config *cfg, const char *task_id, const char *sbx_id);
/* The sandboxd id noted for task_id into out (33 bytes): 1, or 0 when the
 * task's sandbox had no gateway. */
int lb_netrecord_task_sandbox(const struct lb_config *cfg, const char *task_id, char *out, size_t outsz);
/* The agent, at the end of each round, before its sandbox ends (sandboxd
 * then removes the gateway's folder): the record of sandbox sbx_id as GET
 * answers it, written into the task's own files,
 * <artifacts_dir>/<task>/network.json (atomically; it goes with the task).
 * A failure is logged: the task's answer stands, only the record after the
 * sandbox's end is lost. */
void lb_netrecord_keep_task(const struct lb_config *cfg, const char *task_id, const char *sbx_id);
/* A task's record: its sandbox's live one while the gateway's folder is
 * there (the sandbox runs, or waits kept for a follow-up), else the copy
 * lb_netrecord_keep_task made. LB_OK with *out (the caller frees it);
 * LB_E_NOTFOUND (no gateway, or no copy) with a sentence; LB_E_NOMEM. */
LB_MUST_CHECK int lb_netrecord_task_read(const struct lb_config *cfg, const char *task_id, cJSON **out, char *err,
                                         size_t errsz);

#endif
