/* Capping command output for the model: bytes AND lines, head and tail
 * kept (the start says what ran, the end holds the error), one marker
 * line naming what was dropped. Pure functions; no host calls. */
#ifndef LLMBOX_BASH_CLIP_H
#define LLMBOX_BASH_CLIP_H

#include <stddef.h>

/* Returns s[0..n) as a malloc'd, NUL-terminated string of at most about
 * max_bytes bytes (plus the marker) and max_lines lines (plus the marker
 * line). When it is longer, the first half of both budgets is kept from
 * the start and the second half from the end, cut at line ends where the
 * lines are short enough (a single huge line is cut inside, on a UTF-8
 * boundary), with "[... N lines (M bytes) omitted ...]" between. *outlen
 * receives the length, *clipped (may be NULL) 1 when something was
 * dropped. NULL only when out of memory. */
char *bash_clip(const char *s, size_t n, size_t max_bytes, size_t max_lines, size_t *outlen,
                int *clipped);

#endif
