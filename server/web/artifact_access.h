/* Who may read a task's files, and which files may be served at all: the
 * rules of the three ways in (the backend route, signed /dl/ links,
 * preview links) are at the top of artifact_access.c. */
#ifndef LB_WEB_ARTIFACT_ACCESS_H
#define LB_WEB_ARTIFACT_ACCESS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"
#include "store/store.h"
#include "web/request.h"


/* ---- preview links ---- */
/* The preview key of task id (32 hex) into out[33] ("" on failure). */
void lb_artifact_preview_key(const char *id, char out[33]);
/* For a preview route (router.c, LB_WHO_PREVIEW): r->rest is
 * "{key}/{path}". A gate, so a boolean like the router's others: when key
 * is task r->id's, r->rest becomes {path}, r->preview is set and 1 is
 * returned; else answers the 404 of an unknown task and returns 0. */
LB_MUST_CHECK int lb_artifact_preview_ok(lb_req *r);
/* Adds "preview_base" (the URL prefix of the task's preview links) to a
 * task object; only its owner gets one. */
void lb_auth_add_preview(cJSON *task, const char *id);

/* ---- which files ---- */
/* Whether path (n bytes) is a clean relative path as it stands
 * (lb_path_clean_rel leaves it unchanged): what an index entry, a bundle
 * entry and a signed link's path must be. */
int lb_artifact_path_ok(const char *path, size_t n);
/* The artifact r->rest names (percent-encoded) of task r->id, into *a:
 * listed in the index and a regular file under its output, reached without
 * a symlink. LB_OK; else answered (404, or the store's error) and
 * LB_E_NOTFOUND or the store's status. */
LB_MUST_CHECK int lb_artifact_find(lb_req *r, lb_artifact *a);
/* "inline" or "attachment" for an artifact of type mime: inline only for
 * a type a tab may show, and only when asked (?inline=1) or previewed. */
const char *lb_artifact_disposition(const lb_req *r, const char *mime);
/* Opens the folder rel (clean, "" for dfd itself) under dfd without
 * following any symlink; -1 when it is missing or not a plain folder. */
int lb_artifact_open_dir(int dfd, const char *rel);
/* Whether base/rel (rel clean) is a regular file reached without crossing
 * any symlink, base included (1/0); also for a round's kept files
 * (handlers_messages.c). */
int lb_artifact_is_file(const char *base, const char *rel);
/* Whether some artifact of task id lies under folder/ (clean): a folder
 * bundle is made only of a folder the index lists. LB_OK or the store's
 * error; *found gets the answer. */
LB_MUST_CHECK int lb_artifact_folder_listed(lb_store *s, const char *id, const char *folder, int *found);

#endif
