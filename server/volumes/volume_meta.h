/* A volume's record (E2B's volumes, docs/E2B.md "Volumes"): its name, its
 * owner and when it was made, kept as a small JSON file beside its content
 * (volume_store.h). The file is read back at every request, and sandboxd
 * does not trust what is on disk more than a peer: the parser has caps and
 * a fuzz driver (tests/fuzz/fuzz_volume_meta.c). */
#ifndef LBVOL_VOLUME_META_H
#define LBVOL_VOLUME_META_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define LBVOL_NAME_MAX 64      /* a volume's name: 1 to 64 of [A-Za-z0-9_-] */
#define LBVOL_OWNER_MAX 63     /* a user's name ("" the shared token) */
#define LBVOL_META_MAX 4096    /* the record file, bytes */

typedef struct lbvol_meta {
    char id[33];                       /* 32 lowercase hex: the folder's name */
    char name[LBVOL_NAME_MAX + 1];
    char owner[LBVOL_OWNER_MAX + 1];
    int64_t created_ms;                /* wall clock */
} lbvol_meta;

/* Whether s is a volume name: 1 to LBVOL_NAME_MAX of letters, digits, '_'
 * and '-' (what a mount names and a list shows; no path characters). */
int lbvol_name_valid(const char *s);
/* Whether s may be an owner: at most LBVOL_OWNER_MAX printable ASCII bytes
 * but '"' and '\\' ("" is the shared token's). */
int lbvol_owner_valid(const char *s);

/* Parses a record of n bytes ({"name", "owner", "created_ms"}) into m (its
 * id is not in the file: the caller sets it from the folder). LB_E_TOOBIG
 * past LBVOL_META_MAX, LB_E_INVAL for anything else that is not a record
 * with a valid name and owner. */
LB_MUST_CHECK int lbvol_meta_parse(const char *text, size_t n, lbvol_meta *m);
/* The record of m as text into out (NUL-ended); LB_E_TOOBIG when outsz is short. */
LB_MUST_CHECK int lbvol_meta_format(const lbvol_meta *m, char *out, size_t outsz, size_t *len);

#endif
