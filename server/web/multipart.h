/* A streaming multipart/form-data parser (RFC 7578) with hard caps.
 *
 * The body is fed in chunks of any size; the parser calls back at the start
 * of each part (with its name and cleaned file name), for each run of data,
 * and at its end. It never holds more than one part's header block plus one
 * chunk in memory, so a 100 MiB upload costs no more memory than a 1 KiB one.
 *
 * Every cap is checked while streaming: a body that goes over one stops at
 * that byte with LB_E_TOOBIG; a body that is not well formed stops with
 * LB_E_INVAL. lb_mp_error() then gives a sentence for the client.
 */
#ifndef LB_WEB_MULTIPART_H
#define LB_WEB_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/path.h"
#include "common/status.h"

#define LB_MP_BOUNDARY_MAX 70 /* RFC 2046 */
#define LB_MP_NAME_MAX 128

typedef struct lb_mp_limits {
    size_t max_parts;          /* parts of any kind */
    size_t max_header_bytes;   /* one part's header block */
    size_t max_field_bytes;    /* one part without a filename */
    uint64_t max_file_bytes;   /* one part with a filename */
    uint64_t max_total_bytes;  /* the whole body as fed */
    int absolute_names_ok;     /* E2B's uploads (e2b_fs.c) name files by absolute path: leading '/'s
                                * are taken off before the cleaning, and the part says so */
} lb_mp_limits;

typedef struct lb_mp_part {
    char name[LB_MP_NAME_MAX + 1];      /* the form field name */
    int is_file;                        /* a filename parameter was present */
    /* The file name cleaned by lb_path_clean_rel (folders kept: "data/a.csv").
     * Empty when the client sent filename="" (an empty file input). */
    char filename[LB_PATH_MAX + 1];
    int absolute;                       /* the file name began with '/' (absolute_names_ok only) */
    char content_type[128];             /* "" when absent */
    uint64_t size;                      /* data bytes delivered so far */
} lb_mp_part;

/* Callbacks return 0 to go on; any other value stops the parser, and
 * lb_mp_feed returns it unchanged. Any of them may be NULL. */
typedef struct lb_mp_callbacks {
    int (*part_begin)(void *arg, const lb_mp_part *p);
    int (*part_data)(void *arg, const lb_mp_part *p, const char *data, size_t n);
    int (*part_end)(void *arg, const lb_mp_part *p);
} lb_mp_callbacks;

typedef struct lb_mp lb_mp;

/* Copies the boundary parameter of a multipart/form-data Content-Type into
 * out (>= LB_MP_BOUNDARY_MAX + 1). LB_E_INVAL when the type is not
 * multipart/form-data or has no valid boundary. */
LB_MUST_CHECK int lb_mp_boundary(const char *content_type, char *out, size_t outsz);
/* True when content_type names multipart/form-data (parameters ignored). */
int lb_mp_is_form_data(const char *content_type);

/* limits and cb are copied; arg is passed to every callback. */
LB_MUST_CHECK int lb_mp_new(const char *boundary, const lb_mp_limits *limits, const lb_mp_callbacks *cb,
                            void *arg, lb_mp **out);
void lb_mp_free(lb_mp *m);
/* LB_OK, LB_E_INVAL (malformed), LB_E_TOOBIG (a cap), LB_E_NOMEM, or a
 * callback's nonzero return. After an error every later call returns it. */
LB_MUST_CHECK int lb_mp_feed(lb_mp *m, const char *data, size_t n);
/* Call at the end of the body: LB_E_INVAL unless the closing boundary was
 * seen (a truncated body). */
LB_MUST_CHECK int lb_mp_finish(lb_mp *m);
/* A sentence describing the last error, "" if none. */
const char *lb_mp_error(const lb_mp *m);

/* Appends n bytes of a text field's value (p->name) to field. 0, or the
 * HTTP status to refuse the request with and a sentence in msg: 400 for a
 * NUL byte (fields are read as C strings: "5\0" + "7" must not pass as
 * 5), 413 past field->max. */
int lb_mp_field_append(lb_buf *field, const char *name, const char *data, size_t n, char *msg, size_t msgsz);

#endif
