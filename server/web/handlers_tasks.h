/* The task routes (handlers_tasks.c): create, list, get, cancel,
 * delete, the artifact list; and the start of a task, shared with
 * "Run again" (handlers_rerun.c). */
#ifndef LB_WEB_HANDLERS_TASKS_H
#define LB_WEB_HANDLERS_TASKS_H

#include "common/buf.h"
#include "common/config.h"
#include "common/path.h"
#include "common/status.h"
#include "web/request.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define LB_WEB_PROMPT_MAX (100u << 10)   /* bytes of a task's prompt */
#define LB_UPLOAD_MAX_FILES 1000          /* files in one task upload */
#define LB_UNPACK_MAX_ENTRIES 10000       /* entries of a task's archives together */
#define LB_UNPACK_MAX_RATIO 100           /* unpacked bytes per archive byte */
#define LB_UNPACK_RATIO_SLACK (1u << 20)  /* unpacked before the ratio counts */

/* A task's multipart upload as it streams in (create, and a follow-up's
 * message, handlers_messages.c): the form fields, and each file written
 * to stage_dir then renamed into input_dir whole. */
typedef struct lb_upload {
    const lb_config *cfg;
    char id[33];
    char task_dir[LB_CFG_PATH + 64];   /* artifacts/<id> */
    char input_dir[LB_CFG_PATH + 80];  /* artifacts/<id>/input */
    char stage_dir[LB_CFG_PATH + 80];  /* artifacts/<id>/.upload: temp files */
    lb_buf prompt, model, max_turns, token_budget, timeout_s, network, image, unpack;
    lb_buf fresh;       /* a follow-up's fresh=1 */
    lb_buf mcp;         /* MCP server names, commas between (a repeated field is joined) */
    int no_replace;     /* a file may not replace one already in input_dir (a follow-up's) */
    lb_buf *field;      /* the field being read, NULL for a file or an ignored part */
    int fd;             /* the file being written, -1 if none */
    char tmp[LB_CFG_PATH + 128];
    char rel[LB_PATH_MAX + 1];
    cJSON *inputs;      /* [{path,size}] */
    size_t nfiles;
    char place_key[112]; /* whose unpacking place (lb_unpack_place_key; LB_SLOT_KEY_MAX) */
    int http_status;    /* set with msg when a callback refuses */
    char msg[600];
} lb_upload;

/* Sets up u's fields with their caps; lb_task_upload_free frees them. */
void lb_task_upload_init(lb_upload *u, const lb_config *cfg);
void lb_task_upload_free(lb_upload *u);
/* Streams r's multipart body through the parser into u (id, the folders
 * and no_replace set by the caller; stage_dir exists): LB_OK, or
 * answered (400, 409, 413, 500, 507) and LB_E_INVAL. */
LB_MUST_CHECK int lb_task_upload_stream(lb_req *r, lb_upload *u, uint64_t max_upload);
/* Replaces every uploaded .zip / .tar.gz / .tgz / .tar in u->inputs by its
 * contents, unpacked next to it (data/x.zip -> data/...). *status gets
 * the HTTP status of a failure, msg its sentence. */
LB_MUST_CHECK int lb_task_upload_unpack(lb_upload *u, int *status, char *msg, size_t msgsz);
/* Answers lb_task_upload_unpack's failure: a refused place (429, 503) as
 * a JSON error with its code and Retry-After, the rest as they are. */
void lb_task_upload_refuse(lb_req *r, int status, const char *msg);

void lb_h_task_create(lb_req *r);
void lb_h_task_list(lb_req *r);
void lb_h_task_get(lb_req *r);
void lb_h_task_cancel(lb_req *r);
void lb_h_task_delete(lb_req *r);
/* GET /api/tasks/{id}/artifacts */
void lb_h_artifacts(lb_req *r);

#endif
