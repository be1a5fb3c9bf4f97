/* The images observations carry (an MCP tool's result), kept apart from
 * the conversation: a tool message names each image by its path in the
 * sandbox ("images": [{"path", "media_type"}], which is what the
 * trajectory keeps), and this store holds the base64 bytes the request
 * builder of a provider that takes images in a tool result
 * (model_anthropic.c) sends with it. Bounded: at most LB_OBS_IMAGES_MAX
 * images and LB_OBS_IMAGES_BYTES of base64 in all; the oldest are let go
 * first (their tool result then carries its text, which names the file). */
#ifndef LB_OBS_IMAGES_H
#define LB_OBS_IMAGES_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"

#define LB_OBS_IMAGES_MAX 20             /* Anthropic: more images in one request shrink the size allowed */
#define LB_OBS_IMAGES_BYTES (16u << 20)  /* base64 held, well under a request's 32 MB */

typedef struct lb_obs_images {
    cJSON *by_path;             /* owned: {path: {"media_type", "data"}}, oldest first; NULL = empty */
    size_t bytes;               /* base64 held */
} lb_obs_images;

/* Keeps b64 (copied) of media_type as the image at path, replacing one
 * already kept there. LB_OK, LB_E_INVAL when one image alone is over
 * LB_OBS_IMAGES_BYTES, LB_E_NOMEM. */
LB_MUST_CHECK int lb_obs_images_add(lb_obs_images *s, const char *path, const char *media_type, const char *b64);
/* The base64 kept for path and its media type, or NULL (s may be NULL). */
const char *lb_obs_images_get(const lb_obs_images *s, const char *path, const char **media_type);
void lb_obs_images_free(lb_obs_images *s);

#endif
