/* API sandboxes across a restart of the web (docs/ARCHITECTURE.md, "The
 * sandbox API"): each one is created in sandboxd with a lease, so it
 * outlives the web's connections; the web keeps a record of it in
 * var/web/sandboxes/<id>.json (written atomically, removed with it); a
 * thread renews every lease over one connection of its own; and a new web
 * adopts the sandboxes of its records at start. A sandbox whose web is gone
 * for longer than sandbox_api_lease_s dies in sandboxd. */
#ifndef LB_SANDBOX_LEASES_H
#define LB_SANDBOX_LEASES_H

#include "common/config.h"
#include "common/status.h"
#include "sbxapi/sandbox_registry.h"

/* Makes the record folder, adopts the sandboxes of the records found
 * there into the registry (a record whose sandbox is gone or past its TTL
 * is removed; one past its TTL is destroyed), then starts the renewal
 * thread. Call once, after lb_sbx_registry_init, as the web's user.
 * LB_E_IO when the folder cannot be made (the API then keeps no sandbox
 * across a restart; the caller logs it and goes on). */
LB_MUST_CHECK int lb_sbx_leases_start(const lb_config *cfg);
/* Writes s's record (after its create succeeded). On failure s still
 * works but would not survive a restart: logged. */
void lb_sbx_lease_save(lb_sbx *s);
/* Removes the record of the API sandbox id (it was destroyed). */
void lb_sbx_lease_drop(const char *id);

#endif
