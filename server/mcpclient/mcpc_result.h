/* What a tools/call result becomes for the model (the MCP result:
 * {content: [...], structuredContent?, isError?}). Text parts are joined
 * as text; an embedded text resource is text too; images are kept as
 * base64 with their type for the caller to hand on (the agent writes them
 * into the sandbox, mcpc_hub.c, and may send them to the model); audio, blobs and resource links become a
 * one-line note each. structuredContent is shown as JSON only when there
 * is no text. The result is a server's, so the text is capped
 * (LB_MCPC_TEXT_MAX, cut at a UTF-8 boundary with a note) and so are the
 * images kept (LB_MCPC_IMAGES, LB_MCPC_IMAGE_MAX each). */
#ifndef LB_MCPC_RESULT_H
#define LB_MCPC_RESULT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"

#define LB_MCPC_TEXT_MAX (64u << 10)   /* the observation's text: the plugins' head + tail */
#define LB_MCPC_IMAGES 4               /* images kept from one result */
#define LB_MCPC_IMAGE_MAX (4u << 20)   /* one image's base64 text */

typedef struct lb_mcpc_image {
    char *b64;                  /* owned: the base64 text as sent */
    char ext[8];                /* "png", "jpg", "gif", "webp" or "bin", from its mimeType */
    /* set once written into the sandbox (mcpc_hub.c) when its bytes are
     * one of the types a model takes: the path written and the type its
     * bytes show (not the one the server claimed), else both "" */
    char path[200];
    char media_type[16];
} lb_mcpc_image;

typedef struct lb_mcpc_result {
    int is_error;               /* isError: true */
    char *text;                 /* owned, valid UTF-8, at most LB_MCPC_TEXT_MAX + a note */
    int truncated;
    lb_mcpc_image images[LB_MCPC_IMAGES];
    int n_images;
    int images_dropped;         /* over the count or the size */
} lb_mcpc_result;

/* Reads result into *r: LB_OK, LB_E_INVAL with a sentence in err when it
 * is not a result object with a content list, LB_E_NOMEM. Free *r with
 * lb_mcpc_result_free either way. */
/* The media type the bytes of an image show ("image/png", "image/jpeg",
 * "image/gif", "image/webp"), or NULL for anything else: a model's API
 * refuses an image whose bytes are not of the type it is sent as. */
const char *lb_mcpc_image_sniff(const unsigned char *raw, size_t n);
LB_MUST_CHECK int lb_mcpc_result_parse(const cJSON *result, lb_mcpc_result *r, char *err, size_t errsz);
void lb_mcpc_result_free(lb_mcpc_result *r);

#endif
