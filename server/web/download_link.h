/* Signed download links (download_link.c): downloads nginx serves without
 * the backend. Who gets them: artifact_access.c. */
#ifndef LB_WEB_DOWNLOAD_LINK_H
#define LB_WEB_DOWNLOAD_LINK_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"

struct lb_config; /* common/config.h */
struct lb_store;  /* store/store.h */

/* Once, before the worker threads and after lb_secrets_start (the key is
 * the store's, several nodes): keeps cfg's download_link_ttl_s. Links are off
 * when download_link_ttl_s is 0 (one info line) or the store gave no key
 * (one warning). */
void lb_download_links_init(const struct lb_config *cfg);
/* The signed link of task_id's artifact path (clean) under key, expiring
 * at `expires` (seconds since 1970), into out. */
LB_MUST_CHECK int lb_download_link_sign(const char *key, long long expires, const char *task_id, const char *path, char *out,
                                        size_t outsz);
/* several nodes: 1 when sig is the signature of task_id's path (clean) with
 * expiry `expires`, under the store's key or the one before it (s: to read
 * them again once when neither matches), and `expires` is not past; 0
 * otherwise (also when links are off). For a link nginx handed to the
 * backend: its file only in the object store, or signed with a key this
 * host's nginx does not hold yet (handlers_dl_fetch.c). */
int lb_download_link_check(struct lb_store *s, long long expires, const char *task_id, const char *path,
                           const char *sig);
/* Adds "download_url" and "download_expires" to each artifact object of
 * the array (nothing when links are off). */
void lb_download_links_add(cJSON *artifacts, const char *task_id);

#endif
