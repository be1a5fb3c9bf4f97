/* The JSON documents of an OCI image layout and of a docker-archive, read
 * from bytes a tarball, a registry or a builder handed us: index.json and
 * image indexes (multi-arch lists), image manifests, image configs and
 * docker-archive's manifest.json. Pure code with caps on every count and
 * length, so that a fuzz driver (tests/fuzz/fuzz_oci_json.c) can hold it
 * to its promise: any bytes give a filled struct or a sentence, never a
 * crash, a string past its cap or text that is not UTF-8. */
#ifndef LB_IMAGES_OCI_JSON_H
#define LB_IMAGES_OCI_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define LB_OCI_DIGEST_LEN 71      /* "sha256:" + 64 lowercase hex: the only digest taken */
#define LB_OCI_INDEX_MAX 64       /* manifests in one index: a multi-arch list has ~10 */
#define LB_OCI_LAYERS_MAX 48      /* layers of one image: what one overlay mount's lowerdir holds
                                   * (docs/IMAGES.md); Docker's own limit is 127 */
#define LB_OCI_JSON_MAX (4u << 20) /* an index, manifest or config document */
#define LB_OCI_ENV_MAX 256        /* Env entries of a config */
#define LB_OCI_STR_MAX 4096       /* one Env entry, WorkingDir, a Cmd word */
#define LB_OCI_USER_MAX 255       /* "user[:group]" */
#define LB_OCI_NAME_MAX 255       /* a file name in a docker-archive, an annotation's ref name */

/* What a descriptor's mediaType says it is. */
typedef enum lb_oci_kind {
    LB_OCI_KIND_OTHER = 0,
    LB_OCI_KIND_INDEX,      /* OCI image index or Docker manifest list */
    LB_OCI_KIND_MANIFEST,   /* OCI image manifest or Docker image manifest v2 */
    LB_OCI_KIND_CONFIG,
    LB_OCI_KIND_LAYER,      /* a tar, plain, gzip or zstd */
} lb_oci_kind;

typedef struct lb_oci_desc {
    lb_oci_kind kind;
    char digest[LB_OCI_DIGEST_LEN + 1];
    int64_t size;
    char os[32], arch[32], variant[32];   /* of an index entry's platform, "" when absent */
    char ref_name[LB_OCI_NAME_MAX + 1];   /* org.opencontainers.image.ref.name, "" when absent */
} lb_oci_desc;

typedef struct lb_oci_index {
    int n;
    lb_oci_desc m[LB_OCI_INDEX_MAX];
} lb_oci_index;

typedef struct lb_oci_manifest {
    lb_oci_desc config;
    int nlayers;
    lb_oci_desc layers[LB_OCI_LAYERS_MAX]; /* base first, as in the manifest */
} lb_oci_manifest;

/* The parts of an image config a sandbox uses. Strings are valid UTF-8
 * without NUL; the arrays are malloc'd, freed by lb_oci_config_free. */
typedef struct lb_oci_config {
    char os[32], arch[32];
    char user[LB_OCI_USER_MAX + 1];
    char *workdir;                 /* "" when absent */
    int nenv, ncmd, nentry;
    char **env, **cmd, **entrypoint;
    int ndiff;                     /* rootfs.diff_ids: must equal the manifest's layers */
} lb_oci_config;

/* True when s is "sha256:" and 64 lowercase hex digits. */
int lb_oci_digest_valid(const char *s);

/* Parses an index.json or image index (schemaVersion 2, "manifests").
 * Entries of a kind other than manifest or index are kept with kind
 * OTHER (the caller skips them). LB_E_INVAL or LB_E_TOOBIG with a
 * sentence in msg. */
LB_MUST_CHECK int lb_oci_parse_index(const char *json, size_t len, lb_oci_index *out, char *msg,
                                     size_t msgsz);

/* The entry of idx to take: the one whose ref_name is want (when want is
 * not NULL or ""), else linux/amd64, else the only manifest or index.
 * Returns its position, or -1 with a sentence in msg. */
int lb_oci_index_pick(const lb_oci_index *idx, const char *want, char *msg, size_t msgsz);

/* Parses an image manifest: a config and 1..LB_OCI_LAYERS_MAX layers of a
 * tar media type (foreign, non-distributable and encrypted layers are
 * refused). */
LB_MUST_CHECK int lb_oci_parse_manifest(const char *json, size_t len, lb_oci_manifest *out, char *msg,
                                        size_t msgsz);

/* Parses an image config into *out (zeroed first; free it with
 * lb_oci_config_free even on failure). */
LB_MUST_CHECK int lb_oci_parse_config(const char *json, size_t len, lb_oci_config *out, char *msg,
                                      size_t msgsz);
void lb_oci_config_free(lb_oci_config *c);

/* docker-archive's manifest.json: the first image's Config file, its
 * Layers files (base first) and its first RepoTag ("" when none). Names
 * are relative paths inside the archive, checked with lb_path_clean_rel. */
typedef struct lb_docker_manifest {
    char config[LB_OCI_NAME_MAX + 1];
    char repo_tag[LB_OCI_NAME_MAX + 1];
    int nlayers;
    char layers[LB_OCI_LAYERS_MAX][LB_OCI_NAME_MAX + 1];
} lb_docker_manifest;

LB_MUST_CHECK int lb_docker_parse_manifest(const char *json, size_t len, lb_docker_manifest *out,
                                           char *msg, size_t msgsz);

#endif
