/* Pause, resume and snapshots of API sandboxes (follow-ups,
 * handlers_sandbox_pause.c); routes in router.c:
 *
 *   POST   /api/sandboxes/{id}/pause      sandboxd freeze: no CPU, memory kept
 *   POST   /api/sandboxes/{id}/resume     sandboxd thaw
 *   POST   /api/sandboxes/{id}/snapshot   sandboxd save -> {snapshot_id, bytes, files}
 *   GET    /api/snapshots                 the API's snapshots
 *   DELETE /api/snapshots/{id}            one of them
 *
 * and POST /api/sandboxes with "snapshot": "<snapshot_id>" starts from one
 * (handlers_sandboxes.c). Snapshots belong to the sandbox API (its token):
 * they are sandboxd states of the web's uid named "api-<snapshot_id>",
 * apart from the states other parts of the web keep. */
#ifndef LB_WEB_HANDLERS_SANDBOX_PAUSE_H
#define LB_WEB_HANDLERS_SANDBOX_PAUSE_H

#include <stddef.h>

#include "common/status.h"
#include "web/request.h"
#include "sbxapi/sandbox_registry.h"

#define LB_SNAPSHOT_STATE_MAX 40 /* "api-" + 32 hex + NUL */
#define LB_SNAPSHOT_PREFIX "api-" /* a snapshot's sandboxd state name: this, then its 32 hex */

/* The sandboxd state name of snapshot id (32 hex) into out. */
void lb_snapshot_state_name(const char *id, char *out, size_t outsz);
/* The HTTP status and sentence (into msg) for a create from snapshot id that
 * sandboxd refused with rc:
 * LB_E_NOTFOUND 404, LB_E_TOOBIG 413 (its files do not fit the disk asked
 * for), LB_E_INVAL 422 (a damaged snapshot) or 400 (of another image: err
 * says which), with err. */
LB_MUST_CHECK int lb_snapshot_restore_error(const char *id, int rc, const char *err, char *msg, size_t msgsz);

/* Freezes (pause 1) or thaws sandbox s under its op lock and records it:
 * LB_OK, or sandboxd's status with a sentence in err (LB_E_NOTFOUND: the
 * sandbox went). same (may be NULL): set when it already was so, and then
 * nothing is asked of sandboxd (E2B's pause of a paused one, a connect of
 * a running one). */
LB_MUST_CHECK int lb_sbx_pause_set(lb_sbx *s, int pause, int *same, char *err, size_t errsz);
/* E2B's pause without memory (keepMemory: false): every process of s but
 * sandboxd's own (init and the persistent shell) is killed, then s is
 * paused as lb_sbx_pause_set does; its files stay, and a resume finds no
 * process of before (E2B's reboot). Answers as lb_sbx_pause_set; LB_E_BUSY
 * while a native exec runs in the shell. */
LB_MUST_CHECK int lb_sbx_pause_drop(lb_sbx *s, int *same, char *err, size_t errsz);

void lb_h_sbx_pause(lb_req *r);
void lb_h_sbx_resume(lb_req *r);
void lb_h_sbx_snapshot(lb_req *r);
void lb_h_snapshots_list(lb_req *r);
/* r->sandbox holds the {snapshot} id (the router's 32-hex segment) */
void lb_h_snapshot_delete(lb_req *r);

#endif
