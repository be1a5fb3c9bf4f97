/* libFuzzer target: the JSON documents of an image (server/images/
 * oci_json.c): index.json and image indexes, manifests, configs and
 * docker-archive's manifest.json, as an archive, a layout or a registry
 * hands them over. Input: the first byte picks the document, the rest is
 * its bytes. Promise checked: any bytes give LB_OK with every digest valid,
 * every count within its cap and every string UTF-8 (paths clean and
 * relative), or a refusal with a sentence; never a crash or a leak. */
#include "fuzz_util.h"

#include "common/status.h"
#include "images/oci_json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Traps unless p is a relative path of components neither empty, "." nor "..". */
static void check_clean(const char *p)
{
    if (!*p || *p == '/')
        __builtin_trap();
    for (const char *c = p; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            __builtin_trap();
        c += n;
        if (*c == '/')
            c++;
    }
}

static void check_desc(const lb_oci_desc *d)
{
    if (!lb_oci_digest_valid(d->digest) || d->size < 0)
        __builtin_trap();
    fz_assert_utf8(d->os, strlen(d->os));
    fz_assert_utf8(d->arch, strlen(d->arch));
    fz_assert_utf8(d->ref_name, strlen(d->ref_name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *j = (const char *)data + 1;
    size_t n = size - 1;
    char msg[256] = "";
    int rc;
    switch (data[0] % 4) {
    case 0: {
        lb_oci_index *idx = malloc(sizeof *idx);
        rc = lb_oci_parse_index(j, n, idx, msg, sizeof msg);
        if (rc == LB_OK) {
            if (idx->n < 0 || idx->n > LB_OCI_INDEX_MAX)
                __builtin_trap();
            for (int i = 0; i < idx->n; i++)
                check_desc(&idx->m[i]);
            int k = lb_oci_index_pick(idx, NULL, msg, sizeof msg);
            if (k >= idx->n || (k < 0 && !msg[0]))
                __builtin_trap();
        }
        free(idx);
        break;
    }
    case 1: {
        lb_oci_manifest *m = malloc(sizeof *m);
        rc = lb_oci_parse_manifest(j, n, m, msg, sizeof msg);
        if (rc == LB_OK) {
            if (m->nlayers < 1 || m->nlayers > LB_OCI_LAYERS_MAX || m->config.kind != LB_OCI_KIND_CONFIG)
                __builtin_trap();
            check_desc(&m->config);
            for (int i = 0; i < m->nlayers; i++)
                if (m->layers[i].kind != LB_OCI_KIND_LAYER)
                    __builtin_trap();
        }
        free(m);
        break;
    }
    case 2: {
        lb_oci_config c;
        rc = lb_oci_parse_config(j, n, &c, msg, sizeof msg);
        if (rc == LB_OK) {
            if (c.nenv > LB_OCI_ENV_MAX || (c.workdir[0] && c.workdir[0] != '/'))
                __builtin_trap();
            for (int i = 0; i < c.nenv; i++) {
                fz_assert_utf8(c.env[i], strlen(c.env[i]));
                if (!strchr(c.env[i], '=') || c.env[i][0] == '=')
                    __builtin_trap();
            }
            fz_assert_utf8(c.user, strlen(c.user));
        }
        lb_oci_config_free(&c);
        break;
    }
    default: {
        lb_docker_manifest *d = malloc(sizeof *d);
        rc = lb_docker_parse_manifest(j, n, d, msg, sizeof msg);
        if (rc == LB_OK) {
            if (d->nlayers < 1 || d->nlayers > LB_OCI_LAYERS_MAX)
                __builtin_trap();
            check_clean(d->config);
            for (int i = 0; i < d->nlayers; i++)
                check_clean(d->layers[i]);
        }
        free(d);
        break;
    }
    }
    if (rc != LB_OK && !msg[0])
        __builtin_trap();
    return 0;
}
