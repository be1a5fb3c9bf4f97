/* Request bodies: read within a cap that fits the route, and JSON parsed
 * within a budget.
 *
 * cJSON has no limit on how many values it builds: each costs ~80 bytes
 * of heap, so a 100 MB body of "[0,0,0,..." became 4 GB in the web. Every
 * JSON body a client sends goes through lb_req_json (or, for a text
 * already in memory, lb_json_parse_checked), which first caps the bytes
 * (413, before reading when Content-Length says so) and then counts the
 * values and the nesting with a small hand-written pre-scan
 * (lb_json_prescan) before cJSON allocates anything: over the budget is a
 * 400 that names it. The pre-scan's count is an upper bound of the nodes
 * cJSON builds for the same text, also for a text cJSON refuses half-way
 * (tests/fuzz/fuzz_json_budget.c checks both with a counting allocator).
 */
#ifndef LB_REQ_BODY_H
#define LB_REQ_BODY_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/buf.h"
#include "common/status.h"

struct lb_req;

#define LB_JSON_MAX_VALUES 100000  /* values in one body: ~8 MB of cJSON nodes */
#define LB_JSON_MAX_DEPTH 64       /* arrays and objects inside each other */
#define LB_JSON_TRIM_BYTES (1u << 20) /* bodies from this size give memory back (malloc_trim) */

typedef struct lb_json_scan {
    size_t values;   /* values seen (up to the stop) */
    int depth;       /* deepest nesting seen */
    size_t at;       /* byte offset where the scan stopped over a limit */
} lb_json_scan;

/* Counts the values (arrays, objects, strings that are not object keys,
 * numbers and literals) and the nesting of the JSON text s[0..n) without
 * allocating. Does not validate: cJSON does that afterwards. LB_OK, or
 * LB_E_TOOBIG as soon as more than max_values values or max_depth levels
 * are seen (sc->at says where). Pure; safe on any bytes. */
LB_MUST_CHECK int lb_json_prescan(const char *s, size_t n, size_t max_values, int max_depth, lb_json_scan *sc);

/* The text as one JSON value: valid UTF-8, no "\u0000" escape (cJSON would
 * cut the string there), within the budget, nothing but whitespace after
 * the value. NULL on failure with LB_E_INVAL (a 400) or LB_E_NOMEM in *rc
 * and a sentence naming `what` ("exec request") in msg. Pure. */
cJSON *lb_json_parse_checked(const char *s, size_t n, const char *what, size_t max_values, int max_depth, int *rc,
                             char *msg, size_t msgsz);

/* Reads the whole request body, at most max bytes, into b (b->data may
 * stay NULL for an empty body). A Content-Length over max is answered 413
 * before a byte is read; a body without one that passes max is cut off
 * there (what follows is drained, never kept). With a Content-Length the
 * buffer is allocated once at that size. Marks the request so the worker
 * gives memory back after it (lb_req_trim). LB_OK; on failure answers
 * (413, 500) and returns LB_E_TOOBIG or LB_E_NOMEM. what: "file",
 * "sandbox spec". */
LB_MUST_CHECK int lb_req_body(struct lb_req *r, size_t max, lb_buf *b, const char *what);

/* The body as one JSON value (lb_req_body + lb_json_parse_checked with
 * the default budget), or NULL after answering 400/413/500. */
cJSON *lb_req_json(struct lb_req *r, size_t max, const char *what);

/* After a request: gives the heap back to the system (malloc_trim) when
 * the request read a large body, so a burst of large requests does not
 * stay in the web's memory. Called by the worker once the answer is out. */
void lb_req_trim(struct lb_req *r);

#endif
