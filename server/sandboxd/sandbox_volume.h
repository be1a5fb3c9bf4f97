/* E2B's volumes in sandboxd: the store and the content API of
 * volumes/volume_store.h and volumes/volume_fs.h behind the "volume"
 * request, and "volume_mount", which binds a volume into a sandbox.
 *
 * Only sandboxd touches a volume: its content is owned by the images' ids
 * (the sandboxes' users), which the unprivileged web cannot write, and the
 * web never names a host path: it names a volume id, which sandboxd finds
 * under its own <var_dir>/volumes. Who may reach a volume (its owner, the
 * shared token, its content token) is the web's to check
 * (e2b/e2b_volume.c); sandboxd keeps each owner within its caps
 * (volume_max_per_owner, volume_max_mb_per_owner). */
#ifndef LBSD_SANDBOX_VOLUME_H
#define LBSD_SANDBOX_VOLUME_H

#include <stddef.h>

#include "common/config.h"
#include "sandboxd/objects.h"
#include "sandbox/rpc.h"

/* volume {action: create|list|get|delete|stat|list_dir|mkdir|read|write|
 * remove|chmeta, ...} (include/llmbox/sandbox.h), answered on c. */
void lbsd_volume_request(lbsd_conn *c, const lb_config *cfg, const lbsd_req *req, const char *data, size_t dlen);
/* Opens the store now, on the loop's thread, when it is not open yet (a
 * volume request on a worker, volume_jobs.h, then never opens it): 1 when
 * open, 0 when it cannot be (the request itself says why). */
int lbsd_volume_store_ready(const lb_config *cfg);
/* volume_mount {id, volume, path}: the volume's data/ bound read-write at
 * path inside sandbox sb (made when missing; never through a link), through
 * an idmapped mount of sb's ids. */
void lbsd_volume_mount(lbsd_conn *c, const lb_config *cfg, lbsd_sandbox *sb, const lbsd_req *req);

/* Whether path (absolute, as the client wrote it) may be a mount point:
 * cleaned into rel (LB_PATH_MAX + 1 bytes, no leading '/'), not "/", not
 * under /proc, /sys or /dev, no "..". 1 if so, else 0 with a sentence. */
int lbsd_volume_path_ok(const char *path, char *rel, size_t relsz, char *msg, size_t msgsz);

#endif
