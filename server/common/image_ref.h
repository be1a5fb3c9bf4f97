/* Image references: "[host[:port]/]repo/path[:tag][@sha256:<hex>]", as a
 * client, a task, a Dockerfile's FROM or a registry's answer gives them.
 *
 * One parser for every place that takes a reference, so that the web, the
 * puller and sandboxd agree on which string names which image. It
 * normalizes the way Docker does (docker.io for a name without a registry,
 * "library/" for a one-part Docker Hub name, ":latest" when no tag or
 * digest is given), or, where a local name is allowed, keeps a name without
 * a registry as a local image (an image built here or today's debootstrap
 * images: "default", "default:latest" and "default" are the same image).
 * A normalized reference maps to one file name and back (the image store's
 * names for references). Pure code: linked into build/llmbox-sandboxd too.
 */
#ifndef LB_IMAGE_REF_H
#define LB_IMAGE_REF_H

#include <stddef.h>

#include "common/status.h"

/* A normalized reference is at most 255 bytes: Docker's cap on a name, and
 * what one file name may hold (the file name is as long as the reference). */
#define LB_IMAGE_REF_MAX 255
/* Input longer than this is refused before it is looked at. */
#define LB_IMAGE_REF_INPUT_MAX 1024
/* A tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} (the distribution spec's). */
#define LB_IMAGE_REF_TAG_MAX 128
/* "sha256:" and 64 lowercase hex digits: the only digest accepted. */
#define LB_IMAGE_REF_DIGEST_LEN 71

/* lb_image_ref_parse flags. */
#define LB_IMAGE_REF_LOCAL 1u /* a name without a registry stays a local name */

typedef struct lb_image_ref {
    char host[LB_IMAGE_REF_MAX + 1];  /* lowercase, with ":port"; "" for a local name */
    char repo[LB_IMAGE_REF_MAX + 1];  /* "library/debian", "team/img", "default" */
    char tag[LB_IMAGE_REF_TAG_MAX + 1]; /* "" when absent (a digest only, or a local name's "latest") */
    char digest[LB_IMAGE_REF_DIGEST_LEN + 1]; /* "sha256:<64 hex>" or "" */
} lb_image_ref;

/* Parses and normalizes s into *out. The first part of the name is a
 * registry when it holds '.' or ':', is "localhost" or is a bracketed IPv6
 * address; otherwise the name is a Docker Hub one (docker.io/library/x),
 * or, with LB_IMAGE_REF_LOCAL, a local name. Refused (LB_E_INVAL, or
 * LB_E_TOOBIG past the caps) with a sentence naming what is wrong in msg:
 * upper case in the repository, an empty part, a bad tag or digest, a
 * digest on a local name, a port outside 1..65535. *out is untouched on
 * failure. */
LB_MUST_CHECK int lb_image_ref_parse(const char *s, unsigned flags, lb_image_ref *out, char *msg,
                                     size_t msgsz);

/* True when r names a local image (no registry). */
int lb_image_ref_is_local(const lb_image_ref *r);

/* The normalized text of r into out: "host/repo:tag", "host/repo@digest",
 * "host/repo:tag@digest", or for a local name "repo" or "repo:tag".
 * Parsing it again (with LB_IMAGE_REF_LOCAL for a local name) gives r.
 * LB_E_TOOBIG when it does not fit in outsz (LB_IMAGE_REF_MAX + 1 is
 * always enough for a parsed r). */
LB_MUST_CHECK int lb_image_ref_format(const lb_image_ref *r, char *out, size_t outsz);

/* "repo:tag", "repo@digest" or "repo:tag@digest" of r, without the host:
 * the path and reference an OCI layout's index.json annotation and a
 * registry's URLs use. LB_E_TOOBIG when it does not fit. */
LB_MUST_CHECK int lb_image_ref_tail(const lb_image_ref *r, char *out, size_t outsz);

/* A single safe file name for r (at most LB_IMAGE_REF_MAX bytes): its
 * normalized text with '/' as '+', ':' as '=' and '@' as ','. None of
 * those three appears in a reference, a name never starts with '.', so
 * the name has no '/', is never "." or "..", and reads back with
 * lb_image_ref_from_file_name. LB_E_TOOBIG when outsz is too small. */
LB_MUST_CHECK int lb_image_ref_file_name(const lb_image_ref *r, char *out, size_t outsz);

/* The reference a file name of lb_image_ref_file_name stands for, into
 * *out (parsed again, so a name we did not write is refused: LB_E_INVAL
 * with a sentence in msg). */
LB_MUST_CHECK int lb_image_ref_from_file_name(const char *name, lb_image_ref *out, char *msg,
                                              size_t msgsz);

#endif
